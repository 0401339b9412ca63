//! Text that came from the machine is drawn only after control characters are gone: a file
//! name or a tool's error text carrying an escape sequence must not drive the user's terminal.

/// The most characters of one value or line a person is shown; the rest is cut, and the cut
/// says so ([`CUT_MARK`]). A 15 MB GPU name must not become 283 MB of Prometheus text.
pub(crate) const MAX_SHOWN: usize = 4096;

/// What stands where text was cut, followed by how many characters were left out.
pub(crate) const CUT_MARK: &str = "…[cut: ";

/// Characters that draw nothing, or change how the text around them is drawn, though they are
/// not control characters: zero-width spaces and joiners, the bidirectional marks, embeddings,
/// overrides and isolates (LRM, RLM, ALM, LRE..RLO, LRI..PDI), the word joiner and invisible
/// operators (U+2060..U+2064), the deprecated format characters (U+206A..U+206F), the
/// byte-order mark, the soft hyphen, the line and paragraph separators (U+2028, U+2029), the
/// interlinear annotation marks, fillers, variation selectors and the tag characters
/// (U+E0000..U+E007F), and every other format character (Unicode's class Cf: the Arabic
/// number signs, Syriac and Kaithi marks, Egyptian hieroglyph and shorthand format controls).
/// Text carrying them reads as something it is not.
#[must_use]
pub(crate) fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00ad}' | '\u{034f}' | '\u{0600}'..='\u{0605}' | '\u{061c}' | '\u{06dd}' | '\u{070f}'
        | '\u{0890}' | '\u{0891}' | '\u{08e2}' | '\u{115f}' | '\u{1160}' | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}'
        | '\u{3164}' | '\u{fe00}'..='\u{fe0f}' | '\u{feff}' | '\u{ffa0}'
        | '\u{fff0}'..='\u{fffb}'
        | '\u{110bd}' | '\u{110cd}' | '\u{13430}'..='\u{1343f}' | '\u{1bca0}'..='\u{1bca3}'
        | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0000}'..='\u{e007f}'
        | '\u{e0100}'..='\u{e01ef}')
}

/// Replaces control characters (C0, DEL, C1, and so every escape sequence's introducer) with
/// `?`, keeping tabs as a space, and writes invisible characters ([`is_invisible`]) as
/// `<U+200B>`, so that they show. Newlines are replaced too: one fact stays on one line. Past
/// [`MAX_SHOWN`] characters the text is cut, with a marker saying how much was left out.
#[must_use]
pub(crate) fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_SHOWN * 4));
    for (shown, c) in text.chars().enumerate() {
        if shown == MAX_SHOWN {
            let left = text.chars().count() - MAX_SHOWN;
            out.push_str(&format!("{CUT_MARK}{left} more characters]"));
            break;
        }
        match c {
            '\t' => out.push(' '),
            c if c.is_control() => out.push('?'),
            c if is_invisible(c) => out.push_str(&format!("<U+{:04X}>", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Whether a person shown `text` would see it as it is: no control character but tab and
/// newline, and nothing invisible.
#[must_use]
pub(crate) fn is_clean(text: &str) -> bool {
    !text
        .chars()
        .any(|c| (c.is_control() && c != '\n' && c != '\t') || is_invisible(c))
}

/// Like [`clean`] for text of several lines: each line is cleaned and the newlines kept (a
/// `\r` is a control character and goes).
#[must_use]
pub(crate) fn clean_lines(text: &str) -> String {
    if is_clean(text) && !text.contains('\t') && !text.split('\n').any(|l| l.len() > MAX_SHOWN) {
        return text.to_string();
    }
    text.split('\n').map(clean).collect::<Vec<_>>().join("\n")
}

/// [`clean_lines`] in place, for the fields of a report written for people.
pub(crate) fn clean_in_place(text: &mut String) {
    if !is_clean(text) || text.contains('\t') || text.len() > MAX_SHOWN {
        *text = clean_lines(text);
    }
}

/// JSON text with DEL, the C1 controls and the invisible characters ([`is_invisible`])
/// written as `\u` escapes (`\u007f`, `\u200b`, a surrogate pair past U+FFFF): JSON escapes
/// only C0, so a value from the machine could otherwise put a raw CSI (`U+009B`) or a bidi
/// override on a terminal that shows the output. They can only stand inside strings, where the
/// escape means the same: a fact keeps its exact text once parsed.
#[must_use]
pub(crate) fn json_controls(json: String) -> String {
    let needs = |c: char| matches!(c, '\u{7f}'..='\u{9f}') || is_invisible(c);
    // Every character to escape is DEL or beyond ASCII: plain ASCII text is let through at
    // once (a report of 50,000 GPUs is tens of megabytes).
    if json.bytes().all(|b| b < 0x7f) || !json.chars().any(needs) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if needs(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{:04x}", unit));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{MAX_SHOWN, clean, clean_in_place, clean_lines, is_clean};

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
    fn json_shows_invisible_characters_escaped_and_keeps_them() {
        let value = "6.8\u{feff}\u{200b}\u{202e}\u{e0041}";
        let json = super::json_controls(serde_json::to_string(value).unwrap());
        assert!(is_clean(&json), "{json}");
        assert!(json.contains("\\udb40\\udc41"), "{json}");
        assert_eq!(serde_json::from_str::<String>(&json).unwrap(), value);
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
        assert_eq!(clean("\u{202e}evil"), "<U+202E>evil");
    }

    #[test]
    fn invisible_characters_are_shown_escaped() {
        for c in [
            '\u{200b}',
            '\u{200c}',
            '\u{200d}',
            '\u{200e}',
            '\u{200f}',
            '\u{061c}',
            '\u{202a}',
            '\u{202b}',
            '\u{202c}',
            '\u{202d}',
            '\u{202e}',
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}',
            '\u{2060}',
            '\u{feff}',
            '\u{00ad}',
            '\u{2028}',
            '\u{2029}',
            '\u{e0001}',
            '\u{e0041}',
            '\u{e007f}',
        ] {
            let text = format!("linux-headers-6.8{c}-generic");
            let shown = clean(&text);
            assert!(is_clean(&shown), "{shown:?}");
            assert!(
                shown.contains(&format!("<U+{:04X}>", u32::from(c))),
                "{shown:?}"
            );
            assert!(!is_clean(&text));
        }
        assert_eq!(clean("NVIDIA H200 · café"), "NVIDIA H200 · café");
    }

    #[test]
    fn long_values_are_cut_with_a_marker() {
        let long = "x".repeat(MAX_SHOWN + 10);
        let shown = clean(&long);
        assert!(shown.starts_with(&"x".repeat(MAX_SHOWN)));
        assert!(
            shown.ends_with("…[cut: 10 more characters]"),
            "{}",
            &shown[MAX_SHOWN..]
        );
        let mut s = format!("a\u{200b}\nb{}", "y".repeat(MAX_SHOWN * 2));
        clean_in_place(&mut s);
        assert!(s.starts_with("a<U+200B>\nb"));
        assert!(s.len() < MAX_SHOWN + 64);
    }
}
