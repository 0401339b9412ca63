//! The frameworks conda installed into an environment, from its `conda-meta/*.json` records:
//! their build strings and dependencies name the CUDA and cuDNN they were built with.

use std::path::{Path, PathBuf};

use crate::host::Host;
use crate::report::Framework;
/// One `conda-meta/<name>-<version>-<build>.json` record.
#[derive(Debug, Default, serde::Deserialize)]
struct CondaRecord {
    #[serde(default)]
    name: String,
    #[serde(default)]
    version: String,
    #[serde(default)]
    build: String,
    #[serde(default)]
    depends: Vec<String>,
}

/// What a conda package record says of its CUDA and cuDNN: the build string
/// (`py3.7_cuda10.1.243_cudnn7.6.3_0`, conda-forge's `cuda120_py311h...`), else its `depends`
/// (`cudatoolkit >=9.0,<10.0a0`, `cuda-version >=12.0,<13`, `cudnn >=8.9.2.26,<9.0a0`), else the
/// environment's installed `cudatoolkit` / `cuda-version` record.
fn conda_build_facts(
    rec: &CondaRecord,
    installed_cuda: Option<&str>,
) -> (Option<String>, Option<String>) {
    let mut cuda = None;
    let mut cudnn = None;
    for token in rec.build.split('_') {
        if let Some(v) = token.strip_prefix("cudnn") {
            if v.starts_with(|c: char| c.is_ascii_digit()) {
                cudnn = Some(v.to_string());
            }
        } else if let Some(v) = token.strip_prefix("cuda")
            && v.starts_with(|c: char| c.is_ascii_digit())
        {
            cuda = if v.contains('.') {
                let mut parts = v.split('.');
                match (parts.next(), parts.next()) {
                    (Some(a), Some(b)) => Some(format!("{a}.{b}")),
                    _ => None,
                }
            } else if v.len() >= 2 && v.chars().all(|c| c.is_ascii_digit()) {
                // `cuda120` (conda-forge): the last digit is the minor.
                let (a, b) = v.split_at(v.len() - 1);
                Some(format!("{a}.{b}"))
            } else {
                None
            };
        }
    }
    let floor = |pkg: &str| -> Option<String> {
        rec.depends.iter().find_map(|d| {
            let (name, spec) = d.split_once(' ')?;
            if name != pkg {
                return None;
            }
            let v = spec
                .split(',')
                .find_map(|c| c.trim().strip_prefix(">="))
                .or_else(|| spec.trim().strip_prefix("=="))
                .or_else(|| {
                    Some(spec.trim()).filter(|s| s.starts_with(|c: char| c.is_ascii_digit()))
                })?;
            let v = v.trim_end_matches(".*").trim_end_matches('*');
            (!v.is_empty()).then(|| v.to_string())
        })
    };
    let major_minor = |v: String| -> String {
        let mut p = v.split('.');
        match (p.next(), p.next()) {
            (Some(a), Some(b)) => format!("{a}.{b}"),
            (Some(a), None) => a.to_string(),
            _ => v.clone(),
        }
    };
    let cuda = cuda
        .or_else(|| installed_cuda.map(|v| major_minor(v.to_string())))
        .or_else(|| floor("cudatoolkit").map(major_minor))
        .or_else(|| floor("cuda-version").map(major_minor));
    let cudnn = cudnn.or_else(|| floor("cudnn"));
    (cuda, cudnn)
}

