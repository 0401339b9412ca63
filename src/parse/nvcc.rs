//! `nvcc --version`: the CUDA toolkit release the compiler belongs to.

use crate::parse::text::is_dotted_numeric;

/// From `Cuda compilation tools, release 13.0, V13.0.88`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NvccVersion {
    /// `13.0`.
    pub release: String,
    /// `13.0.88` (from `V13.0.88`).
    pub full: Option<String>,
}

/// Parses the output of `nvcc --version`.
pub fn parse_version(text: &str) -> Option<NvccVersion> {
    text.lines().find_map(|line| {
        let (_, rest) = line.split_once("release ")?;
        let mut parts = rest.split(',').map(str::trim);
        let release = parts.next().filter(|r| is_dotted_numeric(r))?;
        let full = parts
            .next()
            .and_then(|v| v.strip_prefix('V'))
            .and_then(|v| v.split_whitespace().next())
            .filter(|v| is_dotted_numeric(v));
        Some(NvccVersion {
            release: release.to_string(),
            full: full.map(str::to_string),
        })
    })
}

/// The components a toolkit's `version.json` lists (`"cuda_nvcc": {"name": ..., "version":
/// "12.8.93"}`), sorted by name; the top-level `cuda` entry is the toolkit itself and is left
/// out. Empty for anything that is not such a file.
pub fn version_json_components(text: &str) -> Vec<(String, String)> {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = map
        .iter()
        .filter(|(name, _)| name.as_str() != "cuda")
        .filter_map(|(name, entry)| {
            let version = entry.get("version")?.as_str()?.trim();
            is_dotted_numeric(version).then(|| (name.clone(), version.to_string()))
        })
        .take(200)
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{body, garbage, huge};

    const TOOLKIT: &str = include_str!("../../tests/data/h200/toolkit.txt");

    #[test]
    fn h200_nvcc_13() {
        // The capture has `which -a` and `ls` output around it.
        let v = parse_version(body(TOOLKIT)).unwrap();
        assert_eq!(
            v,
            NvccVersion {
                release: "13.0".into(),
                full: Some("13.0.88".into()),
            }
        );
    }

    #[test]
    fn older_toolkits() {
        let cuda10 = "nvcc: NVIDIA (R) Cuda compiler driver\n\
                      Copyright (c) 2005-2019 NVIDIA Corporation\n\
                      Built on Sun_Jul_28_19:07:16_PDT_2019\n\
                      Cuda compilation tools, release 10.1, V10.1.243\n";
        assert_eq!(
            parse_version(cuda10),
            Some(NvccVersion {
                release: "10.1".into(),
                full: Some("10.1.243".into()),
            })
        );
        let cuda12 = "nvcc: NVIDIA (R) Cuda compiler driver\r\n\
                      Copyright (c) 2005-2024 NVIDIA Corporation\r\n\
                      Built on Thu_Mar_28_02:18:24_PDT_2024\r\n\
                      Cuda compilation tools, release 12.4, V12.4.131\r\n\
                      Build cuda_12.4.r12.4/compiler.34097967_0\r\n";
        let v = parse_version(cuda12).unwrap();
        assert_eq!(v.release, "12.4");
        assert_eq!(v.full.as_deref(), Some("12.4.131"));
    }

    #[test]
    fn version_json_lists_components() {
        // The shape of CUDA 12.8's /usr/local/cuda-12.8/version.json (abridged).
        let json = r#"{
           "cuda" : { "name" : "CUDA SDK", "version" : "12.8.1" },
           "cuda_cccl" : { "name" : "CUDA C++ Core Compute Libraries", "version" : "12.8.90" },
           "cuda_cudart" : { "name" : "CUDA Runtime (cudart)", "version" : "12.8.90" },
           "cuda_nvcc" : { "name" : "CUDA NVCC", "version" : "12.8.93" },
           "libcublas" : { "name" : "CUDA cuBLAS", "version" : "12.8.4.1" },
           "nsight_compute" : { "name" : "Nsight Compute", "version" : "2025.1.1.2" }
        }"#;
        let c = version_json_components(json);
        assert_eq!(c.len(), 5);
        assert!(c.contains(&("cuda_nvcc".into(), "12.8.93".into())));
        assert!(!c.iter().any(|(n, _)| n == "cuda"));
        assert_eq!(c.first().map(|(n, _)| n.as_str()), Some("cuda_cccl"));
        assert!(version_json_components("[1,2]").is_empty());
        assert!(version_json_components(&garbage()).is_empty());
        assert!(version_json_components(r#"{"cuda_nvcc": {"version": "evil\u001b"}}"#).is_empty());
    }

    #[test]
    fn garbage_truncated_and_huge() {
        assert_eq!(parse_version(""), None);
        assert_eq!(parse_version(&garbage()), None);
        assert_eq!(parse_version("nvcc: command not found"), None);
        // Truncated after the release: the release alone is still known.
        assert_eq!(
            parse_version("Cuda compilation tools, release 11.8"),
            Some(NvccVersion {
                release: "11.8".into(),
                full: None
            })
        );
        assert_eq!(parse_version("Cuda compilation tools, release "), None);
        assert_eq!(parse_version(&huge("pre-release notes\n")), None);
    }
}
