//! Reading the reports `report merge` was given: which files (each FILE, each `*.json` of a
//! DIR), the size bound, and the version check that decides whether a file is read, refused
//! or passed over. Side effects: reading those files and folders, nothing else; what went
//! wrong is returned as data for the caller to say.
//!
//! A DIR is read one level deep: its `*.json` files, sorted by name. Subfolders are not
//! entered (a folder of nodes may hold older runs or other jobs in subfolders; name them to
//! merge them too), and names starting with `.` are passed over, because writers such as
//! `scripts/slurm-fleet.sh` stage each report as a hidden temporary file before renaming it.
//! A fleet summary found in a DIR (`report merge --json` output, which
//! `scripts/slurm-fleet.sh` writes as `summary.json` next to the node reports) is passed
//! over too; named as a FILE it is skipped with that reason.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::header::{Header, Scalar};
use super::view::NodeReport;
use crate::report::SCHEMA_VERSION;

/// Files larger than this are refused unread: a node's report is tens of kilobytes, and one
/// huge file must not exhaust the memory of the machine merging a fleet.
pub(crate) const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// The most list entries (GPUs, findings, environments, frameworks, toolkits, library copies,
/// smoke devices) kept over all the reports of one merge, and the most reports: what is kept
/// is what costs memory, and a fleet's reports are read whole before the summary is made.
/// Files past either are not read, each skipped with that reason.
pub(crate) const MAX_KEPT_ENTRIES: usize = 400_000;
/// See [`MAX_KEPT_ENTRIES`].
pub(crate) const MAX_REPORTS: usize = 50_000;

/// Reasons longer than this are cut: a parser error may quote a field of the file.
const MAX_REASON_CHARS: usize = 300;

/// A report that was read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Loaded {
    /// The path as it was given or found (`DIR/name.json`).
    pub file: String,
    pub report: NodeReport,
}

/// Why a file was not merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SkipKind {
    /// Valid JSON, but not an object with a `schema_version` of 1 or more (or a fleet summary).
    NotAReport,
    /// A report of a newer schema than this gpu-doctor reads.
    NewerSchema,
    /// A report of an older schema than this gpu-doctor reads.
    OlderSchema,
    /// Not JSON, cut short, or a known field holding the wrong type.
    Corrupt,
    /// Over [`MAX_BYTES`].
    TooLarge,
    /// Missing, not a regular file, or not readable.
    Unreadable,
    /// Not read: the merge's time budget was spent, or its limits on what is kept were met.
    NotRead,
}

/// A file that was not merged, and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct Skipped {
    pub file: String,
    pub kind: SkipKind,
    pub reason: String,
}

/// Everything read from the paths given.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Inputs {
    pub reports: Vec<Loaded>,
    /// Sorted by file.
    pub skipped: Vec<Skipped>,
    /// Things passed over on purpose (subfolders, fleet summaries in a DIR), for a note.
    pub passed_over: Vec<String>,
}

/// What one file turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Classified {
    Report(Box<NodeReport>),
    /// The output of `report merge --json`.
    FleetSummary,
    Skip(SkipKind, String),
}

