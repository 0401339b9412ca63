use super::*;
use crate::diagnose::diagnose;
use crate::diagnose::test_support::{has_evidence, ids, one};
use crate::report::{EnvVar, GpuFabric, KernelInfo, MigMode, PciDevice, ProbeOutcome, PythonEnv};

fn run(report: &Report) -> Vec<Finding> {
    findings(report, crate::manifest::embedded())
}

fn var(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: value.into(),
    }
}

fn lib(name: &str, dir: &str, file: &str, kind: &str, origin: &str, rank: u32) -> DriverLibrary {
    DriverLibrary {
        name: name.into(),
        path: format!("{dir}/{file}"),
        resolved: None,
        version: None,
        kind: kind.into(),
        origin: origin.into(),
        rank,
    }
}

fn driver_libcuda(rank: u32) -> DriverLibrary {
    DriverLibrary {
        resolved: Some("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15".into()),
        version: Some("550.54.15".into()),
        ..lib(
            "libcuda",
            "/lib/x86_64-linux-gnu",
            "libcuda.so.1",
            "driver",
            "ld.so.conf",
            rank,
        )
    }
}

fn gpu(index: u32, name: &str, device: &str) -> Gpu {
    Gpu {
        index,
        name: Some(name.into()),
        uuid: Some(format!("GPU-{index}1b2c3d4-0000-1111-2222-333333333333")),
        pci_device_id: Some(device.into()),
        source: "nvidia-smi".into(),
        ..Gpu::default()
    }
}

fn rtx3090(index: u32) -> Gpu {
    gpu(index, "NVIDIA GeForce RTX 3090", "0x2204")
}

fn torch_cuda() -> PythonEnv {
    PythonEnv {
        path: "/opt/venv".into(),
        kind: "venv".into(),
        frameworks: vec![Framework {
            name: "torch".into(),
            version: Some("2.4.0+cu121".into()),
            cuda: Some("12.1".into()),
            variant: Some("cuda".into()),
            ..Framework::default()
        }],
        ..PythonEnv::default()
    }
}

// container-no-gpu-runtime

fn bare_container() -> Report {
    let mut r = Report::default();
    r.host.container = Some("docker".into());
    r
}

#[test]
fn a_cuda_image_without_gpus_is_an_error_that_replaces_no_gpu() {
    let mut r = bare_container();
    r.environment = vec![var("NVIDIA_VISIBLE_DEVICES", "all")];
    let found = run(&r);
    let f = one(&found, "container-no-gpu-runtime");
    assert_eq!(f.severity, Severity::Error);
    assert!(has_evidence(f, "NVIDIA_VISIBLE_DEVICES=all"), "{f:#?}");
    assert_eq!(f.explains, ["no-gpu"]);
    assert!(f.fix.as_deref().is_some_and(|x| x.contains("--gpus all")));
    // Through the whole diagnosis, the generic no-gpu finding gives way.
    let all = diagnose(&r);
    assert_eq!(
        all.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(),
        ["container-no-gpu-runtime"]
    );
}

#[test]
fn a_cuda_framework_makes_it_an_error_and_kubernetes_gets_its_own_fix() {
    let mut r = bare_container();
    r.host.container = Some("kubernetes".into());
    r.python_envs = vec![torch_cuda()];
    r.pci_devices = vec![PciDevice {
        address: "0000:01:00.0".into(),
        vendor: "nvidia".into(),
        device_id: "0x2204".into(),
        ..PciDevice::default()
    }];
    let found = run(&r);
    let f = one(&found, "container-no-gpu-runtime");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        has_evidence(f, "torch 2.4.0+cu121 in /opt/venv is built for CUDA 12.1"),
        "{f:#?}"
    );
    assert!(has_evidence(f, "PCI 0000:01:00.0"), "{f:#?}");
    assert!(
        f.fix
            .as_deref()
            .is_some_and(|x| x.contains("nvidia.com/gpu"))
    );
}

#[test]
fn a_plain_cpu_container_is_left_to_no_gpu() {
    let mut r = bare_container();
    r.environment = vec![var("NVIDIA_VISIBLE_DEVICES", "void")];
    assert!(run(&r).is_empty());
    assert_eq!(ids(&diagnose(&r)), ["no-gpu"]);
}

#[test]
fn a_read_bus_without_an_nvidia_gpu_is_no_gpu_even_for_a_cuda_image() {
    let mut r = bare_container();
    r.environment = vec![var("NVIDIA_VISIBLE_DEVICES", "all")];
    r.python_envs = vec![torch_cuda()];
    r.probes = vec![crate::report::ProbeRecord {
        name: "pci".into(),
        status: ProbeStatus::Ok,
        detail: None,
        duration_ms: 0,
        source: None,
    }];
    assert!(run(&r).is_empty());
    let all = diagnose(&r);
    assert_eq!(ids(&all), ["no-gpu"]);
    assert_eq!(all[0].severity, Severity::Info);
    assert!(all[0].fix.as_deref().is_none_or(|x| !x.contains("--gpus")));
}

#[test]
fn containers_with_gpu_access_and_hosts_are_not_judged() {
    let mut with_nodes = bare_container();
    with_nodes.environment = vec![var("NVIDIA_VISIBLE_DEVICES", "all")];
    with_nodes.kernel.device_nodes = vec!["/dev/nvidia0".into(), "/dev/nvidiactl".into()];
    assert!(run(&with_nodes).is_empty());

    let mut with_libcuda = bare_container();
    with_libcuda.driver_libraries = vec![driver_libcuda(0)];
    assert!(run(&with_libcuda).is_empty());

    let host = Report {
        environment: vec![var("NVIDIA_VISIBLE_DEVICES", "all")],
        ..Report::default()
    };
    assert!(run(&host).is_empty());
}

// visible-devices-hides-gpus

fn two_gpus() -> Report {
    Report {
        gpus: vec![rtx3090(0), rtx3090(1)],
        ..Report::default()
    }
}

#[test]
fn empty_minus_one_and_out_of_range_values_hide_gpus() {
    for (value, says) in [
        ("", "set but empty"),
        ("-1", "negative index"),
        (
            "2",
            "index 2, but the machine has 2 GPU(s), numbered 0 to 1",
        ),
        ("2,0,1", "index 2"),
        ("GPU-deadbeef", "no GPU's UUID"),
        ("cuda:0", "neither a GPU index nor a GPU UUID"),
    ] {
        let mut r = two_gpus();
        r.environment = vec![var("CUDA_VISIBLE_DEVICES", value)];
        let found = run(&r);
        let f = one(&found, "visible-devices-hides-gpus");
        assert_eq!(f.severity, Severity::Error, "{value}");
        assert!(has_evidence(f, says), "{value}: {f:#?}");
        assert!(
            has_evidence(f, "hidden: GPU 0 (NVIDIA GeForce RTX 3090)"),
            "{value}: {f:#?}"
        );
        assert!(
            f.subjects
                .contains(&Subject::EnvVar("CUDA_VISIBLE_DEVICES".into()))
        );
    }
}

#[test]
fn a_bad_entry_in_the_middle_hides_what_follows() {
    let mut r = two_gpus();
    r.environment = vec![var("CUDA_VISIBLE_DEVICES", "0,7,1")];
    let found = run(&r);
    let f = one(&found, "visible-devices-hides-gpus");
    assert!(has_evidence(f, "only GPU(s) 0 stay visible"), "{f:#?}");
    assert!(has_evidence(f, "hidden: GPU 1"), "{f:#?}");
    assert!(!has_evidence(f, "hidden: GPU 0"), "{f:#?}");
}

