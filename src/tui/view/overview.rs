//! Screen 1, Overview: the verdict, the machine in a few lines (GPUs one a line, driver, CUDA,
//! cuDNN), the top findings, each of which Enter opens on the Diagnosis screen, then every
//! framework per environment with whether it can use the GPU.

use crate::report::GpuSource;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use ratatui::style::Style;

use super::text::{duration, fit, gib, hanging};
use super::{Screen, pane, spinner, verdict};
use crate::report::{Gpu, Library, ProbeStatus, Report};
use crate::sanitize::clean;
use crate::tui::model::{self, or_unknown};
use crate::tui::state::{Live, Phase, Scan, State, Step};
use crate::tui::theme::{Theme, severity_mark};

/// The Overview screen as a widget over the frame's state.
pub(super) struct View<'a>(pub(super) Screen<'a>);

impl Widget for &View<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let screen = &self.0;
        let t = screen.theme;
        let s = screen.state;
        let Some(report) = &s.report else {
            let width = usize::from(area.width.saturating_sub(2));
            Paragraph::new(progress(s, t, width))
                .block(pane("Overview", false, t))
                .render(area, buf);
            return;
        };
        let block = pane("Overview", false, t);
        let inner = block.inner(area);
        block.render(area, buf);
        let width = usize::from(inner.width);
        let mut lines = Vec::new();
        let mut health = vec![label("Health"), Span::raw("")];
        health.extend(verdict(s, t));
        health.push(Span::styled(health_words(s), t.dim()));
        lines.push(Line::from(health));
        let kv = |lines: &mut Vec<Line<'static>>, name: &str, text: &str| {
            lines.extend(hanging(vec![label(name)], text, Style::new(), width, 9));
        };
        if let Some(root) = &report.tool.root {
            kv(&mut lines, "Examined", &format!("{} (--root)", clean(root)));
        }
        kv(&mut lines, "Machine", &machine(report));
        lines.extend(gpu_lines(report, t, inner.height));
        kv(&mut lines, "Driver", &driver(report));
        kv(&mut lines, "CUDA", &cuda(report));
        lines.push(Line::raw(""));
        let (findings, selected) = finding_lines(s, report, t, width);
        let selected_row = selected.map(|i| lines.len() + i);
        lines.extend(findings);
        lines.push(Line::raw(""));
        lines.push(Line::styled("Frameworks (✓ can use this GPU)", t.title()));
        lines.extend(framework_lines(s, report, t, width));
        if let Scan::Done { took } = s.scan {
            lines.push(Line::raw(""));
            lines.extend(hanging(
                Vec::new(),
                &scan_line(report, took),
                t.dim(),
                width,
                0,
            ));
        }
        // The image's CUDA requirement describes the image, not a setting: its findings quote it.
        let settings: Vec<&crate::report::EnvVar> = report
            .environment
            .iter()
            .filter(|v| !crate::report::IMAGE_REQUIREMENT_VARS.contains(&v.name.as_str()))
            .collect();
        if !settings.is_empty() {
            lines.push(Line::raw(""));
            lines.push(Line::styled(
                "Settings that change what CUDA does",
                t.title(),
            ));
            for var in settings {
                lines.extend(hanging(
                    vec![Span::styled(format!("  {}=", clean(&var.name)), t.dim())],
                    &clean(&var.value),
                    Style::new(),
                    width,
                    4,
                ));
            }
        }
        // The findings come right after the machine, but a tall machine (many GPUs) can still
        // push the selected one below the pane: scroll just enough to show it and the line
        // after it (issue #38: at 80×24 the findings fell off and could not be reached).
        let height = usize::from(inner.height);
        let offset = selected_row
            .map_or(0, |row| (row + 2).saturating_sub(height))
            .min(lines.len().saturating_sub(1));
        Paragraph::new(lines)
            .scroll((u16::try_from(offset).unwrap_or(0), 0))
            .render(inner, buf);
    }
}

/// The Findings block (its title, the top findings, a line for the rest), and which of its
/// lines is the selected finding.
fn finding_lines(
    s: &State,
    report: &Report,
    t: Theme,
    width: usize,
) -> (Vec<Line<'static>>, Option<usize>) {
    let mut lines = Vec::new();
    lines.push(Line::styled("Findings", t.title()));
    if report.findings.is_empty() {
        lines.push(Line::styled("  No problems found.", t.good()));
    }
    let selected = s.cursor().selected;
    let mut selected_row = None;
    for (i, f) in report
        .findings
        .iter()
        .take(model::OVERVIEW_FINDINGS)
        .enumerate()
    {
        let sev = t.severity(f.severity);
        let mark = format!("{} {:<7} ", severity_mark(f.severity), f.severity.as_str());
        let id = format!("{:<27} ", fit(&f.id, 27));
        let room = width.saturating_sub(2 + super::text::width(&mark) + 28);
        let mut line = Line::from(vec![
            Span::raw("  "),
            Span::styled(mark, sev),
            Span::styled(id, t.text()),
            Span::styled(fit(&clean(&f.title), room), t.dim()),
        ]);
        if i == selected {
            line = line.patch_style(t.selected());
            selected_row = Some(lines.len());
        }
        lines.push(line);
    }
    let more = report
        .findings
        .len()
        .saturating_sub(model::OVERVIEW_FINDINGS);
    if more > 0 {
        lines.push(Line::styled(
            format!("  … {more} more on the Diagnosis screen (5)"),
            t.dim(),
        ));
    }
    (lines, selected_row)
}

