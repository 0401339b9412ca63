//! The GPU id table (`manifests/gpu-ids.toml`) end to end: the generator reproduces the file,
//! every id in it is identified on a machine with no driver, and the planner plans for every
//! one of compute capability 5.0 or more.

use std::process::Command;

use gpu_doctor::manifest::{self, Manifests};
use gpu_doctor::plan::{Target, Via};
use gpu_doctor::report::{Gpu, HostInfo, IdentifiedBy, PciDevice, Report};
use gpu_doctor::version::Version;

/// A fresh Ubuntu 22.04 machine whose only NVIDIA fact is one GPU on the PCI bus.
fn no_driver_machine(device: &str, subsystem: Option<&str>) -> Report {
    Report {
        host: HostInfo {
            os_id: Some("ubuntu".into()),
            os_version: Some("22.04".into()),
            os_codename: Some("jammy".into()),
            os_pretty_name: Some("Ubuntu 22.04.4 LTS".into()),
            kernel_release: Some("6.8.0-45-generic".into()),
            arch: Some("x86_64".into()),
            ..HostInfo::default()
        },
        pci_devices: vec![PciDevice {
            address: "0000:01:00.0".into(),
            vendor: "nvidia".into(),
            vendor_id: "0x10de".into(),
            device_id: device.into(),
            class: "0x030000".into(),
            subsystem_id: subsystem.map(str::to_string),
            ..PciDevice::default()
        }],
        gpus: vec![Gpu {
            pci_bus_id: Some("00000000:01:00.0".into()),
            pci_device_id: Some(device.into()),
            pci_subsystem_id: subsystem.map(str::to_string),
            source: "pci".into(),
            ..Gpu::default()
        }],
        ..Report::default()
    }
}

fn identified(device: &str, subsystem: Option<&str>) -> Gpu {
    let mut report = no_driver_machine(device, subsystem);
    gpu_doctor::fill::fill_gpus(&mut report, manifest::embedded());
    report.gpus.remove(0)
}

fn apt_2204() -> Target {
    Target {
        via: Some(Via::Apt),
        os: Some("ubuntu-22.04".into()),
        ..Target::default()
    }
}

fn chip_cc(m: &Manifests, chip: &str) -> Option<String> {
    m.gpu_ids
        .chips
        .iter()
        .find(|c| c.chip == chip)
        .and_then(|c| c.compute_capability.clone())
}

#[test]
fn the_generator_reproduces_the_checked_in_table() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .arg(format!("{root}/scripts/gen-gpu-ids.py"))
        .arg("--check")
        .output();
    let Ok(out) = out else {
        eprintln!("python3 is not installed: generator check skipped");
        return;
    };
    assert!(
        out.status.success(),
        "scripts/gen-gpu-ids.py --check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_id_of_the_table_is_identified_with_its_chips_compute_capability() {
    let m = manifest::embedded();
    let mut checked = 0;
    for row in &m.gpu_ids.devices.rows {
        let subsystem = (!row.1.is_empty()).then(|| {
            let (vendor, device) = row.1.split_once(':').expect("vvvv:dddd");
            format!("0x{device}{vendor}")
        });
        let gpu = identified(&row.0, subsystem.as_deref());
        let want = chip_cc(m, &row.2);
        assert_eq!(gpu.compute_capability, want, "{} {}", row.0, row.1);
        assert_eq!(gpu.chip.as_deref(), Some(row.2.as_str()), "{}", row.0);
        if want.is_some() {
            assert_eq!(gpu.identified_by, Some(IdentifiedBy::Table), "{}", row.0);
        } else {
            assert!(gpu.identity_note.is_some(), "{}", row.0);
        }
        if !row.5.is_empty() {
            assert_eq!(
                gpu.name.as_deref(),
                Some(row.5.as_str()),
                "{} {}",
                row.0,
                row.1
            );
        }
        checked += 1;
    }
    assert!(checked > 1000, "only {checked} rows");
}

