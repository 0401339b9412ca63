//! The pattern language of `errors.toml`: literal text with a few placeholders, matched in
//! linear time, never a regular expression.
//!
//! Error messages are fixed sentences with a few variable fields (a version, a library name, a
//! compute capability), so a pattern is the sentence itself with the variable parts marked. Why
//! not regular expressions: a message copied from a traceback is full of `(`, `.`, `[` and `'`
//! that a regular expression would need escaped (and a wrong escape silently matches too much);
//! the `regex` crate would add about half a megabyte to the binary for one command; and a
//! pattern here always has a literal anchor of four or more bytes, which lets
//! `crate::explain` find every pattern of the table in one pass over a 10 MB log.
//!
//! Syntax:
//! - Text matches itself, case-sensitively; a pattern starting with `(?i)` ignores ASCII case.
//! - A space matches one or more whitespace characters, line breaks included, so a message a
//!   terminal or a logger wrapped at a space still matches.
//! - `{n}` digits; `{v}` a version (digits and dots: `12.4`, `550.54.15`); `{x}` hexadecimal
//!   (`0x` optional); `{w}` a word of letters, digits and `_.+-` (`libcudart.so.11.0`,
//!   `sm_120`, `gfx1031`, `__nvJitLinkAddData_12_1`); `{p}` a path (anything but whitespace,
//!   quotes, brackets, `:` and `,`); `{*}` any text on the same line, as little as possible,
//!   up to the literal text that follows (or to the end of the line when it ends the pattern).
//! - `{w:subject}` (any kind, any of [`FACTS`]) also captures what it matched under that name.
//! - `{{` and `}}` are literal braces.
//! - A pattern that begins (ends) with a digit or a placeholder does not match in the middle
//!   of a longer number or word: `error 80` does not match `error 802`.
//!
//! Matching starts from the anchor, the longest run of literal text (at least four bytes):
//! the pieces before it are matched backwards from there and those after it forwards, each
//! possessively (a placeholder takes the longest run it can and never gives any back); only a
//! `{*}` retries, within its line and its bound, so a match costs little more than the text it
//! covers. No piece looks further than [`RUN_MAX`] (a placeholder, a space) or [`LAZY_MAX`]
//! (`{*}`) bytes, so the work at one candidate is bounded whatever the text around it.

use std::fmt;

/// The names a placeholder may capture under, and what `crate::explain` does with each.
pub const FACTS: &[(&str, &str)] = &[
    (
        "subject",
        "the library, symbol, file or option the message is about; a finding that names it is preferred",
    ),
    (
        "arch",
        "a GPU architecture (`sm_120`, `compute_89`, `8.6`, `gfx1031`), compared with this machine's GPUs",
    ),
    (
        "cuda",
        "the CUDA version a driver supports, as `12080` or `12.8`, compared with this machine's driver",
    ),
    (
        "needs_cuda",
        "the CUDA version an image or program requires (`cuda>=12.8`), compared with what this machine's driver supports",
    ),
    (
        "driver",
        "a driver version (`550.90`), compared with this machine's driver and kernel module",
    ),
    ("code", "a CUDA error number, which names the row"),
    ("xid", "an Xid number, which names the row"),
    ("bytes", "an amount of memory, quoted back"),
];

/// What a placeholder matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Digits,
    Version,
    Hex,
    Word,
    Path,
}

impl Class {
    fn from_letter(letter: &str) -> Option<Class> {
        Some(match letter {
            "n" => Class::Digits,
            "v" => Class::Version,
            "x" => Class::Hex,
            "w" => Class::Word,
            "p" => Class::Path,
            _ => return None,
        })
    }

    fn contains(self, b: u8) -> bool {
        match self {
            Class::Digits => b.is_ascii_digit(),
            Class::Version => b.is_ascii_digit() || b == b'.',
            Class::Hex => b.is_ascii_hexdigit() || b == b'x' || b == b'X',
            Class::Word => b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'+' | b'-'),
            Class::Path => {
                !b.is_ascii_whitespace()
                    && !b.is_ascii_control()
                    && !matches!(
                        b,
                        b'\'' | b'"' | b'`' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b':' | b','
                    )
            }
        }
    }

    /// Whether a run of this class may start or end here (a version must begin and end with
    /// a digit: `12.4.` is `12.4` and a full stop).
    fn edge(self, b: u8) -> bool {
        match self {
            Class::Version => b.is_ascii_digit(),
            _ => self.contains(b),
        }
    }
}

