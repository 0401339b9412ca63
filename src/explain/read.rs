//! From the bytes a user gave to the text signatures are matched in: decoded (UTF-8, or
//! UTF-16 with its byte-order mark, as Windows shells write redirected output), escape
//! sequences and other control characters removed, line ends made `\n`; and, when a terminal
//! hard-wrapped the text, a second view with the wrapped lines joined again. Pure; linear in
//! the input.

/// The text as read and cleaned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cleaned {
    /// What the user sees as the text: verbatim, less escape sequences and control
    /// characters; `\r\n` and lone `\r` (progress bars) become `\n`.
    pub text: String,
    /// The width at which a terminal hard-wrapped it, when it did.
    pub wrap_width: Option<usize>,
}

/// Decodes bytes: UTF-16 when they start with its byte-order mark, else UTF-8 with invalid
/// sequences replaced (a log mixing encodings still reads).
#[must_use]
pub(crate) fn decode(bytes: &[u8]) -> String {
    let utf16 = |big: bool, rest: &[u8]| -> String {
        let units = rest.chunks_exact(2).map(|pair| {
            let (a, b) = (pair[0], pair[1]);
            if big {
                u16::from_be_bytes([a, b])
            } else {
                u16::from_le_bytes([a, b])
            }
        });
        char::decode_utf16(units)
            .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
            .collect()
    };
    match bytes {
        [0xff, 0xfe, rest @ ..] => utf16(false, rest),
        [0xfe, 0xff, rest @ ..] => utf16(true, rest),
        [0xef, 0xbb, 0xbf, rest @ ..] => String::from_utf8_lossy(rest).into_owned(),
        _ => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// Removes escape sequences (CSI `ESC [ ... final`, OSC `ESC ] ... BEL|ESC \`, the other
/// `ESC X` forms and the C1 introducers), drops the other control characters except tab and
/// newline, and turns `\r\n` and lone `\r` into `\n`.
///
/// Byte by byte, copying runs of ordinary text whole: a 10 MB log is one pass (the release
/// build is optimised for size, so iterator adaptors here would cost tenfold). Everything
/// removed is a whole ASCII byte or a whole two- or three-byte character, so the result stays
/// UTF-8.
#[must_use]
pub(crate) fn clean(text: &str) -> Cleaned {
    let b = text.as_bytes();
    let n = b.len();
    let mut out: Vec<u8> = Vec::with_capacity(n);
    let mut run = 0;
    let mut i = 0;
    while i < n {
        let c = b[i];
        let special = c < 0x20 && c != b'\n' && c != b'\t' || c == 0x7f || c == 0xc2 || c == 0xe2;
        if !special {
            i += 1;
            continue;
        }
        out.extend_from_slice(&b[run..i]);
        let at = |k: usize| b.get(k).copied().unwrap_or(0);
        i = match c {
            0x1b => match at(i + 1) {
                b'[' => skip_csi(b, i + 2),
                b']' | b'P' | b'X' | b'^' | b'_' => skip_string(b, i + 2),
                0x40..=0x7e => i + 2,
                _ => i + 1,
            },
            b'\r' => {
                if at(i + 1) != b'\n' {
                    out.push(b'\n');
                }
                i + 1
            }
            0xc2 => match at(i + 1) {
                0x9b => skip_csi(b, i + 2),
                0x90 | 0x98 | 0x9d | 0x9e | 0x9f => skip_string(b, i + 2),
                0x80..=0x9f => i + 2,
                _ => {
                    out.push(c);
                    i + 1
                }
            },
            0xe2 => match (at(i + 1), at(i + 2)) {
                // Bidirectional overrides make text read otherwise than it is.
                (0x80, 0xaa..=0xae) | (0x81, 0xa6..=0xa9) => i + 3,
                _ => {
                    out.push(c);
                    i + 1
                }
            },
            _ => i + 1,
        };
        run = i;
    }
    out.extend_from_slice(&b[run.min(n)..]);
    let out = String::from_utf8(out)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    let wrap_width = wrap_width(&out);
    Cleaned {
        text: out,
        wrap_width,
    }
}

/// After `ESC [`: parameters (0x30-0x3f) and intermediates (0x20-0x2f), then one final byte
/// (0x40-0x7e); a broken sequence ends at the first other byte, which is kept.
fn skip_csi(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        match c {
            0x20..=0x3f => i += 1,
            0x40..=0x7e => return i + 1,
            _ => return i,
        }
    }
    i
}

/// A string sequence (OSC, DCS, ...) up to BEL, `ESC \` or C1 ST; an unterminated one ends
/// at the line, so a stray introducer cannot swallow the rest of a log.
fn skip_string(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        match c {
            b'\n' => return i,
            0x07 => return i + 1,
            0x1b => {
                return if b.get(i + 1) == Some(&b'\\') {
                    i + 2
                } else {
                    i + 1
                };
            }
            0xc2 if b.get(i + 1) == Some(&0x9c) => return i + 2,
            _ => i += 1,
        }
    }
    i
}

