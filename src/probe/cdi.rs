//! Container Device Interface specs: `/etc/cdi/*.yaml|json` and `/var/run/cdi/*` (the two
//! folders Podman, containerd, CRI-O and Docker's CDI mode read; Podman's `cdiSpecDirs`). A
//! spec written by `nvidia-ctk cdi generate` names the driver's files by their full release
//! (`/usr/lib/x86_64-linux-gnu/libcuda.so.570.124.06`), its device nodes and its hooks; when
//! the driver is updated the files it names are gone and the engine refuses to start a GPU
//! container ("crun: cannot stat `/lib64/libEGL_nvidia.so.550.54.14`"), until the spec is
//! generated again (NVIDIA's CDI guide: "If you change the device or CUDA driver
//! configuration, you must generate a new CDI specification").
//!
//! Every read is bounded: at most [`MAX_FILES`] specs of [`MAX_BYTES`] each, at most
//! [`MAX_PATHS`] paths checked per spec; a FIFO or a device in the folder is refused by the
//! reader, not waited on, and nothing outside `--root` is looked at.

use std::path::Path;

use crate::host::Host;
use crate::report::{CdiSpec, ContainerEngine};

/// The folders container engines read specs from, in their order of precedence (the later
/// one wins on a name clash; both are read).
const DIRS: [&str; 2] = ["/etc/cdi", "/var/run/cdi"];
/// Specs read per folder: a host has one or two (`nvidia.yaml`, a MIG spec).
const MAX_FILES: usize = 32;
/// A spec is a few KiB; a whole driver with its graphics libraries some 30 KiB.
const MAX_BYTES: u64 = 1 << 20;
/// Host paths checked per spec.
const MAX_PATHS: usize = 1024;
/// Missing paths kept per spec (the count of paths says how many were checked).
const MAX_MISSING: usize = 16;
/// Device names kept per spec: a GPU gives two (index, UUID), a MIG device two more; eight
/// GPUs with seven MIG devices each give 128.
const MAX_DEVICES: usize = 256;

#[must_use]
pub(crate) fn probe(host: &Host) -> Vec<CdiSpec> {
    let mut out = Vec::new();
    for dir in DIRS {
        let entries = host.fs.read_dir_matching(dir, is_spec_name);
        for entry in entries.into_iter().take(MAX_FILES) {
            let Ok(bytes) = host.fs.read_bytes_limited(&entry.path, MAX_BYTES) else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes);
            out.push(spec(host, &entry.path, &text));
        }
    }
    out
}

/// The packages that carry a container engine that reads CDI specs, by manager and name:
/// Podman, and Docker Engine (Docker's `docker-ce`, Debian's and Ubuntu's `docker.io`, Fedora's
/// `moby-engine`, Arch's `docker`; Debian's own `docker` package is a system-tray program).
const ENGINE_PACKAGES: [(&str, &str, &str); 6] = [
    ("dpkg", "podman", "podman"),
    ("pacman", "podman", "podman"),
    ("dpkg", "docker-ce", "docker"),
    ("dpkg", "docker.io", "docker"),
    ("dpkg", "moby-engine", "docker"),
    ("pacman", "docker", "docker"),
];

/// The container engines installed as dpkg or pacman packages, sorted by package. RPM's
/// database is not read (a binary format), so Fedora's and RHEL's engines are not listed.
#[must_use]
pub(crate) fn engines(host: &Host) -> Vec<ContainerEngine> {
    let dpkg = host
        .fs
        .read_opt("/var/lib/dpkg/status")
        .map(|s| super::services::dpkg_installed(&s))
        .unwrap_or_default()
        .into_iter()
        .map(|p| ("dpkg", p));
    let pacman = super::services::pacman_installed(host)
        .into_iter()
        .map(|p| ("pacman", p));
    let mut out: Vec<ContainerEngine> = dpkg
        .chain(pacman)
        .filter_map(|(manager, (name, version))| {
            let (_, _, engine) = ENGINE_PACKAGES
                .iter()
                .find(|(m, p, _)| *m == manager && *p == name)?;
            Some(ContainerEngine {
                engine: (*engine).to_string(),
                package: format!("{manager}: {name}"),
                version,
            })
        })
        .collect();
    out.sort_by(|a, b| a.package.cmp(&b.package));
    out
}

