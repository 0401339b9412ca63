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

/// Terminal widths at which one wrapped line alone is taken for a hard wrap: the VT100's two
/// (80 and 132 columns) and the other common defaults of terminals and CI log viewers (100,
/// 120). A single message wrapped once leaves one line of the width, which the rule of two
/// equal widest lines cannot see.
const TERMINAL_WIDTHS: [usize; 4] = [80, 100, 120, 132];

/// The width a terminal hard-wrapped the text at: the length of the longest lines, when at
/// least two lines have exactly it, it is 40 columns or more, and no line is longer. A
/// terminal cuts every long line at its width, so the widest lines sharing one length is its
/// mark; ordinary text almost never has two longest lines of equal length. A single longest
/// line counts too when its length is one of [`TERMINAL_WIDTHS`] and a line follows it that
/// is the rest of what was cut (not empty, and no log record of its own).
fn wrap_width(text: &str) -> Option<usize> {
    let mut widest = 0;
    let mut count = 0;
    // Whether a non-empty line follows the (last) widest line.
    let mut followed = false;
    let mut previous_widest = false;
    for line in text.split('\n') {
        let n = line.chars().count();
        if previous_widest {
            // The rest of a cut line, not a record of its own: a line that opens with a log
            // prefix (glog's `E1207 12:00:01.123`, a timestamp) is the next record.
            followed = !line.trim().is_empty() && prefix_len(line) == 0;
        }
        previous_widest = false;
        match n.cmp(&widest) {
            std::cmp::Ordering::Greater => {
                widest = n;
                count = 1;
                followed = false;
                previous_widest = true;
            }
            std::cmp::Ordering::Equal => {
                count += 1;
                previous_widest = true;
            }
            std::cmp::Ordering::Less => {}
        }
    }
    let shared = widest >= 40 && count >= 2;
    let alone = count == 1 && followed && TERMINAL_WIDTHS.contains(&widest);
    (shared || alone).then_some(widest)
}

/// The text as signatures are matched in it: each line without the prefix a logger, a
/// launcher or a quoting reply put before it ([`prefix_len`]), markdown's `**` gone, no-break
/// spaces and typographic quotes made plain, and, when a terminal hard-wrapped the text, every
/// line of exactly that width joined to the next; syslog's `#012` is a line break again. Every byte of the view maps back to the byte
/// of the text it came from ([`View::original`]), so what is quoted back is the user's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct View {
    pub text: String,
    /// Where each stretch of the view starts, where its source starts in the text, and how
    /// long the source is when the stretch replaced it (`None`: copied byte for byte).
    pieces: Vec<(usize, usize, Option<usize>)>,
}

/// A prefix this long or longer is no log prefix.
const PREFIX_MAX: usize = 96;

/// Prefixes stripped from one line, one after another (`[rank3]:` then a timestamp then a
/// level), at most this many.
const PREFIXES_MAX: usize = 6;

/// The most pieces a view keeps (24 MiB of them, give or take the two of the line in hand): past this, the rest of the text is taken
/// verbatim, so a hostile text of a million prefixes or `**` costs bounded memory.
const PIECES_MAX: usize = 1 << 20;

impl View {
    /// The view of `text`, hard-wrapped at `width` when a terminal did.
    #[must_use]
    pub(crate) fn new(text: &str, width: Option<usize>) -> View {
        let mut view = View {
            text: String::with_capacity(text.len()),
            pieces: Vec::new(),
        };
        let mut at = 0;
        let mut continued = false;
        for line in text.split('\n') {
            let line_start = at;
            at += line.len() + 1;
            if view.pieces.len() >= PIECES_MAX {
                view.copy(line_start, line);
                if at <= text.len() {
                    view.copy(line_start + line.len(), "\n");
                }
                continue;
            }
            // A line that continues a wrapped one has no prefix of its own.
            let skip = if continued { 0 } else { prefix_len(line) };
            view.copy_line(line, line_start, skip);
            continued = width.is_some_and(|w| line.chars().count() == w);
            if at <= text.len() && !continued {
                view.copy(line_start + line.len(), "\n");
            }
        }
        view
    }

