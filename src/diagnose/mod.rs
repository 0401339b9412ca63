//! Diagnosis: pure functions from the [`Report`]'s facts to [`Finding`]s. Nothing here reads
//! the machine; a rule sees only what the probes recorded, so fixtures test every rule.
//!
//! One family of rules per module. When one cause explains other findings, its finding lists
//! their IDs in `explains` and [`diagnose_with`] drops them: the user sees the root cause, not a
//! wall of symptoms.

mod amd;

pub(crate) use amd::amd_gpu_evidence;
mod amd_builds;
mod amd_env;
mod amd_libs;
mod arch_notes;
mod capabilities;
mod compiled;
mod cudnn_gpu;
mod distro;
mod driver;
mod driver_gpu;
mod ext_packages;
mod extensions;
mod fix_history;
mod frameworks;
mod gpu_modes;
mod gpu_support;
mod health;
mod host_compiler;
pub mod ids;
mod jax;
mod jax_plugin;
mod libraries;
mod loading;
mod manifests;
mod onnxruntime;
mod platform;
mod runtime;
mod tensorrt;
#[cfg(test)]
mod test_support;
mod toolkits;
mod triton;
mod tuning;

use crate::manifest::Manifests;
use crate::report::{Finding, Report, Severity};

/// A rule family: the report's facts and the compatibility tables in, findings out.
type Rule = fn(&Report, &Manifests) -> Vec<Finding>;

/// Every rule family, in the order their findings are produced.
const RULES: &[Rule] = &[
    driver::findings,
    amd::findings,
    amd_builds::findings,
    amd_env::findings,
    amd_libs::findings,
    capabilities::findings,
    gpu_support::findings,
    gpu_modes::findings,
    driver_gpu::findings,
    frameworks::findings,
    arch_notes::findings,
    toolkits::findings,
    host_compiler::findings,
    extensions::findings,
    ext_packages::findings,
    onnxruntime::findings,
    tensorrt::findings,
    compiled::findings,
    triton::findings,
    cudnn_gpu::findings,
    jax::findings,
    jax_plugin::findings,
    libraries::findings,
    loading::findings,
    health::findings,
    platform::findings,
    runtime::findings,
    tuning::findings,
    manifests::findings,
];

/// Runs every rule with the embedded manifests and keeps the root causes, most severe first:
/// the rules' unit tests (a run diagnoses with the set its settings chose, [`diagnose_with`]).
#[cfg(test)]
#[must_use]
pub(crate) fn diagnose(report: &Report) -> Vec<Finding> {
    diagnose_with(report, crate::manifest::embedded())
}

/// Runs every rule against the given manifests (a downloaded set, or a test's own).
#[must_use]
pub fn diagnose_with(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut all: Vec<Finding> = RULES
        .iter()
        .flat_map(|rule| rule(report, manifests))
        .collect();
    let explained: std::collections::HashSet<String> =
        all.iter().flat_map(|f| f.explains.clone()).collect();
    all.retain(|f| !explained.contains(&f.id));
    if let Some(runtime) = report.host.container.as_deref() {
        all.iter_mut()
            .for_each(|f| host_side_in_container(f, runtime));
    }
    all.sort_by(|a, b| (a.severity, &a.id).cmp(&(b.severity, &b.id)));
    all
}

/// A finding under construction; keeps rule code short and uniform.
pub(crate) struct FindingBuilder(Finding);

impl FindingBuilder {
    /// A finding of `kind`; a severity its kind does not list is a bug the tests catch
    /// (`ids::tests`), so it is only checked in debug builds.
    pub(crate) fn new(
        kind: &'static ids::Kind,
        severity: Severity,
        title: impl Into<String>,
    ) -> FindingBuilder {
        debug_assert!(
            kind.severities.contains(&severity),
            "{} is not registered with severity {severity:?}",
            kind.id
        );
        FindingBuilder(Finding {
            id: kind.id.to_string(),
            severity,
            title: title.into(),
            detail: String::new(),
            evidence: Vec::new(),
            fix: None,
            explains: Vec::new(),
            subjects: Vec::new(),
        })
    }

    pub(crate) fn detail(mut self, detail: impl Into<String>) -> FindingBuilder {
        self.0.detail = detail.into();
        self
    }

    pub(crate) fn evidence(mut self, line: impl Into<String>) -> FindingBuilder {
        self.0.evidence.push(line.into());
        self
    }

    pub(crate) fn fix(mut self, fix: impl Into<String>) -> FindingBuilder {
        self.0.fix = Some(fix.into());
        self
    }

    pub(crate) fn explains(mut self, kind: &'static ids::Kind) -> FindingBuilder {
        self.0.explains.push(kind.id.to_string());
        self
    }

    pub(crate) fn subject(mut self, subject: impl Into<String>) -> FindingBuilder {
        self.0.subjects.push(subject.into());
        self
    }

    pub(crate) fn build(self) -> Finding {
        self.0
    }
}

/// The value of a reported environment variable, as it was set (possibly empty).
pub(crate) fn env_var<'a>(report: &'a Report, name: &str) -> Option<&'a str> {
    report
        .environment
        .iter()
        .find(|v| v.name == name)
        .map(|v| v.value.as_str())
}

/// Whether the PCI bus could be listed (`/sys/bus/pci/devices` had entries): only then does an
/// empty `pci_devices` mean that no GPU is there. A container may hide the bus; a report from
/// before this was recorded has no `pci` probe and counts as unread.
pub(crate) fn pci_bus_read(report: &Report) -> bool {
    report
        .probes
        .iter()
        .any(|p| p.name == "pci" && p.status == crate::report::ProbeStatus::Ok)
}

/// Steps that only the host can take: the kernel module, the firmware, the driver packages,
/// host services. Said inside a container, a fix with these must say where they are run.
const HOST_STEPS: [&str; 10] = [
    "reboot",
    "rmmod",
    "modprobe",
    "update-initramfs",
    "dkms",
    "ubuntu-drivers",
    "mokutil",
    "nvidia-smi -pm",
    "nvidia-smi -r",
    "systemctl",
];

/// Inside a container, a fix that reboots, reloads modules or installs drivers would be run in
/// the container, where it does nothing (or cannot run): such fixes are framed as the host's
/// steps, unless the rule already did so.
fn host_side_in_container(f: &mut Finding, runtime: &str) {
    let Some(fix) = &f.fix else {
        return;
    };
    let lower = fix.to_lowercase();
    if lower.contains("on the host") || !HOST_STEPS.iter().any(|s| lower.contains(s)) {
        return;
    }
    f.fix = Some(format!(
        "This is a {runtime} container: the kernel module, the driver and its services belong \
         to the host, so these steps are for the host, not the container. {fix}"
    ));
}
