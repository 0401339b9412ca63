//! `cudnn.toml`: cuDNN releases, the CUDA versions each has a build for, and the driver and GPU
//! architectures those builds need.

use serde::{Deserialize, Serialize};

use super::matching::{compare, leading_major};
use super::validate::{Checker, ProblemKind};
use super::{ManifestFile, Meta};

/// The contents of `cudnn.toml`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CudnnTable {
    pub meta: Meta,
    #[serde(rename = "major")]
    pub majors: Vec<CudnnMajor>,
    /// Support that ended between two known releases.
    #[serde(rename = "support_end", default)]
    pub support_ends: Vec<SupportEnd>,
    /// The first release for GPUs of some compute capabilities (Blackwell from 9.7.0).
    #[serde(rename = "support_start", default)]
    pub support_starts: Vec<SupportStart>,
    /// Releases, ascending.
    #[serde(rename = "release")]
    pub releases: Vec<CudnnRelease>,
}

/// What holds for a cuDNN major: its library name. Frameworks built for one major cannot load
/// another.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CudnnMajor {
    pub major: u64,
    pub soname: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// Support for something (CUDA 11, pre-Turing GPUs) that ended somewhere after `last_with` and
/// no later than `first_without`: the exact release is unknown, the bounds are facts.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SupportEnd {
    pub what: String,
    pub last_with: String,
    pub first_without: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// The first cuDNN release with kernels for GPUs of compute capabilities `cc`: a release