#[test]
fn valid_selections_and_harmless_extras_are_fine() {
    for value in [
        "0",
        "1,0",
        "0,1,2,3",
        "GPU-11b2c3d4",
        "GPU-01b2c3d4-0000-1111-2222-333333333333,1",
        "MIG-4f1c2d3e-aaaa-bbbb-cccc-000000000000",
        " 1 ",
    ] {
        let mut r = two_gpus();
        r.environment = vec![var("CUDA_VISIBLE_DEVICES", value)];
        assert!(run(&r).is_empty(), "{value}: {:#?}", run(&r));
    }
}

#[test]
fn nothing_is_judged_without_known_gpus_or_for_mig_indices() {
    let r = Report {
        environment: vec![var("CUDA_VISIBLE_DEVICES", "")],
        ..Report::default()
    };
    assert!(run(&r).is_empty());

    let mut mig = two_gpus();
    for g in &mut mig.gpus {
        g.mig_mode = Some("Enabled".into());
    }
    mig.environment = vec![var("CUDA_VISIBLE_DEVICES", "5")];
    assert!(run(&mig).is_empty());
}

#[test]
fn nvidia_visible_devices_void_in_a_container_hides_the_bus_gpus() {
    let mut r = two_gpus();
    for g in &mut r.gpus {
        g.source = "pci".into();
    }
    r.host.container = Some("docker".into());
    r.environment = vec![var("NVIDIA_VISIBLE_DEVICES", "void")];
    let found = run(&r);
    let f = one(&found, "visible-devices-hides-gpus");
    assert!(
        has_evidence(f, "NVIDIA_VISIBLE_DEVICES=\"void\" inside a container"),
        "{f:#?}"
    );
    assert_eq!(f.explains, ["container-no-gpu-runtime"]);
    // The same value with a GPU passed in anyway (`--gpus` wins) hides nothing.
    r.kernel.device_nodes = vec!["/dev/nvidia0".into()];
    assert!(!ids(&run(&r)).contains(&"visible-devices-hides-gpus"));
    // And outside a container the variable means nothing.
    r.kernel.device_nodes.clear();
    r.host.container = None;
    assert!(run(&r).is_empty());
}

// wsl-driver-in-guest

fn wsl_libcuda(rank: u32) -> DriverLibrary {
    DriverLibrary {
        resolved: Some("/usr/lib/wsl/lib/libcuda.so.1.1".into()),
        ..lib(
            "libcuda",
            "/usr/lib/wsl/lib",
            "libcuda.so.1",
            "driver",
            "wsl",
            rank,
        )
    }
}

fn wsl() -> Report {
    let mut r = Report::default();
    r.host.wsl = true;
    r
}

#[test]
fn a_linux_libcuda_before_wsls_is_an_error_and_explains_the_failing_smi() {
    let mut r = wsl();
    let mut linux = driver_libcuda(0);
    linux.path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1".into();
    linux.origin = "LD_LIBRARY_PATH".into();
    r.driver_libraries = vec![linux, wsl_libcuda(1)];
    r.environment = vec![var(
        "LD_LIBRARY_PATH",
        "/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64",
    )];
    r.driver.nvidia_smi_path = Some("/usr/bin/nvidia-smi".into());
    r.driver.nvidia_smi =
        ProbeOutcome::new(ProbeStatus::Failed, Some("couldn't communicate".into()));
    let found = run(&r);
    let f = one(&found, "wsl-driver-in-guest");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        has_evidence(
            f,
            "libcuda #0: /usr/lib/x86_64-linux-gnu/libcuda.so.1 -> /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15 (driver library, from LD_LIBRARY_PATH)"
        ),
        "{f:#?}"
    );
    assert!(
        has_evidence(
            f,
            "libcuda #1: /usr/lib/wsl/lib/libcuda.so.1 -> /usr/lib/wsl/lib/libcuda.so.1.1 (WSL's driver library, from wsl)"
        ),
        "{f:#?}"
    );
    assert_eq!(f.explains, ["nvidia-smi-failed"]);
    let fix = f.fix.as_deref().unwrap_or_default();
    assert!(
        fix.contains("`export LD_LIBRARY_PATH=/usr/local/cuda/lib64`"),
        "{fix}"
    );
    assert!(fix.contains("wsl --shutdown"), "{fix}");
}

#[test]
fn a_linux_copy_behind_wsls_is_a_warning_and_a_clean_wsl_is_nothing() {
    let mut r = wsl();
    r.driver_libraries = vec![wsl_libcuda(0), driver_libcuda(1)];
    let found = run(&r);
    let f = one(&found, "wsl-driver-in-guest");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.explains.is_empty());

    r.driver_libraries = vec![wsl_libcuda(0)];
    assert!(run(&r).is_empty());
    // The same Linux libcuda outside WSL is the normal driver.
    r.host.wsl = false;
    r.driver_libraries = vec![driver_libcuda(0)];
    assert!(run(&r).is_empty());
}

#[test]
fn the_nvidia_module_in_the_guest_is_an_error() {
    let mut r = wsl();
    r.driver_libraries = vec![wsl_libcuda(0)];
    r.kernel = KernelInfo {
        nvidia_loaded: true,
        nvidia_version: Some("550.54.15".into()),
        ..KernelInfo::default()
    };
    let found = run(&r);
    let f = one(&found, "wsl-driver-in-guest");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        has_evidence(f, "nvidia kernel module loaded in the guest (550.54.15)"),
        "{f:#?}"
    );
}

// fabric-manager-not-running

fn hgx(daemons: Option<Vec<String>>) -> Report {
    let switch = |n: u32| PciDevice {
        address: format!("0000:0{n}:00.0"),
        vendor: "nvidia".into(),
        device_id: "0x22a3".into(),
        class: "0x068000".into(),
        nvswitch: true,
        ..PciDevice::default()
    };
    let gpu_dev = |bus: &str| PciDevice {
        address: format!("0000:{bus}:00.0"),
        vendor: "nvidia".into(),
        device_id: "0x2330".into(),
        class: "0x030200".into(),
        ..PciDevice::default()
    };
    let mut r = Report {
        pci_devices: vec![switch(5), switch(6), gpu_dev("18"), gpu_dev("2a")],
        ..Report::default()
    };
    r.kernel.nvidia_loaded = true;
    r.kernel.daemons = daemons;
    r.driver.version = Some("550.54.15".into());
    r.host.os_id = Some("ubuntu".into());
    r
}

#[test]
fn nvswitches_without_fabric_manager_are_an_error() {
    let found = run(&hgx(Some(vec!["nvidia-persistenced".into()])));
    let f = one(&found, "fabric-manager-not-running");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.title.contains("2 NVSwitch, 2 GPU(s)"), "{}", f.title);
    assert!(
        has_evidence(
            f,
            "NVSwitch bridge(s) 0000:05:00.0, 0000:06:00.0 (device 0x22a3)"
        ),
        "{f:#?}"
    );
    assert!(
        has_evidence(
            f,
            "running GPU daemons: nvidia-persistenced (no nv-fabricmanager)"
        ),
        "{f:#?}"
    );
    let fix = f.fix.as_deref().unwrap_or_default();
    assert!(
        fix.contains("nvidia-fabricmanager-550=550.54.15-1"),
        "{fix}"
    );
}

