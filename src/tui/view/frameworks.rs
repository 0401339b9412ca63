//! Screen 4, Frameworks: every framework build in every Python environment, whether it can use
//! this GPU (the same rule as `check -r torch.cuda`), and for the selected one what it needs
//! (CUDA, cuDNN, compute capabilities) against what the machine has.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table, Widget};

use super::text::hanging;
use super::{Screen, list_detail, waiting};
use crate::report::{Framework, Report, Severity, framework_subject};
use crate::sanitize::clean;
use crate::tui::model::{FrameworkRow, or_unknown, visible_framework_rows};
use crate::tui::state::State;
use crate::tui::theme::{Theme, severity_mark};
use crate::version::Version;

/// List and detail.
pub(super) fn panes(body: Rect) -> (Rect, Rect) {
    let list = (body.height / 2).clamp(5, 12);
    Layout::vertical([Constraint::Length(list), Constraint::Fill(1)])
        .areas(body)
        .into()
}

/// The Frameworks screen as a widget over the frame's state.
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
        let (list_area, detail_area) = panes(area);
        let rows = visible_framework_rows(s);
        let selected = s.cursor().selected;
        let body: Vec<Row> = rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                let (mark, style) = match row.usable {
                    Some(true) => ("✓", t.good()),
                    Some(false) => ("✗", t.bad()),
                    None => ("", t.dim()),
                };
                let fw = row.framework;
                let r = Row::new(vec![
                    Cell::from(Span::styled(mark, style)),
                    Cell::from(clean(row.env)),
                    Cell::from(fw.map_or_else(
                        || Span::styled("none", t.dim()),
                        |f| Span::raw(clean(&f.name)),
                    )),
                    Cell::from(
                        fw.map(|f| or_unknown(f.version.as_deref()))
                            .unwrap_or_default(),
                    ),
                    Cell::from(fw.map(build).unwrap_or_default()),
                    Cell::from(
                        fw.and_then(|f| f.cudnn.as_deref())
                            .map(clean)
                            .unwrap_or_default(),
                    ),
                ]);
                t.mark_selected(r, i == selected)
            })
            .collect();
        let widths = [
            Constraint::Length(1),
            Constraint::Fill(1),
            Constraint::Length(10),
            Constraint::Length(16),
            Constraint::Length(10),
            Constraint::Length(12),
        ];
        let table = Table::new(body, widths).header(
            Row::new(["", "Environment", "Framework", "Version", "Build", "cuDNN"]).style(t.dim()),
        );
        list_detail::list(
            s,
            t,
            "Frameworks (✓ can use this GPU)",
            None,
            table,
            list_area,
            buf,
        );
        list_detail::detail(s, t, "Needs / has", detail_area, buf, |width| {
            detail(s, t, width)
        });
    }
}

/// "CUDA 13.0", "CPU only", "ROCm 6.2".
fn build(f: &Framework) -> String {
    match (&f.cuda, &f.rocm, f.variant.as_deref()) {
        (Some(c), _, _) => format!("CUDA {}", clean(c)),
        (None, Some(r), _) => format!("ROCm {}", clean(r)),
        (None, None, Some("cpu")) => "CPU only".to_string(),
        _ => "unknown build".to_string(),
    }
}

