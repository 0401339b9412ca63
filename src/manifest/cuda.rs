//! `cuda.toml`: CUDA toolkit releases and the drivers they need, what each driver branch reports
//! as its CUDA version, and which compute capabilities each CUDA major can target.

use serde::{Deserialize, Serialize};

use super::matching::{compare, covers, leading_major};
use super::validate::{Checker, ProblemKind};
use super::{ManifestFile, Meta, verified_default};

/// The contents of `cuda.toml`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CudaTable {
    pub meta: Meta,
    /// One row per CUDA major, ascending.
    #[serde(rename = "major")]
    pub majors: Vec<CudaMajor>,
    /// Toolkit releases, ascending by version.
    #[serde(rename = "release")]
    pub releases: Vec<CudaRelease>,
    /// Driver branches, ascending.
    #[serde(rename = "driver_branch")]
    pub driver_branches: Vec<DriverBranch>,
    /// Jetson drivers, kept apart because their numbers do not follow the branch scheme.
    #[serde(rename = "l4t_driver", default)]
    pub l4t_drivers: Vec<L4tDriver>,
    /// Compute capabilities, ascending.
    #[serde(rename = "compute_capability")]
    pub compute_capabilities: Vec<ComputeCapabilityInfo>,
    pub ptx_jit: PtxJit,
    pub driver_lifecycle: DriverLifecycle,
    /// Per release: the compute capabilities nvcc started or stopped targeting, ascending.
    #[serde(rename = "arch_support", default)]
    pub arch_support: Vec<super::arch_support::ArchSupport>,
    /// Which kernel module flavours (open, proprietary) drive which GPUs.
    #[serde(rename = "kernel_module_flavour", default)]
    pub module_flavours: Vec<ModuleFlavour>,
    /// The newest GCC each release's nvcc accepts as its host compiler, ascending
    /// (`scripts/gen-host-compiler.py`).
    #[serde(rename = "host_compiler", default)]
    pub host_compilers: Vec<HostCompiler>,
    /// Which forward-compatibility (cuda-compat) CUDA releases each host branch accepts,
    /// ascending by branch.
    #[serde(rename = "forward_compat_host", default)]
    pub forward_compat_hosts: Vec<ForwardCompatHost>,
}

/// One `[[forward_compat_host]]` row: a host driver branch and the cuda-compat packages it
/// runs, as far as the sources show: up to `accepts_up_to`, and none from `refuses_from` on.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardCompatHost {
    pub branch: u64,
    /// The newest compat CUDA (`major.minor`) the sources show the branch accepting; `None`
    /// for a branch that accepts none (a New Feature Branch).
    pub accepts_up_to: Option<String>,
    /// The oldest compat CUDA the sources show the branch refusing; `None` where none is known.
    pub refuses_from: Option<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// One `[[host_compiler]]` row: CUDA `cuda`'s nvcc refuses a GCC newer than `gcc_max`
/// (`crt/host_config.h`: "unsupported GNU version! gcc versions later than N are not
/// supported!").
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HostCompiler {
    /// `major.minor`.
    pub cuda: String,
    /// The release whose header was read (`12.8.93`).
    pub read: String,
    pub gcc_max: u32,
    pub source: String,
}

/// One `[[kernel_module_flavour]]` row: the flavours that drive GPUs named `names`, else of
/// compute capability `cc_min`..`cc_max`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleFlavour {
    /// Words a GPU's name holds for the row to hold (GH200: Hopper's 9.0, open modules only).
    #[serde(default)]
    pub names: Vec<String>,
    pub cc_min: Option<String>,
    /// `None`: every newer compute capability too.
    pub cc_max: Option<String>,
    /// Whether the open modules drive these GPUs.
    pub open: bool,
    /// Whether the proprietary modules drive them.
    pub proprietary: bool,
    pub source: String,
    pub checked: String,
}

