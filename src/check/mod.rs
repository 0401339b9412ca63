//! `gpu-doctor check`: requirements in, a verdict and an exit code out, for CI jobs that must
//! not start a GPU workload on a runner that cannot run it.
//!
//! Pure: [`evaluate`] reads a finished [`Report`]; the faces in [`render`] print it.

pub(crate) mod expr;
pub(crate) mod render;

use crate::report::GpuSource;
use expr::{FrameworkName, Op, Requirement, Subject, Value};

use crate::diagnose::ids;
use crate::report::{Framework, Report, Severity};
use crate::version::Version;

/// The severity at or above which a finding fails the check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailOn {
    Error,
    Warning,
    Never,
}

impl crate::choice::Choice for FailOn {
    const ALL: &'static [FailOn] = &[FailOn::Error, FailOn::Warning, FailOn::Never];
    fn name(self) -> &'static str {
        match self {
            FailOn::Error => "error",
            FailOn::Warning => "warning",
            FailOn::Never => "never",
        }
    }
}

impl FailOn {
    /// Whether a finding of `severity` fails the check.
    #[must_use]
    pub(crate) fn fails(self, severity: Severity) -> bool {
        match self {
            FailOn::Error => severity == Severity::Error,
            FailOn::Warning => severity <= Severity::Warning,
            FailOn::Never => false,
        }
    }
}

/// One requirement's verdict.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Outcome {
    pub requirement: String,
    pub met: bool,
    /// What the machine has, as text ("550.54.15", "2 GPUs"), or null when unknown.
    pub actual: Option<String>,
    /// Why, in a sentence.
    pub message: String,
}

/// The whole check.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Verdict {
    pub pass: bool,
    pub requirements: Vec<Outcome>,
    /// Findings at or above `--fail-on`.
    pub failing_findings: Vec<crate::report::Finding>,
}

/// Evaluates every requirement and the findings against the fail-on level. `env` limits
/// framework checks to the Python environment with that prefix.
#[must_use]
pub(crate) fn verdict(
    report: &Report,
    requirements: &[Requirement],
    fail_on: FailOn,
    env: Option<&str>,
) -> Verdict {
    let requirements: Vec<Outcome> = requirements
        .iter()
        .map(|r| evaluate(report, r, env))
        .collect();
    let failing_findings: Vec<_> = report
        .findings
        .iter()
        .filter(|f| fail_on.fails(f.severity))
        .cloned()
        .collect();
    Verdict {
        pass: requirements.iter().all(|o| o.met) && failing_findings.is_empty(),
        requirements,
        failing_findings,
    }
}

/// Evaluates one requirement.
#[must_use]
pub(crate) fn evaluate(report: &Report, req: &Requirement, env: Option<&str>) -> Outcome {
    match (req.subject, &req.comparison) {
        (Subject::Driver, Some((op, Value::Version(want)))) => {
            compare_version(req, "driver", report.driver.version.as_deref(), *op, want)
        }
        (Subject::Cuda, Some((op, Value::Version(want)))) => compare_version(
            req,
            "the driver's CUDA version",
            report.driver.cuda_version.as_deref(),
            *op,
            want,
        ),
        (Subject::Toolkit, Some((op, Value::Version(want)))) => {
            let newest = newest(report.toolkits.iter().filter_map(|t| t.version.as_deref()));
            compare_version(req, "CUDA toolkit", newest, *op, want)
        }
        (Subject::Cudnn, Some((op, Value::Version(want)))) => {
            let newest = newest(
                report
                    .libraries
                    .cudnn
                    .iter()
                    .filter_map(|l| l.version.as_deref()),
            );
            compare_version(req, "cuDNN", newest, *op, want)
        }
        (Subject::GpuCount, Some((op, Value::Count(want)))) => gpu_count(report, req, *op, *want),
        (Subject::GpuMemory, Some((op, Value::MiB(want)))) => gpu_memory(report, req, *op, *want),
        (Subject::GpuCc, Some((op, Value::Version(want)))) => gpu_cc(report, req, *op, want),
        (Subject::Rocm, Some((op, Value::Version(want)))) => compare_version(
            req,
            "ROCm",
            report.kernel.rocm_version.as_deref(),
            *op,
            want,
        ),
        (Subject::GpuVendor, Some((op, Value::Word(want)))) => gpu_vendor(report, req, *op, want),
        (Subject::GpuGfx, Some((op, Value::Word(want)))) => gpu_gfx(report, req, *op, want),
        (Subject::FrameworkRocm(name), _) => framework_rocm(report, req, name, env),
        (Subject::Framework(name), comparison) => {
            framework_version(report, req, name, comparison.as_ref(), env)
        }
        (Subject::FrameworkGpu(name), _) => framework_gpu(report, req, name, env),
        _ => Outcome::of(
            req,
            false,
            None,
            "this requirement cannot be evaluated".into(),
        ),
    }
}