/// Frameworks conda installed (`pytorch`, `cupy` records in `conda-meta`): their CUDA and cuDNN
/// from the record, added to what the site folder told (a conda CuPy's dist-info is plain
/// `cupy`, without the `-cudaXXX` of a wheel's name).
pub(super) fn conda_frameworks(host: &Host, prefix: &Path, frameworks: &mut Vec<Framework>) {
    let records: Vec<(PathBuf, CondaRecord)> = host
        .fs
        .read_dir(prefix.join("conda-meta"))
        .into_iter()
        .filter(|e| {
            e.name.ends_with(".json")
                && ["pytorch-", "cupy-", "cudatoolkit-", "cuda-version-"]
                    .iter()
                    .any(|p| e.name.starts_with(p))
        })
        .filter_map(|e| {
            let mut rec: CondaRecord = serde_json::from_str(&host.fs.read_opt(&e.path)?).ok()?;
            // A record without its fields still has them in its file name
            // (`<name>-<version>-<build>.json`).
            if rec.name.is_empty() {
                let mut parts = e.name.trim_end_matches(".json").rsplitn(3, '-');
                if let (Some(build), Some(version), Some(name)) =
                    (parts.next(), parts.next(), parts.next())
                {
                    rec.name = name.to_string();
                    rec.version = version.to_string();
                    rec.build = build.to_string();
                }
            }
            if rec.build.is_empty() {
                rec.build = e
                    .name
                    .trim_end_matches(".json")
                    .strip_prefix(&format!("{}-{}-", rec.name, rec.version))
                    .unwrap_or_default()
                    .to_string();
            }
            Some((e.path, rec))
        })
        .collect();
    let installed_cuda = records
        .iter()
        .find(|(_, r)| r.name == "cudatoolkit")
        .or_else(|| records.iter().find(|(_, r)| r.name == "cuda-version"))
        .map(|(_, r)| r.version.as_str());
    for (path, rec) in &records {
        let name = match rec.name.as_str() {
            "pytorch" => "torch",
            "cupy" => "cupy",
            _ => continue,
        };
        // A CPU build says so (`pytorch-2.1.0-py3.11_cpu_0`, `cpuonly`).
        if rec.build.contains("cpu") {
            continue;
        }
        let (cuda, cudnn) = conda_build_facts(rec, installed_cuda);
        let Some(cuda) = cuda else { continue };
        // A cuDNN the package loads from the environment is a `depends`; pytorch's build string
        // names the cuDNN it was built with, which need not be a library in the environment, so
        // for torch only a `cudnn` dependency sets the need.
        let cudnn = if name == "torch" && !rec.depends.iter().any(|d| d.starts_with("cudnn ")) {
            None
        } else {
            cudnn
        };
        let source = format!("{} (conda-meta)", path.display());
        match frameworks.iter_mut().find(|f| f.name == name) {
            Some(fw) => {
                // Conda's build, not a pip wheel: its arch list is not the wheels'.
                if fw.distribution.is_none() {
                    fw.distribution = Some(format!("{} (conda)", rec.name));
                }
                if fw.cuda.is_none() && fw.rocm.is_none() {
                    fw.cuda = Some(cuda);
                    fw.variant = Some("cuda".to_string());
                    fw.source = source;
                }
                if fw.cudnn.is_none() {
                    fw.cudnn = cudnn;
                }
            }
            None => frameworks.push(Framework {
                name: name.to_string(),
                version: Some(rec.version.clone()),
                cuda: Some(cuda),
                cudnn,
                variant: Some("cuda".to_string()),
                distribution: Some(format!("{} (conda)", rec.name)),
                source,
                ..Framework::default()
            }),
        }
    }
}

#[cfg(test)]
mod conda_tests {
    use super::*;

    fn rec(name: &str, build: &str, depends: &[&str]) -> CondaRecord {
        CondaRecord {
            name: name.into(),
            version: "1.4.0".into(),
            build: build.into(),
            depends: depends.iter().map(|d| (*d).to_string()).collect(),
        }
    }

    #[test]
    fn cuda_and_cudnn_from_build_strings_and_depends() {
        let r = rec(
            "pytorch",
            "py3.7_cuda10.1.243_cudnn7.6.3_0",
            &["cudatoolkit >=10.1,<10.2"],
        );
        assert_eq!(
            conda_build_facts(&r, None),
            (Some("10.1".into()), Some("7.6.3".into()))
        );
        let r = rec(
            "cupy",
            "py37h0c141eb_0",
            &["cudatoolkit >=9.0,<10.0a0", "cudnn >=7.1.3,<8.0a0"],
        );
        assert_eq!(
            conda_build_facts(&r, None),
            (Some("9.0".into()), Some("7.1.3".into()))
        );
        // The environment's installed cudatoolkit is more precise than a floor.
        assert_eq!(
            conda_build_facts(&r, Some("9.2.148")).0.as_deref(),
            Some("9.2")
        );
        let r = rec(
            "pytorch",
            "cuda120_py311h2a7c8ff_300",
            &["cuda-version >=12.0,<13"],
        );
        assert_eq!(conda_build_facts(&r, None).0.as_deref(), Some("12.0"));
        let r = rec("cupy", "py313h2d7d3e4_0", &["cuda-version >=12,<13.0a0"]);
        assert_eq!(conda_build_facts(&r, None).0.as_deref(), Some("12"));
    }
}
