//! Screen 5, Diagnosis: the findings (severity, id, title) and the selected one in full: the
//! cause in plain words, the evidence, the fix, and what it explains.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Widget};

use super::WIDE;
use super::list_detail::{self, Column, DataTable};
use super::text::{fit, hanging};
use crate::report::Finding;
use crate::sanitize::clean;
use crate::tui::model::visible_findings;
use crate::tui::state::State;
use crate::tui::theme::{Theme, severity_mark};

/// List and detail: side by side when the terminal is wide, else stacked.
pub(super) fn panes(body: Rect) -> (Rect, Rect) {
    if body.width >= WIDE {
        Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)])
            .areas(body)
            .into()
    } else {
        let list = (body.height / 3).clamp(4, 10);
        Layout::vertical([Constraint::Length(list), Constraint::Fill(1)])
            .areas(body)
            .into()
    }
}

/// The Diagnosis screen, drawn once the scan has a report (`super::list_screen` shows the
/// scan's progress until then).
pub(super) fn draw(s: &State, t: Theme, area: Rect, buf: &mut Buffer) {
    let (list_area, detail_area) = panes(area);
    let findings = visible_findings(s);
    // The title column's room: the pane less its borders, the two fixed columns and the
    // table's one-cell gaps between columns.
    let room = usize::from(list_area.width).saturating_sub(2 + 9 + 27 + 2);
    let empty = findings.is_empty();
    DataTable {
        name: "Findings",
        suffix: None,
        columns: &FindingColumn::ALL,
        header: false,
    }
    .render(
        s,
        t,
        findings.iter().enumerate(),
        |f, column| column.cell(f, t, room),
        list_area,
        buf,
    );
    if empty {
        let inner = super::inner(list_area);
        let text = if s.cursor().filter.is_empty() {
            Line::styled("✓ No problems found.", t.good())
        } else {
            Line::styled("Nothing matches the filter.", t.dim())
        };
        text.render(inner, buf);
    }
    list_detail::detail(s, t, "Why, evidence, fix", detail_area, buf, |width| {
        detail(s, t, width)
    });
}

/// The findings table's columns.
#[derive(Debug, Clone, Copy)]
enum FindingColumn {
    Severity,
    Id,
    Title,
}

impl FindingColumn {
    const ALL: [FindingColumn; 3] = [Self::Severity, Self::Id, Self::Title];

    /// `f`'s cell; the title is cut to `room`.
    fn cell(self, f: &Finding, t: Theme, room: usize) -> Cell<'static> {
        match self {
            Self::Severity => Cell::from(Span::styled(
                format!("{} {}", severity_mark(f.severity), f.severity.as_str()),
                t.severity(f.severity),
            )),
            Self::Id => Cell::from(fit(&f.id, 27)),
            Self::Title => Cell::from(Span::styled(fit(&clean(&f.title), room), t.dim())),
        }
    }
}

impl Column for FindingColumn {
    fn header(self) -> &'static str {
        ""
    }

    fn width(self) -> Constraint {
        match self {
            Self::Severity => Constraint::Length(9),
            Self::Id => Constraint::Length(27),
            Self::Title => Constraint::Fill(1),
        }
    }
}

/// The selected finding in full, wrapped to `width`.
pub(super) fn detail(s: &State, t: Theme, width: u16) -> Vec<Line<'static>> {
    let findings = visible_findings(s);
    let width = usize::from(width);
    let Some(f) = findings.get(s.cursor().selected) else {
        if s.report.as_ref().is_some_and(|r| r.findings.is_empty()) {
            return hanging(
                Vec::new(),
                "Nothing to explain: the driver, the CUDA libraries and the frameworks found \
                 fit together. The Overview (1) and Frameworks (4) screens show what was checked.",
                t.dim(),
                width,
                0,
            );
        }
        return Vec::new();
    };
    let sev = t.severity(f.severity);
    let mut lines = hanging(
        vec![Span::styled(
            format!("{} {} ", severity_mark(f.severity), f.severity.as_str()),
            sev,
        )],
        &clean(&f.title),
        t.title(),
        width,
        2,
    );
    lines.push(Line::styled(format!("  {}", f.id), t.dim()));
    if !f.detail.is_empty() {
        lines.push(Line::raw(""));
        lines.extend(hanging(
            Vec::new(),
            &clean(&f.detail),
            Style::new(),
            width,
            0,
        ));
    }
    if !f.evidence.is_empty() {
        lines.push(Line::raw(""));
        lines.push(Line::styled("Evidence", t.title()));
        for e in &f.evidence {
            lines.extend(hanging(
                vec![Span::styled("• ", t.dim())],
                &clean(e),
                Style::new(),
                width,
                2,
            ));
        }
    }
    if let Some(fix) = &f.fix {
        lines.push(Line::raw(""));
        lines.push(Line::styled("Fix", t.title()));
        lines.extend(hanging(Vec::new(), &clean(fix), Style::new(), width, 0));
    }
    if !f.explains.is_empty() {
        lines.push(Line::raw(""));
        lines.extend(hanging(
            vec![Span::styled("Also explains: ", t.dim())],
            &clean(&f.explains.join(", ")),
            t.dim(),
            width,
            2,
        ));
    }
    if !f.subjects.is_empty() {
        lines.extend(hanging(
            vec![Span::styled("About: ", t.dim())],
            &clean(
                &f.subjects
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            t.dim(),
            width,
            2,
        ));
    }
    lines
}
