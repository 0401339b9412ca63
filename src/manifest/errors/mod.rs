//! `errors.toml`: the error messages users paste or logs show, where each comes from, which
//! finding IDs can cause it and which facts decide between them. `gpu-doctor explain`
//! (`crate::explain`) matches a text against it and answers with the cause on this machine.
//!
//! A row names its causes by finding ID only; this module does not know the registry (it sits
//! below `crate::diagnose`), so a test in `crate::explain` checks every ID against
//! `diagnose::ids`. A newer downloaded table may name IDs this build does not know: they are
//! never in a report, so they are never chosen, and nothing breaks.
//!
//! The built-in table is parsed on first use ([`Errors`]), like the GPU id table: only
//! `explain` and the TUI's explain box read it, and `doctor` should not pay for its rows.

pub mod pattern;

use serde::{Deserialize, Serialize};

use super::deferred::{Deferred, Rows};
use super::validate::{Checker, ProblemKind};
use super::{ManifestFile, Meta};
use pattern::{Found, Pattern};

/// What prints a message: `family` values.
pub(crate) const FAMILIES: &[&str] = &[
    "driver",
    "nvml",
    "cuda",
    "cudnn",
    "cublas",
    "nccl",
    "loader",
    "torch",
    "tensorflow",
    "jax",
    "cupy",
    "triton",
    "build",
    "hip",
    "rocm",
    "oom",
    "xid",
    "pip",
    "vllm",
    "container",
    "numba",
];

/// Where else a message can come from, by the prefix of an `elsewhere` entry, in the words the
/// answer uses.
pub(crate) const ELSEWHERE: &[(&str, &str)] = &[
    ("node", "another machine or node"),
    (
        "env",
        "another Python environment, container image or install",
    ),
    ("runtime", "only while the program runs"),
    ("hardware", "the GPU, its memory or its link"),
    ("code", "the program or a library it built"),
];

/// The gpu-doctor commands a `checks` entry may name, longest first so a prefix test finds
/// the right one.
pub(crate) const CHECKS: &[&str] = &[
    "smoke --frameworks",
    "smoke --bench",
    "doctor --deep",
    "estimate",
    "doctor",
    "smoke",
    "plan",
];

/// The contents of `errors.toml`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorTable {
    /// The forms a CUDA error number is printed in (`CUDA error: 802`, `cuda runtime error
    /// (35)`), each capturing `{n:code}`; a row's `cuda_codes` are found in every form.
    #[serde(default)]
    pub cuda_code_formats: Vec<String>,
    /// The forms of a kernel log's Xid line, each capturing `{n:xid}`.
    #[serde(default)]
    pub xid_formats: Vec<String>,
    pub meta: Meta,
    #[serde(rename = "error")]
    pub errors: Vec<KnownError>,
}

/// A known error message: a signature.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KnownError {
    pub id: String,
    /// What prints it, one of [`FAMILIES`].
    pub family: String,
    /// Where the message comes from: the library, file or function that prints it.
    pub printed_by: String,
    /// Which versions print it (in these words), as far as the sources say.
    pub versions: String,
    /// It stops the program (an exception, an abort, a failed call), rather than warning: the
    /// first fatal message of a log is the one explained.
    #[serde(default)]
    pub fatal: bool,
    /// See [`pattern`] for the syntax; a text matches when it contains any of them.
    #[serde(default)]
    pub patterns: Vec<String>,
    /// CUDA error numbers (runtime `cudaError_t` and driver `CUresult`, numbered as since CUDA
    /// 10.1) this row stands for, found in every form of `cuda_code_formats`.
    #[serde(default)]
    pub cuda_codes: Vec<u32>,
    /// Xid numbers this row stands for, found in every form of `xid_formats`.
    #[serde(default)]
    pub xids: Vec<u32>,
    /// What the message means, in the user's terms.
    pub meaning: String,
    /// The finding IDs that can cause it on a machine, most likely first.
    #[serde(default)]
    pub causes: Vec<String>,
    /// The message is the program's, the cluster's or the installer's own (the workload's
    /// out-of-memory, a device-side assert, tensors on two devices, an NCCL watchdog timeout
    /// between nodes, pip's resolver): never a fault of this machine, unless one of `causes`
    /// is found on it. `explain` then names no cause at all, not another message's.
    #[serde(default)]
    pub not_the_machine: bool,
    /// The message is a generic symptom ("no CUDA GPUs are available", "Found no NVIDIA
    /// driver", nvidia-smi cannot talk to the driver): whatever blocks the program from the
    /// GPU explains it. When none of `causes` is found, `explain` offers the machine's blocking
    /// finding nearest the GPU in the compatibility graph (`crate::explain`'s cause module).
    #[serde(default)]
    pub generic: bool,
    /// Which facts decide between the causes (and between this machine and elsewhere).
    pub decide: String,
    /// What else causes it that the machine's files cannot show: `kind: text`, the kind one
    /// of [`ELSEWHERE`].
    #[serde(default)]
    pub elsewhere: Vec<String>,
    /// Which gpu-doctor check would tell: `command: what it shows`, the command one of
    /// [`CHECKS`].
    #[serde(default)]
    pub checks: Vec<String>,
    /// The standard fix when no finding names a better one.
    pub fix: String,
    /// `fix`'s steps are the host's (the kernel module, a reboot, a GPU reset, host services):
    /// a finding that gives this fix inside a container says so before it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub fix_on_host: bool,
    /// Texts as real reports show them; each must match this row (a test runs them all).
    pub examples: Vec<String>,
    pub source: String,
    pub checked: String,
}

