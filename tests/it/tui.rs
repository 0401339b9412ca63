//! The TUI: every screen drawn from fixture machines into a `TestBackend` and compared with
//! insta snapshots, severity colours asserted on the buffer (its text drops them), the update
//! logic driven by keys (navigation, filters, the plan, saving), and one run of the real binary
//! in tmux to prove a person at a terminal sees the same and gets the terminal back.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyModifiers};
use gpu_doctor::host::{Env, Host};
use gpu_doctor::report::explain::Explain;
use gpu_doctor::report::{Gpu, Report};
use gpu_doctor::tui::run::StepState;
use gpu_doctor::tui::services::{
    AppServices, Outcome, PlanChoice, PlanOptions, PlanStep, PlanText, RunEvent, Services,
    SmokeEvent, SmokeRow, Via,
};
use gpu_doctor::tui::state::{Live, Mode, Phase, PlanField, Scan, Script, Smoke, Step, Tab};
use gpu_doctor::tui::{App, Cmd, Msg, Theme, model};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

use crate::support::{TIMEOUT_SECS, fixture_dir, fixture_env};

/// The fixture machines the screens are drawn from: a healthy H200, a GPU without a driver,
/// one with an error and a warning, and two frameworks fighting in one environment.
const H200: &str = "h200";
const NO_DRIVER: &str = "gpu-no-driver";
const TWO_FINDINGS: &str = "forward-compat-on-geforce";
/// One warning and nothing more severe: Triton's ptxas too old for a GB10.
const ONE_WARNING: &str = "held-out-dgx-spark-vllm-nightly-image-triton-350-ptxas-128";
const WHEELS: &str = "torch-and-tf-one-venv";

/// The real services on a fixture, made deterministic for snapshots: the report's root is the
/// repository-relative path (not this checkout's), probe timings are zero. Planning and live
/// readings can be replaced by canned ones.
struct Fixture {
    name: &'static str,
    real: AppServices,
    script: Option<PlanText>,
    readings: Option<Vec<Gpu>>,
    smoke: Option<SmokeEvent>,
    /// sudo's answer, when the fake asks for one.
    sudo: Option<Result<(), String>>,
}

impl Fixture {
    fn new(name: &'static str) -> Fixture {
        let dir = fixture_dir(name);
        let timeout = Duration::from_secs(TIMEOUT_SECS.parse().expect("timeout"));
        let host = Host::rooted(
            dir.join("root"),
            Env::from_pairs(fixture_env(name)),
            timeout,
        );
        Fixture {
            name,
            real: AppServices::new(host.clone(), Arc::new(gpu_doctor::update::set_in_use(host))),
            script: None,
            readings: None,
            smoke: None,
            sudo: None,
        }
    }

    /// A planner that writes this script whatever is chosen (the planner's own output is
    /// `plan`'s tests' business; here it is the screen's).
    fn with_script(mut self, script: &str) -> Fixture {
        let step = |id: &str, title: &str, root: bool| PlanStep {
            id: id.to_string(),
            title: title.to_string(),
            root,
        };
        self.script = Some(PlanText {
            summary: vec!["via the test planner".to_string()],
            script: script.to_string(),
            steps: vec![
                step("cuda-keyring", "Add NVIDIA's CUDA repository", true),
                step("driver", "Install the 580 driver", true),
                step("venv", "Make the virtual environment", false),
            ],
            ..PlanText::default()
        });
        self
    }

    /// sudo asks, and answers this.
    fn with_sudo(mut self, answer: Result<(), String>) -> Fixture {
        self.sudo = Some(answer);
        self
    }

    fn with_readings(mut self, gpus: Vec<Gpu>) -> Fixture {
        self.readings = Some(gpus);
        self
    }

    fn with_smoke(mut self, outcome: SmokeEvent) -> Fixture {
        self.smoke = Some(outcome);
        self
    }
}

impl Services for Fixture {
    fn examine(&self) -> Result<Report, String> {
        let mut report = self.real.examine()?;
        report.tool.root = Some(format!("tests/fixtures/{}/root", self.name));
        for probe in &mut report.probes {
            probe.duration_ms = 0;
        }
        Ok(report)
    }

    fn sample(&self) -> Result<Vec<Gpu>, String> {
        match &self.readings {
            Some(gpus) => Ok(gpus.clone()),
            None => self.real.sample(),
        }
    }

    fn plan_options(&self, report: &Report) -> PlanOptions {
        self.real.plan_options(report)
    }

    fn explain(&self, report: &Report, text: &str) -> Explain {
        self.real.explain(report, text)
    }

    fn plan(&self, report: &Report, choice: &PlanChoice) -> Result<PlanText, String> {
        match &self.script {
            Some(script) => Ok(PlanText {
                summary: script.summary.clone(),
                script: format!(
                    "{}# chosen: {}\n",
                    script.script,
                    gpu_doctor::tui::services::describe(choice)
                ),
                ..script.clone()
            }),
            None => self.real.plan(report, choice),
        }
    }

    fn sudo_asks(&self) -> bool {
        self.sudo.is_some()
    }

    fn authorize(&self) -> Result<(), String> {
        self.sudo.clone().unwrap_or(Ok(()))
    }

    /// The script starts and says where its stop file is; the test sends the rest.
    fn run_plan(&self, _: &PlanText, _: &Path, on_event: &mut dyn FnMut(RunEvent)) {
        on_event(RunEvent::Started {
            stop: stop_file(),
            group: 0,
        });
    }

    fn smoke(&self, report: Option<&Report>, progress: &mut dyn FnMut(SmokeEvent)) {
        match &self.smoke {
            Some(outcome) => {
                progress(SmokeEvent::Progress {
                    step: "matmul".to_string(),
                    done: 1,
                    total: 2,
                });
                progress(outcome.clone());
            }
            None => self.real.smoke(report, progress),
        }
    }
}

/// Where the fake run's stop file goes: one per test process, in the temporary folder.
fn stop_file() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("gpu-doctor-tui-stop-{}", std::process::id()))
}

const SCRIPT: &str = "#!/usr/bin/env bash\n# a plan\nset -euo pipefail\necho install\n";

/// An app on a fixture, scanned, at a terminal size.
fn app(services: Fixture, width: u16, height: u16) -> App {
    app_with(services, width, height, Theme::new(true))
}

fn app_with(services: Fixture, width: u16, height: u16, theme: Theme) -> App {
    let mut app = App::inline(Arc::new(services), theme, (width, height));
    app.dispatch(Msg::Start);
    assert!(
        matches!(app.state.scan, Scan::Done { .. }),
        "{:?}",
        app.state.scan
    );
    app
}

fn draw(app: &App) -> Terminal<TestBackend> {
    let (width, height) = app.state.size;
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal
        .draw(|frame| frame.render_widget(&app.screen(), frame.area()))
        .expect("draw");
    terminal
}

/// The screen as text, as a snapshot holds it.
fn text(app: &App) -> String {
    draw(app).backend().to_string()
}

