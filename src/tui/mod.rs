//! The interactive terminal app (`gpu-doctor` on a terminal, or `gpu-doctor tui`): seven
//! screens over the one [`crate::report::Report`], a plan builder and the smoke test.
//!
//! Built as state + update + view (The Elm Architecture, as gitui and bottom are):
//! [`state`] is plain data, [`update::update`] is a pure `(&mut State, Msg) -> Vec<Cmd>`,
//! [`view`] draws a frame from the state, and [`keys`] is the one keymap that both handles keys
//! and produces the footer hints and the help. [`App`] is the runtime in between: it feeds
//! messages to `update` and carries out the commands, running slow work (the scan, live GPU
//! readings, the smoke test) on threads that answer over a channel. The only door to the
//! machine is [`services::Services`], which goes through [`crate::examine`]; nothing here names a
//! probe.
//!
//! The loop blocks on that channel. It wakes ten times a second only while a spinner is
//! showing and once a second only while the GPUs screen shows live readings, and it redraws
//! only when something changed, so an idle app costs no CPU.

pub mod edit;
pub mod keys;
pub mod model;
pub mod msg;
pub mod run;
pub mod services;
pub mod state;
mod terminal;
pub mod theme;
pub mod update;
pub mod view;

use std::collections::VecDeque;
use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers, MouseEventKind};

use crate::host::Host;
use crate::manifest::SetInUse;
use crate::report::explain::Explain;
pub use msg::{Cmd, Msg, SaveError, SaveRequest};
pub use services::{AppServices, Services};
pub use state::State;
use state::{Phase, Step};
pub use theme::Theme;
pub use view::Screen;

/// Why the app could not run or ended badly.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error(
        "the interactive app needs a terminal on stdin and stdout; \
         use `gpu-doctor doctor` (text) or `gpu-doctor doctor --json` instead"
    )]
    NoTerminal,
    #[error("the terminal failed: {0}")]
    Terminal(io::Error),
    #[error(
        "the interactive app crashed; this is a bug in gpu-doctor, please \
         report it with the message above (`gpu-doctor doctor` still works)"
    )]
    Crashed,
}

/// Opens the TUI on this terminal; `set` is the run's manifest set, `color` what `--color`,
/// `NO_COLOR` and the config file decided ([`crate::present::paint::enabled`]).
///
/// # Errors
/// No terminal, a terminal that failed, or a crash (after the terminal was given back).
pub fn run(host: &Host, set: Arc<SetInUse>, color: bool) -> Result<(), TuiError> {
    if !(io::stdin().is_terminal() && io::stdout().is_terminal()) {
        return Err(TuiError::NoTerminal);
    }
    let theme = Theme::new(color);
    let services: Arc<dyn Services> = Arc::new(AppServices::new(host.clone(), set));
    // A panic has been printed by the hook, after the terminal was given back; what is left
    // is to say whose fault it is.
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run_on_terminal(services, theme)
    })) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(TuiError::Terminal(e)),
        Err(_) => Err(TuiError::Crashed),
    }
}

fn run_on_terminal(services: Arc<dyn Services>, theme: Theme) -> io::Result<()> {
    let mut guard = terminal::Guard::enter()?;
    let size = guard.terminal.size()?;
    let mut app = App::new(services, theme, (size.width, size.height), Clock::real());
    let gate = Arc::new(InputGate::default());
    spawn_input(app.sender(), Arc::clone(&gate))?;
    // The scan starts on its thread first, so the first frame already shows it running.
    app.dispatch(Msg::Start);
    loop {
        if app.state.dirty {
            app.state.dirty = false;
            guard
                .terminal
                .draw(|frame| frame.render_widget(&app.screen(), frame.area()))?;
        }
        if app.state.quit {
            return Ok(());
        }
        if std::mem::take(&mut app.authorize_on_terminal) {
            // sudo reads the password from the terminal: the input thread must not.
            gate.pause();
            let services = Arc::clone(&app.services);
            let answer = guard.suspended(|| {
                crate::term::note(
                    "the plan has steps that run as root; sudo asks for your password once, \
                     then the plan runs on the screen.",
                );
                services.authorize()
            });
            gate.resume();
            app.dispatch(Msg::Authorized(answer?));
            continue;
        }
        let msg = app.next_msg();
        app.dispatch(msg);
    }
}

