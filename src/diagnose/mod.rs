//! Diagnosis: pure functions from the [`Report`]'s facts to [`Finding`]s. Nothing here reads
//! the machine; a rule sees only what the probes recorded, so fixtures test every rule.
//!
//! One family of rules per module. When one cause explains other findings, its finding lists
//! their IDs in `explains` and [`diagnose`] drops them: the user sees the root cause, not a
//! wall of symptoms.

mod driver;
mod frameworks;
mod health;
mod libraries;
mod loading;
mod manifests;
mod platform;
mod runtime;
#[cfg(test)]
mod test_support;
mod toolkits;
mod tuning;

use crate::manifest::Manifests;
use crate::report::{Finding, Report, Severity};

/// A rule family: the report's facts and the compatibility tables in, findings out.
type Rule = fn(&Report, &Manifests) -> Vec<Finding>;

/// Every rule family, in the order their findings are produced.
const RULES: &[Rule] = &[
    driver::findings,
    frameworks::findings,
    toolkits::findings,
    libraries::findings,
    loading::findings,
    health::findings,
    platform::findings,
    runtime::findings,
    tuning::findings,
    manifests::findings,
];

/// Runs every rule with the embedded manifests and keeps the root causes, most severe first.
#[must_use]
pub fn diagnose(report: &Report) -> Vec<Finding> {
    diagnose_with(report, crate::manifest::embedded())
}

/// Runs every rule against the given manifests (a downloaded set, or a test's own).
#[must_use]
pub fn diagnose_with(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut all: Vec<Finding> = RULES
        .iter()
        .flat_map(|rule| rule(report, manifests))
        .collect();
    let explained: Vec<String> = all.iter().flat_map(|f| f.explains.clone()).collect();
    all.retain(|f| !explained.contains(&f.id));
    all.sort_by(|a, b| (a.severity, &a.id).cmp(&(b.severity, &b.id)));
    all
}

/// A finding under construction; keeps rule code short and uniform.
pub(crate) struct FindingBuilder(Finding);

impl FindingBuilder {
    pub(crate) fn new(id: &str, severity: Severity, title: impl Into<String>) -> FindingBuilder {
        FindingBuilder(Finding {
            id: id.to_string(),
            severity,
            title: title.into(),
            detail: String::new(),
            evidence: Vec::new(),
            fix: None,
            explains: Vec::new(),
            subjects: Vec::new(),
        })
    }

    pub(crate) fn detail(mut self, detail: impl Into<String>) -> FindingBuilder {
        self.0.detail = detail.into();
        self
    }

    pub(crate) fn evidence(mut self, line: impl Into<String>) -> FindingBuilder {
        self.0.evidence.push(line.into());
        self
    }

    pub(crate) fn fix(mut self, fix: impl Into<String>) -> FindingBuilder {
        self.0.fix = Some(fix.into());
        self
    }

    pub(crate) fn explains(mut self, id: &str) -> FindingBuilder {
        self.0.explains.push(id.to_string());
        self
    }

    pub(crate) fn subject(mut self, subject: impl Into<String>) -> FindingBuilder {
        self.0.subjects.push(subject.into());
        self
    }

    pub(crate) fn build(self) -> Finding {
        self.0
    }
}

/// The value of a reported environment variable, as it was set (possibly empty).
pub(crate) fn env_var<'a>(report: &'a Report, name: &str) -> Option<&'a str> {
    report
        .environment
        .iter()
        .find(|v| v.name == name)
        .map(|v| v.value.as_str())
}