/// What holds for a whole CUDA major: its minor-version-compatibility driver floor and the
/// compute capabilities it can compile for.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CudaMajor {
    pub major: u64,
    /// Any driver at or above this runs every X.y application of this major, minus the
    /// features minor-version compatibility leaves out (PTX JIT of newer PTX, new-minor APIs).
    pub minor_compat_floor: String,
    pub minor_compat_floor_windows: Option<String>,
    /// Lowest driver branch of the minor-compatibility range.
    pub branch_min: u64,
    /// First branch past the range (the next major's floor); `None` when open-ended.
    pub branch_below: Option<u64>,
    /// Lowest compute capability the toolkit compiles for.
    pub min_sm: String,
    /// Highest compute capability the reference confirms for this major.
    pub max_sm: String,
    /// Compute capabilities this major no longer targets.
    #[serde(default)]
    pub removed_sm: Vec<String>,
    /// Compute capabilities still built but announced for removal.
    #[serde(default)]
    pub deprecated_sm: Vec<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// One toolkit release and its "toolkit driver" (the driver it shipped with).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CudaRelease {
    /// `12.4.0` for GA, `12.4.1` for Update 1; two parts where the patch is unknown.
    pub version: String,
    /// The name NVIDIA's table uses (`CUDA 12.4 Update 1`).
    pub label: String,
    /// Minimum Linux x86_64 driver; `None` when only the branch is known.
    pub driver: Option<String>,
    pub driver_windows: Option<String>,
    pub branch: Option<u64>,
    #[serde(default = "verified_default")]
    pub verified: bool,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A driver branch and the CUDA version its `nvidia-smi` prints: the highest CUDA it supports.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DriverBranch {
    /// `550` for drivers 550.x (and Windows 551.x/552.x).
    pub branch: u64,
    pub max_cuda: String,
    /// `observed` (two or more real outputs), `thin` (few) or `inferred` (none).
    pub evidence: String,
    #[serde(default = "verified_default")]
    pub verified: bool,
    /// Driver versions seen reporting `max_cuda`.
    #[serde(default)]
    pub examples: Vec<String>,
    /// NVIDIA's data-center designation (`Long Term Support Branch`).
    pub designation: Option<String>,
    /// End of life as `YYYY-MM`, where NVIDIA gives one.
    pub eol: Option<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A Jetson (L4T) driver and the CUDA version it reports.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct L4tDriver {
    pub driver: String,
    pub reports_cuda: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// What is known about one compute capability across toolkits and drivers.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ComputeCapabilityInfo {
    pub cc: String,
    pub architecture: Option<String>,
    /// First CUDA release that supports the capability.
    pub first_cuda: Option<String>,
    /// Last CUDA major that supports it; `None` while support continues.
    pub last_cuda_major: Option<u64>,
    /// Last driver branch that supports it; `None` while support continues.
    pub last_driver_branch: Option<u64>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// How a CUDA binary finds code it can run on a GPU, in words for findings and docs.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PtxJit {
    pub sass: String,
    pub ptx: String,
    pub no_kernel_image: String,
    pub source: String,
    pub checked: String,
}

/// Driver branches NVIDIA lists as end of life.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DriverLifecycle {
    /// Branches NVIDIA names as past their end of life, ascending.
    pub end_of_life_branches: Vec<u64>,
    /// The branches of NVIDIA's newest support table; every branch older than its oldest is
    /// past its end of life ("All other previous driver branches not listed ... are end of
    /// life"). Empty: no such rule.
    #[serde(default)]
    pub supported_branches: Vec<u64>,
    /// NVIDIA's legacy branches, kept for GPUs its newer branches dropped (R470 Kepler's).
    #[serde(default)]
    pub legacy_branches: Vec<u64>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// What a CUDA release asks of the Linux driver, from [`CudaTable::min_driver_for`].
#[derive(Debug, Clone, Copy)]
pub struct DriverRequirement<'a> {
    /// The release the query resolved to (`12.4` resolves to `12.4.0`).
    pub release: &'a CudaRelease,
    /// Enough for the release through minor-version compatibility, with its limits.
    pub minor_compat_floor: &'a str,
    /// The driver the release shipped with: enough for everything it offers. `None` where the
    /// reference gives only the branch.
    pub toolkit_driver: Option<&'a str>,
}

impl CudaTable {
    /// `YYYY-MM` of the tables' date: "today" for end-of-life checks, so a verdict is the same
    /// every time it is made from the same tables.
    #[must_use]
    pub fn as_of(&self) -> String {
        self.meta.updated.chars().take(7).collect()
    }

    /// Whether a branch is still supported on `as_of` (`YYYY-MM`): not on NVIDIA's end-of-life
    /// list, and not past its own end of life.
    #[must_use]
    pub fn branch_in_support(&self, row: &DriverBranch, as_of: &str) -> bool {
        !self
            .driver_lifecycle
            .end_of_life_branches
            .contains(&row.branch)
            && !self.older_than_supported(row.branch)
            && row.eol.as_deref().is_none_or(|eol| eol >= as_of)
    }

