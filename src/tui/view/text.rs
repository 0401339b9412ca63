//! Text helpers for the views: word wrapping that knows its line count (so update can clamp
//! scrolling to exactly what a pane shows) and short formats for units.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Display width of a string in terminal cells.
#[must_use]
pub fn width(text: &str) -> usize {
    Span::raw(text).width()
}

/// Greedy word wrap to `width` cells; a word longer than a line is cut across lines (paths).
#[must_use]
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    wrap_hanging(text, width, width)
}

/// [`wrap`] with the first line `first` cells wide and the others `rest`, in one pass: a word
/// cut across lines is cut once, and no space is ever put into it (re-wrapping the rest of a
/// wrapped text joined with spaces would split a cut path in two).
#[must_use]
pub fn wrap_hanging(text: &str, first: usize, rest: usize) -> Vec<String> {
    let first = first.max(1);
    let rest = rest.max(1);
    let mut width = first;
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut line_width = 0;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let word_width = self::width(word);
        let gap = usize::from(line_width > 0);
        if line_width + gap + word_width <= width {
            if gap == 1 {
                line.push(' ');
            }
            line.push_str(word);
            line_width += gap + word_width;
            continue;
        }
        if line_width > 0 {
            lines.push(std::mem::take(&mut line));
            line_width = 0;
            width = rest;
        }
        if word_width <= width {
            line.push_str(word);
            line_width = word_width;
            continue;
        }
        for c in word.chars() {
            let w = self::width(c.encode_utf8(&mut [0; 4]));
            if line_width + w > width && line_width > 0 {
                lines.push(std::mem::take(&mut line));
                line_width = 0;
                width = rest;
            }
            line.push(c);
            line_width += w;
        }
    }
    if line_width > 0 || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// `text` cut to `width` cells, ending in "…" when something was cut, so a cut title reads as
/// one (a table cell or a line that does not wrap would otherwise just stop at the edge).
#[must_use]
pub fn fit(text: &str, width: usize) -> String {
    if self::width(text) <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = self::width(c.encode_utf8(&mut [0; 4]));
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    if width > 0 {
        out.push('…');
    }
    out
}

/// A paragraph that starts after `prefix` and continues under an indent of `indent` cells.
#[must_use]
pub fn hanging<'a>(
    prefix: Vec<Span<'a>>,
    text: &str,
    style: Style,
    width: usize,
    indent: usize,
) -> Vec<Line<'a>> {
    let prefix_width: usize = prefix.iter().map(Span::width).sum();
    let first_width = width.saturating_sub(prefix_width).max(1);
    let rest_width = width.saturating_sub(indent).max(1);
    let mut lines = wrap_hanging(text, first_width, rest_width).into_iter();
    let first = lines.next().unwrap_or_default();
    let mut first_spans = prefix;
    first_spans.push(Span::styled(first, style));
    let mut out = vec![Line::from(first_spans)];
    for line in lines {
        out.push(Line::from(vec![
            Span::raw(" ".repeat(indent)),
            Span::styled(line, style),
        ]));
    }
    out
}

/// MiB as GiB with one decimal ("140.4 GiB").
#[must_use]
pub fn gib(mib: u64) -> String {
    format!("{:.1} GiB", mib as f64 / 1024.0)
}

/// A duration for a person: milliseconds under a second, else seconds with one decimal.
#[must_use]
pub fn duration(d: std::time::Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_words_and_cuts_long_paths() {
        assert_eq!(wrap("one two three", 7), ["one two", "three"]);
        assert_eq!(wrap("/a/very/long/path", 6), ["/a/ver", "y/long", "/path"]);
        assert_eq!(wrap("", 5), [""]);
    }

    #[test]
    fn hanging_indent_continues_under_the_text() {
        let lines = hanging(vec![Span::raw("- ")], "aa bb cc", Style::new(), 7, 2);
        let text: Vec<String> = lines.iter().map(ToString::to_string).collect();
        assert_eq!(text, ["- aa bb", "  cc"]);
    }

    #[test]
    fn a_path_cut_across_lines_keeps_its_characters_and_no_space() {
        let path = "/home/u/.venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so";
        let text = format!("OSError: {path}: cannot open shared object file");
        let lines = hanging(vec![Span::raw("  ")], &text, Style::new(), 24, 4);
        let rows: Vec<String> = lines.iter().map(ToString::to_string).collect();
        assert!(rows.iter().all(|r| width(r) <= 24), "{rows:?}");
        // The rows' text, indents taken off and put together, is the text with its spaces.
        let joined: String = rows
            .iter()
            .map(|r| r.trim_start())
            .collect::<Vec<_>>()
            .concat();
        assert!(joined.contains(path), "{rows:?}");
        assert!(
            rows.iter().skip(1).all(|r| r.starts_with("    ")),
            "{rows:?}"
        );
    }

    #[test]
    fn a_cut_text_ends_in_an_ellipsis() {
        assert_eq!(fit("short", 10), "short");
        assert_eq!(fit("exactly10!", 10), "exactly10!");
        assert_eq!(fit("a much longer title", 10), "a much lo…");
        assert_eq!(width(&fit("a much longer title", 10)), 10);
        assert_eq!(fit("abc", 0), "");
    }

    #[test]
    fn units_read_naturally() {
        assert_eq!(gib(143_771), "140.4 GiB");
        assert_eq!(duration(std::time::Duration::from_millis(62)), "62 ms");
        assert_eq!(duration(std::time::Duration::from_millis(1500)), "1.5 s");
    }
}
