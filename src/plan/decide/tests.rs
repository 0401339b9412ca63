//! Unit tests of the planner's decisions on small hand-built machines (the integration tests in
//! tests/it/plan.rs cover whole fixture plans). Versions come from the embedded manifests; the
//! ones pinned here are the rules' documented answers (R470 for Kepler, R580 for Pascal, cuDNN
//! 9.10.2 for pre-Turing GPUs, no CUDA 12.7), so a broken rule fails.

use super::*;
use crate::manifest::embedded;
use crate::plan::machine::{FindingFact, GpuFact};
use crate::plan::target::FrameworkSpec;
use crate::report::Severity;

fn gpu(cc: &str) -> GpuFact {
    GpuFact {
        index: 0,
        name: Some(format!("GPU cc {cc}")),
        compute_capability: Some(cc.to_string()),
        architecture: None,
        pci_device_id: None,
        gfx_target: None,
        first_driver: None,
        identity_note: None,
    }
}

/// An Ubuntu 22.04 x86_64 machine with these GPUs and no driver.
fn machine(ccs: &[&str]) -> Machine {
    Machine {
        gpus: ccs.iter().map(|cc| gpu(cc)).collect(),
        amd_gpu: false,
        driver_version: None,
        driver_cuda: None,
        driver_loaded: false,
        driver_open: None,
        library_version: None,
        nouveau_loaded: false,
        module_built: false,
        module_signing_key: None,
        amd_driver: None,
        os_id: Some("ubuntu".to_string()),
        os_version: Some("22.04".to_string()),
        os_pretty_name: None,
        arch: Some("x86_64".to_string()),
        kernel_release: None,
        secure_boot: None,
        container: None,
        wsl: false,
        toolkits: Vec::new(),
        frameworks: Vec::new(),
        python_envs: Vec::new(),
        system_python: Some("3.10".to_string()),
        findings: Vec::new(),
    }
}

/// The same machine with a loaded proprietary driver that runs CUDA up to `cuda`.
fn with_driver(mut m: Machine, version: &str, cuda: &str) -> Machine {
    m.driver_version = Some(version.to_string());
    m.driver_cuda = Some(cuda.to_string());
    m.driver_loaded = true;
    m.driver_open = Some(false);
    m
}

fn finding(id: &str) -> FindingFact {
    FindingFact {
        id: id.to_string(),
        severity: Severity::Error,
        title: id.to_string(),
        fix: None,
        frameworks: Vec::new(),
    }
}

fn torch_in(
    env: &str,
    kind: &str,
    version: &str,
    cuda: Option<&str>,
    variant: &str,
) -> InstalledFramework {
    InstalledFramework {
        env: env.to_string(),
        env_kind: kind.into(),
        env_python: Some("3.11".to_string()),
        name: "torch".to_string(),
        version: Some(version.to_string()),
        cuda: cuda.map(str::to_string),
        variant: Some(variant.to_string()),
    }
}

