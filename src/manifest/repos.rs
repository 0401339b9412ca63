//! `repos.toml`: what each package repository a plan installs from carries, so that every apt
//! line a plan writes can be checked against the repository it comes from.
//!
//! Rows are per vendor (`nvidia`, `ubuntu`; another vendor's repository is a row of its own)
//! and package families are name patterns with ranges ([`RepoPackage`]). [`RepoTable::lookup`]
//! answers whether a repository serving a system carries a concrete package (and, for a pinned
//! install, a version pattern such as `+cuda12.4`), and when not, why and what is nearest.

use serde::{Deserialize, Serialize};

use super::matching::compare;
use super::validate::{Checker, ProblemKind};
use super::{ManifestFile, Meta};

/// The contents of `repos.toml`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RepoTable {
    pub meta: Meta,
    #[serde(rename = "repo")]
    pub repos: Vec<Repo>,
    #[serde(rename = "package")]
    pub packages: Vec<RepoPackage>,
    /// The Pythons each release's own archive installs.
    #[serde(rename = "python", default)]
    pub pythons: Vec<DistroPython>,
}

/// One Python `major.minor` a release's archive installs, and what a new virtual environment
/// made with it needs from the archive first.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DistroPython {
    /// The system, as `--os` names it: `ubuntu-22.04`.
    pub os: String,
    /// `3.10`.
    pub version: String,
    /// The release's `python3`.
    #[serde(default)]
    pub default: bool,
    /// The command that runs it: `python3`, `python3.11`.
    pub command: String,
    /// The packages a new virtual environment made with it needs (`python3-venv`: Ubuntu's
    /// Python has no ensurepip without it).
    pub packages: Vec<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// One package repository.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Repo {
    /// `nvidia-cuda-ubuntu2404-x86_64`.
    pub id: String,
    /// Whose packages: `nvidia`, `ubuntu`.
    pub vendor: String,
    /// How they install: `apt`.
    pub kind: String,
    /// The system it serves, as `--os` names it: `ubuntu-24.04`.
    pub os: String,
    /// The repository's own architecture name: `x86_64`, `sbsa`.
    pub arch: String,
    pub url: String,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A family of packages some repositories carry: a name pattern and the values it takes.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RepoPackage {
    /// [`Repo::id`]s.
    pub repos: Vec<String>,
    /// `cuda-toolkit-{major}-{minor}`.
    pub name: String,
    /// The pattern of its versions, for pinned installs: `{version}-1+cuda{major}.{minor}`.
    pub version: Option<String>,
    /// Lowest CUDA `major.minor` carried.
    pub cuda_min: Option<String>,
    /// Highest; absent: every later CUDA release.
    pub cuda_max: Option<String>,
    /// CUDA minors missing inside the range.
    #[serde(default)]
    pub cuda_except: Vec<String>,
    /// For names with `{major}` alone.
    #[serde(default)]
    pub cuda_majors: Vec<u64>,
    pub branch_min: Option<u64>,
    pub branch_max: Option<u64>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// A repository's answer about one package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Carried {
    /// It is there (the id of the repository that has it).
    Yes(String),
    /// None of the repositories has it: why, in words, with what is nearest.
    No(String),
}

impl Carried {
    #[must_use]
    pub fn is_yes(&self) -> bool {
        matches!(self, Carried::Yes(_))
    }
}

/// The placeholders a concrete name filled in.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Values {
    major: Option<u64>,
    minor: Option<u64>,
    branch: Option<u64>,
}

/// Matches `text` against `pattern`, filling placeholders: `{major}` `{minor}` `{branch}` take
/// digits, `{kernel}` `{flavour}` `{version}` any non-empty text. `None` when it does not fit.
fn fit(pattern: &str, text: &str) -> Option<Values> {
    fn go(pattern: &str, text: &str, values: &mut Values) -> bool {
        let Some(open) = pattern.find('{') else {
            return pattern == text;
        };
        let (literal, rest) = pattern.split_at(open);
        let Some(text) = text.strip_prefix(literal) else {
            return false;
        };
        let Some(close) = rest.find('}') else {
            return false;
        };
        let name = &rest[1..close];
        let after = &rest[close + 1..];
        match name {
            "major" | "minor" | "branch" => {
                let digits = text.bytes().take_while(u8::is_ascii_digit).count();
                // Digits are greedy: a following literal never starts with one in our patterns.
                if digits == 0 || digits > 6 {
                    return false;
                }
                let Ok(n) = text[..digits].parse::<u64>() else {
                    return false;
                };
                match name {
                    "major" => values.major = Some(n),
                    "minor" => values.minor = Some(n),
                    _ => values.branch = Some(n),
                }
                go(after, &text[digits..], values)
            }
            _ => {
                // Free text: try every split, shortest first.
                (1..=text.len())
                    .filter(|&i| text.is_char_boundary(i))
                    .any(|i| go(after, &text[i..], values))
            }
        }
    }
    let mut values = Values::default();
    go(pattern, text, &mut values).then_some(values)
}

