//! Small helpers shared by the parsers: "no value" markers, numbers with units, version-like tokens.

use std::str::FromStr;

/// What tools print where they have no reading. Compared case-insensitively, with or without the
/// square brackets that `nvidia-smi --format=csv` puts around them.
const ABSENT: &[&str] = &[
    "n/a",
    "not found",
    "unknown",
    "not supported",
    "unknown error",
    "not available",
    "insufficient permissions",
    "gpu requires reset",
    "requested functionality has been deprecated",
];

/// The trimmed value, or `None` when it is empty or one of the "no value" markers.
pub(crate) fn present(raw: &str) -> Option<&str> {
    let trimmed = raw.trim();
    let inner = trimmed
        .strip_prefix('[')
        .and_then(|s| s.strip_suffix(']'))
        .unwrap_or(trimmed)
        .trim();
    if inner.is_empty() || ABSENT.iter().any(|m| inner.eq_ignore_ascii_case(m)) {
        None
    } else {
        Some(trimmed)
    }
}

/// [`present`] as an owned string.
pub(crate) fn present_owned(raw: &str) -> Option<String> {
    present(raw).map(str::to_string)
}

/// The number a value starts with, ignoring a unit after it: `"143771 MiB"` → 143771.
pub(crate) fn leading<T: FromStr>(raw: &str) -> Option<T> {
    present(raw)?.split_whitespace().next()?.parse().ok()
}

/// Like [`leading`] for readings with a fraction (`"117.12 W"`); NaN and infinities are refused.
pub(crate) fn leading_f64(raw: &str) -> Option<f64> {
    leading::<f64>(raw).filter(|v| v.is_finite())
}

/// Yes/No, Enabled/Disabled, True/False, On/Off, Active/Not Active.
pub(crate) fn yes_no(raw: &str) -> Option<bool> {
    const YES: [&str; 5] = ["yes", "enabled", "true", "on", "active"];
    const NO: [&str; 5] = ["no", "disabled", "false", "off", "not active"];
    let v = present(raw)?;
    if YES.iter().any(|y| v.eq_ignore_ascii_case(y)) {
        Some(true)
    } else if NO.iter().any(|n| v.eq_ignore_ascii_case(n)) {
        Some(false)
    } else {
        None
    }
}

/// A token that can be a version: starts with a digit, then digits, letters and `. - _ +`.
/// Used to refuse garbage where a version is expected, without judging the version itself.
pub(crate) fn looks_like_version(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+'))
}

/// Dotted decimal numbers only: `"580.159.04"`, `"13.0"`, `"9"`.
pub(crate) fn is_dotted_numeric(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
pub(crate) mod testdata {
    //! Cutting the H200 captures (`$ command` first line, `[rc=N]` last line) into what a probe
    //! would have read.

    /// The output of the capture's command: without the `$ ...` line and the `[rc=N]` line.
    pub(crate) fn body(capture: &str) -> &str {
        let after_cmd = match capture.strip_prefix('$') {
            Some(rest) => rest.split_once('\n').map_or("", |(_, b)| b),
            None => capture,
        };
        match after_cmd.rfind("[rc=") {
            Some(pos) => after_cmd.get(..pos).unwrap_or(after_cmd),
            None => after_cmd,
        }
    }

    /// The lines after the line `header` up to the next line that starts with `next_prefix`.
    pub(crate) fn section(text: &str, header: &str, next_prefix: &str) -> String {
        let mut out = String::new();
        let mut inside = false;
        for line in text.lines() {
            if inside {
                if line.starts_with(next_prefix) {
                    break;
                }
                out.push_str(line);
                out.push('\n');
            } else if line == header {
                inside = true;
            }
        }
        assert!(inside, "section {header:?} not found in capture");
        out
    }

    /// Binary garbage as a probe would see it after a lossy UTF-8 conversion.
    pub(crate) fn garbage() -> String {
        String::from_utf8_lossy(b"\x00\x1b[31m\xff\xfe\x00garbage\x07\r\n\xc3\x28:=\"'[]{}<>#")
            .into_owned()
    }

    /// About 2 MiB of `unit` repeated: far past any real file of these kinds, which is what
    /// the "huge" cases test (no panic, no quadratic work, no cap where none is meant). The
    /// byte caps on reading files are tested where files are read. It was 10 MB, which cost the
    /// debug-build suite about 40 parser passes of 10 MB each for the same proof.
    pub(crate) fn huge(unit: &str) -> String {
        let n = (2 * 1024 * 1024) / unit.len().max(1) + 1;
        unit.repeat(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_markers_are_none_and_zero_is_a_value() {
        for raw in [
            "",
            "  ",
            "N/A",
            "[N/A]",
            "Not Supported",
            "[Not Supported]",
            "Unknown Error",
            " [Unknown Error] ",
        ] {
            assert_eq!(present(raw), None, "{raw:?}");
        }
        assert_eq!(present(" 0 "), Some("0"));
        assert_eq!(leading::<u64>("0 MiB"), Some(0));
        assert_eq!(leading::<u64>("143771 MiB"), Some(143771));
        assert_eq!(leading::<u32>("-2 C"), None);
        assert_eq!(leading_f64("117.12 W"), Some(117.12));
        assert_eq!(leading_f64("NaN W"), None);
        assert_eq!(yes_no("Enabled"), Some(true));
        assert_eq!(yes_no("Not Active"), Some(false));
        assert_eq!(yes_no("maybe"), None);
    }

    #[test]
    fn version_shapes() {
        assert!(looks_like_version("2.11.0+cu130"));
        assert!(!looks_like_version("\u{1b}[31m"));
        assert!(!looks_like_version(""));
        assert!(is_dotted_numeric("580.159.04"));
        assert!(!is_dotted_numeric("1..2"));
        assert!(!is_dotted_numeric("1.debug"));
    }
}
