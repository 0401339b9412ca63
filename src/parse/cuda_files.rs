//! Files that CUDA, cuDNN, NCCL and TensorRT installs carry their version in: the toolkit's
//! `version.json` / `version.txt`, `#define`s in headers, and `/etc/ld.so.conf(.d)`, which says
//! where the loader looks for them.

use crate::parse::text::is_dotted_numeric;

/// `version.json` of CUDA 11.1 and later: `{"cuda": {"name": "CUDA SDK", "version": "12.4.1"}, ...}`.
pub fn toolkit_version_json(text: &str) -> Option<String> {
    let json: serde_json::Value = serde_json::from_str(text).ok()?;
    let version = json.get("cuda")?.get("version")?.as_str()?.trim();
    is_dotted_numeric(version).then(|| version.to_string())
}

/// `version.txt` of CUDA 11.0 and earlier: `CUDA Version 10.2.89`.
pub fn toolkit_version_txt(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let version = line
            .trim()
            .strip_prefix("CUDA Version")?
            .split_whitespace()
            .next()?;
        is_dotted_numeric(version).then(|| version.to_string())
    })
}

/// cuDNN's `CUDNN_MAJOR`, `CUDNN_MINOR`, `CUDNN_PATCHLEVEL` → `9.14.0`. They live in
/// `cudnn_version.h` since cuDNN 8 and in `cudnn.h` before.
pub fn cudnn_header_version(text: &str) -> Option<String> {
    define_triple(text, ["CUDNN_MAJOR", "CUDNN_MINOR", "CUDNN_PATCHLEVEL"])
}

/// `nccl.h`: `NCCL_MAJOR`, `NCCL_MINOR`, `NCCL_PATCH` → `2.28.3`.
pub fn nccl_header_version(text: &str) -> Option<String> {
    define_triple(text, ["NCCL_MAJOR", "NCCL_MINOR", "NCCL_PATCH"])
}

/// `NvInferVersion.h`: `NV_TENSORRT_MAJOR`/`MINOR`/`PATCH` → `8.6.1`. TensorRT 10 defines those
/// as `TRT_MAJOR_ENTERPRISE` etc., which are followed to their numbers.
pub fn tensorrt_header_version(text: &str) -> Option<String> {
    define_triple(
        text,
        [
            "NV_TENSORRT_MAJOR",
            "NV_TENSORRT_MINOR",
            "NV_TENSORRT_PATCH",
        ],
    )
    .or_else(|| {
        define_triple(
            text,
            [
                "TRT_MAJOR_ENTERPRISE",
                "TRT_MINOR_ENTERPRISE",
                "TRT_PATCH_ENTERPRISE",
            ],
        )
    })
}

/// `MAJOR.MINOR.PATCH` from three `#define`d integers.
fn define_triple(text: &str, names: [&str; 3]) -> Option<String> {
    let defines = Defines::read(text);
    let [major, minor, patch] = names.map(|name| defines.integer(name));
    Some(format!("{}.{}.{}", major?, minor?, patch?))
}

/// The object-like `#define NAME value` lines of a header (the first definition of each name).
struct Defines<'a> {
    entries: Vec<(&'a str, &'a str)>,
}

impl<'a> Defines<'a> {
    /// How many `#define`s to follow from one name to another (`A` → `B` → `3`).
    const MAX_HOPS: usize = 4;

    fn read(text: &'a str) -> Self {
        let entries = text.lines().filter_map(define).collect();
        Self { entries }
    }

    fn value(&self, name: &str) -> Option<&'a str> {
        self.entries
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }

    /// The integer `name` stands for, following other macro names a few hops.
    fn integer(&self, name: &str) -> Option<u64> {
        let mut current = self.value(name)?;
        for _ in 0..Self::MAX_HOPS {
            if let Ok(n) = current.parse() {
                return Some(n);
            }
            current = self.value(current)?;
        }
        None
    }
}

/// `#  define NAME 9 // comment` → `("NAME", "9")`; parentheses around the value are dropped.
fn define(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("define")?;
    if !rest.starts_with([' ', '\t']) {
        return None;
    }
    let mut words = rest.split_whitespace();
    let name = words.next()?;
    if name.contains('(') {
        return None; // a function-like macro
    }
    let value = words.next()?;
    let value = value
        .split("//")
        .next()
        .and_then(|v| v.split("/*").next())
        .unwrap_or(value)
        .trim_matches(['(', ')']);
    (!value.is_empty()).then_some((name, value))
}

/// One entry of `/etc/ld.so.conf` or a file in `/etc/ld.so.conf.d/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LdConfEntry {
    /// A directory the loader searches.
    Dir(String),
    /// An `include` pattern (a glob such as `/etc/ld.so.conf.d/*.conf`), relative paths being
    /// relative to the including file's directory.
    Include(String),
}

