//! The JSON Schema of `doctor --json`: `schema/report.schema.json`, built into the binary.
//!
//! The file is generated from [`crate::report::Report`] by schemars, in this module's test, so
//! the two cannot drift: the test fails when the file is stale, and `UPDATE_SCHEMA=1 cargo test
//! --lib schema` rewrites it. Generating it at run time instead kept schemars and every derived
//! `json_schema` in the release binary (about 200 KB) for one command that prints a fixed text;
//! with nothing calling them, LTO drops them.

/// The committed schema, byte for byte (pretty JSON with a trailing newline).
pub(crate) const SCHEMA: &str = include_str!("../schema/report.schema.json");

/// The schema as pretty JSON with a trailing newline.
#[must_use]
pub(crate) fn render() -> String {
    SCHEMA.to_string()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// What schemars makes of the report types now.
    fn generated() -> String {
        let schema = schemars::schema_for!(crate::report::Report);
        serde_json::to_string_pretty(&schema).expect("a schema serialises") + "\n"
    }

    #[test]
    fn built_in_schema_is_what_schemars_generates() {
        let fresh = generated();
        if std::env::var_os("UPDATE_SCHEMA").is_some_and(|v| v == "1") {
            let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/report.schema.json");
            std::fs::write(&path, &fresh).expect("write schema/report.schema.json");
            return;
        }
        assert!(
            fresh == super::SCHEMA,
            "schema/report.schema.json is stale: regenerate it with \
             `UPDATE_SCHEMA=1 cargo test --lib schema`"
        );
    }
}