#[test]
fn every_listed_gpu_of_cc_5_or_more_gets_an_apt_plan_with_a_driver_that_knows_it() {
    let m = manifest::embedded();
    let five = Version::parse("5.0").expect("version");
    let mut failures = Vec::new();
    let mut planned = 0;
    let mut seen = std::collections::HashSet::new();
    for row in &m.gpu_ids.devices.rows {
        if !seen.insert(row.0.clone()) {
            continue;
        }
        let Some(cc) = chip_cc(m, &row.2) else {
            continue;
        };
        if Version::parse(&cc).expect("cc") < five {
            continue;
        }
        let mut report = no_driver_machine(&row.0, None);
        gpu_doctor::fill::fill_gpus(&mut report, m);
        match gpu_doctor::plan::plan(&report, m, &apt_2204()) {
            Ok(plan) => {
                planned += 1;
                let text = plan.summary.join("\n");
                if !row.3.is_empty() {
                    let first: u64 = row.3.split('.').next().unwrap().parse().unwrap();
                    let branch = driver_branch(&text)
                        .unwrap_or_else(|| panic!("{}: no driver branch in the plan", row.0));
                    assert!(branch >= first, "{}: R{branch} predates {}", row.0, row.3);
                }
            }
            Err(refusal) => failures.push(format!("{} ({}): {}", row.0, row.5, refusal.render())),
        }
    }
    assert!(
        failures.is_empty(),
        "{} refused:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(planned > 600, "only {planned} GPUs planned");
}

/// `R595` from the plan summary's `driver:` line.
fn driver_branch(script: &str) -> Option<u64> {
    let line = script.lines().find(|l| l.starts_with("driver: R"))?;
    let digits: String = line["driver: R".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[test]
fn ids_newer_than_the_table_get_their_blocks_chip_marked_inferred() {
    // 0x2b8f is not in the table (yet) but lies in GB202's block 0x2b80.
    let gpu = identified("0x2b8f", None);
    assert_eq!(gpu.chip.as_deref(), Some("GB202"));
    assert_eq!(gpu.compute_capability.as_deref(), Some("12.0"));
    assert_eq!(gpu.identified_by, Some(IdentifiedBy::IdBlock));
    assert_eq!(gpu.name, None, "a block names no product");
    // 0x27ff: AD104's block 0x2780.
    let gpu = identified("0x27ff", None);
    assert_eq!(gpu.compute_capability.as_deref(), Some("8.9"));
    assert_eq!(gpu.identified_by, Some(IdentifiedBy::IdBlock));
}

#[test]
fn ids_in_no_known_block_get_no_cc_and_say_what_is_known() {
    let gpu = identified("0x3400", None);
    assert_eq!(gpu.compute_capability, None);
    assert_eq!(gpu.identified_by, None);
    let note = gpu.identity_note.expect("a note");
    assert!(note.contains("Turing or newer"), "{note}");
    assert!(note.contains("GPU_DOCTOR_GPU_CC"), "{note}");
    // Below 0x1b00 blocks mix chips: no guess at all.
    let gpu = identified("0x13ff", None);
    assert_eq!(gpu.compute_capability, None);
    assert!(!gpu.identity_note.expect("a note").contains("or newer"));
}

#[test]
fn shared_ids_are_named_by_their_subsystem() {
    let name = |device: &str, sub: Option<&str>| identified(device, sub).name;
    assert_eq!(
        name("0x25b6", Some("0x14a910de")).as_deref(),
        Some("NVIDIA A16")
    );
    assert_eq!(
        name("0x25b6", Some("0x157e10de")).as_deref(),
        Some("NVIDIA A2")
    );
    assert_eq!(
        name("0x1e30", Some("0x129e10de")).as_deref(),
        Some("Quadro RTX 8000")
    );
    assert_eq!(name("0x1e30", None).as_deref(), Some("Quadro RTX 6000"));
    assert_eq!(
        name("0x2342", Some("0x180910de")).as_deref(),
        Some("NVIDIA GH200 480GB")
    );
    assert_eq!(
        name("0x2342", Some("0x16eb10de")).as_deref(),
        Some("NVIDIA GH200 120GB")
    );
    // An unknown subsystem keeps the id's own name, and the shared chip's cc.
    let gpu = identified("0x25b6", Some("0x000010de"));
    assert_eq!(gpu.compute_capability.as_deref(), Some("8.6"));
}

#[test]
fn nvidia_smi_names_find_their_rows_when_no_id_is_known() {
    let m = manifest::embedded();
    let cc = |name: &str| m.gpu_ids.by_name(name).and_then(|i| i.compute_capability);
    for (name, want) in [
        ("Tesla V100S-PCIE-32GB", "7.0"),
        ("NVIDIA A10G", "8.6"),
        ("GRID K520", "3.0"),
        ("Quadro P400", "6.1"),
        ("NVIDIA GeForce RTX 3060 Laptop GPU", "8.6"),
        ("NVIDIA GeForce RTX 2080 with Max-Q Design", "7.5"),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0"),
        ("NVIDIA GeForce RTX 5090", "12.0"),
        ("NVIDIA H100 80GB HBM3", "9.0"),
        ("Tesla K80", "3.7"),
    ] {
        assert_eq!(cc(name), Some(want), "{name}");
    }
    assert_eq!(cc("Matrox G200eR2"), None);
}

/// The no-driver fixture machines, one per architecture (and the id-table corner cases).
const NO_DRIVER_FIXTURES: [&str; 11] = [
    "no-driver-kepler-k80",
    "no-driver-maxwell-m60",
    "no-driver-pascal-p4",
    "no-driver-volta-v100",
    "no-driver-turing-t4",
    "no-driver-ampere-a100",
    "no-driver-ampere-a16-shared-id",
    "no-driver-ada-rtx4070",
    "no-driver-hopper-h100",
    "no-driver-blackwell-rtx5090-laptop",
    "no-driver-id-block",
];

/// Each machine's GPU as `doctor --json` reports it, and its apt plan for Ubuntu 22.04.
#[test]
fn no_driver_machines_are_identified_and_planned() {
    let expect = [
        ("3.7", "GK210", "table", "Tesla K80"),
        ("5.2", "GM204", "table", "Tesla M60"),
        ("6.1", "GP104", "table", "Tesla P4"),
        ("7.0", "GV100", "table", "Tesla V100 SXM2 16GB"),
        ("7.5", "TU104", "table", "Tesla T4"),
        ("8.0", "GA100", "table", "NVIDIA A100-SXM4-40GB"),
        ("8.6", "GA107", "table", "NVIDIA A16"),
        ("8.9", "AD104", "table", "NVIDIA GeForce RTX 4070"),
        ("9.0", "GH100", "table", "NVIDIA H100 PCIe"),
        (
            "12.0",
            "GB203",
            "table",
            "NVIDIA GeForce RTX 5090 Laptop GPU",
        ),
        ("12.0", "GB202", "id-block", ""),
    ];
    for (fixture, (cc, chip, how, name)) in NO_DRIVER_FIXTURES.iter().zip(expect) {
        let report = crate::support::doctor(fixture);
        let gpu = &report["gpus"][0];
        assert_eq!(gpu["compute_capability"], cc, "{fixture}");
        assert_eq!(gpu["chip"], chip, "{fixture}");
        assert_eq!(gpu["identified_by"], how, "{fixture}");
        if name.is_empty() {
            assert!(gpu["name"].is_null(), "{fixture}: a block names no product");
        } else {
            assert_eq!(gpu["name"], name, "{fixture}");
        }
        let out = plan_apt(fixture);
        assert_eq!(out.code, 0, "{fixture}: {}", out.stderr);
        insta::assert_snapshot!(
            format!("no_driver_plan_{}", fixture.replace('-', "_")),
            out.stdout
        );
    }
}

#[test]
fn legacy_gpus_plan_their_last_branch_and_say_so() {
    for (fixture, branch) in [
        ("no-driver-kepler-k80", "R470"),
        ("no-driver-maxwell-m60", "R580"),
        ("no-driver-pascal-p4", "R580"),
        ("no-driver-volta-v100", "R580"),
    ] {
        let out = plan_apt(fixture);
        assert_eq!(out.code, 0, "{fixture}: {}", out.stderr);
        assert!(
            out.stdout.contains(&format!("driver: {branch}")),
            "{fixture}"
        );
        assert!(out.stdout.contains("legacy GPU"), "{fixture}");
    }
    let out = plan_apt("no-driver-turing-t4");
    assert!(!out.stdout.contains("legacy GPU"));
}

#[test]
fn an_id_in_no_known_block_is_refused_with_what_is_known() {
    let report = crate::support::doctor("no-driver-unknown-block");
    let gpu = &report["gpus"][0];
    assert!(gpu["compute_capability"].is_null());
    assert!(gpu["identified_by"].is_null());
    let out = plan_apt("no-driver-unknown-block");
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("Turing or newer"), "{}", out.stderr);
    assert!(out.stderr.contains("GPU_DOCTOR_GPU_CC"), "{}", out.stderr);
}

/// `plan --via apt --os ubuntu-22.04` on a fixture.
fn plan_apt(fixture: &str) -> crate::support::Out {
    crate::support::Out::from(crate::support::on_fixture(
        fixture,
        &[],
        &["plan", "--via", "apt", "--os", "ubuntu-22.04"],
        None,
    ))
}

/// An AWS A10G whose nvidia-smi printed `000000DE` as its PCI id: the bus gives the id, and
/// the GPU is identified by it; a driver that gave no id at all leaves the name to match.
#[test]
fn a_gpu_without_a_usable_id_from_nvidia_smi_is_identified_by_the_bus_or_its_name() {
    let m = manifest::embedded();
    let mut report = no_driver_machine("0x2237", None);
    report.pci_devices[0].address = "0000:00:1e.0".into();
    report.gpus[0] = Gpu {
        name: Some("NVIDIA A10G".into()),
        pci_bus_id: Some("00000000:00:1E.0".into()),
        source: "nvidia-smi".into(),
        ..Gpu::default()
    };
    gpu_doctor::fill::fill_gpus(&mut report, m);
    let gpu = &report.gpus[0];
    assert_eq!(gpu.pci_device_id.as_deref(), Some("0x2237"));
    assert_eq!(gpu.compute_capability.as_deref(), Some("8.6"));
    assert_eq!(gpu.identified_by, Some(IdentifiedBy::Table));
    assert_eq!(
        gpu.name.as_deref(),
        Some("NVIDIA A10G"),
        "the driver's name stays"
    );

    let mut report = Report {
        gpus: vec![Gpu {
            name: Some("Tesla V100S-PCIE-32GB".into()),
            source: "nvidia-smi".into(),
            ..Gpu::default()
        }],
        ..Report::default()
    };
    gpu_doctor::fill::fill_gpus(&mut report, m);
    assert_eq!(report.gpus[0].compute_capability.as_deref(), Some("7.0"));
    assert_eq!(report.gpus[0].chip.as_deref(), Some("GV100"));
}

/// Ubuntu's 535 loaded for an RTX 5090: `driver-too-old-for-gpu`, and a plan that replaces it
/// with a branch that knows the card.
#[test]
fn a_driver_older_than_the_gpu_is_found_and_replaced() {
    let report = crate::support::doctor("driver-535-on-rtx5090");
    let ids: Vec<&str> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert!(ids.contains(&"driver-too-old-for-gpu"), "{ids:?}");
    assert!(!ids.contains(&"nvidia-smi-failed"), "explained: {ids:?}");
    let out = plan_apt("driver-535-on-rtx5090");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let branch = driver_branch(
        &out.stdout
            .lines()
            .filter_map(|l| l.strip_prefix("#   "))
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .expect("a driver line");
    assert!(branch >= 570, "R{branch} does not know the RTX 5090");
    assert!(out.stdout.contains("replacing 535.183.01"));
    assert!(out.stdout.contains("driver-too-old-for-gpu"));
}

/// One real `nvidia-smi -q -x` log and what its first `<gpu>` says, read off the XML by hand.
struct RealLog {
    file: &'static str,
    /// `<gpu>` elements in the file (some sources cut a log to fewer than `attached_gpus`).
    gpus: usize,
    attached: Option<u32>,
    driver: Option<&'static str>,
    cuda: Option<&'static str>,
    name: Option<&'static str>,
    memory_mib: Option<u64>,
    device: Option<&'static str>,
    subsystem: Option<&'static str>,
    /// The GPU id table's compute capability for the PCI id (for the name when no id).
    cc: Option<&'static str>,
    mig: Option<&'static str>,
    virtualization: Option<&'static str>,
}

/// The fields most logs share: one GPU, attached and listed.
const ONE: RealLog = RealLog {
    file: "",
    gpus: 1,
    attached: Some(1),
    driver: None,
    cuda: None,
    name: None,
    memory_mib: None,
    device: None,
    subsystem: None,
    cc: None,
    mig: None,
    virtualization: Some("None"),
};

/// Real `nvidia-smi -q -x` logs (tests/data/nvidia-smi-xml/README.md names their sources), from
/// driver 352 (Kepler, GRID K520, DTD inline) to 595 (Ampere, Ada), with what each says.
const REAL_LOGS: &[RealLog] = &[
    RealLog {
        file: "netdata-a100-sxm4-mig",
        driver: Some("510.47.03"),
        cuda: Some("11.6"),
        name: Some("NVIDIA A100-SXM4-40GB"),
        memory_mib: Some(40960),
        device: Some("0x20b0"),
        subsystem: Some("0x134f10de"),
        cc: Some("8.0"),
        mig: Some("Enabled"),
        virtualization: Some("Pass-Through"),
        ..ONE
    },
    RealLog {
        file: "netdata-rtx-2080-win",
        driver: Some("516.59"),
        cuda: Some("11.7"),
        name: Some("NVIDIA GeForce RTX 2080"),
        memory_mib: Some(8192),
        device: Some("0x1e87"),
        subsystem: Some("0x37af1458"),
        cc: Some("7.5"),
        ..ONE
    },
    RealLog {
        file: "netdata-rtx-3060",
        driver: Some("515.65.01"),
        cuda: Some("11.7"),
        name: Some("NVIDIA GeForce RTX 3060 Laptop GPU"),
        memory_mib: Some(6144),
        device: Some("0x2520"),
        subsystem: Some("0x0a831028"),
        cc: Some("8.6"),
        ..ONE
    },
    RealLog {
        file: "netdata-rtx-4090-driver-535",
        driver: Some("535.86.05"),
        cuda: Some("12.2"),
        name: Some("NVIDIA GeForce RTX 4090"),
        memory_mib: Some(24564),
        device: Some("0x2684"),
        subsystem: Some("0x40bf1458"),
        cc: Some("8.9"),
        ..ONE
    },
    RealLog {
        file: "netdata-tesla-p100",
        driver: Some("510.47.03"),
        cuda: Some("11.6"),
        name: Some("Tesla P100-PCIE-16GB"),
        memory_mib: Some(16384),
        device: Some("0x15f8"),
        subsystem: Some("0x118f10de"),
        cc: Some("6.0"),
        virtualization: Some("Pass-Through"),
        ..ONE
    },
    RealLog {
        file: "telegraf-a100-sxm4-v12",
        attached: Some(4),
        driver: Some("535.54.03"),
        cuda: Some("12.2"),
        name: Some("NVIDIA A100-SXM4-80GB"),
        memory_mib: Some(81920),
        device: Some("0x20b2"),
        subsystem: Some("0x147f10de"),
        cc: Some("8.0"),
        mig: Some("Enabled"),
        ..ONE
    },
    // AWS g5: the PCI id fields say `000000DE`, no id; the name finds the card.
    RealLog {
        file: "telegraf-a10g",
        driver: Some("515.105.01"),
        cuda: Some("11.7"),
        name: Some("NVIDIA A10G"),
        memory_mib: Some(23028),
        cc: Some("8.6"),
        virtualization: Some("Pass-Through"),
        ..ONE
    },
    // Driver 418 did not know the card yet: `Graphics Device` is no name.
    RealLog {
        file: "telegraf-gtx-1660-ti",
        driver: Some("418.43"),
        cuda: Some("10.1"),
        memory_mib: Some(5912),
        device: Some("0x2184"),
        subsystem: Some("0x3fc81458"),
        cc: Some("7.5"),
        ..ONE
    },
    RealLog {
        file: "telegraf-quadro-p2000-v12",
        driver: Some("525.125.06"),
        cuda: Some("12.0"),
        name: Some("Quadro P2000"),
        memory_mib: Some(5120),
        device: Some("0x1c30"),
        subsystem: Some("0x11b31028"),
        cc: Some("6.1"),
        ..ONE
    },
    RealLog {
        file: "telegraf-quadro-p400",
        driver: Some("418.43"),
        cuda: Some("10.1"),
        name: Some("Quadro P400"),
        memory_mib: Some(1998),
        device: Some("0x1cb3"),
        subsystem: Some("0x11be10de"),
        cc: Some("6.1"),
        ..ONE
    },
    RealLog {
        file: "telegraf-rtx-3060-v12",
        driver: Some("570.124.04"),
        cuda: Some("12.8"),
        name: Some("NVIDIA GeForce RTX 3060"),
        memory_mib: Some(12288),
        device: Some("0x2487"),
        subsystem: Some("0x36583842"),
        cc: Some("8.6"),
        ..ONE
    },
    RealLog {
        file: "telegraf-rtx-3080-v12",
        driver: Some("536.40"),
        cuda: Some("12.2"),
        name: Some("NVIDIA GeForce RTX 3080"),
        memory_mib: Some(10240),
        device: Some("0x2216"),
        subsystem: Some("0x161219da"),
        cc: Some("8.6"),
        virtualization: Some("Pass-Through"),
        ..ONE
    },
    RealLog {
        file: "telegraf-rtx-3080-v13",
        driver: Some("595.58.03"),
        cuda: Some("13.2"),
        name: Some("NVIDIA GeForce RTX 3080"),
        memory_mib: Some(10240),
        device: Some("0x2216"),
        subsystem: Some("0x161219da"),
        cc: Some("8.6"),
        ..ONE
    },
    // The PCI ids were redacted by the one who published it.
    RealLog {
        file: "telegraf-rtx-3090-v12",
        driver: Some("525.147.05"),
        cuda: Some("12.0"),
        name: Some("NVIDIA GeForce RTX 3090"),
        memory_mib: Some(24576),
        cc: Some("8.6"),
        virtualization: Some("Pass-Through"),
        ..ONE
    },
    RealLog {
        file: "telegraf-rtx-4000-sff-ada-v13",
        driver: Some("595.84"),
        cuda: Some("13.2"),
        name: Some("NVIDIA RTX 4000 SFF Ada Generation"),
        memory_mib: Some(20475),
        device: Some("0x27b0"),
        subsystem: Some("0x16fa10de"),
        cc: Some("8.9"),
        ..ONE
    },
    RealLog {
        file: "telegraf-tesla-t4",
        driver: Some("515.105.01"),
        cuda: Some("11.7"),
        name: Some("Tesla T4"),
        memory_mib: Some(15360),
        device: Some("0x1eb8"),
        subsystem: Some("0x12a210de"),
        cc: Some("7.5"),
        virtualization: Some("Pass-Through"),
        ..ONE
    },
    RealLog {
        file: "datakit-gtx-1050-1",
        driver: Some("515.65.01"),
        cuda: Some("11.7"),
        name: Some("NVIDIA GeForce GTX 1050"),
        memory_mib: Some(4096),
        device: Some("0x1c8d"),
        subsystem: Some("0x860a103c"),
        cc: Some("6.1"),
        ..ONE
    },
    RealLog {
        file: "datakit-gtx-1card",
        driver: Some("460.39"),
        cuda: Some("11.2"),
        name: Some("Tesla V100-PCIE-32GB"),
        memory_mib: Some(32510),
        device: Some("0x1db6"),
        subsystem: Some("0x124a10de"),
        cc: Some("7.0"),
        virtualization: Some("Pass-Through"),
        ..ONE
    },
    RealLog {
        file: "datakit-gtx-8card",
        gpus: 8,
        attached: Some(8),
        driver: Some("460.73.01"),
        cuda: Some("11.2"),
        name: Some("Tesla V100S-PCIE-32GB"),
        memory_mib: Some(32510),
        device: Some("0x1df6"),
        subsystem: Some("0x13d610de"),
        cc: Some("7.0"),
        virtualization: Some("Pass-Through"),
        ..ONE
    },
    // Azure NC (K80): `cuda_version` says `Not Found`.
    RealLog {
        file: "pai-nvidia_smi_out_of_order",
        gpus: 4,
        attached: Some(4),
        driver: Some("430.26"),
        name: Some("Tesla K80"),
        memory_mib: Some(11441),
        device: Some("0x102d"),
        subsystem: Some("0x106c10de"),
        cc: Some("3.7"),
        virtualization: Some("Pass-Through"),
        ..ONE
    },
    // Cut by its publisher to name and driver; `GeForce GT 730` is a Kepler or a Fermi card.
    RealLog {
        file: "pai-nvidia_smi_outdated_gpu",
        driver: Some("384.111"),
        name: Some("GeForce GT 730"),
        virtualization: None,
        ..ONE
    },
    // Driver 384 printed no `cuda_version`; the log was cut to 2 of 6 GPUs.
    RealLog {
        file: "pai-nvidia_smi_sample",
        gpus: 2,
        attached: Some(6),
        driver: Some("384.66"),
        name: Some("GeForce GTX 1070"),
        memory_mib: Some(8112),
        device: Some("0x1b81"),
        subsystem: Some("0x37031458"),
        cc: Some("6.1"),
        ..ONE
    },
    // Colorful's subsystem id has device 0x0000: still an id.
    RealLog {
        file: "pai-nvidia_smi_sample_ecc_unsupported",
        gpus: 2,
        attached: Some(2),
        driver: Some("410.73"),
        cuda: Some("10.0"),
        name: Some("GeForce RTX 2080 Ti"),
        memory_mib: Some(10989),
        device: Some("0x1e04"),
        subsystem: Some("0x00007377"),
        cc: Some("7.5"),
        ..ONE
    },
    RealLog {
        file: "a0s-nvidia-smi-3",
        gpus: 2,
        attached: Some(2),
        driver: Some("460.27.04"),
        cuda: Some("11.2"),
        name: Some("GeForce GTX 1080"),
        memory_mib: Some(8116),
        device: Some("0x1b80"),
        subsystem: Some("0x37021458"),
        cc: Some("6.1"),
        ..ONE
    },
    RealLog {
        file: "a0s-nvidia-smi-4",
        driver: Some("418.56"),
        cuda: Some("10.1"),
        name: Some("Quadro P2000"),
        memory_mib: Some(5059),
        device: Some("0x1c30"),
        subsystem: Some("0x11b310de"),
        cc: Some("6.1"),
        ..ONE
    },
    RealLog {
        file: "lampaa-smi_test_1",
        driver: Some("436.48"),
        cuda: Some("10.1"),
        name: Some("GeForce GTX 1050"),
        memory_mib: Some(2048),
        device: Some("0x1c8d"),
        subsystem: Some("0x11c81462"),
        cc: Some("6.1"),
        ..ONE
    },
    RealLog {
        file: "lampaa-smi_test_3",
        driver: Some("440.59"),
        cuda: Some("10.2"),
        name: Some("GeForce GTX 1060 6GB"),
        memory_mib: Some(6077),
        device: Some("0x1c03"),
        subsystem: Some("0x371a1458"),
        cc: Some("6.1"),
        ..ONE
    },
    RealLog {
        file: "lampaa-smi_test_4",
        driver: Some("440.59"),
        cuda: Some("10.2"),
        name: Some("GeForce GTX 1650 SUPER"),
        memory_mib: Some(3911),
        device: Some("0x2187"),
        subsystem: Some("0x401b1458"),
        cc: Some("7.5"),
        ..ONE
    },
    // Subsystem `00000000`: none.
    RealLog {
        file: "lampaa-smi_test_5",
        driver: Some("440.59"),
        cuda: Some("10.2"),
        name: Some("GeForce GT 730"),
        memory_mib: Some(2001),
        device: Some("0x1287"),
        cc: Some("3.5"),
        virtualization: None,
        ..ONE
    },
    RealLog {
        file: "lampaa-smi_test_6",
        driver: Some("450.80.02"),
        cuda: Some("11.0"),
        name: Some("Quadro P2200"),
        memory_mib: Some(5058),
        device: Some("0x1c31"),
        subsystem: Some("0x131b10de"),
        cc: Some("6.1"),
        ..ONE
    },
    RealLog {
        file: "lampaa-smi_test_7",
        driver: Some("418.56"),
        cuda: Some("10.1"),
        name: Some("GeForce GTX 1050 Ti"),
        memory_mib: Some(4040),
        device: Some("0x1c82"),
        subsystem: Some("0xa45419da"),
        cc: Some("6.1"),
        ..ONE
    },
    // A vGPU host: 4 × Tesla M10 (Maxwell) under the GRID host driver 390.
    RealLog {
        file: "itnovum-tesla-m10-host-vgpu",
        gpus: 4,
        attached: Some(4),
        driver: Some("390.94"),
        name: Some("Tesla M10"),
        memory_mib: Some(8191),
        device: Some("0x13bd"),
        subsystem: Some("0x116010de"),
        cc: Some("5.0"),
        virtualization: Some("Host VGPU"),
        ..ONE
    },
    // AWS g2 (GRID K520) on driver 352: no `cuda_version`, no virtualization element.
    RealLog {
        file: "rai-example1",
        driver: Some("352.99"),
        name: Some("GRID K520"),
        memory_mib: Some(4095),
        device: Some("0x118a"),
        subsystem: Some("0x101410de"),
        cc: Some("3.0"),
        virtualization: None,
        ..ONE
    },
    // The same with `--dtd`: the DTD inline before the log.
    RealLog {
        file: "rai-example2",
        driver: Some("352.99"),
        name: Some("GRID K520"),
        memory_mib: Some(4095),
        device: Some("0x118a"),
        subsystem: Some("0x101410de"),
        cc: Some("3.0"),
        virtualization: None,
        ..ONE
    },
];

/// Real `nvidia-smi -q -x` logs (tests/data/nvidia-smi-xml/README.md names their sources), from
/// driver 352 (Kepler, GRID K520, DTD inline) to 595 (Ampere, Ada): every value read is the
/// right one, a no-value word (`Not Found`, `N/A`, `[REDACTED]`, `000000DE`, `Graphics
/// Device`) is no value, and the GPU id table gives each GPU's compute capability.
#[test]
fn real_nvidia_smi_logs_are_read_with_no_wrong_value() {
    use gpu_doctor::parse::nvidia_smi::parse_xml;
    let m = manifest::embedded();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/nvidia-smi-xml");
    let files = std::fs::read_dir(dir)
        .expect("the logs' folder")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "xml"))
        })
        .count();
    assert_eq!(files, REAL_LOGS.len(), "every log in {dir} has its case");
    assert!(REAL_LOGS.len() >= 30);
    for case in REAL_LOGS {
        let file = case.file;
        let text = std::fs::read_to_string(format!("{dir}/{file}.xml")).expect("readable");
        let log = parse_xml(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(log.driver_version.as_deref(), case.driver, "{file}");
        assert_eq!(log.cuda_version.as_deref(), case.cuda, "{file}");
        assert_eq!(log.attached_gpus, case.attached, "{file}");
        assert_eq!(log.gpus.len(), case.gpus, "{file}");
        let g = &log.gpus[0];
        assert_eq!(g.name.as_deref(), case.name, "{file}");
        assert_eq!(g.memory_total_mib, case.memory_mib, "{file}");
        assert_eq!(g.pci_device_id.as_deref(), case.device, "{file}");
        let vendor = case.device.map(|_| "0x10de");
        assert_eq!(g.pci_vendor_id.as_deref(), vendor, "{file}");
        assert_eq!(g.pci_subsystem_id.as_deref(), case.subsystem, "{file}");
        assert_eq!(g.mig_mode.as_deref(), case.mig, "{file}");
        assert_eq!(
            g.virtualization_mode.as_deref(),
            case.virtualization,
            "{file}"
        );
        // As `fill` does: the PCI id (and subsystem), else the name.
        let subsystem = case.subsystem.map(|s| {
            let v = u32::from_str_radix(&s[2..], 16).expect("hex");
            ((v & 0xffff) as u16, (v >> 16) as u16)
        });
        let found = match case.device {
            Some(device) => {
                let id = u16::from_str_radix(&device[2..], 16).expect("hex");
                m.gpu_ids.identify(id, subsystem)
            }
            None => case.name.and_then(|n| m.gpu_ids.by_name(n)),
        };
        assert_eq!(found.and_then(|f| f.compute_capability), case.cc, "{file}");
    }
}

