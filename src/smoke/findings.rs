//! What a smoke run means, as findings: driver errors explained in plain words, wrong results,
//! memory errors, and a card below what it should reach. Pure: run, report and tables in.

use super::driver::code;
use crate::diagnose::ids;
use crate::manifest::Manifests;
use crate::report::smoke::{DeviceResult, SmokeRun};
use crate::report::{Finding, Gpu, Report, Severity};

/// Below this share of the card's figure, a GPU is underperforming. 70%: cuBLASLt reaches
/// ~75–80% of the dense bf16 peak on a healthy Hopper card (779–787 of 989 TFLOP/s measured
/// here), and a device copy ~85% of the memory bandwidth; a throttled or mis-slotted card falls
/// well below.
pub(crate) const UNDERPERFORMING: f64 = 0.70;

/// Fills each device's expected figures from the GPU table (via the report's NVIDIA GPU of the
/// same CUDA index: the child runs with CUDA_DEVICE_ORDER=PCI_BUS_ID, NVML's order).
pub(crate) fn fill_expected(run: &mut SmokeRun, report: &Report, manifests: &Manifests) {
    for d in &mut run.devices {
        let Some(row) = manifest_row(report.nvidia_gpus().nth(d.index as usize), d, manifests)
        else {
            continue;
        };
        if let Some(b) = &mut d.bandwidth {
            b.expected_gbs = row.bandwidth_gbs;
        }
        if let Some(t) = &mut d.throughput {
            t.expected_fp32_tflops = row.tflops.fp32;
            t.expected_bf16_tflops = row.tflops.bf16_tensor;
        }
    }
}

/// The model row a device's figures come from: by the GPU's PCI ids (with its subsystem where
/// NVIDIA shares the id). By name only when the id is missing or newer than the id table: an id
/// the table lists but no model row takes is a product with no figures (an RTX 4090 Laptop GPU
/// is not an RTX 4090), and a name would give it another card's.
fn manifest_row<'m>(
    gpu: Option<&Gpu>,
    d: &DeviceResult,
    manifests: &'m Manifests,
) -> Option<&'m crate::manifest::Gpu> {
    let id = gpu.and_then(|g| g.pci_device_id.as_deref());
    if let Some(id) = id {
        let subsystem = gpu.and_then(|g| g.pci_subsystem_id.as_deref());
        if let Some(row) = manifests.gpus.by_pci(id, subsystem) {
            return Some(row);
        }
        let listed = crate::manifest::device_id(id)
            .and_then(|device| manifests.gpu_ids.identify(device, None))
            .is_some_and(|found| found.how == crate::manifest::Match::Listed);
        if listed {
            return None;
        }
    }
    let name = gpu.and_then(|g| g.name.as_deref()).or(d.name.as_deref())?;
    let rows = manifests.gpus.by_name(name);
    // Only trust a name match that names one model (H200 SXM and NVL differ in throughput).
    (rows.len() == 1).then(|| rows[0])
}

pub(super) fn finding(
    kind: &'static ids::Kind,
    severity: Severity,
    title: String,
    detail: &str,
    evidence: Vec<String>,
    fix: &str,
    gpu: u32,
) -> Finding {
    Finding {
        id: kind.id.to_string(),
        severity,
        title,
        detail: detail.to_string(),
        evidence,
        fix: Some(fix.to_string()),
        explains: Vec::new(),
        subjects: vec![crate::report::Subject::Gpu(gpu)],
        fix_target: crate::report::FixTarget::Here,
    }
}