#[test]
fn fabric_manager_running_or_unknowable_says_nothing() {
    assert!(run(&hgx(Some(vec!["nv-fabricmanager".into()]))).is_empty());
    assert!(run(&hgx(None)).is_empty(), "/proc unreadable");
    let mut no_module = hgx(Some(Vec::new()));
    no_module.kernel.nvidia_loaded = false;
    assert!(run(&no_module).is_empty(), "no-driver is the cause");
    let mut in_container = hgx(Some(Vec::new()));
    in_container.host.container = Some("docker".into());
    in_container.kernel.device_nodes = vec!["/dev/nvidia0".into()];
    assert!(
        run(&in_container).is_empty(),
        "the host's processes are not visible"
    );
    let mut no_switch = hgx(Some(Vec::new()));
    no_switch.pci_devices.retain(|d| !d.nvswitch);
    assert!(run(&no_switch).is_empty());
}

// fabric-not-completed, NVLink5

fn b200(state: &str, status: Option<&str>, fm: bool) -> Report {
    let mut r = hgx(Some(if fm {
        vec!["nv-fabricmanager".into()]
    } else {
        Vec::new()
    }));
    r.pci_devices.retain(|d| !d.nvswitch);
    r.gpus = (0..2)
        .map(|i| Gpu {
            index: i,
            name: Some("NVIDIA B200".into()),
            compute_capability: Some("10.0".into()),
            source: "nvidia-smi".into(),
            fabric: Some(GpuFabric {
                state: Some(state.into()),
                status: status.map(str::to_string),
                ..GpuFabric::default()
            }),
            ..Gpu::default()
        })
        .collect();
    r
}

#[test]
fn a_fabric_stuck_with_the_fabric_manager_running_names_the_nvlink5_prerequisites() {
    let mut r = b200("In Progress", None, true);
    r.kernel.fabric_manager_log = vec!["[ERROR] failed to open umad device".into()];
    let found = run(&r);
    let f = one(&found, "fabric-not-completed");
    assert!(has_evidence(f, "fabric state In Progress"), "{f:#?}");
    assert!(
        has_evidence(f, "the ib_umad module is not loaded"),
        "{f:#?}"
    );
    assert!(has_evidence(f, "no /sys/class/infiniband"), "{f:#?}");
    assert!(has_evidence(f, "no nvlsm"), "{f:#?}");
    assert!(has_evidence(f, "failed to open umad device"), "{f:#?}");
    assert!(
        f.fix
            .as_deref()
            .unwrap()
            .contains("modprobe -a ib_umad mlx5_ib")
    );
    // All there: the log is what is left to read.
    r.kernel.infiniband_modules = vec!["ib_umad".into(), "mlx5_ib".into()];
    r.kernel.infiniband_devices = Some(vec!["mlx5_0".into()]);
    r.kernel.daemons = Some(vec!["nv-fabricmanager".into(), "nvlsm".into()]);
    let found = run(&r);
    let f = one(&found, "fabric-not-completed");
    assert!(
        f.fix
            .as_deref()
            .unwrap()
            .starts_with("Read the fabric manager's log")
    );
}

#[test]
fn a_completed_fabric_says_nothing_even_without_a_local_fabric_manager() {
    // GB200 compute trays: the fabric manager runs on the switch trays.
    assert!(run(&b200("Completed", Some("Success"), false)).is_empty());
    assert!(run(&b200("Completed", Some("Success"), true)).is_empty());
    // Not Supported is no fabric.
    assert!(run(&b200("Not Supported", None, false)).is_empty());
    // Without the fabric manager, its own finding leads with the NVLink5 modules.
    let found = run(&b200("Not Started", None, false));
    let f = one(&found, "fabric-manager-not-running");
    assert!(
        f.fix
            .as_deref()
            .unwrap()
            .starts_with("First load the InfiniBand modules")
    );
    assert!(!ids(&found).contains(&"fabric-not-completed"));
}

#[test]
fn a_container_given_a_gpu_whose_fabric_is_not_completed_is_sent_to_the_host() {
    // huggingface/huggingface_hub#4134: the host's fabric manager is out of the container's sight.
    let mut r = b200("In Progress", None, false);
    r.host.container = Some("docker".into());
    r.kernel.daemons = Some(Vec::new());
    let found = run(&r);
    let f = one(&found, "fabric-not-completed");
    assert!(has_evidence(f, "fabric state In Progress"), "{f:#?}");
    assert!(has_evidence(f, "inside a container (docker)"), "{f:#?}");
    assert_eq!(f.fix_target, crate::report::FixTarget::Host);
    assert!(
        f.fix
            .as_deref()
            .unwrap()
            .starts_with("On the host: `systemctl status nvidia-fabricmanager`")
    );
    assert!(!ids(&found).contains(&"fabric-manager-not-running"));
    // A completed fabric, or none, is no finding in a container either.
    for (state, status) in [("Completed", Some("Success")), ("Not Supported", None)] {
        let mut r = b200(state, status, false);
        r.host.container = Some("docker".into());
        assert!(!ids(&run(&r)).contains(&"fabric-not-completed"), "{state}");
    }
    // A completed state whose status is a failure is not completed.
    let mut r = b200("Completed", Some("Failure"), false);
    r.host.container = Some("docker".into());
    assert!(ids(&run(&r)).contains(&"fabric-not-completed"));
}

// stub-libcuda-on-path

const STUBS: &str = "/usr/local/cuda/lib64/stubs";

#[test]
fn a_stub_named_like_the_driver_first_is_an_error() {
    let r = Report {
        driver_libraries: vec![
            lib(
                "libcuda",
                STUBS,
                "libcuda.so.1",
                "stub",
                "LD_LIBRARY_PATH",
                0,
            ),
            driver_libcuda(1),
        ],
        environment: vec![var(
            "LD_LIBRARY_PATH",
            "/usr/local/cuda/lib64/stubs/:/usr/local/nvidia/lib64",
        )],
        ..Report::default()
    };
    let found = run(&r);
    let f = one(&found, "stub-libcuda-on-path");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        has_evidence(
            f,
            "libcuda #0: /usr/local/cuda/lib64/stubs/libcuda.so.1 (link-time stub, from LD_LIBRARY_PATH)"
        ),
        "{f:#?}"
    );
    assert!(
        has_evidence(f, "libcuda #1: /lib/x86_64-linux-gnu/libcuda.so.1"),
        "{f:#?}"
    );
    let fix = f.fix.as_deref().unwrap_or_default();
    assert!(
        fix.contains("`export LD_LIBRARY_PATH=/usr/local/nvidia/lib64`"),
        "{fix}"
    );
    assert!(
        fix.contains("sudo rm /usr/local/cuda/lib64/stubs/libcuda.so.1"),
        "{fix}"
    );
}

#[test]
fn an_unversioned_stub_first_or_a_stub_behind_the_driver_is_a_warning() {
    let mut r = Report {
        driver_libraries: vec![
            lib("libcuda", STUBS, "libcuda.so", "stub", "LD_LIBRARY_PATH", 0),
            driver_libcuda(1),
            lib(
                "libnvidia-ml",
                STUBS,
                "libnvidia-ml.so",
                "stub",
                "LD_LIBRARY_PATH",
                0,
            ),
        ],
        environment: vec![var("LD_LIBRARY_PATH", STUBS)],
        ..Report::default()
    };
    let found = run(&r);
    let f = one(&found, "stub-libcuda-on-path");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.title.contains("comes before"), "{}", f.title);
    assert!(
        has_evidence(
            f,
            "libnvidia-ml #0: /usr/local/cuda/lib64/stubs/libnvidia-ml.so"
        ),
        "{f:#?}"
    );
    assert!(
        f.fix
            .as_deref()
            .is_some_and(|x| x.contains("`unset LD_LIBRARY_PATH`"))
    );

    r.driver_libraries = vec![
        driver_libcuda(0),
        lib("libcuda", STUBS, "libcuda.so", "stub", "ld.so.conf", 1),
    ];
    let found = run(&r);
    let f = one(&found, "stub-libcuda-on-path");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.fix
            .as_deref()
            .is_some_and(|x| x.contains("sudo ldconfig"))
    );
}