/// The width a terminal hard-wrapped the text at: the length of the longest lines, when at
/// least two lines have exactly it, it is 40 columns or more, and no line is longer. A
/// terminal cuts every long line at its width, so the widest lines sharing one length is its
/// mark; ordinary text almost never has two longest lines of equal length.
fn wrap_width(text: &str) -> Option<usize> {
    let mut widest = 0;
    let mut count = 0;
    for line in text.split('\n') {
        let n = line.chars().count();
        match n.cmp(&widest) {
            std::cmp::Ordering::Greater => {
                widest = n;
                count = 1;
            }
            std::cmp::Ordering::Equal => count += 1,
            std::cmp::Ordering::Less => {}
        }
    }
    (widest >= 40 && count >= 2).then_some(widest)
}

/// The text with every line of exactly `width` characters joined to the next, and for each
/// byte of it the byte of `text` it came from (offsets into the joined view map back with
/// [`Joined::original`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Joined {
    pub text: String,
    /// Byte offsets, in the joined text, where a line break was removed.
    removed: Vec<usize>,
}

impl Joined {
    /// Joins the wrapped lines of `text`.
    #[must_use]
    pub(crate) fn new(text: &str, width: usize) -> Joined {
        let mut out = String::with_capacity(text.len());
        let mut removed = Vec::new();
        let mut lines = text.split('\n').peekable();
        while let Some(line) = lines.next() {
            out.push_str(line);
            if lines.peek().is_some() {
                if line.chars().count() == width {
                    removed.push(out.len());
                } else {
                    out.push('\n');
                }
            }
        }
        Joined { text: out, removed }
    }

    /// The offset in the original text of byte `at` of the joined one.
    #[must_use]
    pub(crate) fn original(&self, at: usize) -> usize {
        // Every break removed at or before `at` shifts it by one byte.
        at + self.removed.partition_point(|&r| r <= at)
    }

    /// The offset in the original text of the end of a span ending at byte `end` (a break
    /// removed right at the end belongs after the span).
    #[must_use]
    pub(crate) fn original_end(&self, end: usize) -> usize {
        end + self.removed.partition_point(|&r| r < end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_and_terminal_titles_go_and_line_ends_become_newlines() {
        let raw = "\u{1b}[1;31mRuntimeError\u{1b}[0m: CUDA error\r\n\u{1b}]0;title\u{7}next\r 50%\r100%\n\u{7}bell\u{0}nul";
        assert_eq!(
            clean(raw).text,
            "RuntimeError: CUDA error\nnext\n 50%\n100%\nbellnul"
        );
        // A broken sequence stops at its line.
        assert_eq!(clean("a\u{1b}]never ends\nb").text, "a\nb");
        assert_eq!(clean("x\u{9b}31my").text, "xy");
    }

    #[test]
    fn utf16_with_a_byte_order_mark_is_decoded() {
        let mut bytes = vec![0xff, 0xfe];
        for unit in "CUDA error 804".encode_utf16() {
            bytes.extend(unit.to_le_bytes());
        }
        assert_eq!(decode(&bytes), "CUDA error 804");
        assert_eq!(decode(b"\xef\xbb\xbfok \xff"), "ok \u{fffd}");
    }

    #[test]
    fn hard_wrapped_lines_are_found_and_joined_with_offsets_kept() {
        let text = "RuntimeError: CUDA error: no kernel image is availa\nble for execution on the dev\nice\nshort line\nanother: twenty chars\n";
        // The two wrapped lines are 51 and 28 characters: not one width, not wrapped.
        assert_eq!(clean(text).wrap_width, None);
        let wrapped = "RuntimeError: CUDA error: no kernel image is avai\nlable for execution on the device. CUDA kernel er\nrors might be asynchronously reported\n";
        let cleaned = clean(wrapped);
        assert_eq!(cleaned.wrap_width, Some(49));
        let joined = Joined::new(&cleaned.text, 49);
        assert!(
            joined
                .text
                .contains("no kernel image is available for execution on the device")
        );
        let at = joined.text.find("available").unwrap();
        let original = joined.original(at);
        assert_eq!(&cleaned.text[original..original + 4], "avai");
        let end = joined.text.find(" for execution").unwrap();
        assert_eq!(
            &cleaned.text[original..joined.original_end(end)],
            "avai\nlable"
        );
    }
}