/// Findings from a smoke run.
#[must_use]
pub(crate) fn findings(run: &SmokeRun, report: &Report) -> Vec<Finding> {
    let mut out = Vec::new();
    for d in &run.devices {
        let label = format!(
            "GPU {} ({})",
            d.index,
            d.name.as_deref().unwrap_or("unknown")
        );
        if let Some(e) = &d.error {
            out.push(driver_error_finding(d, &label, e));
        }
        if let Some(m) = d.matmul.as_ref().filter(|m| !m.passed) {
            out.push(finding(
                &ids::GPU_WRONG_RESULTS,
                Severity::Error,
                format!("{label} computed a wrong matrix product"),
                "The same fp32 matmul was run on the GPU and on the CPU; the GPU's result differs beyond \
                 fp32 rounding, has NaNs, or left elements unwritten. A GPU that computes wrongly \
                 corrupts training silently: take it out of service.",
                vec![format!(
                    "{}x{}x{}: max relative error {:.2e} (tolerance {:.0e}), {} wrong, {} unwritten",
                    m.size[0], m.size[1], m.size[2], m.max_rel_error, m.tolerance, m.wrong_elements, m.unwritten_elements
                )],
                "Check `nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER` and `sudo dmesg | grep Xid`; reset the GPU or reboot, and have it replaced if it repeats.",
                d.index,
            ));
        }
        if let Some(m) = d.memory.as_ref().filter(|m| !m.passed) {
            out.push(finding(
                &ids::GPU_MEMORY_ERRORS,
                Severity::Error,
                format!("{label} returned {} wrong words in a memory pattern test", m.errors),
                "Device memory written with a pattern did not read back the same. Faulty memory corrupts \
                 data without any error from CUDA.",
                vec![format!("{} MiB tested with {} patterns: {} mismatches", m.bytes / (1024 * 1024), m.patterns, m.errors)],
                "Run `nvidia-smi -q -d ECC,ROW_REMAPPER`; reset the GPU (`sudo nvidia-smi -r -i N`) or reboot; replace the GPU if errors persist.",
                d.index,
            ));
        }
        out.extend(underperforming(
            d,
            report.nvidia_gpus().nth(d.index as usize),
            &label,
        ));
    }
    out
}

fn driver_error_finding(
    d: &DeviceResult,
    label: &str,
    e: &crate::report::smoke::DriverError,
) -> Finding {
    let evidence = vec![format!(
        "{} failed: {} ({}): {}",
        e.call, e.name, e.code, e.message
    )];
    let (id, title, detail, fix) = match e.code {
        code::UNSUPPORTED_PTX_VERSION | code::INVALID_PTX => (
            &ids::DRIVER_TOO_OLD_FOR_PTX,
            format!("The driver cannot compile the test's PTX for {label}"),
            "CUDA programs ship PTX that the driver compiles for the GPU; a driver older than the \
             toolkit that made the PTX refuses it. Frameworks built with newer CUDA fail the same way \
             ('the provided PTX was compiled with an unsupported toolchain').",
            "Upgrade the NVIDIA driver (see `gpu-doctor plan`).",
        ),
        code::OUT_OF_MEMORY => (
            &ids::GPU_OUT_OF_MEMORY,
            format!("{label} ran out of memory during the smoke test"),
            "The test needs a few hundred MiB; another process probably holds the GPU's memory.",
            "See `nvidia-smi` for the processes using the GPU, and stop them or pick another GPU (`--device N`).",
        ),
        code::ECC_UNCORRECTABLE => (
            &ids::GPU_ECC_ERRORS,
            format!("{label} hit an uncorrectable ECC error"),
            "The GPU's memory reported an error it could not correct; the CUDA context is lost.",
            "Reset the GPU or reboot; check `nvidia-smi -q -d ECC,ROW_REMAPPER` and replace the GPU if it repeats.",
        ),
        code::SYSTEM_NOT_READY => (
            &ids::FABRIC_MANAGER_NOT_RUNNING,
            format!("CUDA is not ready on {label} (error 802)"),
            "On NVSwitch systems CUDA waits for the fabric manager; without it every context fails.",
            "`sudo systemctl enable --now nvidia-fabricmanager` (its version must match the driver's).",
        ),
        code::COMPAT_NOT_SUPPORTED_ON_DEVICE => (
            &ids::FORWARD_COMPAT_UNSUPPORTED,
            format!("A forward-compatibility libcuda was loaded on {label} (error 804)"),
            "The cuda-compat libcuda only works on data-center GPUs.",
            "Remove the compat folder from LD_LIBRARY_PATH, or upgrade the host driver.",
        ),
        code::SYSTEM_DRIVER_MISMATCH => (
            &ids::DRIVER_LIBRARY_MISMATCH,
            "The CUDA driver library does not match the kernel module (error 803)".to_string(),
            "The user-space driver and the loaded kernel module are different versions.",
            "Reboot, or reload the nvidia kernel modules.",
        ),
        code::STUB_LIBRARY => (
            &ids::STUB_LIBCUDA_ON_PATH,
            "The smoke test loaded a stub libcuda (error 34)".to_string(),
            "A link-time stub was found before the real driver library.",
            "Remove the `stubs` folder from LD_LIBRARY_PATH.",
        ),
        code::ILLEGAL_ADDRESS | code::LAUNCH_FAILED | code::UNKNOWN => (
            &ids::GPU_FAULT,
            format!("{label} faulted while running the smoke test"),
            "The test kernels are known-good; a fault here points at the GPU or driver (an Xid error \
             in the kernel log, a GPU that fell off the bus).",
            "Check `sudo dmesg | grep -i xid`; reset the GPU or reboot.",
        ),
        _ => (
            &ids::SMOKE_CUDA_ERROR,
            format!("The CUDA driver refused the smoke test on {label}"),
            "A CUDA driver call failed; its own error text is the evidence.",
            "Look the error up in `gpu-doctor doctor`'s findings; reboot if the driver was just updated.",
        ),
    };
    finding(id, Severity::Error, title, detail, evidence, fix, d.index)
}