fn is_spec_name(name: &str) -> bool {
    [".yaml", ".yml", ".json"]
        .iter()
        .any(|ext| name.len() > ext.len() && name.ends_with(ext))
}

fn spec(host: &Host, path: &Path, text: &str) -> CdiSpec {
    let paths = host_paths(text);
    let driver_version = paths.iter().find_map(|p| driver_release(p));
    let mut missing = Vec::new();
    for p in &paths {
        if missing.len() < MAX_MISSING && !host.fs.exists(p) {
            missing.push(p.clone());
        }
    }
    let mut devices = field_values(text, "name");
    devices.dedup();
    devices.truncate(MAX_DEVICES);
    CdiSpec {
        path: path.display().to_string(),
        kind: field_values(text, "kind").into_iter().next(),
        cdi_version: field_values(text, "cdiVersion").into_iter().next(),
        driver_version,
        host_paths: u32::try_from(paths.len()).unwrap_or(u32::MAX),
        missing,
        devices,
    }
}

/// The host paths a spec names: every absolute `hostPath` and `path` value (mounts' host side,
/// device nodes, hook programs), in order, without repeats, at most [`MAX_PATHS`].
fn host_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for key in ["hostPath", "path"] {
        for v in field_values(text, key) {
            if v.starts_with('/') && !out.contains(&v) && out.len() < MAX_PATHS {
                out.push(v);
            }
        }
    }
    out
}

/// The scalar values of `key` anywhere in a spec, YAML (`key: value`, `- key: value`) or JSON
/// (`"key": "value"`), unquoted. A line-based reading: CDI specs put one key on a line in
/// YAML, and JSON's `"key":"value"` pairs are found wherever they are.
fn field_values(text: &str, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let json_key = format!("\"{key}\"");
    for line in text.lines() {
        let t = line.trim_start().trim_start_matches("- ").trim_start();
        if let Some(rest) = t.strip_prefix(key).and_then(|r| r.strip_prefix(':')) {
            if let Some(v) = scalar(rest) {
                out.push(v);
            }
            continue;
        }
        let mut from = 0;
        while let Some(i) = line[from..].find(&json_key) {
            let after = &line[from + i + json_key.len()..];
            from += i + json_key.len();
            if let Some(rest) = after.trim_start().strip_prefix(':')
                && let Some(v) = scalar(rest.split([',', '}']).next().unwrap_or(""))
            {
                out.push(v);
            }
        }
    }
    out
}

/// A YAML/JSON scalar as written after the colon: quotes taken off, a comment dropped; None for
/// an empty value (a mapping or list follows on the next lines).
fn scalar(raw: &str) -> Option<String> {
    let raw = raw.trim();
    let v = if let Some(q) = raw.strip_prefix('"') {
        q.split('"').next().unwrap_or("")
    } else if let Some(q) = raw.strip_prefix('\'') {
        q.split('\'').next().unwrap_or("")
    } else {
        raw.split(" #").next().unwrap_or("").trim()
    };
    (!v.is_empty()).then(|| v.to_string())
}

