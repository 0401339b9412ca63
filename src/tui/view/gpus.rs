//! Screen 2, GPUs: a table of every GPU (name, compute capability, memory, temperature, power,
//! clocks, PCIe link, ECC), the selected GPU's full facts, and sparklines of live readings
//! (utilisation, memory, temperature, power) once a second while this screen is open. Under
//! `--root` or without NVML nothing is live and the screen says why.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, RenderDirection, Sparkline, Widget};

use super::list_detail::{self, Column, DataTable};
use super::overview::live_word;
use super::text::{gib, hanging};
use super::{pane, spinner};
use crate::report::Gpu;
use crate::sanitize::clean;
use crate::tui::model::{or_unknown, visible_gpus};
use crate::tui::state::{History, Live, State};
use crate::tui::theme::Theme;

/// Table, facts pane, live pane.
pub(super) fn panes(state: &State, body: Rect) -> (Rect, Rect, Rect) {
    let rows = visible_gpus(state).len().clamp(1, 8);
    let table_height = u16::try_from(rows).unwrap_or(8) + 3;
    let [table, bottom] =
        Layout::vertical([Constraint::Length(table_height), Constraint::Fill(1)]).areas(body);
    let [facts, live] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(bottom);
    (table, facts, live)
}

/// The GPU's current facts: the live reading when there is one, else the scan's.
fn current(state: &State, index: usize) -> Option<&Gpu> {
    let report = state.report.as_ref()?;
    if let Live::On(histories) = &state.live
        && let Some(h) = histories.get(index)
    {
        return Some(&h.latest);
    }
    report.gpus.get(index)
}

fn selected_index(state: &State) -> Option<usize> {
    visible_gpus(state).get(state.cursor().selected).copied()
}

/// The GPUs screen, drawn once the scan has a report (`super::list_screen` shows the
/// scan's progress until then).
pub(super) fn draw(s: &State, t: Theme, area: Rect, buf: &mut Buffer) {
    let (table_area, facts_area, live_area) = panes(s, area);
    table(s, t, table_area, buf);
    list_detail::detail(s, t, "Details", facts_area, buf, |width| {
        detail(s, t, width)
    });
    live(s, t, live_area, buf);
}

fn table(s: &State, t: Theme, area: Rect, buf: &mut Buffer) {
    let wide = area.width >= 100;
    // AMD GPUs name their target (gfx1100) where NVIDIA's have a compute capability.
    let amd = s
        .report
        .as_ref()
        .is_some_and(|r| r.amd_gpus().next().is_some());
    let mut columns = vec![
        GpuColumn::Index,
        GpuColumn::Name,
        GpuColumn::Capability { amd },
        GpuColumn::Memory,
        GpuColumn::Temperature,
        GpuColumn::Power,
    ];
    if wide {
        columns.push(GpuColumn::SmClock);
    }
    columns.push(GpuColumn::Pcie);
    if wide {
        columns.push(GpuColumn::Ecc);
    }
    let visible = visible_gpus(s);
    let gpus = visible
        .iter()
        .enumerate()
        .filter_map(|(row, &i)| Some((row, current(s, i)?)));
    DataTable {
        name: "GPUs",
        suffix: Some(live_word(&s.live)),
        columns: &columns,
        header: true,
    }
    .render(s, t, gpus, |g, column| column.cell(g), area, buf);
}

/// The GPU table's columns; the SM clock and ECC only on a wide terminal.
#[derive(Debug, Clone, Copy)]
enum GpuColumn {
    Index,
    Name,
    /// The compute capability, or an AMD GPU's gfx target when the machine has one.
    Capability {
        amd: bool,
    },
    Memory,
    Temperature,
    Power,
    SmClock,
    Pcie,
    Ecc,
}

impl GpuColumn {
    fn cell(self, g: &Gpu) -> Cell<'static> {
        Cell::from(match self {
            Self::Index => g.index.to_string(),
            Self::Name => or_unknown(g.name.as_deref()),
            Self::Capability { .. } => g
                .compute_capability
                .as_deref()
                .or(g.gfx_target.as_deref())
                .map(clean)
                .unwrap_or_default(),
            Self::Memory => memory(g),
            Self::Temperature => g
                .temperature_c
                .map(|c| format!("{c} °C"))
                .unwrap_or_default(),
            Self::Power => power(g),
            Self::SmClock => clock(g.clock_sm_mhz, g.clock_sm_max_mhz),
            Self::Pcie => pcie(g),
            Self::Ecc => ecc(g),
        })
    }
}