#[test]
fn no_stub_no_finding() {
    let r = Report {
        driver_libraries: vec![driver_libcuda(0)],
        ..Report::default()
    };
    assert!(run(&r).is_empty());
}

// forward-compat-unsupported

fn compat_first(gpus: Vec<Gpu>) -> Report {
    let compat = DriverLibrary {
        resolved: Some("/usr/local/cuda-12.4/compat/libcuda.so.550.54.15".into()),
        version: Some("550.54.15".into()),
        ..lib(
            "libcuda",
            "/usr/local/cuda/compat",
            "libcuda.so.1",
            "compat",
            "LD_LIBRARY_PATH",
            0,
        )
    };
    let mut r = Report {
        gpus,
        driver_libraries: vec![compat, driver_libcuda(1)],
        environment: vec![var(
            "LD_LIBRARY_PATH",
            "/usr/local/cuda/compat:/usr/local/nvidia/lib64",
        )],
        ..Report::default()
    };
    r.kernel.nvidia_version = Some("535.183.01".into());
    r
}

#[test]
fn compat_libcuda_on_geforce_is_an_error() {
    let found = run(&compat_first(vec![rtx3090(0)]));
    let f = one(&found, "forward-compat-unsupported");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        has_evidence(f, "(forward-compatibility copy, from LD_LIBRARY_PATH)"),
        "{f:#?}"
    );
    assert!(
        has_evidence(
            f,
            "GPU 0 (NVIDIA GeForce RTX 3090) [0x2204]: \"GeForce RTX 3090\" in the GPU table"
        ),
        "{f:#?}"
    );
    assert!(has_evidence(f, "kernel module: 535.183.01"), "{f:#?}");
    let fix = f.fix.as_deref().unwrap_or_default();
    assert!(
        fix.contains("`export LD_LIBRARY_PATH=/usr/local/nvidia/lib64`"),
        "{fix}"
    );
    assert!(fix.contains("at least 550.54.15"), "{fix}");
}

#[test]
fn a_gpu_found_by_name_or_unknown_to_the_table() {
    // No device id: the name finds the row.
    let mut by_name = rtx3090(0);
    by_name.pci_device_id = None;
    let found = run(&compat_first(vec![by_name]));
    assert_eq!(
        one(&found, "forward-compat-unsupported").severity,
        Severity::Error
    );

    let mystery = gpu(0, "NVIDIA Mystery GPU 9000", "0xfff0");
    let found = run(&compat_first(vec![mystery]));
    let f = one(&found, "forward-compat-unsupported");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        has_evidence(f, "not in the GPU table, forward compatibility unknown"),
        "{f:#?}"
    );
}

#[test]
fn a_compat_libcuda_mounted_at_the_drivers_name_is_told_by_its_version() {
    // The runtime mounted the image's cuda-compat libcuda over /lib/x86_64-linux-gnu: the
    // folder says driver, the version (that of the compat copy, newer than the module)
    // says forward compatibility.
    let mut r = compat_first(vec![rtx3090(0)]);
    r.environment.clear();
    r.host.container = Some("docker".into());
    for l in &mut r.driver_libraries {
        if l.kind == DriverLibraryKind::Compat {
            l.origin = "cuda-compat".into();
            l.rank = 1;
        } else {
            l.rank = 0;
        }
    }
    let all = diagnose(&r);
    assert_eq!(ids(&all), ["forward-compat-unsupported"], "{all:#?}");
    let f = &all[0];
    assert_eq!(f.severity, Severity::Error);
    assert!(
        has_evidence(f, "the version of the cuda-compat copy"),
        "{f:#?}"
    );
    let fix = f.fix.as_deref().unwrap_or_default();
    assert!(
        fix.starts_with("In the image, remove the cuda-compat package"),
        "{fix}"
    );
    assert!(
        !fix.contains("rmmod") && !fix.to_lowercase().contains("reboot"),
        "{fix}"
    );
    // The same libraries with the module at their version: the driver's own, all quiet.
    r.kernel.nvidia_version = Some("550.54.15".into());
    assert!(diagnose(&r).is_empty());
}

#[test]
fn compat_on_data_center_gpus_or_behind_the_driver_is_fine() {
    let a100 = gpu(0, "NVIDIA A100-SXM4-40GB", "0x20b0");
    assert!(run(&compat_first(vec![a100])).is_empty());

    let mut behind = compat_first(vec![rtx3090(0)]);
    for l in &mut behind.driver_libraries {
        l.rank = 1 - l.rank;
        if l.kind == DriverLibraryKind::Driver {
            l.version = Some("535.183.01".into());
        }
    }
    assert!(run(&behind).is_empty());
    assert!(
        run(&compat_first(Vec::new())).is_empty(),
        "no GPU known: nothing to judge"
    );
}

// forward-compat-branch-unsupported

/// `compat_first` with the compat libcuda at `compat` and the module at `module`, on an A100.
fn compat_on(compat: &str, module: &str) -> Report {
    let mut r = compat_first(vec![gpu(0, "NVIDIA A100-SXM4-40GB", "0x20b0")]);
    r.driver_libraries[0].version = Some(compat.into());
    r.kernel.nvidia_version = Some(module.into());
    r
}

#[test]
fn a_compat_package_on_a_branch_that_refuses_it_is_named_both_ways() {
    // R470 ended before CUDA 12.9: its row accepts up to 12.6, refuses from 12.8.
    let found = run(&compat_on("575.57.08", "470.256.02"));
    let f = one(&found, "forward-compat-branch-unsupported");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.detail.contains("up to CUDA 12.6"), "{f:#?}");
    assert!(
        has_evidence(f, "kernel module: 470.256.02 (R470)"),
        "{f:#?}"
    );
    // R530 is a New Feature Branch: no compat package at all.
    let found = run(&compat_on("550.54.15", "530.41.03"));
    let f = one(&found, "forward-compat-branch-unsupported");
    assert!(f.detail.contains("New Feature Branch"), "{f:#?}");
    // R545 and R555, which no nvidia/cuda image lists: refused from the first CUDA after
    // their own (12.4, 12.6).
    for (compat, module) in [("550.54.15", "545.29.06"), ("560.35.03", "555.42.06")] {
        let found = run(&compat_on(compat, module));
        let f = one(&found, "forward-compat-branch-unsupported");
        assert!(f.detail.contains("images never list it"), "{f:#?}");
    }
    // A CUDA 11-era branch past its last: R450 (up to 12.2) under CUDA 12.4's package, R418
    // (up to 11.6) under CUDA 11.8's.
    for (compat, module, up) in [
        ("550.54.15", "450.248.02", "up to CUDA 12.2"),
        ("520.61.05", "418.226.00", "up to CUDA 11.6"),
    ] {
        let found = run(&compat_on(compat, module));
        let f = one(&found, "forward-compat-branch-unsupported");
        assert!(f.detail.contains(up), "{f:#?}");
    }
}

