//! Choosing versions from the manifests: the CUDA releases a GPU can use, the driver branch for
//! a CUDA release, the PyTorch variant for a driver. Pure functions of the tables, tested on
//! their own; the planner strings them together. Every "no" comes back as a sentence that
//! names the facts, because it ends up in a refusal the user reads.

use crate::manifest::{
    CudaRelease, CudaTable, CudnnRelease, CudnnTable, DriverBranch, FrameworkTable, TorchBuild,
    TorchRelease,
};
use crate::version::Version;

/// What a driver can run: an installed one (exact version) or a branch the plan installs.
#[derive(Debug, Clone)]
pub struct DriverCap {
    /// The installed version, or the branch number alone (`580`) for a planned driver.
    pub version: Version,
    pub max_cuda: Version,
    pub planned: bool,
    /// The driver cannot change here (WSL, a container): choose what it runs.
    pub fixed: bool,
}

impl DriverCap {
    /// A branch row the plan would install.
    #[must_use]
    pub fn planned(row: &DriverBranch) -> Option<DriverCap> {
        Some(DriverCap {
            version: Version::parse(&row.branch.to_string())?,
            max_cuda: Version::parse(&row.max_cuda)?,
            planned: true,
            fixed: false,
        })
    }

    /// Whether programs built for `cuda` run on this driver: natively, or through minor-version
    /// compatibility (same major, driver at or above the major's floor; compat-cuda.md R2).
    /// A planned branch meets a floor inside it: NVIDIA's repository serves its current release.
    #[must_use]
    pub fn runs(&self, table: &CudaTable, cuda: &Version) -> bool {
        if cuda <= &self.max_cuda {
            return true;
        }
        if cuda.major() != self.max_cuda.major() {
            return false;
        }
        table
            .major(cuda.major())
            .and_then(|m| Version::parse(&m.minor_compat_floor))
            .is_some_and(|floor| {
                if self.planned {
                    self.version.major() >= floor.major()
                } else {
                    self.version >= floor
                }
            })
    }

    /// Whether the driver runs `cuda` natively (what a toolkit's own features and its PTX need).
    #[must_use]
    pub fn runs_natively(&self, cuda: &Version) -> bool {
        Version::parse(&cuda.major_minor()).is_some_and(|c| c <= self.max_cuda)
    }
}

/// `YYYY-MM` of the manifests' date: "today" for end-of-life checks, so a plan is the same
/// every time it is made from the same tables.
#[must_use]
pub fn as_of(table: &CudaTable) -> String {
    table.as_of()
}

/// The architecture of a compute capability, for messages (`6.1 (Pascal)`).
#[must_use]
pub fn cc_label(table: &CudaTable, cc: &str) -> String {
    match table
        .compute_capability(cc)
        .and_then(|row| row.architecture.as_deref())
    {
        Some(arch) => format!("{cc} ({arch})"),
        None => cc.to_string(),
    }
}

/// The last driver branch every one of these GPUs still has, if any has a last one.
#[must_use]
pub fn last_branch(table: &CudaTable, ccs: &[String]) -> Option<u64> {
    ccs.iter()
        .filter_map(|cc| table.compute_capability(cc)?.last_driver_branch)
        .min()
}

/// Why a CUDA release cannot serve these GPUs, or `None` when it can.
#[must_use]
pub fn cuda_refuses_gpus(table: &CudaTable, cuda: &Version, ccs: &[String]) -> Option<String> {
    refuses(table, cuda, ccs, true)
}

/// Like [`cuda_refuses_gpus`] for a pip-installed framework built with `cuda`: its wheels run
/// on an older driver of the same major through minor-version compatibility (compat-cuda.md
/// R2), so a GPU's last driver branch only has to reach the major's floor.
#[must_use]
pub fn wheels_refuse_gpus(table: &CudaTable, cuda: &Version, ccs: &[String]) -> Option<String> {
    refuses(table, cuda, ccs, false)
}

