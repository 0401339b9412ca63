//! The doctor checks its own prescription: what each step of a plan changes in the report
//! (a driver branch and flavour, a loaded module, a toolkit at a path, a framework build in an
//! environment), the report those changes leave, and that report diagnosed again before the
//! plan is written. Pure.
//!
//! A plan passes when the findings it addresses are gone from the report it leaves and no
//! error or warning appears there that the machine did not have. The prediction is made of
//! what the steps declare, so it knows only what a plan changes: facts only a real run shows
//! (a framework's compiled architectures, its pinned wheels) stay as the report had them.

use crate::manifest::Manifests;
use crate::report::{Framework, PythonEnv, Report, Severity, Toolkit};

use super::StepKind;
use super::decide::{Decision, DriverPlan, EnvPlan, LoadModule};
use super::frameworks::FrameworkPlan;

/// What one step changes in the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// A driver branch is installed and loaded (after the reboot it asks for).
    Driver {
        branch: u64,
        max_cuda: String,
        open: bool,
    },
    /// The installed driver's module is loaded (enrolled, modprobed, or the reboot that loads
    /// the libraries' own version).
    ModuleLoaded,
    /// nouveau is off after the reboot.
    NouveauOff,
    /// A toolkit at this path.
    Toolkit { path: String, version: String },
    /// A framework build in an environment (made when missing, with this Python).
    Framework {
        env: String,
        python: Option<String>,
        name: String,
        version: String,
        cuda: String,
    },
}

/// A step's kind and what it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepEffect {
    pub step: StepKind,
    pub effect: Effect,
}

/// What the steps of a decision change, each under the kind of the step that does it.
pub(super) fn effects(d: &Decision<'_>) -> Vec<StepEffect> {
    let mut out = Vec::new();
    let mut push = |step, effect| out.push(StepEffect { step, effect });
    if d.nouveau {
        push(StepKind::NouveauOff, Effect::NouveauOff);
    }
    match (&d.load_module, &d.driver) {
        (Some(LoadModule::Enroll { .. }), _) => push(StepKind::EnrollKey, Effect::ModuleLoaded),
        (Some(LoadModule::Modprobe), _) => push(StepKind::LoadDriver, Effect::ModuleLoaded),
        (None, DriverPlan::Install { row, open, .. }) => push(
            StepKind::Driver,
            Effect::Driver {
                branch: row.branch,
                max_cuda: row.max_cuda.clone(),
                open: *open,
            },
        ),
        _ => {}
    }
    if d.reboot_for_mismatch {
        push(StepKind::Reboot, Effect::ModuleLoaded);
    }
    if let (Some(t), super::Via::Apt) = (&d.toolkit, d.via) {
        push(
            StepKind::CudaToolkit,
            Effect::Toolkit {
                path: format!("/usr/local/cuda-{}", t.major_minor()),
                version: t.major_minor(),
            },
        );
    }
    if let (Some(fw), Some(EnvPlan::Venv { path, .. })) = (&d.framework, &d.env) {
        let python = d
            .new_python
            .as_ref()
            .and_then(|n| n.version().map(str::to_string))
            .or_else(|| fw.python.clone());
        push(StepKind::Framework(fw.name), framework(path, python, fw));
    }
    for (nth, fix) in d.fixes.iter().enumerate() {
        push(
            StepKind::ReinstallTorch {
                nth,
                of: d.fixes.len(),
            },
            framework(&fix.env, fix.framework.python.clone(), &fix.framework),
        );
    }
    out
}

fn framework(env: &str, python: Option<String>, fw: &FrameworkPlan) -> Effect {
    let cuda = if fw.cuda_is_minor {
        fw.cuda.major_minor()
    } else {
        fw.cuda.major().to_string()
    };
    Effect::Framework {
        env: env.to_string(),
        python,
        name: fw.name.as_str().to_string(),
        version: fw.dist_prefix.trim_end_matches('.').to_string(),
        cuda,
    }
}