fn buffer(app: &App) -> Buffer {
    draw(app).backend().buffer().clone()
}

/// The buffer's rows as plain strings.
fn rows(buffer: &Buffer) -> Vec<String> {
    let area = buffer.area;
    (0..area.height)
        .map(|y| {
            (0..area.width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect()
        })
        .collect()
}

/// Where a text starts on screen (column, row), counting cells.
fn find(buffer: &Buffer, needle: &str) -> Option<(u16, u16)> {
    let area = buffer.area;
    let first = needle.chars().next()?;
    for y in 0..area.height {
        for x in 0..area.width {
            let matches = needle.chars().enumerate().all(|(i, c)| {
                let x = x + u16::try_from(i).unwrap_or(u16::MAX);
                x < area.width && buffer[(x, y)].symbol().starts_with(c)
            });
            if buffer[(x, y)].symbol().starts_with(first) && matches {
                return Some((x, y));
            }
        }
    }
    None
}

fn go(app: &mut App, tab: Tab) {
    app.press(KeyCode::Char(char::from(
        b'1' + u8::try_from(tab.index()).unwrap_or(0),
    )));
    assert_eq!(app.state.tab, tab);
}

/// Every screen of a machine at one size.
fn snapshot_screens(name: &'static str, tabs: &[Tab], width: u16, height: u16) {
    let mut app = app(Fixture::new(name).with_script(SCRIPT), width, height);
    for &tab in tabs {
        go(&mut app, tab);
        let title = format!("{name}_{}_{width}x{height}", tab.index() + 1);
        insta::assert_snapshot!(title, text(&app));
    }
}

#[test]
fn h200_every_screen_at_80x24() {
    snapshot_screens(H200, &Tab::ALL, 80, 24);
}

#[test]
fn h200_every_screen_at_120x40() {
    snapshot_screens(H200, &Tab::ALL, 120, 40);
}

#[test]
fn h200_every_screen_at_200x60() {
    snapshot_screens(H200, &Tab::ALL, 200, 60);
}

/// At 80×24 the help does not fit: its frame says which lines show and that more follow, and
/// scrolling reaches the last key.
#[test]
fn help_at_80x24_says_there_is_more_and_scrolls_to_it() {
    let mut app = app(Fixture::new(H200), 80, 24);
    app.press(KeyCode::Char('?'));
    let first = text(&app);
    assert!(first.contains("more below"), "{first}");
    insta::assert_snapshot!("help_80x24", first);
    app.press(KeyCode::End);
    let last = text(&app);
    assert!(!last.contains("more below"), "{last}");
    assert!(last.contains("quit"), "{last}");
}

/// A pasted error with a long path, answered at 80×24: the path wraps across lines but keeps
/// every character, with no space put into it.
#[test]
fn explain_at_80x24_wraps_a_long_path_without_breaking_it() {
    let path = "/home/user/.venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so";
    let mut app = app(Fixture::new(TWO_FINDINGS), 80, 24);
    go(&mut app, Tab::Diagnosis);
    app.press(KeyCode::Char('e'));
    app.dispatch(Msg::Paste(format!(
        "OSError: {path}: undefined symbol: cudaGetDriverEntryPointByVersion, \
         CUDA driver version is insufficient for CUDA runtime version\n"
    )));
    insta::assert_snapshot!("explain_input_80x24", text(&app));
    app.press(KeyCode::Enter);
    assert_eq!(app.state.mode, Mode::Explained);
    insta::assert_snapshot!("explain_answer_80x24", text(&app));
}

/// On a short terminal the Overview scrolls to the selected finding instead of leaving the
/// findings below its edge, out of reach.
#[test]
fn overview_scrolls_to_the_selected_finding_on_a_short_terminal() {
    let mut app = app(Fixture::new(TWO_FINDINGS), 80, 12);
    let first = text(&app);
    assert!(first.contains("forward-compat-unsupported"), "{first}");
    app.press(KeyCode::Char('j'));
    let second = text(&app);
    assert!(second.contains("toolkit-newer-than-driver"), "{second}");
}

/// Without an NVIDIA GPU the Smoke screen says there is nothing to test, offers no Enter, and
/// Enter starts nothing.
#[test]
fn smoke_screen_without_a_gpu_says_so_and_offers_no_run() {
    let mut none = app(Fixture::new("no-gpu"), 80, 24);
    go(&mut none, Tab::Smoke);
    let screen = text(&none);
    assert!(screen.contains("No NVIDIA GPU on this machine"), "{screen}");
    assert!(!screen.contains("runs it"), "{screen}");
    let footer = rows(&buffer(&none)).pop().unwrap_or_default();
    assert!(!footer.contains("Enter"), "{footer}");
    none.press(KeyCode::Enter);
    assert!(matches!(none.state.smoke, Smoke::Idle));
    insta::assert_snapshot!("no-gpu_7_80x24", screen);
    // With a GPU, Enter is offered.
    let mut h200 = app(Fixture::new(H200), 80, 24);
    go(&mut h200, Tab::Smoke);
    assert!(text(&h200).contains("Enter runs it."), "{}", text(&h200));
}

#[test]
fn gpu_without_driver_screens() {
    snapshot_screens(
        NO_DRIVER,
        &[Tab::Overview, Tab::Gpus, Tab::Drivers, Tab::Diagnosis],
        80,
        24,
    );
}

#[test]
fn error_and_information_screens() {
    snapshot_screens(
        TWO_FINDINGS,
        &[Tab::Overview, Tab::Drivers, Tab::Diagnosis],
        80,
        24,
    );
    snapshot_screens(TWO_FINDINGS, &[Tab::Overview, Tab::Diagnosis], 120, 40);
}

#[test]
fn frameworks_fighting_in_one_environment() {
    snapshot_screens(WHEELS, &[Tab::Frameworks, Tab::Diagnosis], 80, 24);
    let app = app(Fixture::new(WHEELS), 80, 24);
    let verdicts: Vec<(&str, bool)> = app
        .state
        .derived
        .frameworks
        .iter()
        .map(|v| (v.name.as_str(), v.usable))
        .collect();
    assert_eq!(verdicts, [("tensorflow", false), ("torch", false)]);
}

#[test]
fn the_first_frame_shows_the_scan_running() {
    // Nothing answered yet: the runtime has only sent Start's commands off.
    let mut state = gpu_doctor::tui::State::new((80, 24));
    let cmds = gpu_doctor::tui::update::update(&mut state, Msg::Start);
    assert_eq!(cmds, [Cmd::Scan, Cmd::Sample]);
    assert_eq!(
        state.phase(Phase::Nvml),
        &Step::Running {
            since: Duration::ZERO
        }
    );
    gpu_doctor::tui::update::update(
        &mut state,
        Msg::Phase(
            Phase::Examine,
            Step::Running {
                since: Duration::ZERO,
            },
        ),
    );
    gpu_doctor::tui::update::update(
        &mut state,
        Msg::Sample(
            Err("examined with --root: NVML is not loaded".to_string()),
            Duration::ZERO,
        ),
    );
    gpu_doctor::tui::update::update(&mut state, Msg::Tick(Duration::from_millis(300)));
    let screen = gpu_doctor::tui::Screen {
        state: &state,
        theme: Theme::new(false),
    };
    let mut terminal = Terminal::new(TestBackend::new(80, 24)).expect("terminal");
    terminal
        .draw(|f| f.render_widget(&screen, f.area()))
        .expect("draw");
    insta::assert_snapshot!("scanning_80x24", terminal.backend().to_string());
    // A spinner needs ticks; nothing else does, so an idle app blocks.
    assert_eq!(state.tick_every(), Some(Duration::from_millis(100)));
}

#[test]
fn severities_are_coloured_on_the_buffer() {
    let mut app = app(Fixture::new(TWO_FINDINGS), 80, 24);
    go(&mut app, Tab::Diagnosis);
    let buf = buffer(&app);
    let (x, y) = find(&buf, "✗ error").expect("an error row");
    let cell = &buf[(x, y)];
    assert_eq!(cell.fg, Color::Red, "error mark");
    assert!(cell.modifier.contains(Modifier::BOLD));
    let mut warned = self::app(Fixture::new(ONE_WARNING), 80, 24);
    go(&mut warned, Tab::Diagnosis);
    let warned = buffer(&warned);
    let (x, y) = find(&warned, "! warning").expect("a warning row");
    assert_eq!(warned[(x, y)].fg, Color::Yellow, "warning mark");
    // The header's verdict uses the same styles.
    let (x, y) = find(&buf, "✗ 1 error").expect("header verdict");
    assert_eq!((y, buf[(x, y)].fg), (0, Color::Red));
    // Healthy is green.
    let healthy = app_with(Fixture::new(H200), 80, 24, Theme::new(true));
    let buf = buffer(&healthy);
    let (x, y) = find(&buf, "✓ healthy").expect("verdict");
    assert_eq!(buf[(x, y)].fg, Color::Green);
}

#[test]
fn no_color_draws_no_colour_and_no_background() {
    for (name, theme) in [(TWO_FINDINGS, Theme::new(false)), (H200, Theme::new(true))] {
        let mut app = app_with(Fixture::new(name), 80, 24, theme);
        for tab in Tab::ALL {
            go(&mut app, tab);
            let buf = buffer(&app);
            for cell in buf.content() {
                // Light and dark terminals: the background is always the terminal's own.
                assert_eq!(cell.bg, Color::Reset, "{name} {tab:?}");
                if !theme.has_color() {
                    assert_eq!(cell.fg, Color::Reset, "{name} {tab:?}: NO_COLOR");
                }
            }
        }
    }
    // The words carry the meaning without colour.
    let mut app = app_with(Fixture::new(TWO_FINDINGS), 80, 24, Theme::new(false));
    go(&mut app, Tab::Diagnosis);
    let screen = text(&app);
    assert!(screen.contains("✗ error"), "{screen}");
    assert!(screen.contains("i info"), "{screen}");
    let mut app = app_with(Fixture::new(ONE_WARNING), 80, 24, Theme::new(false));
    go(&mut app, Tab::Diagnosis);
    let screen = text(&app);
    assert!(screen.contains("! warning"), "{screen}");
}

#[test]
fn tabs_move_with_tab_shift_tab_digits_and_arrows() {
    let mut app = app(Fixture::new(H200), 80, 24);
    assert_eq!(app.state.tab, Tab::Overview);
    app.press(KeyCode::Tab);
    assert_eq!(app.state.tab, Tab::Gpus);
    app.press_with(KeyCode::BackTab, KeyModifiers::SHIFT);
    app.press_with(KeyCode::BackTab, KeyModifiers::SHIFT);
    assert_eq!(app.state.tab, Tab::Smoke, "wraps around");
    app.press(KeyCode::Char('3'));
    assert_eq!(app.state.tab, Tab::Drivers);
    app.press(KeyCode::Right);
    assert_eq!(app.state.tab, Tab::Frameworks);
    app.press(KeyCode::Char('h'));
    assert_eq!(app.state.tab, Tab::Drivers);
}

#[test]
fn lists_move_and_stop_at_their_ends() {
    let mut app = app(Fixture::new(H200), 80, 24);
    go(&mut app, Tab::Drivers);
    let len = model::visible_lib_rows(&app.state).len();
    assert!(len > 4, "{len}");
    app.press(KeyCode::Up);
    assert_eq!(app.state.cursor().selected, 0);
    app.press(KeyCode::Down);
    app.press(KeyCode::Char('j'));
    assert_eq!(app.state.cursor().selected, 2);
    app.press(KeyCode::Char('G'));
    assert_eq!(app.state.cursor().selected, len - 1);
    app.press(KeyCode::Down);
    assert_eq!(app.state.cursor().selected, len - 1);
    app.press(KeyCode::Char('g'));
    assert_eq!(app.state.cursor().selected, 0);
    // The wheel moves the same way.
    app.dispatch(Msg::Mouse(crossterm::event::MouseEvent {
        kind: crossterm::event::MouseEventKind::ScrollDown,
        column: 10,
        row: 10,
        modifiers: KeyModifiers::NONE,
    }));
    assert_eq!(app.state.cursor().selected, 1);
}

#[test]
fn enter_opens_a_detail_that_scrolls_and_esc_goes_back() {
    let mut app = app(Fixture::new(TWO_FINDINGS), 80, 24);
    // Enter on an Overview finding opens it on the Diagnosis screen.
    app.press(KeyCode::Down);
    app.press(KeyCode::Enter);
    assert_eq!(app.state.tab, Tab::Diagnosis);
    assert_eq!(app.state.cursor().selected, 1);
    app.press(KeyCode::Up);
    app.press(KeyCode::Enter);
    assert_eq!(app.state.focus, gpu_doctor::tui::state::Focus::Detail);
    let before = text(&app);
    for _ in 0..3 {
        app.press(KeyCode::Down);
    }
    assert_eq!(app.state.cursor().scroll, 3);
    assert_ne!(text(&app), before, "the detail scrolled");
    // It stops where the text ends: 200 presses do not scroll into emptiness.
    for _ in 0..200 {
        app.press(KeyCode::PageDown);
    }
    let max = app.state.cursor().scroll;
    assert!(max > 3 && max < 60, "{max}");
    app.press(KeyCode::Esc);
    assert_eq!(app.state.focus, gpu_doctor::tui::state::Focus::List);
    assert_eq!(app.state.cursor().selected, 0, "selection kept");
}

#[test]
fn slash_filters_the_list_and_esc_clears_it() {
    let mut app = app(Fixture::new(TWO_FINDINGS), 80, 24);
    go(&mut app, Tab::Diagnosis);
    assert_eq!(model::visible_findings(&app.state).len(), 2);
    app.press(KeyCode::Char('/'));
    assert_eq!(app.state.mode, Mode::Filter);
    app.type_text("tool");
    assert_eq!(app.state.cursor().filter, "tool");
    let ids: Vec<&str> = model::visible_findings(&app.state)
        .iter()
        .map(|f| f.id.as_str())
        .collect();
    assert_eq!(ids, ["toolkit-newer-than-driver"]);
    // Letters are text while typing: q did not quit.
    app.type_text("q");
    assert!(!app.state.quit);
    assert!(model::visible_findings(&app.state).is_empty());
    assert!(text(&app).contains("Nothing matches the filter."));
    app.press(KeyCode::Backspace);
    app.press(KeyCode::Enter);
    assert_eq!(app.state.mode, Mode::Normal);
    assert!(text(&app).contains("Findings (filter: tool)"));
    app.press(KeyCode::Esc);
    assert!(app.state.cursor().filter.is_empty());
    assert_eq!(model::visible_findings(&app.state).len(), 2);
    // Drivers filter by any column.
    go(&mut app, Tab::Drivers);
    app.press(KeyCode::Char('/'));
    app.type_text("COMPAT");
    let rows = model::visible_lib_rows(&app.state);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(rows[0].path.contains("/compat/"));
}

#[test]
fn help_lists_every_key_from_the_keymap_and_closes() {
    let mut app = app(Fixture::new(H200), 100, 40);
    app.press(KeyCode::Char('?'));
    assert_eq!(app.state.mode, Mode::Help);
    let screen = text(&app);
    for key in [
        "Tab",
        "Shift-Tab",
        "1–7",
        "↑ k",
        "Enter",
        "Esc",
        "/",
        "r",
        "s",
        "q",
    ] {
        assert!(screen.contains(key), "{key} missing:\n{screen}");
    }
    insta::assert_snapshot!("help_100x40", screen);
    app.press(KeyCode::Esc);
    assert_eq!(app.state.mode, Mode::Normal);
    // The footer always names the main keys.
    let footer = rows(&buffer(&app)).pop().unwrap_or_default();
    for hint in ["Tab screen", "? help", "q quit"] {
        assert!(footer.contains(hint), "{footer}");
    }
}

#[test]
fn q_and_ctrl_c_quit() {
    let mut app = app(Fixture::new(H200), 80, 24);
    app.press(KeyCode::Char('q'));
    assert!(app.state.quit);
    let mut app = app_with(Fixture::new(H200), 80, 24, Theme::new(true));
    app.press(KeyCode::Char('/'));
    app.press_with(KeyCode::Char('c'), KeyModifiers::CONTROL);
    assert!(app.state.quit, "Ctrl-C quits even while typing");
}

#[test]
fn the_plan_follows_the_choices() {
    let mut app = app(Fixture::new(H200).with_script(SCRIPT), 80, 24);
    go(&mut app, Tab::Plan);
    // Every list holds only what this GPU can use, and each choice rebuilds the script.
    let cudas = app.state.plan.values(PlanField::Cuda);
    assert!(
        cudas.len() > 3 && cudas.iter().skip(1).all(|c| c.contains('.')),
        "{cudas:?}"
    );
    app.press(KeyCode::Right); // via: apt
    app.press(KeyCode::Right); // via: conda
    app.press(KeyCode::Right); // via: pip
    app.press(KeyCode::Down);
    app.press(KeyCode::Right); // the newest CUDA
    app.press(KeyCode::Down);
    app.press(KeyCode::Right); // torch
    let choice = app.state.plan.choice();
    assert_eq!(choice.via, Some(Via::Pip));
    assert_eq!(choice.cuda.as_deref(), cudas.get(1).map(String::as_str));
    assert_eq!(choice.framework.as_deref(), Some("torch"));
    match &app.state.plan.script {
        Script::Ready(plan) => assert!(
            plan.script.ends_with(&format!(
                "# chosen: {}\n",
                gpu_doctor::tui::services::describe(&choice)
            )),
            "{}",
            plan.script
        ),
        other => panic!("no script: {other:?}"),
    }
    // Left wraps to the end of the list.
    app.press(KeyCode::Up);
    app.press(KeyCode::Up);
    app.press(KeyCode::Left);
    app.press(KeyCode::Left);
    app.press(KeyCode::Left);
    app.press(KeyCode::Left);
    assert_eq!(app.state.plan.choice().via, Some(Via::Pip));
    // Enter moves the arrows to the preview.
    app.press(KeyCode::Enter);
    assert_eq!(app.state.focus, gpu_doctor::tui::state::Focus::Detail);
}

#[test]
fn the_real_planner_is_wired_to_the_screen() {
    let mut app = app(Fixture::new(H200), 80, 24);
    go(&mut app, Tab::Plan);
    match &app.state.plan.script {
        Script::Ready(plan) => assert!(plan.script.starts_with("#!"), "{}", plan.script),
        Script::Refused(reason) => assert!(!reason.is_empty()),
        other => panic!("the planner was not asked: {other:?}"),
    }
}

#[test]
fn saving_asks_for_a_name_and_never_overwrites_silently() {
    let dir = crate::support::tempdir();
    let path = dir.path().join("fix.sh");
    let mut app = app(Fixture::new(H200).with_script(SCRIPT), 80, 24);
    go(&mut app, Tab::Plan);
    app.press(KeyCode::Char('s'));
    assert_eq!(app.state.mode, Mode::SavePath);
    assert_eq!(
        app.state.input.text, "gpu-doctor-plan.sh",
        "a name is offered"
    );
    assert!(text(&app).contains("Save the plan to: gpu-doctor-plan.sh"));
    // The shell's editing keys: Home, then "x" in front, End, Ctrl-W takes the name back to
    // the last separator, Ctrl-U the rest; then the real name.
    app.press(KeyCode::Home);
    app.type_text("x");
    assert_eq!(app.state.input.text, "xgpu-doctor-plan.sh");
    app.press(KeyCode::End);
    app.press_with(KeyCode::Char('w'), KeyModifiers::CONTROL);
    assert_eq!(
        app.state.input.text, "",
        "one word, no separator: all of it"
    );
    app.type_text("dir/name.sh");
    app.press_with(KeyCode::Char('w'), KeyModifiers::CONTROL);
    assert_eq!(app.state.input.text, "dir/");
    app.press(KeyCode::Left);
    app.press(KeyCode::Delete);
    assert_eq!(app.state.input.text, "dir");
    app.press_with(KeyCode::Char('u'), KeyModifiers::CONTROL);
    assert_eq!(app.state.input.text, "");
    app.type_text(&path.display().to_string());
    app.press(KeyCode::Enter);
    let written = std::fs::read_to_string(&path).expect("saved");
    assert!(written.starts_with(SCRIPT), "{written}");
    assert!(app.state.status.as_ref().is_some_and(|s| !s.error));
    assert!(text(&app).contains("Saved the plan to"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o755, "a script is executable");
    }

    // Again under the same name: asked, and "n" keeps the file as it was.
    std::fs::write(&path, "mine\n").expect("write");
    let save_again = |app: &mut App| {
        app.press(KeyCode::Char('s'));
        for _ in 0..app.state.input.text.len() {
            app.press(KeyCode::Backspace);
        }
        app.type_text(&path.display().to_string());
        app.press(KeyCode::Enter);
    };
    save_again(&mut app);
    assert_eq!(app.state.mode, Mode::ConfirmOverwrite);
    assert!(text(&app).contains("exists. Overwrite it?"));
    app.press(KeyCode::Char('n'));
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "mine\n");
    assert!(text(&app).contains("nothing saved"));
    // "y" replaces it.
    save_again(&mut app);
    app.press(KeyCode::Char('y'));
    assert!(
        std::fs::read_to_string(&path)
            .expect("read")
            .starts_with(SCRIPT)
    );

    // Esc while typing the name saves nothing.
    let other = dir.path().join("other.sh");
    app.press(KeyCode::Char('s'));
    app.type_text("x");
    app.press(KeyCode::Esc);
    assert!(!other.exists());
    assert_eq!(app.state.mode, Mode::Normal);

    // Other screens save the text report.
    go(&mut app, Tab::Overview);
    app.press(KeyCode::Char('s'));
    assert_eq!(app.state.input.text, "gpu-doctor-report.txt");
    for _ in 0..app.state.input.text.len() {
        app.press(KeyCode::Backspace);
    }
    let report = dir.path().join("report.txt");
    app.type_text(&report.display().to_string());
    app.press(KeyCode::Enter);
    let text = std::fs::read_to_string(&report).expect("report saved");
    assert!(text.contains("NVIDIA H200"), "{text}");
}

