//! The driver half of a decision: keep the working driver, or which branch and kernel-module
//! flavour to install when nothing works or `--driver` asks for a change, and the options a kept
//! driver leaves out. Pure.

// The parent's types and imports, and the sibling parts: this file is one part of one decision.
use super::*;
use crate::diagnose::ids;

/// For GPUs NVIDIA's current drivers no longer support (Kepler: R470; Maxwell, Pascal, Volta:
/// R580): which ones, and that the plan stays on their last branch and its CUDA.
pub(super) fn legacy_note(machine: &Machine, m: &Manifests, ccs: &[String]) -> Option<String> {
    let last = choose::last_branch(&m.cuda, ccs)?;
    let legacy: Vec<String> = machine
        .gpus
        .iter()
        .filter(|g| {
            g.compute_capability
                .as_deref()
                .and_then(|cc| m.cuda.compute_capability(cc))
                .and_then(|row| row.last_driver_branch)
                .is_some()
        })
        .map(|g| {
            let name = g.name.as_deref().unwrap_or("GPU");
            match (&g.architecture, &g.compute_capability) {
                (Some(arch), Some(cc)) => format!("{name} ({arch}, compute capability {cc})"),
                _ => name.to_string(),
            }
        })
        .collect();
    let max_cuda = m
        .cuda
        .driver_branches
        .iter()
        .find(|b| b.branch == last)
        .map_or_else(String::new, |b| {
            format!(", which runs CUDA up to {}", b.max_cuda)
        });
    Some(format!(
        "legacy GPU: {} is supported by driver branches up to R{last} only (its last branch{max_cuda}); \
         the plan stays on R{last} and newer drivers will not drive it",
        legacy.join(", ")
    ))
}

/// What the working driver can run, when there is one. `keep`: it stays (no `--driver`), so
/// what the plan picks must run on it, as on a driver that cannot change here.
pub(super) fn working_cap(machine: &Machine, keep: bool) -> Option<DriverCap> {
    Some(DriverCap {
        version: machine.working_driver()?,
        max_cuda: machine.working_driver_cuda()?,
        planned: false,
        fixed: keep || machine.driver_fixed().is_some(),
    })
}

/// No error or warning finding: a plan with nothing named sets up the newest stable stack.
pub(super) fn healthy(machine: &Machine) -> bool {
    machine
        .findings
        .iter()
        .all(|f| f.severity == crate::report::Severity::Info)
}

/// What a driver upgrade would unlock beyond what the plan picked for the working driver, as
/// options with the command that plans them: a newer framework build, a newer toolkit.
pub(super) fn upgrade_options(
    machine: &Machine,
    m: &Manifests,
    target: &Target,
    ccs: &[String],
    as_of: &str,
    d: &Decision<'_>,
) -> Vec<String> {
    let mut out = Vec::new();
    let driver = machine.driver_version.as_deref().unwrap_or("");
    if let (Some(fw), Some(spec)) = (&d.framework, &target.framework) {
        let python = match &d.env {
            Some(EnvPlan::Conda { python, .. }) => Some(python.clone()),
            _ => target
                .python
                .clone()
                .or_else(|| machine.system_python.clone()),
        };
        if let Ok(free) = frameworks::resolve(
            m,
            super::machine_arch(machine),
            spec,
            ccs,
            None,
            None,
            python.as_deref(),
            target.cudnn,
            d.via == Via::Pip,
        ) && free.label != fw.label
            && let Some(row) = choose::lowest_branch_for(&m.cuda, &free.cuda)
                .and_then(|_| choose::auto_branch(&m.cuda, &free.cuda, ccs, as_of).ok())
        {
            out.push(format!(
                "{} needs a newer driver than the working {driver} (R{} or newer): \
                 `gpu-doctor plan {} --driver auto` plans it with the driver upgrade and a reboot.",
                free.label,
                row.branch,
                crate::plan::shell::flags(target)
            ));
        }
    }
    if target.framework.is_none()
        && let Some(t) = &d.toolkit
        && let Some(newest) = choose::newest_stable_cuda(&m.cuda, ccs, as_of, None)
        && &newest > t
        && let Ok(row) = choose::auto_branch(&m.cuda, &newest, ccs, as_of)
    {
        let flags = crate::plan::shell::flags(target);
        let asked = if flags.is_empty() {
            String::new()
        } else {
            format!("{flags} ")
        };
        out.push(format!(
            "CUDA {newest} needs driver R{} or newer (the working {driver} runs CUDA up to {t}): \
             `gpu-doctor plan {asked}--driver auto` plans it with the driver upgrade and a reboot.",
            row.branch,
        ));
    }
    out
}

