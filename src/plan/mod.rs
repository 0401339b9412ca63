//! `gpu-doctor plan`: the shell script that takes this machine from its current state to a
//! working target, so nobody pastes a stale blog recipe again.
//!
//! [`plan`] is pure: the report, the manifests and the [`Target`] in, a [`Plan`] (data: header
//! facts, ordered [`Step`]s, files, notes) or a [`Refusal`] out. Renderers turn a plan into a
//! bash script ([`shell`]), an `environment.yml` ([`conda`]) and JSON ([`json`]). Running a plan
//! ([`execute`]) is the only module here with side effects; `crate::commands::plan` is the
//! subcommand's face (options to a [`Target`], writing files, asking before running).
//!
//! Every package name, URL and version in a plan comes from the manifests; a choice the
//! manifests cannot support is a refusal that names the facts, never a guess.

mod apt;
pub mod choose;
pub mod cmd;
mod common;
pub mod conda;
mod decide;
pub mod execute;
pub mod frameworks;
pub mod json;
pub mod lines;
pub mod machine;
pub mod predict;
mod python;
mod rocm;
pub mod shell;
mod step;
pub mod target;

use serde::Serialize;

use crate::diagnose::ids::{self, Kind};
use crate::manifest::Manifests;
use crate::report::Report;

pub use cmd::{Check, Command, Guard, Outcome, Python, Word};
pub use machine::Machine;
pub use step::{Serves, Step, StepKind};
pub use target::{DriverChoice, FrameworkName, FrameworkSpec, Target, UsageError, Via};

use decide::{Decision, DriverPlan, EnvPlan};

/// A file that goes with the plan (`environment.yml`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanFile {
    pub name: String,
    pub content: String,
}

/// A finding and what the plan does about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FindingNote {
    pub id: String,
    pub title: String,
    /// For findings the plan leaves alone: the finding's own fix.
    pub fix: Option<String>,
}

/// A plan: everything the header says, and the steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// gpu-doctor's version, for the header.
    pub tool_version: String,
    pub machine: Machine,
    /// What was asked.
    pub target: Target,
    /// What the plan installs, one line each (`CUDA toolkit 12.9 (cuda-toolkit-12-9)`).
    pub summary: Vec<String>,
    pub addresses: Vec<FindingNote>,
    pub leaves: Vec<FindingNote>,
    /// What the plan will not touch.
    pub untouched: Vec<String>,
    /// Said first: things the plan cannot do itself, Secure Boot, and the like.
    pub notes: Vec<String>,
    /// Changes left out on purpose (a driver upgrade and what it would unlock), each with the
    /// command that plans it.
    pub options: Vec<String>,
    pub steps: Vec<Step>,
    pub files: Vec<PlanFile>,
    /// The repositories (repos.toml ids) its apt lines come from.
    pub apt_repos: Vec<String>,
    /// What its steps change in the report, which is diagnosed again before the plan is
    /// written ([`predict`]).
    pub effects: Vec<predict::StepEffect>,
}

impl Plan {
    /// Whether a step of the plan needs a reboot to take effect.
    #[must_use]
    pub fn reboots(&self) -> bool {
        self.steps.iter().any(|s| s.reboot)
    }
}

/// Why a target cannot work on this machine, with the facts that decide it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{reason}")]
pub struct Refusal {
    pub reason: String,
    /// The machine facts the reason rests on (GPUs, driver, system), for the message.
    pub facts: Vec<String>,
}

impl Refusal {
    pub fn new(reason: impl Into<String>) -> Refusal {
        Refusal {
            reason: reason.into(),
            facts: Vec::new(),
        }
    }