fn underperforming(d: &DeviceResult, gpu: Option<&Gpu>, label: &str) -> Option<Finding> {
    let mut low = Vec::new();
    let bf16 = d
        .throughput
        .as_ref()
        .and_then(|t| t.cublaslt_bf16_tflops.zip(t.expected_bf16_tflops));
    if let Some((have, want)) = bf16.filter(|(have, want)| *have < UNDERPERFORMING * want) {
        low.push(format!(
            "cuBLASLt bf16 GEMM: {have:.0} TFLOP/s, {:.0}% of the card's dense {want:.0}",
            100.0 * have / want
        ));
    }
    let copy = d
        .bandwidth
        .as_ref()
        .and_then(|b| b.device_to_device_gbs.zip(b.expected_gbs));
    if let Some((have, want)) = copy.filter(|(have, want)| *have < UNDERPERFORMING * want) {
        low.push(format!(
            "device copy: {have:.0} GB/s (read+write), {:.0}% of the card's {want:.0} GB/s",
            100.0 * have / want
        ));
    }
    if low.is_empty() {
        return None;
    }
    let mut evidence = low;
    if let Some(g) = gpu {
        if let (Some(c), Some(m)) = (g.clock_sm_mhz, g.clock_sm_max_mhz) {
            evidence.push(format!(
                "SM clock {c} of {m} MHz (at the last doctor reading)"
            ));
        }
        if let (Some(p), Some(l)) = (g.power_draw_w, g.power_limit_w) {
            evidence.push(format!("power {p:.0} W of a {l:.0} W limit"));
        }
        if !g.throttle_reasons.is_empty() {
            evidence.push(format!(
                "active throttle reasons: {}",
                g.throttle_reasons.join(", ")
            ));
        }
        if let (Some(gc), Some(gm), Some(wc), Some(wm)) = (
            g.pcie_gen_current,
            g.pcie_gen_max,
            g.pcie_width_current,
            g.pcie_width_max,
        ) {
            evidence.push(format!("PCIe gen{gc} x{wc} (max gen{gm} x{wm})"));
        }
    }
    Some(finding(
        &ids::GPU_UNDERPERFORMING,
        Severity::Warning,
        format!(
            "{label} reaches less than {:.0}% of what this card should",
            UNDERPERFORMING * 100.0
        ),
        "Measured throughput is well below the card's published figures. Common causes: power or \
         thermal throttling, a lowered power limit, clocks locked low, another process sharing the \
         GPU, or a degraded PCIe/NVLink link.",
        evidence,
        "Check `nvidia-smi -q -d PERFORMANCE,POWER,CLOCK` while the test runs, the cooling, and other processes on the GPU.",
        d.index,
    ))
}