impl KnownError {
    /// The `elsewhere` entries split into their kind's words and text.
    pub fn elsewhere(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.elsewhere.iter().filter_map(|entry| {
            let (kind, text) = entry.split_once(':')?;
            let words = ELSEWHERE.iter().find(|(k, _)| *k == kind.trim())?.1;
            Some((words, text.trim()))
        })
    }
}

impl ErrorTable {
    /// The rows whose patterns (or error numbers) a text contains, in file order, with the
    /// first place each matched. A plain search for one text (`doctor --deep` reads a
    /// framework's own words with it); `crate::explain` searches a whole log for every row at
    /// once.
    #[must_use]
    pub fn matching<'a>(&'a self, text: &str) -> Vec<(&'a KnownError, Found)> {
        self.errors
            .iter()
            .filter_map(|row| self.first_match(row, text).map(|found| (row, found)))
            .collect()
    }

    /// The first place `row` matches `text`.
    #[must_use]
    pub fn first_match(&self, row: &KnownError, text: &str) -> Option<Found> {
        let direct = row
            .patterns
            .iter()
            .filter_map(|p| Pattern::parse(p).ok())
            .flat_map(|p| p.find_all(text));
        let numbered = |formats: &[String], fact: &str, numbers: &[u32]| -> Vec<Found> {
            if numbers.is_empty() {
                return Vec::new();
            }
            formats
                .iter()
                .filter_map(|f| Pattern::parse(f).ok())
                .flat_map(|p| p.find_all(text))
                .filter(|found| {
                    captured_number(text, found, fact).is_some_and(|n| numbers.contains(&n))
                })
                .collect()
        };
        direct
            .chain(numbered(&self.cuda_code_formats, "code", &row.cuda_codes))
            .chain(numbered(&self.xid_formats, "xid", &row.xids))
            .min_by_key(|found| found.start)
    }

    #[must_use]
    pub fn by_id(&self, id: &str) -> Option<&KnownError> {
        self.errors.iter().find(|error| error.id == id)
    }

    pub(in crate::manifest) fn check(&self, c: &mut Checker) {
        c.start(Self::FILE, &self.meta);
        for (field, formats, fact) in [
            ("cuda_code_formats", &self.cuda_code_formats, "code"),
            ("xid_formats", &self.xid_formats, "xid"),
        ] {
            for format in formats {
                match Pattern::parse(format) {
                    Ok(p) if captures(&p, fact) => {}
                    Ok(_) => c.report(
                        field,
                        ProblemKind::Inconsistent,
                        format!("`{format}` does not capture {{n:{fact}}}"),
                    ),
                    Err(e) => c.report(field, ProblemKind::Inconsistent, e.to_string()),
                }
            }
        }
        for error in &self.errors {
            self.check_row(c, error);
        }
        c.unique(
            "error id",
            self.errors
                .iter()
                .map(|error| (format!("error {}", error.id), error.id.as_str())),
        );
        c.unique(
            "CUDA error number",
            self.errors.iter().flat_map(|error| {
                error
                    .cuda_codes
                    .iter()
                    .map(|code| (format!("error {}", error.id), *code))
            }),
        );
        c.unique(
            "Xid",
            self.errors.iter().flat_map(|error| {
                error
                    .xids
                    .iter()
                    .map(|xid| (format!("error {}", error.id), *xid))
            }),
        );
    }

    fn check_row(&self, c: &mut Checker, error: &KnownError) {
        let label = format!("error {}", error.id);
        c.provenance(&label, &error.source, &error.checked);
        let mut problem = |message: String| c.report(&label, ProblemKind::Inconsistent, message);
        if error.patterns.is_empty() && error.cuda_codes.is_empty() && error.xids.is_empty() {
            problem("has no patterns, cuda_codes or xids: it could never match".to_string());
        }
        for p in &error.patterns {
            if let Err(e) = Pattern::parse(p) {
                problem(e.to_string());
            }
        }
        if !FAMILIES.contains(&error.family.as_str()) {
            problem(format!(
                "family `{}` is not one of {}",
                error.family,
                FAMILIES.join(", ")
            ));
        }
        for (field, text) in [
            ("printed_by", &error.printed_by),
            ("versions", &error.versions),
            ("meaning", &error.meaning),
            ("decide", &error.decide),
            ("fix", &error.fix),
        ] {
            if text.trim().is_empty() {
                problem(format!("{field} is empty"));
            }
        }
        for entry in &error.elsewhere {
            let known = entry.split_once(':').is_some_and(|(kind, text)| {
                ELSEWHERE.iter().any(|(k, _)| *k == kind.trim()) && !text.trim().is_empty()
            });
            if !known {
                problem(format!(
                    "elsewhere entry `{entry}` is not `kind: text` with a kind of {}",
                    ELSEWHERE
                        .iter()
                        .map(|(k, _)| *k)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        for entry in &error.checks {
            let known = entry.split_once(':').is_some_and(|(command, text)| {
                CHECKS.contains(&command.trim()) && !text.trim().is_empty()
            });
            if !known {
                problem(format!(
                    "checks entry `{entry}` is not `command: what it shows` with a command of {}",
                    CHECKS.join(", ")
                ));
            }
        }
        if error.generic && error.not_the_machine {
            problem(
                "is both generic (any blocking finding explains it) and not_the_machine"
                    .to_string(),
            );
        }
        if error.examples.is_empty() {
            problem("has no examples from a real report".to_string());
        }
        for example in &error.examples {
            if self.first_match(error, example).is_none() {
                problem(format!("example `{example}` does not match the row"));
            }
        }
    }
}

/// Whether a pattern captures `fact` with a digits placeholder.
fn captures(p: &Pattern, fact: &str) -> bool {
    p.pieces.iter().any(|piece| {
        matches!(piece, pattern::Piece::Run(pattern::Class::Digits, Some(name)) if *name == fact)
    })
}

/// The number a match captured under `fact`.
#[must_use]
pub fn captured_number(text: &str, found: &Found, fact: &str) -> Option<u32> {
    found
        .captures
        .iter()
        .find(|(name, _, _)| *name == fact)
        .and_then(|&(_, s, e)| text.get(s..e))
        .and_then(|n| n.parse().ok())
}

impl ManifestFile for ErrorTable {
    const FILE: &'static str = "errors.toml";

    fn meta(&self) -> &Meta {
        &self.meta
    }
}

/// `errors.toml` as a set holds it: its `[meta]` read at once, its rows parsed on first use
/// (the built-in one), or parsed already (a set loaded from text); an empty table (nothing is
/// recognised) if the built-in text did not parse.
pub type Errors = Deferred<ErrorTable>;

impl Rows for ErrorTable {
    const ROWS_START: &'static str = "\n[[error]]";

    fn empty(meta: Meta) -> ErrorTable {
        ErrorTable {
            cuda_code_formats: Vec::new(),
            xid_formats: Vec::new(),
            meta,
            errors: Vec::new(),
        }
    }
}
