//! Screen 6, Plan: choose how to install (apt, conda, pip), the CUDA release and the framework
//! from lists valid for this GPU, and preview the script the planner writes; `s` saves it, `x`
//! runs it: then the preview gives way to the run, each step's state above the script's
//! output.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::text::{hanging, wrap};
use super::{Screen, detail_focused, list_detail, pane, spinner, waiting};
use crate::sanitize::clean;
use crate::tui::run::{PlanRun, RunPhase, StepState};
use crate::tui::services::Outcome;
use crate::tui::state::{PlanField, Script, State};
use crate::tui::theme::Theme;

/// Choices and preview.
pub(super) fn panes(body: Rect) -> (Rect, Rect) {
    Layout::vertical([Constraint::Length(6), Constraint::Fill(1)])
        .areas(body)
        .into()
}

/// While a plan runs (or after): its steps, and the output below them, in the preview's place.
pub(super) fn run_panes(run: &PlanRun, area: Rect) -> (Rect, Rect) {
    let steps = u16::try_from(run.steps.len()).unwrap_or(u16::MAX);
    // The steps take what they need, up to half, and never leave the output under 3 rows.
    let cap = (area.height / 2).max(3);
    let height = steps.saturating_add(2).min(cap);
    Layout::vertical([Constraint::Length(height), Constraint::Fill(1)])
        .areas(area)
        .into()
}

/// The footer's short form of the question the dialog asks.
pub(super) fn confirm_prompt(s: &State) -> &'static str {
    if s.plan.run.is_some() {
        "Run it again? "
    } else {
        "Run it? "
    }
}

/// The question before a run, as `plan --execute` asks it (with what sudo will do), drawn in
/// a box over the preview.
fn confirm_dialog(s: &State, t: Theme, area: Rect, buf: &mut Buffer) {
    let width = area.width.saturating_sub(4).min(72);
    let text_width = usize::from(width.saturating_sub(2));
    let mut lines: Vec<Line<'static>> = Vec::new();
    for paragraph in confirm_question(s).split('\n') {
        lines.extend(
            wrap(paragraph, text_width)
                .into_iter()
                .map(|l| Line::styled(l, t.text())),
        );
    }
    lines.push(Line::raw(""));
    lines.push(Line::from(vec![
        Span::styled("y", t.key()),
        Span::raw(" runs it, "),
        Span::styled("n", t.key()),
        Span::raw(" or "),
        Span::styled("Esc", t.key()),
        Span::raw(" does not."),
    ]));
    let height = u16::try_from(lines.len() + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    let x = area.x + (area.width.saturating_sub(width)) / 2;
    let y = area.y + (area.height.saturating_sub(height)) / 2;
    let dialog = Rect::new(x, y, width, height);
    ratatui::widgets::Clear.render(dialog, buf);
    let block = pane("Run the plan?", true, t);
    let inner = block.inner(dialog);
    block.render(dialog, buf);
    Paragraph::new(lines).render(inner, buf);
}

/// The question before a run, as `plan --execute` asks it (with what sudo will do).
pub(super) fn confirm_question(s: &State) -> String {
    let (steps, root, again) = match (&s.plan.run, &s.plan.script) {
        (Some(run), _) => (run.steps.len(), run.root_steps(), true),
        (None, Script::Ready(plan)) => (
            plan.steps.len(),
            plan.steps.iter().filter(|p| p.root).count(),
            false,
        ),
        _ => (0, 0, false),
    };
    let what = if again {
        format!("Run the {steps} steps again (those done are skipped)")
    } else {
        format!("Run these {steps} steps on this machine now")
    };
    let sudo = match root {
        0 => String::new(),
        n => format!("\n{n} of them run as root: sudo asks for your password first."),
    };
    format!(
        "{what} (log: {})?{sudo}",
        clean(&s.plan.log.display().to_string())
    )
}

/// The run's steps: a mark for each state, its title, and what it said.
fn run_steps(s: &State, run: &PlanRun, t: Theme, width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    for (i, step) in run.steps.iter().enumerate() {
        let (mark, style) = match &step.state {
            StepState::ToDo => ("·", t.dim()),
            StepState::Running => (spinner(s), t.title()),
            StepState::Done => ("✓", t.good()),
            // Found done because an earlier start of this run did it.
            StepState::Skipped(_) if step.earlier => ("✓", t.good()),
            StepState::Skipped(_) => ("↷", t.muted()),
            StepState::Failed => ("✗", t.bad()),
        };
        let mut text = format!("{}. {}", i + 1, clean(&step.step.title));
        if step.step.root {
            text.push_str(" (root)");
        }
        match &step.state {
            StepState::Skipped(_) if step.earlier => text.push_str(" — done in an earlier run"),
            StepState::Skipped(why) => text.push_str(&format!(" — skipped: {}", clean(why))),
            StepState::Failed => text.push_str(" — failed"),
            StepState::Done if step.earlier => text.push_str(" — done in an earlier run"),
            _ => {}
        }
        let text = super::text::fit(&text, width.saturating_sub(2));
        lines.push(Line::from(vec![
            Span::styled(format!("{mark} "), style),
            Span::styled(
                text,
                if step.state == StepState::ToDo {
                    t.dim()
                } else {
                    t.text()
                },
            ),
        ]));
    }
    lines
}

/// The steps pane's title: where the run is and what `x` does now.
fn run_title(run: &PlanRun) -> String {
    let done = run
        .steps
        .iter()
        .filter(|s| matches!(s.state, StepState::Done | StepState::Skipped(_)))
        .count();
    let total = run.steps.len();
    match &run.phase {
        RunPhase::Authorizing => "Running the plan: sudo asks for the password".to_string(),
        RunPhase::Running if run.stop_asked => {
            format!("Running the plan: {done} of {total} done; stopping before the next step")
        }
        RunPhase::Running => {
            format!("Running the plan: {done} of {total} done (x stops before the next step)")
        }
        RunPhase::Ended(Outcome::Done) => format!("The plan ran: {done} of {total} done"),
        RunPhase::Ended(Outcome::Stopped) => {
            format!("Stopped: {done} of {total} done (x runs it again)")
        }
        RunPhase::Ended(Outcome::Failed(_)) => {
            format!("Failed: {done} of {total} done (x runs it again)")
        }
        RunPhase::Ended(Outcome::Error(_)) => "Not run".to_string(),
    }
}

/// The script's output, wrapped to `width`.
pub(super) fn run_output(run: &PlanRun, t: Theme, width: u16) -> Vec<Line<'static>> {
    let width = usize::from(width);
    run.output
        .iter()
        .flat_map(|line| {
            let style = if line.starts_with("==> ") {
                t.title()
            } else {
                t.text()
            };
            wrap_code(line, width)
                .into_iter()
                .map(move |part| Line::styled(part, style))
        })
        .collect()
}

