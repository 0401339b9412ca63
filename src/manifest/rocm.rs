//! `rocm.toml`: which gfx targets each ROCm release supports, which targets each PyTorch ROCm
//! wheel carries, and which `HSA_OVERRIDE_GFX_VERSION` values the maintainers give for a GPU
//! that a build lacks. The AMD rules decide "can this stack run on this GPU" with it when the
//! machine's own files (a wheel's rocBLAS kernel files) cannot say.

use serde::{Deserialize, Serialize};

use super::matching::{compare, within};
use super::validate::{Checker, ProblemKind};
use super::{ManifestFile, Meta};
use crate::version::GfxTarget;

/// The contents of `rocm.toml`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RocmTable {
    pub meta: Meta,
    #[serde(rename = "first_release")]
    pub first_releases: Vec<FirstRelease>,
    /// Official target lists per ROCm release range, ascending.
    #[serde(rename = "release")]
    pub releases: Vec<RocmRelease>,
    /// Targets of the PyTorch ROCm wheels per torch release range, ascending.
    pub torch_targets: Vec<TorchTargets>,
    #[serde(rename = "override_group")]
    pub override_groups: Vec<OverrideGroup>,
    #[serde(rename = "no_override")]
    pub no_overrides: Vec<NoOverride>,
    /// AMD's installer package per ROCm release, ascending.
    #[serde(rename = "amdgpu_install")]
    pub installers: Vec<AmdgpuInstall>,
    pub install: RocmInstallFacts,
    /// The gfx targets on which torch's ROCm builds run `addmm` with a bias (`nn.Linear`)
    /// through hipBLASLt, per the build's ROCm version, ascending.
    #[serde(rename = "torch_hipblaslt_arch", default)]
    pub torch_hipblaslt: Vec<TorchHipblasltArch>,
    /// The targets AMD's own torch builds (ROCm/pytorch's release branches: repo.radeon.com's
    /// wheels) hand every matrix product to hipBLASLt on, beyond upstream's list: their
    /// `blasPreferredBackend` prefers hipBLASLt there.
    #[serde(rename = "torch_hipblaslt_arch_amd", default)]
    pub torch_hipblaslt_amd: Vec<TorchHipblasltArch>,
}

/// Targets torch's ROCm builds hand to hipBLASLt from a ROCm version on (the `ROCM_VERSION >=`
/// gates of torch's own list).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TorchHipblasltArch {
    /// The lowest ROCm version a build needs for these targets ("6.3").
    pub rocm: String,
    pub targets: Vec<String>,
    pub source: String,
    pub checked: String,
}

/// The `amdgpu-install` package of one ROCm release.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AmdgpuInstall {
    pub rocm: String,
    /// Ubuntu release code names the package is published for (`jammy`, `noble`).
    pub codenames: Vec<String>,
    /// The package file (`amdgpu-install_6.4.60401-1_all.deb`).
    pub deb: String,
    /// The folder it is in, with `{codename}`.
    pub url: String,
    pub source: String,
    pub checked: String,
}

impl AmdgpuInstall {
    /// The package's version as dpkg records it (`6.4.60401-1` of `amdgpu-install_6.4.60401-1_all.deb`).
    #[must_use]
    pub fn version(&self) -> Option<&str> {
        self.deb
            .strip_prefix("amdgpu-install_")?
            .strip_suffix("_all.deb")
    }

    /// The folder for one Ubuntu release.
    #[must_use]
    pub fn url_for(&self, codename: &str) -> String {
        self.url.replace("{codename}", codename)
    }
}

/// What the installer is run with, and what follows it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RocmInstallFacts {
    /// apt packages AMD's steps install beside ROCm.
    pub prerequisites: Vec<String>,
    /// The groups a user needs for /dev/kfd and the render nodes.
    pub groups: Vec<String>,
    /// `--usecase` for a Radeon (a display GPU), an Instinct, and WSL.
    pub usecase_radeon: String,
    pub usecase_instinct: String,
    pub usecase_wsl: String,
    pub source: String,
    pub checked: String,
}

/// A PyTorch ROCm wheel to install: the release (`2.7.1` or a series `2.7.*`) and its index tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TorchWheel {
    pub release: String,
    pub variant: String,
}

/// The first ROCm release that supports a target.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FirstRelease {
    pub gfx: String,
    pub rocm: String,
    pub source: String,
    pub checked: String,
}

/// A range of ROCm releases sharing one official target list.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RocmRelease {
    pub first: String,
    pub last: String,
    pub targets: Vec<String>,
    pub source: String,
    pub checked: String,
}