fn ccs(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

fn v(text: &str) -> Version {
    Version::parse(text).unwrap()
}

fn installed_branch(d: &Decision<'_>) -> (u64, bool) {
    match &d.driver {
        DriverPlan::Install { row, open, .. } => (row.branch, *open),
        other => panic!("expected a driver install, got {other:?}"),
    }
}

fn refusal<T: std::fmt::Debug>(r: Result<T, Refusal>) -> String {
    match r {
        Ok(v) => panic!("expected a refusal, got {v:?}"),
        Err(e) => e.reason,
    }
}

fn target_cuda(cuda: &str) -> Target {
    Target {
        cuda: Some(cuda.to_string()),
        ..Target::default()
    }
}

fn target_framework(name: FrameworkName) -> Target {
    Target {
        framework: Some(FrameworkSpec {
            name,
            extra: None,
            version: None,
        }),
        ..Target::default()
    }
}

/// The newest verified, supported branch the manifests offer today (what a fresh Turing-or-newer
/// machine gets), read from the manifests so a new branch row does not break the tests.
fn newest_branch_for(cc: &str) -> u64 {
    let m = embedded();
    let as_of = choose::as_of(&m.cuda);
    let cuda = choose::newest_stable_cuda(&m.cuda, &ccs(&[cc]), &as_of, None).unwrap();
    choose::auto_branch(&m.cuda, &cuda, &ccs(&[cc]), &as_of)
        .unwrap()
        .branch
}

#[test]
fn no_nvidia_gpu_is_refused_and_an_amd_gpu_is_named() {
    let m = embedded();
    let mut none = machine(&[]);
    let why = refusal(decide(&none, m, &Target::default()));
    assert!(why.contains("no NVIDIA GPU"), "{why}");
    assert!(!why.contains("AMD"), "{why}");
    none.amd_gpu = true;
    let why = refusal(decide(&none, m, &Target::default()));
    assert!(why.contains("an AMD GPU is there"), "{why}");
}

#[test]
fn a_gpu_without_compute_capability_is_refused_with_the_override_to_use() {
    let mut machine = machine(&["8.6"]);
    machine.gpus[0].compute_capability = None;
    machine.gpus[0].pci_device_id = Some("0x2684".to_string());
    machine.gpus[0].identity_note = Some("Ada or newer".to_string());
    let why = refusal(gpu_ccs(&machine));
    assert!(why.contains("PCI device 0x2684"), "{why}");
    assert!(why.contains("GPU_DOCTOR_GPU_CC"), "{why}");
    assert!(why.contains("What is known: Ada or newer."), "{why}");
}

#[test]
fn compute_capabilities_are_deduplicated_and_sorted_as_versions() {
    let got = gpu_ccs(&machine(&["8.6", "12.0", "7.5", "8.6"])).unwrap();
    assert_eq!(got, ccs(&["7.5", "8.6", "12.0"]));
}

#[test]
fn a_fresh_machine_gets_the_newest_supported_branch_with_open_modules() {
    let m = embedded();
    for cc in ["7.5", "8.6", "9.0", "12.0"] {
        let d = decide(&machine(&[cc]), m, &Target::default()).unwrap();
        let (branch, open) = installed_branch(&d);
        assert_eq!(branch, newest_branch_for(cc), "cc {cc}");
        assert!(
            branch > 580,
            "cc {cc}: a current GPU is not held on a legacy branch"
        );
        assert!(open, "cc {cc}: Turing and newer take the open modules");
        assert!(
            d.notes.iter().all(|n| !n.starts_with("legacy GPU")),
            "{:?}",
            d.notes
        );
    }
}

#[test]
fn legacy_gpus_stay_on_their_last_branch_with_proprietary_modules() {
    let m = embedded();
    for (cc, last, cuda) in [
        ("3.7", 470, "11.4"),
        ("6.1", 580, "13.0"),
        ("7.0", 580, "13.0"),
    ] {
        let d = decide(&machine(&[cc]), m, &Target::default()).unwrap();
        assert_eq!(installed_branch(&d), (last, false), "cc {cc}");
        let note = d
            .notes
            .iter()
            .find(|n| n.starts_with("legacy GPU"))
            .unwrap();
        assert!(note.contains(&format!("up to R{last} only")), "{note}");
        assert!(note.contains(&format!("runs CUDA up to {cuda}")), "{note}");
    }
    // One legacy GPU holds the whole machine on its branch.
    let d = decide(&machine(&["6.1", "8.6"]), m, &Target::default()).unwrap();
    assert_eq!(installed_branch(&d), (580, false));
}

#[test]
fn a_working_driver_that_runs_the_stack_is_kept() {
    let m = embedded();
    let branch = newest_branch_for("8.6");
    let row = m
        .cuda
        .driver_branches
        .iter()
        .find(|b| b.branch == branch)
        .unwrap();
    let working = with_driver(machine(&["8.6"]), &format!("{branch}.10.01"), &row.max_cuda);
    // Nothing wrong and nothing asked: nothing planned.
    let d = decide(&working, m, &Target::default()).unwrap();
    assert!(matches!(d.driver, DriverPlan::Keep), "{:?}", d.driver);
    assert!(d.toolkit.is_none() && d.framework.is_none(), "{d:?}");
    assert!(
        d.notes.iter().any(|n| n.contains("Nothing to fix")),
        "{:?}",
        d.notes
    );
    // Under --driver auto the default apt stack is the newest stable CUDA, which that branch
    // runs.
    let auto = Target {
        driver: DriverChoice::Auto,
        ..Target::default()
    };
    let d = decide(&working, m, &auto).unwrap();
    assert!(matches!(d.driver, DriverPlan::Keep), "{:?}", d.driver);
    assert_eq!(
        d.toolkit.as_ref().map(Version::major_minor),
        Some(row.max_cuda.clone())
    );
    // A toolkit the driver runs keeps it too.
    let d = decide(&working, m, &target_cuda("12.4")).unwrap();
    assert!(matches!(d.driver, DriverPlan::Keep), "{:?}", d.driver);
    assert_eq!(d.toolkit, Some(v("12.4")));
}

#[test]
fn a_working_driver_too_old_for_the_stack_is_replaced_keeping_its_flavour() {
    let m = embedded();
    let old = with_driver(machine(&["8.6"]), "550.54.15", "12.4");
    // Without --driver the working driver stays: the target is refused with the way to get it.
    let why = decide(&old, m, &target_cuda("12.8")).unwrap_err().reason;
    assert!(
        why.contains("--cuda 12.8 --driver auto") && why.contains("R580"),
        "{why}"
    );
    let auto = Target {
        driver: DriverChoice::Auto,
        ..target_cuda("12.8")
    };
    let d = decide(&old, m, &auto).unwrap();
    let DriverPlan::Install {
        row,
        open,
        replaces,
        why,
        ..
    } = &d.driver
    else {
        panic!("{:?}", d.driver);
    };
    assert!(
        row.branch >= 570,
        "CUDA 12.8 needs R570 or newer, got R{}",
        row.branch
    );
    assert!(!open, "a working proprietary driver stays proprietary");
    assert_eq!(replaces.as_deref(), Some("550.54.15"));
    assert!(
        why.contains("runs CUDA up to 12.4") && why.contains("CUDA 12.8"),
        "{why}"
    );
    // The same machine with no driver would get the open modules.
    let fresh = decide(&machine(&["8.6"]), m, &target_cuda("12.8")).unwrap();
    assert!(installed_branch(&fresh).1);
}

#[test]
fn a_gpu_newer_than_the_working_driver_gets_a_branch_that_knows_it() {
    let m = embedded();
    let mut blackwell = with_driver(machine(&["12.0"]), "550.54.15", "12.4");
    blackwell.gpus[0].first_driver = Some("570.124.04".to_string());
    blackwell.gpus[0].name = Some("NVIDIA GeForce RTX 5090".to_string());
    let d = decide(&blackwell, m, &target_cuda("12.8")).unwrap();
    let DriverPlan::Install { row, why, .. } = &d.driver else {
        panic!("{:?}", d.driver);
    };
    assert!(row.branch >= 570, "R{}", row.branch);
    assert!(
        why.contains("predates NVIDIA GeForce RTX 5090") && why.contains("570.124.04"),
        "{why}"
    );
}

#[test]
fn a_named_driver_is_refused_when_it_downgrades_or_cannot_run_the_gpu() {
    let m = embedded();
    let working = with_driver(machine(&["8.6"]), "580.95.05", "13.0");
    let t = Target {
        driver: DriverChoice::Branch(570),
        ..Target::default()
    };
    let why = refusal(decide(&working, m, &t));
    assert!(
        why.contains("--driver 570 would downgrade the working 580.95.05 driver"),
        "{why}"
    );

    let mut blackwell = machine(&["12.0"]);
    blackwell.gpus[0].first_driver = Some("570.124.04".to_string());
    blackwell.gpus[0].name = Some("NVIDIA GeForce RTX 5090".to_string());
    let t = Target {
        driver: DriverChoice::Branch(550),
        ..Target::default()
    };
    let why = refusal(decide(&blackwell, m, &t));
    assert!(why.contains("R550 runs CUDA up to 12.4"), "{why}");
    assert!(why.contains("12.0 (Blackwell) needs CUDA 12.8"), "{why}");
}

#[test]
fn a_named_driver_older_than_the_gpus_first_driver_is_refused() {
    let m = embedded();
    // An Ampere GPU the branch table accepts on R535, but whose first listing driver is R550.
    let mut gpu = machine(&["8.6"]);
    gpu.gpus[0].first_driver = Some("550.40.07".to_string());
    gpu.gpus[0].name = Some("Some RTX".to_string());
    let t = Target {
        driver: DriverChoice::Branch(535),
        ..Target::default()
    };
    let why = refusal(decide(&gpu, m, &t));
    assert!(why.contains("--driver 535 predates Some RTX"), "{why}");
    assert!(why.contains("R550 or newer"), "{why}");
}

#[test]
fn the_working_branch_named_again_is_kept_or_refused() {
    let m = embedded();
    let working = with_driver(machine(&["8.6"]), "550.54.15", "12.4");
    let same = Target {
        driver: DriverChoice::Branch(550),
        cuda: Some("12.4".to_string()),
        ..Target::default()
    };
    let d = decide(&working, m, &same).unwrap();
    assert!(matches!(d.driver, DriverPlan::Keep), "{:?}", d.driver);
    let too_new = Target {
        cuda: Some("12.8".to_string()),
        ..same
    };
    let why = refusal(decide(&working, m, &too_new));
    assert!(why.contains("--driver 550"), "{why}");
}

#[test]
fn open_modules_need_turing_or_newer_on_every_gpu() {
    let m = embedded();
    assert!(open_modules(m, &ccs(&["7.5"])));
    assert!(open_modules(m, &ccs(&["8.6", "12.0"])));
    assert!(!open_modules(m, &ccs(&["7.0"])));
    assert!(!open_modules(m, &ccs(&["6.1"])));
    assert!(!open_modules(m, &ccs(&["6.1", "8.6"])));
}

#[test]
fn cuda_requests_are_checked_against_releases_and_gpus() {
    let m = embedded();
    // No CUDA 12.7 toolkit exists (R565 only reports it).
    let why = refusal(checked_cuda(m, "12.7", &ccs(&["8.6"])));
    assert!(why.contains("CUDA 12.7 is not a CUDA release"), "{why}");
    assert!(why.contains("12.6, 12.8"), "{why}");
    // CUDA 13 dropped Pascal.
    let why = refusal(checked_cuda(m, "13.0", &ccs(&["6.1"])));
    assert!(why.contains("CUDA 13.0 cannot work here"), "{why}");
    assert!(why.contains("6.1 (Pascal)"), "{why}");
    // A patch release names its series.
    assert_eq!(
        checked_cuda(m, "12.4.1", &ccs(&["8.6"])).unwrap(),
        v("12.4")
    );
    assert_eq!(checked_cuda(m, "13.0", &ccs(&["8.6"])).unwrap(), v("13.0"));
    assert_eq!(checked_cuda(m, "12.9", &ccs(&["6.1"])).unwrap(), v("12.9"));
    let why = refusal(checked_cuda(m, "twelve", &ccs(&["8.6"])));
    assert_eq!(why, "--cuda twelve");
    // An unverified row cannot be planned.
    if let Some(row) = m.cuda.releases.iter().find(|r| !r.verified) {
        let series = v(&row.version).major_minor();
        let why = refusal(checked_cuda(m, &series, &ccs(&["8.6"])));
        assert!(why.contains("unverified"), "{why}");
    }
}

#[test]
fn newest_in_major_respects_the_gpus_and_a_ceiling() {
    let m = embedded();
    let as_of = choose::as_of(&m.cuda);
    let ampere = ccs(&["8.6"]);
    let pascal = ccs(&["6.1"]);
    assert_eq!(
        newest_in_major(m, &ampere, &as_of, None, 11),
        Some(v("11.8"))
    );
    assert_eq!(
        newest_in_major(m, &ampere, &as_of, None, 12),
        Some(v("12.9"))
    );
    assert_eq!(
        newest_in_major(m, &pascal, &as_of, None, 12),
        Some(v("12.9"))
    );
    // CUDA 13 has nothing for Pascal.
    assert_eq!(newest_in_major(m, &pascal, &as_of, None, 13), None);
    let thirteen = newest_in_major(m, &ampere, &as_of, None, 13).unwrap();
    assert_eq!(thirteen.major(), 13);
    // A driver that runs CUDA up to 12.4 caps major 12 there and rules out major 13.
    let ceiling = v("12.4");
    assert_eq!(
        newest_in_major(m, &ampere, &as_of, Some(&ceiling), 12),
        Some(v("12.4"))
    );
    assert_eq!(
        newest_in_major(m, &ampere, &as_of, Some(&ceiling), 13),
        None
    );
    assert_eq!(
        newest_in_major(m, &ampere, &as_of, Some(&ceiling), 11),
        Some(v("11.8"))
    );
}

#[test]
fn cudnn_is_9_held_at_9_10_2_for_pre_turing_gpus() {
    let m = embedded();
    let t = Target::default();
    let pascal = cudnn_plan(m, Via::Apt, &v("12.9"), &ccs(&["6.1"]), &t, None).unwrap();
    assert_eq!(pascal.major, 9);
    assert_eq!(pascal.pin.as_deref(), Some("9.10.2"));
    let volta = cudnn_plan(m, Via::Apt, &v("12.9"), &ccs(&["7.0"]), &t, None).unwrap();
    assert_eq!(volta.pin.as_deref(), Some("9.10.2"));
    let ampere = cudnn_plan(m, Via::Apt, &v("12.9"), &ccs(&["8.6"]), &t, None).unwrap();
    assert_eq!((ampere.major, ampere.pin), (9, None));
    // The whole plan carries the pin for a Pascal machine.
    let d = decide(&machine(&["6.1"]), m, &target_cuda("12.9")).unwrap();
    assert_eq!(
        d.cudnn.as_ref().and_then(|c| c.pin.as_deref()),
        Some("9.10.2")
    );
    assert!(d.nccl);
}

#[test]
fn cudnn_majors_other_than_9_are_refused_on_apt_and_unknown_ones_everywhere() {
    let m = embedded();
    let eight = Target {
        cudnn: Some(8),
        ..Target::default()
    };
    let why = refusal(cudnn_plan(
        m,
        Via::Apt,
        &v("12.4"),
        &ccs(&["8.6"]),
        &eight,
        None,
    ));
    assert!(
        why.contains("apt plans install cuDNN 9 (libcudnn9-cuda-12)"),
        "{why}"
    );
    let conda8 = cudnn_plan(m, Via::Conda, &v("12.4"), &ccs(&["8.6"]), &eight, None).unwrap();
    assert_eq!(conda8.major, 8);
    let bogus = Target {
        cudnn: Some(42),
        ..Target::default()
    };
    let why = refusal(cudnn_plan(
        m,
        Via::Conda,
        &v("12.4"),
        &ccs(&["8.6"]),
        &bogus,
        None,
    ));
    assert_eq!(why, "cuDNN 42 is not a cuDNN major the manifests know");
}

#[test]
fn apt_plans_need_a_covered_ubuntu_on_x86_64() {
    let m = embedded();
    let ok = apt_target(&machine(&["8.6"]), m, &Target::default()).unwrap();
    assert_eq!(
        (ok.os.as_str(), ok.distro.as_str()),
        ("ubuntu-22.04", "ubuntu2204")
    );
    let mut unknown = machine(&["8.6"]);
    unknown.os_id = None;
    let why = apt_target(&unknown, m, &Target::default()).unwrap_err();
    assert!(why.contains("no /etc/os-release"), "{why}");
    let t = Target {
        os: Some("ubuntu-24.04".to_string()),
        ..Target::default()
    };
    assert_eq!(apt_target(&unknown, m, &t).unwrap().distro, "ubuntu2404");
    let t = Target {
        os: Some("ubuntu-16.04".to_string()),
        ..Target::default()
    };
    let why = apt_target(&unknown, m, &t).unwrap_err();
    assert!(
        why.contains("--os ubuntu-16.04 is not a system gpu-doctor plans for"),
        "{why}"
    );
    // An Arm server (Grace Hopper: aarch64) plans from NVIDIA's sbsa repository and Ubuntu's
    // ports archive; another architecture is refused, and a pip plan goes on without apt.
    let mut arm = machine(&["9.0"]);
    arm.arch = Some("aarch64".to_string());
    let apt = apt_target(&arm, m, &Target::default()).unwrap();
    assert_eq!(apt.repo.arch, "sbsa");
    assert_eq!(apt.nvidia_repo, "nvidia-cuda-ubuntu2204-sbsa");
    assert!(
        apt.repo_ids.iter().any(|r| r == "ubuntu-jammy-arm64")
            && !apt.repo_ids.iter().any(|r| r.ends_with("x86_64")),
        "{:?}",
        apt.repo_ids
    );
    let mut power = machine(&["8.6"]);
    power.arch = Some("ppc64le".to_string());
    let why = apt_target(&power, m, &Target::default()).unwrap_err();
    assert!(why.contains("this machine is ppc64le"), "{why}");
    let why = refusal(decide(&power, m, &Target::default()));
    assert!(why.contains("ppc64le"), "{why}");
    let d = decide(&power, m, &target_framework(FrameworkName::Torch)).unwrap();
    assert!(d.apt.is_none());
}

#[test]
fn torch_on_aarch64_is_a_release_whose_pypi_aarch64_wheel_is_a_cuda_build() {
    let m = embedded();
    let mut arm = machine(&["9.0"]);
    arm.arch = Some("aarch64".to_string());
    let d = decide(&arm, m, &target_framework(FrameworkName::Torch)).unwrap();
    let fw = d.framework.expect("a torch plan");
    let version = fw.dist_prefix.trim_end_matches('.');
    let build = m.pypi.aarch64_build("torch", version);
    assert_eq!(build, fw.dist_local.as_deref(), "{}", fw.label);
    assert!(build.is_some_and(|b| b.starts_with("cu")), "{build:?}");
    // torch 2.5.1's PyPI aarch64 wheel is CPU-only: asking for it is refused with the facts.
    let t = Target {
        framework: Some(FrameworkSpec {
            name: FrameworkName::Torch,
            extra: None,
            version: Some("2.5.1".to_string()),
        }),
        ..Target::default()
    };
    let why = refusal(decide(&arm, m, &t));
    assert!(
        why.contains("torch 2.5.1 has no CUDA build for aarch64"),
        "{why}"
    );
    assert!(why.contains("CPU-only from 1.12.0 to 2.10.0"), "{why}");
    // The same request on x86_64 is planned.
    assert!(decide(&machine(&["9.0"]), m, &t).is_ok());
    // PyPI's TensorFlow for aarch64 is a CPU build in every release: [and-cuda] is refused.
    let why = refusal(decide(
        &arm,
        m,
        &target_framework(FrameworkName::Tensorflow),
    ));
    assert!(
        why.contains("has no CUDA build for aarch64 on PyPI"),
        "{why}"
    );
}

#[test]
fn a_driver_in_a_container_or_wsl_is_installed_elsewhere() {
    let m = embedded();
    let mut container = with_driver(machine(&["8.6"]), "550.54.15", "12.4");
    container.driver_loaded = false;
    container.container = Some("docker".to_string());
    let d = decide(&container, m, &target_cuda("12.8")).unwrap();
    let DriverPlan::Elsewhere { needed, reason } = &d.driver else {
        panic!("{:?}", d.driver);
    };
    assert!(
        needed.starts_with('R') && needed.ends_with("or newer"),
        "{needed}"
    );
    assert!(reason.contains("docker container"), "{reason}");
    let mut wsl = with_driver(machine(&["8.6"]), "550.54.15", "12.4");
    wsl.wsl = true;
    let d = decide(&wsl, m, &target_cuda("12.8")).unwrap();
    let DriverPlan::Elsewhere { reason, .. } = &d.driver else {
        panic!("{:?}", d.driver);
    };
    assert!(reason.contains("WSL"), "{reason}");
}

#[test]
fn nouveau_is_addressed_and_named_as_the_reason_for_a_driver() {
    let m = embedded();
    let mut nouveau = machine(&["8.6"]);
    nouveau.nouveau_loaded = true;
    nouveau.findings.push(finding("nouveau-loaded"));
    nouveau.findings.push(finding("no-driver"));
    let d = decide(&nouveau, m, &Target::default()).unwrap();
    assert!(d.nouveau);
    assert!(
        d.addresses.contains(&&ids::NOUVEAU_LOADED),
        "{:?}",
        d.addresses
    );
    assert!(d.addresses.contains(&&ids::NO_DRIVER), "{:?}", d.addresses);
    let DriverPlan::Install { why, replaces, .. } = &d.driver else {
        panic!("{:?}", d.driver);
    };
    assert_eq!(why, "no NVIDIA driver is loaded (nouveau holds the GPU)");
    assert_eq!(replaces, &None);
    // Nothing named and something to fix: only the fix, no toolkit.
    assert_eq!(d.toolkit, None);
}

#[test]
fn a_driver_library_mismatch_asks_for_a_reboot() {
    let m = embedded();
    let mut mismatch = with_driver(machine(&["8.6"]), "580.95.05", "13.0");
    mismatch.findings.push(finding("driver-library-mismatch"));
    let d = decide(&mismatch, m, &Target::default()).unwrap();
    assert!(d.reboot_for_mismatch);
    assert_eq!(d.addresses, [&ids::DRIVER_LIBRARY_MISMATCH]);
    assert!(matches!(d.driver, DriverPlan::Keep), "{:?}", d.driver);
}

#[test]
fn torch_rebuilds_are_for_cpu_only_torch_and_nothing_else() {
    let m = embedded();
    let gpus = ccs(&["8.6"]);
    let cpu = torch_in("/v", "venv", "2.5.1+cpu", None, "cpu");
    assert_eq!(
        torch_rebuild(m, &cpu, &gpus),
        Some(&ids::CPU_ONLY_FRAMEWORK_BUILD)
    );
    let mut jax = cpu.clone();
    jax.name = "jax".to_string();
    assert_eq!(torch_rebuild(m, &jax, &gpus), None);
    let cuda = torch_in("/v", "venv", "2.5.1+cu124", Some("12.4"), "cuda");
    assert_eq!(torch_rebuild(m, &cuda, &gpus), None);
}

#[test]
fn a_cpu_only_torch_in_a_venv_is_reinstalled_with_cuda_and_the_system_one_is_only_noted() {
    let m = embedded();
    let mut machine = with_driver(machine(&["8.6"]), "580.95.05", "13.0");
    machine
        .frameworks
        .push(torch_in("/home/u/.venv", "venv", "2.5.1+cpu", None, "cpu"));
    let d = decide(&machine, m, &Target::default()).unwrap();
    assert_eq!(d.addresses, [&ids::CPU_ONLY_FRAMEWORK_BUILD]);
    let [fix] = d.fixes.as_slice() else {
        panic!("{:?}", d.fixes);
    };
    assert_eq!(fix.env, "/home/u/.venv");
    assert!(fix.framework.replace);
    assert_eq!(fix.framework.name, FrameworkName::Torch);
    assert!(matches!(d.driver, DriverPlan::Keep), "{:?}", d.driver);
    assert!(d.framework.is_none() && d.toolkit.is_none());

    // A CPU-only torch in the system Python is no reason for a plan on its own; with a driver
    // to install, the plan says how to get a CUDA torch without touching the system Python.
    let mut system = machine.clone();
    system.frameworks[0].env_kind = crate::report::EnvKind::System;
    system.frameworks[0].env = "/usr".to_string();
    let d = decide(&system, m, &Target::default()).unwrap();
    assert!(d.fixes.is_empty(), "{d:?}");
    assert!(d.toolkit.is_none(), "nothing to fix: nothing planned");
    system.driver_loaded = false;
    let d = decide(&system, m, &Target::default()).unwrap();
    assert!(d.fixes.is_empty());
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains("torch 2.5.1+cpu in the system Python (/usr)")),
        "{:?}",
        d.notes
    );
}

