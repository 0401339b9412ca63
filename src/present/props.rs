//! Output safety per face, as properties: every Unicode control (Cc) and format (Cf) character,
//! the line and paragraph separators (Zl, Zp) and Markdown's active characters are put into
//! every machine string of a report, and each face is checked. JSON keeps each fact exact and
//! shows no raw non-printing character; the text face and Prometheus show none at all; a
//! Markdown cell never splits a table, and GitHub's mentions, links and references stand only in
//! code spans. Fixed seed and a small count in `cargo test`; `GPU_DOCTOR_FUZZ_CASES` (and
//! `GPU_DOCTOR_FUZZ_SEED`) for a campaign, as `crate::parse` does.

use proptest::prelude::*;

use crate::report::{Finding, Gpu, ProbeRecord, Report, Severity, Toolkit};

/// Unicode's format characters (class Cf), as ranges.
const FORMAT: &[(char, char)] = &[
    ('\u{00ad}', '\u{00ad}'),
    ('\u{0600}', '\u{0605}'),
    ('\u{061c}', '\u{061c}'),
    ('\u{06dd}', '\u{06dd}'),
    ('\u{070f}', '\u{070f}'),
    ('\u{0890}', '\u{0891}'),
    ('\u{08e2}', '\u{08e2}'),
    ('\u{180e}', '\u{180e}'),
    ('\u{200b}', '\u{200f}'),
    ('\u{202a}', '\u{202e}'),
    ('\u{2060}', '\u{2064}'),
    ('\u{2066}', '\u{206f}'),
    ('\u{feff}', '\u{feff}'),
    ('\u{fff9}', '\u{fffb}'),
    ('\u{110bd}', '\u{110bd}'),
    ('\u{110cd}', '\u{110cd}'),
    ('\u{13430}', '\u{1343f}'),
    ('\u{1bca0}', '\u{1bca3}'),
    ('\u{1d173}', '\u{1d17a}'),
    ('\u{e0001}', '\u{e0001}'),
    ('\u{e0020}', '\u{e007f}'),
];

/// Whether `c` prints nothing a reader sees as itself: a control, format or separator
/// character.
pub(crate) fn non_printing(c: char) -> bool {
    c.is_control()
        || c == '\u{2028}'
        || c == '\u{2029}'
        || FORMAT.iter().any(|(a, b)| (*a..=*b).contains(&c))
}

fn piece() -> impl Strategy<Value = String> {
    let format = proptest::sample::select(FORMAT).prop_flat_map(|(a, b)| {
        (u32::from(a)..=u32::from(b)).prop_map(|u| char::from_u32(u).unwrap_or('?').to_string())
    });
    prop_oneof![
        3 => "[a-zA-Z0-9 ./-]{1,4}",
        2 => (0u32..0x20).prop_map(|u| char::from_u32(u).unwrap_or('?').to_string()),
        2 => (0x7fu32..0xa0).prop_map(|u| char::from_u32(u).unwrap_or('?').to_string()),
        3 => format,
        1 => prop_oneof![Just("\u{2028}"), Just("\u{2029}")].prop_map(str::to_string),
        2 => proptest::sample::select(vec![
            "@org/team", "https://evil.example/x", "www.evil", "#12", "|", "`", "``", "<b>",
            "&amp;", "*", "_", "[x](y)", "\\", "\"", "}", "\n# TYPE x counter\n",
        ])
        .prop_map(str::to_string),
    ]
}

pub(crate) fn hostile() -> impl Strategy<Value = String> {
    proptest::collection::vec(piece(), 1..12).prop_map(|p| p.concat())
}

pub(crate) fn config() -> ProptestConfig {
    let cases = std::env::var("GPU_DOCTOR_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48);
    let mut config = ProptestConfig::with_cases(cases);
    config.rng_seed = match std::env::var("GPU_DOCTOR_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        Some(seed) => proptest::test_runner::RngSeed::Fixed(seed),
        None => proptest::test_runner::RngSeed::Fixed(0x6f75_7470_7574),
    };
    config.failure_persistence = None;
    config
}

/// A report whose every machine string is `s`.
pub(crate) fn report_of(s: &str) -> Report {
    let mut r = Report::default();
    r.tool.version = s.to_string();
    r.driver.version = Some(s.to_string());
    r.driver.cuda_version = Some(s.to_string());
    r.driver.nvidia_smi.detail = Some(s.to_string());
    r.driver.nvml.detail = Some(s.to_string());
    r.gpus.push(Gpu {
        index: 0,
        name: Some(s.to_string()),
        uuid: Some(s.to_string()),
        pci_bus_id: Some(s.to_string()),
        memory_total_mib: Some(1),
        ..Gpu::default()
    });
    r.toolkits.push(Toolkit {
        path: s.to_string(),
        version: Some(s.to_string()),
        ..Toolkit::default()
    });
    r.findings.push(Finding {
        id: s.to_string(),
        severity: Severity::Error,
        title: s.to_string(),
        detail: s.to_string(),
        evidence: vec![s.to_string()],
        fix: Some(s.to_string()),
        explains: Vec::new(),
        subjects: vec![crate::report::Subject::Gpu(0)],
        fix_target: crate::report::FixTarget::Here,
    });
    r.probes.push(ProbeRecord {
        name: s.to_string(),
        detail: Some(s.to_string()),
        ..ProbeRecord::default()
    });
    r
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn json_escapes_every_non_printing_character_and_keeps_facts(s in hostile()) {
        let json = super::json::render(&report_of(&s));
        let raw = json.chars().find(|c| *c != '\n' && non_printing(*c));
        prop_assert!(raw.is_none(), "{raw:?} raw in the JSON");
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(v["driver"]["version"].as_str(), Some(s.as_str()));
        prop_assert_eq!(v["gpus"][0]["name"].as_str(), Some(s.as_str()));
        for field in [&v["findings"][0]["title"], &v["driver"]["nvidia_smi"]["detail"]] {
            let text = field.as_str().unwrap_or_default();
            prop_assert!(!text.chars().any(|c| c != '\n' && non_printing(c)), "{text:?}");
        }
    }

    #[test]
    fn text_and_prometheus_show_no_non_printing_character(s in hostile()) {
        let r = report_of(&s);
        for (face, out) in [
            ("text", super::text::render(&r)),
            ("prometheus", super::prometheus::render(&r)),
        ] {
            let raw = out.chars().find(|c| *c != '\n' && non_printing(*c));
            prop_assert!(raw.is_none(), "{face}: {raw:?} in {out:?}");
        }
        // Every Prometheus line is a comment or one sample: a value cannot add a line.
        for line in super::prometheus::render(&r).lines() {
            prop_assert!(
                line.starts_with("# HELP gpu_doctor_")
                    || line.starts_with("# TYPE gpu_doctor_")
                    || line.starts_with("gpu_doctor_"),
                "{line:?}"
            );
        }
    }
}