fn label(name: &str) -> Span<'static> {
    Span::styled(format!("{name:<9}"), Style::new())
}

fn health_words(s: &State) -> String {
    let d = &s.derived;
    if d.errors + d.warnings > 0 {
        "  (details on the Diagnosis screen, 5)".to_string()
    } else if s.report.as_ref().is_some_and(Report::has_gpu) {
        "  no problems found".to_string()
    } else {
        "  nothing to diagnose".to_string()
    }
}

/// What is being done while the report is not there yet, phase by phase.
fn progress(s: &State, t: Theme, width: usize) -> Vec<Line<'static>> {
    let elapsed = match s.scan {
        Scan::Running { since } => duration(s.now.saturating_sub(since)),
        _ => String::new(),
    };
    let mut lines = vec![Line::raw("")];
    match &s.scan {
        Scan::Failed(why) => lines.push(Line::styled(
            format!(
                "  ✗ gpu-doctor broke while examining this machine (a bug; please report it): {}",
                clean(why)
            ),
            t.bad(),
        )),
        _ => {
            lines.push(Line::from(vec![
                Span::styled(format!("  {} ", spinner(s)), t.title()),
                Span::raw(format!("Examining this machine… {elapsed}")),
            ]));
            lines.push(Line::raw(""));
            for phase in Phase::ALL {
                let (mark, style, after) = match s.phase(phase) {
                    Step::Pending => ("·", t.dim(), String::new()),
                    Step::Running { since } => (
                        spinner(s),
                        t.title(),
                        format!(" ({} so far)", duration(s.now.saturating_sub(*since))),
                    ),
                    Step::Done { took } => ("✓", t.good(), format!(" ({})", duration(*took))),
                    Step::Skipped(why) => ("–", t.dim(), format!(" (skipped: {})", clean(why))),
                };
                lines.extend(hanging(
                    vec![Span::raw("    "), Span::styled(format!("{mark} "), style)],
                    &format!("{}{after}", phase.label()),
                    Style::new(),
                    width,
                    6,
                ));
            }
        }
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "  Every screen fills in when the scan is done; q quits at any time.",
        t.dim(),
    ));
    lines
}

fn machine(r: &Report) -> String {
    let h = &r.host;
    let mut parts = Vec::new();
    parts.push(or_unknown(
        h.os_pretty_name.as_deref().or(h.os_id.as_deref()),
    ));
    if let Some(k) = &h.kernel_release {
        parts.push(format!("kernel {}", clean(k)));
    }
    if let Some(a) = &h.arch {
        parts.push(clean(a));
    }
    if h.wsl {
        parts.push("WSL2".to_string());
    }
    if let Some(c) = &h.container {
        parts.push(format!("container: {}", clean(c)));
    }
    parts.join(" · ")
}

/// One line per GPU, as many as leave room for the rest of the screen.
fn gpu_lines(r: &Report, t: Theme, height: u16) -> Vec<Line<'static>> {
    if r.gpus.is_empty() {
        return vec![Line::from(vec![
            label("GPUs"),
            Span::styled("none found", t.dim()),
        ])];
    }
    let room = usize::from(height).saturating_sub(16).max(1);
    let mut lines = Vec::new();
    for (i, g) in r.gpus.iter().enumerate() {
        if i == room && r.gpus.len() > room + 1 {
            lines.push(Line::from(vec![
                label(""),
                Span::styled(
                    format!("… {} more on the GPUs screen (2)", r.gpus.len() - room),
                    t.dim(),
                ),
            ]));
            break;
        }
        lines.push(Line::from(vec![
            label(if i == 0 { "GPUs" } else { "" }),
            Span::raw(gpu_summary(g)),
        ]));
    }
    lines
}

/// "0  NVIDIA H200 · cc 9.0 · 140.4 GiB · 39 °C · 117/700 W".
pub(super) fn gpu_summary(g: &Gpu) -> String {
    let mut parts = vec![format!("{}  {}", g.index, or_unknown(g.name.as_deref()))];
    if let Some(id) = &g.pci_device_id
        && g.name.is_none()
    {
        parts.push(format!("PCI {}", clean(id)));
    }
    if let Some(cc) = &g.compute_capability {
        parts.push(format!("cc {}", clean(cc)));
    }
    if let Some(gfx) = &g.gfx_target {
        parts.push(clean(gfx));
    }
    if let Some(m) = g.memory_total_mib {
        parts.push(gib(m));
    }
    if let Some(temp) = g.temperature_c {
        parts.push(format!("{temp} °C"));
    }
    match (g.power_draw_w, g.power_limit_w) {
        (Some(p), Some(l)) => parts.push(format!("{p:.0}/{l:.0} W")),
        (Some(p), None) => parts.push(format!("{p:.0} W")),
        _ => {}
    }
    if g.source == GpuSource::Pci {
        parts.push("seen on the PCI bus only".to_string());
    }
    parts.join(" · ")
}