    /// The refusal as gpu-doctor prints it on stderr.
    #[must_use]
    ///
    /// The reason and facts quote the machine (a GPU name, a kernel release): they are
    /// cleaned like every other message, so no escape sequence, NUL or invisible character
    /// taken from the machine reaches the terminal.
    pub fn render(&self) -> String {
        let mut out = format!(
            "gpu-doctor plan: refused: {}\n",
            crate::sanitize::clean_lines(&self.reason)
        );
        for fact in &self.facts {
            out.push_str("  ");
            out.push_str(&crate::sanitize::clean(fact));
            out.push('\n');
        }
        out
    }
}

/// Whether a machine value may stand in a package name or version a plan's command names:
/// the characters Debian allows in package names and versions (`[A-Za-z0-9.+~:-]`), and `_`
/// (kernel releases such as `6.8.0-1015-aws_x`); nothing else, so nothing that could change
/// what the command does or hide in it (a byte-order mark in a kernel release once reached
/// `apt-get install 'linux-headers-…'`).
#[must_use]
pub(crate) fn fits_a_package_name(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 256
        && value.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'+' | b'~' | b':' | b'-' | b'_')
        })
}

/// The machine values a plan puts into commands (kernel release, driver version and branch,
/// distribution and architecture), refused when one holds a character no package name can.
fn values_fit_commands(report: &Report) -> Result<(), Refusal> {
    let values = [
        ("kernel release", report.host.kernel_release.as_deref()),
        ("driver version", report.driver.version.as_deref()),
        ("distribution", report.host.os_id.as_deref()),
        ("distribution version", report.host.os_version.as_deref()),
        ("architecture", report.host.arch.as_deref()),
    ];
    for (what, value) in values {
        if let Some(value) = value
            && !value.is_empty()
            && !fits_a_package_name(value)
        {
            return Err(Refusal {
                reason: format!(
                    "the machine's {what} holds characters no package name or version can \
                     ({}); a plan would name it in a command",
                    crate::sanitize::clean(value)
                ),
                facts: Vec::new(),
            });
        }
    }
    Ok(())
}

/// Makes the plan that takes the machine of `report` to `target`, or refuses.
///
/// # Errors
/// A [`Refusal`] with the reason and the machine facts when the target cannot work here.
pub fn plan(report: &Report, manifests: &Manifests, target: &Target) -> Result<Plan, Refusal> {
    values_fit_commands(report)?;
    // A machine whose GPUs are AMD gets a ROCm plan; the CUDA planner below is NVIDIA's.
    if rocm::applies(report) {
        return rocm::plan(report, manifests, target);
    }
    let mut plan = plan_for_machine(Machine::from_report(report, manifests), manifests, target)?;
    // The doctor checks its own prescription: the machine the plan leaves, diagnosed again.
    // A finding it addresses that would remain is a plan that misses its purpose; what would
    // appear is said first, with its own fix.
    let addressed: Vec<(String, String)> = plan
        .addresses
        .iter()
        .map(|f| (f.id.clone(), f.title.clone()))
        .collect();
    let after = predict::outcome(report, manifests, &plan.effects, &addressed);
    if !after.remaining.is_empty() {
        return Err(Refusal {
            reason: format!(
                "gpu-doctor diagnosed the machine this plan would leave, and it would still \
                 report {}",
                after.remaining.join(", ")
            ),
            facts: machine_facts(&plan.machine),
        });
    }
    for (id, title, fix) in after.appearing {
        let fix = fix.map_or_else(String::new, |f| format!(" Its fix: {f}"));
        plan.notes.push(format!(
            "After this plan, gpu-doctor would report {id}: {title}.{fix}"
        ));
    }
    Ok(plan)
}

