//! Everything the TUI shows, as plain data: the report and what is derived from it once, which
//! screen is open, selections, filters, the plan being built, live readings. The views draw it
//! and [`super::update::update`] changes it; nothing here does I/O or reads a clock.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::time::Duration;

use crate::check::Outcome;
use crate::check::expr::{Requirement, Subject};
use crate::framework::FrameworkName;
use crate::report::{Gpu, Report, Severity};

use super::services::{PlanChoice, PlanOptions, PlanText, SmokeRow};

/// The screens, in tab order (keys 1–7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tab {
    Overview,
    Gpus,
    Drivers,
    Frameworks,
    Diagnosis,
    Plan,
    Smoke,
}

impl Tab {
    pub const ALL: [Tab; 7] = [
        Tab::Overview,
        Tab::Gpus,
        Tab::Drivers,
        Tab::Frameworks,
        Tab::Diagnosis,
        Tab::Plan,
        Tab::Smoke,
    ];

    #[must_use]
    pub fn index(self) -> usize {
        match self {
            Tab::Overview => 0,
            Tab::Gpus => 1,
            Tab::Drivers => 2,
            Tab::Frameworks => 3,
            Tab::Diagnosis => 4,
            Tab::Plan => 5,
            Tab::Smoke => 6,
        }
    }

    /// The tab at a position, wrapping around both ends.
    #[must_use]
    pub fn at(index: isize) -> Tab {
        let n = Tab::ALL.len().cast_signed();
        Tab::ALL[index.rem_euclid(n).cast_unsigned()]
    }

    #[must_use]
    pub fn next(self) -> Tab {
        Tab::at(self.index().cast_signed() + 1)
    }

    #[must_use]
    pub fn prev(self) -> Tab {
        Tab::at(self.index().cast_signed() - 1)
    }

    /// The full title, and a short one for narrow terminals.
    #[must_use]
    pub fn title(self, wide: bool) -> &'static str {
        match (self, wide) {
            (Tab::Overview, _) => "Overview",
            (Tab::Gpus, _) => "GPUs",
            (Tab::Drivers, true) => "Drivers & CUDA",
            (Tab::Drivers, false) => "Drivers",
            (Tab::Frameworks, _) => "Frameworks",
            (Tab::Diagnosis, _) => "Diagnosis",
            (Tab::Plan, _) => "Plan",
            (Tab::Smoke, true) => "Smoke test",
            (Tab::Smoke, false) => "Smoke",
        }
    }

    /// Whether `/` filters this screen's list.
    #[must_use]
    pub fn filterable(self) -> bool {
        matches!(
            self,
            Tab::Gpus | Tab::Drivers | Tab::Frameworks | Tab::Diagnosis
        )
    }
}

/// What keys go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// The help overlay is open.
    Help,
    /// Typing a filter for the current screen's list.
    Filter,
    /// Typing the file name to save to.
    SavePath,
    /// Asked whether to replace an existing file.
    ConfirmOverwrite,
    /// Pasting or typing an error message to explain (Diagnosis, `e`).
    ExplainInput,
    /// The explanation is shown over the screen.
    Explained,
    /// Asked whether to run the plan on this machine now (Plan, `x`).
    ConfirmRun,
}

/// Which pane of a screen has the arrows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    List,
    /// The detail pane (a finding's explanation, the plan preview), scrolled by the arrows.
    Detail,
}

/// Where the scan is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scan {
    NotStarted,
    Running {
        since: Duration,
    },
    Done {
        took: Duration,
    },
    /// Examining broke; the message is gpu-doctor's own bug, not the machine's problem.
    Failed(String),
}

/// The phases of a scan, each with its own progress on the first screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// NVML in a child process: the first live reading, asked at once beside the scan.
    Nvml,
    /// Everything else the report holds, then the diagnosis (`examine::examine`).
    Examine,
    /// The plan choices valid for this machine.
    Choices,
}

impl Phase {
    pub const ALL: [Phase; 3] = [Phase::Nvml, Phase::Examine, Phase::Choices];

    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Phase::Nvml => "driver through NVML (in a child process)",
            Phase::Examine => {
                "PCI bus, kernel module, nvidia-smi, loader path, toolkits, CUDA libraries, \
                 Python environments and their frameworks; then the diagnosis"
            }
            Phase::Choices => "plan choices for this GPU",
        }
    }
}