/// The driver release in a driver library's file name: `libcuda.so.570.124.06` or
/// `libnvidia-ml.so.570.124.06` gives "570.124.06".
fn driver_release(path: &str) -> Option<String> {
    let name = path.rsplit('/').next()?;
    ["libcuda.so.", "libnvidia-ml.so."].iter().find_map(|stem| {
        let v = name.strip_prefix(stem)?;
        // A driver branch has three digits (`550.67`, `570.124.06`); WSL's `libcuda.so.1.1`
        // and the soname `.so.1` are not releases.
        let branch = v.split('.').next()?;
        (v.split('.').count() >= 2
            && branch.len() >= 3
            && v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        .then(|| v.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_and_json_paths_and_kind_are_read() {
        let yaml = "---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ncontainerEdits:\n  deviceNodes:\n  - path: /dev/nvidiactl\n  hooks:\n  - args:\n    - update-ldcache\n    path: /usr/bin/nvidia-cdi-hook\n  mounts:\n  - containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.570.124.06\n    hostPath: \"/usr/lib/x86_64-linux-gnu/libcuda.so.570.124.06\"\n";
        assert_eq!(field_values(yaml, "kind"), ["nvidia.com/gpu"]);
        let paths = host_paths(yaml);
        assert_eq!(
            paths,
            [
                "/usr/lib/x86_64-linux-gnu/libcuda.so.570.124.06",
                "/dev/nvidiactl",
                "/usr/bin/nvidia-cdi-hook"
            ]
        );
        let json = r#"{"cdiVersion":"0.5.0","kind":"nvidia.com/gpu","containerEdits":{"mounts":[{"hostPath":"/usr/lib64/libcuda.so.550.54.14","containerPath":"/usr/lib64/libcuda.so.550.54.14"}]}}"#;
        assert_eq!(field_values(json, "kind"), ["nvidia.com/gpu"]);
        assert_eq!(host_paths(json), ["/usr/lib64/libcuda.so.550.54.14"]);
        assert_eq!(
            paths.iter().find_map(|p| driver_release(p)).as_deref(),
            Some("570.124.06")
        );
        // `containerPath` is the container's side: never a host path.
        assert!(!host_paths("containerPath: /only/inside\n").contains(&"/only/inside".into()));
    }

    #[test]
    fn device_names_are_read_from_yaml_and_json_and_hook_names_are_not() {
        let yaml = "devices:\n- containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia0\n  name: \"0\"\n- name: GPU-2e7b1c94-5d3a-8f60-4b1e-9c7d2a6f0e83\n- name: \"0:1\"\n- name: all\ncontainerEdits:\n  hooks:\n  - hookName: createContainer\n    path: /usr/bin/nvidia-cdi-hook\n";
        assert_eq!(
            field_values(yaml, "name"),
            [
                "0",
                "GPU-2e7b1c94-5d3a-8f60-4b1e-9c7d2a6f0e83",
                "0:1",
                "all"
            ]
        );
        let json = r#"{"kind":"k8s.device-plugin.nvidia.com/gpu","devices":[{"name":"MIG-4c0f3a50-17a4-52eb-8450-e29e24c80885","containerEdits":{}}],"containerEdits":{"hooks":[{"hookName":"createContainer","path":"/usr/bin/nvidia-cdi-hook"}]}}"#;
        assert_eq!(
            field_values(json, "name"),
            ["MIG-4c0f3a50-17a4-52eb-8450-e29e24c80885"]
        );
    }

    #[test]
    fn names_that_are_not_releases_give_no_version() {
        assert_eq!(
            driver_release("/usr/lib/wsl/drivers/nv_dispi.inf_amd64_1/libcuda.so.1.1"),
            None
        );
        assert_eq!(
            driver_release("/lib64/libnvidia-ml.so.550.67").as_deref(),
            Some("550.67")
        );
        assert_eq!(driver_release("/usr/lib/libcuda.so.1"), None);
        assert_eq!(driver_release("/usr/lib/libcuda.so"), None);
        assert_eq!(
            driver_release("/usr/lib/libnvidia-egl-wayland.so.1.1.13"),
            None
        );
    }

    #[test]
    fn values_are_unquoted_and_comments_dropped() {
        assert_eq!(scalar(" '/a b' ").as_deref(), Some("/a b"));
        assert_eq!(scalar(" /x # note").as_deref(), Some("/x"));
        assert_eq!(scalar("   "), None);
    }
}
