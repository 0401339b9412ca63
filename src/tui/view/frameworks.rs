//! Screen 4, Frameworks: every framework build in every Python environment, whether it can use
//! this GPU (the same rule as `check -r torch.cuda`), and for the selected one what it needs
//! (CUDA, cuDNN, compute capabilities) against what the machine has.

use crate::diagnose::ids;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Cell;

use super::list_detail::{self, Column, DataTable};
use super::text::hanging;
use crate::report::{Finding, Framework, Report, Severity, framework_subject};
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

/// The Frameworks screen, drawn once the scan has a report (`super::list_screen` shows the
/// scan's progress until then).
pub(super) fn draw(s: &State, t: Theme, area: Rect, buf: &mut Buffer) {
    let (list_area, detail_area) = panes(area);
    let rows = visible_framework_rows(s);
    DataTable {
        name: "Frameworks (✓ can use this GPU)",
        suffix: None,
        columns: &FrameworkColumn::ALL,
        header: true,
    }
    .render(
        s,
        t,
        rows.iter().enumerate(),
        |row, column| column.cell(row, t),
        list_area,
        buf,
    );
    list_detail::detail(s, t, "Needs / has", detail_area, buf, |width| {
        detail(s, t, width)
    });
}

/// The frameworks table's columns.
#[derive(Debug, Clone, Copy)]
enum FrameworkColumn {
    Usable,
    Environment,
    Framework,
    Version,
    Build,
    Cudnn,
}

impl FrameworkColumn {
    const ALL: [FrameworkColumn; 6] = [
        Self::Usable,
        Self::Environment,
        Self::Framework,
        Self::Version,
        Self::Build,
        Self::Cudnn,
    ];

    fn cell(self, row: &FrameworkRow<'_>, t: Theme) -> Cell<'static> {
        let fw = row.framework;
        match self {
            Self::Usable => {
                let (mark, style) = match row.usable {
                    Some(true) => ("✓", t.good()),
                    Some(false) => ("✗", t.bad()),
                    None => ("", t.dim()),
                };
                Cell::from(Span::styled(mark, style))
            }
            Self::Environment => Cell::from(clean(row.env)),
            Self::Framework => Cell::from(fw.map_or_else(
                || Span::styled("none", t.dim()),
                |f| Span::raw(clean(&f.name)),
            )),
            Self::Version => Cell::from(
                fw.map(|f| or_unknown(f.version.as_deref()))
                    .unwrap_or_default(),
            ),
            Self::Build => Cell::from(fw.map(build).unwrap_or_default()),
            Self::Cudnn => Cell::from(
                fw.and_then(|f| f.cudnn.as_deref())
                    .map(clean)
                    .unwrap_or_default(),
            ),
        }
    }
}

impl Column for FrameworkColumn {
    fn header(self) -> &'static str {
        match self {
            Self::Usable => "",
            Self::Environment => "Environment",
            Self::Framework => "Framework",
            Self::Version => "Version",
            Self::Build => "Build",
            Self::Cudnn => "cuDNN",
        }
    }

    fn width(self) -> Constraint {
        match self {
            Self::Usable => Constraint::Length(1),
            Self::Environment => Constraint::Fill(1),
            Self::Framework | Self::Build => Constraint::Length(10),
            Self::Version => Constraint::Length(16),
            Self::Cudnn => Constraint::Length(12),
        }
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
            &format!("({}) has no GPU framework installed.", clean(&row.env_kind)),
            Style::new(),
            width,
            2,
        );
    };
    let findings: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.subjects.contains(&framework_subject(row.env, &fw.name)))
        .collect();
    let mut out = Needs {
        lines: title(report, row, fw, t, width),
        t,
        width,
    };
    out.lines.push(Line::styled(
        format!("  {:<22}{}", "needs", "this machine has"),
        t.dim(),
    ));
    out.need(cuda_need(report, fw));
    if let Some(cudnn) = cudnn_need(report, row, fw, &findings) {
        out.need(cudnn);
    }
    if !fw.arch_list.is_empty() {
        out.need(arch_need(report, &findings));
        out.note("  built for ", &fw.arch_list.join(" "));
    }
    if !fw.pins.is_empty() {
        out.note("  pins ", &fw.pins.join(", "));
    }
    for f in findings {
        out.finding(f);
    }
    out.note("  facts from ", &fw.source);
    out.lines
}