/// How far one phase got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Pending,
    Running {
        since: Duration,
    },
    Done {
        took: Duration,
    },
    /// Not done, and why (NVML under `--root`).
    Skipped(String),
}

/// Live GPU readings for the GPUs screen.
#[derive(Debug, Clone, PartialEq)]
pub enum Live {
    /// Not asked yet (readings start when the GPUs screen opens).
    Off,
    /// Asked, no answer yet.
    Waiting,
    /// Readings, one history per GPU in report order.
    On(Vec<History>),
    /// None can be had, and why (`--root`, no NVML).
    Unavailable(String),
}

/// How many readings a sparkline keeps: two minutes at one a second.
pub const HISTORY: usize = 120;

/// The recent readings of one GPU.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct History {
    pub latest: Gpu,
    pub utilization: VecDeque<u64>,
    /// Memory used, percent of total.
    pub memory: VecDeque<u64>,
    pub temperature: VecDeque<u64>,
    pub power: VecDeque<u64>,
}

impl History {
    /// Adds a reading; a value the driver did not give is left out rather than drawn as zero.
    pub fn push(&mut self, gpu: Gpu) {
        fn add(series: &mut VecDeque<u64>, value: Option<u64>) {
            if let Some(v) = value {
                if series.len() == HISTORY {
                    series.pop_front();
                }
                series.push_back(v);
            }
        }
        add(&mut self.utilization, gpu.utilization_pct.map(u64::from));
        let memory = match (gpu.memory_used_mib, gpu.memory_total_mib) {
            (Some(used), Some(total)) if total > 0 => Some(used.saturating_mul(100) / total),
            _ => None,
        };
        add(&mut self.memory, memory);
        add(&mut self.temperature, gpu.temperature_c.map(u64::from));
        add(
            &mut self.power,
            gpu.power_draw_w
                .filter(|w| w.is_finite() && *w >= 0.0)
                .map(|w| w.round() as u64),
        );
        self.latest = gpu;
    }
}

/// Per-screen list position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cursor {
    pub selected: usize,
    /// First line shown in the detail pane.
    pub scroll: u16,
    pub filter: String,
}

/// A plan screen field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanField {
    Via,
    Cuda,
    Framework,
}

impl PlanField {
    pub const ALL: [PlanField; 3] = [PlanField::Via, PlanField::Cuda, PlanField::Framework];

    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            PlanField::Via => "Install via",
            PlanField::Cuda => "Target CUDA",
            PlanField::Framework => "Framework",
        }
    }
}

/// The plan script as far as it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Script {
    /// Nothing asked yet (no report).
    None,
    Building,
    Ready(PlanText),
    /// The planner would not write one; its reason.
    Refused(String),
}

/// The Plan screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanState {
    pub options: PlanOptions,
    /// Index into each field's values; 0 is "auto" (or "none" for the framework).
    pub picks: [usize; 3],
    pub script: Script,
    /// The plan run from this screen, while it runs and after it ended (until a choice
    /// changes or Esc closes it).
    pub run: Option<super::run::PlanRun>,
    /// Where a run is logged (appended to): `plan --execute`'s default, in the folder the
    /// app was started in.
    pub log: PathBuf,
}

impl Default for PlanState {
    fn default() -> PlanState {
        PlanState {
            options: PlanOptions::default(),
            picks: [0; 3],
            script: Script::None,
            run: None,
            log: PathBuf::from(crate::plan::execute::DEFAULT_LOG),
        }
    }
}

impl PlanState {
    /// The values a field offers, the first being the planner's own choice.
    #[must_use]
    pub fn values(&self, field: PlanField) -> Vec<String> {
        let mut values = vec![
            match field {
                PlanField::Framework => "none",
                _ => "auto",
            }
            .to_string(),
        ];
        match field {
            PlanField::Via => values.extend(self.options.vias.iter().map(|v| v.as_str().into())),
            PlanField::Cuda => values.extend(self.options.cudas.iter().cloned()),
            PlanField::Framework => values.extend(self.options.frameworks.iter().cloned()),
        }
        values
    }

    /// The choice the picks stand for.
    #[must_use]
    pub fn choice(&self) -> PlanChoice {
        let pick = |field: PlanField| self.picks[field as usize].checked_sub(1);
        PlanChoice {
            via: pick(PlanField::Via).and_then(|i| self.options.vias.get(i).copied()),
            cuda: pick(PlanField::Cuda).and_then(|i| self.options.cudas.get(i).cloned()),
            framework: pick(PlanField::Framework)
                .and_then(|i| self.options.frameworks.get(i).cloned()),
        }
    }

