//! Unit tests of the AMD planner's decisions on small hand-built machines (the integration tests
//! in tests/it/plan.rs and tests/it/amd.rs cover whole fixture plans). Versions come from the
//! embedded manifests; the ones pinned here are rocm.toml's documented answers (7.1.1 the newest
//! installer, gfx1102 and gfx1031 through their siblings' override, gfx8 and gfx1103 never), so a
//! broken rule fails.

use super::decide::{sibling_release, supported_by_release};
use super::{Choices, plan};
use crate::diagnose::ids;
use crate::manifest::{Manifests, embedded};
use crate::plan::{Plan, StepKind, Target, Via};
use crate::report::rocm::{RocmInstall, RocmStack};
use crate::report::{Finding, Gpu, GpuVendor, Report, Severity};

/// An Ubuntu 24.04 machine with one discrete AMD GPU of this gfx target, amdgpu loaded with
/// /dev/kfd, and no ROCm installed.
fn amd_machine(gfx: &str) -> Report {
    let mut r = Report::default();
    r.host.os_id = Some("ubuntu".to_string());
    r.host.os_version = Some("24.04".to_string());
    r.gpus = vec![Gpu {
        index: 0,
        vendor: GpuVendor::Amd,
        name: Some(format!("AMD GPU {gfx}")),
        gfx_target: Some(gfx.to_string()),
        integrated: Some(false),
        ..Gpu::default()
    }];
    r.kernel.amdgpu_loaded = true;
    r.kernel.device_nodes = vec!["/dev/kfd".to_string(), "/dev/dri/renderD128".to_string()];
    r
}

/// The same machine with ROCm `version` in /opt/rocm, its default install.
fn with_rocm(mut r: Report, version: &str) -> Report {
    r.kernel.rocm_version = Some(version.to_string());
    r.rocm = Some(RocmStack {
        installs: vec![RocmInstall {
            path: "/opt/rocm".to_string(),
            version: Some(version.to_string()),
            ..RocmInstall::default()
        }],
        default_install: Some("/opt/rocm".to_string()),
        ..RocmStack::default()
    });
    r
}

fn finding(id: &str) -> Finding {
    Finding {
        id: id.to_string(),
        severity: Severity::Error,
        title: id.to_string(),
        detail: String::new(),
        evidence: Vec::new(),
        fix: None,
        explains: Vec::new(),
        subjects: Vec::new(),
        fix_target: crate::report::FixTarget::Here,
    }
}

/// The ROCm release the plan would install (`None`: it keeps what is there).
fn rocm_chosen(r: &Report, m: &Manifests, target: &Target) -> Option<String> {
    let choices = Choices::make(r, m, target).expect("an AMD plan");
    choices.rocm.map(|c| c.installer.rocm.clone())
}

fn step_kinds(plan: &Plan) -> Vec<StepKind> {
    plan.steps.iter().map(|s| s.kind).collect()
}

fn refusal(r: &Report, target: &Target) -> String {
    match plan(r, embedded(), target) {
        Ok(p) => panic!("expected a refusal, got the steps {:?}", step_kinds(&p)),
        Err(refusal) => refusal.reason,
    }
}

#[test]
fn installers_and_releases_agree() {
    let m = embedded();
    // The newest installer for noble whose release lists gfx1100 is 7.1.1.
    let i = m.rocm.installer_for("noble", "gfx1100").expect("installer");
    assert_eq!(i.rocm, "7.1.1");
    assert_eq!(i.version(), Some("7.1.1.70101-1"));
    // RDNA 4 first appears in 6.4.1's list; 6.2.1 (jammy) lists it not.
    assert!(supported_by_release(m, "6.2.1", "gfx1201").is_none());
    assert!(supported_by_release(m, "6.4.2", "gfx1201").is_some());
    // gfx1102 runs through its RDNA 3 sibling; gfx1103 never does.
    assert_eq!(
        sibling_release(m, "7.1.1", "gfx1102"),
        Some(("RDNA 3".to_string(), "11.0.0".to_string()))
    );
    assert!(supported_by_release(m, "7.1.1", "gfx1103").is_none());
    assert!(crate::version::Version::parse(&i.rocm).is_some());
}