impl RepoPackage {
    /// Whether this family covers the filled-in values; `Err` says which bound it misses.
    fn covers(&self, v: &Values, releases: &[String]) -> Result<(), String> {
        if let Some(branch) = v.branch {
            if let Some(min) = self.branch_min
                && branch < min
            {
                return Err(format!("from R{min} on"));
            }
            if let Some(max) = self.branch_max
                && branch > max
            {
                return Err(format!("up to R{max}"));
            }
        }
        match (v.major, v.minor) {
            (Some(major), Some(minor)) => {
                let cuda = format!("{major}.{minor}");
                let range = self.range_words();
                if self
                    .cuda_min
                    .as_deref()
                    .is_some_and(|m| compare(&cuda, m).is_lt())
                    || self
                        .cuda_max
                        .as_deref()
                        .is_some_and(|m| compare(&cuda, m).is_gt())
                    || self.cuda_except.contains(&cuda)
                {
                    return Err(range);
                }
                if !releases.is_empty() && !releases.contains(&cuda) {
                    return Err(format!("{range}, and {cuda} is not a CUDA release"));
                }
            }
            (Some(major), None)
                if !self.cuda_majors.is_empty() && !self.cuda_majors.contains(&major) =>
            {
                let list: Vec<String> = self.cuda_majors.iter().map(u64::to_string).collect();
                return Err(format!("for CUDA {} only", list.join(", ")));
            }
            _ => {}
        }
        Ok(())
    }

    /// The CUDA range in words: `for CUDA 12.5 and later (not 12.5)`.
    fn range_words(&self) -> String {
        let mut out = match (&self.cuda_min, &self.cuda_max) {
            (Some(min), Some(max)) => format!("for CUDA {min} to {max}"),
            (Some(min), None) => format!("for CUDA {min} and later"),
            (None, Some(max)) => format!("for CUDA up to {max}"),
            (None, None) => "for every CUDA release".to_string(),
        };
        if !self.cuda_except.is_empty() {
            out.push_str(&format!(" except {}", self.cuda_except.join(", ")));
        }
        out
    }
}

