//! Drawing: [`Screen`] is `impl Widget for &Screen` over the [`State`], so a frame is a pure
//! function of the state (ratatui's demo2 draws `&App` the same way, and tests draw it into a
//! `TestBackend`). Each screen is in its own file: a `View` widget, or for the list screens
//! (GPUs, Drivers & CUDA, Frameworks, Diagnosis) a `draw` function that [`list_screen`] calls
//! once there is a report; this one lays out the frame (header, tab bar, body, footer) and
//! draws what every screen shares: the footer's key hints and the help overlay, both from the
//! keymap.

mod diagnosis;
mod drivers;
mod explain;
mod frameworks;
mod gpus;
mod list_detail;
mod overview;
mod plan;
mod smoke;
pub mod text;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Widget};

use super::keys;
use super::state::{Focus, Mode, Scan, State, Tab};
use super::theme::Theme;
use crate::report::{Report, Severity};
use crate::sanitize::clean;

/// A frame of the TUI: the state and the styles to draw it with.
#[derive(Debug, Clone, Copy)]
pub struct Screen<'a> {
    pub state: &'a State,
    pub theme: Theme,
}

/// From this width on, tabs get their long titles and Diagnosis puts the detail beside the list.
pub const WIDE: u16 = 110;

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// The frame's rows: header, tab bar, body, footer.
#[must_use]
pub fn areas(area: Rect) -> [Rect; 4] {
    Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area)
}

impl Widget for &Screen<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let [header, tabs, body, footer] = areas(area);
        self.header(header, buf);
        self.tab_bar(tabs, buf);
        let screen = *self;
        match self.state.tab {
            Tab::Overview => (&overview::View(screen)).render(body, buf),
            Tab::Gpus => list_screen(screen, body, buf, gpus::draw),
            Tab::Drivers => list_screen(screen, body, buf, drivers::draw),
            Tab::Frameworks => list_screen(screen, body, buf, frameworks::draw),
            Tab::Diagnosis => list_screen(screen, body, buf, diagnosis::draw),
            Tab::Plan => (&plan::View(screen)).render(body, buf),
            Tab::Smoke => (&smoke::View(screen)).render(body, buf),
        }
        self.footer(footer, buf);
        if self.state.mode == Mode::Help {
            self.help(body, buf);
        }
        explain::draw(self, body, buf);
    }
}