fn refuses(table: &CudaTable, cuda: &Version, ccs: &[String], native: bool) -> Option<String> {
    let Some(major) = table.major(cuda.major()) else {
        return Some(format!("the manifests know no CUDA {}.x", cuda.major()));
    };
    for cc in ccs {
        let label = cc_label(table, cc);
        if !major.targets(cc) {
            let how = if major.removed_sm.iter().any(|r| r == cc) {
                "removed"
            } else {
                "does not target"
            };
            return Some(format!(
                "CUDA {}.x {how} compute capability {label}: it compiles for {} to {} (cuda.toml, \
                 CUDA {} release notes)",
                cuda.major(),
                major.min_sm,
                major.max_sm,
                cuda.major()
            ));
        }
        if let Some(row) = table.compute_capability(cc) {
            if let Some(first) = row.first_cuda.as_deref().and_then(Version::parse)
                && cuda < &first
            {
                return Some(format!(
                    "compute capability {label} needs CUDA {first} or newer"
                ));
            }
            if let Some(last) = row.last_cuda_major
                && cuda.major() > last
            {
                return Some(format!(
                    "compute capability {label} ends with CUDA {last}.x"
                ));
            }
        }
    }
    if let Some(last) = last_branch(table, ccs)
        && let Some(row) = table.driver_branches.iter().find(|b| b.branch == last)
        && Version::parse(&row.max_cuda).is_some_and(|max| &max < cuda)
        && (native || last < major.branch_min || max_major(row) != Some(cuda.major()))
    {
        return Some(format!(
            "the last driver branch for these GPUs is R{last}, which runs CUDA up to {}",
            row.max_cuda
        ));
    }
    None
}

/// The CUDA major a branch row reports.
fn max_major(row: &DriverBranch) -> Option<u64> {
    Version::parse(&row.max_cuda).map(|v| v.major())
}

/// The lowest verified branch that runs `cuda` natively.
#[must_use]
pub fn lowest_branch_for<'t>(table: &'t CudaTable, cuda: &Version) -> Option<&'t DriverBranch> {
    let wanted = Version::parse(&cuda.major_minor())?;
    table
        .driver_branches
        .iter()
        .filter(|b| b.verified)
        .find(|b| Version::parse(&b.max_cuda).is_some_and(|max| max >= wanted))
}

/// Whether a branch is still supported on `as_of` (`YYYY-MM`): not on NVIDIA's end-of-life
/// list, and not past its own end of life.
#[must_use]
pub fn in_support(table: &CudaTable, row: &DriverBranch, as_of: &str) -> bool {
    table.branch_in_support(row, as_of)
}

/// The driver branch `--driver auto` installs for `cuda`: the lowest branch that runs it
/// natively, supports every GPU and is still supported, preferring branches NVIDIA designates
/// (Long Term Support, Production) over feature branches.
///
/// # Errors
/// A sentence naming the facts when no branch qualifies.
pub fn auto_branch<'t>(
    table: &'t CudaTable,
    cuda: &Version,
    ccs: &[String],
    as_of: &str,
) -> Result<&'t DriverBranch, String> {
    let lowest = lowest_branch_for(table, cuda)
        .ok_or_else(|| format!("no driver branch in the manifests runs CUDA {cuda}"))?;
    let last = last_branch(table, ccs);
    let candidates: Vec<&DriverBranch> = table
        .driver_branches
        .iter()
        .filter(|b| b.verified && b.branch >= lowest.branch)
        .filter(|b| last.is_none_or(|last| b.branch <= last))
        // A legacy GPU's last branch (Kepler's R470) is the only one there is for it, ended or not.
        .filter(|b| in_support(table, b, as_of) || last == Some(b.branch))
        .collect();
    candidates
        .iter()
        .find(|b| b.designation.is_some())
        .or_else(|| candidates.first())
        .copied()
        .ok_or_else(|| match last {
            Some(last) if last < lowest.branch => format!(
                "CUDA {cuda} needs driver R{} or newer, but these GPUs end with R{last}",
                lowest.branch
            ),
            _ => format!(
                "no supported driver branch from R{} on serves these GPUs (as of {as_of})",
                lowest.branch
            ),
        })
}