/// The targets the ROCm wheels of a range of torch releases carry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TorchTargets {
    pub first: String,
    pub last: String,
    pub targets: Vec<String>,
    /// Targets the sources disagree on: no rule decides on them from this row.
    #[serde(default)]
    pub uncertain: Vec<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// Targets that run a sibling target's code under one `HSA_OVERRIDE_GFX_VERSION` value.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OverrideGroup {
    pub family: String,
    pub targets: Vec<String>,
    /// The value to set (`10.3.0`), naming the sibling target (gfx1030).
    pub value: String,
    pub source: String,
    pub checked: String,
}

/// Targets for which an override is no fix, and why.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NoOverride {
    pub targets: Vec<String>,
    pub reason: String,
    pub source: String,
    pub checked: String,
}

/// Whether the torch wheels of a release carry a target, by the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetCarried<'a> {
    Yes(&'a TorchTargets),
    No(&'a TorchTargets),
    /// No row for the release, or the row marks the target uncertain.
    Unknown,
}

impl RocmTable {
    /// The first ROCm release that supports `gfx`, when sourced.
    #[must_use]
    pub fn first_release(&self, gfx: &str) -> Option<&FirstRelease> {
        self.first_releases.iter().find(|r| r.gfx == gfx)
    }

    /// The official target list of a ROCm version (`6.2.0-66`, `6.4.1`), when a row covers it.
    #[must_use]
    pub fn release(&self, rocm: &str) -> Option<&RocmRelease> {
        self.releases
            .iter()
            .find(|r| within(Some(&r.first), &r.last, rocm))
    }

    /// The torch-targets row of a torch version (`2.5.1+rocm6.2`).
    #[must_use]
    pub fn torch_row(&self, torch: &str) -> Option<&TorchTargets> {
        self.torch_targets
            .iter()
            .find(|r| within(Some(&r.first), &r.last, torch))
    }

    /// Whether the ROCm wheels of `torch` carry `gfx`, by the table.
    #[must_use]
    pub fn torch_carries(&self, torch: &str, gfx: &str) -> TargetCarried<'_> {
        match self.torch_row(torch) {
            Some(row) if row.uncertain.iter().any(|t| t == gfx) => TargetCarried::Unknown,
            Some(row) if row.targets.iter().any(|t| t == gfx) => TargetCarried::Yes(row),
            Some(row) => TargetCarried::No(row),
            None => TargetCarried::Unknown,
        }
    }

    /// The newest torch-targets row whose wheels carry `gfx`.
    #[must_use]
    pub fn newest_torch_with(&self, gfx: &str) -> Option<&TorchTargets> {
        self.torch_targets
            .iter()
            .rev()
            .find(|r| r.targets.iter().any(|t| t == gfx))
    }

    /// The override group of a target, when the maintainers give one.
    #[must_use]
    pub fn override_group(&self, gfx: &str) -> Option<&OverrideGroup> {
        self.override_groups
            .iter()
            .find(|g| g.targets.iter().any(|t| t == gfx))
    }

    /// The PyTorch ROCm wheel to install for a GPU target: the newest ROCm variant of the torch
    /// release `torch` when its wheels carry the target, else the newest release whose wheels
    /// do and that publishes wheels for `python` (`3.12`, from the environment).
    #[must_use]
    pub fn torch_wheel(
        &self,
        frameworks: &super::FrameworkTable,
        torch: Option<&str>,
        gfx: &str,
        python: Option<&str>,
    ) -> Option<TorchWheel> {
        let newest_rocm = |version: &str| {
            frameworks
                .torch_release(version)?
                .builds
                .iter()
                .filter(|b| b.variant.starts_with("rocm"))
                .max_by(|a, b| {
                    compare(
                        a.variant.trim_start_matches("rocm"),
                        b.variant.trim_start_matches("rocm"),
                    )
                })
                .map(|b| b.variant.clone())
        };
        if let Some(v) = torch
            && matches!(self.torch_carries(v, gfx), TargetCarried::Yes(_))
            && let Some(variant) = newest_rocm(v)
        {
            let public = v.split('+').next().unwrap_or(v);
            // A nightly or pre-release (`2.10.0.dev20250929`) is not on the release index: its
            // series is (`2.10.*`).
            let final_release = public
                .split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()));
            let series = public.split('.').take(2).collect::<Vec<_>>().join(".");
            return Some(TorchWheel {
                release: if final_release && public.split('.').count() >= 3 {
                    public.to_string()
                } else if final_release {
                    format!("{public}.*")
                } else {
                    format!("{series}.*")
                },
                variant,
            });
        }
        let serves = |r: &super::TorchRelease| {
            let Some(mm) = python
                .and_then(crate::version::Version::parse)
                .and_then(|p| crate::version::Version::parse(&p.major_minor()))
            else {
                return true;
            };
            crate::version::Version::parse(&r.python_min).is_none_or(|m| mm >= m)
                && r.python_max
                    .as_deref()
                    .and_then(crate::version::Version::parse)
                    .is_none_or(|m| mm <= m)
        };
        self.torch_targets
            .iter()
            .rev()
            .filter(|row| row.targets.iter().any(|t| t == gfx))
            .find_map(|row| {
                let rel = frameworks.torch.iter().rev().find(|r| {
                    compare(&r.version, &row.first).is_ge()
                        && compare(&r.version, &row.last).is_le()
                        && serves(r)
                        && r.builds.iter().any(|b| b.variant.starts_with("rocm"))
                })?;
                Some(TorchWheel {
                    release: format!("{}.*", rel.version),
                    variant: newest_rocm(&rel.version)?,
                })
            })
    }

    /// The newest installer for an Ubuntu release whose ROCm lists `gfx` officially.
    #[must_use]
    #[cfg(test)]
    pub fn installer_for(&self, codename: &str, gfx: &str) -> Option<&AmdgpuInstall> {
        self.installers.iter().rev().find(|i| {
            i.codenames.iter().any(|c| c == codename)
                && self
                    .release(&i.rocm)
                    .is_some_and(|r| r.targets.iter().any(|t| t == gfx))
        })
    }

    /// Why an override is no fix for `gfx`, when the sources say so.
    #[must_use]
    pub fn no_override(&self, gfx: &str) -> Option<&NoOverride> {
        self.no_overrides
            .iter()
            .find(|n| n.targets.iter().any(|t| t == gfx))
    }

    /// Whether a torch ROCm build of ROCm `rocm` (its HIP version, "6.4.43482") runs `nn.Linear`
    /// on `gfx` through hipBLASLt, by torch's own list. A build whose ROCm is unknown is
    /// judged by the rows without a version gate only.
    #[must_use]
    pub fn torch_uses_hipblaslt(&self, rocm: Option<&str>, gfx: &str, amd_build: bool) -> bool {
        let amd: &[TorchHipblasltArch] = if amd_build {
            &self.torch_hipblaslt_amd
        } else {
            &[]
        };
        self.torch_hipblaslt.iter().chain(amd).any(|r| {
            let gated_in = match rocm {
                Some(v) => compare(&r.rocm, v).is_le(),
                None => r.rocm == "0",
            };
            gated_in && r.targets.iter().any(|t| t == gfx)
        })
    }

    pub(super) fn check(&self, c: &mut Checker) {
        c.start(Self::FILE, &self.meta);
        self.check_torch_hipblaslt(c);
        self.check_first_releases(c);
        self.check_releases(c);
        self.check_torch_targets(c);
        self.check_override_groups(c);
        self.check_installers(c);
        c.provenance("install", &self.install.source, &self.install.checked);
        self.check_no_overrides(c);
    }

    fn check_torch_hipblaslt(&self, c: &mut Checker) {
        check_hipblaslt_rows(c, "torch_hipblaslt_arch", &self.torch_hipblaslt);
        check_hipblaslt_rows(c, "torch_hipblaslt_arch_amd", &self.torch_hipblaslt_amd);
    }

    fn check_first_releases(&self, c: &mut Checker) {
        for r in &self.first_releases {
            let label = format!("first_release {}", r.gfx);
            c.provenance(&label, &r.source, &r.checked);
            c.version(&label, "rocm", &r.rocm);
            gfx_list(c, &label, std::slice::from_ref(&r.gfx));
        }
        c.unique(
            "first_release",
            self.first_releases
                .iter()
                .map(|r| (format!("first_release {}", r.gfx), r.gfx.as_str())),
        );
    }

    fn check_releases(&self, c: &mut Checker) {
        let mut previous: Option<&str> = None;
        for r in &self.releases {
            let label = format!("release {}", r.first);
            c.provenance(&label, &r.source, &r.checked);
            ascending_range(c, &label, &mut previous, &r.first, &r.last);
            gfx_list(c, &label, &r.targets);
        }
    }

    fn check_torch_targets(&self, c: &mut Checker) {
        let mut previous: Option<&str> = None;
        for r in &self.torch_targets {
            let label = format!("torch_targets {}", r.first);
            c.provenance(&label, &r.source, &r.checked);
            ascending_range(c, &label, &mut previous, &r.first, &r.last);
            gfx_list(c, &label, &r.targets);
            gfx_list(c, &label, &r.uncertain);
            if let Some(both) = r.uncertain.iter().find(|u| r.targets.contains(u)) {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!("{both} is both carried and uncertain"),
                );
            }
        }
    }

    fn check_override_groups(&self, c: &mut Checker) {
        for g in &self.override_groups {
            let label = format!("override_group {}", g.family);
            c.provenance(&label, &g.source, &g.checked);
            gfx_list(c, &label, &g.targets);
            if GfxTarget::from_override(&g.value).is_none() {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!("value `{}` is not N.N.N", g.value),
                );
            }
        }
        c.unique(
            "override target",
            self.override_groups.iter().flat_map(|g| {
                g.targets
                    .iter()
                    .map(move |t| (format!("override_group {}", g.family), t.as_str()))
            }),
        );
    }

    /// amdgpu-install rows: ascending releases, each `.deb` of its own release, each URL a
    /// repo.radeon.com folder per Ubuntu codename.
    fn check_installers(&self, c: &mut Checker) {
        let mut previous: Option<&str> = None;
        for i in &self.installers {
            let label = format!("amdgpu_install {}", i.rocm);
            c.provenance(&label, &i.source, &i.checked);
            c.version(&label, "rocm", &i.rocm);
            if previous.is_some_and(|p| compare(p, &i.rocm).is_ge()) {
                c.report(&label, ProblemKind::NotSorted, "releases are not ascending");
            }
            previous = Some(&i.rocm);
            if i.version()
                .is_none_or(|v| !v.starts_with(i.rocm.get(..3).unwrap_or("")))
            {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!(
                        "`{}` is not amdgpu-install_<version>_all.deb of this release",
                        i.deb
                    ),
                );
            }
            if !i.url.starts_with("https://repo.radeon.com/") || !i.url.contains("{codename}") {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    "url is not a repo.radeon.com folder with {codename}",
                );
            }
        }
    }

    fn check_no_overrides(&self, c: &mut Checker) {
        for n in &self.no_overrides {
            let label = format!("no_override {}", n.targets.join(","));
            c.provenance(&label, &n.source, &n.checked);
            gfx_list(c, &label, &n.targets);
            if let Some(t) = n.targets.iter().find(|t| self.override_group(t).is_some()) {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!("{t} also has an override group"),
                );
            }
        }
    }
}