#[test]
fn installed_software_that_needs_more_than_the_driver_runs_is_fixed_with_a_driver() {
    let m = embedded();
    let mut machine = with_driver(machine(&["8.6"]), "535.104.05", "12.2");
    machine.toolkits.push((
        "/usr/local/cuda-12.8".to_string(),
        Some("12.8.1".to_string()),
    ));
    machine.findings.push(finding("toolkit-newer-than-driver"));
    let d = decide(&machine, m, &Target::default()).unwrap();
    let DriverPlan::Install { row, why, .. } = &d.driver else {
        panic!("{:?}", d.driver);
    };
    assert!(row.branch >= 570, "R{}", row.branch);
    assert!(
        why.contains("the CUDA toolkit in /usr/local/cuda-12.8"),
        "{why}"
    );
    assert_eq!(d.addresses, [&ids::TOOLKIT_NEWER_THAN_DRIVER]);
}

#[test]
fn a_newer_toolkit_that_is_only_information_asks_for_no_driver() {
    // CUDA 13.1's nvcc on an R580 driver whose machine JIT-compiles no PTX (a DGX Spark whose
    // builds carry SASS): the doctor says it as information, and the plan keeps the driver.
    let m = embedded();
    let mut machine = with_driver(machine(&["8.6"]), "535.104.05", "12.2");
    machine.toolkits.push((
        "/usr/local/cuda-12.8".to_string(),
        Some("12.8.1".to_string()),
    ));
    let mut info = finding("toolkit-newer-than-driver");
    info.severity = Severity::Info;
    machine.findings.push(info);
    let d = decide(&machine, m, &Target::default()).unwrap();
    assert!(matches!(d.driver, DriverPlan::Keep), "{:?}", d.driver);
}

