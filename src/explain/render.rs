//! `gpu-doctor explain` as text: the cause first (the finding, why it produces this message,
//! its evidence and fix), then the other messages of the text. When no finding explains the
//! message: what it means, what else causes it, and which check would tell. Every string that
//! came from the user's text or the machine passes [`clean`]; the TUI shows the same lines.

use std::fmt::Write;

use crate::present::paint::Paint;
use crate::report::explain::{Explain, Signature};
use crate::report::{Finding, Report, Severity};
use crate::sanitize::clean;

/// Quoted text from the user's log, on one line, shortened past `max` characters.
fn quote(text: &str, max: usize) -> String {
    let one_line: String = clean(text).split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > max {
        let cut: String = one_line.chars().take(max).collect();
        format!("\"{cut}...\"")
    } else {
        format!("\"{one_line}\"")
    }
}

fn finding<'r>(report: &'r Report, id: &str) -> Option<&'r Finding> {
    report.findings.iter().find(|f| f.id == id)
}

/// The answer for a terminal.
#[must_use]
pub(crate) fn render(report: &Report, explain: &Explain, paint: Paint) -> String {
    let mut out = String::new();
    let Some(first) = explain.signatures.first() else {
        nothing_recognised(&mut out, report, explain, paint);
        return out;
    };
    let explained = explain
        .cause_for
        .as_deref()
        .and_then(|id| explain.signatures.iter().find(|s| s.id == id));
    match (
        explain.cause.as_deref().and_then(|id| finding(report, id)),
        explained,
    ) {
        (Some(f), Some(sig)) => with_cause(&mut out, f, sig, first, paint),
        _ if first.not_the_machine => not_the_machine(&mut out, report, first, paint),
        _ => without_cause(&mut out, report, first, paint),
    }
    let others: Vec<&Signature> = explain
        .signatures
        .iter()
        .filter(|s| explained.is_none_or(|e| e.id != s.id) && s.id != first.id)
        .collect();
    if !others.is_empty() {
        let _ = writeln!(out, "\n{}", paint.heading("Also in the text"));
        for s in others {
            let why = match (&s.cause, &explain.cause) {
                (Some(c), Some(main)) if c == main => "the same cause".to_string(),
                (Some(c), _) => format!("cause here: {c}"),
                (None, _) => "no cause on this machine".to_string(),
            };
            let times = if s.count > 1 {
                format!(", {} times", s.count)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "  line {}{times}  {}: {} ({why})",
                s.line,
                s.id,
                quote(&s.matched, 100)
            );
        }
    }
    footer(&mut out, explain);
    out
}

fn with_cause(out: &mut String, f: &Finding, sig: &Signature, first: &Signature, paint: Paint) {
    let _ = writeln!(
        out,
        "{} {} [{}]",
        paint.bad("Cause:"),
        clean(&f.title),
        f.id
    );
    let _ = writeln!(
        out,
        "  Explains {} (line {})",
        quote(&sig.matched, 160),
        sig.line
    );
    if sig.id != first.id {
        let _ = writeln!(
            out,
            "  which leads to the first error of the text, {} (line {}).",
            quote(&first.matched, 120),
            first.line
        );
    }
    let _ = writeln!(out, "  Printed by {}.", clean(&sig.printed_by));
    let _ = writeln!(out, "  Why this message: {}", clean(&sig.meaning));
    if !f.detail.is_empty() {
        let _ = writeln!(out, "  On this machine: {}", clean(&f.detail));
    }
    for note in &sig.notes {
        let _ = writeln!(out, "  {}", clean(note));
    }
    if !f.evidence.is_empty() {
        let _ = writeln!(out, "  Evidence:");
        for e in &f.evidence {
            let _ = writeln!(out, "    - {}", clean(e));
        }
    }
    let fix = f.fix.as_deref().unwrap_or(&sig.fix);
    let _ = writeln!(out, "  Fix: {}", clean(fix));
}