/// Draws the run in the preview's place.
fn draw_run(s: &State, run: &PlanRun, t: Theme, area: Rect, buf: &mut Buffer) {
    let (steps_area, output_area) = run_panes(run, area);
    let block = pane(run_title(run), false, t);
    let inner = block.inner(steps_area);
    block.render(steps_area, buf);
    let lines = run_steps(s, run, t, usize::from(inner.width));
    // The running step stays in sight when the list is taller than its pane.
    let at = run
        .steps
        .iter()
        .position(|st| st.state == StepState::Running)
        .unwrap_or(0);
    let first = at.saturating_sub(usize::from(inner.height).saturating_sub(1));
    Paragraph::new(lines)
        .scroll((u16::try_from(first).unwrap_or(0), 0))
        .render(inner, buf);
    let title = format!("Output (log: {})", clean(&run.log.display().to_string()));
    let block = pane(title, detail_focused(s), t);
    let inner = block.inner(output_area);
    block.render(output_area, buf);
    let lines = run_output(run, t, inner.width);
    // Follows the newest line unless the arrows are in the pane.
    let scroll = if detail_focused(s) {
        usize::from(s.cursor().scroll)
    } else {
        lines.len().saturating_sub(usize::from(inner.height))
    };
    Paragraph::new(lines)
        .scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0))
        .render(inner, buf);
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
        if let Some(run) = &s.plan.run {
            draw_run(s, run, t, preview_area, buf);
        } else {
            self.preview(preview_area, buf);
        }
        if s.mode == crate::tui::state::Mode::ConfirmRun {
            confirm_dialog(s, t, area, buf);
        }
    }
}

impl View<'_> {
    /// The script's preview, in the pane below the choices.
    fn preview(&self, preview_area: Rect, buf: &mut Buffer) {
        let s = self.0.state;
        let t = self.0.theme;
        let title = match &s.plan.script {
            Script::Ready(p) if p.cannot_run.is_none() && !p.steps.is_empty() => {
                "Script preview (s saves it, x runs it)"
            }
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