#[test]
fn listed_targets_get_the_newest_release_for_their_ubuntu() {
    let m = embedded();
    let apt = Target {
        via: Some(Via::Apt),
        ..Target::default()
    };
    for gfx in ["gfx1100", "gfx1201", "gfx90a", "gfx942"] {
        assert_eq!(
            rocm_chosen(&amd_machine(gfx), m, &apt).as_deref(),
            Some("7.1.1"),
            "{gfx}"
        );
    }
    // 22.04 gets the jammy package of the same release.
    let mut jammy = amd_machine("gfx1030");
    jammy.host.os_version = Some("22.04".to_string());
    let choices = Choices::make(&jammy, m, &apt).expect("an AMD plan");
    let rocm = choices.rocm.expect("a ROCm to install");
    assert_eq!(
        (rocm.installer.rocm.as_str(), rocm.codename.as_str()),
        ("7.1.1", "jammy")
    );
    // A working amdgpu with /dev/kfd is kept: only the user-space stack is installed.
    assert!(rocm.no_dkms);
    assert_eq!(rocm.usecase, m.rocm.install.usecase_radeon);
}

#[test]
fn no_working_driver_brings_amdgpu_dkms_and_a_reboot() {
    let mut r = amd_machine("gfx1100");
    r.kernel.amdgpu_loaded = false;
    r.kernel.device_nodes.clear();
    let p = plan(&r, embedded(), &Target::default()).expect("a plan");
    let rocm = p
        .steps
        .iter()
        .find(|s| s.kind == StepKind::Rocm)
        .expect("a rocm step");
    assert!(rocm.reboot, "{}", rocm.title);
    assert!(p.reboots());
    assert!(!p.untouched.iter().any(|u| u == "the amdgpu kernel driver"));
}

#[test]
fn sibling_targets_get_the_override() {
    // gfx1102 (RX 7600) runs as gfx1100, gfx1031 (RX 6700 XT) as gfx1030: the release is
    // chosen through the sibling and the plan exports the maintainers' value.
    for (gfx, value) in [("gfx1102", "11.0.0"), ("gfx1031", "10.3.0")] {
        let p = plan(&amd_machine(gfx), embedded(), &Target::default()).expect("a plan");
        let ids = step_kinds(&p);
        assert!(ids.contains(&StepKind::Rocm), "{gfx}: {ids:?}");
        let step = p.steps.iter().find(|s| s.kind == StepKind::HsaOverride);
        assert_eq!(
            step.map(|s| s.title.as_str()),
            Some(format!("HSA_OVERRIDE_GFX_VERSION={value} for every login").as_str()),
            "{gfx}: {ids:?}"
        );
    }
}

#[test]
fn gpus_no_rocm_runs_are_refused_with_the_reason() {
    // GCN 4 (RX 580): dropped in ROCm 4.0.
    let why = refusal(&amd_machine("gfx803"), &Target::default());
    assert!(why.contains("gfx8 and older"), "{why}");
    // The 780M iGPU: no release lists it and the override hangs it.
    let why = refusal(&amd_machine("gfx1103"), &Target::default());
    assert!(
        why.contains("gfx1103") && why.contains("page faults"),
        "{why}"
    );
    // RDNA 1: no sibling any release carries.
    let why = refusal(&amd_machine("gfx1010"), &Target::default());
    assert!(why.contains("RDNA 1"), "{why}");
    // A GPU whose target is not known cannot be planned for.
    let mut unknown = amd_machine("gfx1100");
    unknown.gpus[0].gfx_target = None;
    let why = refusal(&unknown, &Target::default());
    assert!(why.contains("rocminfo"), "{why}");
    // Only Ubuntu 22.04 and 24.04 have amdgpu-install packages.
    let mut fedora = amd_machine("gfx1100");
    fedora.host.os_id = Some("fedora".to_string());
    fedora.host.os_version = Some("41".to_string());
    let why = refusal(&fedora, &Target::default());
    assert!(why.contains("fedora-41"), "{why}");
}

#[test]
fn nvidia_only_requests_are_refused() {
    let r = amd_machine("gfx1100");
    let why = refusal(
        &r,
        &Target {
            cuda: Some("12.8".to_string()),
            ..Target::default()
        },
    );
    assert!(why.contains("--cuda"), "{why}");
}

