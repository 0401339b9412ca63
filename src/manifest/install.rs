//! `install.toml`: where NVIDIA software installs from and under which names, for the install
//! plan: NVIDIA's apt repositories and keyring, package-name patterns (NVIDIA repository and
//! Ubuntu archive), driver kernel-module flavours, toolkit paths, conda channels.

use serde::{Deserialize, Serialize};

use super::validate::{Checker, ProblemKind};
use super::{ManifestFile, Meta};

/// The contents of `install.toml`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InstallTable {
    pub meta: Meta,
    #[serde(rename = "apt_repo")]
    pub apt_repos: Vec<AptRepo>,
    pub apt_keyring: AptKeyring,
    pub local_repo: LocalRepo,
    #[serde(rename = "apt_package")]
    pub apt_packages: Vec<AptPackage>,
    #[serde(rename = "driver_flavor")]
    pub driver_flavors: Vec<DriverFlavor>,
    #[serde(rename = "ubuntu_transition", default)]
    pub ubuntu_transitions: Vec<UbuntuTransition>,
    /// NVIDIA's CUDA repository for the Red Hat family, per EL release: the commands that
    /// install each module flavour and a pinned branch.
    #[serde(rename = "rpm_driver", default)]
    pub rpm_drivers: Vec<RpmDriver>,
    pub paths: Paths,
    pub conda: Conda,
    #[serde(rename = "conda_channel")]
    pub conda_channels: Vec<CondaChannel>,
}

/// One of NVIDIA's CUDA apt repositories.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AptRepo {
    /// NVIDIA's distribution tag: `ubuntu2204`, `ubuntu2404`, `debian12`.
    pub distro: String,
    /// `x86_64`, `sbsa` (Arm servers) or `arm64` (Jetson).
    pub arch: String,
    pub url: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// How apt comes to trust NVIDIA's repository.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AptKeyring {
    pub package: String,
    /// The `.deb` to fetch from the repository URL and install with `dpkg -i`.
    pub deb: String,
    pub legacy_deb: String,
    pub keyring_path: String,
    /// The sources entry the keyring package writes (`{distro}`, `{arch}` placeholders).
    pub sources_line: String,
    pub deb_signing_key: String,
    pub deb_signing_key_full: String,
    pub rpm_signing_key: String,
    /// The key NVIDIA rotated out in 2022; still enrolled on old systems.
    pub rotated_out_key: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// The local-installer (`.deb` repository on disk) flow.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LocalRepo {
    pub pin_file: String,
    pub pin_target: String,
    pub cudnn_installer: String,
    pub cudnn_keyring_glob: String,
    pub cudnn_keyring_target: String,
    pub source: String,
    pub checked: String,
}

