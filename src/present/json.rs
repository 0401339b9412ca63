//! `doctor --json`: the report serialised as it is (see [`crate::report`] for the contract).

use crate::report::Report;

/// Pretty JSON with a trailing newline. Serialising plain data cannot fail; should it ever,
/// the error becomes a JSON object rather than a panic.
#[must_use]
pub fn render(report: &Report) -> String {
    match serde_json::to_string_pretty(report) {
        Ok(mut s) => {
            s.push('\n');
            crate::sanitize::json_controls(s)
        }
        Err(e) => format!("{{\"error\": {:?}}}\n", e.to_string()),
    }
}