#[test]
fn environments_follow_env_then_the_one_venv_holding_the_framework() {
    let m = embedded();
    let torch = target_framework(FrameworkName::Torch);
    let mut machine = with_driver(machine(&["8.6"]), "580.95.05", "13.0");
    // Nothing installed: ./.venv with the system's python3.
    assert_eq!(default_env(&machine, &torch), None);
    let d = decide(&machine, m, &torch).unwrap();
    assert_eq!(d.via, Via::Pip);
    let Some(EnvPlan::Venv { path, python }) = &d.env else {
        panic!("{:?}", d.env);
    };
    assert_eq!((path.as_str(), python.as_str()), (".venv", "python3"));
    // One venv that holds torch is the one the plan uses.
    machine.frameworks.push(torch_in(
        "/srv/ml",
        "venv",
        "2.5.1+cu124",
        Some("12.4"),
        "cuda",
    ));
    assert_eq!(
        default_env(&machine, &torch),
        Some(("/srv/ml".to_string(), "venv".to_string()))
    );
    // Two such venvs: the plan does not guess.
    let mut two = machine.clone();
    two.frameworks.push(torch_in(
        "/srv/other",
        "venv",
        "2.4.0+cu121",
        Some("12.1"),
        "cuda",
    ));
    assert_eq!(default_env(&two, &torch), None);
    // --env wins, and --python names the interpreter.
    let named = Target {
        env: Some("/opt/env".to_string()),
        python: Some("3.12".to_string()),
        ..torch.clone()
    };
    assert_eq!(
        default_env(&machine, &named),
        Some(("/opt/env".to_string(), String::new()))
    );
    let d = decide(&machine, m, &named).unwrap();
    let Some(EnvPlan::Venv { path, python }) = &d.env else {
        panic!("{:?}", d.env);
    };
    // Ubuntu 22.04's archive has no Python 3.12: uv makes the environment.
    assert_eq!((path.as_str(), python.as_str()), ("/opt/env", "uv"));
    assert!(
        matches!(&d.new_python, Some(NewPython::Uv { version, .. }) if version == "3.12"),
        "{:?}",
        d.new_python
    );
    // Python 3.11 is in its archive: the interpreter and its venv module come from there.
    let eleven = Target {
        python: Some("3.11".to_string()),
        ..named.clone()
    };
    let d = decide(&machine, m, &eleven).unwrap();
    let Some(EnvPlan::Venv { python, .. }) = &d.env else {
        panic!("{:?}", d.env);
    };
    assert_eq!(python, "python3.11");
    assert_eq!(
        d.new_python.as_ref().map(NewPython::packages),
        Some(&["python3.11".to_string(), "python3.11-venv".to_string()][..])
    );
    // An environment that exists is used with its own Python, and nothing is installed for it.
    machine.python_envs.push(crate::plan::machine::EnvFact {
        path: "/opt/env".to_string(),
        kind: crate::report::EnvKind::Venv,
        python: Some("3.12".to_string()),
    });
    let d = decide(&machine, m, &named).unwrap();
    assert!(d.new_python.is_none(), "{:?}", d.new_python);
}