#[test]
fn a_compat_package_a_branch_accepts_or_no_row_judges_is_quiet() {
    // R470 with CUDA 12.4's compat package: accepted.
    assert!(run(&compat_on("550.54.15", "470.256.02")).is_empty());
    // R535 with CUDA 13.0's: accepted (its row shows up to 13.2).
    assert!(run(&compat_on("580.173.02", "535.183.01")).is_empty());
    // R525 with CUDA 12.4's compat package: its images list it.
    assert!(run(&compat_on("550.54.15", "525.147.05")).is_empty());
    // R450 with CUDA 12.2's: ComputeCanada's table allows it (the images stop at 12.0): the
    // releases between are not judged.
    assert!(run(&compat_on("535.54.03", "450.248.02")).is_empty());
    // R595 has no row (newer than every image read): not judged.
    assert!(run(&compat_on("620.70.06", "595.58.04")).is_empty());
    // A GeForce is forward-compat-unsupported's, not this rule's.
    let mut geforce = compat_on("575.57.08", "470.256.02");
    geforce.gpus = vec![rtx3090(0)];
    assert_eq!(ids(&run(&geforce)), ["forward-compat-unsupported"]);
}

#[test]
fn an_nvml_fabric_is_named_as_nvml_with_its_health() {
    let mut r = b200("Completed", Some("NVML error 999"), true);
    for g in &mut r.gpus {
        g.source = "nvml".into();
        if let Some(f) = g.fabric.as_mut() {
            f.health = Some("Unhealthy (insufficient NVLinks)".into());
        }
    }
    r.kernel.infiniband_modules = vec!["ib_umad".into(), "mlx5_ib".into()];
    r.kernel.infiniband_devices = Some(vec!["mlx5_0".into()]);
    r.kernel.daemons = Some(vec!["nv-fabricmanager".into(), "nvlsm".into()]);
    let found = run(&r);
    let f = one(&found, "fabric-not-completed");
    assert!(
        has_evidence(
            f,
            "GPU 0: fabric state Completed, status NVML error 999, clique id N/A, cluster UUID N/A, \
             health Unhealthy (insufficient NVLinks) (NVML GPU fabric info)"
        ),
        "{f:#?}"
    );
}

#[test]
fn modules_the_kernel_lacks_are_installed_before_they_are_loaded() {
    let mut r = b200("In Progress", None, true);
    r.kernel.infiniband_modules_absent = vec!["ib_umad".into(), "mlx5_ib".into()];
    r.host.os_id = Some("ubuntu".into());
    let found = run(&r);
    let f = one(&found, "fabric-not-completed");
    let fix = f.fix.as_deref().unwrap();
    assert!(
        fix.starts_with(
            "The running kernel has no ib_umad or mlx5_ib module: install them with `sudo apt \
             install linux-modules-extra-$(uname -r)`"
        ),
        "{fix}"
    );
    assert!(
        has_evidence(f, "not installed for the running kernel"),
        "{f:#?}"
    );
    // Elsewhere no apt command.
    r.host.os_id = Some("rhel".into());
    let found = run(&r);
    let fix = one(&found, "fabric-not-completed").fix.as_deref().unwrap();
    assert!(!fix.contains("apt"), "{fix}");
    assert!(fix.contains("DOCA-OFED"), "{fix}");
}

fn container_with(runtime: &str, shm_mib: Option<u64>, gpus: u32) -> Report {
    let mut r = Report {
        gpus: (0..gpus).map(rtx3090).collect(),
        ..Report::default()
    };
    r.host.container = Some(runtime.into());
    r.host.shm_mib = shm_mib;
    r
}

#[test]
fn dockers_64_mib_shm_warns_with_several_gpus_and_informs_with_one() {
    let found = run(&container_with("docker", Some(64), 4));
    let f = one(&found, "container-shm-small");
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(
        f.title,
        "This docker container's /dev/shm is 64 MiB (NCCL asks for 1 GiB)"
    );
    assert!(has_evidence(f, "/dev/shm: 64 MiB"), "{f:#?}");
    assert!(f.fix.as_deref().unwrap().contains("--shm-size=1g"));

    let found = run(&container_with("docker", Some(64), 1));
    assert_eq!(one(&found, "container-shm-small").severity, Severity::Info);

    let found = run(&container_with("kubernetes", Some(64), 8));
    let fix = one(&found, "container-shm-small").fix.clone().unwrap();
    assert!(fix.contains("emptyDir"), "{fix}");
}

#[test]
fn enough_shm_no_stated_size_no_container_or_no_gpu_is_quiet() {
    let quiet = |r: &Report| !ids(&run(r)).contains(&"container-shm-small");
    assert!(quiet(&container_with("docker", Some(1024), 4)));
    assert!(quiet(&container_with("docker", None, 4)));
    assert!(quiet(&container_with("docker", Some(64), 0)));
    let mut bare = container_with("docker", Some(64), 4);
    bare.host.container = None;
    assert!(quiet(&bare));
}

// driver-too-old-for-image

/// nvidia/cuda:12.8's requirement, shortened to two branches and three brands.
const REQUIRE_128: &str = "cuda>=12.8 brand=unknown,driver>=470,driver<471 \
    brand=tesla,driver>=470,driver<471 brand=nvidia,driver>=470,driver<471 \
    brand=unknown,driver>=550,driver<551 brand=tesla,driver>=550,driver<551 \
    brand=nvidia,driver>=550,driver<551";

fn image_on(driver: &str, gpu: Gpu, require: &str) -> Report {
    let mut r = bare_container();
    r.kernel.nvidia_version = Some(driver.into());
    r.driver.version = Some(driver.into());
    r.gpus = vec![gpu];
    r.kernel.device_nodes = vec!["/dev/nvidia0".into(), "/dev/nvidiactl".into()];
    r.environment = vec![
        var("NVIDIA_VISIBLE_DEVICES", "all"),
        var("NVIDIA_REQUIRE_CUDA", require),
    ];
    r
}

fn a10() -> Gpu {
    Gpu {
        compute_capability: Some("8.6".into()),
        ..gpu(0, "NVIDIA A10", "0x2236")
    }
}

#[test]
fn an_image_newer_than_the_driver_on_geforce_is_an_error_naming_both_fixes() {
    let r = image_on("550.144.03", rtx3090(0), REQUIRE_128);
    let found = run(&r);
    let f = one(&found, "driver-too-old-for-image");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.title.contains("CUDA 12.8") && f.title.contains("CUDA 12.4"),
        "{f:#?}"
    );
    assert!(has_evidence(f, "branches 470, 550"), "{f:#?}");
    assert!(has_evidence(f, "GeForce/TITAN"), "{f:#?}");
    let fix = f.fix.as_deref().unwrap_or_default();
    assert!(
        fix.contains("R570 or newer") && fix.contains("CUDA 12.4 or older"),
        "{fix}"
    );
    assert_eq!(f.explains, ["toolkit-newer-than-driver"]);
}

#[test]
fn a_data_center_gpu_on_a_listed_branch_or_a_new_enough_driver_meets_it() {
    assert!(run(&image_on("550.54.15", a10(), REQUIRE_128)).is_empty());
    assert!(run(&image_on("570.124.06", rtx3090(0), REQUIRE_128)).is_empty());
    // Backward compatibility: any newer driver runs an older image.
    assert!(run(&image_on("580.105.08", rtx3090(0), "cuda>=12.1")).is_empty());
}

