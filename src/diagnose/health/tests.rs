use super::pcie::{lane_gbs, lspci_id, same_bus_id};
use super::*;
use crate::diagnose::test_support::{has_evidence, ids, one};
use crate::report::{EccCounts, EnvVar, PciDevice, Severity};

fn run(report: &Report) -> Vec<Finding> {
    findings(report, crate::manifest::embedded())
}

/// An RTX 3090 as nvidia-smi describes it: idle, cool, healthy.
fn gpu(index: u32) -> Gpu {
    Gpu {
        index,
        name: Some("NVIDIA GeForce RTX 3090".into()),
        uuid: Some(format!("GPU-3090000{index}-aaaa-bbbb-cccc-dddddddddddd")),
        pci_bus_id: Some(format!("00000000:0{}:00.0", index + 1)),
        pci_device_id: Some("0x2204".into()),
        compute_capability: Some("8.6".into()),
        memory_total_mib: Some(24576),
        temperature_c: Some(38),
        temperature_slowdown_c: Some(90),
        power_draw_w: Some(24.5),
        power_limit_w: Some(350.0),
        clock_sm_mhz: Some(210),
        clock_sm_max_mhz: Some(2100),
        utilization_pct: Some(0),
        pcie_gen_current: Some(1),
        pcie_gen_max: Some(4),
        pcie_width_current: Some(16),
        pcie_width_max: Some(16),
        source: "nvidia-smi".into(),
        ..Gpu::default()
    }
}

fn busy_gpu(index: u32) -> Gpu {
    Gpu {
        utilization_pct: Some(97),
        clock_sm_mhz: Some(1890),
        pcie_gen_current: Some(4),
        power_draw_w: Some(341.0),
        temperature_c: Some(71),
        ..gpu(index)
    }
}

fn machine(gpus: Vec<Gpu>) -> Report {
    Report {
        gpus,
        ..Report::default()
    }
}

#[test]
fn healthy_idle_and_busy_gpus_give_nothing() {
    assert!(run(&machine(vec![gpu(0), busy_gpu(1)])).is_empty());
}

#[test]
fn a_hot_busy_gpu_is_thermal_throttling_with_its_readings() {
    let mut g = busy_gpu(0);
    g.temperature_c = Some(91);
    g.clock_sm_mhz = Some(1005);
    g.throttle_reasons = vec![
        "sw_power_cap".into(),
        "hw_slowdown".into(),
        "hw_thermal_slowdown".into(),
    ];
    let found = run(&machine(vec![g, busy_gpu(1)]));
    let f = one(&found, "gpu-thermal-throttle");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.title.starts_with("GPU 0 is throttling"), "{}", f.title);
    assert!(f.title.contains("too hot"), "{}", f.title);
    assert!(
        has_evidence(
            f,
            "active slowdown reasons hw_slowdown, hw_thermal_slowdown"
        ),
        "{f:#?}"
    );
    assert!(
        has_evidence(f, "temperature 91 °C (slowdown at 90 °C)"),
        "{f:#?}"
    );
    assert!(
        has_evidence(f, "SM clock 1005 MHz of 2100 MHz max (47%)"),
        "{f:#?}"
    );
    assert!(
        has_evidence(f, "power draw 341.0 W of 350.0 W limit"),
        "{f:#?}"
    );
    assert_eq!(f.subjects, ["gpu:0"]);
}

#[test]
fn power_cap_alone_and_idle_hw_slowdown_are_not_throttling() {
    let mut capped = busy_gpu(0);
    capped.throttle_reasons = vec!["sw_power_cap".into()];
    // NVML: hw_slowdown "may be also reported during PState or clock change".
    let mut idle = gpu(1);
    idle.throttle_reasons = vec!["hw_slowdown".into()];
    assert!(run(&machine(vec![capped, idle])).is_empty());
}

#[test]
fn a_power_brake_counts_even_when_cool_and_says_so() {
    let mut g = gpu(0);
    g.throttle_reasons = vec!["hw_slowdown".into(), "hw_power_brake_slowdown".into()];
    let found = run(&machine(vec![g]));
    let f = one(&found, "gpu-thermal-throttle");
    assert!(f.title.contains("power supply"), "{}", f.title);
    assert!(
        f.fix
            .as_deref()
            .is_some_and(|x| x.contains("PCIe power connector"))
    );
}

#[test]
fn gpus_known_only_from_the_bus_are_not_judged() {
    let mut g = gpu(0);
    g.source = "pci".into();
    g.throttle_reasons = vec!["sw_thermal_slowdown".into()];
    g.ecc.volatile_uncorrected = Some(3);
    assert!(run(&machine(vec![g])).is_empty());
}

