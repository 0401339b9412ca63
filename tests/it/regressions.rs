//! Probe bugs found on fixture machines and fixed: each test pins what the report's own
//! documentation (src/report/mod.rs) promises, so the bug cannot come back.

use serde_json::Value;

use crate::support::*;

/// `Gpu.pci_bus_id` is documented as `"00000000:00:06.0"`, the form NVML and nvidia-smi print,
/// so one GPU keeps one ID whether or not its driver answers. GPUs taken from the PCI bus keep
/// sysfs's short form instead.
#[test]

fn gpu_from_the_pci_bus_has_the_documented_bus_id_form() {
    let r = doctor("gpu-no-driver");
    assert_eq!(r["gpus"][0]["source"], "pci");
    assert_eq!(r["gpus"][0]["pci_bus_id"], "00000000:01:00.0");
    let r = doctor("hgx-driver-not-loaded");
    assert_eq!(strings(&r["gpus"], "pci_bus_id")[0], "00000000:18:00.0");
}

/// `ProbeOutcome.detail` is "the error or reason, as the tool or library said it (\"Driver/library
/// version mismatch\")", and the `driver-library-mismatch` rule looks for exactly that text to
/// cite nvidia-smi as evidence. The probe stores its own paraphrase instead, so the finding loses
/// the nvidia-smi line and a mismatch only nvidia-smi reveals would go unnoticed.
#[test]

fn nvidia_smi_failure_keeps_the_tools_own_words() {
    let r = doctor("driver-library-mismatch");
    let detail = r["driver"]["nvidia_smi"]["detail"]
        .as_str()
        .unwrap_or_default();
    assert!(
        detail.contains("Driver/library version mismatch"),
        "detail: {detail}"
    );
    let evidence = texts(&finding(&r, "driver-library-mismatch")["evidence"]);
    assert!(
        evidence.iter().any(|e| e.starts_with("nvidia-smi: ") && e.contains("Driver/library version mismatch")),
        "the finding should cite nvidia-smi: {evidence:?}"
    );
}

/// TensorFlow 2.15's METADATA lists its nvidia-*-cu12 wheels only under the `and-cuda` extra
/// (`; extra == 'and-cuda'`). This machine installed plain `tensorflow` and uses the system
/// cuDNN, so nothing pins pip wheels; reporting the extra's requirements as pins would make a
/// rule expect cuDNN 8.9.4.25 wheels that were never asked for.
#[test]

fn pins_leave_out_requirements_of_extras_not_installed() {
    let r = doctor("tensorflow-system-cudnn");
    let tf = framework(&r, "/usr", "tensorflow");
    assert_eq!(tf["pins"], Value::Array(Vec::new()), "pins: {}", tf["pins"]);
}