    /// Whether branch `b` is older than every branch of NVIDIA's newest support table, which
    /// makes it past its end of life.
    fn older_than_supported(&self, b: u64) -> bool {
        let lifecycle = &self.driver_lifecycle;
        lifecycle
            .supported_branches
            .iter()
            .min()
            .is_some_and(|oldest| b < *oldest && !lifecycle.supported_branches.contains(&b))
    }

    /// Whether NVIDIA no longer updates branch `b` as of the tables' date: on the end-of-life
    /// list, older than every branch of the newest support table (or than every listed one),
    /// or past the end of life its own row gives. A branch the tables do not know at all and
    /// newer than those is taken to be in support.
    #[must_use]
    pub fn branch_ended(&self, b: u64) -> bool {
        let listed = &self.driver_lifecycle.end_of_life_branches;
        listed.contains(&b)
            || self.older_than_supported(b)
            || listed.iter().min().is_some_and(|oldest| b < *oldest)
            || self
                .driver_branches
                .iter()
                .find(|row| row.branch == b)
                .is_some_and(|row| !self.branch_in_support(row, &self.as_of()))
    }

    /// The `[[forward_compat_host]]` row of host branch `b`.
    #[must_use]
    pub fn forward_compat_host(&self, b: u64) -> Option<&ForwardCompatHost> {
        self.forward_compat_hosts.iter().find(|row| row.branch == b)
    }

    /// The end of life (`YYYY-MM`) the tables give for branch `b`, where they give one.
    #[must_use]
    pub fn branch_eol(&self, b: u64) -> Option<&str> {
        self.driver_branches
            .iter()
            .find(|row| row.branch == b)?
            .eol
            .as_deref()
    }

    /// Whether `b` is one of NVIDIA's legacy branches (kept for GPUs newer branches dropped).
    #[must_use]
    pub fn is_legacy_branch(&self, b: u64) -> bool {
        self.driver_lifecycle.legacy_branches.contains(&b)
    }

    /// The release a version names: exact (`12.4.1`) or the first of a series (`12.4` is the
    /// GA release `12.4.0`; `13.4.1` finds the `13.4` row).
    #[must_use]
    pub fn release(&self, version: &str) -> Option<&CudaRelease> {
        self.releases
            .iter()
            .find(|release| covers(version, &release.version) || covers(&release.version, version))
    }

    #[must_use]
    pub fn major(&self, major: u64) -> Option<&CudaMajor> {
        self.majors.iter().find(|row| row.major == major)
    }