/// The first lines of an answer about one message: the heading with the words matched, the
/// line and what printed it, what it means, and the row's notes.
fn signature_head(out: &mut String, sig: &Signature, heading: String) {
    let _ = writeln!(out, "{heading} {}", quote(&sig.matched, 160));
    let _ = writeln!(
        out,
        "  (line {}) printed by {}.",
        sig.line,
        clean(&sig.printed_by)
    );
    let _ = writeln!(out, "  What it means: {}", clean(&sig.meaning));
    for note in &sig.notes {
        let _ = writeln!(out, "  {}", clean(note));
    }
}

/// A message that is the program's, the cluster's or the installer's own: said so, with what
/// to check; the machine's own errors are listed as unrelated, never as its cause.
fn not_the_machine(out: &mut String, report: &Report, sig: &Signature, paint: Paint) {
    signature_head(out, sig, paint.heading("Not a fault of this machine:"));
    if !sig.causes.is_empty() {
        let _ = writeln!(
            out,
            "  Of what on a machine can cause it ({}), none is found here.",
            sig.causes.join(", ")
        );
    }
    let _ = writeln!(out, "  What to check: {}", clean(&sig.decide));
    for e in &sig.elsewhere {
        let _ = writeln!(out, "    - {}: {}", e.kind, clean(&e.text));
    }
    for c in &sig.checks {
        let _ = writeln!(out, "    - gpu-doctor {}", clean(c));
    }
    let _ = writeln!(out, "  Usual fix: {}", clean(&sig.fix));
    let errors: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.id.as_str())
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(
            out,
            "  Unrelated to this message, this machine also has (`gpu-doctor doctor` explains them): {}",
            errors.join(", ")
        );
    }
}

fn without_cause(out: &mut String, report: &Report, sig: &Signature, paint: Paint) {
    signature_head(
        out,
        sig,
        paint.heading("No finding on this machine explains"),
    );
    if !sig.causes.is_empty() {
        let _ = writeln!(
            out,
            "  On a machine, gpu-doctor would name one of: {} (none of them is found here).",
            sig.causes.join(", ")
        );
        let _ = writeln!(out, "  What decides: {}", clean(&sig.decide));
    }
    if !sig.elsewhere.is_empty() {
        let _ = writeln!(out, "  What else causes it:");
        for e in &sig.elsewhere {
            let _ = writeln!(out, "    - {}: {}", e.kind, clean(&e.text));
        }
    }
    if !sig.checks.is_empty() {
        let _ = writeln!(out, "  Which check would tell:");
        for c in &sig.checks {
            let _ = writeln!(out, "    - gpu-doctor {}", clean(c));
        }
    }
    let _ = writeln!(out, "  Usual fix: {}", clean(&sig.fix));
    let errors: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(
            out,
            "  This machine's own errors (`gpu-doctor doctor` explains them): {}",
            errors
                .iter()
                .map(|f| f.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

fn nothing_recognised(out: &mut String, report: &Report, explain: &Explain, paint: Paint) {
    let lines = explain.lines_read;
    let _ = writeln!(
        out,
        "{} ({} line{} read).",
        paint.heading("No known error message in the text"),
        lines,
        if lines == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        out,
        "  gpu-doctor knows the messages of the NVIDIA driver and NVML, the CUDA runtime and driver \
         APIs, cuDNN, cuBLAS, NCCL, the dynamic loader, PyTorch, JAX/XLA, TensorFlow, CuPy, \
         Triton, HIP/ROCm, out-of-memory errors and Xid lines of the kernel log \
         (manifests/errors.toml). Give it the whole traceback or log: the first error is often \
         far above the last line."
    );
    let errors: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    if !errors.is_empty() {
        let _ = writeln!(out, "  This machine has these errors anyway:");
        for f in errors {
            let _ = writeln!(out, "    - {} [{}]", clean(&f.title), f.id);
        }
    }
    footer(out, explain);
}

fn footer(out: &mut String, explain: &Explain) {
    if let Some(cut) = &explain.input_cut {
        let _ = writeln!(out, "\nNote: {}", clean(cut));
    }
    if let Some(width) = explain.wrap_width {
        let _ = writeln!(
            out,
            "\nNote: the text was wrapped at {width} columns by a terminal; its lines were joined to match."
        );
    }
}