/// [`plan`] for a machine's facts already gathered (the unit tests build them by hand).
pub(crate) fn plan_for_machine(
    machine: Machine,
    manifests: &Manifests,
    target: &Target,
) -> Result<Plan, Refusal> {
    let decision = decide::decide(&machine, manifests, target).map_err(|mut refusal| {
        refusal.facts = machine_facts(&machine);
        refusal
    })?;
    let mut steps = Vec::new();
    steps.extend(decision.load_module.as_ref().map(load_module_step));
    steps.extend(apt::steps(&machine, manifests, &decision));
    steps.extend(python::steps(manifests, &decision));
    if decision.reboot_for_mismatch {
        steps.push(reboot_step(&machine));
    }
    // Nothing changes, so there is nothing to verify: the plan is its notes.
    if !steps.is_empty() {
        steps.push(verify_step());
    }
    guard_apt_update(&mut steps);
    for step in &mut steps {
        step.serves = serves(step, &decision);
    }
    let files = match (&decision.env, decision.via) {
        (Some(EnvPlan::Conda { .. }), Via::Conda) => vec![PlanFile {
            name: "environment.yml".to_string(),
            content: conda::environment_yml(manifests, &decision, &machine),
        }],
        _ => Vec::new(),
    };
    let (mut addresses, mut leaves) = findings(&machine, &decision.addresses);
    // A framework's finding about a framework this plan does not install is left, not
    // addressed (jaxlib's arch-not-in-build beside torch's: the torch plan does not fix it).
    let planned: Vec<&str> = decision
        .framework
        .iter()
        .chain(decision.fixes.iter().map(|f| &f.framework))
        .map(|f| f.name.as_str())
        .collect();
    let elsewhere = |note: &FindingNote| {
        machine
            .findings
            .iter()
            .find(|f| f.id == note.id && f.title == note.title)
            .is_some_and(|f| {
                !planned.is_empty()
                    && !f.frameworks.is_empty()
                    && !f.frameworks.iter().any(|n| planned.contains(&n.as_str()))
            })
    };
    let (other, mine): (Vec<FindingNote>, Vec<FindingNote>) =
        addresses.into_iter().partition(|n| elsewhere(n));
    addresses = mine;
    leaves.extend(other.into_iter().map(|mut n| {
        n.fix = machine
            .findings
            .iter()
            .find(|f| f.id == n.id && f.title == n.title)
            .and_then(|f| f.fix.clone());
        n
    }));
    let apt_repos = decision
        .apt
        .as_ref()
        .map(|a| a.repo_ids.clone())
        .unwrap_or_default();
    let effects = predict::effects(&decision);
    let plan = Plan {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        summary: summary(&decision),
        untouched: untouched(&machine, &decision),
        notes: notes(&machine, manifests, &decision),
        options: decision.options.clone(),
        addresses,
        leaves,
        machine,
        target: target.clone(),
        steps,
        files,
        apt_repos,
        effects,
    };
    // The last word: no line the tables contradict reaches a script.
    let wrong: Vec<String> = lines::check(&plan, manifests)
        .into_iter()
        .filter_map(|l| l.verdict.err().map(|why| format!("{}: {why}", l.text)))
        .collect();
    if !wrong.is_empty() {
        return Err(Refusal {
            reason: format!(
                "the plan would install what its source does not carry: {}",
                wrong.join("; ")
            ),
            facts: machine_facts(&plan.machine),
        });
    }
    Ok(plan)
}

/// Refreshing the package lists is only needed while something after it is still to be
/// installed: the step is skipped once every package the later apt steps install is there, so a
/// second run of a finished plan changes nothing.
fn guard_apt_update(steps: &mut [Step]) {
    let Some(at) = steps.iter().position(|s| s.kind == StepKind::AptUpdate) else {
        return;
    };
    let mut packages: Vec<String> = Vec::new();
    for command in steps[at + 1..].iter().flat_map(|s| &s.commands) {
        match command {
            Command::Run { argv, .. } => {
                let lits: Vec<&str> = argv
                    .iter()
                    .map(|w| match w {
                        Word::Lit(t) => t.as_str(),
                        _ => "",
                    })
                    .collect();
                if let ["apt-get", "install", rest @ ..] = lits.as_slice() {
                    packages.extend(
                        rest.iter()
                            .filter(|p| !p.is_empty() && !p.starts_with('-'))
                            .map(|p| p.split('=').next().unwrap_or(p).to_string()),
                    );
                }
            }
            Command::AptInstallMatching { packages: p, .. } => packages.extend(p.iter().cloned()),
            _ => {}
        }
    }
    if packages.is_empty() {
        return;
    }
    steps[at].guards.push(Guard::skip(
        Check::All(packages.into_iter().map(Check::DpkgInstalled).collect()),
        "everything the plan installs with apt is installed",
    ));
    steps[at].why = "apt learns what the repository just added offers; skipped once everything \
                     the plan installs with apt is there."
        .to_string();
}