#[test]
fn a_new_environment_gets_the_target_releases_python3_with_its_venv_module() {
    let m = embedded();
    let torch = target_framework(FrameworkName::Torch);
    // A fresh 22.04 whose python3 the probe did not find: 22.04's own, 3.10 (repos.toml).
    let mut fresh = with_driver(machine(&["8.6"]), "580.95.05", "13.0");
    fresh.system_python = None;
    let d = decide(&fresh, m, &torch).unwrap();
    let fw = d.framework.clone().unwrap();
    assert_eq!(fw.python.as_deref(), Some("3.10"), "{}", fw.requirement);
    assert_eq!(
        d.new_python,
        Some(NewPython::Distro {
            version: "3.10".to_string(),
            command: "python3".to_string(),
            packages: vec!["python3-venv".to_string()],
            default: true,
        })
    );
    // Planned for 24.04 from this 22.04 machine: 24.04's python3 (3.12), not this one's.
    let other = Target {
        os: Some("ubuntu-24.04".to_string()),
        ..torch.clone()
    };
    let d = decide(
        &with_driver(machine(&["8.6"]), "580.95.05", "13.0"),
        m,
        &other,
    )
    .unwrap();
    assert_eq!(d.framework.unwrap().python.as_deref(), Some("3.12"));
}

