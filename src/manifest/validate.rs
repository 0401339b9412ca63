//! Content checks for a manifest set: the rules that keep facts traceable and lookups exact.
//!
//! Each table module knows its own keys and order and reports through a [`Checker`]; this
//! module holds the shared rules (what a source, date, version or compute capability must look
//! like) and the public entry point.

use std::collections::HashSet;
use std::fmt;
use std::hash::Hash;

use super::matching::{compare, strict_parts};
use super::{Manifests, Meta, SCHEMA};

/// One thing wrong with a manifest set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestProblem {
    /// Manifest file name (`cuda.toml`).
    pub file: &'static str,
    /// The row, as a reader finds it in the file (`release 12.4.0`, `gpu "H200 SXM"`).
    pub row: String,
    pub kind: ProblemKind,
    /// What is wrong, in words.
    pub message: String,
}

impl fmt::Display for ManifestProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.file, self.row, self.message)
    }
}

/// The rule a [`ManifestProblem`] breaks, for callers that sort or count problems.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProblemKind {
    /// `[meta]` is off: wrong schema, bad `updated` date.
    Meta,
    /// A row has no `source`, so its fact cannot be traced.
    MissingSource,
    /// A date is not `YYYY-MM-DD` (or `YYYY-MM` where a month is all the source gives).
    BadDate,
    /// A version is not plain dotted numbers.
    BadVersion,
    /// A compute capability is not `N.M`.
    BadComputeCapability,
    /// A PCI device id is not `0x` and four lowercase hex digits.
    BadPciId,
    /// An ordered list is out of order.
    NotSorted,
    /// Two rows share a key.
    Duplicate,
    /// A value contradicts another one (a range upside down, a reference to nothing).
    Inconsistent,
}

/// Checks a whole manifest set and returns every problem found, in file order.
///
/// An empty list means the set is safe to use for lookups: every row is sourced, every
/// version parses, ordered tables are ascending and keys are unique.
#[must_use]
pub fn validate(manifests: &Manifests) -> Vec<ManifestProblem> {
    let mut checker = Checker::default();
    manifests.cuda.check(&mut checker);
    manifests.gpus.check(&mut checker);
    manifests.frameworks.check(&mut checker);
    manifests.cudnn.check(&mut checker);
    manifests.install.check(&mut checker);
    manifests.errors.check(&mut checker);
    manifests.gpu_ids.check(&mut checker);
    manifests.amd_gpu_ids.check(&mut checker);
    manifests.rocm.check(&mut checker);
    manifests.repos.check(&mut checker);
    manifests.pypi.check(&mut checker);
    manifests.extension_arch.check(&mut checker);
    forward_compat_agrees(manifests, &mut checker);
    checker.problems
}

/// `gpus.toml`'s hand-kept `forward_compat` and `gpu-ids.toml`'s generated verdict agree for
/// every id both hold: two tables that disagree would make the answer depend on which was asked.
fn forward_compat_agrees(manifests: &Manifests, c: &mut Checker) {
    c.file = <super::GpuTable as super::ManifestFile>::FILE;
    for gpu in &manifests.gpus.gpus {
        for id in &gpu.pci_device_ids {
            let generated = super::gpus::device_id(id)
                .and_then(|device| manifests.gpu_ids.forward_compat(device));
            if generated.is_some_and(|g| g != gpu.forward_compat) {
                c.report(
                    format!("gpu \"{}\"", gpu.name),
                    ProblemKind::Inconsistent,
                    format!(
                        "forward_compat = {} but gpu-ids.toml's [forward_compat] says {} for {id}",
                        gpu.forward_compat, !gpu.forward_compat
                    ),
                );
            }
        }
    }
}

/// Collects problems for one manifest set. Methods return whether the value passed, so callers
/// can skip follow-on checks that would only repeat the same fault.
#[derive(Debug, Default)]
pub(super) struct Checker {
    /// The file being checked; set by [`Checker::start`].
    file: &'static str,
    problems: Vec<ManifestProblem>,
}

impl Checker {
    pub(super) fn report(
        &mut self,
        row: impl Into<String>,
        kind: ProblemKind,
        message: impl Into<String>,
    ) {
        self.problems.push(ManifestProblem {
            file: self.file,
            row: row.into(),
            kind,
            message: message.into(),
        });
    }

    /// Begins checking a file: later problems are reported against it. Checks its `[meta]`.
    pub(super) fn start(&mut self, file: &'static str, meta: &Meta) {
        self.file = file;
        if meta.schema != SCHEMA {
            self.report(
                "meta",
                ProblemKind::Meta,
                format!("schema is {}, expected {SCHEMA}", meta.schema),
            );
        }
        if !is_date(&meta.updated) {
            self.report(
                "meta",
                ProblemKind::Meta,
                format!("updated `{}` is not a YYYY-MM-DD date", meta.updated),
            );
        }
        if meta.gaps.iter().any(|gap| gap.trim().is_empty()) {
            self.report("meta", ProblemKind::Meta, "gaps holds an empty entry");
        }
    }

    /// The provenance every row carries: a non-empty `source` and a `checked` date.
    pub(super) fn provenance(&mut self, row: &str, source: &str, checked: &str) {
        if source.trim().is_empty() {
            self.report(row, ProblemKind::MissingSource, "source is empty");
        }
        if !is_date(checked) {
            self.report(
                row,
                ProblemKind::BadDate,
                format!("checked `{checked}` is not a YYYY-MM-DD date"),
            );
        }
    }

    pub(super) fn month(&mut self, row: &str, field: &str, value: &str) {
        if !is_month(value) {
            self.report(
                row,
                ProblemKind::BadDate,
                format!("{field} `{value}` is not a YYYY-MM month"),
            );
        }
    }

