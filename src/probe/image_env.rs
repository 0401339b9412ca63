//! The image's own variables of a container, for when the program's environment lost them.
//!
//! The CUDA requirement of a container image (`NVIDIA_REQUIRE_CUDA`, `CUDA_VERSION`,
//! `NVIDIA_DISABLE_REQUIRE`) lives in the image's environment, which `docker exec` passes on but
//! `sudo`, `su -` and login shells reset. The container's first process keeps it, so inside a
//! container `/proc/1/environ` (NUL-separated `NAME=value` pairs) is read for the variables the
//! program's own environment does not have.

use crate::host::Host;
use crate::report::{EnvVar, IMAGE_REQUIREMENT_VARS as IMAGE_VARS};

/// The most of `/proc/1/environ` read: an environment is a few KiB; NVIDIA's images' longest
/// value, the requirement, is about 3 KiB.
const ENVIRON_LIMIT: u64 = 256 * 1024;

/// The image variables PID 1 has and `have` lacks, in [`IMAGE_VARS`]' order. Only inside a
/// container (elsewhere PID 1 is the machine's init) and not under `--host-root` (there PID 1
/// is the node's).
pub(crate) fn from_pid1(host: &Host, in_container: bool, have: &[EnvVar]) -> Vec<EnvVar> {
    if !in_container || host.host_root().is_some() {
        return Vec::new();
    }
    let missing: Vec<&str> = IMAGE_VARS
        .iter()
        .copied()
        .filter(|name| !have.iter().any(|v| v.name == *name))
        .collect();
    if missing.is_empty() {
        return Vec::new();
    }
    let Ok(bytes) = host
        .fs
        .read_bytes_limited(std::path::Path::new("/proc/1/environ"), ENVIRON_LIMIT)
    else {
        return Vec::new();
    };
    parse_environ(&bytes)
        .into_iter()
        .filter(|v| missing.contains(&v.name.as_str()))
        .collect()
}

/// `NAME=value` pairs of an environ block, first of each name kept; pairs that are not UTF-8
/// are passed over.
fn parse_environ(bytes: &[u8]) -> Vec<EnvVar> {
    let mut out: Vec<EnvVar> = Vec::new();
    for pair in bytes.split(|b| *b == 0) {
        let Ok(text) = std::str::from_utf8(pair) else {
            continue;
        };
        let Some((name, value)) = text.split_once('=') else {
            continue;
        };
        if name.is_empty() || out.iter().any(|v| v.name == name) {
            continue;
        }
        out.push(EnvVar {
            name: name.to_string(),
            value: value.to_string(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nul_separated_pairs_keeping_the_first_of_each() {
        let block = b"PATH=/usr/bin\0NVIDIA_REQUIRE_CUDA=cuda>=12.8 brand=tesla,driver>=535,driver<536\0\xff=x\0CUDA_VERSION=12.8.1\0CUDA_VERSION=9\0noequals\0";
        let vars = parse_environ(block);
        let names: Vec<&str> = vars.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["PATH", "NVIDIA_REQUIRE_CUDA", "CUDA_VERSION"]);
        assert_eq!(vars[2].value, "12.8.1");
        assert_eq!(
            vars[1].value,
            "cuda>=12.8 brand=tesla,driver>=535,driver<536"
        );
    }
}