/// The selected framework: its verdict, then each need beside what the machine has.
pub(super) fn detail(s: &State, t: Theme, width: u16) -> Vec<Line<'static>> {
    let rows = visible_framework_rows(s);
    let (Some(row), Some(report)) = (rows.get(s.cursor().selected), &s.report) else {
        return vec![Line::styled(
            if s.cursor().filter.is_empty() {
                "No Python environments were found."
            } else {
                "Nothing matches the filter."
            },
            t.dim(),
        )];
    };
    let width = usize::from(width);
    let Some(fw) = row.framework else {
        return hanging(
            vec![Span::styled(format!("{} ", clean(row.env)), t.title())],
            &format!("({}) has no GPU framework installed.", clean(row.env_kind)),
            Style::new(),
            width,
            2,
        );
    };
    let mut lines = title(report, row, fw, t, width);
    let need = |lines: &mut Vec<Line<'static>>, ok: Option<bool>, what: &str, has: String| {
        let (mark, style) = match ok {
            Some(true) => ("✓ ", t.good()),
            Some(false) => ("✗ ", t.bad()),
            None => ("· ", t.dim()),
        };
        lines.extend(hanging(
            vec![
                Span::styled(mark, style),
                Span::styled(format!("{what:<22}"), t.text()),
            ],
            &has,
            Style::new(),
            width,
            24,
        ));
    };
    lines.push(Line::styled(
        format!("  {:<22}{}", "needs", "this machine has"),
        t.dim(),
    ));
    let findings: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.subjects.contains(&framework_subject(row.env, &fw.name)))
        .collect();
    // CUDA: a driver of the same major runs any minor (minor-version compatibility), the rule
    // `check` uses too.
    let driver_cuda = report
        .driver
        .cuda_version
        .as_deref()
        .and_then(Version::parse);
    match fw.cuda.as_deref() {
        Some(cuda) => {
            let ok = match (Version::parse(cuda), &driver_cuda) {
                (Some(need), Some(have)) => Some(have.major() >= need.major()),
                _ => None,
            };
            let has = driver_cuda.as_ref().map_or_else(
                || "no driver CUDA version known".to_string(),
                |d| format!("driver runs CUDA up to {d}"),
            );
            need(&mut lines, ok, &format!("CUDA {}", clean(cuda)), has);
        }
        None => need(
            &mut lines,
            None,
            "no CUDA",
            format!("{} build: it does not use NVIDIA GPUs", build(fw)),
        ),
    }
    if let Some(cudnn) = fw.cudnn.as_deref() {
        let major = cudnn.split('.').next().unwrap_or(cudnn);
        let copies: Vec<String> = report
            .libraries
            .cudnn
            .iter()
            .map(|l| {
                let place = if l.path.starts_with(row.env) {
                    "in this env".to_string()
                } else {
                    clean(&l.origin)
                };
                format!("{} ({place})", or_unknown(l.version.as_deref()))
            })
            .collect();
        let has_major = report.libraries.cudnn.iter().any(|l| {
            l.version
                .as_deref()
                .is_some_and(|v| v.split('.').next() == Some(major))
        });
        let blamed = findings
            .iter()
            .any(|f| f.id.starts_with("cudnn-") || f.id == "library-path-shadowing");
        let ok = Some(has_major && !blamed);
        let has = if copies.is_empty() {
            "no cuDNN found".to_string()
        } else {
            copies.join(", ")
        };
        need(&mut lines, ok, &format!("cuDNN {}", clean(cudnn)), has);
    }
    if !fw.arch_list.is_empty() {
        let ccs: Vec<String> = report
            .gpus
            .iter()
            .filter_map(|g| g.compute_capability.as_deref())
            .map(|cc| format!("cc {}", clean(cc)))
            .collect();
        let blamed = findings.iter().any(|f| f.id == "arch-not-in-build");
        need(
            &mut lines,
            if ccs.is_empty() { None } else { Some(!blamed) },
            "kernels for",
            if ccs.is_empty() {
                "no GPU compute capability known".to_string()
            } else {
                format!("GPU {}", ccs.join(", "))
            },
        );
        lines.extend(hanging(
            vec![Span::styled("  built for ", t.dim())],
            &clean(&fw.arch_list.join(" ")),
            t.dim(),
            width,
            4,
        ));
    }
    if !fw.pins.is_empty() {
        lines.extend(hanging(
            vec![Span::styled("  pins ", t.dim())],
            &clean(&fw.pins.join(", ")),
            t.dim(),
            width,
            4,
        ));
    }
    for f in findings {
        lines.extend(hanging(
            vec![
                Span::styled(
                    format!("{} ", severity_mark(f.severity)),
                    t.severity(f.severity),
                ),
                Span::styled(format!("{} ", f.id), t.severity(f.severity)),
            ],
            &clean(&f.title),
            if f.severity == Severity::Info {
                t.dim()
            } else {
                Style::new()
            },
            width,
            2,
        ));
    }
    lines.extend(hanging(
        vec![Span::styled("  facts from ", t.dim())],
        &clean(&fw.source),
        t.dim(),
        width,
        4,
    ));
    lines
}

fn title(
    report: &Report,
    row: &FrameworkRow<'_>,
    fw: &Framework,
    t: Theme,
    width: usize,
) -> Vec<Line<'static>> {
    let python = report
        .python_envs
        .iter()
        .find(|e| e.path == row.env)
        .and_then(|e| e.python_version.as_deref())
        .map_or_else(String::new, |v| format!(", Python {}", clean(v)));
    let mut lines = hanging(
        vec![Span::styled(
            format!("{} {} ", clean(&fw.name), or_unknown(fw.version.as_deref())),
            t.title(),
        )],
        &format!("in {} ({}{python})", clean(row.env), clean(row.env_kind)),
        Style::new(),
        width,
        2,
    );
    let (mark, style) = match row.usable {
        Some(true) => ("✓ can use this GPU: ", t.good()),
        Some(false) => ("✗ cannot use this GPU: ", t.bad()),
        None => ("", t.dim()),
    };
    if !row.message.is_empty() {
        lines.extend(hanging(
            vec![Span::styled(mark, style)],
            &row.message,
            Style::new(),
            width,
            2,
        ));
    }
    lines
}