/// One part of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text that must be there (never contains whitespace).
    Literal(String),
    /// One or more whitespace characters.
    Space,
    /// A run of a class, possibly captured.
    Run(Class, Option<&'static str>),
    /// `{*}`: the shortest text on the line up to the next piece, possibly captured.
    Lazy(Option<&'static str>),
}

/// A parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// ASCII case is ignored (`(?i)`).
    pub case_insensitive: bool,
    pub pieces: Vec<Piece>,
    /// Index of the longest literal piece, where matching starts.
    pub anchor: usize,
}

/// Where a pattern matched, in bytes of the text, and what its placeholders captured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    pub captures: Vec<(&'static str, usize, usize)>,
}

/// Why a pattern does not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError(pub String);

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The shortest anchor a pattern may have: shorter ones would stop the scan too often.
pub const MIN_ANCHOR: usize = 4;

/// The most text a `{*}` takes, so a log of one endless line costs a bounded search per
/// candidate.
pub const LAZY_MAX: usize = 512;

/// The longest run a placeholder or a space takes: a longer run of its class (a word of
/// `libcuda.so` repeated for a megabyte, a page of blanks) is no library name, version or path,
/// and the pattern does not match there. Every piece thus costs at most this many bytes per
/// candidate, and a text full of anchors costs a bounded amount per occurrence, never the
/// length of the run again at each.
pub const RUN_MAX: usize = 512;

/// A capture name as [`FACTS`] spells it.
fn capture(name: &str) -> Result<&'static str, String> {
    FACTS
        .iter()
        .find(|(fact, _)| *fact == name)
        .map(|(fact, _)| *fact)
        .ok_or_else(|| format!("`{name}` is not a known capture name"))
}

/// The piece a `{kind}` or `{kind:name}` stands for: `{*}` or a class letter.
fn placeholder(kind: &str, name: Option<&'static str>) -> Option<Piece> {
    match kind {
        "*" => Some(Piece::Lazy(name)),
        letter => Class::from_letter(letter).map(|class| Piece::Run(class, name)),
    }
}

/// A `{*}` needs literal text before it (where its search starts) and literal text or the
/// end after it (where it stops).
fn lazy_placement(pieces: &[Piece]) -> Result<(), &'static str> {
    for (i, piece) in pieces.iter().enumerate() {
        if matches!(piece, Piece::Lazy(_)) {
            if i == 0 {
                return Err("`{*}` cannot start a pattern");
            }
            if !matches!(pieces.get(i - 1), Some(Piece::Literal(_))) {
                return Err("`{*}` must follow literal text directly");
            }
            if !matches!(pieces.get(i + 1), None | Some(Piece::Literal(_))) {
                return Err("`{*}` must be followed by literal text or end the pattern");
            }
        }
    }
    Ok(())
}

/// The index of the literal a log is searched for first: the longest (the first of equals),
/// if it is at least [`MIN_ANCHOR`] bytes.
fn anchor(pieces: &[Piece]) -> Option<usize> {
    pieces
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            Piece::Literal(l) => Some((i, l.len())),
            _ => None,
        })
        .max_by_key(|&(i, len)| (len, std::cmp::Reverse(i)))
        .filter(|&(_, len)| len >= MIN_ANCHOR)
        .map(|(i, _)| i)
}