fn a100(index: u32, ecc: EccCounts) -> Gpu {
    Gpu {
        name: Some("NVIDIA A100-SXM4-40GB".into()),
        pci_device_id: Some("0x20b0".into()),
        ecc,
        ..gpu(index)
    }
}

#[test]
fn uncorrectable_errors_since_driver_load_are_an_error() {
    let bad = EccCounts {
        enabled: Some(true),
        volatile_uncorrected: Some(2),
        aggregate_uncorrected: Some(2),
        remapped_uncorrectable: Some(1),
        remapped_pending: Some(true),
        ..EccCounts::default()
    };
    let found = run(&machine(vec![a100(0, EccCounts::default()), a100(1, bad)]));
    let f = one(&found, "gpu-ecc-errors");
    assert_eq!(f.severity, Severity::Error);
    assert!(
        has_evidence(
            f,
            "GPU 1 (NVIDIA A100-SXM4-40GB): 2 uncorrectable ECC error(s) since the driver loaded"
        ),
        "{f:#?}"
    );
    assert!(has_evidence(f, "row remapping is pending"), "{f:#?}");
    assert!(has_evidence(f, "1 row(s) remapped"), "{f:#?}");
    assert_eq!(f.subjects, ["gpu:1"]);
    let fix = f.fix.as_deref().unwrap_or_default();
    assert!(fix.contains("nvidia-smi -r -i 1"), "{fix}");
}

#[test]
fn a_failed_remap_asks_for_service() {
    let failed = EccCounts {
        remapped_failure: Some(true),
        ..EccCounts::default()
    };
    let found = run(&machine(vec![a100(0, failed)]));
    let f = one(&found, "gpu-ecc-errors");
    assert_eq!(f.severity, Severity::Error);
    assert!(f.fix.as_deref().is_some_and(|x| x.contains("replacement")));
}

#[test]
fn past_uncorrectable_errors_are_a_warning_and_corrected_ones_nothing() {
    let past = EccCounts {
        volatile_uncorrected: Some(0),
        aggregate_uncorrected: Some(4),
        aggregate_corrected: Some(1_000_000),
        retired_pages: Some(3),
        ..EccCounts::default()
    };
    let found = run(&machine(vec![a100(0, past)]));
    let f = one(&found, "gpu-ecc-errors");
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        has_evidence(f, "4 uncorrectable ECC error(s) in the GPU's lifetime"),
        "{f:#?}"
    );
    assert!(has_evidence(f, "3 page(s) retired"), "{f:#?}");

    let corrected_only = EccCounts {
        volatile_corrected: Some(50_000),
        aggregate_corrected: Some(1_000_000),
        volatile_uncorrected: Some(0),
        aggregate_uncorrected: Some(0),
        retired_pending: Some(false),
        remapped_pending: Some(false),
        remapped_failure: Some(false),
        ..EccCounts::default()
    };
    assert!(run(&machine(vec![a100(0, corrected_only)])).is_empty());
}

#[test]
fn a_busy_gpu_on_a_narrow_link_is_degraded() {
    let mut g = busy_gpu(0);
    g.pcie_width_current = Some(8);
    let found = run(&machine(vec![g]));
    let f = one(&found, "pcie-link-degraded");
    assert_eq!(f.severity, Severity::Warning);
    assert!(f.title.contains("gen 4 x8 of gen 4 x16"), "{}", f.title);
    assert!(
        has_evidence(
            f,
            "PCIe gen 4 of 4, width x8 of x16 (about 16 of 32 GB/s each way)"
        ),
        "{f:#?}"
    );
    assert!(has_evidence(f, "utilization 97%"), "{f:#?}");
    assert!(
        f.fix
            .as_deref()
            .is_some_and(|x| x.contains("lspci -vv -s 0000:01:00.0"))
    );
}

#[test]
fn idle_links_and_light_desktop_load_are_not_judged() {
    // Idle: gen 1 of 4 (power saving) and a narrower link, as in a pass-through VM.
    let mut idle = gpu(0);
    idle.pcie_width_current = Some(8);
    // A desktop at P8: some utilization, clocks near idle, link still at gen 1.
    let mut desktop = gpu(1);
    desktop.utilization_pct = Some(4);
    assert!(run(&machine(vec![idle, desktop])).is_empty());
}

#[test]
fn missing_link_values_come_from_the_pci_bus() {
    let mut g = busy_gpu(0);
    g.pcie_gen_current = None;
    g.pcie_gen_max = None;
    let mut r = machine(vec![g]);
    r.pci_devices = vec![PciDevice {
        address: "0000:01:00.0".into(),
        vendor: "nvidia".into(),
        link_gen_current: Some(3),
        link_gen_max: Some(4),
        link_width_current: Some(16),
        link_width_max: Some(16),
        ..PciDevice::default()
    }];
    let found = run(&r);
    let f = one(&found, "pcie-link-degraded");
    assert!(
        has_evidence(f, "PCIe gen 3 of 4, width x16 of x16"),
        "{f:#?}"
    );
    // Without the bus values nothing is known, and nothing is said.
    r.pci_devices.clear();
    assert!(run(&r).is_empty());
}

