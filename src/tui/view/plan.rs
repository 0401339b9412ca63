//! Screen 6, Plan: choose how to install (apt, conda, pip), the CUDA release and the framework
//! from lists valid for this GPU, and preview the script the planner writes; `s` saves it.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::text::{hanging, wrap};
use super::{Screen, detail_focused, list_detail, pane, spinner, waiting};
use crate::sanitize::clean;
use crate::tui::state::{PlanField, Script, State};
use crate::tui::theme::Theme;

/// Choices and preview.
pub(super) fn panes(body: Rect) -> (Rect, Rect) {
    Layout::vertical([Constraint::Length(6), Constraint::Fill(1)])
        .areas(body)
        .into()
}

/// The Plan screen as a widget over the frame's state.
pub(super) struct View<'a>(pub(super) Screen<'a>);

impl Widget for &View<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let screen = &self.0;
        let s = screen.state;
        let t = screen.theme;
        if s.report.is_none() {
            waiting(screen, area, buf);
            return;
        }
        let (choices, preview_area) = panes(area);
        let block = pane("Plan: choose", !detail_focused(s), t);
        let inner = block.inner(choices);
        block.render(choices, buf);
        let mut lines = Vec::new();
        for (i, field) in PlanField::ALL.into_iter().enumerate() {
            let values = s.plan.values(field);
            let pick = s.plan.picks[field as usize].min(values.len().saturating_sub(1));
            let value = values.get(pick).cloned().unwrap_or_default();
            let focused = i == s.cursor().selected && !detail_focused(s);
            let value_style = if focused { t.selected() } else { t.text() };
            lines.push(Line::from(vec![
                Span::styled(format!("{:<12}", field.label()), t.dim()),
                Span::styled(format!(" ‹ {value} › "), value_style),
                Span::styled(format!(" {} of {}", pick + 1, values.len()), t.dim()),
            ]));
        }
        lines.extend(
            wrap(&clean(&s.plan.options.basis), usize::from(inner.width))
                .into_iter()
                .take(1)
                .map(|l| Line::styled(l, t.dim())),
        );
        Paragraph::new(lines).render(inner, buf);
        let title = match &s.plan.script {
            Script::Ready(_) => "Script preview (s saves it)",
            _ => "Script preview",
        };
        list_detail::detail(s, t, title, preview_area, buf, |width| preview(s, t, width));
    }
}

/// The script, or why there is none, wrapped to `width`.
pub(super) fn preview(s: &State, t: Theme, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width);
    match &s.plan.script {
        Script::None => vec![Line::styled(
            "Choose above; the script appears here.",
            t.dim(),
        )],
        Script::Building => vec![Line::styled(
            format!("{} writing the plan…", spinner(s)),
            t.dim(),
        )],
        Script::Refused(reason) => {
            let mut lines = Vec::new();
            for paragraph in reason.lines() {
                lines.extend(hanging(Vec::new(), &clean(paragraph), t.muted(), width, 0));
            }
            lines
        }
        Script::Ready(plan) => {
            // What it does first, so a changed choice shows at once above the long header.
            let mut lines: Vec<Line<'static>> = Vec::new();
            for item in &plan.summary {
                lines.extend(hanging(
                    vec![Span::styled("▸ ", t.title())],
                    &clean(item),
                    t.text(),
                    width,
                    2,
                ));
            }
            if !lines.is_empty() {
                lines.push(Line::raw(""));
            }
            lines.extend(plan.script.lines().flat_map(|line| {
                let style = if line.trim_start().starts_with('#') {
                    t.dim()
                } else {
                    Style::new()
                };
                // Long commands wrap under a marker so a copy-paste reader sees the break.
                let mut out = Vec::new();
                for (i, part) in wrap_code(&clean(line), width).into_iter().enumerate() {
                    let text = if i == 0 { part } else { format!("↪ {part}") };
                    out.push(Line::styled(text, style));
                }
                out
            }));
            lines
        }
    }
}

/// Cuts a script line into pieces of at most `width` cells (the continuations leave room for
/// their `↪ ` mark), at the last space that fits, or mid-word when a word is longer than that.
fn wrap_code(line: &str, width: usize) -> Vec<String> {
    if super::text::width(line) <= width || width < 8 {
        return vec![line.to_string()];
    }
    let mut out = Vec::new();
    let mut rest: Vec<char> = line.chars().collect();
    while !rest.is_empty() {
        let limit = if out.is_empty() { width } else { width - 2 };
        let mut used = 0;
        let mut fits = 0;
        for c in &rest {
            let w = super::text::width(c.encode_utf8(&mut [0; 4]));
            if used + w > limit {
                break;
            }
            used += w;
            fits += 1;
        }
        let cut = if fits == rest.len() {
            fits
        } else {
            rest[..fits]
                .iter()
                .rposition(|c| *c == ' ')
                .filter(|&i| i > 0)
                .map_or(fits, |i| i + 1)
        };
        let piece: String = rest.drain(..cut.max(1)).collect();
        out.push(piece.trim_end().to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wrap_code;

    #[test]
    fn script_lines_break_at_spaces_and_keep_every_character() {
        let line = "# gpu-doctor plan, made by gpu-doctor 0.1.0 for the machine below.";
        let pieces = wrap_code(line, 30);
        assert!(pieces.iter().all(|p| p.chars().count() <= 30), "{pieces:?}");
        assert_eq!(pieces[0], "# gpu-doctor plan, made by");
        assert_eq!(pieces.join(" "), line);
        let word = "x".repeat(50);
        assert_eq!(wrap_code(&word, 20).concat(), word);
    }
}
