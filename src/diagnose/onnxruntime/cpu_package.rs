//! onnxruntime (the CPU-only package) beside onnxruntime-gpu in one environment:
//! `cpu-only-framework-build`.
//!
//! Both distributions install the same `onnxruntime` package folder: whichever pip installed
//! last wrote `onnxruntime/capi/onnxruntime_pybind11_state.so`, and with the CPU package's,
//! `onnxruntime.get_available_providers()` lists no CUDA provider ("Specified provider
//! 'CUDAExecutionProvider' is not in available provider names. Available providers:
//! 'AzureExecutionProvider, CPUExecutionProvider'", microsoft/onnxruntime#26996), though every
//! library the GPU package's provider needs is there. The maintainers' answer is to uninstall
//! the CPU package (microsoft/onnxruntime#6183: "Can you uninstall the cpu package and try
//! importing again?"); uninstalling it alone removes the shared files too, so both go and
//! onnxruntime-gpu is installed again. Which was installed last is not recorded on the machine
//! (both RECORDs list the shared module), so a GPU package that happens to win today is lost at
//! the next install of either: an error either way. A machine without an NVIDIA GPU is left
//! alone (the CPU build is then what runs).

use crate::diagnose::{FindingBuilder, ids};
use crate::report::{Finding, PythonEnv, Report, Severity, framework_subject};

/// The CPU-only distribution that shares onnxruntime-gpu's module.
const CPU_PACKAGE: &str = "onnxruntime";

pub(super) fn finding(report: &Report, env: &PythonEnv) -> Option<Finding> {
    report.nvidia_gpus().next()?;
    let gpu = super::ort_gpu(env)?;
    let cpu = env.extensions.iter().find(|e| e.name == CPU_PACKAGE)?;
    let python = format!("{}/bin/python", env.path.trim_end_matches('/'));
    Some(
        FindingBuilder::new(
            &ids::CPU_ONLY_FRAMEWORK_BUILD,
            Severity::Error,
            format!(
                "{} has both onnxruntime {} (the CPU-only package) and onnxruntime-gpu {}: they \
                 install the same `onnxruntime` module, and with the CPU package's there is no \
                 CUDAExecutionProvider",
                env.path, cpu.version, gpu.version
            ),
        )
        .detail(
            "onnxruntime and onnxruntime-gpu are two builds of one Python package: the files of \
             the one pip installed last are the ones `import onnxruntime` loads. With the CPU \
             build's, sessions that ask for CUDAExecutionProvider run on the CPU (\"Available \
             providers: 'AzureExecutionProvider, CPUExecutionProvider'\"); a package that \
             requires `onnxruntime` (not -gpu) brings the CPU build back at its next install.",
        )
        .evidence(format!("onnxruntime {}: {}", cpu.version, cpu.source))
        .evidence(format!("onnxruntime-gpu {}: {}", gpu.version, gpu.source))
        .fix(format!(
            "Remove both and install the GPU package alone: `{python} -m pip uninstall -y \
             onnxruntime onnxruntime-gpu` then `{python} -m pip install onnxruntime-gpu=={}` \
             (uninstalling only the CPU package deletes the files they share). Where another \
             package requires `onnxruntime`, install it first and onnxruntime-gpu last.",
            gpu.version
        ))
        .subject(framework_subject(&env.path, "onnxruntime"))
        .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Extension, Gpu};

    fn env(names: &[(&str, &str)]) -> PythonEnv {
        PythonEnv {
            path: "/home/ubuntu/venv".into(),
            extensions: names
                .iter()
                .map(|(n, v)| Extension {
                    name: (*n).into(),
                    version: (*v).into(),
                    source: format!("/site/{n}-{v}.dist-info"),
                    ..Extension::default()
                })
                .collect(),
            ..PythonEnv::default()
        }
    }

    fn with_gpu() -> Report {
        let mut r = Report::default();
        r.gpus.push(Gpu {
            name: Some("Tesla T4".into()),
            ..Gpu::default()
        });
        r
    }

    #[test]
    fn the_cpu_package_beside_the_gpu_package_is_an_error() {
        let e = env(&[("onnxruntime", "1.23.2"), ("onnxruntime-gpu", "1.23.2")]);
        let f = finding(&with_gpu(), &e).expect("a finding");
        assert_eq!(f.id, "cpu-only-framework-build");
        assert_eq!(f.severity, Severity::Error);
        let fix = f.fix.as_deref().unwrap_or_default();
        assert!(
            fix.contains("uninstall -y onnxruntime onnxruntime-gpu"),
            "{fix}"
        );
        assert!(fix.contains("onnxruntime-gpu==1.23.2"), "{fix}");
    }

    #[test]
    fn either_package_alone_is_no_finding() {
        assert!(finding(&with_gpu(), &env(&[("onnxruntime-gpu", "1.23.2")])).is_none());
        assert!(finding(&with_gpu(), &env(&[("onnxruntime", "1.23.2")])).is_none());
    }

    #[test]
    fn without_an_nvidia_gpu_the_cpu_build_is_what_runs() {
        let e = env(&[("onnxruntime", "1.23.2"), ("onnxruntime-gpu", "1.23.2")]);
        assert!(finding(&Report::default(), &e).is_none());
    }
}