/// Checks a branch the user named with `--driver`: known, runs `cuda` natively when given,
/// and still serves every GPU.
///
/// # Errors
/// A sentence naming the facts.
pub fn named_branch<'t>(
    table: &'t CudaTable,
    branch: u64,
    cuda: Option<&Version>,
    ccs: &[String],
) -> Result<&'t DriverBranch, String> {
    let row = table
        .driver_branches
        .iter()
        .find(|b| b.branch == branch)
        .ok_or_else(|| {
            let known: Vec<String> = table
                .driver_branches
                .iter()
                .map(|b| b.branch.to_string())
                .collect();
            format!(
                "R{branch} is not a driver branch the manifests know ({})",
                known.join(", ")
            )
        })?;
    if let Some(last) = last_branch(table, ccs)
        && branch > last
    {
        return Err(format!(
            "R{branch} no longer supports these GPUs: their last branch is R{last}"
        ));
    }
    for cc in ccs {
        if let Some(first) = table
            .compute_capability(cc)
            .and_then(|row| row.first_cuda.as_deref())
            .and_then(Version::parse)
            && Version::parse(&row.max_cuda).is_some_and(|max| max < first)
        {
            return Err(format!(
                "R{branch} runs CUDA up to {}, but compute capability {} needs CUDA {first}",
                row.max_cuda,
                cc_label(table, cc)
            ));
        }
    }
    if let Some(cuda) = cuda
        && let Some(cap) = DriverCap::planned(row)
        && !cap.runs_natively(cuda)
    {
        let lowest = lowest_branch_for(table, cuda).map_or_else(String::new, |b| {
            format!("; CUDA {cuda} needs R{} or newer", b.branch)
        });
        return Err(format!(
            "R{branch} runs CUDA up to {}{lowest}",
            row.max_cuda
        ));
    }
    Ok(row)
}

/// The CUDA minor series of the toolkit releases, newest first: `13.4`, `13.3.1` ... as the
/// newest release of each `major.minor`.
fn series_newest_first(table: &CudaTable) -> Vec<&CudaRelease> {
    let mut out: Vec<&CudaRelease> = Vec::new();
    for release in table.releases.iter().rev() {
        let Some(v) = Version::parse(&release.version) else {
            continue;
        };
        if out
            .iter()
            .any(|r| Version::parse(&r.version).is_some_and(|o| o.major_minor() == v.major_minor()))
        {
            continue;
        }
        out.push(release);
    }
    out
}

/// The newest stable CUDA (as `major.minor`) for these GPUs: a verified release they can use
/// whose driver is one NVIDIA designates and still supports (or the GPUs' own last branch). With a `ceiling` (a driver that
/// cannot change), the newest that driver runs natively.
#[must_use]
pub fn newest_stable_cuda(
    table: &CudaTable,
    ccs: &[String],
    as_of: &str,
    ceiling: Option<&Version>,
) -> Option<Version> {
    series_newest_first(table).into_iter().find_map(|release| {
        let v = Version::parse(&release.version)?;
        let minor = Version::parse(&v.major_minor())?;
        if !release.verified || cuda_refuses_gpus(table, &minor, ccs).is_some() {
            return None;
        }
        if let Some(ceiling) = ceiling {
            return (&minor <= ceiling).then_some(minor);
        }
        let branch = auto_branch(table, &minor, ccs, as_of).ok()?;
        // A legacy GPU's last branch (Kepler's R470) carries no designation any more, but it
        // is the only one there is for it.
        let last = last_branch(table, ccs) == Some(branch.branch);
        (branch.designation.is_some() || last).then_some(minor)
    })
}

/// Whether a torch build has code for a GPU: SASS of the same major at or below its minor, or
/// PTX at or below it (the driver JIT-compiles PTX for newer GPUs). `None` when the manifests
/// do not know the build's architecture list.
#[must_use]
pub fn torch_build_covers(build: &TorchBuild, cc: &str) -> Option<bool> {
    let cc = Version::parse(cc)?;
    let sass = build.sass.as_ref()?;
    let by_sass = sass
        .iter()
        .filter_map(|s| Version::parse(s))
        .any(|s| s.major() == cc.major() && s.minor() <= cc.minor());
    let by_ptx = build
        .ptx
        .iter()
        .flatten()
        .filter_map(|p| Version::parse(p))
        .any(|p| p <= cc);
    Some(by_sass || by_ptx)
}

/// A torch build chosen for this machine.
#[derive(Debug, Clone, Copy)]
pub struct TorchPick<'t> {
    pub build: &'t TorchBuild,
    /// The build's CUDA (`12.4` of `cu124`).
    pub cuda: (u64, u64),
    /// The given driver runs it as it is; otherwise the driver has to change.
    pub driver_runs: bool,
}