/// Lets the runtime take reading the terminal away from the input thread for a while (sudo
/// asks for a password there), and hand it back.
#[derive(Debug, Default)]
struct InputGate {
    paused: std::sync::atomic::AtomicBool,
    /// The input thread saw the pause and is neither polling nor reading.
    parked: std::sync::atomic::AtomicBool,
}

impl InputGate {
    /// Waits until the input thread has stopped reading (at most a few of its polls).
    fn pause(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        self.parked.store(false, SeqCst);
        self.paused.store(true, SeqCst);
        let deadline = Instant::now() + INPUT_POLL * 8;
        while !self.parked.load(SeqCst) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn resume(&self) {
        self.paused
            .store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// How long the input thread waits for input before it looks whether it must let go of the
/// terminal. A poll that times out costs a system call: four a second, nothing measurable.
const INPUT_POLL: Duration = Duration::from_millis(250);

/// Reads the terminal on its own thread and forwards what matters. It waits in `poll`, so it
/// costs nothing while the user does nothing beyond a wake-up per [`INPUT_POLL`] (to let go of
/// the terminal when the [`InputGate`] asks); mouse events other than the wheel are dropped
/// here so they never wake the UI.
fn spawn_input(tx: Sender<Msg>, gate: Arc<InputGate>) -> io::Result<()> {
    use std::sync::atomic::Ordering::SeqCst;
    std::thread::Builder::new()
        .name("tui-input".to_string())
        .spawn(move || {
            loop {
                if gate.paused.load(SeqCst) {
                    gate.parked.store(true, SeqCst);
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                }
                match crossterm::event::poll(INPUT_POLL) {
                    Ok(false) => continue,
                    Ok(true) => {}
                    Err(_) => {
                        let _ = tx.send(Msg::InputClosed);
                        return;
                    }
                }
                let msg = match crossterm::event::read() {
                    Ok(Event::Key(key)) => Msg::Key(key),
                    Ok(Event::Paste(text)) => Msg::Paste(text),
                    Ok(Event::Mouse(mouse))
                        if matches!(
                            mouse.kind,
                            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown
                        ) =>
                    {
                        Msg::Mouse(mouse)
                    }
                    Ok(Event::Resize(columns, rows)) => Msg::Resize(columns, rows),
                    Ok(_) => continue,
                    Err(_) => Msg::InputClosed,
                };
                let closed = matches!(msg, Msg::InputClosed);
                if tx.send(msg).is_err() || closed {
                    return;
                }
            }
        })
        .map(|_| ())
}

/// Time as the app sees it: real, or frozen at zero so tests draw the same frame every run.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    Real(Instant),
    Frozen,
}

impl Clock {
    #[must_use]
    pub fn real() -> Clock {
        Clock::Real(Instant::now())
    }

    fn now(self) -> Duration {
        match self {
            Clock::Real(start) => start.elapsed(),
            Clock::Frozen => Duration::ZERO,
        }
    }
}

/// The runtime: the state, and everything needed to act on the commands `update` returns.
pub struct App {
    pub state: State,
    theme: Theme,
    services: Arc<dyn Services>,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    clock: Clock,
    /// Work runs on the calling thread and its answer is handled before `dispatch` returns:
    /// what tests use (with [`Clock::Frozen`]) to be deterministic.
    inline: bool,
    last_tick: Duration,
    /// sudo must ask on the terminal before the plan runs: the terminal loop gives it back.
    authorize_on_terminal: bool,
}

impl App {
    /// An app whose slow work runs on threads (the real terminal).
    #[must_use]
    pub fn new(services: Arc<dyn Services>, theme: Theme, size: (u16, u16), clock: Clock) -> App {
        let (tx, rx) = mpsc::channel();
        App {
            state: State::new(size),
            theme,
            services,
            tx,
            rx,
            clock,
            inline: false,
            last_tick: Duration::ZERO,
            authorize_on_terminal: false,
        }
    }

    /// An app that does all work on the calling thread with a frozen clock: each `dispatch`
    /// returns with every answer handled, so tests read the state and the screen right after.
    #[must_use]
    pub fn inline(services: Arc<dyn Services>, theme: Theme, size: (u16, u16)) -> App {
        App {
            inline: true,
            ..App::new(services, theme, size, Clock::Frozen)
        }
    }

    /// Where background work and the input thread send their messages.
    #[must_use]
    pub fn sender(&self) -> Sender<Msg> {
        self.tx.clone()
    }

    /// What to draw.
    #[must_use]
    pub fn screen(&self) -> Screen<'_> {
        Screen {
            state: &self.state,
            theme: self.theme,
        }
    }

    /// Handles a message and every message already waiting (answers of inline work, keys
    /// typed while a frame was drawn), so one redraw covers them all.
    pub fn dispatch(&mut self, msg: Msg) {
        let mut queue = VecDeque::from([msg]);
        while let Some(msg) = queue.pop_front() {
            for cmd in update::update(&mut self.state, msg) {
                self.execute(cmd);
            }
            queue.extend(self.rx.try_iter());
        }
        if !self.state.wants_live() || self.state.quit {
            self.services.stop_live();
        }
        if self.state.quit
            && self
                .state
                .plan
                .run
                .as_ref()
                .is_some_and(run::PlanRun::active)
        {
            self.services.abandon_plan();
        }
    }

    /// A key press, as the terminal would send it (tests).
    pub fn press(&mut self, code: KeyCode) {
        self.press_with(code, KeyModifiers::NONE);
    }

    /// A key press with modifiers (tests).
    pub fn press_with(&mut self, code: KeyCode, modifiers: KeyModifiers) {
        self.dispatch(Msg::Key(KeyEvent::new(code, modifiers)));
    }

    /// Types text, one key per character (tests).
    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            self.press(KeyCode::Char(c));
        }
    }

    /// Waits for the next message: blocking for good when nothing needs a tick, else until
    /// the next tick is due.
    fn next_msg(&mut self) -> Msg {
        let Some(every) = self.state.tick_every() else {
            return self.rx.recv().unwrap_or(Msg::InputClosed);
        };
        let now = self.clock.now();
        let wait = (self.last_tick + every).saturating_sub(now);
        match self.rx.recv_timeout(wait) {
            Ok(msg) => msg,
            Err(RecvTimeoutError::Timeout) => {
                let now = self.clock.now();
                self.last_tick = now;
                Msg::Tick(now)
            }
            Err(RecvTimeoutError::Disconnected) => Msg::InputClosed,
        }
    }

    fn execute(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Scan => {
                let clock = self.clock;
                let tx = self.tx.clone();
                self.background(
                    move |services| {
                        let phase = |phase, step| {
                            let _ = tx.send(Msg::Phase(phase, step));
                        };
                        let start = clock.now();
                        phase(Phase::Examine, Step::Running { since: start });
                        let examined = services.examine();
                        phase(
                            Phase::Examine,
                            Step::Done {
                                took: clock.now().saturating_sub(start),
                            },
                        );
                        Some(match examined {
                            Ok(report) => {
                                phase(Phase::Choices, Step::Running { since: clock.now() });
                                let options = services.plan_options(&report);
                                Msg::Scanned {
                                    report: Box::new(report),
                                    options,
                                    took: clock.now().saturating_sub(start),
                                }
                            }
                            Err(e) => Msg::ScanFailed(e),
                        })
                    },
                    Msg::ScanFailed,
                );
            }
            Cmd::Sample => {
                let clock = self.clock;
                self.background(
                    move |services| {
                        let start = clock.now();
                        let result = services.sample();
                        Some(Msg::Sample(result, clock.now().saturating_sub(start)))
                    },
                    |e| Msg::Sample(Err(format!("the reading broke: {e}")), Duration::ZERO),
                );
            }
            Cmd::BuildPlan(choice) => {
                // Planning is a pure function of the report and fast: no thread needed.
                let result = match &self.state.report {
                    Some(report) => guarded(|| self.services.plan(report, &choice))
                        .unwrap_or_else(|e| Err(format!("the planner broke: {e}"))),
                    None => Err("no report yet".to_string()),
                };
                let _ = self.tx.send(Msg::PlanBuilt(result));
            }
            Cmd::Explain(text) => {
                let Some(report) = self.state.report.clone() else {
                    return;
                };
                self.background(
                    move |services| {
                        Some(Msg::Explained(Box::new(services.explain(&report, &text))))
                    },
                    |e| {
                        Msg::Explained(Box::new(Explain {
                            text: format!("explaining broke (a bug in gpu-doctor): {e}"),
                            ..Explain::default()
                        }))
                    },
                );
            }
            Cmd::Save(request) => {
                let _ = self.tx.send(Msg::Saved(save(&request)));
            }
            Cmd::Authorize | Cmd::RunPlan(..) | Cmd::StopPlan(_) => self.execute_run(cmd),
            Cmd::Smoke => {
                let report = self.state.report.clone();
                let tx = self.tx.clone();
                self.background(
                    move |services| {
                        // The answer goes out event by event, progress first, outcome last.
                        services.smoke(report.as_ref(), &mut |event| {
                            let _ = tx.send(Msg::Smoke(event));
                        });
                        None
                    },
                    |e| Msg::Smoke(services::SmokeEvent::Failed(format!("it broke: {e}"))),
                );
            }
        }
    }

    /// The commands of a plan run from the Plan screen.
    fn execute_run(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Authorize => {
                if !self.services.sudo_asks() {
                    let _ = self.tx.send(Msg::Authorized(Ok(())));
                } else if self.inline {
                    let _ = self.tx.send(Msg::Authorized(self.services.authorize()));
                } else {
                    self.authorize_on_terminal = true;
                }
            }
            Cmd::RunPlan(plan, log) => {
                let tx = self.tx.clone();
                self.background(
                    move |services| {
                        services.run_plan(&plan, &log, &mut |event| {
                            let _ = tx.send(Msg::PlanRun(event));
                        });
                        None
                    },
                    |e| {
                        Msg::PlanRun(services::RunEvent::Ended(services::Outcome::Error(
                            format!("the run broke (a bug in gpu-doctor): {e}"),
                        )))
                    },
                );
            }
            Cmd::StopPlan(path) => {
                // The script looks for this file before each step.
                if let Err(e) = std::fs::File::create(&path) {
                    self.state.status = Some(state::Status {
                        error: true,
                        text: format!("Could not ask the plan to stop: {e}"),
                    });
                }
            }
            _ => {}
        }
    }

    /// Runs `job` on a thread (or inline) and sends the message it returns; a panic becomes
    /// `on_panic`'s message instead of a silent hang.
    fn background(
        &self,
        job: impl FnOnce(&dyn Services) -> Option<Msg> + Send + 'static,
        on_panic: impl FnOnce(String) -> Msg + Send + 'static,
    ) {
        let services = Arc::clone(&self.services);
        let tx = self.tx.clone();
        let work = move || {
            let msg = guarded(|| job(services.as_ref())).unwrap_or_else(|e| Some(on_panic(e)));
            if let Some(msg) = msg {
                let _ = tx.send(msg);
            }
        };
        if self.inline {
            work();
        } else if let Err(e) = std::thread::Builder::new()
            .name("tui-worker".to_string())
            .spawn(work)
        {
            let _ = self
                .tx
                .send(Msg::ScanFailed(format!("cannot start a thread: {e}")));
        }
    }
}