/// What the driver choice depends on: the machine, the tables, the decision so far (its
/// request, GPUs and apt target), the branch `--driver` named, the working driver, and what
/// the plan installs.
pub(super) struct DriverAsk<'a, 'm> {
    pub machine: &'a Machine,
    pub m: &'m Manifests,
    pub d: &'a Decision<'m>,
    pub named: Option<&'m DriverBranch>,
    pub working: Option<&'a DriverCap>,
    pub needs: &'a [Need],
    pub as_of: &'a str,
    /// A request made without `--driver` on a machine whose driver works: what was asked must
    /// run on that driver (else a refusal naming the branch `--driver auto` would install), and
    /// what is already installed is not this plan's business.
    pub keep_request: bool,
}

/// The newest GPU's first driver release, and whether the working driver predates it.
struct GpuFloor<'a> {
    first: Option<(Version, &'a crate::plan::machine::GpuFact)>,
    unknown_to_driver: bool,
}

impl<'m> DriverAsk<'_, 'm> {
    /// Keep the working driver, install a branch, or say where the driver has to come from;
    /// and what a driver change serves (finding ids, or the request).
    pub(super) fn decide(&self) -> Result<(DriverPlan<'m>, Vec<Serves>), Refusal> {
        let unmet = self.unmet();
        if let Some(plan) = self.named_guard(&unmet)? {
            return Ok((plan, Vec::new()));
        }
        let floor = self.gpu_floor()?;
        let change = self.named.is_some()
            || self.working.is_none()
            || !unmet.is_empty()
            || floor.unknown_to_driver;
        if !change {
            return Ok((DriverPlan::Keep, Vec::new()));
        }
        let serves = self.serves(&unmet, floor.unknown_to_driver);
        let row = self.branch(&unmet, &floor)?;
        let why = self.reason(&unmet, &floor, row);
        if self.keep_request && !floor.unknown_to_driver && self.machine.driver_fixed().is_none() {
            self.refuse_upgrade(&unmet, row)?;
        }
        self.install(row, why).map(|plan| (plan, serves))
    }

    /// What the plan installs that the working driver cannot run (with `keep_request`, only
    /// what was asked); everything when no driver works.
    fn unmet(&self) -> Vec<&Need> {
        match self.working {
            Some(cap) => self
                .needs
                .iter()
                .filter(|n| !n.met_by(self.m, cap))
                .filter(|n| !self.keep_request || n.requested)
                .collect(),
            None => self.needs.iter().collect(),
        }
    }

    /// `--driver` naming the working branch (keep it, or refuse what it cannot run) or an
    /// older one (plans never downgrade).
    fn named_guard(&self, unmet: &[&Need]) -> Result<Option<DriverPlan<'m>>, Refusal> {
        let (Some(row), Some(cap)) = (self.named, self.working) else {
            return Ok(None);
        };
        let branch = cap.version.major();
        if row.branch == branch {
            return keep_or_refuse(unmet, row.branch).map(Some);
        }
        if row.branch < branch {
            return Err(Refusal::new(format!(
                "--driver {} would downgrade the working {} driver; plans never downgrade a \
                 driver (remove it first if you must)",
                row.branch,
                self.machine.driver_version.as_deref().unwrap_or("")
            )));
        }
        Ok(None)
    }

    /// The newest GPU's first driver release (no branch before it knows that GPU); a named
    /// branch below it is refused.
    fn gpu_floor(&self) -> Result<GpuFloor<'_>, Refusal> {
        let first = self.machine.newest_first_driver();
        let unknown_to_driver = first
            .as_ref()
            .zip(self.working)
            .is_some_and(|((first, _), cap)| !cap.planned && &cap.version < first);
        if let (Some(row), Some((first, gpu))) = (self.named, &first)
            && row.branch < first.major()
        {
            return Err(Refusal::new(format!(
                "--driver {} predates {}: NVIDIA's drivers list it from {first} on (R{} or newer)",
                row.branch,
                gpu.name.as_deref().unwrap_or("this GPU"),
                first.major()
            )));
        }
        Ok(GpuFloor {
            first,
            unknown_to_driver,
        })
    }

    /// The findings (or the request) a driver change serves.
    fn serves(&self, unmet: &[&Need], gpu_unknown_to_driver: bool) -> Vec<Serves> {
        let mut serves: Vec<Serves> = Vec::new();
        if self.working.is_none() {
            for kind in [
                &ids::NO_DRIVER,
                &ids::NOUVEAU_LOADED,
                &ids::DRIVER_TOO_OLD_FOR_GPU,
            ] {
                if self.machine.has(kind) {
                    push_unique(&mut serves, Serves::Finding(kind));
                }
            }
        }
        if gpu_unknown_to_driver {
            push_unique(&mut serves, Serves::Finding(&ids::DRIVER_TOO_OLD_FOR_GPU));
        }
        for need in unmet {
            if let Some(need) = &need.serves {
                push_unique(&mut serves, need.clone());
            }
        }
        if self.named.is_some()
            && let Some(request) = self.d.request()
        {
            push_unique(&mut serves, request);
        }
        serves
    }

    /// The branch to install: the named one if it runs everything, else the one `auto_branch`
    /// picks for the hardest unmet CUDA, raised to the GPUs' first branch and to frameworks'
    /// own driver floors.
    fn branch(&self, unmet: &[&Need], floor: &GpuFloor<'_>) -> Result<&'m DriverBranch, Refusal> {
        if let Some(row) = self.named {
            if let Some(cap) = DriverCap::planned(row)
                && let Some(need) = self.needs.iter().find(|n| !n.met_by(self.m, &cap))
            {
                return Err(Refusal::new(format!(
                    "--driver {} cannot run {} (CUDA {}): R{} runs CUDA up to {}",
                    row.branch, need.what, need.cuda, row.branch, row.max_cuda
                )));
            }
            return Ok(row);
        }
        let hardest = unmet
            .iter()
            .filter(|n| n.native)
            .map(|n| n.cuda.clone())
            .chain(unmet.iter().filter(|n| !n.native).map(|n| n.cuda.clone()))
            .max();
        let row = self.auto_row(hardest)?;
        let row = match floor.first.as_ref().map(|(v, _)| v.major()) {
            Some(first) if row.branch < first => self.first_knowing(first)?,
            _ => row,
        };
        self.raised_to_framework_floors(row)
    }

    /// `auto_branch` for the CUDA needed (the newest stable one these GPUs run when nothing
    /// asks for more). Wheels run through minor-version compatibility: a branch that does not
    /// run their CUDA natively can still run them (Kepler's R470 and cu118 wheels), so when
    /// `auto_branch` finds none, the newest such branch these GPUs still have, supported or
    /// their last.
    fn auto_row(&self, hardest: Option<Version>) -> Result<&'m DriverBranch, Refusal> {
        let (m, d, as_of) = (self.m, self.d, self.as_of);
        let cuda = match hardest {
            Some(c) => c,
            None => choose::newest_stable_cuda(&m.cuda, &d.ccs, as_of, None).ok_or_else(|| {
                Refusal::new("no CUDA release in the manifests serves these GPUs")
            })?,
        };
        choose::auto_branch(&m.cuda, &cuda, &d.ccs, as_of).or_else(|why| {
            let last = choose::last_branch(&m.cuda, &d.ccs);
            m.cuda
                .driver_branches
                .iter()
                .rev()
                .filter(|b| b.verified && last.is_none_or(|l| b.branch <= l))
                .filter(|b| choose::in_support(&m.cuda, b, as_of) || Some(b.branch) == last)
                .find(|b| self.runs_everything(b))
                .ok_or_else(|| Refusal::new(why))
        })
    }

    /// A GPU newer than the branch (an RTX 5090 on R550): the lowest supported branch from
    /// `first` on, designated ones first, as `auto_branch` prefers.
    fn first_knowing(&self, first: u64) -> Result<&'m DriverBranch, Refusal> {
        let (m, as_of) = (self.m, self.as_of);
        let last = choose::last_branch(&m.cuda, &self.d.ccs);
        let fits: Vec<&DriverBranch> = m
            .cuda
            .driver_branches
            .iter()
            .filter(|b| b.verified && b.branch >= first)
            .filter(|b| last.is_none_or(|last| b.branch <= last))
            .filter(|b| choose::in_support(&m.cuda, b, as_of))
            .collect();
        fits.iter()
            .find(|b| b.designation.is_some())
            .or_else(|| fits.first())
            .copied()
            .ok_or_else(|| {
                Refusal::new(format!(
                    "no supported driver branch from R{first} on (the first that knows these \
                     GPUs) is in the manifests"
                ))
            })
    }

    /// A framework's own floor (JAX's R580 for CUDA 13) can sit above the branch: the next
    /// supported branch that runs everything.
    fn raised_to_framework_floors(
        &self,
        row: &'m DriverBranch,
    ) -> Result<&'m DriverBranch, Refusal> {
        let runs = |c: DriverCap| self.needs.iter().all(|n| n.met_by(self.m, &c));
        if DriverCap::planned(row).is_none_or(runs) {
            return Ok(row);
        }
        self.m
            .cuda
            .driver_branches
            .iter()
            .filter(|b| b.branch > row.branch && choose::in_support(&self.m.cuda, b, self.as_of))
            .find(|b| self.runs_everything(b))
            .ok_or_else(|| {
                Refusal::new("no supported driver branch runs everything the plan installs")
            })
    }

    /// Whether a planned install of `branch` is known to run everything the plan installs.
    fn runs_everything(&self, branch: &DriverBranch) -> bool {
        DriverCap::planned(branch).is_some_and(|c| self.needs.iter().all(|n| n.met_by(self.m, &c)))
    }

    /// Why the driver changes, in the plan's words.
    fn reason(&self, unmet: &[&Need], floor: &GpuFloor<'_>, row: &DriverBranch) -> String {
        let machine = self.machine;
        if let (true, Some((first, gpu))) = (floor.unknown_to_driver, &floor.first) {
            format!(
                "the working driver {} predates {} (NVIDIA's drivers list it from {first} on)",
                machine.driver_version.as_deref().unwrap_or(""),
                gpu.name.as_deref().unwrap_or("this GPU")
            )
        } else if self.working.is_none() {
            if machine.nouveau_loaded {
                "no NVIDIA driver is loaded (nouveau holds the GPU)".to_string()
            } else {
                "no NVIDIA driver is loaded".to_string()
            }
        } else if let Some(need) = unmet.first() {
            format!(
                "the working driver {} runs CUDA up to {}, and {} needs CUDA {}",
                machine.driver_version.as_deref().unwrap_or(""),
                machine.driver_cuda.as_deref().unwrap_or("?"),
                need.what,
                need.cuda
            )
        } else {
            format!("--driver {} was asked for", row.branch)
        }
    }

    /// Without `--driver`, a working driver is kept: a request it cannot run is refused,
    /// naming the upgrade `--driver auto` would plan.
    fn refuse_upgrade(&self, unmet: &[&Need], row: &DriverBranch) -> Result<(), Refusal> {
        let (Some(cap), Some(need)) = (self.working, unmet.first()) else {
            return Ok(());
        };
        let floor = need
            .floor
            .as_ref()
            .map_or_else(String::new, |f| format!(" and driver {f} or newer"));
        Err(Refusal::new(format!(
            "{} needs CUDA {}{floor}, and the working driver {} runs CUDA up to {}. Plans keep \
             a working driver unless asked: `gpu-doctor plan {} --driver auto` plans the upgrade \
             to R{} (and a reboot); leave out the version, extra or --cuda that asks for more, \
             and the plan picks what this driver runs.",
            need.what,
            need.cuda,
            cap.version,
            cap.max_cuda,
            self.d.request_flags.as_deref().unwrap_or_default(),
            row.branch
        )))
    }

    /// The install of `row` (its packages checked against NVIDIA's repository for the
    /// target), or where the driver has to come from when this plan cannot install it.
    fn install(&self, row: &'m DriverBranch, why: String) -> Result<DriverPlan<'m>, Refusal> {
        let (machine, m, d) = (self.machine, self.m, self.d);
        let elsewhere = |reason: String| DriverPlan::Elsewhere {
            needed: format!("R{} or newer", row.branch),
            reason,
        };
        if let Some(reason) = machine.driver_fixed() {
            return Ok(elsewhere(format!("{why}; {reason}")));
        }
        let Some(apt) = &d.apt else {
            return Ok(elsewhere(format!(
                "{why}; this plan has apt steps only for Ubuntu 22.04 and 24.04: install it by \
                 NVIDIA's driver installation guide for this system"
            )));
        };
        let (open, flavour_why) = flavour(machine, m, &d.ccs, row.branch)?;
        let ids = [apt.nvidia_repo.as_str()];
        for package in crate::plan::apt::driver_packages(m, row.branch, open).unwrap_or_default() {
            if let crate::manifest::Carried::No(why) = m.repos.lookup(&ids, &package, None, &[]) {
                return Err(Refusal::new(format!(
                    "driver R{} for {}: NVIDIA's {} repository has no {package} ({why})",
                    row.branch, apt.os, apt.distro
                )));
            }
        }
        Ok(DriverPlan::Install {
            row,
            open,
            replaces: machine.working_driver().map(|v| v.as_str().to_string()),
            why,
            flavour_why,
        })
    }
}