/// Picks the CUDA build of a torch release for these GPUs and this driver.
///
/// Builds must have code for every GPU (a build whose architecture list the manifests do not
/// know is taken only when no known one fits) and, with `cuda`, be for that `major.minor`.
/// With a driver: the newest build it runs natively, else the oldest it runs through
/// minor-version compatibility (fewest newer-minor features missing), else the newest build
/// (and the driver must change). Without one: the newest build.
///
/// # Errors
/// A sentence naming the release's builds when none fits.
pub fn torch_build<'t>(
    cuda_table: &CudaTable,
    release: &'t TorchRelease,
    ccs: &[String],
    cuda: Option<&Version>,
    driver: Option<&DriverCap>,
) -> Result<TorchPick<'t>, String> {
    let mut builds: Vec<(&TorchBuild, Version, Option<bool>)> = release
        .builds
        .iter()
        .filter_map(|b| {
            let v = Version::parse(&b.cuda()?)?;
            let covers = ccs
                .iter()
                .map(|cc| torch_build_covers(b, cc))
                .try_fold(true, |all, c| c.map(|c| all && c));
            Some((b, v, covers))
        })
        .filter(|(_, v, _)| cuda.is_none_or(|c| v.major_minor() == c.major_minor()))
        .filter(|(_, _, covers)| *covers != Some(false))
        .collect();
    let variants = || {
        release
            .builds
            .iter()
            .map(|b| b.variant.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if builds.iter().any(|(_, _, covers)| covers.is_some()) {
        builds.retain(|(_, _, covers)| covers.is_some());
    }
    builds.sort_by(|a, b| a.1.cmp(&b.1));
    let pick = |(build, v, _): &(&'t TorchBuild, Version, Option<bool>), runs: bool| TorchPick {
        build,
        cuda: (v.major(), v.minor()),
        driver_runs: runs,
    };
    let Some(newest) = builds.last() else {
        let wanted = cuda.map_or_else(String::new, |c| format!(" for CUDA {c}"));
        let labels: Vec<String> = ccs.iter().map(|cc| cc_label(cuda_table, cc)).collect();
        return Err(format!(
            "torch {} has no CUDA build{wanted} with code for compute capability {} (its builds: {})",
            release.version,
            labels.join(", "),
            variants()
        ));
    };
    let Some(driver) = driver else {
        return Ok(pick(newest, false));
    };
    if let Some(native) = builds
        .iter()
        .rev()
        .find(|(_, v, _)| driver.runs_natively(v))
    {
        return Ok(pick(native, true));
    }
    if let Some(compat) = builds.iter().find(|(_, v, _)| driver.runs(cuda_table, v)) {
        return Ok(pick(compat, true));
    }
    Ok(pick(newest, false))
}

/// The newest torch release with a build for these GPUs (and `cuda`, when given) that
/// supports `python` (when known). With a driver that cannot change (WSL, a container), the
/// newest whose build that driver runs.
#[must_use]
pub fn newest_torch<'t>(
    cuda_table: &CudaTable,
    frameworks: &'t FrameworkTable,
    ccs: &[String],
    cuda: Option<&Version>,
    python: Option<&str>,
    fixed_driver: Option<&DriverCap>,
    accept: &dyn Fn(&TorchRelease) -> bool,
) -> Option<&'t TorchRelease> {
    frameworks.torch.iter().rev().find(|release| {
        let python_ok = python.is_none_or(|p| {
            crate::version::python_fits(p, &release.python_min, release.python_max.as_deref())
        });
        let build = torch_build(cuda_table, release, ccs, cuda, fixed_driver);
        python_ok
            && build.is_ok_and(|pick| fixed_driver.is_none() || pick.driver_runs)
            && accept(release)
    })
}

