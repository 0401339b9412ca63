//! The JSON Schema of `doctor --json`, generated from [`crate::report::Report`] so the two
//! cannot drift; `schema/report.schema.json` is its committed copy and a test keeps them equal.

/// The schema as pretty JSON with a trailing newline.
#[must_use]
pub(crate) fn render() -> String {
    let schema = schemars::schema_for!(crate::report::Report);
    match serde_json::to_string_pretty(&schema) {
        Ok(mut s) => {
            s.push('\n');
            s
        }
        Err(e) => format!("{{\"error\": {:?}}}\n", e.to_string()),
    }
}