impl Column for GpuColumn {
    fn header(self) -> &'static str {
        match self {
            Self::Index => "#",
            Self::Name => "Name",
            Self::Capability { amd: true } => "Target",
            Self::Capability { amd: false } => "CC",
            Self::Memory => "Memory",
            Self::Temperature => "Temp",
            Self::Power => "Power",
            Self::SmClock => "SM clock",
            Self::Pcie => "PCIe",
            Self::Ecc => "ECC",
        }
    }

    fn width(self) -> Constraint {
        Constraint::Length(match self {
            Self::Name => return Constraint::Fill(1),
            Self::Index => 2,
            Self::Capability { amd: true } => 7,
            Self::Capability { amd: false } => 4,
            Self::Memory | Self::SmClock | Self::Ecc => 14,
            Self::Temperature => 6,
            Self::Power | Self::Pcie => 9,
        })
    }
}

fn memory(g: &Gpu) -> String {
    match (g.memory_used_mib, g.memory_total_mib) {
        (Some(used), Some(total)) => format!("{:.1}/{}", used as f64 / 1024.0, gib(total)),
        (None, Some(total)) => gib(total),
        _ => String::new(),
    }
}

fn power(g: &Gpu) -> String {
    match (g.power_draw_w, g.power_limit_w) {
        (Some(p), Some(l)) => format!("{p:.0}/{l:.0} W"),
        (Some(p), None) => format!("{p:.0} W"),
        _ => String::new(),
    }
}

fn clock(now: Option<u32>, max: Option<u32>) -> String {
    match (now, max) {
        (Some(n), Some(m)) => format!("{n}/{m} MHz"),
        (Some(n), None) => format!("{n} MHz"),
        _ => String::new(),
    }
}

/// "5 x16", or "1/5 x8/16" when the link runs below what it can.
fn pcie(g: &Gpu) -> String {
    let (Some(gen_now), Some(width)) = (g.pcie_gen_current, g.pcie_width_current) else {
        return String::new();
    };
    let gen_text = match g.pcie_gen_max {
        Some(max) if max != gen_now => format!("{gen_now}/{max}"),
        _ => gen_now.to_string(),
    };
    let width_text = match g.pcie_width_max {
        Some(max) if max != width => format!("x{width}/{max}"),
        _ => format!("x{width}"),
    };
    format!("{gen_text} {width_text}")
}

fn ecc(g: &Gpu) -> String {
    let e = &g.ecc;
    let state = match e.enabled {
        Some(true) => "on",
        Some(false) => "off",
        None => return String::new(),
    };
    match e.volatile_uncorrected.or(e.aggregate_uncorrected) {
        Some(n) if n > 0 => format!("{state}, {n} uncorr."),
        _ => state.to_string(),
    }
}

/// The selected GPU's facts, wrapped to `width`.
pub(super) fn detail(s: &State, t: Theme, width: u16) -> Vec<Line<'static>> {
    let Some(index) = selected_index(s) else {
        return vec![Line::styled("No GPU matches.", t.dim())];
    };
    let Some(g) = current(s, index) else {
        return Vec::new();
    };
    let width = usize::from(width);
    let mut lines = vec![Line::styled(
        format!(
            "{} (GPU {}, from {})",
            or_unknown(g.name.as_deref()),
            g.index,
            clean(g.source.as_str())
        ),
        t.title(),
    )];
    let mut row = |key: &str, value: String| {
        if !value.is_empty() {
            lines.extend(hanging(
                vec![Span::styled(format!("{key:<10} "), t.dim())],
                &value,
                Style::new(),
                width,
                11,
            ));
        }
    };
    row("UUID", g.uuid.as_deref().map(clean).unwrap_or_default());
    row("Bus", bus_words(g));
    row("Arch", arch_words(g));
    if g.is_amd() {
        row("Vendor", amd_words(g));
    }
    row("Known by", clean(&crate::fill::identified_by_words(g)));
    row("Memory", memory_words(g));
    row("Temp", temp_words(g));
    row("Power", power(g).replace('/', " of "));
    row("SM clock", clock(g.clock_sm_mhz, g.clock_sm_max_mhz));
    row("Mem clock", clock(g.clock_mem_mhz, g.clock_mem_max_mhz));
    row("PCIe", pcie_words(g));
    row("ECC", ecc_words(g));
    row("Modes", modes_words(g));
    row(
        "Throttle",
        if g.throttle_reasons.is_empty() {
            "none".to_string()
        } else {
            clean(&g.throttle_reasons.join(", "))
        },
    );
    row("Filled", clean(&g.filled_from.join("; ")));
    lines
}