/// The cuDNN release line to stay on (`9.10.2`) when a newer release of `major` is known to
/// have dropped one of these GPUs or this CUDA major (cudnn.toml: 9.17 lists its compute
/// capabilities and CUDA builds without Maxwell to Volta and without CUDA 11); `None` when the
/// newest is fine. Only rows that state their support count: a row that says nothing about a
/// GPU neither drops nor keeps it.
#[must_use]
pub fn cudnn_pin(table: &CudnnTable, major: u64, cuda: &Version, ccs: &[String]) -> Option<String> {
    let rows: Vec<&CudnnRelease> = table
        .releases
        .iter()
        .filter(|r| Version::parse(&r.version).is_some_and(|v| v.major() == major))
        .collect();
    let says = |row: &CudnnRelease| -> Option<bool> {
        let gpus = ccs
            .iter()
            .map(|cc| cudnn_serves_gpu(row, cc))
            .try_fold(true, |all, s| s.map(|s| all && s));
        let explicit_builds = !row.builds.is_empty()
            && row
                .builds
                .iter()
                .all(|b| b.cuda_min.is_some() && b.cuda_max.is_some());
        let cuda_ok =
            explicit_builds.then(|| row.builds.iter().any(|b| b.cuda_major == cuda.major()));
        match (gpus, cuda_ok) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), _) => Some(true),
            _ => None,
        }
    };
    let newest_stated = rows.iter().rev().find(|r| says(r).is_some())?;
    if says(newest_stated) == Some(true) {
        return None;
    }
    rows.iter()
        .rev()
        .find(|r| says(r) == Some(true))
        .map(|r| r.version.clone())
}

