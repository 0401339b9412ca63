//! Screen 7, Smoke test: run a small computation on every GPU with progress, then each check's
//! result and the throughput measured against what the card should reach.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Gauge, Paragraph, Row, Table, Widget};

use super::text::hanging;
use super::{Screen, pane, spinner};
use crate::sanitize::clean;
use crate::tui::services::SmokeRow;
use crate::tui::state::Smoke;
use crate::tui::theme::Theme;

/// The Smoke test screen as a widget over the frame's state.
pub(super) struct View<'a>(pub(super) Screen<'a>);

impl Widget for &View<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let screen = &self.0;
        let s = screen.state;
        let t = screen.theme;
        let block = pane("Smoke test", false, t);
        let inner = block.inner(area);
        block.render(area, buf);
        let width = usize::from(inner.width);
        let mut lines = hanging(
            Vec::new(),
            "Proves each GPU computes: a matrix multiply and memory checks through the CUDA \
             driver API, with the throughput measured against the card's published figures.",
            t.dim(),
            width,
            0,
        );
        lines.push(Line::raw(""));
        let [intro, rest] = Layout::vertical([
            Constraint::Length(u16::try_from(lines.len() + 2).unwrap_or(4)),
            Constraint::Fill(1),
        ])
        .areas(inner);
        match &s.smoke {
            Smoke::Idle => match s.smoke_unavailable() {
                Some(why) => lines.extend(hanging(Vec::new(), &why, t.muted(), width, 0)),
                None => lines.push(Line::from(vec![
                    Span::styled("Enter", t.key()),
                    Span::raw(" runs it."),
                ])),
            },
            Smoke::Running { step, done, total } => {
                lines.push(Line::from(vec![
                    Span::styled(format!("{} ", spinner(s)), t.title()),
                    Span::raw(format!("running: {}", clean(step))),
                ]));
                if *total > 0 {
                    let ratio = f64::from(*done) / f64::from(*total);
                    Paragraph::new(lines).render(intro, buf);
                    Gauge::default()
                        .ratio(ratio.clamp(0.0, 1.0))
                        .label(format!("{done} of {total}"))
                        .gauge_style(t.chart())
                        .render(Rect { height: 1, ..rest }, buf);
                    return;
                }
            }
            Smoke::Unavailable(why) => {
                lines.extend(hanging(
                    vec![Span::styled("Not available: ", t.muted())],
                    &clean(why),
                    Style::new(),
                    width,
                    2,
                ));
            }
            Smoke::Failed(why) => {
                lines.extend(hanging(
                    vec![Span::styled("✗ The smoke test failed: ", t.bad())],
                    &clean(why),
                    Style::new(),
                    width,
                    2,
                ));
            }
            Smoke::Done(rows) => {
                lines.push(summary(rows, t));
                let [intro, rest] = Layout::vertical([
                    Constraint::Length(u16::try_from(lines.len() + 1).unwrap_or(4)),
                    Constraint::Fill(1),
                ])
                .areas(inner);
                Paragraph::new(lines).render(intro, buf);
                results(rows, t).render(rest, buf);
                return;
            }
        }
        Paragraph::new(lines).render(inner, buf);
    }
}

/// One line over the results: all passed, or how many failed.
fn summary(rows: &[SmokeRow], t: Theme) -> Line<'static> {
    let failed = rows.iter().filter(|r| !r.passed).count();
    if failed == 0 {
        Line::styled(format!("✓ all {} checks passed", rows.len()), t.good())
    } else {
        Line::styled(
            format!("✗ {failed} of {} checks failed", rows.len()),
            t.bad(),
        )
    }
}

/// Each check's result: GPU, check, throughput against what the card should reach, detail.
fn results(rows: &[SmokeRow], t: Theme) -> Table<'static> {
    let body: Vec<Row> = rows
        .iter()
        .map(|r| {
            let (mark, style) = if r.passed {
                ("✓", t.good())
            } else {
                ("✗", t.bad())
            };
            Row::new(vec![
                Cell::from(Span::styled(mark, style)),
                Cell::from(clean(&r.device)),
                Cell::from(clean(&r.check)),
                Cell::from(throughput(r)),
                Cell::from(clean(&r.detail)),
            ])
        })
        .collect();
    Table::new(
        body,
        [
            Constraint::Length(1),
            Constraint::Length(6),
            Constraint::Length(23),
            Constraint::Length(26),
            Constraint::Fill(1),
        ],
    )
    .header(Row::new(["", "GPU", "Check", "Throughput vs expected", "Detail"]).style(t.dim()))
}

/// "m of e unit (p %)" when both are known, the measure alone when only it is.
fn throughput(r: &SmokeRow) -> String {
    match (r.measured, r.expected) {
        (Some(m), Some(e)) if e > 0.0 => format!(
            "{m:.0} of {e:.0} {} ({:.0} %)",
            clean(&r.unit),
            m / e * 100.0
        ),
        (Some(m), _) => format!("{m:.0} {}", clean(&r.unit)),
        _ => String::new(),
    }
}