/// Runs `f`, turning a panic into its message.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
            .unwrap_or_else(|| "unknown panic".to_string())
    })
}

/// Writes the files of a save with the plan writer's own `-o` code: all or none, each written
/// to a temporary file and linked into place, so an existing file is never replaced unless
/// asked and never left half-written.
#[expect(
    clippy::disallowed_methods,
    reason = "whether a file the user saves to exists, on the real filesystem where it is written (as outfile checks)"
)]
fn save(request: &msg::SaveRequest) -> Result<Vec<PathBuf>, SaveError> {
    let folder = request.path.parent().unwrap_or_else(|| Path::new(""));
    let mut files = vec![crate::outfile::OutFile {
        path: request.path.clone(),
        content: request.contents.clone(),
        mode: if request.executable { 0o755 } else { 0o644 },
    }];
    files.extend(
        request
            .companions
            .iter()
            .map(|(name, content)| crate::outfile::OutFile {
                path: folder.join(name),
                content: content.clone(),
                mode: 0o644,
            }),
    );
    if !request.overwrite
        && let Some(taken) = files
            .iter()
            .find(|f| std::fs::symlink_metadata(&f.path).is_ok())
    {
        return Err(SaveError::Exists(taken.path.clone()));
    }
    crate::outfile::write_all(&files, request.overwrite).map_err(SaveError::Failed)?;
    Ok(files
        .into_iter()
        .map(|f| std::path::absolute(&f.path).unwrap_or(f.path))
        .collect())
}