/// An apt package name pattern.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AptPackage {
    /// Stable handle for code (`cuda-toolkit-minor`); the pattern may change, the id should not.
    pub id: String,
    /// The name with placeholders (`cuda-toolkit-{major}-{minor}`); see [`fill`].
    pub pattern: String,
    /// `nvidia-repo` or `ubuntu-archive`: never mix the two for the driver.
    pub origin: String,
    pub meaning: String,
    pub example: Option<String>,
    /// Whether installing it pulls a driver; `None` when the reference does not say.
    pub includes_driver: Option<bool>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A kind of driver kernel module and the packages that install it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DriverFlavor {
    /// `open` or `proprietary`.
    pub name: String,
    /// [`AptPackage::id`]s.
    pub packages: Vec<String>,
    /// Lowest compute capability it drives; `None` = every GPU the branch supports.
    pub min_sm: Option<String>,
    /// From this compute capability on, NVIDIA supports the GPU with this flavour only
    /// (Blackwell: the open modules).
    pub required_from_sm: Option<String>,
    /// GPUs whose name contains one of these need this flavour whatever their compute
    /// capability (Grace Hopper, `GH200`, is compute capability 9.0 like the H100).
    #[serde(default)]
    pub required_for_names: Vec<String>,
    pub default_since_branch: Option<u64>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// How NVIDIA's CUDA repository installs the driver on the Red Hat family (RHEL, Rocky Linux,
/// AlmaLinux, CentOS Stream, Oracle Linux) of some EL releases. Commands take `{branch}`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RpmDriver {
    /// EL major releases the row covers (`[8, 9]`, `[10]`).
    pub releases: Vec<u64>,
    /// The `.repo` file to add with `dnf config-manager --add-repo` (`{release}`, `{arch}`).
    pub repo: String,
    /// Installs the open kernel modules and the driver.
    pub install_open: String,
    /// Installs the proprietary kernel modules and the driver.
    pub install_proprietary: String,
    /// Installs the driver of one branch with the proprietary modules (`{branch}`).
    pub install_branch: String,
    /// Run before another flavour or branch is installed (a module stream reset), if any.
    pub switch_first: Option<String>,
    /// How to keep updates on the branch once installed.
    pub hold: Option<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// An Ubuntu-archive driver branch seen moving to another through transitional packages.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct UbuntuTransition {
    pub from_branch: u64,
    pub to_branch: u64,
    pub flavour: String,
    /// Ubuntu code names where it was seen.
    pub ubuntu: Vec<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// Where a toolkit installed from NVIDIA's packages lives, and the nouveau blacklist.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Paths {
    pub toolkit_root: String,
    pub toolkit_link: String,
    pub toolkit_bin: String,
    pub toolkit_lib: String,
    /// `update-alternatives` name that owns the `/usr/local/cuda` link.
    pub alternatives_name: String,
    pub nouveau_blacklist_file: String,
    pub nouveau_blacklist_lines: Vec<String>,
    pub runfile_nouveau_file: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// How conda expresses CUDA.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Conda {
    /// Metapackage that pins every toolkit component to one release.
    pub cuda_version_package: String,
    /// Virtual package: the highest CUDA the driver fully supports.
    pub driver_virtual_package: String,
    pub override_env: String,
    pub nvidia_label: String,
    /// From this CUDA version on, conda-forge and the nvidia channel ship the same packages.
    pub channels_identical_from: String,
    pub not_in_conda: Vec<String>,
    /// Last PyTorch release on the Anaconda `pytorch` channel.
    pub pytorch_channel_last: String,
    pub pytorch_conda_forge_package: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A conda channel's CUDA packages for a range of CUDA versions.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CondaChannel {
    pub channel: String,
    pub cuda_min: Option<String>,
    pub cuda_max: Option<String>,
    pub packages: Vec<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A `{placeholder}` that [`fill`] was given no value for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no value for `{{{name}}}` in `{pattern}`")]
pub struct UnfilledPlaceholder {
    pub name: String,
    pub pattern: String,
}

/// The placeholders install patterns may use.
const PLACEHOLDERS: [&str; 9] = [
    "major", "minor", "patch", "branch", "version", "distro", "arch", "flavour", "kernel",
];

/// Replaces `{name}` placeholders in an install pattern
/// (`fill("cuda-toolkit-{major}-{minor}", &[("major", "12"), ("minor", "8")])` is
/// `cuda-toolkit-12-8`).
///
/// # Errors
///
/// [`UnfilledPlaceholder`] for the first placeholder without a value, so a plan never carries
/// a half-filled package name.
pub fn fill(pattern: &str, values: &[(&str, &str)]) -> Result<String, UnfilledPlaceholder> {
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else {
            out.push_str(&rest[open..]);
            return Ok(out);
        };
        let name = &after[..close];
        let value = values
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| *value)
            .ok_or_else(|| UnfilledPlaceholder {
                name: name.to_string(),
                pattern: pattern.to_string(),
            })?;
        out.push_str(value);
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The `{...}` names a pattern uses.
fn placeholders(pattern: &str) -> impl Iterator<Item = &str> {
    pattern
        .split('{')
        .skip(1)
        .filter_map(|piece| piece.split_once('}').map(|(name, _)| name))
}

impl AptPackage {
    /// This package's name for concrete values; see [`fill`].
    ///
    /// # Errors
    ///
    /// [`UnfilledPlaceholder`] when a placeholder of the pattern has no value.
    pub fn fill(&self, values: &[(&str, &str)]) -> Result<String, UnfilledPlaceholder> {
        fill(&self.pattern, values)
    }

    /// The package name and, for a pinned pattern (`libnccl2={version}-1+cuda{major}.{minor}`),
    /// the version pattern after `=`: apt needs the two apart when the version is looked up on
    /// the machine (`apt-cache madison`) rather than known in advance.
    #[must_use]
    pub fn name_and_version_pattern(&self) -> (&str, Option<&str>) {
        match self.pattern.split_once('=') {
            Some((name, version)) => (name, Some(version)),
            None => (&self.pattern, None),
        }
    }
}

impl CondaChannel {
    /// Whether this row speaks for a CUDA version (inside `cuda_min..=cuda_max`, open ends
    /// unbounded), compared as dotted numbers.
    #[must_use]
    pub fn covers(&self, cuda: &str) -> bool {
        let at_least = self
            .cuda_min
            .as_deref()
            .is_none_or(|min| super::matching::compare(min, cuda).is_le());
        let at_most = self
            .cuda_max
            .as_deref()
            .is_none_or(|max| super::matching::compare(cuda, max).is_le());
        at_least && at_most
    }
}

impl InstallTable {
    #[must_use]
    pub fn apt_repo(&self, distro: &str, arch: &str) -> Option<&AptRepo> {
        self.apt_repos
            .iter()
            .find(|repo| repo.distro == distro && repo.arch == arch)
    }

    #[must_use]
    pub fn apt_package(&self, id: &str) -> Option<&AptPackage> {
        self.apt_packages.iter().find(|package| package.id == id)
    }

    /// The Red Hat family row for EL major `release`; the newest row when the release is not
    /// known or not listed (a new release keeps its predecessor's packaging until a row says
    /// otherwise).
    #[must_use]
    pub fn rpm_driver(&self, release: Option<u64>) -> Option<&RpmDriver> {
        release
            .and_then(|r| self.rpm_drivers.iter().find(|d| d.releases.contains(&r)))
            .or_else(|| {
                self.rpm_drivers
                    .iter()
                    .max_by_key(|d| d.releases.iter().max().copied())
            })
    }

    /// The Ubuntu-archive transition that moves `branch`'s packages of `flavour` ("generic",
    /// "server") to another branch, if one was seen.
    #[must_use]
    pub fn ubuntu_transition(&self, branch: u64, flavour: &str) -> Option<&UbuntuTransition> {
        self.ubuntu_transitions
            .iter()
            .find(|t| t.from_branch == branch && t.flavour == flavour)
    }

    #[must_use]
    pub fn driver_flavor(&self, name: &str) -> Option<&DriverFlavor> {
        self.driver_flavors
            .iter()
            .find(|flavor| flavor.name == name)
    }

    /// Each `[[rpm_driver]]` row: sourced, for some EL release, with a `{branch}` to fill.
    fn check_rpm_drivers(&self, c: &mut Checker) {
        for row in &self.rpm_drivers {
            let label = format!("rpm_driver {:?}", row.releases);
            c.provenance(&label, &row.source, &row.checked);
            if row.releases.is_empty() {
                c.report(&label, ProblemKind::Inconsistent, "no EL release listed");
            }
            if !row.install_branch.contains("{branch}") {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    "install_branch does not name {branch}",
                );
            }
        }
    }

    pub(super) fn check(&self, c: &mut Checker) {
        c.start(Self::FILE, &self.meta);
        for repo in &self.apt_repos {
            let label = format!("apt_repo {}/{}", repo.distro, repo.arch);
            c.provenance(&label, &repo.source, &repo.checked);
        }
        c.unique(
            "apt repository",
            self.apt_repos.iter().map(|repo| {
                let key = format!("{}/{}", repo.distro, repo.arch);
                (format!("apt_repo {key}"), key)
            }),
        );
        let keyring = &self.apt_keyring;
        c.provenance("apt_keyring", &keyring.source, &keyring.checked);
        Self::check_pattern(c, "apt_keyring", &keyring.sources_line);
        let local = &self.local_repo;
        c.provenance("local_repo", &local.source, &local.checked);
        for pattern in [
            &local.pin_file,
            &local.cudnn_installer,
            &local.cudnn_keyring_glob,
        ] {
            Self::check_pattern(c, "local_repo", pattern);
        }

        for package in &self.apt_packages {
            let label = format!("apt_package {}", package.id);
            c.provenance(&label, &package.source, &package.checked);
            Self::check_pattern(c, &label, &package.pattern);
            if !matches!(package.origin.as_str(), "nvidia-repo" | "ubuntu-archive") {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!(
                        "origin `{}` is not nvidia-repo or ubuntu-archive",
                        package.origin
                    ),
                );
            }
        }
        c.unique(
            "apt package id",
            self.apt_packages
                .iter()
                .map(|package| (format!("apt_package {}", package.id), package.id.as_str())),
        );

        for flavor in &self.driver_flavors {
            let label = format!("driver_flavor {}", flavor.name);
            c.provenance(&label, &flavor.source, &flavor.checked);
            if let Some(min_sm) = &flavor.min_sm {
                c.cc(&label, "min_sm", min_sm);
            }
            for id in &flavor.packages {
                if self.apt_package(id).is_none() {
                    c.report(
                        &label,
                        ProblemKind::Inconsistent,
                        format!("package `{id}` is not an apt_package id"),
                    );
                }
            }
        }
        self.check_rpm_drivers(c);
        for transition in &self.ubuntu_transitions {
            let label = format!(
                "ubuntu_transition {}->{}",
                transition.from_branch, transition.to_branch
            );
            c.provenance(&label, &transition.source, &transition.checked);
        }

        let paths = &self.paths;
        c.provenance("paths", &paths.source, &paths.checked);
        for pattern in [&paths.toolkit_root, &paths.toolkit_bin, &paths.toolkit_lib] {
            Self::check_pattern(c, "paths", pattern);
        }
        let conda = &self.conda;
        c.provenance("conda", &conda.source, &conda.checked);
        c.version(
            "conda",
            "channels_identical_from",
            &conda.channels_identical_from,
        );
        c.version("conda", "pytorch_channel_last", &conda.pytorch_channel_last);
        Self::check_pattern(c, "conda", &conda.nvidia_label);
        for channel in &self.conda_channels {
            let label = format!("conda_channel {}", channel.channel);
            c.provenance(&label, &channel.source, &channel.checked);
            c.opt_version(&label, "cuda_min", channel.cuda_min.as_deref());
            c.opt_version(&label, "cuda_max", channel.cuda_max.as_deref());
        }
    }

    /// Placeholders must be ones [`fill`] callers know to supply.
    fn check_pattern(c: &mut Checker, row: &str, pattern: &str) {
        for name in placeholders(pattern) {
            if !PLACEHOLDERS.contains(&name) {
                c.report(
                    row,
                    ProblemKind::Inconsistent,
                    format!(
                        "unknown placeholder `{{{name}}}` in `{pattern}` (known: {})",
                        PLACEHOLDERS.join(", ")
                    ),
                );
            }
        }
    }
}