fn driver(r: &Report) -> String {
    let d = &r.driver;
    let mut parts = Vec::new();
    match &d.version {
        Some(v) => parts.push(clean(v)),
        None => parts.push("no NVIDIA driver answered".to_string()),
    }
    if let Some(c) = &d.cuda_version {
        parts.push(format!("runs CUDA ≤ {}", clean(c)));
    }
    if let Some(source) = &d.source {
        parts.push(format!("from {}", clean(source)));
    }
    match (r.kernel.nvidia_loaded, r.kernel.nvidia_open) {
        (true, Some(true)) => parts.push("open kernel module".to_string()),
        (true, _) => parts.push("kernel module loaded".to_string()),
        (false, _) => parts.push("nvidia module not loaded".to_string()),
    }
    if r.kernel.nouveau_loaded {
        parts.push("nouveau loaded".to_string());
    }
    if matches!(d.nvml.status, ProbeStatus::Failed | ProbeStatus::TimedOut) {
        parts.push("NVML failed".to_string());
    }
    parts.join(" · ")
}

fn versions(libs: &[Library]) -> String {
    let mut v: Vec<String> = libs
        .iter()
        .map(|l| or_unknown(l.version.as_deref()))
        .collect();
    v.sort();
    v.dedup();
    v.join(", ")
}

fn cuda(r: &Report) -> String {
    let mut parts = Vec::new();
    if r.toolkits.is_empty() {
        parts.push("no toolkit".to_string());
    } else {
        let list: Vec<String> = r
            .toolkits
            .iter()
            .map(|t| or_unknown(t.version.as_deref()))
            .collect();
        parts.push(format!("toolkit {}", list.join(", ")));
    }
    for (name, libs) in [("cuDNN", &r.libraries.cudnn), ("NCCL", &r.libraries.nccl)] {
        if libs.is_empty() {
            parts.push(format!("no {name}"));
        } else {
            parts.push(format!("{name} {}", versions(libs)));
        }
    }
    parts.join(" · ")
}

/// Each environment on one line (wrapped by framework when it does not fit).
fn framework_lines(s: &State, r: &Report, t: Theme, width: usize) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if r.python_envs.is_empty() {
        lines.push(Line::styled("  no Python environments found", t.dim()));
    }
    let env_width = r
        .python_envs
        .iter()
        .map(|e| super::text::width(&clean(&e.path)))
        .max()
        .unwrap_or(0)
        .min(28);
    for env in &r.python_envs {
        let path = clean(&env.path);
        let head = format!("  {path:<env_width$}  ");
        let indent = super::text::width(&head);
        let mut spans = vec![Span::raw(head)];
        let mut used = indent;
        if env.frameworks.is_empty() {
            spans.push(Span::styled("no GPU frameworks", t.dim()));
        }
        for fw in &env.frameworks {
            let usable = s.derived.framework(&env.path, &fw.name).map(|v| v.usable);
            let (mark, style) = match usable {
                Some(true) => ("✓", t.good()),
                Some(false) => ("✗", t.bad()),
                None => ("?", t.dim()),
            };
            let words = format!(
                " {} {}  ",
                clean(&fw.name),
                or_unknown(fw.version.as_deref())
            );
            let cost = 1 + super::text::width(&words);
            if used + cost > width && used > indent {
                lines.push(Line::from(std::mem::take(&mut spans)));
                spans.push(Span::raw(" ".repeat(indent)));
                used = indent;
            }
            spans.push(Span::styled(mark, style));
            spans.push(Span::raw(words));
            used += cost;
        }
        lines.push(Line::from(spans));
    }
    lines
}

fn scan_line(r: &Report, took: std::time::Duration) -> String {
    let mut probes: Vec<_> = r.probes.iter().collect();
    probes.sort_by(|a, b| b.duration_ms.cmp(&a.duration_ms).then(a.name.cmp(&b.name)));
    let slowest: Vec<String> = probes
        .iter()
        .take(3)
        .map(|p| format!("{} {} ms", p.name, p.duration_ms))
        .collect();
    let failed = r
        .probes
        .iter()
        .filter(|p| p.status != ProbeStatus::Ok)
        .count();
    let mut line = format!(
        "Scanned in {}; slowest probes: {}",
        duration(took),
        slowest.join(", ")
    );
    if failed > 0 {
        line.push_str(&format!("; {failed} probe(s) did not finish"));
    }
    line
}

/// Whether live readings are on, for the GPUs screen title.
pub(super) fn live_word(live: &Live) -> &'static str {
    match live {
        Live::On(_) => "live",
        Live::Waiting => "reading…",
        Live::Off | Live::Unavailable(_) => "from the scan",
    }
}
