//! Says so when the "has this build kernels for this GPU?" check cannot be made, instead of
//! staying silent. Finding: `arch-check-skipped` (info).
//!
//! Two gaps make `arch-not-in-build` skip a GPU: a GPU whose compute capability the driver did
//! not report (drivers before 510 have no `compute_cap` query), and a torch release whose arch
//! list the tables do not hold (they start at 1.12). An old K40c with torch 1.3.1 is exactly
//! the machine where the answer matters, so the user is told the check was not made.

use super::FindingBuilder;
use super::ids;
use crate::framework::FrameworkName;
use crate::manifest::Manifests;
use crate::report::GpuSource;
use crate::report::{Finding, Framework, Gpu, PythonEnv, Report, Severity, framework_subject};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let gpus: Vec<&Gpu> = report
        .nvidia_gpus()
        .filter(|g| g.source != GpuSource::Pci)
        .collect();
    if gpus.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for env in &report.python_envs {
        // A framework asked at run time (`--deep`, `smoke`) has its own findings; its files'
        // gaps do not matter then.
        for fw in env.frameworks.iter().filter(|f| {
            f.name == FrameworkName::Torch
                && f.variant.as_deref() == Some("cuda")
                && f.runtime.is_none()
        }) {
            out.extend(note(report, manifests, &gpus, env, fw));
        }
    }
    out
}

fn note(
    report: &Report,
    manifests: &Manifests,
    gpus: &[&Gpu],
    env: &PythonEnv,
    fw: &Framework,
) -> Option<Finding> {
    let cuda = Version::parse(fw.cuda.as_deref()?)?;
    let label = format!(
        "{} {}",
        fw.name,
        fw.version.as_deref().unwrap_or("(version unknown)")
    );
    let has_list = super::runtime::arch_list(fw).is_some()
        || super::frameworks::torch_build(manifests, fw).is_some_and(|b| b.sass.is_some());
    let major = manifests.cuda.major(cuda.major());
    let mut reasons = Vec::new();
    for gpu in gpus {
        let name = gpu.name.as_deref().unwrap_or("GPU");
        match gpu.compute_capability.as_deref().and_then(Version::parse) {
            // Only a driver that answered can have left it out (drivers before 510 have no
            // `compute_cap` query); without one, the driver's own findings say more.
            None if report.driver.version.is_some() => reasons.push(format!(
                "GPU {}: {name}: the driver did not report its compute capability",
                gpu.index
            )),
            None => {}
            Some(cc) if !has_list => {
                // A GPU the CUDA major itself dropped is reported by arch-not-in-build.
                let dropped = major.is_some_and(|m| {
                    Version::parse(&m.min_sm).is_some_and(|min| cc < min)
                        || m.removed_sm
                            .iter()
                            .any(|r| Version::parse(r).as_ref() == Some(&cc))
                });
                if !dropped {
                    reasons.push(format!(
                        "GPU {}: {name}, compute capability {cc}: no arch list for {label} (frameworks.toml holds torch arch lists from 1.12)",
                        gpu.index
                    ));
                }
            }
            Some(_) => {}
        }
    }
    if reasons.is_empty() {
        return None;
    }
    let mut f = FindingBuilder::new(
        &ids::ARCH_CHECK_SKIPPED,
        Severity::Info,
        format!("Could not check whether {label} has kernels for this machine's GPUs"),
    )
    .detail(
        "gpu-doctor compares a build's compiled architectures with each GPU's compute \
         capability to catch 'no kernel image is available for execution on the device'. Here \
         one side is unknown, so that check was not made; it is not a sign of a problem.",
    )
    .subject(framework_subject(&env.path, &fw.name));
    for r in reasons {
        f = f.evidence(r);
    }
    Some(
        f.fix(format!(
            "Ask the framework itself: `gpu-doctor doctor --deep` imports {} and compares torch.cuda.get_arch_list() with the GPU.",
            fw.name
        ))
        .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Gpu;

    fn machine(cc: Option<&str>, torch: &str, cuda: &str) -> Report {
        Report {
            gpus: vec![Gpu {
                index: 0,
                name: Some("Tesla K40c".into()),
                compute_capability: cc.map(str::to_string),
                source: "nvml".into(),
                ..Gpu::default()
            }],
            python_envs: vec![PythonEnv {
                path: "/venv".into(),
                frameworks: vec![Framework {
                    name: "torch".into(),
                    version: Some(torch.into()),
                    cuda: Some(cuda.into()),
                    variant: Some("cuda".into()),
                    ..Framework::default()
                }],
                ..PythonEnv::default()
            }],
            ..Report::default()
        }
    }

    #[test]
    fn old_torch_or_unknown_cc_is_said_not_skipped() {
        let m = crate::manifest::embedded();
        let f = findings(&machine(Some("3.5"), "1.3.1", "10.1"), m);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, "arch-check-skipped");
        assert_eq!(f[0].severity, Severity::Info);
        assert!(
            f[0].evidence[0].contains("no arch list for torch 1.3.1"),
            "{:?}",
            f[0].evidence
        );
        let mut r = machine(None, "2.4.0+cu121", "12.1");
        assert!(
            findings(&r, m).is_empty(),
            "no driver answered: nothing to add"
        );
        r.driver.version = Some("470.256.02".into());
        let f = findings(&r, m);
        assert!(f[0].evidence[0].contains("did not report its compute capability"));
        // A release the tables hold, on a GPU with a known cc: checked, so no note.
        assert!(findings(&machine(Some("8.0"), "2.4.0+cu121", "12.1"), m).is_empty());
    }
}
