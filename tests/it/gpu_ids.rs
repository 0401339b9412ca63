//! The GPU id table (`manifests/gpu-ids.toml`) end to end: the generator reproduces the file,
//! every id in it is identified on a machine with no driver, and the planner plans for every
//! one of compute capability 5.0 or more.

use std::process::Command;

use gpu_doctor::manifest::{self, Manifests};
use gpu_doctor::plan::{Target, Via};
use gpu_doctor::report::{Gpu, HostInfo, PciDevice, Report};
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
            assert_eq!(gpu.identified_by.as_deref(), Some("table"), "{}", row.0);
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
    assert_eq!(gpu.identified_by.as_deref(), Some("id-block"));
    assert_eq!(gpu.name, None, "a block names no product");
    // 0x27ff: AD104's block 0x2780.
    let gpu = identified("0x27ff", None);
    assert_eq!(gpu.compute_capability.as_deref(), Some("8.9"));
    assert_eq!(gpu.identified_by.as_deref(), Some("id-block"));
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
    assert_eq!(gpu.identified_by.as_deref(), Some("table"));
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

/// Real `nvidia-smi -q -x` logs (tests/data/nvidia-smi-xml/README.md names their sources):
/// every value read is the right one, and the GPU id table gives each GPU's compute
/// capability from its PCI id.
#[test]
fn real_nvidia_smi_logs_are_read_with_no_wrong_value() {
    use gpu_doctor::parse::nvidia_smi::parse_xml;
    // file, name, memory MiB, driver, CUDA, device id, subsystem id, cc
    let cases = [
        (
            "netdata-a100-sxm4-mig",
            "NVIDIA A100-SXM4-40GB",
            40960,
            "510.47.03",
            "11.6",
            "0x20b0",
            "0x134f10de",
            "8.0",
        ),
        (
            "netdata-rtx-2080-win",
            "NVIDIA GeForce RTX 2080",
            8192,
            "516.59",
            "11.7",
            "0x1e87",
            "0x37af1458",
            "7.5",
        ),
        (
            "netdata-rtx-3060",
            "NVIDIA GeForce RTX 3060 Laptop GPU",
            6144,
            "515.65.01",
            "11.7",
            "0x2520",
            "0x0a831028",
            "8.6",
        ),
        (
            "netdata-rtx-4090-driver-535",
            "NVIDIA GeForce RTX 4090",
            24564,
            "535.86.05",
            "12.2",
            "0x2684",
            "0x40bf1458",
            "8.9",
        ),
        (
            "netdata-tesla-p100",
            "Tesla P100-PCIE-16GB",
            16384,
            "510.47.03",
            "11.6",
            "0x15f8",
            "0x118f10de",
            "6.0",
        ),
    ];
    let m = manifest::embedded();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/nvidia-smi-xml");
    for (file, name, memory, driver, cuda, device, subsystem, cc) in cases {
        let text = std::fs::read_to_string(format!("{dir}/{file}.xml")).expect("readable");
        let log = parse_xml(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(log.driver_version.as_deref(), Some(driver), "{file}");
        assert_eq!(log.cuda_version.as_deref(), Some(cuda), "{file}");
        assert_eq!(log.gpus.len(), 1, "{file}");
        let g = &log.gpus[0];
        assert_eq!(g.name.as_deref(), Some(name), "{file}");
        assert_eq!(g.memory_total_mib, Some(memory), "{file}");
        assert_eq!(g.pci_device_id.as_deref(), Some(device), "{file}");
        assert_eq!(g.pci_vendor_id.as_deref(), Some("0x10de"), "{file}");
        assert_eq!(g.pci_subsystem_id.as_deref(), Some(subsystem), "{file}");
        let id = u16::from_str_radix(&device[2..], 16).expect("hex");
        let found = m.gpu_ids.identify(id, None).expect("a known GPU");
        assert_eq!(found.compute_capability, Some(cc), "{file}");
        // The name alone finds the same compute capability.
        assert_eq!(
            m.gpu_ids.by_name(name).and_then(|i| i.compute_capability),
            Some(cc),
            "{file}"
        );
    }
}