#[test]
fn conda_environments_are_named_after_the_framework_or_the_cuda_stack() {
    let m = embedded();
    let machine = with_driver(machine(&["8.6"]), "580.95.05", "13.0");
    let conda_torch = Target {
        via: Some(Via::Conda),
        ..target_framework(FrameworkName::Torch)
    };
    let d = decide(&machine, m, &conda_torch).unwrap();
    let Some(EnvPlan::Conda { name, .. }) = &d.env else {
        panic!("{:?}", d.env);
    };
    assert_eq!(name, "torch");
    let conda_cuda = Target {
        via: Some(Via::Conda),
        cuda: Some("12.4".to_string()),
        ..Target::default()
    };
    let d = decide(&machine, m, &conda_cuda).unwrap();
    let Some(EnvPlan::Conda { name, python }) = &d.env else {
        panic!("{:?}", d.env);
    };
    assert_eq!(name, "cuda-12.4");
    assert!(!python.is_empty());
    // Conda plans stop at CUDA 12.0.
    let old = Target {
        cuda: Some("11.8".to_string()),
        ..conda_cuda
    };
    let why = refusal(decide(&machine, m, &old));
    assert!(why.contains("CUDA 11.8 on conda"), "{why}");
}

// --- Issue #23: the least change, repository truth, module flavour, pip lines that land ------