impl Pattern {
    /// Parses a pattern.
    ///
    /// # Errors
    /// An unknown or unclosed placeholder, an unknown capture name, a `{*}` that starts the
    /// pattern or is not followed by literal text, two placeholders side by side, space at
    /// either end, or no literal run of [`MIN_ANCHOR`] bytes.
    pub fn parse(text: &str) -> Result<Pattern, PatternError> {
        let err = |m: &str| Err(PatternError(format!("pattern `{text}`: {m}")));
        let (case_insensitive, body) = match text.strip_prefix("(?i)") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if body.starts_with(char::is_whitespace) || body.ends_with(char::is_whitespace) {
            return err("starts or ends with a space");
        }
        let mut pieces: Vec<Piece> = Vec::new();
        let mut literal = String::new();
        let mut chars = body.chars().peekable();
        let flush = |literal: &mut String, pieces: &mut Vec<Piece>| {
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(literal)));
            }
        };
        while let Some(c) = chars.next() {
            match c {
                '{' if chars.peek() == Some(&'{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek() == Some(&'}') => {
                    chars.next();
                    literal.push('}');
                }
                '}' => return err("a lone `}` (write `}}` for a brace)"),
                '{' => {
                    let mut inside = String::new();
                    let mut closed = false;
                    for c in chars.by_ref() {
                        if c == '}' {
                            closed = true;
                            break;
                        }
                        inside.push(c);
                    }
                    if !closed {
                        return err("a `{` is not closed (write `{{` for a brace)");
                    }
                    let (kind, name) = match inside.split_once(':') {
                        Some((kind, name)) => (kind, Some(name)),
                        None => (inside.as_str(), None),
                    };
                    let name = match name.map(capture).transpose() {
                        Ok(name) => name,
                        Err(m) => return err(&m),
                    };
                    flush(&mut literal, &mut pieces);
                    if matches!(pieces.last(), Some(Piece::Run(..) | Piece::Lazy(_))) {
                        return err("two placeholders side by side");
                    }
                    let piece = match placeholder(kind, name) {
                        Some(piece) => piece,
                        None => return err(&format!("unknown placeholder `{{{inside}}}`")),
                    };
                    pieces.push(piece);
                }
                c if c.is_whitespace() => {
                    flush(&mut literal, &mut pieces);
                    while chars.peek().is_some_and(|c| c.is_whitespace()) {
                        chars.next();
                    }
                    pieces.push(Piece::Space);
                }
                c => literal.push(c),
            }
        }
        flush(&mut literal, &mut pieces);
        if let Err(m) = lazy_placement(&pieces) {
            return err(m);
        }
        let Some(anchor) = anchor(&pieces) else {
            return err(&format!(
                "needs a run of at least {MIN_ANCHOR} bytes of literal text to search for"
            ));
        };
        Ok(Pattern {
            case_insensitive,
            pieces,
            anchor,
        })
    }

    /// The anchor's text.
    #[must_use]
    pub fn anchor_text(&self) -> &str {
        match self.pieces.get(self.anchor) {
            Some(Piece::Literal(l)) => l,
            _ => "",
        }
    }

    /// The match whose anchor starts at byte `at` of `text`, if the text there fits.
    #[must_use]
    pub fn match_at(&self, text: &str, at: usize) -> Option<Found> {
        let bytes = text.as_bytes();
        let anchor = self.anchor_text();
        if !self.literal_at(bytes, at, anchor) {
            return None;
        }
        let mut spans = vec![(0, 0); self.pieces.len()];
        spans[self.anchor] = (at, at + anchor.len());
        let start = match self.anchor.checked_sub(1) {
            Some(i) => self.backward_from(bytes, at, i, &mut spans)?,
            None => at,
        };
        let end = self.forward_from(bytes, at + anchor.len(), self.anchor + 1, &mut spans)?;
        // Not inside a longer number or word.
        let first = self.pieces.first()?;
        let last = self.pieces.last()?;
        let before = start.checked_sub(1).and_then(|i| bytes.get(i)).copied();
        let after = bytes.get(end).copied();
        let glued = |piece: &Piece, neighbour: Option<u8>, at_start: bool| -> bool {
            let Some(b) = neighbour else { return false };
            match piece {
                // A run took every byte of its class it could, so only an edge byte next to
                // it (a digit beside a version) means it sits inside a longer one.
                Piece::Run(class, _) => class.edge(b),
                Piece::Literal(l) => {
                    let edge = if at_start {
                        l.as_bytes().first()
                    } else {
                        l.as_bytes().last()
                    };
                    edge.is_some_and(u8::is_ascii_digit) && b.is_ascii_digit()
                }
                _ => false,
            }
        };
        if glued(first, before, true) || glued(last, after, false) {
            return None;
        }
        text.get(start..end)?;
        let mut captures = Vec::new();
        for (i, piece) in self.pieces.iter().enumerate() {
            let (Piece::Run(_, Some(name)) | Piece::Lazy(Some(name))) = piece else {
                continue;
            };
            let (mut s, e) = spans[i];
            // A capture takes in the word it is glued to: `libcudnn{w:subject}` captures
            // `libcudnn_ops_infer.so.8`, `sm_{n:arch}` captures `sm_120`.
            if let (Some(Piece::Literal(_)), Some(&(ls, le))) = (
                i.checked_sub(1).and_then(|p| self.pieces.get(p)),
                i.checked_sub(1).and_then(|p| spans.get(p)),
            ) && le == s
            {
                while s > ls && bytes.get(s - 1).is_some_and(|b| Class::Word.contains(*b)) {
                    s -= 1;
                }
            }
            captures.push((*name, s, e));
        }
        Some(Found {
            start,
            end,
            captures,
        })
    }

    /// Every match in `text`, left to right, found by searching for the anchor (for
    /// validation and tests; `crate::explain` searches all patterns at once).
    #[must_use]
    pub fn find_all(&self, text: &str) -> Vec<Found> {
        let anchor = self.anchor_text();
        let haystack = if self.case_insensitive {
            text.to_ascii_lowercase()
        } else {
            text.to_string()
        };
        let needle = if self.case_insensitive {
            anchor.to_ascii_lowercase()
        } else {
            anchor.to_string()
        };
        let mut out: Vec<Found> = Vec::new();
        for (at, _) in haystack.match_indices(&needle) {
            if let Some(found) = self.match_at(text, at)
                && out.last().is_none_or(|prev| prev.start != found.start)
            {
                out.push(found);
            }
        }
        out
    }

    fn literal_at(&self, bytes: &[u8], at: usize, literal: &str) -> bool {
        let Some(slice) = bytes.get(at..at + literal.len()) else {
            return false;
        };
        if self.case_insensitive {
            slice.eq_ignore_ascii_case(literal.as_bytes())
        } else {
            slice == literal.as_bytes()
        }
    }

    /// The literal glued right before piece `i`, if any.
    fn literal_before(&self, i: usize) -> Option<&str> {
        match i.checked_sub(1).and_then(|p| self.pieces.get(p)) {
            Some(Piece::Literal(l)) => Some(l),
            _ => None,
        }
    }

    /// The literal glued right after piece `i`, if any.
    fn literal_after(&self, i: usize) -> Option<&str> {
        match self.pieces.get(i + 1) {
            Some(Piece::Literal(l)) => Some(l),
            _ => None,
        }
    }

    /// Matches pieces `i` and before, backwards from `end`; returns where piece 0 starts. A
    /// `{*}` tries the occurrences of the literal before it from the nearest on, so a later
    /// piece that does not fit makes it try the next.
    fn backward_from(
        &self,
        bytes: &[u8],
        end: usize,
        i: usize,
        spans: &mut [(usize, usize)],
    ) -> Option<usize> {
        let next = |s: usize, spans: &mut [(usize, usize)]| match i.checked_sub(1) {
            Some(p) => self.backward_from(bytes, s, p, spans),
            None => Some(s),
        };
        if let Some(Piece::Lazy(_)) = self.pieces.get(i) {
            let prev = self.literal_before(i)?;
            let floor = end.saturating_sub(LAZY_MAX);
            let mut at = end;
            while at >= prev.len() && at >= floor {
                if self.literal_at(bytes, at - prev.len(), prev) {
                    spans[i] = (at, end);
                    if let Some(start) = next(at, spans) {
                        return Some(start);
                    }
                }
                if at == 0 || bytes.get(at - 1) == Some(&b'\n') {
                    return None;
                }
                at -= 1;
            }
            return None;
        }
        let s = self.back(bytes, end, i)?;
        spans[i] = (s, end);
        next(s, spans)
    }

    /// Matches pieces `i` and after, forwards from `start`; returns where the last ends. A
    /// `{*}` tries the occurrences of the literal after it from the nearest on.
    fn forward_from(
        &self,
        bytes: &[u8],
        start: usize,
        i: usize,
        spans: &mut [(usize, usize)],
    ) -> Option<usize> {
        let Some(piece) = self.pieces.get(i) else {
            return Some(start);
        };
        if let Piece::Lazy(_) = piece {
            let line_end = bytes
                .get(start..)?
                .iter()
                .take(LAZY_MAX)
                .position(|&b| b == b'\n')
                .map_or((start + LAZY_MAX).min(bytes.len()), |p| start + p);
            let Some(next) = self.literal_after(i) else {
                spans[i] = (start, line_end);
                return Some(line_end);
            };
            let mut at = start;
            while at + next.len() <= line_end {
                if self.literal_at(bytes, at, next) {
                    spans[i] = (start, at);
                    if let Some(end) = self.forward_from(bytes, at, i + 1, spans) {
                        return Some(end);
                    }
                }
                at += 1;
            }
            return None;
        }
        let e = self.forward(bytes, start, i)?;
        spans[i] = (start, e);
        self.forward_from(bytes, e, i + 1, spans)
    }

    /// Matches piece `i` backwards, ending at `end`; returns where it starts.
    fn back(&self, bytes: &[u8], end: usize, i: usize) -> Option<usize> {
        match self.pieces.get(i)? {
            Piece::Literal(l) => {
                let start = end.checked_sub(l.len())?;
                self.literal_at(bytes, start, l).then_some(start)
            }
            Piece::Space => {
                let floor = end.saturating_sub(RUN_MAX);
                let mut start = end;
                while start > floor && bytes.get(start - 1).is_some_and(u8::is_ascii_whitespace) {
                    start -= 1;
                }
                (start < end).then_some(start)
            }
            Piece::Run(class, _) => {
                let floor = end.saturating_sub(RUN_MAX);
                let mut start = end;
                while start > 0 && bytes.get(start - 1).is_some_and(|b| class.contains(*b)) {
                    if start == floor {
                        return None;
                    }
                    start -= 1;
                }
                // The literal glued before the run may itself end in the run's class
                // (`libcu{w}`): the run starts where that literal ends.
                if let Some(l) = self.literal_before(i)
                    && l.as_bytes().last().is_some_and(|b| class.contains(*b))
                {
                    start = (start..end).find(|&p| {
                        p >= l.len() && p > start && self.literal_at(bytes, p - l.len(), l)
                    })?;
                }
                // A version starts with a digit.
                while start < end && !bytes.get(start).is_some_and(|b| class.edge(*b)) {
                    start += 1;
                }
                if start == end || !bytes.get(end - 1).is_some_and(|b| class.edge(*b)) {
                    return None;
                }
                Some(start)
            }
            // Handled with its alternatives by `backward_from`.
            Piece::Lazy(_) => None,
        }
    }

    /// Matches piece `i` forwards from `start`; returns where it ends.
    fn forward(&self, bytes: &[u8], start: usize, i: usize) -> Option<usize> {
        match self.pieces.get(i)? {
            Piece::Literal(l) => self.literal_at(bytes, start, l).then_some(start + l.len()),
            Piece::Space => {
                let ceiling = start + RUN_MAX;
                let mut end = start;
                while end < ceiling && bytes.get(end).is_some_and(u8::is_ascii_whitespace) {
                    end += 1;
                }
                (end > start).then_some(end)
            }
            Piece::Run(class, _) => {
                if !bytes.get(start).is_some_and(|b| class.edge(*b)) {
                    return None;
                }
                let ceiling = start + RUN_MAX;
                let mut end = start;
                while bytes.get(end).is_some_and(|b| class.contains(*b)) {
                    if end == ceiling {
                        return None;
                    }
                    end += 1;
                }
                // The literal glued after the run may begin in the run's class (`{w}.so`):
                // the run ends where that literal begins.
                if let Some(l) = self.literal_after(i)
                    && l.as_bytes().first().is_some_and(|b| class.contains(*b))
                {
                    end = (start + 1..=end)
                        .rev()
                        .find(|&p| self.literal_at(bytes, p, l))?;
                }
                while end > start && !bytes.get(end - 1).is_some_and(|b| class.edge(*b)) {
                    end -= 1;
                }
                (end > start).then_some(end)
            }
            // Handled with its alternatives by `forward_from`.
            Piece::Lazy(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matched<'a>(pattern: &str, text: &'a str) -> Vec<&'a str> {
        let p = Pattern::parse(pattern).unwrap();
        p.find_all(text)
            .iter()
            .map(|f| &text[f.start..f.end])
            .collect()
    }

    #[test]
    fn literal_text_needs_no_escapes_and_spaces_span_wraps() {
        assert_eq!(
            matched(
                "The NVIDIA driver on your system is too old (found version {n:cuda})",
                "W: The NVIDIA driver on your system is too old\n  (found version 12080). Please"
            ),
            ["The NVIDIA driver on your system is too old\n  (found version 12080)"]
        );
        assert!(
            matched(
                "no kernel image is available",
                "no kernelimage is available"
            )
            .is_empty()
        );
    }

    #[test]
    fn placeholders_capture_and_respect_word_edges() {
        let p = Pattern::parse("{w:subject}: cannot open shared object file").unwrap();
        let text = "ImportError: libcudart.so.11.0: cannot open shared object file: No such file";
        let found = p.find_all(text);
        assert_eq!(found.len(), 1);
        assert_eq!(
            &text[found[0].start..found[0].end],
            "libcudart.so.11.0: cannot open shared object file"
        );
        let (name, s, e) = found[0].captures[0];
        assert_eq!((name, &text[s..e]), ("subject", "libcudart.so.11.0"));
        assert!(matched("CUDA error 80{n}", "CUDA error 802").len() == 1);
        assert!(matched("(?i)cuda error {n:code}", "CUDA Error 802: x").len() == 1);
        assert!(matched("CUDA error 80", "CUDA error 802").is_empty());
        assert_eq!(
            matched("CUDA error 80", "CUDA error 80:"),
            ["CUDA error 80"]
        );
        assert_eq!(
            matched("version {v:driver} here", "version 550.54.15. here"),
            Vec::<&str>::new()
        );
        assert_eq!(
            matched("version {v:driver}", "version 550.54.15."),
            ["version 550.54.15"]
        );
    }

    #[test]
    fn lazy_stays_on_its_line() {
        assert_eq!(
            matched(
                "NVRM: Xid ({*}): 79,",
                "NVRM: Xid (PCI:0000:3b:00): 79, pid=1"
            ),
            ["NVRM: Xid (PCI:0000:3b:00): 79,"]
        );
        assert!(matched("NVRM: Xid ({*}): 79,", "NVRM: Xid (PCI:0000:3b:00\n): 79,").is_empty());
        // The literal after `{*}` occurs earlier than where the rest fits: the next is tried.
        assert_eq!(
            matched(
                "device handle for GPU{*}: Unknown Error",
                "Unable to determine the device handle for GPU 0000:0B:00.0: Unknown Error"
            ),
            ["device handle for GPU 0000:0B:00.0: Unknown Error"]
        );
        assert_eq!(
            matched(
                "Unable to load any of {{{*}}}",
                "Unable to load any of {libcudnn_ops.so.9, libcudnn_ops.so}"
            ),
            ["Unable to load any of {libcudnn_ops.so.9, libcudnn_ops.so}"]
        );
    }

    #[test]
    fn case_insensitive_and_unicode_text() {
        assert_eq!(matched("(?i)cuda error", "xx CUDA ERROR yy").len(), 1);
        assert_eq!(
            matched(
                "{w:subject}: 无法打开共享对象文件",
                "libcudnn.so.8: 无法打开共享对象文件: 没有那个文件或目录"
            ),
            ["libcudnn.so.8: 无法打开共享对象文件"]
        );
    }

    #[test]
    fn bad_patterns_are_refused_with_the_reason() {
        for (bad, why) in [
            ("{*} at start", "cannot start"),
            ("abcd {*}{n}", "side by side"),
            ("abcd {q}", "unknown placeholder"),
            ("abcd {w:nope}", "capture name"),
            ("abcd {w", "not closed"),
            ("ab {n} cd", "at least 4"),
            (" abcd", "space"),
            ("abcd {*} {n}", "must follow literal"),
            ("abcd:{*} {n}", "followed by literal"),
        ] {
            let e = Pattern::parse(bad).unwrap_err();
            assert!(e.0.contains(why), "{bad}: {e}");
        }
    }
}
