//! Modes an administrator sets on a GPU that keep programs off it while the driver, nvidia-smi
//! and every library look healthy: MIG enabled with no MIG device made, and the compute mode.
//! Findings: `mig-no-instances`, `compute-mode-prohibited`.
//!
//! Both are the GPU's own settings, read from NVML or `nvidia-smi -q -x` (`mig_devices`,
//! `compute_mode`); neither is visible in `nvidia-smi`'s table beyond a "MIG" column and a
//! "Compute M." cell, which is why users report them as "torch finds no GPU".

use super::health::{driver_gpus, gpu_label, gpus_are, gpus_named};
use super::{FindingBuilder, ids};
use crate::manifest::Manifests;
use crate::report::{ComputeMode, MigMode};
use crate::report::{Finding, Gpu, Report, Severity};

pub(super) fn findings(report: &Report, _manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(mig_no_instances(report));
    out.extend(compute_mode(report));
    out
}

/// "On the host: " inside a container, whose own nvidia-smi cannot change the GPU's modes (nor
/// persistence, `tuning.rs`).
pub(super) fn on_the_host(report: &Report) -> &'static str {
    if report.host.container.is_some() {
        "On the host (a container cannot change it): "
    } else {
        ""
    }
}

/// The severity of a mode that takes `hit` GPUs out of `all`: an error when no GPU is left to
/// run on, a warning when others still are.
fn severity(hit: usize, all: usize) -> Severity {
    if hit >= all {
        Severity::Error
    } else {
        Severity::Warning
    }
}

// ---------------------------------------------------------------------------------------------
// mig-no-instances

/// With MIG on, CUDA enumerates MIG devices (a compute instance inside a GPU instance), never
/// the GPU itself (NVIDIA's MIG user guide, "CUDA Device Enumeration"); enabling MIG makes
/// none, so until `nvidia-smi mig -cgi ... -C` runs, the GPU gives CUDA no device.
fn mig_no_instances(report: &Report) -> Option<Finding> {
    let all: Vec<&Gpu> = driver_gpus(report).collect();
    let hit: Vec<&Gpu> = all
        .iter()
        .copied()
        .filter(|g| g.mig_mode == Some(MigMode::Enabled) && g.mig_devices == Some(0))
        .collect();
    let first = hit.first()?;
    let severity = severity(hit.len(), all.len());
    let title = format!(
        "MIG is enabled on {} but no MIG device exists: CUDA finds no GPU there",
        gpus_named(&hit)
    );
    let mut f = FindingBuilder::new(&ids::MIG_NO_INSTANCES, severity, title).detail(
        "With MIG mode on, CUDA programs run on MIG devices (a compute instance inside a GPU \
         instance) and never on the whole GPU. Turning MIG on creates no instance, so until one \
         is made the GPU offers CUDA nothing: torch.cuda.device_count() counts it out, and with \
         no other GPU CUDA reports 'no CUDA-capable device is detected'.",
    );
    for g in &hit {
        f = f
            .evidence(format!(
                "{}: MIG mode Enabled, 0 MIG devices (from {})",
                gpu_label(g),
                g.source
            ))
            .subject(g.subject());
    }
    let others = all.len() - hit.len();
    if others > 0 {
        f = f.evidence(format!(
            "{others} other GPU{} can still run CUDA programs",
            if others == 1 { "" } else { "s" }
        ));
    }
    let i = first.index;
    // The host's step; in a container `on_the_host` has said so.
    let host = report.host.container.is_none();
    f = f.fix_on_host_if(host).fix(format!(
        "{}create the instances the jobs need: list the profiles with `nvidia-smi mig -i {i} \
         -lgip`, then `sudo nvidia-smi mig -i {i} -cgi <profile>[,<profile>...] -C` (the `-C` \
         makes each GPU instance's compute instance, without which there is still no MIG \
         device). Or, to use the whole GPU, turn MIG off with `sudo nvidia-smi -i {i} -mig 0` \
         while nothing runs on it.",
        on_the_host(report)
    ));
    if severity == Severity::Error {
        f = f.explains(&ids::FRAMEWORK_CANNOT_SEE_GPU);
    }
    Some(f.build())
}

// ---------------------------------------------------------------------------------------------
// compute-mode-prohibited