    /// Copies one line from byte `skip` on (`start`: where the line starts in the text),
    /// dropping `**`, making no-break spaces and typographic quotes plain and syslog's `#012`
    /// a line break.
    fn copy_line(&mut self, line: &str, start: usize, skip: usize) {
        let b = line.as_bytes();
        let (mut run, mut i) = (skip, skip);
        while i < b.len() && self.pieces.len() < PIECES_MAX {
            let at = |k: usize| b.get(i + k).copied();
            let (len, with) = match (b[i], at(1), at(2)) {
                (b'*', Some(b'*'), _) => (2, ""),
                // syslog writes a message's line breaks as `#012`.
                (b'#', Some(b'0'), Some(b'1')) if b.get(i + 3) == Some(&b'2') => (4, "\n"),
                (0xc2, Some(0xa0), _) => (2, " "),
                (0xe2, Some(0x80), Some(0x98 | 0x99)) => (3, "'"),
                (0xe2, Some(0x80), Some(0x9c | 0x9d)) => (3, "\""),
                _ => {
                    i += 1;
                    continue;
                }
            };
            if let Some(stretch) = line.get(run..i).filter(|s| !s.is_empty()) {
                self.copy(start + run, stretch);
            }
            if !with.is_empty() {
                self.replace(start + i, len, with);
            }
            i += len;
            run = i;
        }
        if let Some(stretch) = line.get(run..).filter(|s| !s.is_empty()) {
            self.copy(start + run, stretch);
        }
    }

    /// Appends `text`, which is the original's from byte `from`. A copy that continues the
    /// previous one in both texts extends it: a text with nothing set aside is one piece, and
    /// the pieces grow with what was set aside, not with the lines.
    fn copy(&mut self, from: usize, text: &str) {
        let here = self.text.len();
        let continues = self
            .pieces
            .last()
            .is_some_and(|&(v, o, replaced)| replaced.is_none() && o + (here - v) == from);
        if !continues {
            self.pieces.push((here, from, None));
        }
        self.text.push_str(text);
    }

    fn replace(&mut self, from: usize, len: usize, with: &str) {
        self.pieces.push((self.text.len(), from, Some(len)));
        self.text.push_str(with);
    }

    /// The offset in the original text of byte `at` of the view.
    #[must_use]
    pub(crate) fn original(&self, at: usize) -> usize {
        let i = self.pieces.partition_point(|p| p.0 <= at).saturating_sub(1);
        match self.pieces.get(i) {
            Some(&(v, o, None)) => o + (at - v),
            Some(&(_, o, Some(_))) => o,
            None => at,
        }
    }

    /// The offset in the original text of the end of a span ending at byte `end` of the view.
    #[must_use]
    pub(crate) fn original_end(&self, end: usize) -> usize {
        let Some(last) = end.checked_sub(1) else {
            return self.original(0);
        };
        let i = self
            .pieces
            .partition_point(|p| p.0 <= last)
            .saturating_sub(1);
        match self.pieces.get(i) {
            Some(&(v, o, None)) => o + (last - v) + 1,
            Some(&(_, o, Some(len))) => o + len,
            None => end,
        }
    }
}

/// How many bytes at the start of `line` are a prefix that loggers, launchers and replies
/// put before a message, not the message: markdown's `>`, `[rank3]:`, `[1,0]<stderr>:`,
/// `(pid=123)`, a timestamp, a glog or TensorFlow header (`E1207 12:00:01.123 77 f.cc:12]`,
/// `W tensorflow/x.cc:64]`), a syslog or journal header (`Dec  7 04:10:31 host kernel:`), a
/// dmesg time (`[  12.345]`), srun's `0:` and docker compose's `name  |`. Several in a row are
/// all taken, the spaces after each too; at most [`PREFIX_MAX`] bytes are looked at for each.
#[must_use]
pub(crate) fn prefix_len(line: &str) -> usize {
    let b = line.as_bytes();
    let mut at = 0;
    for _ in 0..PREFIXES_MAX {
        let rest = &b[at..];
        let lead = rest
            .iter()
            .take_while(|c| **c == b' ' || **c == b'\t')
            .count();
        let Some(n) = one_prefix(&rest[lead..]) else {
            break;
        };
        at += lead + n;
        at += b[at..]
            .iter()
            .take_while(|c| **c == b' ' || **c == b'\t')
            .count();
    }
    // Only ASCII is ever taken, so this is a character boundary; be sure anyway.
    if line.is_char_boundary(at) { at } else { 0 }
}

