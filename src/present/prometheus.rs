//! The report as Prometheus metrics in the text exposition format. (Being written.)

use crate::report::Report;

/// Renders `report` as metrics.
#[must_use]
pub fn render(report: &Report) -> String {
    let _ = report;
    String::new()
}