/// Parses ld.so.conf text: comments after `#`, blank lines and `hwcap` lines are skipped;
/// `include` takes one or more patterns separated by blanks, as glibc's ldconfig reads it.
pub fn ld_so_conf(text: &str) -> Vec<LdConfEntry> {
    let mut entries = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or(line).trim();
        if line.is_empty() {
            continue;
        }
        if let Some(patterns) = keyword_args(line, "include") {
            entries.extend(
                patterns
                    .split_whitespace()
                    .map(|p| LdConfEntry::Include(p.to_string())),
            );
        } else if keyword_args(line, "hwcap").is_none() {
            entries.push(LdConfEntry::Dir(line.to_string()));
        }
    }
    entries
}

/// The text after `keyword` and a blank, if the line starts that way.
fn keyword_args<'a>(line: &'a str, keyword: &str) -> Option<&'a str> {
    let rest = line.strip_prefix(keyword)?;
    rest.starts_with([' ', '\t']).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{body, garbage, huge, section};

    const CUDNN_H: &str = include_str!("../../tests/data/h200/cudnn_h.txt");
    const META: &str = include_str!("../../tests/data/h200/meta.txt");

    #[test]
    fn toolkit_json_and_txt() {
        let json = r#"{
   "cuda" : {
      "name" : "CUDA SDK",
      "version" : "12.4.1"
   },
   "cuda_cccl" : {
      "name" : "CUDA C++ Core Compute Libraries",
      "version" : "12.4.127"
   },
   "cuda_cudart" : {
      "name" : "CUDA Runtime (cudart)",
      "version" : "12.4.127"
   }
}"#;
        assert_eq!(toolkit_version_json(json).as_deref(), Some("12.4.1"));
        assert_eq!(
            toolkit_version_json(r#"{"cuda_cudart": {"version": "11.1.74"}}"#),
            None
        );
        assert_eq!(toolkit_version_json(r#"{"cuda": {"version": 12}}"#), None);
        assert_eq!(toolkit_version_json(r#"{"cuda": "#), None);

        assert_eq!(
            toolkit_version_txt("CUDA Version 10.2.89\n").as_deref(),
            Some("10.2.89")
        );
        assert_eq!(
            toolkit_version_txt("CUDA Version 11.2.152").as_deref(),
            Some("11.2.152")
        );
        assert_eq!(toolkit_version_txt("CUDA Version \n"), None);
    }

    #[test]
    fn h200_cudnn_headers() {
        // The capture greps four headers: the system 9.14.0 and the pip wheel's 9.19.0.
        let text = body(CUDNN_H);
        let system = section(
            text,
            "== /usr/include/x86_64-linux-gnu/cudnn_version.h",
            "== ",
        );
        assert_eq!(cudnn_header_version(&system).as_deref(), Some("9.14.0"));
        let pip = section(
            text,
            "== /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/include/cudnn_version.h",
            "== ",
        );
        assert_eq!(cudnn_header_version(&pip).as_deref(), Some("9.19.0"));
    }

    #[test]
    fn cudnn_7_header_and_spacing() {
        let cudnn7 = "/*   cudnn : Neural Networks Library */\n\
                      #if !defined(CUDNN_H_)\n\
                      #define CUDNN_H_\n\
                      \n\
                      #define CUDNN_MAJOR 7\n\
                      #define CUDNN_MINOR 6\n\
                      #define CUDNN_PATCHLEVEL 5\n\
                      \n\
                      #define CUDNN_VERSION (CUDNN_MAJOR * 1000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)\n";
        assert_eq!(cudnn_header_version(cudnn7).as_deref(), Some("7.6.5"));

        let cudnn8 = "#ifndef CUDNN_VERSION_H_\n#define CUDNN_VERSION_H_\n\n\
                      #  define CUDNN_MAJOR\t8 /* major */\n\
                      #define  CUDNN_MINOR 9// minor\n\
                      #define CUDNN_PATCHLEVEL (7)\r\n";
        assert_eq!(cudnn_header_version(cudnn8).as_deref(), Some("8.9.7"));
    }

    #[test]
    fn nccl_and_tensorrt_headers() {
        let nccl = "#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 3\n\
                    #define NCCL_SUFFIX \"\"\n\n#define NCCL_VERSION_CODE 22803\n\
                    #define NCCL_VERSION(X,Y,Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))\n";
        assert_eq!(nccl_header_version(nccl).as_deref(), Some("2.28.3"));

        let trt8 = "#define NV_TENSORRT_MAJOR 8 //!< TensorRT major version.\n\
                    #define NV_TENSORRT_MINOR 6 //!< TensorRT minor version.\n\
                    #define NV_TENSORRT_PATCH 1 //!< TensorRT patch version.\n\
                    #define NV_TENSORRT_BUILD 6 //!< TensorRT build number.\n";
        assert_eq!(tensorrt_header_version(trt8).as_deref(), Some("8.6.1"));

        let trt10 = "#define TRT_MAJOR_ENTERPRISE 10\n\
                     #define TRT_MINOR_ENTERPRISE 3\n\
                     #define TRT_PATCH_ENTERPRISE 0\n\
                     #define TRT_BUILD_ENTERPRISE 26\n\
                     #define NV_TENSORRT_MAJOR TRT_MAJOR_ENTERPRISE //!< TensorRT major version.\n\
                     #define NV_TENSORRT_MINOR TRT_MINOR_ENTERPRISE //!< TensorRT minor version.\n\
                     #define NV_TENSORRT_PATCH TRT_PATCH_ENTERPRISE //!< TensorRT patch version.\n";
        assert_eq!(tensorrt_header_version(trt10).as_deref(), Some("10.3.0"));
        // Only the ENTERPRISE numbers present.
        let bare10 = "#define TRT_MAJOR_ENTERPRISE 10\n#define TRT_MINOR_ENTERPRISE 8\n#define TRT_PATCH_ENTERPRISE 0\n";
        assert_eq!(tensorrt_header_version(bare10).as_deref(), Some("10.8.0"));
    }

    #[test]
    fn h200_ld_so_conf() {
        let conf = section(META, "== ld.so.conf.d", "== ");
        let main = section(&conf, "-- /etc/ld.so.conf", "-- ");
        assert_eq!(
            ld_so_conf(&main),
            vec![LdConfEntry::Include("/etc/ld.so.conf.d/*.conf".into())]
        );
        let multiarch = section(&conf, "-- /etc/ld.so.conf.d/x86_64-linux-gnu.conf", "-- ");
        assert_eq!(
            ld_so_conf(&multiarch),
            vec![
                LdConfEntry::Dir("/usr/local/lib/x86_64-linux-gnu".into()),
                LdConfEntry::Dir("/lib/x86_64-linux-gnu".into()),
                LdConfEntry::Dir("/usr/lib/x86_64-linux-gnu".into()),
            ]
        );
        let nvidia = section(&conf, "-- /etc/ld.so.conf.d/nvidia-folders.conf", "-- ");
        assert_eq!(
            ld_so_conf(&nvidia),
            vec![
                LdConfEntry::Dir("/usr/local/nvidia/lib64".into()),
                LdConfEntry::Dir("/usr/local/nvidia/lib".into()),
            ]
        );
    }

    #[test]
    fn ld_so_conf_forms() {
        let text = "include ld.so.conf.d/*.conf /opt/extra/*.conf\n\
                    \tinclude\t/etc/more.conf # trailing comment\n\
                    hwcap 1 nosegneg\n\
                    /usr/local/cuda/lib64   # CUDA\n\
                    includes/are/dirs\n\
                    \n";
        assert_eq!(
            ld_so_conf(text),
            vec![
                LdConfEntry::Include("ld.so.conf.d/*.conf".into()),
                LdConfEntry::Include("/opt/extra/*.conf".into()),
                LdConfEntry::Include("/etc/more.conf".into()),
                LdConfEntry::Dir("/usr/local/cuda/lib64".into()),
                LdConfEntry::Dir("includes/are/dirs".into()),
            ]
        );
    }

    #[test]
    fn garbage_truncated_and_huge() {
        let g = garbage();
        assert_eq!(toolkit_version_json(""), None);
        assert_eq!(toolkit_version_json(&g), None);
        assert_eq!(toolkit_version_txt(&g), None);
        assert_eq!(cudnn_header_version(&g), None);
        assert_eq!(nccl_header_version(""), None);
        assert_eq!(tensorrt_header_version(&g), None);
        // Truncated before PATCHLEVEL.
        assert_eq!(
            cudnn_header_version(
                "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 14\n#define CUDNN_PATCH"
            ),
            None
        );
        // Macros defined in terms of each other in a loop.
        assert_eq!(
            tensorrt_header_version(
                "#define NV_TENSORRT_MAJOR A\n#define A B\n#define B A\n\
                 #define NV_TENSORRT_MINOR 1\n#define NV_TENSORRT_PATCH 2\n"
            ),
            None
        );
        // Deep JSON nesting is an error, not a stack overflow.
        assert_eq!(toolkit_version_json(&"[".repeat(100_000)), None);

        let big_header = huge("#define SOMETHING_ELSE 1\n")
            + "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n";
        assert_eq!(cudnn_header_version(&big_header).as_deref(), Some("9.1.0"));
        assert_eq!(toolkit_version_txt(&huge("CUDA Version x\n")), None);
        assert_eq!(toolkit_version_json(&huge("{\"cuda\": ")), None);
        let big_conf = ld_so_conf(&huge("/usr/lib/x\n"));
        assert!(
            big_conf
                .iter()
                .all(|e| *e == LdConfEntry::Dir("/usr/lib/x".into()))
        );
        assert!(
            ld_so_conf(&g)
                .iter()
                .all(|e| matches!(e, LdConfEntry::Dir(_)))
        );
    }
}