/// What a step is there for, from the decision: the findings a fix serves, the request a
/// stack step serves, and for the steps that prepare others (the keyring, the package lists,
/// the kernel headers) whatever the steps after them serve.
fn serves(step: &Step, d: &Decision<'_>) -> Vec<Serves> {
    let request = || d.request().into_iter().collect::<Vec<_>>();
    let stack = || vec![d.request().unwrap_or(Serves::NewestStack)];
    let mut out = match step.kind {
        StepKind::NouveauOff => vec![Serves::Finding(&crate::diagnose::ids::NOUVEAU_LOADED)],
        StepKind::EnrollKey
        | StepKind::LoadDriver
        | StepKind::Driver
        | StepKind::DriverPrerequisites => d.driver_serves.clone(),
        StepKind::Reboot => vec![Serves::Finding(
            &crate::diagnose::ids::DRIVER_LIBRARY_MISMATCH,
        )],
        StepKind::Verify => vec![Serves::StepsAbove],
        StepKind::CudaKeyring | StepKind::AptUpdate => {
            let mut all = Vec::new();
            if matches!(d.driver, DriverPlan::Install { .. }) {
                all.extend(d.driver_serves.iter().cloned());
            }
            if d.toolkit.is_some() && d.via == Via::Apt {
                all.extend(stack());
            }
            all
        }
        StepKind::CudaToolkit
        | StepKind::CudaEnvironment
        | StepKind::Cudnn
        | StepKind::Nccl
        | StepKind::CondaEnv
        | StepKind::CondaCuda
        | StepKind::Venv
        | StepKind::PythonPackages => stack(),
        StepKind::ReinstallTorch { nth, .. } => d
            .fixes
            .get(nth)
            .map(|f| vec![Serves::Finding(f.serves)])
            .unwrap_or_default(),
        StepKind::Framework(_)
        | StepKind::AmdgpuInstall
        | StepKind::Rocm
        | StepKind::Groups
        | StepKind::HsaOverride => request(),
    };
    out.dedup();
    out
}

/// The machine in a few lines: what a refusal rests on and what a header starts with.
fn machine_facts(machine: &Machine) -> Vec<String> {
    let mut facts = machine.gpu_lines();
    facts.push(format!("driver: {}", machine.driver_line()));
    facts.push(format!("system: {}", machine.os_line()));
    facts
}

/// The findings the plan fixes (`fixed`, those of them the machine has) and those it leaves,
/// with the latter's own fixes. Both planners list them this way.
fn findings(machine: &Machine, fixed: &[&Kind]) -> (Vec<FindingNote>, Vec<FindingNote>) {
    let mut addresses = Vec::new();
    let mut leaves = Vec::new();
    for f in &machine.findings {
        let fixes = ids::is_one_of(fixed, &f.id);
        let note = FindingNote {
            id: f.id.clone(),
            title: f.title.clone(),
            fix: (!fixes).then(|| f.fix.clone()).flatten(),
        };
        if fixes {
            addresses.push(note);
        } else {
            leaves.push(note);
        }
    }
    (addresses, leaves)
}