/// The first [`PREFIX_MAX`] bytes of a line, where a prefix is looked for.
#[derive(Clone, Copy)]
struct Head<'a>(&'a [u8]);

impl Head<'_> {
    fn at(self, i: usize) -> Option<u8> {
        self.0.get(i).copied()
    }

    fn starts(self, from: usize, what: &[u8]) -> bool {
        self.0.get(from..).is_some_and(|r| r.starts_with(what))
    }

    /// How many digits from `from`.
    fn digits(self, from: usize) -> usize {
        self.count(from, |c| c.is_ascii_digit())
    }

    fn count(self, from: usize, class: impl Fn(u8) -> bool) -> usize {
        self.0
            .get(from..)
            .map_or(0, |r| r.iter().take_while(|c| class(**c)).count())
    }

    /// Where `what` next occurs from `from`.
    fn find(self, from: usize, what: &[u8]) -> Option<usize> {
        self.0
            .get(from..)?
            .windows(what.len())
            .position(|w| w == what)
            .map(|p| from + p)
    }

    /// Past the `<stderr>:`, `<stdout>:` or `:` that may end a prefix at `from`.
    fn tail(self, from: usize) -> usize {
        let mut n = from;
        for t in [&b"<stderr>"[..], b"<stdout>"] {
            if self.starts(n, t) {
                n += t.len();
            }
        }
        if self.at(n) == Some(b':') {
            n += 1;
        }
        n
    }

    /// The end of a time `hh:mm:ss` (with a fraction after `.` or `,`) at `from`.
    fn time(self, from: usize) -> Option<usize> {
        let t = self.0.get(from..from + 8)?;
        let ok = t.iter().enumerate().all(|(i, c)| {
            if i == 2 || i == 5 {
                *c == b':'
            } else {
                c.is_ascii_digit()
            }
        });
        if !ok {
            return None;
        }
        let mut n = from + 8;
        if matches!(self.at(n), Some(b'.' | b',')) && self.digits(n + 1) > 0 {
            n += 1 + self.digits(n + 1);
        }
        Some(n)
    }
}

/// The length of one prefix at the start of `b`, if one is there.
fn one_prefix(b: &[u8]) -> Option<usize> {
    let h = Head(&b[..b.len().min(PREFIX_MAX)]);
    [bracketed, dated, glog, syslog, level, label]
        .iter()
        .find_map(|rule| rule(h))
}

/// Markdown's `>`; `[rank3]:`, `[1,0]<stderr>:`, a dmesg time `[  12.3]`, a glog bracket;
/// Ray's `(pid=123)`.
fn bracketed(h: Head) -> Option<usize> {
    match h.at(0)? {
        b'>' => Some(1),
        b'[' => {
            let close = h.find(1, b"]")?;
            let inside = &h.0[1..close];
            (!inside.is_empty() && !inside.contains(&b'[')).then(|| h.tail(close + 1))
        }
        b'(' => {
            let close = h.find(1, b")")?;
            h.find(1, b"pid=")
                .filter(|&p| p < close)
                .map(|_| h.tail(close + 1))
        }
        _ => None,
    }
}

/// A date `2024-01-02` or `2024/01/02`, then `T` or a space and a time, a zone, a `:`; or a
/// time alone.
fn dated(h: Head) -> Option<usize> {
    let date = h.digits(0) == 4
        && matches!(h.at(4), Some(b'-' | b'/'))
        && h.digits(5) == 2
        && h.digits(8) == 2;
    if !date {
        return h.time(0).map(|n| h.tail(n));
    }
    let mut n = 10;
    if matches!(h.at(n), Some(b'T' | b' ' | b'_')) {
        n = h.time(n + 1).unwrap_or(n);
    }
    if h.at(n) == Some(b'Z') {
        n += 1;
    } else if matches!(h.at(n), Some(b'+' | b'-')) && h.digits(n + 1) >= 2 {
        n += 1 + h.digits(n + 1);
        if h.at(n) == Some(b':') && h.digits(n + 1) == 2 {
            n += 3;
        }
    }
    Some(h.tail(n))
}