impl Outcome {
    fn of(req: &Requirement, met: bool, actual: Option<String>, message: String) -> Outcome {
        Outcome {
            requirement: req.text.clone(),
            met,
            actual,
            message,
        }
    }
}

/// The GPUs the driver runs: a card seen only on the PCI bus (no driver bound, or the driver
/// did not answer) cannot run a CI job, so it counts for no GPU requirement.
fn usable_gpus(report: &Report) -> Vec<&crate::report::Gpu> {
    report
        .gpus
        .iter()
        .filter(|g| g.source != GpuSource::Pci)
        .collect()
}

fn gpu_count(report: &Report, req: &Requirement, op: Op, want: u64) -> Outcome {
    let n = usable_gpus(report).len() as u64;
    Outcome::of(
        req,
        op.holds(n.cmp(&want)),
        Some(format!("{n} GPU(s)")),
        format!("the driver reports {n} GPU(s)"),
    )
}

/// Memory holds when the smallest GPU has it: a job may land on any of them.
fn gpu_memory(report: &Report, req: &Requirement, op: Op, want: u64) -> Outcome {
    let sizes: Vec<Option<u64>> = usable_gpus(report)
        .iter()
        .map(|g| g.memory_total_mib)
        .collect();
    if sizes.is_empty() || sizes.iter().any(Option::is_none) {
        return Outcome::of(
            req,
            false,
            None,
            "GPU memory is unknown (no GPU, or the driver did not say)".into(),
        );
    }
    let smallest = sizes.into_iter().flatten().min().unwrap_or(0);
    Outcome::of(
        req,
        op.holds(smallest.cmp(&want)),
        Some(format!("{smallest} MiB")),
        format!("the smallest GPU has {smallest} MiB"),
    )
}

/// Compute capability holds when the lowest GPU has it, as memory does.
fn gpu_cc(report: &Report, req: &Requirement, op: Op, want: &Version) -> Outcome {
    let ccs: Vec<Option<Version>> = usable_gpus(report)
        .iter()
        .map(|g| g.compute_capability.as_deref().and_then(Version::parse))
        .collect();
    if ccs.is_empty() || ccs.iter().any(Option::is_none) {
        return Outcome::of(
            req,
            false,
            None,
            "compute capability is unknown (no GPU, or the driver did not say)".into(),
        );
    }
    let lowest = ccs.into_iter().flatten().min();
    let met = lowest.as_ref().is_some_and(|l| op.holds(l.cmp(want)));
    let actual = lowest.map(|l| l.to_string());
    let message = format!(
        "the lowest compute capability is {}",
        actual.clone().unwrap_or_default()
    );
    Outcome::of(req, met, actual, message)
}

/// `gpu.vendor == X` holds when every GPU is X; `!=` when none is. Every GPU counts here, a
/// PCI-only one too: the question is what hardware the runner has.
fn gpu_vendor(report: &Report, req: &Requirement, op: Op, want: &str) -> Outcome {
    let all: Vec<&str> = report.gpus.iter().map(|g| g.vendor.as_str()).collect();
    let matching = all.iter().filter(|v| **v == want).count();
    let met = match op {
        Op::Ne => matching == 0,
        _ => !all.is_empty() && matching == all.len(),
    };
    let actual = (!all.is_empty()).then(|| {
        let mut v = all.clone();
        v.dedup();
        v.join(", ")
    });
    let message = match &actual {
        Some(a) => format!("the GPUs are {a}"),
        None => "no GPU found".to_string(),
    };
    Outcome::of(req, met, actual, message)
}

/// `gpu.gfx == gfx90a` holds when every AMD GPU has that target; unknown when any target is.
fn gpu_gfx(report: &Report, req: &Requirement, op: Op, want: &str) -> Outcome {
    let targets: Vec<Option<&str>> = report.amd_gpus().map(|g| g.gfx_target.as_deref()).collect();
    if targets.is_empty() || targets.iter().any(Option::is_none) {
        return Outcome::of(
            req,
            false,
            None,
            "gfx target is unknown (no AMD GPU, or neither KFD nor the AMD table names it)".into(),
        );
    }
    let targets: Vec<&str> = targets.into_iter().flatten().collect();
    let matching = targets.iter().filter(|t| **t == want).count();
    let met = match op {
        Op::Ne => matching == 0,
        _ => matching == targets.len(),
    };
    let list = targets.join(", ");
    Outcome::of(
        req,
        met,
        Some(list.clone()),
        format!("the AMD GPUs are {list}"),
    )
}

