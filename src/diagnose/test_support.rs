//! Assertions the rule families' unit tests share.

use crate::report::Finding;

/// The IDs of `found`, in order.
pub(crate) fn ids(found: &[Finding]) -> Vec<&str> {
    found.iter().map(|f| f.id.as_str()).collect()
}

/// The one finding with `id`; fails the test when there are none or several.
pub(crate) fn one<'a>(found: &'a [Finding], id: &str) -> &'a Finding {
    let hits: Vec<&Finding> = found.iter().filter(|f| f.id == id).collect();
    assert_eq!(hits.len(), 1, "{id} in {found:#?}");
    hits[0]
}

/// Whether any evidence line of `f` contains `text`.
pub(crate) fn has_evidence(f: &Finding, text: &str) -> bool {
    f.evidence.iter().any(|e| e.contains(text))
}