#[test]
fn two_models_are_mixed_and_the_fix_names_each_group() {
    let v100 = |index| Gpu {
        name: Some("Tesla V100-SXM2-16GB".into()),
        pci_device_id: Some("0x1db1".into()),
        compute_capability: Some("7.0".into()),
        memory_total_mib: Some(16384),
        ..gpu(index)
    };
    let r = machine(vec![
        a100(0, EccCounts::default()),
        a100(1, EccCounts::default()),
        v100(2),
        v100(3),
    ]);
    let found = run(&r);
    let f = one(&found, "mixed-gpu-models");
    assert_eq!(f.severity, Severity::Warning);
    assert_eq!(
        f.title,
        "Different GPU models in one machine: 2x NVIDIA A100-SXM4-40GB, 2x Tesla V100-SXM2-16GB"
    );
    assert!(
        has_evidence(
            f,
            "GPU 2: Tesla V100-SXM2-16GB (compute capability 7.0, 16384 MiB"
        ),
        "{f:#?}"
    );
    let fix = f.fix.as_deref().unwrap_or_default();
    assert!(fix.contains("CUDA_VISIBLE_DEVICES=0,1`"), "{fix}");
    assert!(fix.contains("CUDA_VISIBLE_DEVICES=2,3`"), "{fix}");
    assert_eq!(f.subjects.len(), 4);
}

#[test]
fn same_models_or_a_visible_set_of_one_model_are_not_mixed() {
    assert!(ids(&run(&machine(vec![gpu(0), gpu(1)]))).is_empty());

    let other = Gpu {
        name: Some("NVIDIA GeForce RTX 4090".into()),
        uuid: Some("GPU-4090aaaa-0000-0000-0000-000000000000".into()),
        ..gpu(1)
    };
    let mut r = machine(vec![gpu(0), other]);
    assert_eq!(ids(&run(&r)), ["mixed-gpu-models"]);
    for value in ["1", "GPU-4090aaaa"] {
        r.environment = vec![EnvVar {
            name: "CUDA_VISIBLE_DEVICES".into(),
            value: value.into(),
        }];
        assert!(run(&r).is_empty(), "CUDA_VISIBLE_DEVICES={value}");
    }
    // Indices name GPUs in CUDA's order, which the report cannot see: still mixed.
    r.environment = vec![EnvVar {
        name: "CUDA_VISIBLE_DEVICES".into(),
        value: "0,1".into(),
    }];
    let found = run(&r);
    assert!(has_evidence(
        one(&found, "mixed-gpu-models"),
        "CUDA_VISIBLE_DEVICES=0,1"
    ));
}

#[test]
fn a_display_only_card_beside_compute_gpus_is_left_out() {
    let gt710 = |index| Gpu {
        name: Some("NVIDIA GeForce GT 710".into()),
        compute_capability: Some("3.5".into()),
        uuid: Some(format!("GPU-710{index}aaaa-0000-0000-0000-000000000000")),
        ..gpu(index)
    };
    assert!(ids(&run(&machine(vec![gt710(0), gpu(1), gpu(2)]))).is_empty());
    let other = Gpu {
        name: Some("NVIDIA GeForce RTX 4090".into()),
        compute_capability: Some("8.9".into()),
        ..gpu(2)
    };
    let found = run(&machine(vec![gt710(0), gpu(1), other]));
    let f = one(&found, "mixed-gpu-models");
    assert!(
        f.title.contains("1x NVIDIA GeForce RTX 4090"),
        "{}",
        f.title
    );
    assert!(!f.title.contains("GT 710"), "{}", f.title);
    assert!(
        has_evidence(f, "GPU 0: NVIDIA GeForce GT 710 left out"),
        "{f:#?}"
    );
}

#[test]
fn unnamed_gpus_are_compared_by_their_table_name() {
    let bare = |index, id: &str| Gpu {
        index,
        pci_device_id: Some(id.into()),
        source: "pci".into(),
        ..Gpu::default()
    };
    let found = run(&machine(vec![bare(0, "0x20b0"), bare(1, "0x1db1")]));
    let f = one(&found, "mixed-gpu-models");
    assert!(f.title.contains("A100 40GB SXM4"), "{}", f.title);
    // An unknown device id is not compared at all.
    assert!(run(&machine(vec![bare(0, "0x20b0"), bare(1, "0xffff")])).is_empty());
}