/// The spec-table join (`scripts/gpu-ids-data/spec-join.csv`) as `(device, subsystem) ->
/// spec row` ("" where the product has no row).
fn spec_join() -> std::collections::HashMap<(String, String), String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/gpu-ids-data/spec-join.csv"
    );
    let text = std::fs::read_to_string(path).expect("spec-join.csv");
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .skip(1)
        .map(|line| {
            let cells = csv_cells(line);
            ((cells[0].clone(), cells[1].clone()), cells[2].clone())
        })
        .collect()
}

/// The cells of one CSV line as Python's csv module writes them (quotes around cells with a
/// comma, `""` for a quote).
fn csv_cells(line: &str) -> Vec<String> {
    let mut cells = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cells.last_mut().expect("cell").push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(String::new()),
            _ => cells.last_mut().expect("cell").push(c),
        }
    }
    cells
}

#[test]
fn the_spec_ids_generator_reproduces_the_model_tables_ids() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .arg(format!("{root}/scripts/gen-gpu-spec-ids.py"))
        .arg("--check")
        .output();
    let Ok(out) = out else {
        eprintln!("python3 is not installed: generator check skipped");
        return;
    };
    assert!(
        out.status.success(),
        "scripts/gen-gpu-spec-ids.py --check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every id the id table lists whose product has a model row reaches that row and no other, by
/// its id (and subsystem, where NVIDIA shares the id); an id whose name fits a model row but
/// that the join has not decided fails, as does one decided to have no row that a lookup
/// reaches anyway.
#[test]
fn every_id_whose_model_has_a_spec_row_reaches_exactly_that_row() {
    let m = manifest::embedded();
    let join = spec_join();
    let mut failures = Vec::new();
    let mut reached = 0;
    for row in &m.gpu_ids.devices.rows {
        let (device, sub) = (row.0.clone(), row.1.clone());
        // nvidia-smi's subsystem form: device then vendor.
        let smi_sub = sub
            .split_once(':')
            .map(|(vendor, device)| format!("0x{device}{vendor}"));
        let decided = join
            .get(&(device.clone(), sub.clone()))
            .or_else(|| join.get(&(device.clone(), String::new())));
        let got = m
            .gpus
            .by_pci(&device, smi_sub.as_deref())
            .map(|gpu| gpu.name.as_str());
        let fits = m.gpus.by_name(&row.5);
        match decided {
            None if !fits.is_empty() => failures.push(format!(
                "{device} {sub} ({}) fits {:?} but spec-join.csv does not decide it",
                row.5,
                fits.iter().map(|g| &g.name).collect::<Vec<_>>()
            )),
            None if got.is_some() => {
                failures.push(format!(
                    "{device} {sub} reaches {got:?} though nothing joins it"
                ));
            }
            None => {}
            Some(want) => {
                let want = (!want.is_empty()).then_some(want.as_str());
                if got == want {
                    reached += usize::from(got.is_some());
                } else {
                    failures.push(format!(
                        "{device} {sub} ({}): the lookup reaches {got:?}, the join says {want:?}",
                        row.5
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(reached > 150, "only {reached} ids reach a row");
    // The case: a real H100 80GB HBM3 reaches the SXM5 row by its id alone; an id
    // NVIDIA shares reaches nothing without its subsystem.
    let h100 = m.gpus.by_pci("0x233010DE", None).map(|g| g.name.as_str());
    assert_eq!(h100, Some("H100 SXM5"));
    assert!(m.gpus.by_pci("0x25b6", None).is_none());
    let a2 = m.gpus.by_pci("0x25b6", Some("0x157e10de"));
    assert_eq!(a2.map(|g| g.name.as_str()), Some("A2"));
}