/// before `first` cannot run on them.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SupportStart {
    pub what: String,
    pub cc: Vec<String>,
    pub first: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A cuDNN release, or a run of releases sharing one support matrix (`first..=version`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CudnnRelease {
    /// First release the row covers; `None` = only `version`.
    pub first: Option<String>,
    /// Last release the row covers, read as a series (`9.10.2` covers `9.10.2.21`).
    pub version: String,
    /// Compute-capability range for every build, when the matrix gives one.
    pub min_sm: Option<String>,
    pub max_sm: Option<String>,
    /// The exact capabilities supported, when the matrix lists them one by one.
    #[serde(default)]
    pub compute_capabilities: Vec<String>,
    /// One entry per CUDA build; empty when the reference does not say.
    pub builds: Vec<CudnnBuild>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// One build of a cuDNN release ("for CUDA 12.x").
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CudnnBuild {
    pub cuda_major: u64,
    /// Lowest and highest CUDA versions it supports; `None` when unknown.
    pub cuda_min: Option<String>,
    pub cuda_max: Option<String>,
    /// Minimum Linux driver, where the matrix gives one (`450` stands for the whole r450 branch).
    pub driver_min: Option<String>,
    /// Lowest compute capability for this build, where it differs per build.
    pub min_sm: Option<String>,
    pub note: Option<String>,
}

impl CudnnTable {
    /// The lowest compute capability a cuDNN version's support matrix lists, with the row that
    /// says so: the row covering the version, else the rows on both sides of it when they agree
    /// (9.1.0 lies between 9.0.0 and 9.5.0, both 5.0). `None` where the matrices read are silent.
    #[must_use]
    pub fn min_cc_for(&self, version: &str) -> Option<(String, &CudnnRelease)> {
        fn lowest(row: &CudnnRelease) -> Option<String> {
            row.min_sm.clone().or_else(|| {
                row.compute_capabilities
                    .iter()
                    .min_by(|a, b| compare(a, b))
                    .cloned()
            })
        }
        if let Some(row) = self.release(version) {
            return Some((lowest(row)?, row));
        }
        let before = self
            .releases
            .iter()
            .rfind(|r| compare(&r.version, version).is_lt())?;
        let after = self
            .releases
            .iter()
            .find(|r| compare(r.first.as_deref().unwrap_or(&r.version), version).is_gt())?;
        let (low, high) = (lowest(before)?, lowest(after)?);
        (low == high).then_some((low, before))
    }

    /// The first release for GPUs of compute capability `cc`, where a `support_start` row names it.
    #[must_use]
    pub fn support_start_for(&self, cc: &str) -> Option<&SupportStart> {
        self.support_starts
            .iter()
            .find(|row| row.cc.iter().any(|c| compare(c, cc).is_eq()))
    }

    /// The row covering a cuDNN version (`9.10.2.21`, `9.5.1`, `8.0.1`).
    #[must_use]
    pub fn release(&self, version: &str) -> Option<&CudnnRelease> {
        self.releases.iter().find(|row| {
            super::matching::within(
                Some(row.first.as_deref().unwrap_or(&row.version)),
                &row.version,
                version,
            )
        })
    }

    /// The library name for a cuDNN major (`libcudnn.so.9`).
    #[must_use]
    pub fn soname(&self, major: u64) -> Option<&str> {
        self.majors
            .iter()
            .find(|row| row.major == major)
            .map(|row| row.soname.as_str())
    }

    pub(super) fn check(&self, c: &mut Checker) {
        c.start(Self::FILE, &self.meta);
        for row in &self.majors {
            c.provenance(&format!("major {}", row.major), &row.source, &row.checked);
        }
        c.ascending(
            "cuDNN major",
            self.majors
                .iter()
                .map(|row| (format!("major {}", row.major), row.major)),
        );
        for row in &self.support_ends {
            let label = format!("support_end \"{}\"", row.what);
            c.provenance(&label, &row.source, &row.checked);
            if c.version(&label, "last_with", &row.last_with)
                && c.version(&label, "first_without", &row.first_without)
            {
                c.range(&label, &row.last_with, &row.first_without);
            }
        }
        for row in &self.support_starts {
            let label = format!("support_start \"{}\"", row.what);
            c.provenance(&label, &row.source, &row.checked);
            c.version(&label, "first", &row.first);
            c.ccs(&label, "cc", &row.cc);
        }
        for row in &self.releases {
            let label = format!("release {}", row.version);
            c.provenance(&label, &row.source, &row.checked);
            let version_ok = c.version(&label, "version", &row.version);
            if let Some(first) = &row.first
                && c.version(&label, "first", first)
                && version_ok
            {
                c.range(&label, first, &row.version);
            }
            for (field, value) in [("min_sm", &row.min_sm), ("max_sm", &row.max_sm)] {
                if let Some(value) = value {
                    c.cc(&label, field, value);
                }
            }
            c.ccs(&label, "compute_capabilities", &row.compute_capabilities);
            for build in &row.builds {
                check_build(c, &label, build);
            }
        }
        c.ascending_versions(
            "cuDNN version",
            self.releases
                .iter()
                .map(|row| (format!("release {}", row.version), row.version.as_str())),
        );
    }
}

fn check_build(c: &mut Checker, row: &str, build: &CudnnBuild) {
    let label = format!("{row} build for CUDA {}", build.cuda_major);
    c.opt_version(&label, "driver_min", build.driver_min.as_deref());
    if let Some(min_sm) = &build.min_sm {
        c.cc(&label, "min_sm", min_sm);
    }
    for bound in [&build.cuda_min, &build.cuda_max].into_iter().flatten() {
        if c.version(&label, "cuda range", bound) && leading_major(bound) != Some(build.cuda_major)
        {
            c.report(
                &label,
                ProblemKind::Inconsistent,
                format!("CUDA {bound} is outside CUDA {}", build.cuda_major),
            );
        }
    }
    if let (Some(min), Some(max)) = (&build.cuda_min, &build.cuda_max) {
        c.range(&label, min, max);
    }
}

impl CudnnRelease {
    /// The builds that support a CUDA version: same major and inside the build's range (a build
    /// without a range accepts its whole major). cuDNN 9.10.2 has two for CUDA 12.8: the 12.8/12.9
    /// build (needs 570.26, has Blackwell) and the 12.0-12.9 one (needs 525.60.13).
    #[cfg(test)]
    pub fn builds_for<'a>(&'a self, cuda: &'a str) -> impl Iterator<Item = &'a CudnnBuild> + 'a {
        let major = leading_major(cuda);
        self.builds.iter().filter(move |build| {
            Some(build.cuda_major) == major
                && match (&build.cuda_min, &build.cuda_max) {
                    (Some(min), Some(max)) => super::matching::within(Some(min), max, cuda),
                    _ => true,
                }
        })
    }
}

impl ManifestFile for CudnnTable {
    const FILE: &'static str = "cudnn.toml";

    fn meta(&self) -> &Meta {
        &self.meta
    }
}