#[test]
fn a_refused_plan_cannot_be_saved() {
    let mut app = app(Fixture::new(H200), 80, 24);
    go(&mut app, Tab::Plan);
    app.state.plan.script = Script::Refused("no".to_string());
    app.press(KeyCode::Char('s'));
    assert_eq!(app.state.mode, Mode::Normal);
    assert!(app.state.status.as_ref().is_some_and(|s| s.error));
}

/// A live reading of a busy H200.
fn reading(util: u32, temp: u32) -> Gpu {
    Gpu {
        index: 0,
        name: Some("NVIDIA H200".to_string()),
        utilization_pct: Some(util),
        memory_used_mib: Some(71_000),
        memory_total_mib: Some(143_771),
        temperature_c: Some(temp),
        temperature_slowdown_c: Some(87),
        power_draw_w: Some(420.0),
        power_limit_w: Some(700.0),
        source: "nvml".into(),
        ..Gpu::default()
    }
}

fn readings(app: &App) -> usize {
    match &app.state.live {
        Live::On(h) => h[0].utilization.len(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn live_readings_slow_down_when_nobody_is_looking() {
    let mut app = app(
        Fixture::new(H200).with_readings(vec![reading(5, 40)]),
        100,
        30,
    );
    go(&mut app, Tab::Gpus);
    for second in 1..60 {
        app.dispatch(Msg::Tick(Duration::from_secs(second)));
    }
    assert_eq!(readings(&app), 60, "once a second while in use");
    for second in 60..=100 {
        app.dispatch(Msg::Tick(Duration::from_secs(second)));
    }
    assert_eq!(readings(&app), 68, "every 5 s after a minute without keys");
    assert_eq!(app.state.tick_every(), Some(Duration::from_secs(5)));
    assert!(text(&app).contains("Live · every 5 s"));
    app.press(KeyCode::Char('j'));
    app.dispatch(Msg::Tick(Duration::from_secs(101)));
    assert_eq!(readings(&app), 69, "a key brings back once a second");
    assert_eq!(app.state.tick_every(), Some(Duration::from_secs(1)));
}

#[test]
fn live_readings_fill_sparklines_once_a_second_on_the_gpu_screen_only() {
    let mut app = app(
        Fixture::new(H200).with_readings(vec![reading(97, 61)]),
        100,
        30,
    );
    // The first reading came with the scan.
    assert!(matches!(&app.state.live, Live::On(h) if h[0].utilization.len() == 1));
    // On another screen, ticks ask for nothing: an idle app starts no child processes.
    assert_eq!(app.state.tick_every(), None);
    app.dispatch(Msg::Tick(Duration::from_secs(5)));
    assert!(matches!(&app.state.live, Live::On(h) if h[0].utilization.len() == 1));
    go(&mut app, Tab::Gpus);
    assert_eq!(app.state.tick_every(), Some(Duration::from_secs(1)));
    for second in 6..12 {
        app.dispatch(Msg::Tick(Duration::from_secs(second)));
    }
    // Half a second later is too soon.
    app.dispatch(Msg::Tick(Duration::from_millis(11_500)));
    let Live::On(histories) = &app.state.live else {
        panic!("{:?}", app.state.live);
    };
    assert_eq!(histories[0].utilization.len(), 8);
    assert_eq!(histories[0].memory.back(), Some(&49));
    let screen = text(&app);
    assert!(screen.contains("utilisation 97 %"), "{screen}");
    assert!(screen.contains("temperature 61 °C"), "{screen}");
    assert!(screen.contains("GPUs · live"), "{screen}");
    assert!(
        screen.contains("49.4/140.4 GiB") || screen.contains("69.3/140.4 GiB"),
        "{screen}"
    );
}

#[test]
fn under_root_the_gpu_screen_says_why_nothing_is_live() {
    let mut app = app(Fixture::new(H200), 80, 24);
    go(&mut app, Tab::Gpus);
    assert!(matches!(app.state.live, Live::Unavailable(_)));
    assert_eq!(app.state.tick_every(), None, "nothing to wake up for");
    assert!(text(&app).contains("No live readings: examined with"));
}

#[test]
fn the_smoke_screen_runs_and_shows_throughput_against_expected() {
    let rows = vec![
        SmokeRow {
            device: "GPU 0".to_string(),
            check: "fp32 matmul 256³ vs CPU".to_string(),
            passed: true,
            detail: "max rel. error 1.2e-6".to_string(),
            measured: None,
            expected: None,
            unit: String::new(),
        },
        SmokeRow {
            device: "GPU 0".to_string(),
            check: "cuBLASLt bf16 GEMM".to_string(),
            passed: true,
            detail: String::new(),
            measured: Some(742.0),
            expected: Some(989.0),
            unit: "TFLOP/s".to_string(),
        },
    ];
    let mut app = app(
        Fixture::new(H200).with_smoke(SmokeEvent::Finished(rows)),
        100,
        30,
    );
    go(&mut app, Tab::Smoke);
    assert!(text(&app).contains("Enter runs it."));
    app.press(KeyCode::Enter);
    assert!(matches!(&app.state.smoke, Smoke::Done(rows) if rows.len() == 2));
    let screen = text(&app);
    assert!(screen.contains("742 of 989 TFLOP/s (75 %)"), "{screen}");
    insta::assert_snapshot!("smoke_done_100x30", screen);
}

#[test]
fn smoke_under_root_is_not_available_and_says_why() {
    let mut app = app(Fixture::new(H200), 80, 24);
    go(&mut app, Tab::Smoke);
    app.press(KeyCode::Enter);
    assert!(matches!(app.state.smoke, Smoke::Unavailable(_)));
    assert!(text(&app).contains("Not available"));
}

#[test]
fn resizing_keeps_every_screen_drawable() {
    let mut app = app(Fixture::new(TWO_FINDINGS), 80, 24);
    for (w, h) in [(20, 5), (40, 12), (80, 24), (200, 60), (1, 1)] {
        app.dispatch(Msg::Resize(w, h));
        for tab in Tab::ALL {
            go(&mut app, tab);
            app.press(KeyCode::Enter);
            app.press(KeyCode::PageDown);
            let _ = text(&app);
            app.press(KeyCode::Esc);
        }
        app.press(KeyCode::Char('?'));
        app.press(KeyCode::PageDown);
        let _ = text(&app);
        app.press(KeyCode::Esc);
    }
}

#[test]
fn escape_sequences_in_machine_strings_never_reach_the_terminal() {
    let mut services = Fixture::new(H200);
    services.script = None;
    struct Hostile(Fixture);
    impl Services for Hostile {
        fn examine(&self) -> Result<Report, String> {
            let mut r = self.0.examine()?;
            r.gpus[0].name = Some("\u{1b}]0;pwned\u{7}H200".to_string());
            r.toolkits[0].path = "/opt/\u{1b}[2Jcuda".to_string();
            Ok(r)
        }
        fn sample(&self) -> Result<Vec<Gpu>, String> {
            self.0.sample()
        }
        fn plan_options(&self, r: &Report) -> PlanOptions {
            self.0.plan_options(r)
        }
        fn plan(&self, r: &Report, c: &PlanChoice) -> Result<PlanText, String> {
            self.0.plan(r, c)
        }
        fn smoke(&self, r: Option<&Report>, p: &mut dyn FnMut(SmokeEvent)) {
            self.0.smoke(r, p);
        }
        fn explain(&self, r: &Report, text: &str) -> Explain {
            self.0.explain(r, text)
        }
    }
    let mut app = App::inline(Arc::new(Hostile(services)), Theme::new(true), (120, 40));
    app.dispatch(Msg::Start);
    for tab in Tab::ALL {
        go(&mut app, tab);
        for cell in buffer(&app).content() {
            assert!(
                !cell.symbol().chars().any(char::is_control),
                "{tab:?}: {:?}",
                cell.symbol()
            );
        }
    }
}

/// The real binary in a real terminal (tmux): the first frame, switching screens, the help,
/// and quitting gives the shell its terminal back.
#[test]
fn in_tmux_the_binary_shows_the_screens_and_restores_the_terminal() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("skipped: tmux is not installed (CI installs it)");
        return;
    }
    let tmux = Tmux::start(H200);
    let first = tmux.wait_for("✓ healthy", "the Overview verdict");
    assert!(first.contains("1 Overview"), "{first}");
    assert!(
        first.contains("0  NVIDIA H200 · cc 9.0 · 140.4 GiB"),
        "{first}"
    );
    assert!(first.contains("? help"), "{first}");

    tmux.keys(&["2"]);
    let gpus = tmux.wait_for("GPUs · from the scan", "the GPUs screen");
    assert!(gpus.contains("No live readings: examined with"), "{gpus}");

    tmux.keys(&["Tab"]);
    let drivers = tmux.wait_for("Libraries and toolkits, in loader order", "Drivers & CUDA");
    assert!(drivers.contains("loads"), "{drivers}");

    tmux.keys(&["?"]);
    let help = tmux.wait_for("Esc or ? closes", "the help overlay");
    assert!(help.contains("next screen"), "{help}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("Libraries and toolkits", "help closed");

    // A resize (issue #38: after one under tmux, quitting left box borders on the screen).
    tmux.resize(80, 24);
    tmux.wait_for("Libraries and toolkits", "redrawn at 80×24");
    tmux.resize(100, 30);
    tmux.wait_for("Libraries and toolkits", "redrawn at 100×30");

    tmux.keys(&["q"]);
    let after = tmux.wait_for("EXITED 0", "the shell after quitting");
    // Back on the main screen: none of the app's frame is left, and the terminal is in
    // cooked mode again (the shell's `stty -a` shows `icanon`, raw mode would be `-icanon`).
    assert!(!after.contains("1 Overview"), "{after}");
    assert!(
        !after.contains(['┌', '┐', '└', '┘', '│']),
        "box borders left after quitting:\n{after}"
    );
    drop(tmux);

    // A terminal without an alternate screen (tmux's `alternate-screen off`) shows whatever
    // the app left on it: the app clears it before quitting, after a resize too.
    let dir = crate::support::tempdir();
    let config = dir.path().join("tmux.conf");
    std::fs::write(&config, "set -g alternate-screen off\n").expect("tmux.conf");
    let tmux = Tmux::start_with(H200, "-noalt", &config.display().to_string());
    tmux.wait_for("✓ healthy", "the Overview without an alternate screen");
    tmux.resize(80, 24);
    tmux.wait_for("✓ healthy", "redrawn at 80×24");
    tmux.keys(&["q"]);
    let after = tmux.wait_for("EXITED 0", "the shell after quitting");
    assert!(
        !after.contains(['┌', '┐', '└', '┘', '│']),
        "box borders left after quitting:\n{after}"
    );
    assert!(after.contains(" icanon"), "{after}");
}

/// A tmux server of our own (its own socket), killed when the test ends.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(fixture: &str) -> Tmux {
        Tmux::start_with(fixture, "", "/dev/null")
    }

    /// [`Tmux::start`] on a server of its own (`name` in the socket) reading `config`.
    fn start_with(fixture: &str, name: &str, config: &str) -> Tmux {
        let root = fixture_dir(fixture).join("root");
        Tmux::start_on(fixture, &root, name, config, Path::new("."))
    }

    /// The app on `root` (a fixture's tree or a copy of it) with the fixture's environment,
    /// started in the folder `cwd`.
    fn start_on(fixture: &str, root: &Path, name: &str, config: &str, cwd: &Path) -> Tmux {
        let socket = format!("gpu-doctor-tui{name}-{}", std::process::id());
        let exe = env!("CARGO_BIN_EXE_gpu-doctor");
        let env: Vec<String> = fixture_env(fixture)
            .into_iter()
            .map(|(k, v)| shell_word(&format!("{k}={v}")))
            .collect();
        // Plain `gpu-doctor` (no subcommand) must open the app on a terminal.
        let script = format!(
            "cd {} && env -i TERM=xterm-256color {} {} --root {} --timeout {TIMEOUT_SECS}; \
             echo EXITED $?; stty -a; sleep 60",
            shell_word(&cwd.display().to_string()),
            env.join(" "),
            shell_word(exe),
            shell_word(&root.display().to_string()),
        );
        let status = Command::new("tmux")
            .args(["-L", &socket, "-f", config, "new-session", "-d"])
            .args(["-x", "100", "-y", "30", &script])
            .status()
            .expect("tmux runs");
        assert!(status.success(), "tmux new-session failed");
        Tmux { socket }
    }

    fn capture(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn resize(&self, width: u16, height: u16) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "resize-window"])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .status()
            .expect("resize-window");
        assert!(status.success());
    }

    fn keys(&self, keys: &[&str]) {
        let status = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys"])
            .args(keys)
            .status()
            .expect("send-keys");
        assert!(status.success());
    }

    /// The screen once it shows `needle` and has settled (two captures alike: tmux can be
    /// caught half-way through a frame), within ten seconds.
    fn wait_for(&self, needle: &str, what: &str) -> String {
        let start = Instant::now();
        let mut last = String::new();
        loop {
            let screen = self.capture();
            if screen.contains(needle) && screen == last {
                return screen;
            }
            last = screen.clone();
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{what}: {needle:?} never appeared; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// Single-quotes a word for `sh`.
fn shell_word(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[test]
fn fixtures_exist() {
    for name in [H200, NO_DRIVER, TWO_FINDINGS, WHEELS] {
        assert!(
            Path::new(&fixture_dir(name)).join("root").is_dir(),
            "{name}"
        );
    }
}

/// The TUI reaches the machine only through its services seam: state, update, keys, model and
/// views never name the host, a probe, a process or the file system.
#[test]
fn only_the_services_seam_touches_the_machine() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tui");
    let mut files = Vec::new();
    for folder in [dir.clone(), dir.join("view")] {
        for entry in std::fs::read_dir(&folder).expect("src/tui") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 10, "{files:?}");
    for path in files {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        // services.rs is the seam; mod.rs is the runtime (terminal, threads, saving files);
        // terminal.rs owns the terminal.
        if matches!(name, "services.rs" | "mod.rs" | "terminal.rs") && path.parent() == Some(&dir) {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("source");
        for banned in [
            "crate::host",
            "crate::probe",
            "std::process",
            "std::fs",
            "std::env",
        ] {
            assert!(!text.contains(banned), "{}: uses {banned}", path.display());
        }
    }
}

#[test]
fn on_diagnosis_e_takes_a_pasted_error_and_shows_the_finding_that_explains_it() {
    let mut app = app(Fixture::new(TWO_FINDINGS), 100, 30);
    go(&mut app, Tab::Diagnosis);
    // Enter on an empty box asks for the text.
    app.press(KeyCode::Char('e'));
    assert_eq!(app.state.mode, Mode::ExplainInput);
    app.press(KeyCode::Enter);
    assert_eq!(app.state.mode, Mode::ExplainInput);
    assert!(app.state.status.as_ref().is_some_and(|s| s.error));
    // A paste arrives in one piece: its newlines are text, not Enter.
    app.dispatch(Msg::Paste(
        "Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n\
         cupy.cuda.runtime.CUDARuntimeError: cudaErrorInsufficientDriver: CUDA driver version is \
         insufficient for CUDA runtime version\n"
            .to_string(),
    ));
    assert_eq!(app.state.mode, Mode::ExplainInput);
    insta::assert_snapshot!("explain_input_100x30", text(&app));
    app.press(KeyCode::Enter);
    assert_eq!(app.state.mode, Mode::Explained);
    let answer = app.state.explanation.clone().expect("answered");
    assert_eq!(answer.cause.as_deref(), Some("toolkit-newer-than-driver"));
    insta::assert_snapshot!("explain_answer_100x30", text(&app));
    let (x, y) = find(&buffer(&app), "Cause:").expect("the answer leads with the cause");
    assert_eq!(buffer(&app)[(x, y)].fg, Color::Red);
    // The answer scrolls (on a terminal too small for it), and Esc leaves the finding it
    // names selected on Diagnosis.
    app.press(KeyCode::Down);
    assert_eq!(app.state.explain_scroll, 0, "it fits: nothing to scroll");
    app.dispatch(Msg::Resize(100, 16));
    app.press(KeyCode::Down);
    assert_eq!(app.state.explain_scroll, 1);
    app.press(KeyCode::End);
    assert!(app.state.explain_scroll > 1);
    app.press(KeyCode::Esc);
    assert_eq!(app.state.mode, Mode::Normal);
    let findings = model::visible_findings(&app.state);
    assert_eq!(
        findings[app.state.cursor().selected].id,
        "toolkit-newer-than-driver"
    );
    // Typed text works too; Esc abandons it.
    app.press(KeyCode::Char('e'));
    app.type_text("hello");
    assert_eq!(app.state.explain_text, "hello");
    app.press(KeyCode::Backspace);
    assert_eq!(app.state.explain_text, "hell");
    app.press(KeyCode::Esc);
    assert_eq!(app.state.mode, Mode::Normal);
    assert!(app.state.explain_text.is_empty());
}

#[test]
fn the_explain_key_is_only_offered_on_diagnosis_with_a_report() {
    let mut app = app(Fixture::new(H200), 80, 24);
    app.press(KeyCode::Char('e'));
    assert_eq!(app.state.mode, Mode::Normal);
    go(&mut app, Tab::Diagnosis);
    let footer = rows(&buffer(&app)).pop().unwrap_or_default();
    assert!(footer.contains("e explain"), "{footer}");
    app.press(KeyCode::Char('e'));
    assert_eq!(app.state.mode, Mode::ExplainInput);
}

/// The Plan screen runs the plan: asked first (with what sudo will do), then each step's state
/// (to do, running, done, skipped, failed) above the script's output; `x` stops before the
/// next step, and `x` again resumes, the steps finished before kept and marked. Each state is
/// a snapshot.
#[test]
fn the_plan_screen_runs_the_plan_step_by_step_and_stops_and_resumes() {
    let mut app = stopped_run();
    let run = |app: &App| app.state.plan.run.clone().expect("a run");
    // x again: asked as a second run, and the steps finished before are kept and marked.
    app.press(KeyCode::Char('x'));
    assert!(
        text(&app).contains("Run the 3 steps again (those done are skipped)"),
        "{}",
        text(&app)
    );
    app.press(KeyCode::Char('y'));
    assert!(
        !run(&app).steps[0].earlier,
        "skipped before, not done by the run"
    );
    assert!(run(&app).steps[1].earlier);
    send(&mut app, RunEvent::Step(1));
    send(
        &mut app,
        RunEvent::Skipped("cuda-keyring is installed".to_string()),
    );
    send(&mut app, RunEvent::Step(2));
    send(
        &mut app,
        RunEvent::Skipped("nvidia-driver-580 is installed".to_string()),
    );
    send(&mut app, RunEvent::Step(3));
    send(
        &mut app,
        RunEvent::Output("ERROR: Could not find a version that satisfies".to_string()),
    );
    send(&mut app, RunEvent::StepFailed);
    send(&mut app, RunEvent::Ended(Outcome::Failed(Some(1))));
    let failed = text(&app);
    insta::assert_snapshot!("plan_run_failed_80x24", failed);
    assert!(failed.contains("Step venv failed"), "{failed}");
    assert_eq!(run(&app).steps[2].state, StepState::Failed);

    // Once more, to the end: done, and the machine is examined again.
    app.press(KeyCode::Char('x'));
    app.press(KeyCode::Char('y'));
    send(&mut app, RunEvent::Step(3));
    send(&mut app, RunEvent::StepDone);
    send(&mut app, RunEvent::Ended(Outcome::Done));
    let done = text(&app);
    insta::assert_snapshot!("plan_run_done_80x24", done);
    assert!(done.contains("The plan ran: 3 of 3 done"), "{done}");
    assert!(
        matches!(app.state.scan, Scan::Done { .. }),
        "examined again"
    );
    // Esc gives the screen back to the preview.
    app.press(KeyCode::Esc);
    app.press(KeyCode::Esc);
    assert!(app.state.plan.run.is_none());
}

/// A fake run on the Plan screen, asked, started, and stopped between steps 2 and 3, each
/// state checked on the way (the first half of the test above).
fn stopped_run() -> App {
    let _ = std::fs::remove_file(stop_file());
    let mut app = app(
        Fixture::new(H200).with_script(SCRIPT).with_sudo(Ok(())),
        80,
        24,
    );
    go(&mut app, Tab::Plan);
    app.state.plan.log = "plan.log".into();
    assert!(text(&app).contains("x runs it"), "{}", text(&app));
    app.press(KeyCode::Char('x'));
    assert_eq!(app.state.mode, Mode::ConfirmRun);
    let asked = text(&app);
    assert!(
        asked.contains("Run these 3 steps on this machine now (log: plan.log)?"),
        "{asked}"
    );
    insta::assert_snapshot!("plan_run_confirm_80x24", asked);
    // n: nothing runs.
    app.press(KeyCode::Char('n'));
    assert!(app.state.plan.run.is_none());
    assert!(text(&app).contains("Not run; nothing was changed."));

    // y: sudo answers (the fake), the script starts.
    app.press(KeyCode::Char('x'));
    app.press(KeyCode::Char('y'));
    let run = |app: &App| app.state.plan.run.clone().expect("a run");
    assert!(run(&app).active());
    send(&mut app, RunEvent::Step(1));
    send(
        &mut app,
        RunEvent::Output("==> [1/3] cuda-keyring: Add NVIDIA's CUDA repository".to_string()),
    );
    send(
        &mut app,
        RunEvent::Skipped("cuda-keyring is installed".to_string()),
    );
    send(&mut app, RunEvent::Step(2));
    send(
        &mut app,
        RunEvent::Output("==> [2/3] driver: Install the 580 driver".to_string()),
    );
    send(
        &mut app,
        RunEvent::Output("Setting up nvidia-driver-580 (580.95.05-0ubuntu1) ...".to_string()),
    );
    let running = text(&app);
    insta::assert_snapshot!("plan_run_running_80x24", running);
    assert_eq!(
        run(&app)
            .steps
            .iter()
            .map(|s| s.state.clone())
            .collect::<Vec<_>>(),
        [
            StepState::Skipped("cuda-keyring is installed".to_string()),
            StepState::Running,
            StepState::ToDo
        ]
    );
    // The choices stay while it runs, and q says how to stop instead of quitting.
    app.press(KeyCode::Right);
    assert!(text(&app).contains("the choices stay until it ends"));
    app.press(KeyCode::Char('q'));
    assert!(!app.state.quit);
    assert!(text(&app).contains("x stops it before the next step"));

    // x: the stop file is made; the script stops before step 3.
    app.press(KeyCode::Char('x'));
    assert!(stop_file().exists(), "the stop file was not made");
    let _ = std::fs::remove_file(stop_file());
    send(&mut app, RunEvent::StepDone);
    send(&mut app, RunEvent::Ended(Outcome::Stopped));
    let stopped = text(&app);
    insta::assert_snapshot!("plan_run_stopped_80x24", stopped);
    assert!(
        stopped.contains("Stopped: 2 of 3 done (x runs it again)"),
        "{stopped}"
    );
    app
}

/// Sends one event of the running plan.
fn send(app: &mut App, event: RunEvent) {
    app.dispatch(Msg::PlanRun(event));
}

/// sudo refusing (or missing) stops the run before anything runs, and says why.
#[test]
fn a_plan_whose_sudo_fails_does_not_run() {
    let mut app = app(
        Fixture::new(H200)
            .with_script(SCRIPT)
            .with_sudo(Err("sudo did not accept; nothing was run".to_string())),
        80,
        24,
    );
    go(&mut app, Tab::Plan);
    app.press(KeyCode::Char('x'));
    assert!(
        text(&app).contains("2 of them run as root: sudo asks for your"),
        "{}",
        text(&app)
    );
    app.press(KeyCode::Char('y'));
    let run = app.state.plan.run.clone().expect("a run");
    assert_eq!(
        run.outcome(),
        Some(&Outcome::Error(
            "sudo did not accept; nothing was run".to_string()
        ))
    );
    assert!(run.steps.iter().all(|s| s.state == StepState::ToDo));
    assert!(
        text(&app).contains("Not run: sudo did not accept"),
        "{}",
        text(&app)
    );
}

/// The real binary on a terminal runs a plan from the Plan screen on its worker thread: the
/// question, the run, the script's output streamed in and its failure shown (the copy of the
/// fixture has none of the commands the plan calls), `q` refused while it runs, the log written
/// in the folder the app started in; and the terminal given back.
#[test]
fn in_tmux_the_plan_screen_runs_a_plan_and_shows_how_it_ended() {
    if Command::new("tmux").arg("-V").output().is_err() {
        eprintln!("tmux is not installed; skipped");
        return;
    }
    let dir = crate::support::tempdir();
    let root = dir.path().join("root");
    let copied = Command::new("cp")
        .arg("-a")
        .arg(fixture_dir("nouveau-loaded").join("root"))
        .arg(&root)
        .status()
        .expect("cp");
    assert!(copied.success());
    let tmux = Tmux::start_on("nouveau-loaded", &root, "-run", "/dev/null", dir.path());
    tmux.wait_for("1 Overview", "the app opened");
    tmux.keys(&["6"]);
    tmux.wait_for("x runs it", "the plan was written");
    tmux.keys(&["x"]);
    tmux.wait_for("Run the plan?", "the question");
    tmux.keys(&["y"]);
    let ended = tmux.wait_for("x runs it again", "the run ended");
    assert!(ended.contains("Failed:"), "{ended}");
    assert!(
        ended.contains("command not found"),
        "the script's output streamed in:\n{ended}"
    );
    let log = std::fs::read_to_string(dir.path().join("gpu-doctor-plan.log")).expect("the log");
    assert!(
        log.contains("== gpu-doctor plan --execute: stopped with exit status"),
        "{log}"
    );
    tmux.keys(&["q"]);
    tmux.wait_for("EXITED 0", "quit");
}