    /// The drivers a CUDA release needs. `None` for a version the table does not list (there is
    /// no CUDA 12.7), even though its major's floor may still apply: see [`CudaTable::major`].
    #[must_use]
    pub fn min_driver_for(&self, cuda: &str) -> Option<DriverRequirement<'_>> {
        let release = self.release(cuda)?;
        let major = self.major(leading_major(&release.version)?)?;
        Some(DriverRequirement {
            release,
            minor_compat_floor: &major.minor_compat_floor,
            toolkit_driver: release.driver.as_deref(),
        })
    }

    /// The branch row that speaks for a driver version: the highest branch at or below the
    /// driver's first component (a Windows `551.61` belongs to R550). Includes rows carried
    /// with `verified = false`.
    #[must_use]
    #[cfg(test)]
    pub fn branch_for_driver(&self, driver: &str) -> Option<&DriverBranch> {
        let number = leading_major(driver)?;
        self.driver_branches
            .iter()
            .rev()
            .find(|row| row.branch <= number)
    }

    /// The highest CUDA version a driver supports (what its `nvidia-smi` prints), using only
    /// verified rows. For a driver from a branch newer than any verified row this is a lower
    /// bound: R620 answers `13.4` until its `13.5` is confirmed. `None` below R450.
    #[must_use]
    pub fn max_cuda_for_driver(&self, driver: &str) -> Option<&str> {
        let number = leading_major(driver)?;
        self.driver_branches
            .iter()
            .rev()
            .find(|row| row.verified && row.branch <= number)
            .map(|row| row.max_cuda.as_str())
    }

    /// The `[[host_compiler]]` row of a toolkit version's `major.minor` (`12.8.93` finds
    /// `12.8`); `None` for a release the table does not read.
    #[must_use]
    pub fn host_compiler(&self, cuda: &str) -> Option<&HostCompiler> {
        let v = crate::version::Version::parse(cuda)?;
        let wanted = v.major_minor();
        self.host_compilers.iter().find(|row| row.cuda == wanted)
    }

    #[must_use]
    pub fn compute_capability(&self, cc: &str) -> Option<&ComputeCapabilityInfo> {
        self.compute_capabilities.iter().find(|row| row.cc == cc)
    }

    /// The kernel module flavours that drive a GPU of this name and compute capability:
    /// `(open, proprietary)`; `None` when no row places it.
    #[must_use]
    pub fn module_flavours_for(&self, name: Option<&str>, cc: &str) -> Option<(bool, bool)> {
        let upper = name.map(str::to_ascii_uppercase);
        let named = self.module_flavours.iter().find(|row| {
            upper.as_deref().is_some_and(|n| {
                row.names
                    .iter()
                    .any(|w| n.contains(&w.to_ascii_uppercase()))
            })
        });
        let cc = crate::version::Version::parse(cc)?;
        let in_range = |row: &&ModuleFlavour| {
            row.names.is_empty()
                && row
                    .cc_min
                    .as_deref()
                    .and_then(crate::version::Version::parse)
                    .is_some_and(|min| cc >= min)
                && row
                    .cc_max
                    .as_deref()
                    .and_then(crate::version::Version::parse)
                    .is_none_or(|max| cc <= max)
        };
        named
            .or_else(|| self.module_flavours.iter().find(in_range))
            .map(|row| (row.open, row.proprietary))
    }

    pub(super) fn check(&self, c: &mut Checker) {
        c.start(Self::FILE, &self.meta);
        for row in &self.module_flavours {
            let label = format!(
                "kernel_module_flavour {}",
                row.cc_min.as_deref().unwrap_or(&row.names.join(","))
            );
            c.provenance(&label, &row.source, &row.checked);
            for cc in row.cc_min.iter().chain(&row.cc_max) {
                c.cc(&label, "cc", cc);
            }
            if row.names.is_empty() && row.cc_min.is_none() {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    "a row names neither GPUs nor a compute capability",
                );
            }
            if !row.open && !row.proprietary {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    "no flavour drives these GPUs",
                );
            }
        }
        self.check_majors(c);
        self.check_releases(c);
        self.check_driver_branches(c);
        self.check_capabilities(c);
        self.check_notes(c);
        self.check_arch_support(c);
        for row in &self.host_compilers {
            let label = format!("host_compiler {}", row.cuda);
            c.version(&label, "cuda", &row.cuda);
            c.version(&label, "read", &row.read);
            if row.source.trim().is_empty() {
                c.report(&label, ProblemKind::MissingSource, "no source");
            }
        }
        c.ascending_versions(
            "host_compiler",
            self.host_compilers
                .iter()
                .map(|row| (format!("host_compiler {}", row.cuda), row.cuda.as_str())),
        );
    }

    /// Majors ascending; each floor inside its own branch range.
    fn check_majors(&self, c: &mut Checker) {
        for row in &self.majors {
            let label = format!("major {}", row.major);
            c.provenance(&label, &row.source, &row.checked);
            c.version(&label, "minor_compat_floor", &row.minor_compat_floor);
            c.opt_version(
                &label,
                "minor_compat_floor_windows",
                row.minor_compat_floor_windows.as_deref(),
            );
            c.cc(&label, "min_sm", &row.min_sm);
            c.cc(&label, "max_sm", &row.max_sm);
            c.ccs(&label, "removed_sm", &row.removed_sm);
            c.ccs(&label, "deprecated_sm", &row.deprecated_sm);
            if leading_major(&row.minor_compat_floor) != Some(row.branch_min) {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!(
                        "minor_compat_floor {} is not in branch {}",
                        row.minor_compat_floor, row.branch_min
                    ),
                );
            }
        }
        c.ascending(
            "CUDA major",
            self.majors
                .iter()
                .map(|row| (format!("major {}", row.major), row.major)),
        );
    }

    /// Releases ascending, each under a known major, driver inside its branch.
    fn check_releases(&self, c: &mut Checker) {
        for row in &self.releases {
            let label = format!("release {}", row.version);
            c.provenance(&label, &row.source, &row.checked);
            c.version(&label, "version", &row.version);
            c.opt_version(&label, "driver", row.driver.as_deref());
            c.opt_version(&label, "driver_windows", row.driver_windows.as_deref());
            let Some(major) = leading_major(&row.version) else {
                continue;
            };
            if self.major(major).is_none() {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!("no [[major]] row for CUDA {major}"),
                );
            }
            if let (Some(driver), Some(branch)) = (&row.driver, row.branch)
                && leading_major(driver) != Some(branch)
            {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!("driver {driver} is not in branch {branch}"),
                );
            }
        }
        c.ascending_versions(
            "CUDA version",
            self.releases
                .iter()
                .map(|row| (format!("release {}", row.version), row.version.as_str())),
        );
    }

    /// Branches ascending and their reported CUDA versions with them.
    fn check_driver_branches(&self, c: &mut Checker) {
        for row in &self.driver_branches {
            let label = format!("driver_branch R{}", row.branch);
            c.provenance(&label, &row.source, &row.checked);
            c.version(&label, "max_cuda", &row.max_cuda);
            for example in &row.examples {
                c.version(&label, "examples", example);
            }
            if let Some(eol) = &row.eol {
                c.month(&label, "eol", eol);
            }
            if !matches!(row.evidence.as_str(), "observed" | "thin" | "inferred") {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!(
                        "evidence `{}` is not observed, thin or inferred",
                        row.evidence
                    ),
                );
            }
        }
        c.ascending(
            "driver branch",
            self.driver_branches
                .iter()
                .map(|row| (format!("driver_branch R{}", row.branch), row.branch)),
        );
        c.ascending_versions(
            "max_cuda",
            self.driver_branches.iter().map(|row| {
                (
                    format!("driver_branch R{}", row.branch),
                    row.max_cuda.as_str(),
                )
            }),
        );
    }

    /// Jetson drivers and compute capabilities (the latter ascending).
    fn check_capabilities(&self, c: &mut Checker) {
        for row in &self.l4t_drivers {
            let label = format!("l4t_driver {}", row.driver);
            c.provenance(&label, &row.source, &row.checked);
            c.version(&label, "driver", &row.driver);
            c.version(&label, "reports_cuda", &row.reports_cuda);
        }

        for row in &self.compute_capabilities {
            let label = format!("compute_capability {}", row.cc);
            c.provenance(&label, &row.source, &row.checked);
            c.cc(&label, "cc", &row.cc);
            c.opt_version(&label, "first_cuda", row.first_cuda.as_deref());
        }
        c.ascending_versions(
            "compute capability",
            self.compute_capabilities
                .iter()
                .map(|row| (format!("compute_capability {}", row.cc), row.cc.as_str())),
        );
    }

    /// The prose tables and the end-of-life list.
    fn check_notes(&self, c: &mut Checker) {
        for row in &self.forward_compat_hosts {
            let label = format!("forward_compat_host R{}", row.branch);
            c.provenance(&label, &row.source, &row.checked);
            c.opt_version(&label, "accepts_up_to", row.accepts_up_to.as_deref());
            c.opt_version(&label, "refuses_from", row.refuses_from.as_deref());
            if let (Some(up), Some(from)) = (&row.accepts_up_to, &row.refuses_from)
                && compare(up, from) != std::cmp::Ordering::Less
            {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!("accepts_up_to {up} is not older than refuses_from {from}"),
                );
            }
            if row.accepts_up_to.is_none() && row.refuses_from.is_none() {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    "neither accepts_up_to nor refuses_from".to_string(),
                );
            }
        }
        c.ascending(
            "forward-compatibility host branch",
            self.forward_compat_hosts
                .iter()
                .map(|row| (format!("forward_compat_host R{}", row.branch), row.branch)),
        );
        c.provenance("ptx_jit", &self.ptx_jit.source, &self.ptx_jit.checked);
        let lifecycle = &self.driver_lifecycle;
        c.provenance("driver_lifecycle", &lifecycle.source, &lifecycle.checked);
        c.ascending(
            "end-of-life branch",
            lifecycle
                .end_of_life_branches
                .iter()
                .map(|branch| (format!("driver_lifecycle R{branch}"), *branch)),
        );
        c.ascending(
            "supported branch",
            lifecycle
                .supported_branches
                .iter()
                .map(|branch| (format!("driver_lifecycle supported R{branch}"), *branch)),
        );
        c.ascending(
            "legacy branch",
            lifecycle
                .legacy_branches
                .iter()
                .map(|branch| (format!("driver_lifecycle legacy R{branch}"), *branch)),
        );
    }
}

impl CudaMajor {
    /// Whether this major compiles for `cc`: inside `min_sm..=max_sm` and not removed.
    /// A capability above `max_sm` may still work; the reference just does not confirm it.
    #[must_use]
    pub fn targets(&self, cc: &str) -> bool {
        compare(&self.min_sm, cc).is_le()
            && compare(cc, &self.max_sm).is_le()
            && !self.removed_sm.iter().any(|removed| removed == cc)
    }
}

impl ManifestFile for CudaTable {
    const FILE: &'static str = "cuda.toml";

    fn meta(&self) -> &Meta {
        &self.meta
    }
}