/// A Ubuntu 24.04 machine with these GPUs and no driver.
fn noble(ccs: &[&str]) -> Machine {
    let mut m = machine(ccs);
    m.os_version = Some("24.04".to_string());
    m.system_python = Some("3.12".to_string());
    m
}

#[test]
fn a_framework_request_picks_the_build_the_working_driver_runs_and_names_the_upgrade() {
    let m = embedded();
    let host = with_driver(machine(&["8.9"]), "550.54.15", "12.4");
    let d = decide(&host, m, &target_framework(FrameworkName::Torch)).unwrap();
    assert!(matches!(d.driver, DriverPlan::Keep), "{:?}", d.driver);
    let fw = d.framework.as_ref().unwrap();
    assert!(
        fw.cuda.major() == 12,
        "a build driver 550 runs: {}",
        fw.label
    );
    assert!(
        d.options.iter().any(|o| o.contains("--driver auto")),
        "{:?}",
        d.options
    );
    // With --driver auto the newest build and the driver that runs it.
    let auto = Target {
        driver: DriverChoice::Auto,
        ..target_framework(FrameworkName::Torch)
    };
    let d = decide(&host, m, &auto).unwrap();
    assert!(
        matches!(d.driver, DriverPlan::Install { .. }),
        "{:?}",
        d.driver
    );
}

#[test]
fn a_finding_inside_one_environment_changes_that_environment_only() {
    let m = embedded();
    let mut host = with_driver(machine(&["8.9"]), "550.54.15", "12.4");
    host.findings = vec![FindingFact {
        severity: Severity::Error,
        ..finding("cudnn-version-mismatch")
    }];
    let d = decide(&host, m, &Target::default()).unwrap();
    assert!(matches!(d.driver, DriverPlan::Keep));
    assert!(d.toolkit.is_none() && d.framework.is_none() && d.fixes.is_empty());
    assert!(
        d.notes.iter().any(|n| n.contains("changes nothing")),
        "{:?}",
        d.notes
    );
}

#[test]
fn blackwell_gets_the_open_modules_pre_turing_the_proprietary_ones_and_both_are_refused() {
    let m = embedded();
    let mut rtx5090 = with_driver(machine(&["12.0"]), "575.57.08", "12.9");
    rtx5090.gpus[0].name = Some("NVIDIA GeForce RTX 5090".to_string());
    let (open, why) = flavour(&rtx5090, m, &ccs(&["12.0"]), 580).unwrap();
    assert!(open, "Blackwell is supported with the open modules only");
    assert!(why.contains("switches flavour"), "{why}");
    let pascal = with_driver(machine(&["6.1"]), "550.54.15", "12.4");
    assert!(!flavour(&pascal, m, &ccs(&["6.1"]), 580).unwrap().0);
    // An Ada card on a working proprietary driver stays proprietary; with no driver, R560 and
    // later default to open, earlier branches to proprietary.
    let ada = with_driver(machine(&["8.9"]), "550.54.15", "12.4");
    assert!(!flavour(&ada, m, &ccs(&["8.9"]), 580).unwrap().0);
    assert!(
        flavour(&machine(&["8.9"]), m, &ccs(&["8.9"]), 580)
            .unwrap()
            .0
    );
    assert!(
        !flavour(&machine(&["8.9"]), m, &ccs(&["8.9"]), 550)
            .unwrap()
            .0
    );
    let mut mixed = machine(&["6.1", "12.0"]);
    mixed.gpus[1].name = Some("NVIDIA RTX PRO 6000 Blackwell".to_string());
    let why = refusal(flavour(&mixed, m, &ccs(&["6.1", "12.0"]), 580));
    assert!(why.contains("one driver cannot load both"), "{why}");
}