#[test]
fn a_data_center_gpu_on_an_unlisted_branch_is_told_the_branches_the_image_accepts() {
    let require =
        "cuda>=12.1 brand=tesla,driver>=470,driver<471 brand=nvidia,driver>=525,driver<526";
    let found = run(&image_on("520.61.05", a10(), require));
    let f = one(&found, "driver-too-old-for-image");
    let fix = f.fix.as_deref().unwrap_or_default();
    assert!(fix.contains("R530 or newer"), "{fix}");
    assert!(fix.contains("accepts this GPU on the R525 branch"), "{fix}");
    assert!(!fix.contains("R470"), "a downgrade is not offered: {fix}");
}

#[test]
fn a_skipped_check_within_the_major_is_a_warning_across_majors_an_error() {
    let mut r = image_on("550.144.03", rtx3090(0), REQUIRE_128);
    r.environment.push(var("NVIDIA_DISABLE_REQUIRE", "true"));
    let found = run(&r);
    let f = one(&found, "driver-too-old-for-image");
    assert_eq!(f.severity, Severity::Warning);
    assert!(has_evidence(f, "skipped this check"), "{f:#?}");
    let mut r = image_on("550.144.03", rtx3090(0), "cuda>=13.0");
    r.environment.push(var("NVIDIA_DISABLE_REQUIRE", "1"));
    assert_eq!(
        one(&run(&r), "driver-too-old-for-image").severity,
        Severity::Error
    );
}

#[test]
fn the_legacy_cuda_version_counts_and_unreadable_or_absent_requirements_do_not() {
    let mut r = image_on("535.183.01", rtx3090(0), "");
    r.environment = vec![var("CUDA_VERSION", "12.4.1")];
    let found = run(&r);
    let f = one(&found, "driver-too-old-for-image");
    assert!(has_evidence(f, "cuda>=12.4"), "{f:#?}");
    // A requirement the Toolkit cannot read, or none at all, is not judged here.
    assert!(run(&image_on("535.183.01", rtx3090(0), "cuda>=12.8 foo=bar")).is_empty());
    let mut none = image_on("535.183.01", rtx3090(0), "");
    none.environment.clear();
    assert!(run(&none).is_empty());
    // No driver known: nothing to compare.
    let mut no_driver = image_on("535.183.01", rtx3090(0), REQUIRE_128);
    no_driver.kernel.nvidia_version = None;
    no_driver.driver.version = None;
    assert!(run(&no_driver).is_empty());
}

#[test]
fn a_compat_libcuda_on_geforce_is_left_to_forward_compat_unsupported() {
    let mut r = compat_first(vec![rtx3090(0)]);
    r.host.container = Some("docker".into());
    r.environment = vec![var("NVIDIA_REQUIRE_CUDA", REQUIRE_128)];
    let found = run(&r);
    assert!(
        ids(&found).contains(&"forward-compat-unsupported"),
        "{found:#?}"
    );
    assert!(
        !ids(&found).contains(&"driver-too-old-for-image"),
        "{found:#?}"
    );
}

#[test]
fn a_working_compat_libcuda_on_an_unlisted_branch_is_only_a_warning() {
    let mut r = image_on("560.35.03", a10(), REQUIRE_128);
    r.driver_libraries = vec![
        DriverLibrary {
            resolved: Some("/usr/local/cuda-12.8/compat/libcuda.so.570.124.06".into()),
            version: Some("570.124.06".into()),
            ..lib(
                "libcuda",
                "/usr/local/cuda/compat",
                "libcuda.so.1",
                "compat",
                "ld.so.conf",
                0,
            )
        },
        driver_libcuda(1),
    ];
    let found = run(&r);
    let f = one(&found, "driver-too-old-for-image");
    assert_eq!(f.severity, Severity::Warning, "{f:#?}");
    assert!(
        has_evidence(f, "forward-compatibility libcuda 570.124.06"),
        "{f:#?}"
    );
}

fn cdi_report(made: Option<&str>, installed: Option<&str>, missing: &[&str]) -> Report {
    let mut report = Report::default();
    report.kernel.nvidia_version = installed.map(str::to_string);
    report.host.cdi_specs = vec![crate::report::CdiSpec {
        path: "/etc/cdi/nvidia.yaml".into(),
        kind: Some("nvidia.com/gpu".into()),
        driver_version: made.map(str::to_string),
        host_paths: 12,
        missing: missing.iter().map(|m| (*m).to_string()).collect(),
        devices: Vec::new(),
        cdi_version: None,
    }];
    report
}

#[test]
fn cdi_spec_older_than_the_driver_is_stale() {
    let r = cdi_report(
        Some("570.124.06"),
        Some("570.133.20"),
        &["/usr/lib/x86_64-linux-gnu/libcuda.so.570.124.06"],
    );
    let found = run(&r);
    let f = one(&found, "cdi-spec-stale");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.title
            .contains("made for driver 570.124.06; the driver is now 570.133.20"),
        "{}",
        f.title
    );
    assert!(has_evidence(
        f,
        "missing: /usr/lib/x86_64-linux-gnu/libcuda.so.570.124.06"
    ));
    let fix = f.fix.as_deref().unwrap_or_default();
    assert!(
        fix.contains("sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml"),
        "{fix}"
    );
    assert_eq!(f.fix_target, crate::report::FixTarget::Host);
}

#[test]
fn cdi_spec_newer_than_the_driver_is_stale_too() {
    // A rollback (or a spec copied from another machine): the other direction of the edge.
    let r = cdi_report(
        Some("580.105.08"),
        Some("570.172.08"),
        &["/usr/lib/x86_64-linux-gnu/libcuda.so.580.105.08"],
    );
    let found = run(&r);
    let f = one(&found, "cdi-spec-stale");
    assert!(
        f.title.contains("newer than the installed 570.172.08"),
        "{}",
        f.title
    );
}

#[test]
fn cdi_spec_whose_files_all_exist_is_not_judged() {
    let r = cdi_report(Some("570.133.20"), Some("570.133.20"), &[]);
    assert!(!ids(&run(&r)).contains(&"cdi-spec-stale"));
    // Another vendor's spec is not NVIDIA's to regenerate.
    let mut other = cdi_report(None, None, &["/dev/dri/renderD129"]);
    other.host.cdi_specs[0].kind = Some("amd.com/gpu".into());
    assert!(!ids(&run(&other)).contains(&"cdi-spec-stale"));
    // Inside a container the spec's host paths are not the container's.
    let mut inside = cdi_report(Some("570.124.06"), Some("570.133.20"), &["/x"]);
    inside.host.container = Some("podman".into());
    assert!(!ids(&run(&inside)).contains(&"cdi-spec-stale"));
}

#[test]
fn cdi_spec_under_wsl_is_regenerated_after_each_windows_driver_update() {
    let mut r = cdi_report(
        None,
        None,
        &["/usr/lib/wsl/drivers/nv_dispi.inf_amd64_5bd2b6f5d7f3d1a2/libcuda.so.1.1"],
    );
    r.host.wsl = true;
    r.driver.version = Some("581.57".into());
    let found = run(&r);
    let f = one(&found, "cdi-spec-stale");
    assert!(
        f.title.contains("names files that are not on this machine"),
        "{}",
        f.title
    );
    assert!(
        f.fix
            .as_deref()
            .unwrap_or_default()
            .contains("Windows driver update")
    );
}

// cdi-spec-device-mismatch