/// The PCI address, and the device id beside it when known.
fn bus_words(g: &Gpu) -> String {
    let bus = g.pci_bus_id.as_deref().map(clean).unwrap_or_default();
    match &g.pci_device_id {
        Some(id) => format!("{bus} [{}]", clean(id)),
        None => bus,
    }
}

/// The architecture with the compute capability (NVIDIA) or the gfx target (AMD).
fn arch_words(g: &Gpu) -> String {
    match (&g.architecture, &g.compute_capability, &g.gfx_target) {
        (Some(a), Some(cc), _) => format!("{} · cc {}", clean(a), clean(cc)),
        (None, Some(cc), _) => format!("cc {}", clean(cc)),
        (Some(a), None, Some(gfx)) => format!("{} · {}", clean(a), clean(gfx)),
        (None, None, Some(gfx)) => clean(gfx),
        (Some(a), None, None) => clean(a),
        (None, None, None) => "unknown".to_string(),
    }
}

/// How ROCm sees an AMD GPU: its device index, KFD node, render node, bound driver, APU.
fn amd_words(g: &Gpu) -> String {
    let mut rocm = vec!["AMD".to_string()];
    if let Some(i) = g.rocm_index {
        rocm.push(format!("ROCm device {i}"));
    }
    if let Some(n) = g.kfd_node {
        rocm.push(format!("KFD node {n}"));
    }
    if let Some(r) = &g.render_node {
        rocm.push(clean(r));
    }
    if let Some(d) = &g.bound_driver {
        rocm.push(format!("driver {}", clean(d)));
    }
    if g.integrated == Some(true) {
        rocm.push("integrated (APU)".to_string());
    }
    rocm.join(" · ")
}

fn memory_words(g: &Gpu) -> String {
    match (g.memory_used_mib, g.memory_total_mib) {
        (Some(u), Some(total)) => format!("{} of {} used", gib(u), gib(total)),
        (None, Some(total)) => format!("{} (use unknown)", gib(total)),
        _ => "unknown".to_string(),
    }
}

fn temp_words(g: &Gpu) -> String {
    match (g.temperature_c, g.temperature_slowdown_c) {
        (Some(c), Some(slow)) => format!("{c} °C (slows down at {slow} °C)"),
        (Some(c), None) => format!("{c} °C"),
        _ => "unknown".to_string(),
    }
}

/// Persistence and MIG mode, where the driver said.
fn modes_words(g: &Gpu) -> String {
    let mut modes = Vec::new();
    if let Some(p) = g.persistence_mode {
        modes.push(format!("persistence {}", if p { "on" } else { "off" }));
    }
    if let Some(m) = &g.mig_mode {
        modes.push(format!("MIG {}", clean(m.as_str())));
    }
    modes.join(" · ")
}

fn pcie_words(g: &Gpu) -> String {
    let now = match (g.pcie_gen_current, g.pcie_width_current) {
        (Some(gen_now), Some(w)) => format!("gen {gen_now} x{w}"),
        _ => return String::new(),
    };
    match (g.pcie_gen_max, g.pcie_width_max) {
        (Some(gm), Some(wm)) => format!("{now} (max gen {gm} x{wm})"),
        _ => now,
    }
}