/// Whether a cuDNN row serves a compute capability: by its list, else its range; `None` when
/// it states neither.
fn cudnn_serves_gpu(row: &CudnnRelease, cc: &str) -> Option<bool> {
    if !row.compute_capabilities.is_empty() {
        return Some(row.compute_capabilities.iter().any(|c| c == cc));
    }
    let cc = Version::parse(cc)?;
    let min = row.min_sm.as_deref().and_then(Version::parse);
    let max = row.max_sm.as_deref().and_then(Version::parse);
    if min.is_none() && max.is_none() {
        return None;
    }
    Some(min.is_none_or(|m| cc >= m) && max.is_none_or(|m| cc <= m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::embedded;

    fn v(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    fn ccs(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn cuda_13_is_refused_on_maxwell_and_pascal_but_not_turing() {
        let cuda = &embedded().cuda;
        let why = cuda_refuses_gpus(cuda, &v("13.0"), &ccs(&["5.2"])).unwrap();
        assert!(
            why.contains("removed compute capability 5.2 (Maxwell)"),
            "{why}"
        );
        assert!(cuda_refuses_gpus(cuda, &v("13.0"), &ccs(&["6.1"])).is_some());
        assert!(cuda_refuses_gpus(cuda, &v("13.0"), &ccs(&["7.5"])).is_none());
        // Blackwell needs 12.8; Kepler 3.7 ends with CUDA 11 and R470 (CUDA 11.4).
        let blackwell = cuda_refuses_gpus(cuda, &v("12.4"), &ccs(&["12.0"])).unwrap();
        assert!(blackwell.contains("needs CUDA 12.8"), "{blackwell}");
        let kepler = cuda_refuses_gpus(cuda, &v("11.8"), &ccs(&["3.7"])).unwrap();
        assert!(kepler.contains("R470"), "{kepler}");
        // ... but CUDA 11.8 wheels run on R470 through minor-version compatibility.
        assert!(wheels_refuse_gpus(cuda, &v("11.8"), &ccs(&["3.7"])).is_none());
        assert!(wheels_refuse_gpus(cuda, &v("12.1"), &ccs(&["3.7"])).is_some());
    }

    #[test]
    fn auto_branch_prefers_a_supported_designated_branch() {
        let cuda = &embedded().cuda;
        let as_of = as_of(cuda);
        // 12.4 needs R550 (end of life); R570's production life ended 2026-02; R580 is LTS.
        assert_eq!(
            auto_branch(cuda, &v("12.4"), &ccs(&["8.6"]), &as_of)
                .unwrap()
                .branch,
            580
        );
        assert_eq!(
            auto_branch(cuda, &v("13.2"), &ccs(&["9.0"]), &as_of)
                .unwrap()
                .branch,
            595
        );
        assert_eq!(
            auto_branch(cuda, &v("12.9"), &ccs(&["6.1"]), &as_of)
                .unwrap()
                .branch,
            580
        );
        let why = auto_branch(cuda, &v("13.2"), &ccs(&["6.1"]), &as_of).unwrap_err();
        assert!(why.contains("end with R580"), "{why}");
    }

    #[test]
    fn named_branches_are_checked_against_cuda_and_gpus() {
        let cuda = &embedded().cuda;
        assert_eq!(
            named_branch(cuda, 570, Some(&v("12.4")), &ccs(&["8.6"]))
                .unwrap()
                .branch,
            570
        );
        let old = named_branch(cuda, 570, Some(&v("13.0")), &ccs(&["8.6"])).unwrap_err();
        assert!(
            old.contains("R570 runs CUDA up to 12.8; CUDA 13.0 needs R580"),
            "{old}"
        );
        let pascal = named_branch(cuda, 590, None, &ccs(&["6.1"])).unwrap_err();
        assert!(pascal.contains("last branch is R580"), "{pascal}");
        let blackwell = named_branch(cuda, 565, None, &ccs(&["12.0"])).unwrap_err();
        assert!(blackwell.contains("needs CUDA 12.8"), "{blackwell}");
        assert!(named_branch(cuda, 123, None, &ccs(&["8.6"])).is_err());
    }

    #[test]
    fn newest_stable_cuda_follows_the_gpu_and_a_fixed_driver() {
        let cuda = &embedded().cuda;
        let as_of = as_of(cuda);
        assert_eq!(
            newest_stable_cuda(cuda, &ccs(&["9.0"]), &as_of, None),
            Some(v("13.2"))
        );
        assert_eq!(
            newest_stable_cuda(cuda, &ccs(&["6.1"]), &as_of, None),
            Some(v("12.9"))
        );
        assert_eq!(
            newest_stable_cuda(cuda, &ccs(&["9.0"]), &as_of, Some(&v("13.0"))),
            Some(v("13.0"))
        );
    }

    #[test]
    fn torch_variant_matches_the_driver() {
        let m = embedded();
        let cuda = &m.cuda;
        let release = m.frameworks.torch_release("2.5.1").unwrap();
        // Driver 535 (CUDA 12.2): cu121 natively.
        let r535 = DriverCap {
            version: v("535.183.01"),
            max_cuda: v("12.2"),
            planned: false,
            fixed: false,
        };
        let pick = torch_build(cuda, release, &ccs(&["8.6"]), None, Some(&r535)).unwrap();
        assert_eq!(
            (pick.build.variant.as_str(), pick.driver_runs),
            ("cu121", true)
        );
        // No driver: the newest build.
        let pick = torch_build(cuda, release, &ccs(&["8.6"]), None, None).unwrap();
        assert_eq!(pick.build.variant, "cu124");
        // Driver 470 (CUDA 11.4): cu118 through minor-version compatibility.
        let r470 = DriverCap {
            version: v("470.256.02"),
            max_cuda: v("11.4"),
            planned: false,
            fixed: false,
        };
        let pick = torch_build(cuda, release, &ccs(&["8.6"]), None, Some(&r470)).unwrap();
        assert_eq!(
            (pick.build.variant.as_str(), pick.driver_runs),
            ("cu118", true)
        );
        // Asking for a CUDA the release has no build for.
        let why = torch_build(cuda, release, &ccs(&["8.6"]), Some(&v("12.6")), None).unwrap_err();
        assert!(why.contains("cu118, cu121, cu124"), "{why}");
    }

    #[test]
    fn cudnn_stays_on_9_10_for_pascal_and_cuda_11() {
        let table = &embedded().cudnn;
        assert_eq!(
            cudnn_pin(table, 9, &v("12.9"), &ccs(&["6.1"])).as_deref(),
            Some("9.10.2")
        );
        assert_eq!(
            cudnn_pin(table, 9, &v("11.8"), &ccs(&["8.6"])).as_deref(),
            Some("9.10.2")
        );
        assert_eq!(cudnn_pin(table, 9, &v("12.4"), &ccs(&["8.6"])), None);
        assert_eq!(cudnn_pin(table, 9, &v("13.2"), &ccs(&["9.0"])), None);
    }

    #[test]
    fn pascal_gets_cu126_from_the_newest_release_that_has_it() {
        let m = embedded();
        let release = newest_torch(
            &m.cuda,
            &m.frameworks,
            &ccs(&["6.1"]),
            None,
            None,
            None,
            &|_| true,
        )
        .unwrap();
        let pick = torch_build(&m.cuda, release, &ccs(&["6.1"]), None, None).unwrap();
        assert_eq!(pick.build.variant, "cu126");
        assert_eq!(release.version, "2.14");
        // A Blackwell GPU (12.0) needs cu128 or newer.
        let pick = torch_build(
            &m.cuda,
            m.frameworks.torch_release("2.8").unwrap(),
            &ccs(&["12.0"]),
            None,
            None,
        )
        .unwrap();
        assert_eq!(pick.build.variant, "cu129");
    }
}