/// The report the effects leave.
#[must_use]
pub fn apply(report: &Report, effects: &[StepEffect]) -> Report {
    let mut r = report.clone();
    for e in effects {
        match &e.effect {
            Effect::Driver {
                branch,
                max_cuda,
                open,
            } => {
                let version = format!("{branch}.0.0");
                r.driver.version = Some(version.clone());
                r.driver.cuda_version = Some(max_cuda.clone());
                r.kernel.nvidia_loaded = true;
                r.kernel.nvidia_version = Some(version.clone());
                r.kernel.nvidia_open = Some(*open);
                // The branch's packages bring its user-space libraries: the old ones go.
                r.driver_libraries
                    .retain(|l| l.kind != crate::report::DriverLibraryKind::Driver);
                for name in ["libcuda", "libnvidia-ml"] {
                    r.driver_libraries.push(crate::report::DriverLibrary {
                        name: name.to_string(),
                        path: format!("/usr/lib/x86_64-linux-gnu/{name}.so.1"),
                        resolved: None,
                        version: Some(version.clone()),
                        kind: crate::report::DriverLibraryKind::Driver,
                        origin: "ld.so.conf".to_string(),
                        rank: 0,
                    });
                }
                loaded(&mut r);
            }
            Effect::ModuleLoaded => {
                let libraries = r
                    .driver_libraries
                    .iter()
                    .find_map(|l| l.version.clone())
                    .or_else(|| r.driver.version.clone());
                r.kernel.nvidia_loaded = true;
                r.kernel.nvidia_version.clone_from(&libraries);
                if r.driver.version.is_none() {
                    r.driver.version = libraries;
                }
                loaded(&mut r);
            }
            Effect::NouveauOff => r.kernel.nouveau_loaded = false,
            Effect::Toolkit { path, version } => {
                if !r.toolkits.iter().any(|t| &t.path == path) {
                    r.toolkits.push(Toolkit {
                        path: path.clone(),
                        version: Some(version.clone()),
                        ..Toolkit::default()
                    });
                }
            }
            Effect::Framework {
                env,
                python,
                name,
                version,
                cuda,
            } => {
                let at = match r.python_envs.iter().position(|p| same_path(&p.path, env)) {
                    Some(at) => at,
                    None => {
                        r.python_envs.push(PythonEnv {
                            path: env.clone(),
                            kind: crate::report::EnvKind::Venv,
                            python_version: python.clone(),
                            ..PythonEnv::default()
                        });
                        r.python_envs.len() - 1
                    }
                };
                // The new build brings its own nvidia-* wheels, whose versions only pip knows:
                // the old build's are no longer a fact of this environment.
                let replaced = r.python_envs[at].frameworks.iter().any(|f| &f.name == name);
                if replaced {
                    r.python_envs[at].nvidia_wheels.clear();
                }
                let frameworks = &mut r.python_envs[at].frameworks;
                frameworks.retain(|f| &f.name != name);
                frameworks.push(Framework {
                    name: name.clone(),
                    version: Some(version.clone()),
                    cuda: Some(cuda.clone()),
                    variant: Some("cuda".to_string()),
                    source: "predicted by gpu-doctor plan".to_string(),
                    ..Framework::default()
                });
            }
        }
    }
    r.findings.clear();
    r
}

/// The driver answers once its module is loaded: the probes that failed for want of it pass.
fn loaded(r: &mut Report) {
    use crate::report::ProbeStatus;
    r.kernel.nouveau_loaded = false;
    for probe in [&mut r.driver.nvml, &mut r.driver.nvidia_smi] {
        if probe.status != ProbeStatus::Skipped {
            probe.status = ProbeStatus::Ok;
            probe.detail = None;
        }
    }
}

fn same_path(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// What diagnosing the machine a plan leaves says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Findings the plan addresses that would remain: the plan misses its purpose.
    pub remaining: Vec<String>,
    /// Errors and warnings the machine did not show before, each with its own fix: a driver
    /// that now loads shows what it hid (an NVSwitch system's fabric manager), a new build
    /// disagrees with what stays (a system nvcc for extension builds).
    pub appearing: Vec<(String, String, Option<String>)>,
}

/// Whether two findings are about the same thing: the same subjects, or a framework build in
/// common.
fn same_subject(a: &crate::report::Finding, b: &crate::report::Finding) -> bool {
    a.subjects == b.subjects
        || a.subjects.iter().any(|s| {
            matches!(s, crate::report::Subject::Framework { .. }) && b.subjects.contains(s)
        })
}

/// Diagnoses the machine `effects` leave against the machine as it is.
#[must_use]
pub fn outcome(
    report: &Report,
    manifests: &Manifests,
    effects: &[StepEffect],
    addresses: &[(String, String)],
) -> Outcome {
    let mut out = Outcome::default();
    if effects.is_empty() {
        return out;
    }
    let after = crate::diagnose::diagnose_with(&apply(report, effects), manifests);
    let before: Vec<&str> = report.findings.iter().map(|f| f.id.as_str()).collect();
    for (id, title) in addresses {
        // The finding the plan addresses, as the report has it: one of an id that is about
        // another framework (jaxlib's arch-not-in-build beside torch's) is not this plan's.
        let addressed = report
            .findings
            .iter()
            .find(|f| &f.id == id && &f.title == title);
        if after
            .iter()
            .any(|f| &f.id == id && addressed.is_none_or(|a| same_subject(a, f)))
            && !out.remaining.contains(id)
        {
            out.remaining.push(id.clone());
        }
    }
    for f in &after {
        if matches!(f.severity, Severity::Error | Severity::Warning)
            && !before.contains(&f.id.as_str())
            && !out.appearing.iter().any(|(id, ..)| id == &f.id)
        {
            out.appearing
                .push((f.id.clone(), f.title.clone(), f.fix.clone()));
        }
    }
    out
}