/// glog's `E1207 12:00:01.123456  77 file.cc:12] ` and TensorFlow's `W tensorflow/x.cc:64] `
/// (after its timestamp).
fn glog(h: Head) -> Option<usize> {
    if !matches!(h.at(0), Some(b'I' | b'W' | b'E' | b'F')) {
        return None;
    }
    if h.digits(1) == 4 && h.at(5) == Some(b' ') && h.time(6).is_some() {
        return h.find(6, b"] ").map(|p| p + 1);
    }
    if h.at(1) != Some(b' ') {
        return None;
    }
    let close = h.find(2, b"] ")?;
    let before = &h.0[2..close];
    let colon = before.iter().rposition(|&c| c == b':')?;
    let number = &before[colon + 1..];
    (!number.is_empty() && number.iter().all(u8::is_ascii_digit) && !before.contains(&b' '))
        .then_some(close + 1)
}

/// syslog and the journal: `Dec  7 04:10:31 host tag[pid]: `.
fn syslog(h: Head) -> Option<usize> {
    const MONTHS: [&[u8]; 12] = [
        b"Jan ", b"Feb ", b"Mar ", b"Apr ", b"May ", b"Jun ", b"Jul ", b"Aug ", b"Sep ", b"Oct ",
        b"Nov ", b"Dec ",
    ];
    if !MONTHS.iter().any(|m| h.starts(0, m)) {
        return None;
    }
    let mut n = 4 + h.count(4, |c| c == b' ');
    n += h.digits(n);
    n += h.count(n, |c| c == b' ');
    let after = h.time(n)?;
    h.find(after, b": ").map(|p| p + 1)
}