/// Every name in `list` is a gfx target written the way [`GfxTarget`] writes it.
fn gfx_list(c: &mut Checker, label: &str, list: &[String]) {
    for gfx in list {
        if GfxTarget::parse(gfx).is_none_or(|t| t.to_string() != *gfx) {
            c.report(
                label,
                ProblemKind::Inconsistent,
                format!("`{gfx}` is not a gfx target name"),
            );
        }
    }
}

/// A `first..=last` row of versions: both versions, in order, and after the row before it
/// (`previous` is that row's last, updated here).
fn ascending_range<'a>(
    c: &mut Checker,
    label: &str,
    previous: &mut Option<&'a str>,
    first: &'a str,
    last: &'a str,
) {
    if c.version(label, "first", first) && c.version(label, "last", last) {
        c.range(label, first, last);
    }
    if previous.is_some_and(|p| compare(p, first).is_ge()) {
        c.report(
            label,
            ProblemKind::NotSorted,
            "ranges overlap or are not ascending",
        );
    }
    *previous = Some(last);
}

impl ManifestFile for RocmTable {
    const FILE: &'static str = "rocm.toml";

    fn meta(&self) -> &Meta {
        &self.meta
    }
}

/// One `torch_hipblaslt_arch*` block: sourced rows, ROCm versions ascending, known targets.
fn check_hipblaslt_rows(c: &mut Checker, block: &str, rows: &[TorchHipblasltArch]) {
    let mut previous: Option<&str> = None;
    for r in rows {
        let label = format!("{block} {}", r.rocm);
        c.provenance(&label, &r.source, &r.checked);
        if r.rocm != "0" {
            c.version(&label, "rocm", &r.rocm);
        }
        if previous.is_some_and(|p| compare(p, &r.rocm).is_ge()) {
            c.report(&label, ProblemKind::NotSorted, "versions are not ascending");
        }
        previous = Some(&r.rocm);
        gfx_list(c, &label, &r.targets);
    }
}