#[test]
fn toolkits_the_target_repository_lacks_are_refused_with_the_nearest() {
    let m = embedded();
    // ubuntu2404 starts at CUDA 12.5.
    let why = refusal(decide(&noble(&["8.9"]), m, &target_cuda("12.4")));
    assert!(
        why.contains("ubuntu2404 repository has no cuda-toolkit-12-4")
            && why.contains("cuda-toolkit-12-5")
            && why.contains("--via conda --cuda 12.4"),
        "{why}"
    );
    // The same on 22.04 is carried.
    assert!(decide(&machine(&["8.9"]), m, &target_cuda("12.4")).is_ok());
    // A 24.04 container on a driver-550 host: the toolkit the driver runs is not carried.
    let mut container = with_driver(noble(&["8.9"]), "550.54.15", "12.4");
    container.container = Some("docker".to_string());
    let auto = Target {
        driver: DriverChoice::Auto,
        ..Target::default()
    };
    let why = refusal(decide(&container, m, &auto));
    assert!(why.contains("has no cuda-toolkit-12-4"), "{why}");
}

#[test]
fn pip_lines_fit_the_environments_python_or_get_a_new_environment() {
    let m = embedded();
    // tensorflow[and-cuda]==2.15 has no wheel for Python 3.12 (24.04's): a new venv with a
    // Python that has one.
    let spec = FrameworkSpec {
        name: FrameworkName::Tensorflow,
        extra: None,
        version: Some("2.15".to_string()),
    };
    let t = Target {
        framework: Some(spec.clone()),
        ..Target::default()
    };
    let d = decide(&noble(&["8.9"]), m, &t).unwrap();
    assert_eq!(d.env_python.as_deref(), Some("3.11"), "{:?}", d.notes);
    let Some(EnvPlan::Venv { python, .. }) = &d.env else {
        panic!("{:?}", d.env);
    };
    // 24.04's archive has no 3.11: uv brings it, and a note says so.
    assert_eq!(python, "uv");
    assert!(d.notes.iter().any(|n| n.contains("uv")), "{:?}", d.notes);
    // ... but into an existing 3.12 environment it is refused, with the way out.
    let mut host = noble(&["8.9"]);
    host.python_envs.push(crate::plan::machine::EnvFact {
        path: "/opt/venv".to_string(),
        kind: crate::report::EnvKind::Venv,
        python: Some("3.12.3".to_string()),
    });
    let t = Target {
        framework: Some(spec),
        env: Some("/opt/venv".to_string()),
        ..Target::default()
    };
    let why = refusal(decide(&host, m, &t));
    assert!(
        why.contains("not 3.12") && why.contains("--python 3.11"),
        "{why}"
    );
    // jax[cuda13] for Python 3.11: pinned to the newest release that has the extra there (later
    // ones need 3.12, and pip would settle on one without [cuda13]).
    let jax = |python: Option<&str>| Target {
        framework: Some(FrameworkSpec {
            name: FrameworkName::Jax,
            extra: Some("cuda13".to_string()),
            version: None,
        }),
        driver: DriverChoice::Auto,
        python: python.map(str::to_string),
        ..Target::default()
    };
    let d = decide(&machine(&["8.9"]), m, &jax(Some("3.11"))).unwrap();
    let fw = d.framework.unwrap();
    assert!(
        fw.requirement.starts_with("jax[cuda13]=="),
        "{}",
        fw.requirement
    );
    let pinned = fw.requirement.trim_start_matches("jax[cuda13]==");
    let release = m
        .pypi
        .releases("jax")
        .find(|r| r.version == pinned)
        .unwrap();
    assert!(release.installs_on("3.11", "x86_64") && release.has_extra("cuda13") == Some(true));
    let newest = m.pypi.releases("jax").last().unwrap();
    assert!(!newest.installs_on("3.11", "x86_64"), "the pin is needed");
    // For the system's Python 3.10 no release with [cuda13] installs: a new environment with
    // a Python that has one, said in a note.
    let d = decide(&machine(&["8.9"]), m, &jax(None)).unwrap();
    let python = d.env_python.clone().unwrap();
    assert!(
        m.pypi
            .newest("jax", None, &python, "x86_64", Some("cuda13"))
            .is_some(),
        "{python}"
    );
    assert!(
        d.notes
            .iter()
            .any(|n| n.contains(&format!("Python {python}"))),
        "{:?}",
        d.notes
    );
}

#[test]
fn kernel_headers_never_name_another_distributions_kernel() {
    let m = embedded();
    let mut fedora = machine(&["8.9"]);
    fedora.os_id = Some("fedora".to_string());
    fedora.os_version = Some("40".to_string());
    fedora.kernel_release = Some("6.8.9-300.fc40.x86_64".to_string());
    let t = Target {
        os: Some("ubuntu-24.04".to_string()),
        ..Target::default()
    };
    let plan = crate::plan::plan_for_machine(fedora, m, &t).unwrap();
    let script = crate::plan::shell::render(&plan, &crate::plan::shell::Options::default());
    assert!(
        script
            .lines()
            .filter(|l| !l.starts_with('#'))
            .all(|l| !l.contains("fc40")),
        "{script}"
    );
    assert!(
        script.contains("linux-headers-\"$kernel\" build-essential"),
        "{script}"
    );
    assert!(script.contains("kernel=\"$(uname -r)\""), "{script}");
}