    pub(super) fn version(&mut self, row: &str, field: &str, value: &str) -> bool {
        let ok = strict_parts(value).is_some();
        if !ok {
            self.report(
                row,
                ProblemKind::BadVersion,
                format!("{field} `{value}` is not a dotted numeric version"),
            );
        }
        ok
    }

    pub(super) fn opt_version(&mut self, row: &str, field: &str, value: Option<&str>) {
        if let Some(value) = value {
            self.version(row, field, value);
        }
    }

    /// A compute capability: `N.M` with a one- or two-digit major and a one-digit minor.
    pub(super) fn cc(&mut self, row: &str, field: &str, value: &str) -> bool {
        let ok = match value.split_once('.') {
            Some((major, minor)) => {
                (1..=2).contains(&major.len())
                    && minor.len() == 1
                    && major
                        .bytes()
                        .chain(minor.bytes())
                        .all(|b| b.is_ascii_digit())
            }
            None => false,
        };
        if !ok {
            self.report(
                row,
                ProblemKind::BadComputeCapability,
                format!("{field} `{value}` is not a compute capability like 9.0"),
            );
        }
        ok
    }

    pub(super) fn ccs(&mut self, row: &str, field: &str, values: &[String]) {
        for value in values {
            self.cc(row, field, value);
        }
    }

    /// `first` must not come after `last` (both already known to parse).
    pub(super) fn range(&mut self, row: &str, first: &str, last: &str) {
        if compare(first, last).is_gt() {
            self.report(
                row,
                ProblemKind::Inconsistent,
                format!("range starts at {first}, after its end {last}"),
            );
        }
    }

    /// Reports rows of an ordered table that repeat or go backwards. `rows` yields each row's
    /// label and key, in file order.
    pub(super) fn ascending<K: Ord + fmt::Display>(
        &mut self,
        table: &str,
        rows: impl IntoIterator<Item = (String, K)>,
    ) {
        self.ascending_by(table, rows, Ord::cmp);
    }

    /// [`Checker::ascending`] for version keys, compared as versions (`12.10` after `12.9`).
    pub(super) fn ascending_versions<'a>(
        &mut self,
        table: &str,
        rows: impl IntoIterator<Item = (String, &'a str)>,
    ) {
        self.ascending_by(table, rows, |a, b| compare(a, b));
    }

    /// [`Checker::ascending`] with a caller's order, for keys that mix numbers and versions.
    pub(super) fn ascending_by<K: fmt::Display>(
        &mut self,
        table: &str,
        rows: impl IntoIterator<Item = (String, K)>,
        order: impl Fn(&K, &K) -> std::cmp::Ordering,
    ) {
        let mut previous: Option<K> = None;
        for (row, key) in rows {
            if let Some(before) = &previous {
                match order(before, &key) {
                    std::cmp::Ordering::Less => {}
                    std::cmp::Ordering::Equal => self.report(
                        row,
                        ProblemKind::Duplicate,
                        format!("duplicate {table} {key}"),
                    ),
                    std::cmp::Ordering::Greater => self.report(
                        row,
                        ProblemKind::NotSorted,
                        format!("{table} {key} comes after {before}; the list must be ascending"),
                    ),
                }
            }
            previous = Some(key);
        }
    }

    /// Reports keys that occur more than once, wherever they are in the table.
    pub(super) fn unique<K: Eq + Hash + fmt::Display>(
        &mut self,
        table: &str,
        rows: impl IntoIterator<Item = (String, K)>,
    ) {
        let mut seen = HashSet::new();
        for (row, key) in rows {
            let message = format!("duplicate {table} {key}");
            if !seen.insert(key) {
                self.report(row, ProblemKind::Duplicate, message);
            }
        }
    }
}

fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 10
        && bytes[4] == b'-'
        && bytes[7] == b'-'
        && is_month(&text[..7])
        && text[8..].bytes().all(|b| b.is_ascii_digit())
        && (1..=31).contains(&text[8..].parse::<u8>().unwrap_or(0))
}

fn is_month(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 7
        && bytes[4] == b'-'
        && text[..4].bytes().all(|b| b.is_ascii_digit())
        && text[5..].bytes().all(|b| b.is_ascii_digit())
        && (1..=12).contains(&text[5..].parse::<u8>().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_months() {
        assert!(is_date("2026-11-29"));
        for bad in [
            "2026-11-29 ",
            "2026-13-01",
            "2026-11-32",
            "26-11-29",
            "2026/11/29",
            "2026-1-29",
            "",
        ] {
            assert!(!is_date(bad), "{bad:?}");
        }
        assert!(is_month("2028-06"));
        assert!(!is_month("June 2028"));
    }

    #[test]
    fn compute_capabilities_look_like_major_dot_minor() {
        let mut checker = Checker::default();
        for good in ["9.0", "12.1", "3.7"] {
            assert!(checker.cc("row", "cc", good), "{good}");
        }
        for bad in ["9", "9.00", "sm_90", "90", "123.0", ".5"] {
            assert!(!checker.cc("row", "cc", bad), "{bad}");
        }
    }

    #[test]
    fn ascending_reports_duplicates_and_reversals_separately() {
        let mut checker = Checker::default();
        let rows = [
            ("a", "12.4"),
            ("b", "12.10"),
            ("c", "12.10.0"),
            ("d", "12.9"),
        ];
        checker.ascending_versions(
            "CUDA version",
            rows.map(|(row, key)| (row.to_string(), key)),
        );
        let kinds: Vec<_> = checker
            .problems
            .iter()
            .map(|p| (p.row.as_str(), p.kind))
            .collect();
        assert_eq!(
            kinds,
            [("c", ProblemKind::Duplicate), ("d", ProblemKind::NotSorted)]
        );
    }
}