/// An A100 (UUID `GPU-a`) with MIG `mig` and `migs` MIG devices, and one CDI spec of `kind`
/// listing `devices`.
fn cdi_devices(kind: &str, devices: &[&str], mig: Option<MigMode>, migs: Option<u32>) -> Report {
    let mut g = gpu(0, "NVIDIA A100-PCIE-40GB", "0x20f1");
    g.uuid = Some("GPU-a".into());
    g.mig_mode = mig;
    g.mig_devices = migs;
    let mut report = Report {
        gpus: vec![g],
        ..Report::default()
    };
    report.host.cdi_specs = vec![crate::report::CdiSpec {
        path: "/var/run/cdi/nvidia.yaml".into(),
        kind: Some(kind.into()),
        host_paths: 12,
        devices: devices.iter().map(|d| (*d).to_string()).collect(),
        ..crate::report::CdiSpec::default()
    }];
    report
}

#[test]
fn a_spec_made_before_the_mig_devices_lacks_them() {
    let r = cdi_devices(
        "nvidia.com/gpu",
        &["0", "GPU-a", "all"],
        Some(MigMode::Enabled),
        Some(2),
    );
    let found = run(&r);
    let f = one(&found, "cdi-spec-device-mismatch");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.title.contains("`0:0`, `0:1` of GPU 0"), "{f:#?}");
    assert!(f.title.contains("2 of the 2 MIG devices by UUID"), "{f:#?}");
    assert!(
        f.fix
            .as_deref()
            .unwrap()
            .contains("nvidia-ctk cdi generate --output=/var/run/cdi/nvidia.yaml"),
        "{f:#?}"
    );
    // A device plugin's spec (UUID names only) with one of two MIG devices: its plugin writes it.
    let r = cdi_devices(
        "k8s.device-plugin.nvidia.com/gpu",
        &["GPU-a", "MIG-x"],
        Some(MigMode::Enabled),
        Some(2),
    );
    let found = run(&r);
    let f = one(&found, "cdi-spec-device-mismatch");
    assert!(f.title.contains("1 of the 2 MIG devices by UUID"), "{f:#?}");
    assert!(f.fix.as_deref().unwrap().contains("restart it"), "{f:#?}");
}

#[test]
fn a_spec_listing_gone_devices_is_a_warning() {
    // MIG turned off after the spec listed two MIG devices.
    let r = cdi_devices(
        "nvidia.com/gpu",
        &["0", "0:0", "0:1", "GPU-a", "MIG-x", "MIG-y", "all"],
        Some(MigMode::Disabled),
        None,
    );
    let found = run(&r);
    let f = one(&found, "cdi-spec-device-mismatch");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        has_evidence(
            f,
            "listed but not present: 2 MIG devices of GPU 0, which has MIG off"
        ),
        "{f:#?}"
    );
    // A GPU swapped: the spec's UUID and a second index are gone, the present UUID lacking.
    let r = cdi_devices("nvidia.com/gpu", &["0", "1", "GPU-b", "all"], None, None);
    let found = run(&r);
    let f = one(&found, "cdi-spec-device-mismatch");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.title.contains("GPU `GPU-a`"), "{f:#?}");
    assert!(
        has_evidence(f, "listed but not present: GPU `1` (the machine has 1)"),
        "{f:#?}"
    );
    assert!(
        has_evidence(f, "listed but not present: GPU `GPU-b`"),
        "{f:#?}"
    );
}

#[test]
fn a_current_spec_an_all_only_spec_or_a_container_says_nothing() {
    let current = cdi_devices(
        "nvidia.com/gpu",
        &["0", "0:0", "0:1", "GPU-a", "MIG-x", "MIG-y", "all"],
        Some(MigMode::Enabled),
        Some(2),
    );
    assert!(run(&current).is_empty());
    // `all` alone (a management spec) names no device to compare.
    let all = cdi_devices(
        "management.nvidia.com/gpu",
        &["all"],
        Some(MigMode::Enabled),
        Some(2),
    );
    assert!(run(&all).is_empty());
    // Another vendor's kind is not read.
    let other = cdi_devices("amd.com/gpu", &["0", "1"], None, None);
    assert!(run(&other).is_empty());
    // Inside a container the host's spec is not judged.
    let mut inside = cdi_devices(
        "nvidia.com/gpu",
        &["0", "GPU-a"],
        Some(MigMode::Enabled),
        Some(2),
    );
    inside.host.container = Some("docker".into());
    assert!(
        ids(&run(&inside))
            .iter()
            .all(|i| *i != "cdi-spec-device-mismatch")
    );
}

// wsl-container-driver-file-missing

/// A WSL2 container on Windows driver `driver` whose driver-store folder lacks `missing`.
fn wsl_container(driver: &str, missing: &[&str], container: bool) -> Report {
    let mut r = wsl();
    r.host.container = container.then(|| "docker".to_string());
    r.driver.version = Some(driver.into());
    r.host.wsl_driver_store = Some(crate::report::WslDriverStore {
        path: "/usr/lib/wsl/drivers/nv_dispi.inf_amd64_1".into(),
        missing: missing.iter().map(|m| (*m).to_string()).collect(),
    });
    r
}

#[test]
fn a_wsl_container_without_libnvdxgdmal_on_driver_555_is_an_error() {
    let found = run(&wsl_container(
        "555.85",
        &["libnvdxgdmal.so.1", "nvcubins.bin"],
        true,
    ));
    let f = one(&found, "wsl-container-driver-file-missing");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        has_evidence(f, "also not mounted from the driver store: nvcubins.bin"),
        "{f:#?}"
    );
    assert!(f.fix.as_deref().unwrap().contains("1.15.0"), "{f:#?}");
}

#[test]
fn an_older_driver_the_guest_itself_or_a_present_library_says_nothing() {
    let quiet = |r: &Report| !ids(&run(r)).contains(&"wsl-container-driver-file-missing");
    // Drivers before 555 have no libnvdxgdmal.so.1.
    assert!(quiet(&wsl_container(
        "551.78",
        &["libnvdxgdmal.so.1"],
        true
    )));
    // The WSL guest itself maps the whole driver store.
    assert!(quiet(&wsl_container(
        "560.94",
        &["libnvdxgdmal.so.1"],
        false
    )));
    // A Toolkit that mounts it.
    assert!(quiet(&wsl_container("560.94", &["nvcubins.bin"], true)));
}

// container-no-gpu-runtime: what a pod's NVIDIA_VISIBLE_DEVICES says of why nothing was injected

fn bare_pod(visible: &str) -> Report {
    let mut r = bare_container();
    r.host.container = Some("kubernetes".into());
    r.environment = vec![var("NVIDIA_VISIBLE_DEVICES", visible)];
    r
}

fn fix_of<'a>(found: &'a [Finding], id: &str) -> &'a str {
    one(found, id).fix.as_deref().unwrap_or_default()
}

#[test]
fn a_pod_given_a_device_by_the_plugin_is_told_the_runtime_refused_the_variable() {
    let found = run(&bare_pod("MIG-8a1f3c6e-2b4d-5e7f-9a0b-1c2d3e4f5a6b"));
    let fix = fix_of(&found, "container-no-gpu-runtime");
    assert!(
        fix.contains("accept-nvidia-visible-devices-envvar-when-unprivileged"),
        "{fix}"
    );
    assert!(fix.contains("DEVICE_LIST_STRATEGY=volume-mounts"), "{fix}");
    assert!(fix.contains("requested and allocated"), "{fix}");
    assert!(fix.contains("runtimeClassName: nvidia"), "{fix}");
    assert!(!fix.contains("Request the GPU in the pod spec"), "{fix}");
}

