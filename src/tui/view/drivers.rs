//! Screen 3, Drivers & CUDA: the driver as user space and the kernel see it, then every driver
//! library, toolkit and CUDA library copy in the dynamic loader's order, marking the copy that
//! loads and the copies it shadows, and the selected row's details.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Widget};

use super::list_detail::{self, Column, DataTable};
use super::pane;
use super::text::hanging;
use crate::report::{ProbeOutcome, ProbeStatus, Report};
use crate::sanitize::clean;
use crate::tui::model::{LibRow, LoadState, or_unknown, visible_lib_rows};
use crate::tui::state::State;
use crate::tui::theme::Theme;

/// Driver summary, library table, detail.
pub(super) fn panes(body: Rect) -> (Rect, Rect, Rect) {
    let detail = if body.height >= 30 { 8 } else { 6 };
    Layout::vertical([
        Constraint::Length(5),
        Constraint::Fill(1),
        Constraint::Length(detail),
    ])
    .areas(body)
    .into()
}

/// The Drivers & CUDA screen, drawn once the scan has a report (`super::list_screen` shows the
/// scan's progress until then).
pub(super) fn draw(s: &State, t: Theme, area: Rect, buf: &mut Buffer) {
    let Some(report) = &s.report else {
        return;
    };
    let (summary, table_area, detail_area) = panes(area);
    Paragraph::new(driver_lines(report, t))
        .wrap(ratatui::widgets::Wrap { trim: false })
        .block(pane("Driver", false, t))
        .render(summary, buf);
    table(s, t, table_area, buf);
    list_detail::detail(s, t, "Selected", detail_area, buf, |width| {
        detail(s, t, width)
    });
}

fn outcome(name: &str, o: &ProbeOutcome, t: Theme) -> Span<'static> {
    let (word, style) = match o.status {
        ProbeStatus::Ok => ("answered", t.good()),
        ProbeStatus::Absent => ("absent", t.dim()),
        ProbeStatus::Failed => ("failed", t.bad()),
        ProbeStatus::TimedOut => ("timed out", t.bad()),
        ProbeStatus::Skipped => ("not asked", t.dim()),
    };
    let detail = o
        .detail
        .as_deref()
        .map_or_else(String::new, |d| format!(" ({})", clean(d)));
    Span::styled(format!("{name} {word}{detail}"), style)
}

fn driver_lines(r: &Report, t: Theme) -> Vec<Line<'static>> {
    let d = &r.driver;
    let k = &r.kernel;
    let version = match (&d.version, &d.cuda_version) {
        (Some(v), Some(c)) => format!("NVIDIA {}, runs CUDA up to {}", clean(v), clean(c)),
        (Some(v), None) => format!("NVIDIA {}", clean(v)),
        (None, _) => "no NVIDIA driver answered".to_string(),
    };
    let source = d
        .source
        .as_deref()
        .map_or_else(String::new, |s| format!("  (from {})", clean(s)));
    let module = match (&k.nvidia_version, k.nvidia_open, k.nvidia_loaded) {
        (Some(v), Some(true), _) => format!("kernel module nvidia {} (open)", clean(v)),
        (Some(v), _, _) => format!("kernel module nvidia {}", clean(v)),
        (None, _, true) => "kernel module nvidia (version unknown)".to_string(),
        (None, _, false) => "kernel module nvidia not loaded".to_string(),
    };
    let mut extra = Vec::new();
    if k.nouveau_loaded {
        extra.push("nouveau loaded".to_string());
    }
    if let Some(c) = &d.libcuda_cuda_version {
        extra.push(format!("libcuda reports CUDA {}", clean(c)));
    }
    vec![
        Line::from(vec![
            Span::styled(version, t.text()),
            Span::styled(source, t.dim()),
        ]),
        Line::from(vec![
            Span::raw(module),
            Span::styled(
                if extra.is_empty() {
                    String::new()
                } else {
                    format!(" · {}", extra.join(" · "))
                },
                t.dim(),
            ),
        ]),
        Line::from(vec![
            outcome("NVML", &d.nvml, t),
            Span::raw(" · "),
            outcome("nvidia-smi", &d.nvidia_smi, t),
        ]),
    ]
}