/// What the plan installs, one line each.
fn summary(d: &Decision<'_>) -> Vec<String> {
    let mut out = Vec::new();
    match &d.apt {
        Some(apt) => out.push(format!(
            "via {} for {} ({}, {})",
            d.via.as_str(),
            apt.os,
            apt.distro,
            apt.repo.arch
        )),
        None => out.push(format!("via {}", d.via.as_str())),
    }
    match (&d.driver, &d.load_module) {
        (_, Some(decide::LoadModule::Enroll { .. })) => out
            .push("driver: the installed one, loaded once its signing key is enrolled".to_string()),
        (_, Some(decide::LoadModule::Modprobe)) => {
            out.push("driver: the installed one, loaded".to_string());
        }
        (DriverPlan::Keep, None) => out.push("driver: keep the working driver".to_string()),
        (
            DriverPlan::Install {
                row,
                open,
                replaces,
                ..
            },
            None,
        ) => {
            let flavour = if *open { "open" } else { "proprietary" };
            let replaces = replaces
                .as_deref()
                .map_or_else(String::new, |r| format!(", replacing {r}"));
            out.push(format!(
                "driver: R{} ({flavour} kernel modules, runs CUDA up to {}){replaces}",
                row.branch, row.max_cuda
            ));
        }
        (DriverPlan::Elsewhere { needed, .. }, None) => {
            out.push(format!(
                "driver: {needed}, installed outside this plan (see notes)"
            ));
        }
    }
    if let Some(t) = &d.toolkit {
        let what = match d.via {
            Via::Conda => format!("cuda-version={t} from conda-forge, in the environment"),
            _ => format!("cuda-toolkit-{}-{}", t.major(), t.minor()),
        };
        out.push(format!("CUDA toolkit {t}: {what}"));
    }
    if let Some(c) = &d.cudnn {
        let pin = c
            .pin
            .as_deref()
            .map_or_else(String::new, |p| format!(", staying on {p}"));
        out.push(format!("cuDNN {}{pin}", c.major));
    }
    if d.nccl {
        out.push("NCCL".to_string());
    }
    if let Some(fw) = &d.framework {
        let index = fw
            .index_url
            .as_deref()
            .map_or_else(String::new, |u| format!(" from {u}"));
        out.push(format!(
            "{}: pip install {}{index}",
            fw.label, fw.requirement
        ));
    }
    match &d.env {
        Some(EnvPlan::Venv { path, python }) => {
            let made = match &d.new_python {
                None => "exists".to_string(),
                Some(new) => {
                    let version = new
                        .version()
                        .map_or_else(String::new, |v| format!("Python {v}, "));
                    format!("{version}created with {python}")
                }
            };
            out.push(format!("Python environment: {path} (venv, {made})"));
        }
        Some(EnvPlan::Conda { name, python }) => {
            out.push(format!("conda environment: {name} (Python {python})"));
        }
        None => {}
    }
    for fix in &d.fixes {
        out.push(format!("reinstall {} in {}", fix.framework.label, fix.env));
    }
    if d.reboot_for_mismatch {
        out.push("reboot to load the driver whose libraries are installed".to_string());
    }
    out
}