    /// Picks a field's value by name (tests and a future command line).
    #[cfg(test)]
    pub fn pick(&mut self, field: PlanField, value: &str) -> bool {
        match self.values(field).iter().position(|v| v == value) {
            Some(i) => {
                self.picks[field as usize] = i;
                true
            }
            None => false,
        }
    }

    /// The via a choice names, for labels.
    #[must_use]
    #[cfg(test)]
    pub fn via(&self) -> Option<super::services::Via> {
        self.choice().via
    }
}

/// The Smoke test screen.
#[derive(Debug, Clone, PartialEq)]
pub enum Smoke {
    Idle,
    Running { step: String, done: u32, total: u32 },
    Done(Vec<SmokeRow>),
    Failed(String),
    Unavailable(String),
}

/// A file waiting to be saved, kept while the user is asked for a name or to confirm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSave {
    /// "plan" or "report", for messages.
    pub what: &'static str,
    pub contents: String,
    pub executable: bool,
    /// Files that go next to it (file name, contents).
    pub companions: Vec<(String, String)>,
    /// Set once a name was given (and found taken).
    pub path: Option<PathBuf>,
}

impl PendingSave {
    /// The save of this file under `path`.
    #[must_use]
    pub fn request(&self, path: PathBuf, overwrite: bool) -> super::msg::SaveRequest {
        super::msg::SaveRequest {
            path,
            contents: self.contents.clone(),
            executable: self.executable,
            companions: self.companions.clone(),
            overwrite,
        }
    }
}

/// A line for the footer until the next key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub error: bool,
    pub text: String,
}

/// Whether each framework can use this machine's GPU, computed once per report with the same
/// rule as `gpu-doctor check -r torch.cuda` so the TUI and CI never disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameworkVerdict {
    pub env: String,
    pub name: String,
    pub usable: bool,
    /// `check`'s sentence: why, or what it runs with.
    pub message: String,
}

/// What the screens need from the report beyond its fields, computed once when it arrives.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Derived {
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    pub frameworks: Vec<FrameworkVerdict>,
}

impl Derived {
    #[must_use]
    pub fn new(report: &Report) -> Derived {
        let count = |s: Severity| report.findings_of(s).count();
        let mut frameworks = Vec::new();
        for env in &report.python_envs {
            for fw in &env.frameworks {
                let Some(name) = FrameworkName::from_report(&fw.name) else {
                    continue;
                };
                let requirement = Requirement {
                    text: format!("{}.gpu", name.as_str()),
                    subject: Subject::FrameworkGpu(name),
                    comparison: None,
                };
                let Outcome { met, message, .. } =
                    crate::check::evaluate(report, &requirement, Some(&env.path));
                frameworks.push(FrameworkVerdict {
                    env: env.path.clone(),
                    name: fw.name.clone(),
                    usable: met,
                    message,
                });
            }
        }
        Derived {
            errors: count(Severity::Error),
            warnings: count(Severity::Warning),
            infos: count(Severity::Info),
            frameworks,
        }
    }

    /// The verdict for one framework in one environment.
    #[must_use]
    pub fn framework(&self, env: &str, name: &str) -> Option<&FrameworkVerdict> {
        self.frameworks
            .iter()
            .find(|v| v.env == env && v.name == name)
    }
}

/// The whole TUI state.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    pub tab: Tab,
    pub mode: Mode,
    pub focus: Focus,
    /// The runtime's clock at the last tick.
    pub now: Duration,
    /// Terminal columns and rows.
    pub size: (u16, u16),
    pub scan: Scan,
    /// Each phase of the current scan, in [`Phase::ALL`] order.
    pub phases: [Step; 3],
    pub report: Option<Report>,
    pub derived: Derived,
    pub live: Live,
    /// A live reading was asked for and has not come back.
    pub sampling: bool,
    pub last_sample: Option<Duration>,
    /// The clock at the last key or wheel event (as of the last tick).
    pub last_input: Duration,
    pub cursors: [Cursor; 7],
    pub help_scroll: u16,
    /// The file name being typed.
    pub input: super::edit::LineEdit,
    pub pending_save: Option<PendingSave>,
    /// The error text being pasted into the explain box.
    pub explain_text: String,
    /// The answer for the last text explained; `None` while it is worked out.
    pub explanation: Option<crate::report::explain::Explain>,
    /// First line of the explanation shown.
    pub explain_scroll: u16,
    pub plan: PlanState,
    pub smoke: Smoke,
    pub status: Option<Status>,
    pub quit: bool,
    /// Something visible changed since the last frame.
    pub dirty: bool,
    /// Spinner frame.
    pub ticks: u64,
}