/// A level word, then a `MM-DD hh:mm:ss` time (vLLM) or a logger's name and `:` (Python's
/// logging: `ERROR torch.cuda: `, `ERROR:root:`); a level word alone is the message's own
/// (`ERROR: ...`).
fn level(h: Head) -> Option<usize> {
    const LEVELS: [&[u8]; 7] = [
        b"DEBUG",
        b"INFO",
        b"WARNING",
        b"WARN",
        b"ERROR",
        b"CRITICAL",
        b"FATAL",
    ];
    let level = LEVELS.iter().find(|l| h.starts(0, l))?;
    if !matches!(h.at(level.len()), Some(b' ' | b':')) {
        return None;
    }
    let n = level.len() + 1;
    if h.digits(n) == 2 && h.at(n + 2) == Some(b'-') && h.digits(n + 3) == 2 {
        return h.time(n + 6).map(|after| h.tail(after));
    }
    let name = h.count(n, |c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.'));
    (name > 0 && h.at(n + name) == Some(b':')).then_some(n + name + 1)
}

/// srun --label's `12: ` and docker compose's `name-1  | `.
fn label(h: Head) -> Option<usize> {
    let d = h.digits(0);
    if (1..=5).contains(&d) && h.starts(d, b": ") {
        return Some(d + 1);
    }
    let word = h.count(0, |c| {
        c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')
    });
    let spaces = h.count(word, |c| c == b' ');
    (word > 0 && spaces > 0 && h.starts(word + spaces, b"| ")).then_some(word + spaces + 1)
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
        let joined = View::new(&cleaned.text, Some(49));
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
        // One message wrapped once by an 80-column terminal: a single line of that width, and
        // the rest of it below.
        let once = "Traceback (most recent call last):\n    x = torch.ones(1, device=\"cuda\") + 1\nRuntimeError: CUDA error: no kernel image is available for execution on the devi\nce\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\n";
        let cleaned = clean(once);
        assert_eq!(cleaned.wrap_width, Some(80));
        assert!(
            View::new(&cleaned.text, cleaned.wrap_width)
                .text
                .contains("execution on the device\nFor debugging")
        );
        // Two log records, the first of exactly 80 characters: no wrap.
        let records = "E1207 12:00:01.123456   77 main.cc:12] FAILED TO INITIALIZE NVML: DRIVER/LIBRARY\nE1207 12:00:01.123457   77 main.cc:12] VERSION MISMATCH\n";
        assert_eq!(records.find('\n'), Some(80));
        assert_eq!(clean(records).wrap_width, None);
        // Not at a terminal's width, or nothing after it: an ordinary longest line.
        assert_eq!(
            clean(&once.replace("the devi\n", "the dev\n")).wrap_width,
            None
        );
        assert_eq!(
            clean("short\nRuntimeError: CUDA error: no kernel image is available for execution on the devi\n")
                .wrap_width,
            None
        );
    }

    #[test]
    fn log_prefixes_go_from_each_line_and_offsets_map_back() {
        for (line, message) in [
            ("[rank3]: RuntimeError: x", "RuntimeError: x"),
            ("[rank3]:[W1207 12:00:01.123 ProcessGroup.cpp:9] msg", "msg"),
            ("[1,0]<stderr>: msg", "msg"),
            ("(RayWorker pid=4242, ip=10.0.0.1) msg", "msg"),
            ("2026-12-07T04:10:31.123456Z msg", "msg"),
            ("2026-12-07 04:10:31,123 msg", "msg"),
            (
                "2023-03-31 10:00:00.123456: W tensorflow/tsl/platform/default/dso_loader.cc:66] Could not load",
                "Could not load",
            ),
            (
                "E1207 12:00:01.123456   77 cuda_dnn.cc:334] Loaded",
                "Loaded",
            ),
            (
                "Dec  7 04:10:31 gpu01 kernel: [  12.345678] NVRM: x",
                "NVRM: x",
            ),
            ("> > **RuntimeError**: x", "RuntimeError: x"),
            ("0: RuntimeError: x", "RuntimeError: x"),
            ("ERROR torch.cuda: Found", "Found"),
            ("WARNING:root:Found", "Found"),
            ("INFO 12-07 04:10:31 [config.py:1] Found", "Found"),
            ("trainer-1  | RuntimeError: x", "RuntimeError: x"),
            // Not prefixes: the message itself.
            ("RuntimeError: x", "RuntimeError: x"),
            ("ERROR: x", "ERROR: x"),
            ("libcudnn.so.8: cannot", "libcudnn.so.8: cannot"),
            ("Error 804: x", "Error 804: x"),
        ] {
            let view = View::new(line, None);
            assert_eq!(view.text, message, "{line:?}");
            assert_eq!(view.original_end(view.text.len()), line.len(), "{line:?}");
            let head = &message[..3];
            assert_eq!(view.original(0), line.rfind(head).unwrap(), "{line:?}");
        }
        // Typographic quotes and no-break spaces read as plain ones; the span maps back whole.
        let text = "couldn\u{2019}t\u{a0}load";
        let view = View::new(text, None);
        assert_eq!(view.text, "couldn't load");
        assert_eq!(view.original_end(view.text.len()), text.len());
        assert_eq!(view.original(6), text.find('\u{2019}').unwrap());
        // Set aside a million times: the map stops growing and the rest is verbatim.
        let hostile = "**a".repeat(PIECES_MAX + 10);
        let view = View::new(&hostile, None);
        assert!(view.pieces.len() <= PIECES_MAX + 2, "{}", view.pieces.len());
        assert!(view.text.ends_with("**a**a"));
        assert_eq!(view.original_end(view.text.len()), hostile.len());
        // Nothing set aside: one piece, however many lines.
        assert_eq!(View::new(&"step ok\n".repeat(1000), None).pieces.len(), 1);
        // syslog's escaped line break.
        let text = "the version 535.54.03, but#012NVRM: this kernel";
        assert_eq!(
            View::new(text, None).text,
            "the version 535.54.03, but\nNVRM: this kernel"
        );
    }
}