/// Said before anything else: what the plan cannot do here, and what needs attention.
#[expect(
    clippy::too_many_lines,
    reason = "a catalogue: each note is one independent condition and its sentence, listed in \
              the order the plan prints them; split up, the order would hide across functions"
)]
fn notes(machine: &Machine, m: &Manifests, d: &Decision<'_>) -> Vec<String> {
    let mut out = Vec::new();
    if machine.wsl && d.apt.is_some() {
        let with_driver: Vec<&str> = m
            .install
            .apt_packages
            .iter()
            .filter(|p| {
                p.origin == "nvidia-repo"
                    && p.includes_driver == Some(true)
                    && !p.pattern.contains('{')
            })
            .map(|p| p.pattern.as_str())
            .collect();
        out.push(format!(
            "This is WSL: the driver is the Windows driver. Never install a Linux driver package \
             ({}) inside WSL; this plan installs none.",
            with_driver.join(", ")
        ));
    }
    if let DriverPlan::Elsewhere { needed, reason } = &d.driver {
        out.push(format!(
            "A driver {needed} is needed and this plan cannot install it here: {reason}. The \
             steps below that need it will work once it is in place."
        ));
    }
    if let DriverPlan::Install { row, why, .. } = &d.driver
        && d.via != Via::Apt
    {
        out.push(format!(
            "{} cannot install a kernel driver, and this machine needs one: {why}. So the plan \
             starts with the apt steps that install driver R{} from NVIDIA's repository.",
            d.via.as_str(),
            row.branch
        ));
    }
    if d.nouveau && d.apt.is_none() {
        out.push(
            "nouveau holds the GPU: blacklist it (blacklist nouveau, options nouveau modeset=0 \
             in /etc/modprobe.d/blacklist-nouveau.conf), rebuild the initramfs (dracut --force \
             on RHEL/Fedora) and reboot."
                .to_string(),
        );
    }
    if let DriverPlan::Install { .. } = d.driver
        && machine.secure_boot == Some(true)
    {
        out.push(
            "Secure Boot is on: the driver's kernel modules are built by DKMS on this machine and \
             must be signed with a Machine-Owner Key. apt asks for a one-time password while \
             installing; after the reboot choose 'Enroll MOK' and enter it, or the module is \
             rejected and nvidia-smi cannot reach the driver. Canonical's signed \
             linux-modules-nvidia-<branch>-<flavour> packages avoid this (compat-cuda.md 5.7)."
                .to_string(),
        );
    }
    if d.via == Via::Apt && d.toolkit.is_some() {
        let link = &m.install.paths;
        out.push(format!(
            "{} belongs to update-alternatives ('{}'); the new toolkit may take it over. \
             `sudo update-alternatives --config {}` chooses which toolkit it points to.",
            link.toolkit_link, link.alternatives_name, link.alternatives_name
        ));
    }
    if let DriverPlan::Install { .. } = d.driver
        && machine.secure_boot.is_none()
    {
        out.push(
            "Secure Boot's state is unknown (reading it needs root): if `mokutil --sb-state` \
             says it is on, apt asks for a Machine-Owner Key password while installing the \
             driver; enroll it after the reboot ('Enroll MOK') or the module is rejected \
             (compat-cuda.md 5.7)."
                .to_string(),
        );
    }
    // The branch the machine ends on, installed or kept, when NVIDIA no longer updates it.
    let ended = match &d.driver {
        DriverPlan::Install { row, .. } => {
            (!choose::in_support(&m.cuda, row, &choose::as_of(&m.cuda))).then_some(row.branch)
        }
        DriverPlan::Keep => machine
            .working_driver()
            .map(|v| v.major())
            // Only a legacy GPU's last branch: a newer one is the driver findings' to judge.
            .filter(|b| {
                m.cuda.branch_ended(*b) && choose::last_branch(&m.cuda, &d.ccs) == Some(*b)
            }),
        DriverPlan::Elsewhere { .. } => None,
    };
    if let Some(branch) = ended {
        let legacy = if choose::last_branch(&m.cuda, &d.ccs) == Some(branch) {
            ", and its module may not build on kernels newer than its last release (no supported \
             branch drives these GPUs)"
        } else {
            ""
        };
        out.push(format!(
            "R{branch} is past its end of life{} (cuda.toml): it gets no more fixes{legacy}.",
            m.cuda
                .branch_eol(branch)
                .map_or_else(String::new, |eol| format!(" ({eol})"))
        ));
    }
    if d.reboot_for_mismatch {
        out.push(
            "The loaded nvidia kernel module is older than the installed driver libraries \
             ('Driver/library version mismatch'): reboot to load the new module."
                .to_string(),
        );
    }
    if let Some(apt) = &d.apt
        && let (Some(id), Some(version)) = (&machine.os_id, &machine.os_version)
        && format!("{id}-{version}") != apt.os
    {
        out.push(format!(
            "Planned for {} while this machine reports {id} {version}.",
            apt.os
        ));
    }
    out.extend(d.notes.iter().cloned());
    out
}