fn newest<'a>(versions: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    versions.max_by(|a, b| crate::version::compare(a, b))
}

fn compare_version(
    req: &Requirement,
    what: &str,
    actual: Option<&str>,
    op: Op,
    want: &Version,
) -> Outcome {
    let parsed = actual.and_then(Version::parse);
    let (met, message) = match &parsed {
        Some(have) => {
            let met = op.holds(have.cmp(want));
            (
                met,
                format!("{what} is {have}; required {}{want}", op.as_str()),
            )
        }
        None => (false, format!("{what} not found")),
    };
    Outcome::of(req, met, actual.map(str::to_string), message)
}

/// The frameworks of that name in the environments in scope.
fn frameworks<'a>(
    report: &'a Report,
    name: FrameworkName,
    env: Option<&str>,
) -> Vec<(&'a str, &'a Framework)> {
    report
        .python_envs
        .iter()
        .filter(|e| {
            env.is_none_or(|want| e.path.trim_end_matches('/') == want.trim_end_matches('/'))
        })
        .flat_map(|e| e.frameworks.iter().map(move |f| (e.path.as_str(), f)))
        .filter(|(_, f)| f.name == name.as_str())
        .collect()
}

fn framework_version(
    report: &Report,
    req: &Requirement,
    name: FrameworkName,
    comparison: Option<&(Op, Value)>,
    env: Option<&str>,
) -> Outcome {
    let found = frameworks(report, name, env);
    let best = found.iter().find(|(_, f)| {
        match (
            comparison,
            f.version
                .as_deref()
                .and_then(crate::version::package_version),
        ) {
            (None, _) => true,
            (Some((op, Value::Package(want))), Some(have)) => expr::package_meets(&have, *op, want),
            _ => false,
        }
    });
    let actual = found
        .iter()
        .filter_map(|(env, f)| f.version.as_ref().map(|v| format!("{v} in {env}")))
        .collect::<Vec<_>>()
        .join(", ");
    let (met, message) = match (best, found.is_empty()) {
        (Some((env, f)), _) => (
            true,
            format!(
                "{} {} in {env}",
                name.as_str(),
                f.version.as_deref().unwrap_or("?")
            ),
        ),
        (None, true) => (
            false,
            format!(
                "{} is not installed in any environment found",
                name.as_str()
            ),
        ),
        (None, false) => (false, format!("found {} {actual}", name.as_str())),
    };
    Outcome::of(req, met, (!actual.is_empty()).then_some(actual), message)
}

/// A framework build that can use this machine's GPU: a CUDA build, a driver that answers and
/// supports its CUDA major, at least one GPU, and no error finding about it.
fn framework_gpu(
    report: &Report,
    req: &Requirement,
    name: FrameworkName,
    env: Option<&str>,
) -> Outcome {
    let found = frameworks(report, name, env);
    let driver_cuda = report
        .driver
        .cuda_version
        .as_deref()
        .and_then(Version::parse);
    let has_gpu = report.gpus.iter().any(|g| g.source != GpuSource::Pci);
    let mut reasons = Vec::new();
    for (env_path, fw) in &found {
        let label = format!(
            "{} {} in {env_path}",
            fw.name,
            fw.version.as_deref().unwrap_or("?")
        );
        let Some(cuda) = fw.cuda.as_deref().and_then(Version::parse) else {
            reasons.push(format!(
                "{label} is a {} build",
                fw.variant.as_deref().unwrap_or("non-CUDA")
            ));
            continue;
        };
        if !has_gpu {
            reasons.push(format!("{label}: no GPU answers through the driver"));
            continue;
        }
        match &driver_cuda {
            None => {
                reasons.push(format!("{label}: the driver's CUDA version is unknown"));
                continue;
            }
            // Minor-version compatibility: a driver of the same CUDA major runs any minor.
            Some(d) if d.major() < cuda.major() => {
                reasons.push(format!(
                    "{label} needs CUDA {cuda}, the driver supports up to {d}"
                ));
                continue;
            }
            Some(_) => {}
        }
        let subject = crate::report::framework_subject(env_path, &fw.name);
        if let Some(f) = report
            .findings
            .iter()
            .find(|f| f.severity == Severity::Error && f.subjects.contains(&subject))
        {
            reasons.push(format!("{label}: {} ({})", f.title, f.id));
            continue;
        }
        return Outcome::of(
            req,
            true,
            Some(label.clone()),
            format!("{label}, CUDA {cuda}"),
        );
    }
    if found.is_empty() {
        reasons.push(format!(
            "{} is not installed in any environment found",
            name.as_str()
        ));
    }
    Outcome::of(req, false, None, reasons.join("; "))
}

