//! `doctor --json`: the report serialised as it is (see [`crate::report`] for the contract).

use crate::report::Report;

/// Pretty JSON with a trailing newline. Serialising plain data cannot fail; should it ever,
/// the error becomes a JSON object rather than a panic.
///
/// Facts keep the machine's exact text (JSON escapes it); the fields written for people
/// (findings' titles, details, evidence and fixes, `probes[].detail`, `driver.nvml.detail`,
/// `driver.nvidia_smi.detail` (a tool's own words), `gpus[].identity_note`,
/// the manifest set's warning, `explain`'s notes) are cleaned as the text face cleans them
/// ([`crate::sanitize::clean_lines`]): no control or invisible character, long values cut
/// with a marker. `jq -r` on them prints nothing raw.
#[must_use]
pub fn render(report: &Report) -> String {
    let mut dirty = false;
    people_fields(report, &mut |t| dirty |= needs_cleaning(t));
    let cleaned;
    let report = if dirty {
        let mut copy = report.clone();
        people_fields_mut(&mut copy, &mut crate::sanitize::clean_in_place);
        cleaned = copy;
        &cleaned
    } else {
        report
    };
    match serde_json::to_string_pretty(report) {
        Ok(mut s) => {
            s.push('\n');
            crate::sanitize::json_controls(s)
        }
        Err(e) => format!("{{\"error\": {:?}}}\n", e.to_string()),
    }
}

fn needs_cleaning(text: &str) -> bool {
    !crate::sanitize::is_clean(text)
        || text.contains('\t')
        || text.len() > crate::sanitize::MAX_SHOWN
}

/// Calls `f` on each field of a report written for people (see [`render`]).
fn people_fields(report: &Report, f: &mut dyn FnMut(&str)) {
    for finding in &report.findings {
        f(&finding.title);
        f(&finding.detail);
        finding.evidence.iter().for_each(|e| f(e));
        finding.fix.iter().for_each(|e| f(e));
    }
    for probe in &report.probes {
        probe.detail.iter().for_each(|e| f(e));
    }
    for outcome in [&report.driver.nvml, &report.driver.nvidia_smi] {
        outcome.detail.iter().for_each(|e| f(e));
    }
    for gpu in &report.gpus {
        gpu.identity_note.iter().for_each(|e| f(e));
    }
    report.manifests.warning.iter().for_each(|e| f(e));
    for sig in report.explain.iter().flat_map(|e| &e.signatures) {
        sig.notes.iter().for_each(|e| f(e));
        f(&sig.fix);
    }
}

/// [`people_fields`], each field changed in place by `f`.
fn people_fields_mut(report: &mut Report, f: &mut dyn FnMut(&mut String)) {
    for finding in &mut report.findings {
        f(&mut finding.title);
        f(&mut finding.detail);
        finding.evidence.iter_mut().for_each(&mut *f);
        finding.fix.iter_mut().for_each(&mut *f);
    }
    for probe in &mut report.probes {
        probe.detail.iter_mut().for_each(&mut *f);
    }
    for outcome in [&mut report.driver.nvml, &mut report.driver.nvidia_smi] {
        outcome.detail.iter_mut().for_each(&mut *f);
    }
    for gpu in &mut report.gpus {
        gpu.identity_note.iter_mut().for_each(&mut *f);
    }
    report.manifests.warning.iter_mut().for_each(&mut *f);
    for sig in report.explain.iter_mut().flat_map(|e| &mut e.signatures) {
        sig.notes.iter_mut().for_each(&mut *f);
        f(&mut sig.fix);
    }
}

#[cfg(test)]
mod tests {
    use crate::report::{Finding, Report, Severity};

    #[test]
    fn fields_for_people_are_cleaned_and_facts_kept() {
        let mut r = Report::default();
        r.driver.version = Some("550\u{200b}\u{1b}[2J".to_string());
        r.driver.nvidia_smi.detail =
            Some("NVIDIA-SMI has failed\u{1b}[2J\u{9b}\u{200f}".to_string());
        r.findings.push(Finding {
            id: "x".to_string(),
            severity: Severity::Error,
            title: "GPU 0 (H200\u{202e}\u{1b}]0;t\u{7})".to_string(),
            detail: "line one\nline two\u{feff}".to_string(),
            evidence: vec!["kernel 6.8\u{e0041}".to_string()],
            fix: Some("apt-get install 'linux-headers-6.8\u{00ad}'".to_string()),
            explains: Vec::new(),
            subjects: Vec::new(),
            fix_target: crate::report::FixTarget::Here,
        });
        let json: serde_json::Value = serde_json::from_str(&super::render(&r)).unwrap();
        let f = &json["findings"][0];
        for field in [&f["title"], &f["detail"], &f["evidence"][0], &f["fix"]] {
            let text = field.as_str().unwrap();
            assert!(crate::sanitize::is_clean(text), "{text:?}");
        }
        assert_eq!(f["title"], "GPU 0 (H200<U+202E>?]0;t?)");
        assert_eq!(f["detail"], "line one\nline two<U+FEFF>");
        assert_eq!(
            json["driver"]["nvidia_smi"]["detail"],
            "NVIDIA-SMI has failed?[2J?<U+200F>"
        );
        // The fact stays exact.
        assert_eq!(json["driver"]["version"], "550\u{200b}\u{1b}[2J");
    }
}