/// Reads every FILE and every DIR's `*.json` (see the module docs), each file once, until
/// `end` (the budget a scan gets: `--timeout` and its slack) or the limits on what is kept
/// ([`MAX_KEPT_ENTRIES`], [`MAX_REPORTS`]); the files left are skipped as not read.
#[must_use]
pub(crate) fn load(paths: &[PathBuf], end: std::time::Instant) -> Inputs {
    let mut inputs = Inputs::default();
    let mut files: Vec<(PathBuf, bool)> = Vec::new();
    for path in paths {
        if path.is_dir() {
            match dir_files(path, &mut inputs.passed_over) {
                Ok(found) => files.extend(found.into_iter().map(|f| (f, false))),
                Err(reason) => inputs.skipped.push(Skipped {
                    file: shown(path),
                    kind: SkipKind::Unreadable,
                    reason,
                }),
            }
        } else {
            files.push((path.clone(), true));
        }
    }
    // The same file named twice (as a FILE and in its DIR) is one report, not a duplicate.
    let mut seen = std::collections::BTreeSet::new();
    files.retain(|(f, _)| seen.insert(f.clone()));
    let mut kept = 0usize;
    let mut stopped: Option<String> = None;
    for (path, named) in files {
        let file = shown(&path);
        if stopped.is_none() && std::time::Instant::now() >= end {
            stopped = Some("the merge's time budget (--timeout) was spent".to_string());
        }
        if stopped.is_none() && (kept >= MAX_KEPT_ENTRIES || inputs.reports.len() >= MAX_REPORTS) {
            stopped = Some(format!(
                "the merge keeps at most {MAX_REPORTS} reports and {MAX_KEPT_ENTRIES} list entries"
            ));
        }
        if let Some(why) = &stopped {
            inputs.skipped.push(Skipped {
                file,
                kind: SkipKind::NotRead,
                reason: format!("not read: {why}"),
            });
            continue;
        }
        let _ = super::capped::take_passed_over();
        let classified = read_bounded(&path).map(|bytes| classify(&bytes));
        let over = super::capped::take_passed_over();
        if over > 0 {
            inputs.passed_over.push(format!(
                "{file}: {over} list entries past the caps ({} GPUs, {} of any other list) \
                 were not read",
                super::capped::GPUS,
                super::capped::OTHER
            ));
        }
        match classified {
            Ok(Classified::Report(report)) => {
                kept = kept.saturating_add(entries(&report));
                inputs.reports.push(Loaded {
                    file,
                    report: *report,
                });
            }
            Ok(Classified::FleetSummary) if !named => inputs
                .passed_over
                .push(format!("{file}: a fleet summary, not a node report")),
            Ok(Classified::FleetSummary) => inputs.skipped.push(Skipped {
                file,
                kind: SkipKind::NotAReport,
                reason: "a fleet summary (`report merge --json` output), not a node's report"
                    .to_string(),
            }),
            Ok(Classified::Skip(kind, reason)) | Err((kind, reason)) => {
                inputs.skipped.push(Skipped { file, kind, reason });
            }
        }
    }
    inputs.skipped.sort();
    inputs
}

/// The list entries a report keeps (see [`MAX_KEPT_ENTRIES`]), the report itself counted one.
fn entries(r: &NodeReport) -> usize {
    1 + r.gpus.len()
        + r.toolkits.len()
        + r.libraries.cudnn.len()
        + r.libraries.nccl.len()
        + r.findings.len()
        + r.python_envs
            .iter()
            .map(|e| 1 + e.frameworks.len())
            .sum::<usize>()
        + r.smoke.as_ref().map_or(0, |s| s.devices.len())
}

fn shown(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// A folder's `*.json` files, sorted by name; subfolders are noted in `passed_over`.
#[expect(
    clippy::disallowed_methods,
    reason = "`report merge DIR`: the reports are the user's files on this machine, not the examined one"
)]
fn dir_files(dir: &Path, passed_over: &mut Vec<String>) -> Result<Vec<PathBuf>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot list the folder: {e}"))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list the folder: {e}"))?;
        let name = entry.file_name();
        let path = entry.path();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        // `metadata` follows links: a link to a report is a report.
        if path.is_dir() {
            passed_over.push(format!("{}: a subfolder, not read", shown(&path)));
        } else if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The file's bytes, if it is a regular file of at most [`MAX_BYTES`].