impl RepoTable {
    /// The repositories of a vendor serving a system (`nvidia`, `ubuntu-24.04`, `x86_64`).
    pub fn serving<'a>(
        &'a self,
        vendor: &'a str,
        os: &'a str,
        arch: &'a str,
    ) -> impl Iterator<Item = &'a Repo> + 'a {
        self.repos
            .iter()
            .filter(move |r| r.vendor == vendor && r.os == os && r.arch == arch)
    }

    /// Every repository serving a system, of any vendor.
    pub fn for_system<'a>(&'a self, os: &'a str, arch: &'a str) -> impl Iterator<Item = &'a Repo> {
        self.repos
            .iter()
            .filter(move |r| r.os == os && r.arch == arch)
    }

    /// The release's own `python3`.
    #[must_use]
    pub fn default_python(&self, os: &str) -> Option<&DistroPython> {
        self.pythons.iter().find(|p| p.os == os && p.default)
    }

    /// The release's archive's Python `major.minor`, when it has it.
    #[must_use]
    pub fn distro_python(&self, os: &str, version: &str) -> Option<&DistroPython> {
        self.pythons
            .iter()
            .find(|p| p.os == os && p.version == version)
    }

    #[must_use]
    pub fn repo(&self, id: &str) -> Option<&Repo> {
        self.repos.iter().find(|r| r.id == id)
    }

    /// Whether one of `repos` carries `name`, and when `version` is given (the part of a pinned
    /// version the plan fixes, `-1+cuda12.4` or `9.10.2.`), a version of that shape.
    /// `releases`: the CUDA `major.minor` series that exist (cuda.toml), so a name for a CUDA
    /// release that never was (`cuda-toolkit-12-7`) is not carried; empty to skip that check.
    #[must_use]
    pub fn lookup(
        &self,
        repos: &[&str],
        name: &str,
        version: Option<&str>,
        releases: &[String],
    ) -> Carried {
        let mut why: Option<String> = None;
        for row in &self.packages {
            let Some(repo) = row.repos.iter().find(|r| repos.contains(&r.as_str())) else {
                continue;
            };
            let Some(mut values) = fit(&row.name, name) else {
                continue;
            };
            if let Some(version) = version.filter(|v| v.contains("+cuda"))
                && let Some(pattern) = &row.version
            {
                // The pinned part: the tail after {version} (`-1+cuda12.4`).
                let tail = pattern.split_once("{version}").map_or("", |(_, t)| t);
                let Some(filled) = fit(&format!("{{version}}{tail}"), &format!("x{version}"))
                    .or_else(|| fit(tail, version))
                else {
                    why.get_or_insert_with(|| format!("{name} has no version like {version}"));
                    continue;
                };
                values.major = filled.major;
                values.minor = filled.minor;
            }
            match row.covers(&values, releases) {
                Ok(()) => return Carried::Yes(repo.clone()),
                Err(bound) => {
                    why = Some(format!(
                        "{repo} carries {} {bound} ({})",
                        row.name, row.source
                    ));
                }
            }
        }
        Carried::No(
            why.unwrap_or_else(|| format!("no repository of {} lists {name}", repos.join(", "))),
        )
    }

    /// Whether the repositories carry `pattern` filled with a CUDA `major.minor`.
    #[must_use]
    pub fn carries_cuda(&self, repos: &[&str], pattern: &str, cuda: &str) -> bool {
        let Some((major, minor)) = cuda.split_once('.') else {
            return false;
        };
        let name = pattern.replace("{major}", major).replace("{minor}", minor);
        self.lookup(repos, &name, None, &[]).is_yes()
    }

    pub(super) fn check(&self, c: &mut Checker) {
        c.start(Self::FILE, &self.meta);
        for repo in &self.repos {
            let label = format!("repo {}", repo.id);
            c.provenance(&label, &repo.source, &repo.checked);
            if repo.vendor.trim().is_empty() || repo.kind.trim().is_empty() {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    "vendor and kind are needed",
                );
            }
        }
        c.unique(
            "repo id",
            self.repos
                .iter()
                .map(|r| (format!("repo {}", r.id), r.id.as_str())),
        );
        for row in &self.packages {
            let label = format!("package {} ({})", row.name, row.repos.join(", "));
            c.provenance(&label, &row.source, &row.checked);
            for id in &row.repos {
                if self.repo(id).is_none() {
                    c.report(
                        &label,
                        ProblemKind::Inconsistent,
                        format!("names repository {id}, which has no [[repo]] row"),
                    );
                }
            }
            c.opt_version(&label, "cuda_min", row.cuda_min.as_deref());
            c.opt_version(&label, "cuda_max", row.cuda_max.as_deref());
            if let (Some(min), Some(max)) = (&row.cuda_min, &row.cuda_max) {
                c.range(&label, min, max);
            }
            if let (Some(min), Some(max)) = (row.branch_min, row.branch_max)
                && min > max
            {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    "branch_min is above branch_max",
                );
            }
            let has = |p: &str| {
                row.name.contains(p) || row.version.as_deref().is_some_and(|v| v.contains(p))
            };
            if (row.cuda_min.is_some() || row.cuda_max.is_some())
                && !(has("{major}") && has("{minor}"))
            {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    "a CUDA range on a name without {major} and {minor}",
                );
            }
            if (row.branch_min.is_some() || row.branch_max.is_some()) && !has("{branch}") {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    "a branch range on a name without {branch}",
                );
            }
        }
        self.check_pythons(c);
    }

    /// Each release's Pythons: one `python3` a release, and every package a row installs
    /// carried by that release's own repositories.
    fn check_pythons(&self, c: &mut Checker) {
        for row in &self.pythons {
            let label = format!("python {} ({})", row.version, row.os);
            c.provenance(&label, &row.source, &row.checked);
            let ids: Vec<&str> = self
                .repos
                .iter()
                .filter(|r| r.os == row.os && r.vendor == "ubuntu")
                .map(|r| r.id.as_str())
                .collect();
            for package in &row.packages {
                if let Carried::No(why) = self.lookup(&ids, package, None, &[]) {
                    c.report(&label, ProblemKind::Inconsistent, why);
                }
            }
            let defaults = self
                .pythons
                .iter()
                .filter(|p| p.os == row.os && p.default)
                .count();
            if defaults != 1 {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!("{} has {defaults} default Pythons, not one", row.os),
                );
            }
        }
    }
}

impl ManifestFile for RepoTable {
    const FILE: &'static str = "repos.toml";

    fn meta(&self) -> &Meta {
        &self.meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_fill_their_placeholders() {
        let v = fit("cuda-toolkit-{major}-{minor}", "cuda-toolkit-12-4").unwrap();
        assert_eq!((v.major, v.minor), (Some(12), Some(4)));
        assert!(fit("cuda-toolkit-{major}-{minor}", "cuda-toolkit-12").is_none());
        assert!(fit("cuda-drivers-{branch}", "cuda-drivers").is_none());
        assert_eq!(
            fit("cuda-drivers-{branch}", "cuda-drivers-580")
                .unwrap()
                .branch,
            Some(580)
        );
        assert!(fit("linux-headers-{kernel}", "linux-headers-6.8.0-48-generic").is_some());
        assert!(fit("nvidia-driver-{branch}", "nvidia-driver-580-open").is_none());
        assert!(fit("nvidia-driver-{branch}-open", "nvidia-driver-580-open").is_some());
    }
}