#[test]
fn a_healthy_machine_keeps_its_rocm_and_driver() {
    let m = embedded();
    // ROCm 6.4.2 lists gfx1201: it is kept although 7.1.1 is newer (least change).
    let healthy = with_rocm(amd_machine("gfx1201"), "6.4.2");
    assert_eq!(rocm_chosen(&healthy, m, &Target::default()), None);
    let p = plan(&healthy, m, &Target::default()).expect("a plan");
    let ids = step_kinds(&p);
    assert!(
        !ids.contains(&StepKind::Rocm) && !ids.contains(&StepKind::AmdgpuInstall),
        "{ids:?}"
    );
    assert!(!p.reboots());
    assert!(p.untouched.iter().any(|u| u == "the amdgpu kernel driver"));
    assert!(
        p.untouched
            .iter()
            .any(|u| u == "the ROCm in /opt/rocm (6.4.2)"),
        "{:?}",
        p.untouched
    );
    // The same machine with a finding that its ROCm is too old gets the newest release.
    let mut old = with_rocm(amd_machine("gfx1201"), "6.2.1");
    old.findings.push(finding(ids::ROCM_TOO_OLD_FOR_GPU.id));
    assert_eq!(
        rocm_chosen(&old, m, &Target::default()).as_deref(),
        Some("7.1.1")
    );
    let p = plan(&old, m, &Target::default()).expect("a plan");
    assert!(
        p.addresses
            .iter()
            .any(|f| f.id == ids::ROCM_TOO_OLD_FOR_GPU.id)
    );
    assert!(step_kinds(&p).contains(&StepKind::Rocm));
}

/// A machine whose only ROCm is the one ollama brings, with nothing to fix: no install is
/// planned unless one is asked for (`--via apt`).
#[test]
fn a_program_s_own_rocm_with_nothing_to_fix_plans_no_install() {
    let mut r = amd_machine("gfx1201");
    r.rocm = Some(RocmStack {
        bundled: vec![crate::report::rocm::BundledRocm {
            program: "ollama".to_string(),
            path: "/usr/local/lib/ollama/rocm".to_string(),
            ..Default::default()
        }],
        ..RocmStack::default()
    });
    let p = plan(&r, embedded(), &Target::default()).expect("a plan");
    assert!(p.steps.is_empty(), "{:?}", p.steps);
    let apt = Target {
        via: Some(Via::Apt),
        ..Target::default()
    };
    assert_eq!(rocm_chosen(&r, embedded(), &apt).as_deref(), Some("7.1.1"));
}

/// A machine whose ROCm is TheRock's wheels in a venv (ROCm/rocm-libraries#8033), with nothing
/// to fix: no install is planned over them.
#[test]
fn therock_wheels_with_nothing_to_fix_plan_no_install() {
    let mut r = amd_machine("gfx1201");
    r.python_envs.push(crate::report::PythonEnv {
        path: "/home/dev/venv".to_string(),
        rocm_wheels: vec![crate::report::Wheel {
            name: "rocm-sdk-core".to_string(),
            version: "7.14.0a20260603".to_string(),
            ..Default::default()
        }],
        ..Default::default()
    });
    let p = plan(&r, embedded(), &Target::default()).expect("a plan");
    assert!(p.steps.is_empty(), "{:?}", p.steps);
}

/// A nightly torch that lacks the GPU's target is replaced by its release series (the nightly's
/// exact version is on no release index); a final release is pinned as it is.
#[test]
fn a_nightly_torch_is_replaced_by_its_release_series() {
    let m = embedded();
    let nightly = m
        .rocm
        .torch_wheel(
            &m.frameworks,
            Some("2.10.0.dev20250929+rocm7.0"),
            "gfx1151",
            None,
        )
        .expect("a wheel");
    assert_eq!(nightly.release, "2.10.*");
    let stable = m
        .rocm
        .torch_wheel(&m.frameworks, Some("2.7.1+rocm6.3"), "gfx1100", None)
        .expect("a wheel");
    assert_eq!(stable.release, "2.7.1");
}

#[test]
fn a_healthy_rocm_newer_than_every_installer_is_kept_not_taken_back() {
    let m = embedded();
    let newest = m
        .rocm
        .installers
        .last()
        .map(|i| i.rocm.clone())
        .expect("an installer");
    // A 7900 XTX (gfx1100) with ROCm 7.2.3, newer than the newest installer rocm.toml holds.
    let healthy = with_rocm(amd_machine("gfx1100"), "7.2.3");
    assert_eq!(rocm_chosen(&healthy, m, &Target::default()), None);
    // Asked for apt, the newest installer is still the answer; so it is for an older ROCm that
    // does not list the GPU (6.2.1 before gfx1201's first release).
    let asked = Target {
        via: Some(Via::Apt),
        ..Target::default()
    };
    assert_eq!(rocm_chosen(&healthy, m, &asked), Some(newest.clone()));
    let older = with_rocm(amd_machine("gfx1201"), "6.2.1");
    assert_eq!(rocm_chosen(&older, m, &Target::default()), Some(newest));
}
