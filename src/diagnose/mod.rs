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
mod amd_hipblaslt;
mod amd_libs;
mod arch_notes;
mod bnb_libraries;
mod capabilities;
mod compiled;
mod cuda_wheels;
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
mod gpu_switch;
mod health;
mod host_compiler;
pub mod ids;
mod jax;
mod jax_plugin;
mod libraries;
mod loading;
mod manifests;
mod module_build;
mod nccl_gpu;
mod numba;
mod onnxruntime;
mod platform;
mod program_code;
mod program_ptx;
mod runtime;
mod runtime_compile;
mod symbols;
mod tensorrt;
#[cfg(test)]
mod test_support;
mod toolkits;
mod triton;
mod triton_ptxas;
mod tuning;

use crate::manifest::Manifests;
use crate::report::{Finding, FixTarget, Report, Severity, Subject};

/// A rule family: the report's facts and the compatibility tables in, findings out.
type Rule = fn(&Report, &Manifests) -> Vec<Finding>;

/// Every rule family, in the order their findings are produced.
const RULES: &[Rule] = &[
    driver::findings,
    gpu_switch::findings,
    amd::findings,
    amd_builds::findings,
    amd_env::findings,
    amd_libs::findings,
    amd_hipblaslt::findings,
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
    bnb_libraries::findings,
    onnxruntime::findings,
    tensorrt::findings,
    cuda_wheels::findings,
    compiled::findings,
    program_code::findings,
    program_ptx::findings,
    triton::findings,
    triton_ptxas::findings,
    numba::findings,
    cudnn_gpu::findings,
    nccl_gpu::findings,
    jax::findings,
    jax_plugin::findings,
    libraries::findings,
    loading::findings,
    health::findings,
    platform::findings,
    runtime::findings,
    tuning::findings,
    manifests::findings,
    runtime_compile::findings,
    symbols::findings,
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
            fix_target: FixTarget::Here,
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

    /// Steps carried out wherever gpu-doctor runs ([`FixTarget::Here`], the default): in a
    /// container, in the container. Steps only the host can take are
    /// [`FindingBuilder::fix_on_host`]'s (or [`FindingBuilder::fix_on_host_if`] with this).
    pub(crate) fn fix(mut self, fix: impl Into<String>) -> FindingBuilder {
        self.0.fix = Some(fix.into());
        self
    }

    /// Steps only the host can take ([`FixTarget::Host`]: the kernel module, firmware, driver
    /// packages, host services, a reboot); inside a container the diagnosis says so before
    /// them. A fix whose text already says where it runs ("On the host, ...") is a plain `fix`.
    pub(crate) fn fix_on_host(mut self, fix: impl Into<String>) -> FindingBuilder {
        self.0.fix = Some(fix.into());
        self.0.fix_target = FixTarget::Host;
        self
    }

    /// Marks the fix (given before or after, with [`FindingBuilder::fix`]) as the host's when
    /// `on_host`: for a rule whose steps are the host's in some cases only, or that says itself
    /// "on the host" inside a container.
    pub(crate) fn fix_on_host_if(mut self, on_host: bool) -> FindingBuilder {
        if on_host {
            self.0.fix_target = FixTarget::Host;
        }
        self
    }

    pub(crate) fn explains(mut self, kind: &'static ids::Kind) -> FindingBuilder {
        self.0.explains.push(kind.id.to_string());
        self
    }

    /// Names what the finding is about: a [`Subject`] (`gpu.subject()`, `framework_subject(..)`,
    /// `Subject::Driver(None)`); a string is read as the report would read it.
    pub(crate) fn subject(mut self, subject: impl Into<Subject>) -> FindingBuilder {
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

/// Inside a container, a fix that reboots, reloads modules or installs drivers would be run in
/// the container, where it does nothing (or cannot run): the fixes their rules marked as the
/// host's ([`FindingBuilder::fix_on_host`]) are framed as the host's steps.
fn host_side_in_container(f: &mut Finding, runtime: &str) {
    if f.fix_target != FixTarget::Host {
        return;
    }
    let Some(fix) = &f.fix else {
        return;
    };
    f.fix = Some(format!(
        "This is a {runtime} container: the kernel module, the driver and its services belong \
         to the host, so these steps are for the host, not the container. {fix}"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_a_container_only_fixes_marked_for_the_host_are_framed() {
        let kind = &ids::NOUVEAU_LOADED;
        let built = |host: bool| {
            let mut f = FindingBuilder::new(kind, kind.severities[0], "t")
                .fix_on_host_if(host)
                .fix("sudo reboot")
                .build();
            host_side_in_container(&mut f, "docker");
            f.fix.unwrap_or_default()
        };
        assert!(built(true).starts_with("This is a docker container: "));
        // The words do not decide: a fix not marked for the host stays as written.
        assert_eq!(built(false), "sudo reboot");
    }
}
