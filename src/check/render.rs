//! Faces of a check [`Verdict`]: text, JSON, GitHub Actions workflow commands, JUnit XML.

use std::fmt::Write;

use super::Verdict;
use crate::present::paint::Paint;
use crate::report::Severity;
use crate::sanitize::clean;

/// Output formats of `check --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Text,
    Json,
    Github,
    Junit,
}

impl crate::choice::Choice for Format {
    const ALL: &'static [Format] = &[Format::Text, Format::Json, Format::Github, Format::Junit];
    fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Github => "github",
            Format::Junit => "junit",
        }
    }
}

/// Renders `verdict` in `format`, without colour (files, CI logs that are not terminals).
#[must_use]
pub(crate) fn render(verdict: &Verdict, format: Format) -> String {
    render_with(verdict, format, Paint::plain())
}

/// [`render`], with `paint` colouring PASS and FAIL in the text format.
#[must_use]
pub(crate) fn render_with(verdict: &Verdict, format: Format, paint: Paint) -> String {
    match format {
        Format::Text => text(verdict, paint),
        Format::Json => json(verdict),
        Format::Github => github(verdict),
        Format::Junit => junit(verdict),
    }
}

fn counts(v: &Verdict) -> (usize, usize) {
    let failed = v.requirements.iter().filter(|o| !o.met).count() + v.failing_findings.len();
    let passed = v.requirements.iter().filter(|o| o.met).count();
    (passed, failed)
}

fn text(v: &Verdict, paint: Paint) -> String {
    let mut out = String::new();
    for o in &v.requirements {
        let _ = writeln!(
            out,
            "{} {}: {}",
            if o.met {
                paint.good("PASS")
            } else {
                paint.bad("FAIL")
            },
            clean(&o.requirement),
            clean(&o.message)
        );
    }
    for f in &v.failing_findings {
        let _ = writeln!(
            out,
            "{} {} {}: {}",
            paint.bad("FAIL"),
            f.severity.as_str(),
            f.id,
            clean(&f.title)
        );
        if let Some(fix) = &f.fix {
            let _ = writeln!(out, "     fix: {}", clean(fix));
        }
    }
    if v.requirements.is_empty() {
        out.push_str(NO_REQUIREMENTS);
    }
    let (passed, failed) = counts(v);
    let _ = writeln!(out, "check: {passed} passed, {failed} failed");
    out
}

/// Said when no `--require` was given: what the verdict then rests on (README, check).
const NO_REQUIREMENTS: &str = "check: no requirement given (--require EXPR): only the doctor's \
                               findings at or above --fail-on decide\n";

fn json(v: &Verdict) -> String {
    match serde_json::to_string_pretty(v) {
        Ok(s) => crate::sanitize::json_controls(s + "\n"),
        Err(e) => format!("{{\"error\": {:?}}}\n", e.to_string()),
    }
}

/// Workflow-command escaping (actions/toolkit `command.ts`): data escapes `%`, CR and LF;
/// property values also `:` and `,`.
fn gh_data(s: &str) -> String {
    // Control characters from the machine go first (a runner's log is a terminal too); the
    // line breaks the message itself holds are kept and escaped below.
    crate::sanitize::clean_lines(s)
        .replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn gh_prop(s: &str) -> String {
    gh_data(s).replace(':', "%3A").replace(',', "%2C")
}

fn github(v: &Verdict) -> String {
    let mut out = String::new();
    for o in v.requirements.iter().filter(|o| !o.met) {
        let _ = writeln!(
            out,
            "::error title={}::{}",
            gh_prop(&format!("gpu-doctor requirement {}", o.requirement)),
            gh_data(&o.message)
        );
    }
    for f in &v.failing_findings {
        let level = match f.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "notice",
        };
        let mut body = f.title.clone();
        if let Some(fix) = &f.fix {
            body.push_str("\nFix: ");
            body.push_str(fix);
        }
        let _ = writeln!(
            out,
            "::{level} title={}::{}",
            gh_prop(&format!("gpu-doctor {}", f.id)),
            gh_data(&body)
        );
    }
    if v.requirements.is_empty() {
        out.push_str(NO_REQUIREMENTS);
    }
    let (passed, failed) = counts(v);
    let _ = writeln!(out, "check: {passed} passed, {failed} failed");
    out
}

fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in clean(s).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// One testcase per requirement and per failing finding, in one `gpu-doctor` suite.
fn junit(v: &Verdict) -> String {
    let (passed, failed) = counts(v);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"gpu-doctor\" tests=\"{}\" failures=\"{failed}\">",
        passed + failed
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"gpu-doctor check\" tests=\"{}\" failures=\"{failed}\">",
        passed + failed
    );
    for o in &v.requirements {
        let _ = write!(
            out,
            "    <testcase classname=\"requirement\" name=\"{}\"",
            xml(&o.requirement)
        );
        if o.met {
            let _ = writeln!(
                out,
                "><system-out>{}</system-out></testcase>",
                xml(&o.message)
            );
        } else {
            let _ = writeln!(
                out,
                "><failure message=\"{}\"/></testcase>",
                xml(&o.message)
            );
        }
    }
    for f in &v.failing_findings {
        // Each line is cleaned on its own so the body keeps its line breaks.
        let mut lines: Vec<String> = f.evidence.iter().map(|e| format!("- {}", xml(e))).collect();
        if let Some(fix) = &f.fix {
            lines.push(format!("fix: {}", xml(fix)));
        }
        let _ = writeln!(
            out,
            "    <testcase classname=\"finding\" name=\"{}\"><failure type=\"{}\" message=\"{}\">{}</failure></testcase>",
            xml(&f.id),
            f.severity.as_str(),
            xml(&f.title),
            lines.join("\n")
        );
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// #40: `check`'s CI faces as properties (here, not in `present`, which must not import
/// `check`: the shape test's cycle check).
#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::{Format, render};
    use crate::present::props::{config, hostile, non_printing, report_of};

    proptest! {
        #![proptest_config(config())]

        /// #40: `check`'s CI faces. A GitHub workflow command is one line and only gpu-doctor's
        /// own lines start one (`::error`...); JUnit is XML 1.0 (which no control character but
        /// tab and line breaks may enter, raw or as a reference) with `<` and `&` escaped; neither
        /// shows a non-printing character.
        #[test]
        fn check_s_github_and_junit_faces_show_no_non_printing_character(
            s in prop_oneof![
                hostile(),
                hostile().prop_map(|s| format!("{s}\n::error::owned %0A{s}<x y=\"1\">&z;]]>")),
            ]
        ) {
            let r = report_of(&s);
            let requirement = crate::check::expr::parse("driver>=535").unwrap();
            let verdict = crate::check::verdict(&r, &[requirement], crate::check::FailOn::Warning, None);
            let github = render(&verdict, Format::Github);
            let junit = render(&verdict, Format::Junit);
            for (face, out) in [("github", &github), ("junit", &junit)] {
                let raw = out.chars().find(|c| *c != '\n' && non_printing(*c));
                prop_assert!(raw.is_none(), "{face}: {raw:?} in {out:?}");
            }
            for line in github.lines() {
                prop_assert!(
                    !line.contains("::") || line.starts_with("::error") || line.starts_with("::warning")
                        || line.starts_with("::notice"),
                    "a workflow command from the machine: {line:?}"
                );
            }
            // No character reference to a control character either (`&#27;` is not XML 1.0).
            prop_assert!(!junit.contains("&#x1") && !junit.contains("&#27;"), "{junit}");
            prop_assert!(roxmltree_like_well_formed(&junit), "{junit}");
            // The machine's text is there (escaped), not dropped.
            prop_assert!(junit.contains("testcase"), "{junit}");
        }
    }

    /// A cheap well-formedness check of the JUnit face: every `<` opens a tag gpu-doctor writes and
    /// every `&` starts one of XML's five entities or a numeric reference.
    fn roxmltree_like_well_formed(xml: &str) -> bool {
        let tags_ok = xml.match_indices('<').all(|(i, _)| {
            let rest = &xml[i + 1..];
            rest.starts_with('?')
                || rest.starts_with('/')
                || rest.starts_with("testsuite")
                || rest.starts_with("testcase")
                || rest.starts_with("failure")
                || rest.starts_with("system-out")
                || rest.starts_with("skipped")
                || rest.starts_with("properties")
                || rest.starts_with("property")
                || rest.starts_with("![CDATA[")
        });
        let amps_ok = xml.match_indices('&').all(|(i, _)| {
            let rest = &xml[i + 1..];
            ["lt;", "gt;", "amp;", "quot;", "apos;", "#"]
                .iter()
                .any(|e| rest.starts_with(e))
        });
        tags_ok && amps_ok
    }
}