/// The kernel-module flavour for these GPUs on `branch`, and why (install.toml driver_flavor,
/// from NVIDIA's driver installation guide): open where NVIDIA supports the GPU only with them
/// (Blackwell, Grace Hopper); proprietary where the open ones cannot drive it (before Turing);
/// otherwise the installed driver's flavour, which drives these GPUs, and with no driver the
/// branch's default (open from R560 on).
///
/// # Errors
/// GPUs that need different flavours (a Blackwell next to a Pascal): one driver cannot serve
/// both.
pub(super) fn flavour(
    machine: &Machine,
    m: &Manifests,
    ccs: &[String],
    branch: u64,
) -> Result<(bool, String), Refusal> {
    let row = m.install.driver_flavor("open");
    let min = row.and_then(|f| f.min_sm.as_deref()).unwrap_or("7.5");
    let from = row.and_then(|f| f.required_from_sm.as_deref());
    let names = row
        .map(|f| f.required_for_names.as_slice())
        .unwrap_or_default();
    let takes_open = open_modules(m, ccs);
    let needs_open = machine.gpus.iter().find(|g| {
        let by_cc = from
            .zip(g.compute_capability.as_deref())
            .is_some_and(|(from, cc)| crate::version::compare(cc, from).is_ge());
        let by_name = g
            .name
            .as_deref()
            .is_some_and(|n| names.iter().any(|w| n.contains(w.as_str())));
        by_cc || by_name
    });
    let source = "install.toml driver_flavor; NVIDIA driver installation guide, kernel modules";
    if let Some(gpu) = needs_open {
        let name = gpu.name.as_deref().unwrap_or("this GPU");
        if !takes_open {
            return Err(Refusal::new(format!(
                "{name} is supported only with NVIDIA's open kernel modules, and another GPU here \
                 (compute capability below {min}) only with the proprietary ones: one driver \
                 cannot load both ({source})"
            )));
        }
        let replacing = match (machine.working_driver(), machine.driver_open) {
            (Some(_), Some(false)) => {
                " The working driver uses the proprietary modules, which cannot drive it: this \
                 switches flavour."
            }
            _ => "",
        };
        return Ok((
            true,
            format!(
                "open kernel modules: NVIDIA supports {name} only with them ({source}).{replacing}"
            ),
        ));
    }
    if !takes_open {
        return Ok((
            false,
            format!(
                "proprietary kernel modules: the open ones drive compute capability {min} \
                 (Turing) and newer only, and a GPU here is older ({source})"
            ),
        ));
    }
    if machine.working_driver().is_some()
        && let Some(open) = machine.driver_open
    {
        let which = if open { "open" } else { "proprietary" };
        return Ok((
            open,
            format!(
                "{which} kernel modules, as the working driver has: they drive these GPUs, and \
                 switching flavours is a change of its own ({source})"
            ),
        ));
    }
    let since = row.and_then(|f| f.default_since_branch).unwrap_or(560);
    Ok(if branch >= since {
        (
            true,
            format!(
                "open kernel modules: every GPU here is compute capability {min} or newer, and \
                 they are the default from R{since} on ({source})"
            ),
        )
    } else {
        (
            false,
            format!(
                "proprietary kernel modules, the default of branches before R{since} ({source})"
            ),
        )
    })
}

pub(super) fn keep_or_refuse<'m>(unmet: &[&Need], branch: u64) -> Result<DriverPlan<'m>, Refusal> {
    match unmet.first() {
        None => Ok(DriverPlan::Keep),
        Some(need) => Err(Refusal::new(format!(
            "--driver {branch} is the working branch, but it cannot run {} (CUDA {})",
            need.what, need.cuda
        ))),
    }
}

/// Open kernel modules when every GPU is at or above the open flavour's lowest compute
/// capability (Turing; install.toml driver_flavor), else the proprietary ones.
#[must_use]
pub(super) fn open_modules(m: &Manifests, ccs: &[String]) -> bool {
    let Some(min) = m
        .install
        .driver_flavor("open")
        .and_then(|f| f.min_sm.as_deref())
        .and_then(Version::parse)
    else {
        return false;
    };
    ccs.iter()
        .filter_map(|cc| Version::parse(cc))
        .all(|cc| cc >= min)
}