fn ecc_words(g: &Gpu) -> String {
    let e = &g.ecc;
    let Some(enabled) = e.enabled else {
        return String::new();
    };
    if !enabled {
        return "off".to_string();
    }
    let count = |n: Option<u64>| n.map_or_else(|| "?".to_string(), |n| n.to_string());
    format!(
        "on · {} uncorrected, {} corrected since boot",
        count(e.volatile_uncorrected),
        count(e.volatile_corrected)
    )
}

fn live(s: &State, t: Theme, area: Rect, buf: &mut Buffer) {
    let title = match s.live {
        Live::On(_) | Live::Waiting => format!("Live · every {} s", s.sample_every().as_secs()),
        Live::Off | Live::Unavailable(_) => "Live".to_string(),
    };
    let block = pane(title, false, t);
    let inner = block.inner(area);
    block.render(area, buf);
    let selected = selected_index(s).and_then(|i| current(s, i));
    if selected.is_some_and(Gpu::is_amd) {
        let text = "Live readings come from NVML, which reads NVIDIA GPUs only. This AMD GPU's \
                    use, memory, temperature and power above are the scan's, from amdgpu's sysfs \
                    files (r rescans; `watch rocm-smi` follows them live).";
        let lines: Vec<Line> = super::text::wrap(text, usize::from(inner.width))
            .into_iter()
            .map(|l| Line::styled(l, t.dim()))
            .collect();
        Paragraph::new(lines).render(inner, buf);
        return;
    }
    let message = match &s.live {
        Live::Unavailable(why) => format!("No live readings: {}", clean(why)),
        Live::Off | Live::Waiting => format!("{} reading the GPU sensors…", spinner(s)),
        Live::On(histories) => {
            // NVML numbers NVIDIA GPUs only: the selected GPU's place among them.
            let nvml_index = selected_index(s).and_then(|i| {
                let gpus = &s.report.as_ref()?.gpus;
                Some(gpus.get(..i)?.iter().filter(|g| g.is_nvidia()).count())
            });
            if let Some(h) = nvml_index.and_then(|i| histories.get(i)) {
                sparklines(h, t, inner, buf);
            }
            return;
        }
    };
    let lines: Vec<Line> = super::text::wrap(&message, usize::from(inner.width))
        .into_iter()
        .map(|l| Line::styled(l, t.dim()))
        .collect();
    Paragraph::new(lines).render(inner, buf);
}

fn sparklines(h: &History, t: Theme, area: Rect, buf: &mut Buffer) {
    let g = &h.latest;
    let temp_max = u64::from(g.temperature_slowdown_c.unwrap_or(100).max(1));
    let power_max = g
        .power_limit_w
        .filter(|w| w.is_finite() && *w >= 1.0)
        .map_or_else(
            || h.power.iter().copied().max().unwrap_or(1),
            |w| w.round() as u64,
        );
    let last = |series: &std::collections::VecDeque<u64>, unit: &str| {
        series
            .back()
            .map_or_else(|| "not reported".to_string(), |v| format!("{v} {unit}"))
    };
    let metrics = [
        (
            "utilisation",
            last(&h.utilization, "%"),
            &h.utilization,
            100,
        ),
        ("memory used", last(&h.memory, "%"), &h.memory, 100),
        (
            "temperature",
            last(&h.temperature, "°C"),
            &h.temperature,
            temp_max,
        ),
        ("power", last(&h.power, "W"), &h.power, power_max),
    ];
    let rows = Layout::vertical([Constraint::Fill(1); 4]).split(area);
    for ((name, now, series, max), row) in metrics.into_iter().zip(rows.iter()) {
        let [label, chart] =
            Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(*row);
        Line::from(vec![
            Span::styled(format!("{name} "), t.dim()),
            Span::raw(now),
        ])
        .render(label, buf);
        // Drawn right to left from the newest reading, so "now" is always the right edge.
        let data: Vec<u64> = series
            .iter()
            .rev()
            .take(usize::from(chart.width))
            .copied()
            .collect();
        Sparkline::default()
            .data(&data)
            .max(max)
            .direction(RenderDirection::RightToLeft)
            .style(t.chart())
            .render(chart, buf);
    }
}
