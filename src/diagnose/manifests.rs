//! The age of the compatibility data itself. Finding: `manifests-stale`.
//!
//! Every other rule is only as good as the manifests: a driver, CUDA release, framework wheel
//! or GPU published after the set's date is unknown to them, and shows up as "unknown" rather
//! than as a diagnosis. The set's date and today's date are both in the report
//! (`manifests.updated`, `manifests.today`), so this rule stays pure and tests pick the day.

use super::FindingBuilder;
use super::ids;
use crate::date::Date;
use crate::manifest::Manifests;
use crate::report::Subject;
use crate::report::{Finding, ManifestSet, Report, Severity};

/// Days after its date at which a set counts as stale: NVIDIA ships a driver branch, and
/// PyTorch a minor release, roughly every quarter, so after 90 days a set is likely to miss one.
pub(super) const STALE_AFTER_DAYS: i64 = 90;

pub(super) fn findings(report: &Report, _manifests: &Manifests) -> Vec<Finding> {
    stale(&report.manifests).into_iter().collect()
}

fn stale(set: &ManifestSet) -> Option<Finding> {
    let updated = Date::parse(&set.updated)?;
    let today = Date::parse(set.today.as_deref()?)?;
    let age = today.days_since(updated);
    if age <= STALE_AFTER_DAYS {
        return None;
    }
    let which = if set.origin == "installed" {
        "installed"
    } else {
        "built-in"
    };
    Some(
        FindingBuilder::new(
            &ids::MANIFESTS_STALE,
            Severity::Info,
            format!("The compatibility data is {age} days old ({updated})"),
        )
        .detail(format!(
            "gpu-doctor's tables of drivers, CUDA releases, framework builds and GPUs (the \
             {which} manifest set) were last brought up to date on {updated}. Anything released \
             since is unknown to this diagnosis and is reported as unknown rather than checked."
        ))
        .evidence(format!(
            "manifest set: {which} {} (updated {updated})",
            set.version
        ))
        .evidence(format!("today: {today} (system clock)"))
        .fix("gpu-doctor manifest update   # or upgrade gpu-doctor")
        .subject(Subject::Manifests)
        .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(updated: &str, today: Option<&str>) -> ManifestSet {
        ManifestSet {
            origin: "embedded".into(),
            version: format!("{updated}+000000000000"),
            updated: updated.into(),
            today: today.map(Into::into),
            warning: None,
        }
    }

    #[test]
    fn a_set_older_than_90_days_is_stale() {
        assert!(
            stale(&set("2026-11-29", Some("2027-02-27"))).is_none(),
            "90 days"
        );
        let f = stale(&set("2026-11-29", Some("2027-02-28"))).expect("91 days");
        assert_eq!(f.id, "manifests-stale");
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(
            f.title,
            "The compatibility data is 91 days old (2026-11-29)"
        );
        assert!(
            f.evidence
                .iter()
                .any(|e| e == "today: 2027-02-28 (system clock)")
        );
        assert_eq!(f.subjects, ["manifests"]);
    }

    #[test]
    fn no_today_or_a_clock_behind_the_set_says_nothing() {
        assert!(stale(&set("2026-11-29", None)).is_none(), "--root");
        assert!(stale(&set("2026-11-29", Some("2020-01-01"))).is_none());
        assert!(stale(&set("not a date", Some("2030-01-01"))).is_none());
    }

    #[test]
    fn the_rule_reads_the_report() {
        let report = Report {
            manifests: set("2026-01-01", Some("2026-12-01")),
            ..Report::default()
        };
        let found = findings(&report, crate::manifest::embedded());
        assert_eq!(found.len(), 1);
        assert!(found[0].detail.contains("built-in manifest set"));
    }
}
