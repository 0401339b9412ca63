//! `errors.toml`: error messages users paste or logs show, with their usual cause and fix.

use serde::{Deserialize, Serialize};

use super::validate::{Checker, ProblemKind};
use super::{ManifestFile, Meta};

/// The contents of `errors.toml`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorTable {
    pub meta: Meta,
    #[serde(rename = "error")]
    pub errors: Vec<KnownError>,
}

/// A known error message.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KnownError {
    pub id: String,
    /// What prints it: `driver`, `cuda`, `torch`, `tensorflow`, `jax`.
    pub component: String,
    /// The numeric CUDA error code, where there is one (`35`, `804`).
    pub code: Option<String>,
    /// Exact, case-sensitive substrings; a text matches when it contains any of them.
    pub patterns: Vec<String>,
    pub cause: String,
    pub fix: String,
    /// How to confirm the cause on the machine.
    pub detect: Option<String>,
    pub source: String,
    pub checked: String,
}

impl ErrorTable {
    /// The known errors a text (a log, a traceback) contains, in file order.
    pub fn matching<'a>(&'a self, text: &'a str) -> impl Iterator<Item = &'a KnownError> + 'a {
        self.errors.iter().filter(move |error| {
            error
                .patterns
                .iter()
                .any(|pattern| text.contains(pattern.as_str()))
        })
    }

    #[must_use]
    pub fn by_id(&self, id: &str) -> Option<&KnownError> {
        self.errors.iter().find(|error| error.id == id)
    }

    pub(super) fn check(&self, c: &mut Checker) {
        c.start(Self::FILE, &self.meta);
        for error in &self.errors {
            let label = format!("error {}", error.id);
            c.provenance(&label, &error.source, &error.checked);
            // An empty pattern is contained in every text and would match everything.
            if error.patterns.is_empty()
                || error
                    .patterns
                    .iter()
                    .any(|pattern| pattern.trim().is_empty())
            {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    "patterns must be non-empty strings",
                );
            }
        }
        c.unique(
            "error id",
            self.errors
                .iter()
                .map(|error| (format!("error {}", error.id), error.id.as_str())),
        );
    }
}

impl ManifestFile for ErrorTable {
    const FILE: &'static str = "errors.toml";

    fn meta(&self) -> &Meta {
        &self.meta
    }
}
