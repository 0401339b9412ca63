//! Text that came from the machine is drawn only after control characters are gone: a file
//! name or a tool's error text carrying an escape sequence must not drive the user's terminal.

/// Replaces control characters (C0, DEL, C1, and so every escape sequence's introducer) with
/// `?`, keeping tabs as a space. Newlines are replaced too: one fact stays on one line.
#[must_use]
pub(crate) fn clean(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '\t' => ' ',
            c if c.is_control() => '?',
            // Bidirectional overrides can make text read differently from what it is.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => '?',
            c => c,
        })
        .collect()
}

/// Like [`clean`] for text of several lines: each line is cleaned and the newlines kept (a
/// `\r` is a control character and goes).
#[must_use]
pub(crate) fn clean_lines(text: &str) -> String {
    text.split('\n').map(clean).collect::<Vec<_>>().join("\n")
}

/// JSON text with DEL and the C1 controls written `\u007f`..`\u009f`: JSON escapes only
/// C0, so a value from the machine could otherwise put a raw CSI (`U+009B`) on a terminal that
/// shows the output. They can only stand inside strings, where the escape means the same.
#[must_use]
pub(crate) fn json_controls(json: String) -> String {
    if !json.chars().any(|c| matches!(c, '\u{7f}'..='\u{9f}')) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if matches!(c, '\u{7f}'..='\u{9f}') {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{clean, clean_lines};

    #[test]
    fn json_keeps_its_meaning_without_raw_c1_controls() {
        let json = serde_json::to_string("a\u{9b}31m\u{7f}").unwrap();
        let clean = super::json_controls(json);
        assert!(!clean.chars().any(char::is_control), "{clean}");
        assert_eq!(
            serde_json::from_str::<String>(&clean).unwrap(),
            "a\u{9b}31m\u{7f}"
        );
    }

    #[test]
    fn lines_are_kept_and_each_cleaned() {
        assert_eq!(clean_lines("a\u{1b}]0;x\u{7}\nb\r\n"), "a?]0;x?\nb?\n");
    }

    #[test]
    fn escape_sequences_are_defused() {
        assert_eq!(clean("\u{1b}[31mred\u{1b}[0m"), "?[31mred?[0m");
        assert_eq!(clean("a\nb\rc\u{7}\u{9b}d"), "a?b?c??d");
        assert_eq!(clean("NVIDIA H200\tok"), "NVIDIA H200 ok");
        assert_eq!(clean("\u{202e}evil"), "?evil");
    }
}
