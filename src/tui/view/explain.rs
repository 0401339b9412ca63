//! The explain box over Diagnosis (`e`): paste an error message, Enter, and read which finding
//! on this machine explains it. The answer is `gpu-doctor explain`'s own text
//! ([`crate::explain::render`]), wrapped to the box, so the TUI and the command never differ.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use super::text::{hanging, wrap};
use super::{Screen, spinner};
use crate::present::paint::Paint;
use crate::sanitize::clean;
use crate::tui::state::{Mode, State};
use crate::tui::theme::Theme;

/// The box: the body less a margin of two columns either side.
#[must_use]
pub(super) fn area(body: Rect) -> Rect {
    let margin = if body.width > 40 { 2 } else { 0 };
    Rect {
        x: body.x + margin,
        y: body.y,
        width: body.width.saturating_sub(2 * margin),
        height: body.height,
    }
}

fn frame<'a>(title: &'a str, bottom: &'a str, t: Theme) -> Block<'a> {
    Block::bordered()
        .title(Line::styled(title, t.title()))
        .title_bottom(Line::styled(bottom, t.dim()))
        .border_style(t.border(true))
}

/// Draws the box the state is in, if any.
pub(super) fn draw(screen: &Screen<'_>, body: Rect, buf: &mut Buffer) {
    let s = screen.state;
    let t = screen.theme;
    let area = area(body);
    match s.mode {
        Mode::ExplainInput => {
            Clear.render(area, buf);
            let block = frame(
                " Explain an error ",
                " paste it, Enter explains, Esc cancels ",
                t,
            );
            let inner = block.inner(area);
            block.render(area, buf);
            Paragraph::new(input_lines(s, t, inner)).render(inner, buf);
        }
        Mode::Explained => {
            Clear.render(area, buf);
            let block = frame(" Why this error ", " ↑↓ scroll · e another · Esc close ", t);
            let inner = block.inner(area);
            block.render(area, buf);
            let lines = match &s.explanation {
                Some(_) => answer_lines(s, t, inner.width),
                None => vec![Line::from(vec![
                    Span::styled(spinner(s), t.title()),
                    Span::raw(" Reading the text against this machine…"),
                ])],
            };
            Paragraph::new(lines)
                .scroll((s.explain_scroll, 0))
                .render(inner, buf);
        }
        _ => {}
    }
}

/// The instructions, then the end of the text pasted so far (what fits), with a cursor.
fn input_lines(s: &State, t: Theme, inner: Rect) -> Vec<Line<'static>> {
    let mut lines = hanging(
        Vec::new(),
        "Paste the error message, a traceback or a whole log (the first fatal error is explained); \
         gpu-doctor reads it against this machine.",
        t.dim(),
        usize::from(inner.width),
        0,
    );
    lines.push(Line::raw(""));
    let room = usize::from(inner.height).saturating_sub(lines.len()).max(1);
    let w = usize::from(inner.width.saturating_sub(1)).max(1);
    let count = s.explain_text.lines().count();
    // The end of the text, wrapped to the box: the typing happens there.
    let mut shown: Vec<String> = s
        .explain_text
        .lines()
        .rev()
        .take(room)
        .flat_map(|l| {
            let l = clean(l);
            let indent = l.len() - l.trim_start().len();
            let mut pieces = wrap(&l, w.saturating_sub(indent).max(1));
            if let Some(first) = pieces.first_mut() {
                first.insert_str(0, &" ".repeat(indent));
            }
            pieces.into_iter().rev()
        })
        .take(room)
        .collect();
    shown.reverse();
    if s.explain_text.ends_with('\n') || shown.is_empty() {
        shown.push(String::new());
    }
    if shown.len() > room {
        shown.remove(0);
    }
    let last = shown.len() - 1;
    for (i, line) in shown.into_iter().enumerate() {
        if i == last {
            lines.push(Line::from(vec![
                Span::raw(line),
                Span::styled("█", t.dim()),
            ]));
        } else {
            lines.push(Line::raw(line));
        }
    }
    if count > room {
        lines[1] = Line::styled(format!("({count} lines pasted; the last shown)"), t.dim());
    }
    lines
}

/// `gpu-doctor explain`'s text answer, wrapped to `width`, its first line marked.
#[must_use]
pub(super) fn answer_lines(s: &State, t: Theme, width: u16) -> Vec<Line<'static>> {
    let (Some(report), Some(answer)) = (&s.report, &s.explanation) else {
        return Vec::new();
    };
    let text = crate::explain::render::render(report, answer, Paint::plain());
    let width = usize::from(width);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let style = if i == 0 {
            if answer.cause.is_some() {
                t.bad()
            } else {
                t.title()
            }
        } else if indent == 0 && !line.is_empty() {
            t.title()
        } else {
            Style::new()
        };
        let prefix = vec![Span::raw(" ".repeat(indent))];
        out.extend(hanging(prefix, line.trim_start(), style, width, indent + 2));
    }
    out
}

/// How far the answer can scroll at the current size.
#[must_use]
pub(super) fn max_scroll(state: &State) -> u16 {
    let [_, _, body, _] = super::areas(Rect::new(0, 0, state.size.0, state.size.1));
    let inner = Block::bordered().inner(area(body));
    let lines = answer_lines(state, Theme::new(false), inner.width).len();
    u16::try_from(lines.saturating_sub(usize::from(inner.height))).unwrap_or(u16::MAX)
}