impl Default for State {
    fn default() -> State {
        State {
            tab: Tab::Overview,
            mode: Mode::Normal,
            focus: Focus::List,
            now: Duration::ZERO,
            size: (80, 24),
            scan: Scan::NotStarted,
            phases: [Step::Pending, Step::Pending, Step::Pending],
            report: None,
            derived: Derived::default(),
            live: Live::Off,
            sampling: false,
            last_sample: None,
            last_input: Duration::ZERO,
            cursors: Default::default(),
            help_scroll: 0,
            input: super::edit::LineEdit::default(),
            pending_save: None,
            explain_text: String::new(),
            explanation: None,
            explain_scroll: 0,
            plan: PlanState::default(),
            smoke: Smoke::Idle,
            status: None,
            quit: false,
            dirty: true,
            ticks: 0,
        }
    }
}

impl State {
    /// Why the smoke test has nothing to run on, once the scan has found no NVIDIA GPU (its
    /// kernels go through NVIDIA's CUDA driver API); `None` while it could run. The Smoke
    /// screen says this instead of offering Enter, and Enter does nothing there.
    #[must_use]
    pub fn smoke_unavailable(&self) -> Option<String> {
        let report = self.report.as_ref()?;
        if report.nvidia_gpus().next().is_some()
            || report
                .pci_devices
                .iter()
                .any(|d| d.vendor_id == "0x10de" && !d.nvswitch)
        {
            return None;
        }
        Some(crate::smoke::amd_only(report).unwrap_or_else(|| {
            "No NVIDIA GPU on this machine: the smoke test has nothing to run on.".to_string()
        }))
    }

    #[must_use]
    pub fn new(size: (u16, u16)) -> State {
        State {
            size,
            ..State::default()
        }
    }

    /// How far a phase of the scan got.
    #[must_use]
    pub fn phase(&self, phase: Phase) -> &Step {
        &self.phases[phase as usize]
    }

    /// The current screen's cursor.
    #[must_use]
    pub fn cursor(&self) -> &Cursor {
        &self.cursors[self.tab.index()]
    }

    pub fn cursor_mut(&mut self) -> &mut Cursor {
        &mut self.cursors[self.tab.index()]
    }

    /// Whether something is running that a spinner should show.
    #[must_use]
    pub fn busy(&self) -> bool {
        matches!(self.scan, Scan::Running { .. })
            || matches!(self.smoke, Smoke::Running { .. })
            || (self.mode == Mode::Explained && self.explanation.is_none())
            || matches!(self.plan.script, Script::Building)
            || self
                .plan
                .run
                .as_ref()
                .is_some_and(super::run::PlanRun::active)
            || (self.tab == Tab::Gpus && self.live == Live::Waiting)
    }

    /// Whether live readings are wanted now: only while their screen is open, so an idle app
    /// on another screen starts no child processes at all.
    #[must_use]
    pub fn wants_live(&self) -> bool {
        self.tab == Tab::Gpus
            && self.report.is_some()
            && matches!(self.live, Live::Off | Live::Waiting | Live::On(_))
    }

    /// How often live readings are due: every second while someone uses the app, every few
    /// seconds once nobody has touched it for a minute.
    #[must_use]
    pub fn sample_every(&self) -> Duration {
        if self.now.saturating_sub(self.last_input) >= super::services::IDLE_AFTER {
            super::services::IDLE_SAMPLE_EVERY
        } else {
            super::services::SAMPLE_EVERY
        }
    }

    /// How long the runtime may block before it must send a tick: a spinner needs 10 frames a
    /// second, live readings one a second, and otherwise nothing, so an idle app sleeps.
    #[must_use]
    pub fn tick_every(&self) -> Option<Duration> {
        if self.busy() {
            Some(Duration::from_millis(100))
        } else if self.wants_live() {
            Some(self.sample_every())
        } else {
            None
        }
    }
}