#[test]
fn a_pod_with_a_volume_mounts_list_is_told_the_toolkit_must_accept_mounts() {
    let found = run(&bare_pod("/var/run/nvidia-container-devices"));
    let fix = fix_of(&found, "container-no-gpu-runtime");
    assert!(
        fix.contains("accept-nvidia-visible-devices-as-volume-mounts = true"),
        "{fix}"
    );
    assert!(fix.contains("DEVICE_LIST_STRATEGY=envvar"), "{fix}");
    assert!(
        !fix.contains("envvar-when-unprivileged = false"),
        "the other direction's setting: {fix}"
    );
}

#[test]
fn a_pod_with_the_images_all_may_also_have_to_request_the_gpu() {
    let found = run(&bare_pod("all"));
    let fix = fix_of(&found, "container-no-gpu-runtime");
    assert!(fix.contains("If the pod does not request a GPU"), "{fix}");
    assert!(
        fix.contains("ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED"),
        "{fix}"
    );
}

// cdi-spec-version-unsupported

fn cdi_engine_host(cdi_version: Option<&str>, engines: &[(&str, &str, &str)]) -> Report {
    let mut r = Report::default();
    r.host.cdi_specs = vec![crate::report::CdiSpec {
        path: "/etc/cdi/nvidia.yaml".into(),
        kind: Some("nvidia.com/gpu".into()),
        host_paths: 12,
        cdi_version: cdi_version.map(str::to_string),
        ..crate::report::CdiSpec::default()
    }];
    r.host.container_engines = engines
        .iter()
        .map(
            |(engine, package, version)| crate::report::ContainerEngine {
                engine: (*engine).into(),
                package: (*package).into(),
                version: (*version).into(),
            },
        )
        .collect();
    r
}

#[test]
fn a_070_spec_under_podman_493_is_unreadable_and_names_the_first_podman_that_reads_it() {
    let r = cdi_engine_host(
        Some("0.7.0"),
        &[("podman", "dpkg: podman", "4.9.3+ds1-1ubuntu0.2")],
    );
    let found = run(&r);
    let f = one(&found, "cdi-spec-version-unsupported");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.title.contains("Podman 4.9.3 cannot read"), "{f:#?}");
    assert!(has_evidence(f, "CDI library v0.6.2"), "{f:#?}");
    let fix = f.fix.as_deref().unwrap_or_default();
    assert!(fix.contains("Podman 5.1.0 or later"), "{fix}");
}

#[test]
fn docker_with_an_epoch_is_read_by_its_upstream_release_both_ways() {
    // Docker 26.0.2 vendors CDI v0.6.2 (0.6.0 at most); 26.1.0 v0.7.1 (0.7.0).
    let old = cdi_engine_host(
        Some("0.7.0"),
        &[("docker", "dpkg: docker-ce", "5:26.0.2-1~ubuntu.24.04~noble")],
    );
    let f = one(&run(&old), "cdi-spec-version-unsupported").clone();
    assert!(f.title.contains("Docker Engine 26.0.2"), "{f:#?}");
    assert!(
        f.fix
            .as_deref()
            .is_some_and(|x| x.contains("Docker Engine 26.1.0 or later")),
        "{f:#?}"
    );
    let new = cdi_engine_host(
        Some("0.7.0"),
        &[("docker", "dpkg: docker-ce", "5:26.1.0-1~ubuntu.24.04~noble")],
    );
    assert!(run(&new).is_empty());
}

#[test]
fn an_older_spec_a_newer_engine_an_unknown_release_or_a_container_say_nothing() {
    // An engine newer than the spec reads it (the older direction does not fail).
    let older_spec = cdi_engine_host(Some("0.5.0"), &[("podman", "dpkg: podman", "4.9.3")]);
    assert!(run(&older_spec).is_empty());
    let newer_engine = cdi_engine_host(Some("0.7.0"), &[("podman", "pacman: podman", "5.7.0-1")]);
    assert!(run(&newer_engine).is_empty());
    // A release newer than every one the table read is not judged.
    let unknown = cdi_engine_host(Some("9.0.0"), &[("podman", "dpkg: podman", "99.0.0")]);
    assert!(run(&unknown).is_empty());
    let no_version = cdi_engine_host(None, &[("podman", "dpkg: podman", "4.9.3")]);
    assert!(run(&no_version).is_empty());
    let mut inside = cdi_engine_host(Some("0.7.0"), &[("podman", "dpkg: podman", "4.9.3")]);
    inside.host.container = Some("podman".into());
    assert!(run(&inside).is_empty());
}

// visible-devices-hides-gpus: AMD's selectors on an NVIDIA-only machine beside ollama

fn ollama_node(vars: &[(&str, &str)]) -> Report {
    let mut r = Report {
        gpus: vec![gpu(0, "NVIDIA H100 PCIe", "0x2331")],
        ..Report::default()
    };
    r.environment = vars.iter().map(|(n, v)| var(n, v)).collect();
    r.libraries.cuda_code = vec![crate::report::CudaCode {
        program: "ollama".into(),
        path: "/opt/ollama/lib/ollama/cuda_v12/libggml-cuda.so".into(),
        sass: vec!["9.0".into()],
        ptx: Vec::new(),
        capped: false,
        runtime: None,
    }];
    r
}

#[test]
fn slurms_rocr_visible_devices_beside_ollama_on_nvidia_is_a_warning_naming_gres_conf() {
    let r = ollama_node(&[
        ("CUDA_VISIBLE_DEVICES", "0"),
        ("ROCR_VISIBLE_DEVICES", "0"),
        ("SLURM_JOB_ID", "4817265"),
    ]);
    let found = run(&r);
    let f = one(&found, "visible-devices-hides-gpus");
    assert_eq!(f.severity, Severity::Warning);
    let fix = f.fix.as_deref().unwrap_or_default();
    assert!(fix.contains("unset ROCR_VISIBLE_DEVICES"), "{fix}");
    assert!(fix.contains("Flags=nvidia_gpu_env"), "{fix}");
    // Outside Slurm, the fix does not speak of gres.conf; an empty value counts too.
    let plain = ollama_node(&[("HIP_VISIBLE_DEVICES", "")]);
    let found = run(&plain);
    let fix = fix_of(&found, "visible-devices-hides-gpus");
    assert!(fix.contains("unset HIP_VISIBLE_DEVICES"), "{fix}");
    assert!(!fix.contains("gres.conf"), "{fix}");
}

#[test]
fn amd_selectors_without_ollama_or_beside_an_amd_gpu_say_nothing() {
    let mut no_ollama = ollama_node(&[("ROCR_VISIBLE_DEVICES", "0")]);
    no_ollama.libraries.cuda_code.clear();
    assert!(run(&no_ollama).is_empty());
    let mut with_amd = ollama_node(&[("ROCR_VISIBLE_DEVICES", "0")]);
    with_amd.gpus.push(Gpu {
        index: 1,
        vendor: crate::report::GpuVendor::Amd,
        ..Gpu::default()
    });
    assert!(
        !ids(&run(&with_amd)).contains(&"visible-devices-hides-gpus"),
        "{:?}",
        ids(&run(&with_amd))
    );
    let unset = ollama_node(&[("CUDA_VISIBLE_DEVICES", "0")]);
    assert!(run(&unset).is_empty());
}