#[cfg(test)]
mod tests {
    use super::fill_expected;
    use crate::report::smoke::{Bandwidth, DeviceResult, SmokeRun, Throughput};
    use crate::report::{Gpu, Report};

    /// A smoke run on one GPU of this id, subsystem and name, its expected figures filled.
    fn expected(id: &str, subsystem: Option<&str>, name: &str) -> (Option<f64>, Option<f64>) {
        let report = Report {
            gpus: vec![Gpu {
                pci_device_id: Some(id.into()),
                pci_subsystem_id: subsystem.map(str::to_string),
                name: Some(name.into()),
                ..Gpu::default()
            }],
            ..Report::default()
        };
        let mut run = SmokeRun {
            devices: vec![DeviceResult {
                name: Some(name.into()),
                bandwidth: Some(Bandwidth::default()),
                throughput: Some(Throughput::default()),
                ..DeviceResult::default()
            }],
            ..SmokeRun::default()
        };
        fill_expected(&mut run, &report, crate::manifest::embedded());
        let d = &run.devices[0];
        (
            d.bandwidth.as_ref().and_then(|b| b.expected_gbs),
            d.throughput.as_ref().and_then(|t| t.expected_bf16_tflops),
        )
    }

    #[test]
    fn a_real_h100_sxm_by_its_pci_id_gets_the_sxm5_figures() {
        // nvidia-smi's form of 0x2330 (device, then NVIDIA's vendor id); the name alone fits
        // both H100 rows.
        assert_eq!(
            expected("0x233010DE", Some("0x16C110DE"), "NVIDIA H100 80GB HBM3"),
            (Some(3350.0), Some(989.0))
        );
        assert_eq!(
            expected("0x2331", None, "NVIDIA H100 PCIe"),
            (Some(2000.0), Some(756.0))
        );
    }

    #[test]
    fn an_id_the_table_lists_without_a_model_row_gets_no_figures_from_its_name() {
        // H100 NVL: its name fits both H100 rows; RTX 4090 Laptop GPU: its name fits the
        // desktop card's row alone, whose figures it does not reach.
        assert_eq!(expected("0x2321", None, "NVIDIA H100 NVL"), (None, None));
        assert_eq!(
            expected("0x2757", None, "NVIDIA GeForce RTX 4090 Laptop GPU"),
            (None, None)
        );
        // The desktop card keeps its figures.
        assert_eq!(
            expected("0x2684", None, "NVIDIA GeForce RTX 4090"),
            (Some(1008.0), None)
        );
    }

    #[test]
    fn without_a_pci_id_a_name_that_fits_one_row_still_gives_figures() {
        let report = Report {
            gpus: vec![Gpu {
                name: Some("NVIDIA H100 PCIe".into()),
                ..Gpu::default()
            }],
            ..Report::default()
        };
        let mut run = SmokeRun {
            devices: vec![DeviceResult {
                bandwidth: Some(Bandwidth::default()),
                ..DeviceResult::default()
            }],
            ..SmokeRun::default()
        };
        fill_expected(&mut run, &report, crate::manifest::embedded());
        let got = run.devices[0]
            .bandwidth
            .as_ref()
            .and_then(|b| b.expected_gbs);
        assert_eq!(got, Some(2000.0));
    }
}