/// What the plan leaves as it is.
fn untouched(machine: &Machine, d: &Decision<'_>) -> Vec<String> {
    let mut out = Vec::new();
    for (path, version) in &machine.toolkits {
        out.push(format!(
            "the CUDA toolkit in {path}{} (left installed)",
            version
                .as_deref()
                .map_or_else(String::new, |v| format!(" ({v})"))
        ));
    }
    let mut envs: Vec<&str> = machine.frameworks.iter().map(|f| f.env.as_str()).collect();
    envs.dedup();
    let target_env = match &d.env {
        Some(EnvPlan::Venv { path, .. }) => Some(path.as_str()),
        _ => None,
    };
    for env in envs {
        if Some(env) != target_env && !d.fixes.iter().any(|f| f.env == env) {
            out.push(format!("the Python environment {env}"));
        }
    }
    if d.toolkit.is_none() || d.via != Via::Apt {
        out.push("the /usr/local/cuda link".to_string());
    }
    if !matches!(d.driver, DriverPlan::Install { .. }) {
        out.push("the driver".to_string());
    }
    out.push("firmware, BIOS and Secure Boot settings".to_string());
    out
}

/// A reboot and nothing else: the fix for a kernel module older than its libraries. Skipped
/// once the loaded module is the libraries' version.
fn reboot_step(machine: &Machine) -> Step {
    let guards = machine
        .library_version
        .as_ref()
        .map(|v| {
            Guard::skip(
                Check::FileContains {
                    path: "/proc/driver/nvidia/version".to_string(),
                    text: format!(" {v} "),
                },
                format!("the loaded kernel module is {v}, as the libraries are"),
            )
        })
        .into_iter()
        .collect();
    Step {
        kind: StepKind::Reboot,
        title: "Reboot to load the driver whose libraries are installed".to_string(),
        why: "The driver's libraries were upgraded but the old kernel module is still loaded; \
              a reboot loads the matching one (compat-cuda.md 7, Driver/library version \
              mismatch)."
            .to_string(),
        guards,
        commands: Vec::new(),
        needs_root: false,
        reboot: true,
        serves: Vec::new(),
    }
}

/// Loads a driver that is built for the running kernel: enrolls the key Secure Boot refuses
/// it for (mokutil asks for a one-time password; the firmware's MOK manager takes it at the
/// next boot), or loads it. Skipped once the module is loaded, and the enrolment once mokutil
/// knows the key (a second run before the reboot must not ask for a new password).
fn load_module_step(load: &decide::LoadModule) -> Step {
    let loaded = Guard::skip(
        Check::FileContains {
            path: "/proc/driver/nvidia/version".to_string(),
            text: "NVRM".to_string(),
        },
        "the nvidia module is loaded",
    );
    match load {
        decide::LoadModule::Enroll { key } => Step {
            kind: StepKind::EnrollKey,
            title: format!("Enroll the module-signing key {key} with Secure Boot"),
            why: "The nvidia module is built for this kernel, but Secure Boot refuses it: it is \
                  signed with a key the firmware does not trust yet. Enrolling the key, not \
                  reinstalling the driver, is the fix. mokutil asks for a one-time password; at \
                  the next boot the blue MOK manager asks for it: choose \"Enroll MOK\", \
                  \"Continue\", enter it (compat-cuda.md 5.7)."
                .to_string(),
            guards: vec![
                loaded,
                Guard::fail(
                    Check::Missing(key.clone()),
                    format!(
                        "no module-signing key at {key}: reinstalling the driver's DKMS package \
                         makes one (sudo dpkg-reconfigure the nvidia-dkms package), then run \
                         the plan again"
                    ),
                ),
                Guard::skip(
                    Check::MokKeyKnown(key.clone()),
                    "mokutil knows the key: enrolled, or waiting for the MOK manager at the \
                     next boot (reboot and choose \"Enroll MOK\")",
                ),
            ],
            commands: vec![Command::Run {
                argv: vec![
                    Word::lit("mokutil"),
                    Word::lit("--import"),
                    Word::path(key.clone()),
                ],
                sudo: true,
            }],
            needs_root: true,
            reboot: true,
            serves: Vec::new(),
        },
        decide::LoadModule::Modprobe => Step {
            kind: StepKind::LoadDriver,
            title: "Load the nvidia module built for this kernel".to_string(),
            why: "The nvidia module is built for the running kernel but not loaded; loading it \
                  is the fix (if it fails, its message names why: `sudo dmesg | grep -i nvidia`)."
                .to_string(),
            guards: vec![loaded],
            commands: vec![Command::Run {
                argv: cmd::words(["modprobe", "nvidia"]),
                sudo: true,
            }],
            needs_root: true,
            reboot: false,
            serves: Vec::new(),
        },
    }
}