#[test]
fn bus_ids_compare_across_spellings() {
    assert!(same_bus_id("00000000:01:00.0", "0000:01:00.0"));
    assert!(same_bus_id("00000000:1E:00.0", "0000:1e:00.0"));
    assert!(!same_bus_id("00000000:01:00.0", "0000:02:00.0"));
    assert_eq!(lspci_id("00000000:1E:00.0"), "0000:1E:00.0");
    assert_eq!(lane_gbs(0), None);
    assert_eq!(lane_gbs(7), None);
}

// gpu-peer-via-iommu

/// Two GPUs on the bus (the `gpu()` bus ids) with the nvidia module loaded, each GPU's IOMMU
/// group of `domain` (None: no group, the IOMMU off), joined as `link` says in `topo -m`.
fn iommu_pair(domain: Option<&str>, link: Option<&str>) -> Report {
    let mut r = machine(vec![gpu(0), gpu(1)]);
    r.kernel.nvidia_loaded = true;
    r.pci_devices = ["0000:01:00.0", "0000:02:00.0"]
        .into_iter()
        .map(|address| PciDevice {
            address: address.into(),
            vendor: "nvidia".into(),
            iommu_domain: domain.map(str::to_string),
            ..PciDevice::default()
        })
        .collect();
    r.topology = link.and_then(|l| {
        crate::parse::nvidia_smi::parse_topo(&format!(
            "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t{l}\t0-63\t0\nGPU1\t{l}\t X \t0-63\t0\n"
        ))
    });
    r
}

#[test]
fn gpus_in_translated_iommu_groups_without_nvlink_warn_with_the_distribution_words() {
    for domain in ["DMA", "DMA-FQ"] {
        let mut r = iommu_pair(Some(domain), Some("PHB"));
        r.host.os_id = Some("ubuntu".into());
        let found = run(&r);
        let f = one(&found, "gpu-peer-via-iommu");
        assert_eq!(f.severity, Severity::Warning);
        assert!(
            has_evidence(f, &format!("0000:01:00.0: IOMMU group type {domain}")),
            "{f:#?}"
        );
        assert!(
            has_evidence(f, "GPU 0 (0000:01:00.0) and GPU 1 (0000:02:00.0): PHB"),
            "{f:#?}"
        );
        let fix = f.fix.as_deref().unwrap();
        assert!(
            fix.starts_with("Confirm: run the job with `NCCL_P2P_DISABLE=1`"),
            "{fix}"
        );
        assert!(
            fix.contains("`iommu=pt` to `GRUB_CMDLINE_LINUX_DEFAULT`"),
            "{fix}"
        );
        assert_eq!(f.subjects, ["gpu:0", "gpu:1"]);
    }
    // Fedora's words; no topology read (a pair it does not show is PCIe).
    let mut r = iommu_pair(Some("DMA"), None);
    r.host.os_id = Some("fedora".into());
    let found = run(&r);
    let f = one(&found, "gpu-peer-via-iommu");
    assert!(
        f.fix
            .as_deref()
            .unwrap()
            .contains("grubby --update-kernel=ALL --args=\"iommu=pt\"")
    );
    assert!(has_evidence(f, "no NVLink known between them"), "{f:#?}");
}

#[test]
fn pass_through_no_iommu_nvlink_one_gpu_or_no_driver_give_no_iommu_warning() {
    let quiet = |r: &Report| !ids(&run(r)).contains(&"gpu-peer-via-iommu");
    // iommu=pt, the IOMMU off, and a VFIO group are not translated for this host's driver.
    assert!(quiet(&iommu_pair(Some("identity"), Some("PHB"))));
    assert!(quiet(&iommu_pair(None, Some("PHB"))));
    assert!(quiet(&iommu_pair(Some("unmanaged"), Some("PHB"))));
    // An NVLink bridge carries the peer traffic.
    assert!(quiet(&iommu_pair(Some("DMA-FQ"), Some("NV4"))));
    // One GPU translated only.
    let mut r = iommu_pair(Some("DMA"), Some("PHB"));
    r.pci_devices[1].iommu_domain = Some("identity".into());
    assert!(quiet(&r));
    // No driver loaded: no peer traffic yet.
    let mut r = iommu_pair(Some("DMA"), Some("PHB"));
    r.kernel.nvidia_loaded = false;
    assert!(quiet(&r));
    // An NVSwitch system is the fabric rules'.
    let mut r = iommu_pair(Some("DMA"), None);
    r.pci_devices.push(PciDevice {
        address: "0000:05:00.0".into(),
        vendor: "nvidia".into(),
        nvswitch: true,
        ..PciDevice::default()
    });
    assert!(quiet(&r));
}
