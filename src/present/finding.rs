//! The one way a finding is printed for people: `[severity] id: title`, its detail, each piece
//! of evidence and the fix. The doctor's Diagnosis section, the smoke test's GPU findings and
//! `--deep`'s framework findings all print through [`write()`], so a finding reads the same
//! wherever it appears.

use std::fmt::Write as _;

use super::paint::Paint;
use crate::report::{Finding, Severity};
use crate::sanitize::clean;

/// Appends `f` as an indented block (two spaces, its lines under it at six).
pub(crate) fn write(out: &mut String, f: &Finding, paint: Paint) {
    let mark = match f.severity {
        Severity::Error => "[error]  ",
        Severity::Warning => "[warning]",
        Severity::Info => "[info]   ",
    };
    let _ = writeln!(
        out,
        "  {} {}: {}",
        paint.severity(f.severity, mark),
        clean(&f.id),
        clean(&f.title)
    );
    if !f.detail.is_empty() {
        let _ = writeln!(out, "      {}", clean(&f.detail));
    }
    for e in &f.evidence {
        let _ = writeln!(out, "      - {}", clean(e));
    }
    if let Some(fix) = &f.fix {
        let _ = writeln!(out, "      fix: {}", clean(fix));
    }
}