impl Screen<'_> {
    fn header(&self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let mut left = vec![Span::styled("gpu-doctor", t.title()), Span::raw("  ")];
        if let Some(report) = &self.state.report {
            left.extend(verdict(self.state, t));
            let host = report
                .host
                .hostname
                .as_deref()
                .or(report.host.os_pretty_name.as_deref())
                .map(clean)
                .unwrap_or_default();
            if !host.is_empty() {
                left.push(Span::styled(format!("  {host}"), t.dim()));
            }
            if report.tool.root.is_some() {
                left.push(Span::styled("  (--root)", t.dim()));
            }
        }
        let right = self.scan_status();
        let right_width = u16::try_from(text::width(&right)).unwrap_or(u16::MAX);
        let [l, r] =
            Layout::horizontal([Constraint::Fill(1), Constraint::Length(right_width)]).areas(area);
        Line::from(left).render(l, buf);
        Line::styled(right, t.dim()).render(r, buf);
    }

    /// The scan's progress, or how long it took.
    fn scan_status(&self) -> String {
        let s = self.state;
        match &s.scan {
            Scan::NotStarted => String::new(),
            Scan::Running { since } => format!(
                " {} examining… {}",
                spinner(s),
                text::duration(s.now.saturating_sub(*since))
            ),
            Scan::Done { took } => format!(" scanned in {}", text::duration(*took)),
            Scan::Failed(_) => " scan failed".to_string(),
        }
    }

    fn tab_bar(&self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let wide = area.width >= WIDE;
        let mut spans = Vec::new();
        for tab in Tab::ALL {
            let label = format!(" {} {} ", tab.index() + 1, tab.title(wide));
            let style = if tab == self.state.tab {
                t.title().patch(t.selected())
            } else {
                t.text()
            };
            spans.push(Span::styled(label, style));
        }
        Line::from(spans).render(area, buf);
    }

    fn footer(&self, area: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let s = self.state;
        let (prefix, hints): (Vec<Span>, _) = match s.mode {
            Mode::Filter => (
                vec![
                    Span::styled("filter: ", t.key()),
                    Span::raw(clean(&s.cursor().filter)),
                    Span::styled("█", t.dim()),
                    Span::raw("  "),
                ],
                keys::hints(s),
            ),
            Mode::SavePath => {
                let what = s.pending_save.as_ref().map_or("file", |p| p.what);
                (
                    vec![
                        Span::styled(format!("Save the {what} to: "), t.key()),
                        Span::raw(clean(s.input.split().0)),
                        Span::styled("█", t.dim()),
                        Span::raw(clean(s.input.split().1)),
                        Span::raw("  "),
                    ],
                    keys::hints(s),
                )
            }
            Mode::ConfirmOverwrite => {
                let path = s
                    .pending_save
                    .as_ref()
                    .and_then(|p| p.path.as_ref())
                    .map(|p| clean(&p.display().to_string()))
                    .unwrap_or_default();
                (
                    vec![
                        Span::styled(format!("{path} exists. Overwrite it? "), t.bad()),
                        Span::raw(" "),
                    ],
                    keys::hints(s),
                )
            }
            Mode::ConfirmRun => (
                vec![
                    Span::styled(plan::confirm_prompt(s), t.key()),
                    Span::raw(" "),
                ],
                keys::hints(s),
            ),
            Mode::ExplainInput => (
                vec![
                    Span::styled(format!("{} bytes pasted ", s.explain_text.len()), t.key()),
                    Span::raw(" "),
                ],
                keys::hints(s),
            ),
            Mode::Normal | Mode::Help | Mode::Explained => match &s.status {
                Some(status) => {
                    let style = if status.error { t.bad() } else { t.good() };
                    Line::styled(clean(&status.text), style).render(area, buf);
                    return;
                }
                None => (Vec::new(), keys::hints(s)),
            },
        };
        let budget = usize::from(area.width);
        let used: usize = prefix.iter().map(Span::width).sum();
        let mut spans = prefix;
        spans.extend(fit_hints(&hints, budget.saturating_sub(used), t));
        Line::from(spans).render(area, buf);
    }

    fn help(&self, body: Rect, buf: &mut Buffer) {
        let t = self.theme;
        let area = help_area(body);
        Clear.render(area, buf);
        let inner = Block::bordered().inner(area);
        let lines = help_content(t, inner.width);
        // When the keys do not all fit (80×24 holds about half), the frame says so and where
        // the view is, so the help does not look cut off.
        let shown = usize::from(inner.height);
        let bottom = if lines.len() > shown {
            let top = usize::from(self.state.help_scroll);
            let last = (top + shown).min(lines.len());
            format!(
                " ↓↑ j k scroll: lines {}–{last} of {}{} · Esc or ? closes ",
                top + 1,
                lines.len(),
                if last < lines.len() {
                    ", more below"
                } else {
                    ""
                }
            )
        } else {
            " Esc or ? closes ".to_string()
        };
        let block = Block::bordered()
            .title(Line::styled(" Keys ", t.title()))
            .title_bottom(Line::styled(bottom, t.dim()))
            .border_style(t.border(true));
        block.render(area, buf);
        Paragraph::new(lines)
            .scroll((self.state.help_scroll, 0))
            .render(inner, buf);
    }
}

/// The health verdict as the header and Overview show it.
fn verdict(state: &State, t: Theme) -> Vec<Span<'static>> {
    let d = &state.derived;
    let has_gpu = state.report.as_ref().is_some_and(Report::has_gpu);
    let mut spans = Vec::new();
    if d.errors > 0 {
        spans.push(Span::styled(
            format!("✗ {} error{}", d.errors, plural(d.errors)),
            t.severity(Severity::Error),
        ));
    }
    if d.warnings > 0 {
        if !spans.is_empty() {
            spans.push(Span::raw(", "));
        }
        spans.push(Span::styled(
            format!("! {} warning{}", d.warnings, plural(d.warnings)),
            t.severity(Severity::Warning),
        ));
    }
    if spans.is_empty() {
        if has_gpu {
            spans.push(Span::styled("✓ healthy", t.good()));
        } else {
            spans.push(Span::styled("· no GPU", t.dim()));
        }
    }
    spans
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn spinner(state: &State) -> &'static str {
    let frame = usize::try_from(state.ticks % SPINNER.len() as u64).unwrap_or(0);
    SPINNER[frame]
}

/// As many hints as fit, always keeping the last two (help, quit).
fn fit_hints(hints: &[keys::Hint], budget: usize, t: Theme) -> Vec<Span<'static>> {
    let cost = |h: &keys::Hint| text::width(h.keys) + 1 + text::width(h.word) + 2;
    let keep_tail = hints.len().min(2);
    let (head, tail) = hints.split_at(hints.len() - keep_tail);
    let tail_cost: usize = tail.iter().map(cost).sum();
    let mut chosen: Vec<&keys::Hint> = Vec::new();
    let mut used = tail_cost;
    for h in head {
        if used + cost(h) > budget {
            break;
        }
        used += cost(h);
        chosen.push(h);
    }
    chosen.extend(tail);
    let mut spans = Vec::new();
    for h in chosen {
        spans.push(Span::styled(h.keys, t.key()));
        spans.push(Span::raw(format!(" {}  ", h.word)));
    }
    spans
}