fn read_bounded(path: &Path) -> Result<Vec<u8>, (SkipKind, String)> {
    let unreadable = |e: std::io::Error| (SkipKind::Unreadable, format!("cannot read: {e}"));
    // Opened without blocking and refused unless regular: a `*.json` FIFO or device would
    // block the open itself, before any check on the open file could run.
    let file = crate::host::fs::open_regular(path).map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    let too_large = || {
        (
            SkipKind::TooLarge,
            format!(
                "larger than {} MiB; a node's report is far smaller",
                MAX_BYTES / 1024 / 1024
            ),
        )
    };
    if meta.len() > MAX_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    // The bound holds even for a file that grows while it is read.
    file.take(MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Decides what a file's bytes are: parsed as JSON first, so that the version is checked
/// before any field is trusted, then read through the lenient [`NodeReport`] view.
#[must_use]
pub(crate) fn classify(bytes: &[u8]) -> Classified {
    // Bytes that are not UTF-8 are refused first, with where (serde_json does not check the
    // values it passes over); then only the fields that decide are read ([`Header`]).
    let parsed = match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str::<Header>(text),
        // Values passed over are not checked for UTF-8 by serde_json: say where it breaks.
        Err(e) => {
            let good = &bytes[..e.valid_up_to()];
            let line = 1 + good.iter().filter(|b| **b == b'\n').count();
            let column =
                1 + good.len() - good.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            return Classified::Skip(
                SkipKind::Corrupt,
                format!(
                    "not valid JSON: invalid unicode code point at line {line} column {column}"
                ),
            );
        }
    };
    let (fleet, version, tool) = match parsed {
        Ok(Header::Object {
            fleet_schema_version,
            schema_version,
            tool_version,
        }) => (fleet_schema_version, schema_version, tool_version),
        Ok(Header::Not(kind)) => return not_a_report(&format!("{kind}, not an object")),
        Err(e) => {
            return Classified::Skip(SkipKind::Corrupt, short(&format!("not valid JSON: {e}")));
        }
    };
    if fleet {
        return Classified::FleetSummary;
    }
    let Some(version) = version else {
        return not_a_report("no schema_version");
    };
    let number = match version {
        Scalar::Whole(n) => n,
        // A number is short and harmless to quote; anything else is described.
        Scalar::Number(n) => {
            return not_a_report(&format!("schema_version is {n}, not a whole number"));
        }
        other => {
            return not_a_report(&format!(
                "schema_version is {}, not a whole number",
                other.kind()
            ));
        }
    };
    let ours = u64::from(SCHEMA_VERSION);
    if number == 0 {
        return not_a_report("schema_version 0");
    }
    if number > ours {
        let tool = match tool {
            Some(Scalar::Text(t)) => short(&t),
            _ => "an unknown version".to_string(),
        };
        return Classified::Skip(
            SkipKind::NewerSchema,
            format!(
                "report schema {number}, written by gpu-doctor {tool}; this gpu-doctor ({}) reads \
                 schema {ours}: upgrade gpu-doctor to merge it",
                env!("CARGO_PKG_VERSION")
            ),
        );
    }
    if number < ours {
        return Classified::Skip(
            SkipKind::OlderSchema,
            format!("report schema {number}; this gpu-doctor reads schema {ours}"),
        );
    }
    // Parsed again from the bytes: serde_json then says where in the file a field had the
    // wrong type. Long lists are read up to their caps ([`super::capped`]).
    match serde_json::from_slice::<NodeReport>(bytes) {
        Ok(report) => Classified::Report(Box::new(report)),
        Err(e) => Classified::Skip(
            SkipKind::Corrupt,
            short(&format!("not a valid report: {e}")),
        ),
    }
}

fn not_a_report(why: &str) -> Classified {
    Classified::Skip(
        SkipKind::NotAReport,
        format!("not a gpu-doctor report ({why})"),
    )
}

/// At most [`MAX_REASON_CHARS`] characters, cut on a character boundary.
fn short(text: &str) -> String {
    match text.char_indices().nth(MAX_REASON_CHARS) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip(bytes: &str) -> (SkipKind, String) {
        match classify(bytes.as_bytes()) {
            Classified::Skip(kind, reason) => (kind, reason),
            other => panic!("{bytes}: {other:?}"),
        }
    }

    #[test]
    fn versions_decide_before_fields_are_read() {
        assert!(matches!(
            classify(br#"{"schema_version": 1, "gpus": []}"#),
            Classified::Report(_)
        ));
        let (kind, reason) =
            skip(r#"{"schema_version": 2, "tool": {"version": "9.0.0"}, "gpus": 7}"#);
        assert_eq!(kind, SkipKind::NewerSchema);
        assert!(reason.contains("report schema 2"), "{reason}");
        assert!(reason.contains("gpu-doctor 9.0.0"), "{reason}");
        assert!(reason.contains("reads schema 1: upgrade"), "{reason}");
        assert_eq!(skip(r#"{"schema_version": 0}"#).0, SkipKind::NotAReport);
        assert_eq!(skip(r#"{"hostname": "x"}"#).0, SkipKind::NotAReport);
        assert_eq!(skip(r#"{"schema_version": "1"}"#).0, SkipKind::NotAReport);
        assert_eq!(
            skip(r#"{"schema_version": -1}"#).1,
            "not a gpu-doctor report (schema_version is -1, not a whole number)"
        );
        assert_eq!(
            skip(r#"{"schema_version": "1"}"#).1,
            "not a gpu-doctor report (schema_version is a string, not a whole number)"
        );
        assert_eq!(
            skip("[1, 2]").1,
            "not a gpu-doctor report (a JSON array, not an object)"
        );
        assert_eq!(
            classify(br#"{"fleet_schema_version": 1}"#),
            Classified::FleetSummary
        );
    }

    #[test]
    fn corrupt_files_say_where() {
        let (kind, reason) = skip(r#"{"schema_version": 1, "host": {"hostname": "#);
        assert_eq!(kind, SkipKind::Corrupt);
        assert!(reason.starts_with("not valid JSON: EOF"), "{reason}");
        let (kind, reason) = skip("{\"schema_version\": 1,\n\"gpus\": {}}");
        assert_eq!(kind, SkipKind::Corrupt);
        assert!(reason.contains("line 2"), "{reason}");
        assert_eq!(skip("").0, SkipKind::Corrupt);
        // serde_json's recursion limit turns deep nesting into an error, not a stack overflow.
        assert_eq!(skip(&"[".repeat(100_000)).0, SkipKind::Corrupt);
        let (kind, reason) = skip(
            r#"{"schema_version": 1, "smoke": {"devices": [{"bandwidth": {"device_to_device_gbs": 1e400}}]}}"#,
        );
        assert_eq!(kind, SkipKind::Corrupt, "{reason}");
        assert_eq!(skip("\u{0}\u{1}binary").0, SkipKind::Corrupt);
        // Bytes that are not UTF-8 are parsed from the slice, which also says where.
        let Classified::Skip(kind, reason) = classify(b"{\"schema_version\": 1,\n\"x\": \"\xff\"}")
        else {
            panic!("not UTF-8, yet classified");
        };
        assert_eq!(kind, SkipKind::Corrupt);
        assert!(
            reason.starts_with("not valid JSON: invalid unicode code point at line 2"),
            "{reason}"
        );
    }

    #[test]
    fn files_past_the_time_budget_are_skipped_as_not_read() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["a.json", "b.json"] {
            std::fs::write(dir.path().join(name), r#"{"schema_version": 1}"#).unwrap();
        }
        let spent = std::time::Instant::now();
        let inputs = load(&[dir.path().to_path_buf()], spent);
        assert!(inputs.reports.is_empty());
        assert_eq!(inputs.skipped.len(), 2);
        assert!(inputs.skipped.iter().all(|s| s.kind == SkipKind::NotRead
            && s.reason == "not read: the merge's time budget (--timeout) was spent"));
        let later = std::time::Instant::now() + std::time::Duration::from_secs(600);
        assert_eq!(load(&[dir.path().to_path_buf()], later).reports.len(), 2);
    }

    #[test]
    fn a_report_of_millions_of_empty_gpus_keeps_the_cap_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("n.json");
        let gpus = vec!["{}"; 100_000].join(",");
        std::fs::write(
            &file,
            format!(r#"{{"schema_version": 1, "gpus": [{gpus}]}}"#),
        )
        .unwrap();
        let later = std::time::Instant::now() + std::time::Duration::from_secs(600);
        let inputs = load(&[file], later);
        assert_eq!(
            inputs.reports[0].report.gpus.len(),
            super::super::capped::GPUS
        );
        assert!(
            inputs.passed_over[0].ends_with(
                "98976 list entries past the caps (1024 GPUs, 4096 of any other list) were not read"
            ),
            "{:?}",
            inputs.passed_over
        );
    }

    #[test]
    fn long_reasons_are_cut_on_a_character_boundary() {
        let long = format!(
            r#"{{"schema_version": 1, "host": {{"hostname": 5}}, "x": "{}"}}"#,
            "é".repeat(1000)
        );
        let text = short(&"é".repeat(1000));
        assert_eq!(text.chars().count(), MAX_REASON_CHARS + 3);
        assert_eq!(skip(&long).0, SkipKind::Corrupt);
    }
}