fn table(s: &State, t: Theme, area: Rect, buf: &mut Buffer) {
    let rows = visible_lib_rows(s);
    // Borders, the fixed columns and the gaps between the six columns.
    let path_width = usize::from(area.width).saturating_sub(2 + 12 + 3 + 11 + 10 + 15 + 5);
    DataTable {
        name: "Libraries and toolkits, in loader order",
        suffix: None,
        columns: &LibColumn::ALL,
        header: true,
    }
    .render(
        s,
        t,
        rows.iter().enumerate(),
        |row, column| column.cell(row, t, path_width),
        area,
        buf,
    );
}

/// The library table's columns.
#[derive(Debug, Clone, Copy)]
enum LibColumn {
    Library,
    Rank,
    Version,
    Status,
    Via,
    Path,
}

impl LibColumn {
    const ALL: [LibColumn; 6] = [
        Self::Library,
        Self::Rank,
        Self::Version,
        Self::Status,
        Self::Via,
        Self::Path,
    ];

    /// `row`'s cell; the path keeps its last `path_width` characters.
    fn cell(self, row: &LibRow, t: Theme, path_width: usize) -> Cell<'static> {
        match self {
            Self::Library => Cell::from(row.family.clone()),
            Self::Rank => Cell::from(row.rank.map(|r| format!("#{r}")).unwrap_or_default()),
            Self::Version => Cell::from(row.version.clone()),
            Self::Status => {
                let style = match row.state {
                    LoadState::Loads => t.good(),
                    LoadState::Shadowed => t.muted(),
                    LoadState::OffPath | LoadState::Toolkit => t.dim(),
                };
                Cell::from(Span::styled(row.state.label(), style))
            }
            Self::Via => Cell::from(row.origin.clone()),
            Self::Path => Cell::from(tail(&row.path, path_width)),
        }
    }
}

impl Column for LibColumn {
    fn header(self) -> &'static str {
        match self {
            Self::Library => "Library",
            Self::Rank => "#",
            Self::Version => "Version",
            Self::Status => "Status",
            Self::Via => "Via",
            Self::Path => "Path",
        }
    }

    fn width(self) -> Constraint {
        match self {
            Self::Library => Constraint::Length(12),
            Self::Rank => Constraint::Length(3),
            Self::Version => Constraint::Length(11),
            Self::Status => Constraint::Length(10),
            Self::Via => Constraint::Length(15),
            Self::Path => Constraint::Fill(1),
        }
    }
}

/// The selected row in full, wrapped to `width`.
pub(super) fn detail(s: &State, t: Theme, width: u16) -> Vec<Line<'static>> {
    let rows = visible_lib_rows(s);
    let Some(row) = rows.get(s.cursor().selected) else {
        let empty = if s.cursor().filter.is_empty() {
            "No driver libraries, toolkits or CUDA libraries were found."
        } else {
            "Nothing matches the filter."
        };
        return vec![Line::styled(empty, t.dim())];
    };
    let width = usize::from(width);
    let meaning = match row.state {
        LoadState::Loads => "the loader picks this copy for its name",
        LoadState::Shadowed => "shadowed: an earlier copy of the same name on the loader path wins",
        LoadState::OffPath => "found by folder only (RUNPATH), not by the loader's search",
        LoadState::Toolkit => "a CUDA toolkit (compilers, headers and libraries)",
    };
    let mut lines = hanging(
        vec![Span::styled(
            format!("{} {} ", row.family, row.version),
            t.title(),
        )],
        &row.path,
        Style::new(),
        width,
        2,
    );
    lines.extend(hanging(
        vec![Span::styled("  ", t.dim())],
        &format!("{meaning}; via {}", or_unknown(Some(&row.origin))),
        t.dim(),
        width,
        2,
    ));
    for d in &row.details {
        lines.extend(hanging(vec![Span::raw("  ")], d, t.dim(), width, 2));
    }
    lines
}

/// The end of a path, which names the file, when the whole does not fit: "…/lib64/libcuda.so.1".
fn tail(path: &str, width: usize) -> String {
    if super::text::width(path) <= width || width < 2 {
        return path.to_string();
    }
    let mut kept: Vec<char> = Vec::new();
    let mut used = 1;
    for c in path.chars().rev() {
        let w = super::text::width(c.encode_utf8(&mut [0; 4]));
        if used + w > width {
            break;
        }
        used += w;
        kept.push(c);
    }
    kept.reverse();
    format!("…{}", kept.into_iter().collect::<String>())
}