fn help_area(body: Rect) -> Rect {
    let width = body.width.min(76);
    let height = body.height;
    Rect {
        x: body.x + (body.width - width) / 2,
        y: body.y,
        width,
        height,
    }
}

fn help_content(t: Theme, width: u16) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut section = "";
    let key_width = 12;
    for (sec, keys, what) in keys::help_lines() {
        if sec != section {
            if !section.is_empty() {
                lines.push(Line::raw(""));
            }
            lines.push(Line::styled(sec, t.title()));
            section = sec;
        }
        let prefix = vec![
            Span::raw(" "),
            Span::styled(format!("{keys:<key_width$}"), t.key()),
            Span::raw(" "),
        ];
        lines.extend(text::hanging(
            prefix,
            what,
            Style::new(),
            usize::from(width),
            key_width + 2,
        ));
    }
    lines
}

/// How far the help can scroll at the current size.
#[must_use]
pub fn help_max_scroll(state: &State) -> u16 {
    let [_, _, body, _] = areas(Rect::new(0, 0, state.size.0, state.size.1));
    let inner = Block::bordered().inner(help_area(body));
    let lines = help_content(Theme::new(false), inner.width).len();
    u16::try_from(lines.saturating_sub(usize::from(inner.height))).unwrap_or(u16::MAX)
}

/// How far the explanation can scroll at the current size.
#[must_use]
pub fn explain_max_scroll(state: &State) -> u16 {
    explain::max_scroll(state)
}

/// How far the current screen's detail pane can scroll at the current size.
#[must_use]
pub fn detail_max_scroll(state: &State) -> u16 {
    let [_, _, body, _] = areas(Rect::new(0, 0, state.size.0, state.size.1));
    let t = Theme::new(false);
    let (pane, lines) = match state.tab {
        Tab::Diagnosis => {
            let pane = diagnosis::panes(body).1;
            (pane, diagnosis::detail(state, t, inner(pane).width).len())
        }
        Tab::Frameworks => {
            let pane = frameworks::panes(body).1;
            (pane, frameworks::detail(state, t, inner(pane).width).len())
        }
        Tab::Drivers => {
            let pane = drivers::panes(body).2;
            (pane, drivers::detail(state, t, inner(pane).width).len())
        }
        Tab::Gpus => {
            let pane = gpus::panes(state, body).1;
            (pane, gpus::detail(state, t, inner(pane).width).len())
        }
        Tab::Plan => match &state.plan.run {
            Some(run) => {
                let pane = plan::run_panes(run, plan::panes(body).1).1;
                (pane, plan::run_output(run, t, inner(pane).width).len())
            }
            None => {
                let pane = plan::panes(body).1;
                (pane, plan::preview(state, t, inner(pane).width).len())
            }
        },
        Tab::Overview | Tab::Smoke => return 0,
    };
    u16::try_from(lines.saturating_sub(usize::from(inner(pane).height))).unwrap_or(u16::MAX)
}

/// A pane's inside, within its border.
fn inner(area: Rect) -> Rect {
    Block::bordered().inner(area)
}

/// A bordered pane with a title, accented when it has the arrows.
fn pane<'a>(title: impl Into<String>, focused: bool, t: Theme) -> Block<'a> {
    Block::bordered()
        .title(Line::styled(format!(" {} ", title.into()), t.title()))
        .border_style(t.border(focused))
}

/// The list pane's title, with its filter when one is set.
fn list_title(state: &State, title: &str) -> String {
    let filter = &state.cursor().filter;
    if filter.is_empty() {
        title.to_string()
    } else {
        format!("{title} (filter: {})", clean(filter))
    }
}

/// Whether the detail pane has the arrows.
fn detail_focused(state: &State) -> bool {
    state.focus == Focus::Detail
}

/// What a screen shows before the report exists.
/// A list screen: the scan's progress until there is a report, then `draw` with the state.
fn list_screen(
    screen: Screen<'_>,
    area: Rect,
    buf: &mut Buffer,
    draw: fn(&State, Theme, Rect, &mut Buffer),
) {
    if screen.state.report.is_none() {
        waiting(&screen, area, buf);
        return;
    }
    draw(screen.state, screen.theme, area, buf);
}

fn waiting(screen: &Screen<'_>, area: Rect, buf: &mut Buffer) {
    let t = screen.theme;
    let s = screen.state;
    let line = match &s.scan {
        Scan::Failed(why) => Line::styled(
            format!(
                "gpu-doctor broke while examining this machine (a bug; please report it): {}",
                clean(why)
            ),
            t.bad(),
        ),
        _ => Line::from(vec![
            Span::styled(spinner(s), t.title()),
            Span::raw(" Examining this machine…"),
        ]),
    };
    Paragraph::new(line)
        .block(pane("Waiting", false, t))
        .render(area, buf);
}