impl ManifestFile for InstallTable {
    const FILE: &'static str = "install.toml";

    fn meta(&self) -> &Meta {
        &self.meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_replaces_every_placeholder() {
        assert_eq!(
            fill(
                "cuda-toolkit-{major}-{minor}",
                &[("major", "12"), ("minor", "8")]
            )
            .as_deref(),
            Ok("cuda-toolkit-12-8")
        );
        assert_eq!(fill("nvidia-open", &[]).as_deref(), Ok("nvidia-open"));
    }

    #[test]
    fn fill_refuses_a_missing_value() {
        let error = fill("cuda-drivers-{branch}", &[("major", "12")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no value for `{branch}` in `cuda-drivers-{branch}`"
        );
    }

    #[test]
    fn a_pinned_pattern_splits_into_name_and_version() {
        let table = crate::manifest::embedded();
        let nccl = table.install.apt_package("libnccl2").unwrap();
        assert_eq!(
            nccl.name_and_version_pattern(),
            ("libnccl2", Some("{version}-1+cuda{major}.{minor}"))
        );
        let toolkit = table.install.apt_package("cuda-toolkit-minor").unwrap();
        assert_eq!(
            toolkit.name_and_version_pattern(),
            ("cuda-toolkit-{major}-{minor}", None)
        );
    }

    #[test]
    fn conda_rows_cover_their_cuda_range() {
        let table = crate::manifest::embedded();
        let rows: Vec<_> = table
            .install
            .conda_channels
            .iter()
            .filter(|row| row.channel == "conda-forge" && row.covers("12.4"))
            .flat_map(|row| row.packages.iter().map(String::as_str))
            .collect();
        assert!(
            rows.contains(&"cuda-toolkit") && rows.contains(&"nccl"),
            "{rows:?}"
        );
        assert!(!rows.contains(&"cudatoolkit"), "{rows:?}");
    }

    #[test]
    fn placeholders_are_listed_in_order() {
        let names: Vec<_> = placeholders("libnccl2={version}-1+cuda{major}.{minor}").collect();
        assert_eq!(names, ["version", "major", "minor"]);
    }
}
