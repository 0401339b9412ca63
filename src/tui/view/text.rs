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
    let width = width.max(1);
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
    let mut words = wrap(text, first_width).into_iter();
    let first = words.next().unwrap_or_default();
    let mut first_spans = prefix;
    first_spans.push(Span::styled(first, style));
    let mut out = vec![Line::from(first_spans)];
    let rest: Vec<String> = words.collect();
    if !rest.is_empty() {
        for line in wrap(&rest.join(" "), rest_width) {
            out.push(Line::from(vec![
                Span::raw(" ".repeat(indent)),
                Span::styled(line, style),
            ]));
        }
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
    fn units_read_naturally() {
        assert_eq!(gib(143_771), "140.4 GiB");
        assert_eq!(duration(std::time::Duration::from_millis(62)), "62 ms");
        assert_eq!(duration(std::time::Duration::from_millis(1500)), "1.5 s");
    }
}