/// AMD findings that keep every ROCm build off the GPU, whatever their subjects.
static MACHINE_WIDE_AMD: [&ids::Kind; 8] = [
    &ids::AMDGPU_NOT_LOADED,
    &ids::AMDGPU_NOT_BOUND,
    &ids::KFD_MISSING,
    &ids::ROCM_GPU_UNSUPPORTED,
    &ids::ROCM_DEVICE_PERMISSION,
    &ids::HSA_OVERRIDE_MISMATCH,
    &ids::VISIBLE_DEVICES_HIDES_GPUS,
    &ids::ROCM_TOO_OLD_FOR_GPU,
];

/// A ROCm build that can use this machine's AMD GPU: a ROCm build, an AMD GPU ROCm reaches (a
/// KFD node and `/dev/kfd`, or WSL's `/dev/dxg`), and no error finding about the framework.
fn framework_rocm(
    report: &Report,
    req: &Requirement,
    name: FrameworkName,
    env: Option<&str>,
) -> Outcome {
    let found = frameworks(report, name, env);
    let nodes = &report.kernel.device_nodes;
    let reachable = (report.amd_gpus().any(|g| g.source == GpuSource::Kfd)
        && nodes.iter().any(|n| n == "/dev/kfd"))
        || (report.host.wsl && nodes.iter().any(|n| n == "/dev/dxg"));
    let mut reasons = Vec::new();
    for (env_path, fw) in &found {
        let label = format!(
            "{} {} in {env_path}",
            fw.name,
            fw.version.as_deref().unwrap_or("?")
        );
        if fw.variant.as_deref() != Some("rocm") && fw.rocm.is_none() {
            reasons.push(format!(
                "{label} is a {} build",
                fw.variant.as_deref().unwrap_or("non-ROCm")
            ));
            continue;
        }
        if !reachable {
            reasons.push(format!(
                "{label}: no AMD GPU that ROCm can reach (no KFD node or no /dev/kfd)"
            ));
            continue;
        }
        let subject = crate::report::framework_subject(env_path, &fw.name);
        if let Some(f) = report.findings.iter().find(|f| {
            f.severity == Severity::Error
                && (f.subjects.contains(&subject) || ids::is_one_of(&MACHINE_WIDE_AMD, &f.id))
        }) {
            reasons.push(format!("{label}: {} ({})", f.title, f.id));
            continue;
        }
        return Outcome::of(
            req,
            true,
            Some(label.clone()),
            format!("{label}, ROCm {}", fw.rocm.as_deref().unwrap_or("?")),
        );
    }
    if found.is_empty() {
        reasons.push(format!(
            "{} is not installed in any environment found",
            name.as_str()
        ));
    }
    Outcome::of(req, false, None, reasons.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Framework, Gpu, PythonEnv};

    fn with_torch(version: &str) -> Report {
        Report {
            python_envs: vec![PythonEnv {
                path: "/venv".into(),
                frameworks: vec![Framework {
                    name: "torch".into(),
                    version: Some(version.into()),
                    ..Framework::default()
                }],
                ..PythonEnv::default()
            }],
            ..Report::default()
        }
    }

    fn met(report: &Report, expr: &str) -> bool {
        evaluate(report, &expr::parse(expr).unwrap(), None).met
    }

    /// The acceptance cases of issue 16: pre- and dev-releases do not satisfy `>=2.4`;
    /// local builds and later patches do.
    #[test]
    fn torch_requirements_follow_pep_440() {
        for (installed, ge, eq) in [
            ("2.4.0rc1", false, false),
            ("2.4.0.dev20240601+cu121", false, false),
            ("2.4.0+cu121", true, true),
            ("2.4.1", true, false),
            ("2.4.0.post1", true, false),
            ("2.3.1", false, false),
        ] {
            let r = with_torch(installed);
            assert_eq!(met(&r, "torch>=2.4"), ge, "{installed} >=2.4");
            assert_eq!(met(&r, "torch==2.4.0"), eq, "{installed} ==2.4.0");
        }
    }

    #[test]
    fn gb_is_ten_to_the_ninth_and_gib_two_to_the_thirtieth() {
        let h200 = Report {
            gpus: vec![Gpu {
                memory_total_mib: Some(143_771),
                source: "nvml".into(),
                ..Gpu::default()
            }],
            ..Report::default()
        };
        assert!(met(&h200, "gpu.memory>=141GB"));
        assert!(met(&h200, "gpu.memory>=140GiB"));
        assert!(!met(&h200, "gpu.memory>=141GiB"));
        assert!(!met(&h200, "gpu.memory>=151GB"));
    }
}