/// The last step: the doctor and the smoke test say whether the plan worked.
fn verify_step() -> Step {
    Step {
        kind: StepKind::Verify,
        title: "Check the result with gpu-doctor".to_string(),
        why: "gpu-doctor doctor re-examines the machine and gpu-doctor smoke runs a small \
              computation on every GPU: the plan worked when both are clean."
            .to_string(),
        guards: vec![
            Guard::skip(
                Check::RebootPending,
                "reboot first; then run: gpu-doctor doctor && gpu-doctor smoke",
            ),
            Guard::skip(
                Check::CommandMissing("gpu-doctor".to_string()),
                "gpu-doctor is not on PATH; run gpu-doctor doctor and gpu-doctor smoke yourself",
            ),
        ],
        commands: vec![
            Command::Run {
                argv: cmd::words(["gpu-doctor", "doctor"]),
                sudo: false,
            },
            Command::Run {
                argv: cmd::words(["gpu-doctor", "smoke"]),
                sudo: false,
            },
        ],
        needs_root: false,
        reboot: false,
        serves: Vec::new(),
    }
}

#[cfg(test)]
mod value_tests {
    use super::*;

    #[test]
    fn machine_values_that_no_package_name_holds_are_refused_and_shown_clean() {
        let mut report = Report::default();
        report.host.kernel_release = Some("6.8.0-45-generic".to_string());
        report.driver.version = Some("580.159.04".to_string());
        assert!(values_fit_commands(&report).is_ok());
        for bad in [
            "\u{feff}6.8.0-45-generic",
            "6.8.0-45-generic\u{200b}",
            "6.8.0'; rm -rf / #",
            "6.8.0-45-generic\u{1b}[2J\u{0}",
            "6.8.0-\u{202e}cireneg",
        ] {
            report.host.kernel_release = Some(bad.to_string());
            let refusal = values_fit_commands(&report).unwrap_err();
            let shown = refusal.render();
            assert!(shown.contains("kernel release"), "{shown}");
            assert!(crate::sanitize::is_clean(&shown), "{shown:?}");
        }
        // An 8 MiB kernel release is refused without being shown whole.
        report.host.kernel_release = Some("6".repeat(8 << 20));
        assert!(values_fit_commands(&report).unwrap_err().render().len() < 10_000);
    }

    #[test]
    fn refusals_quote_the_machine_cleanly() {
        let refusal = Refusal {
            reason: "GPU \u{1b}]0;x\u{7}H200\u{0} is \u{2066}odd".to_string(),
            facts: vec!["driver \u{9b}31m550\u{feff}".to_string()],
        };
        let shown = refusal.render();
        assert!(crate::sanitize::is_clean(&shown), "{shown:?}");
        assert!(
            shown.contains("<U+2066>") && shown.contains("<U+FEFF>"),
            "{shown}"
        );
    }
}
