//! Text that came from the machine is drawn only after control characters are gone: a file
//! name or a tool's error text carrying an escape sequence must not drive the user's terminal.

/// Replaces control characters (C0, DEL, C1, and so every escape sequence's introducer) with
/// `?`, keeping tabs as a space. Newlines are replaced too: one fact stays on one line.
#[must_use]
pub fn clean(text: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::clean;

    #[test]
    fn escape_sequences_are_defused() {
        assert_eq!(clean("\u{1b}[31mred\u{1b}[0m"), "?[31mred?[0m");
        assert_eq!(clean("a\nb\rc\u{7}\u{9b}d"), "a?b?c??d");
        assert_eq!(clean("NVIDIA H200\tok"), "NVIDIA H200 ok");
        assert_eq!(clean("\u{202e}evil"), "?evil");
    }
}