/// `Prohibited` refuses every CUDA context; `Exclusive_Process` allows one process at a time,
/// so a second one gets "all CUDA-capable devices are busy or unavailable" (NVML's
/// `nvmlComputeMode_t`; `nvidia-smi -c`). Exclusive mode is a scheduler's normal setting on a
/// shared node, hence only information; Prohibited on every GPU leaves nothing to run on.
fn compute_mode(report: &Report) -> Option<Finding> {
    let all: Vec<&Gpu> = driver_gpus(report).collect();
    let mode = |g: &&Gpu, m: ComputeMode| g.compute_mode == Some(m);
    let prohibited: Vec<&Gpu> = all
        .iter()
        .copied()
        .filter(|g| mode(g, ComputeMode::Prohibited))
        .collect();
    let exclusive: Vec<&Gpu> = all
        .iter()
        .copied()
        .filter(|g| mode(g, ComputeMode::ExclusiveProcess) || mode(g, ComputeMode::ExclusiveThread))
        .collect();
    let (hit, severity, title, detail) = if prohibited.is_empty() {
        let first = exclusive.first()?;
        (
            exclusive.clone(),
            Severity::Info,
            format!(
                "{} in Exclusive_Process compute mode: one program at a time",
                gpus_are(&exclusive)
            ),
            format!(
                "In Exclusive_Process mode a GPU takes one process's CUDA context at a time; a \
                 second process (a second DataLoader worker that touches CUDA, a notebook next \
                 to a job) gets 'all CUDA-capable devices are busy or unavailable'. Schedulers \
                 set this mode on shared nodes; it is harmless while one program uses GPU {}.",
                first.index
            ),
        )
    } else {
        (
            prohibited.clone(),
            severity(prohibited.len(), all.len()),
            format!(
                "{} in Prohibited compute mode: no program may use {}",
                gpus_are(&prohibited),
                if prohibited.len() == 1 { "it" } else { "them" }
            ),
            "In Prohibited compute mode the driver refuses every CUDA context on the GPU: \
             programs report it busy or unavailable (or find no device), while nvidia-smi \
             shows it healthy."
                .to_string(),
        )
    };
    let mut f = FindingBuilder::new(&ids::COMPUTE_MODE_PROHIBITED, severity, title).detail(detail);
    for g in &hit {
        f = f
            .evidence(format!(
                "{}: compute mode {} (from {})",
                gpu_label(g),
                g.compute_mode.as_ref().map_or("", ComputeMode::as_str),
                g.source
            ))
            .subject(g.subject());
    }
    let indices: Vec<String> = hit.iter().map(|g| g.index.to_string()).collect();
    let host = report.host.container.is_none();
    f = f.fix_on_host_if(host).fix(format!(
        "{}`sudo nvidia-smi -i {} -c DEFAULT` lets every process use the GPU again (a batch \
         scheduler that set the mode sets it back for its jobs: ask its administrator); the \
         setting does not survive a reboot or driver reload.",
        on_the_host(report),
        indices.join(",")
    ));
    if severity == Severity::Error {
        f = f.explains(&ids::FRAMEWORK_CANNOT_SEE_GPU);
    }
    Some(f.build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::test_support::{has_evidence, one};

    fn a100(index: u32) -> Gpu {
        Gpu {
            index,
            name: Some("NVIDIA A100-SXM4-80GB".into()),
            source: "nvidia-smi".into(),
            mig_mode: Some("Disabled".into()),
            compute_mode: Some("Default".into()),
            ..Gpu::default()
        }
    }

    fn run(gpus: Vec<Gpu>) -> Vec<Finding> {
        let report = Report {
            gpus,
            ..Report::default()
        };
        findings(&report, crate::manifest::embedded())
    }

    fn mig_without_devices(index: u32) -> Gpu {
        let mut g = a100(index);
        g.mig_mode = Some("Enabled".into());
        g.mig_devices = Some(0);
        g
    }

    #[test]
    fn healthy_gpus_and_mig_with_devices_give_nothing() {
        let mut with_devices = a100(1);
        with_devices.mig_mode = Some("Enabled".into());
        with_devices.mig_devices = Some(3);
        assert!(run(vec![a100(0), with_devices]).is_empty());
    }

    #[test]
    fn mig_without_devices_on_the_only_gpu_is_an_error_that_explains_the_framework() {
        let found = run(vec![mig_without_devices(0)]);
        let f = one(&found, "mig-no-instances");
        assert_eq!(f.severity, Severity::Error);
        assert!(has_evidence(
            f,
            "GPU 0 (NVIDIA A100-SXM4-80GB): MIG mode Enabled, 0 MIG devices"
        ));
        assert!(
            f.fix
                .as_deref()
                .unwrap()
                .contains("nvidia-smi mig -i 0 -cgi")
        );
        assert_eq!(f.explains, ["framework-cannot-see-gpu"]);
        assert_eq!(
            f.title,
            "MIG is enabled on GPU 0 but no MIG device exists: CUDA finds no GPU there"
        );
    }

    #[test]
    fn mig_without_devices_beside_a_usable_gpu_is_a_warning() {
        let found = run(vec![a100(0), mig_without_devices(1)]);
        let f = one(&found, "mig-no-instances");
        assert_eq!(f.severity, Severity::Warning);
        assert!(has_evidence(f, "1 other GPU can still run CUDA programs"));
        assert!(f.explains.is_empty());
    }

    #[test]
    fn prohibited_is_an_error_when_every_gpu_is_and_exclusive_is_information() {
        let mut p = a100(0);
        p.compute_mode = Some("Prohibited".into());
        let found = run(vec![p.clone()]);
        let f = one(&found, "compute-mode-prohibited");
        assert_eq!(f.severity, Severity::Error);
        assert!(
            f.fix
                .as_deref()
                .unwrap()
                .contains("nvidia-smi -i 0 -c DEFAULT")
        );

        let found = run(vec![p, a100(1)]);
        assert_eq!(
            one(&found, "compute-mode-prohibited").severity,
            Severity::Warning
        );

        let mut e = a100(0);
        e.compute_mode = Some("Exclusive_Process".into());
        let found = run(vec![e]);
        let f = one(&found, "compute-mode-prohibited");
        assert_eq!(f.severity, Severity::Info);
        assert!(f.title.contains("Exclusive_Process"));
    }

    #[test]
    fn gpus_known_only_from_the_bus_are_not_judged() {
        let mut g = mig_without_devices(0);
        g.source = "pci".into();
        g.compute_mode = Some("Prohibited".into());
        assert!(run(vec![g]).is_empty());
    }
}