/// One need of a framework, a line of the detail.
struct Need {
    /// Met (`Some(true)`), not met, or unknown.
    met: Option<bool>,
    /// What the framework needs ("CUDA 12.8").
    what: String,
    /// What the machine has ("driver runs CUDA up to 13.0").
    has: String,
}

/// The detail's lines as they are written.
struct Needs {
    lines: Vec<Line<'static>>,
    t: Theme,
    width: usize,
}

impl Needs {
    /// "✓ CUDA 12.8              driver runs CUDA up to 13.0", wrapped under the second column.
    fn need(&mut self, Need { met, what, has }: Need) {
        let t = self.t;
        let (mark, style) = match met {
            Some(true) => ("✓ ", t.good()),
            Some(false) => ("✗ ", t.bad()),
            None => ("· ", t.dim()),
        };
        self.lines.extend(hanging(
            vec![
                Span::styled(mark, style),
                Span::styled(format!("{what:<22}"), t.text()),
            ],
            &has,
            Style::new(),
            self.width,
            24,
        ));
    }

    /// A dim labelled line of facts ("  pins torch==2.11.0, ...").
    fn note(&mut self, label: &'static str, text: &str) {
        let dim = self.t.dim();
        self.lines.extend(hanging(
            vec![Span::styled(label, dim)],
            &clean(text),
            dim,
            self.width,
            4,
        ));
    }

    /// A finding about this framework: its mark, id and title.
    fn finding(&mut self, f: &Finding) {
        let t = self.t;
        self.lines.extend(hanging(
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
            self.width,
            2,
        ));
    }
}

/// The build's CUDA against the driver's: a driver of the same major runs any minor
/// (minor-version compatibility), the rule `check` uses too.
fn cuda_need(report: &Report, fw: &Framework) -> Need {
    let Some(cuda) = fw.cuda.as_deref() else {
        return Need {
            met: None,
            what: "no CUDA".to_string(),
            has: format!("{} build: it does not use NVIDIA GPUs", build(fw)),
        };
    };
    let driver_cuda = report
        .driver
        .cuda_version
        .as_deref()
        .and_then(Version::parse);
    let ok = match (Version::parse(cuda), &driver_cuda) {
        (Some(need), Some(have)) => Some(have.major() >= need.major()),
        _ => None,
    };
    let has = driver_cuda.as_ref().map_or_else(
        || "no driver CUDA version known".to_string(),
        |d| format!("driver runs CUDA up to {d}"),
    );
    Need {
        met: ok,
        what: format!("CUDA {}", clean(cuda)),
        has,
    }
}

/// The build's cuDNN against the copies found: met when one of its major is there and no
/// finding blames cuDNN or the library path.
fn cudnn_need(
    report: &Report,
    row: &FrameworkRow<'_>,
    fw: &Framework,
    findings: &[&Finding],
) -> Option<Need> {
    let cudnn = fw.cudnn.as_deref()?;
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
        .any(|f| ids::is_one_of(ids::CUDNN_KINDS, &f.id) || f.id == ids::LIBRARY_PATH_SHADOWING.id);
    let has = if copies.is_empty() {
        "no cuDNN found".to_string()
    } else {
        copies.join(", ")
    };
    Some(Need {
        met: Some(has_major && !blamed),
        what: format!("cuDNN {}", clean(cudnn)),
        has,
    })
}

/// The GPUs' compute capabilities, met unless `arch-not-in-build` says otherwise.
fn arch_need(report: &Report, findings: &[&Finding]) -> Need {
    let ccs: Vec<String> = report
        .gpus
        .iter()
        .filter_map(|g| g.compute_capability.as_deref())
        .map(|cc| format!("cc {}", clean(cc)))
        .collect();
    if ccs.is_empty() {
        return Need {
            met: None,
            what: "kernels for".to_string(),
            has: "no GPU compute capability known".to_string(),
        };
    }
    let blamed = findings.iter().any(|f| f.id == ids::ARCH_NOT_IN_BUILD.id);
    Need {
        met: Some(!blamed),
        what: "kernels for".to_string(),
        has: format!("GPU {}", ccs.join(", ")),
    }
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
        &format!("in {} ({}{python})", clean(row.env), clean(&row.env_kind)),
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
