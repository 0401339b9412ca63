//! The update function: a [`Msg`] changes the [`State`] and may ask the runtime for work
//! ([`Cmd`]s). Pure, so every behaviour (navigation, filtering, building and saving a plan) is
//! tested by feeding messages, with no terminal and no threads (The Elm Architecture).

mod run;

use std::path::PathBuf;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

use super::keys::{self, Action};
use super::model;
use super::msg::{Cmd, Msg, SaveError};
use super::services::{PlanOptions, SmokeEvent};
use super::state::{
    Derived, Focus, History, Live, Mode, PendingSave, Phase, PlanField, Scan, Script, Smoke, State,
    Status, Step, Tab,
};
use crate::report::{Gpu, Report};

/// The most text the explain box takes (a pasted log beyond it is cut; `gpu-doctor explain
/// --log` reads any size).
pub const EXPLAIN_LIMIT: usize = 1 << 20;

/// Default file names offered when saving, in the current folder.
pub const PLAN_FILE: &str = "gpu-doctor-plan.sh";
pub const REPORT_FILE: &str = "gpu-doctor-report.txt";

/// Applies one message.
pub fn update(state: &mut State, msg: Msg) -> Vec<Cmd> {
    match msg {
        Msg::Start => start_scan(state),
        Msg::Key(key) => {
            // Terminals with the kitty protocol also report releases; act on presses only.
            if key.kind == KeyEventKind::Release {
                return Vec::new();
            }
            state.dirty = true;
            state.last_input = state.now;
            key_press(state, &key)
        }
        Msg::Paste(text) => {
            pasted(state, &text);
            Vec::new()
        }
        Msg::Mouse(mouse) => {
            let action = match mouse.kind {
                MouseEventKind::ScrollDown => Action::Down,
                MouseEventKind::ScrollUp => Action::Up,
                _ => return Vec::new(),
            };
            if !matches!(state.mode, Mode::Normal | Mode::Help | Mode::Explained) {
                return Vec::new();
            }
            state.dirty = true;
            state.last_input = state.now;
            apply(state, action)
        }
        Msg::Resize(columns, rows) => {
            state.size = (columns, rows);
            state.dirty = true;
            clamp_scrolls(state);
            Vec::new()
        }
        Msg::Tick(now) => tick(state, now),
        Msg::Scanned {
            report,
            options,
            took,
        } => scanned(state, *report, options, took),
        Msg::ScanFailed(message) => {
            state.scan = Scan::Failed(message);
            state.dirty = true;
            Vec::new()
        }
        Msg::Phase(phase, step) => {
            state.phases[phase as usize] = step;
            state.dirty = true;
            Vec::new()
        }
        Msg::Sample(result, took) => {
            sampled(state, result, took);
            Vec::new()
        }
        Msg::PlanBuilt(result) => {
            state.plan.script = match result {
                Ok(script) => Script::Ready(script),
                Err(reason) => Script::Refused(reason),
            };
            state.cursors[Tab::Plan.index()].scroll = 0;
            state.dirty = true;
            Vec::new()
        }
        Msg::Saved(result) => {
            saved(state, result);
            Vec::new()
        }
        Msg::Smoke(event) => {
            state.smoke = match event {
                SmokeEvent::Progress { step, done, total } => Smoke::Running { step, done, total },
                SmokeEvent::Finished(rows) => Smoke::Done(rows),
                SmokeEvent::Failed(why) => Smoke::Failed(why),
                SmokeEvent::Unavailable(why) => Smoke::Unavailable(why),
            };
            state.dirty = true;
            Vec::new()
        }
        Msg::Explained(answer) => {
            explained(state, *answer);
            Vec::new()
        }
        Msg::Authorized(result) => run::authorized(state, result),
        Msg::PlanRun(event) => run::event(state, event),
        Msg::InputClosed => {
            state.quit = true;
            Vec::new()
        }
    }
}

/// A paste: the whole text into the explain box; the first line of it into a filter or a file
/// name.
fn pasted(state: &mut State, text: &str) {
    state.dirty = true;
    state.last_input = state.now;
    match state.mode {
        Mode::ExplainInput => {
            let room = EXPLAIN_LIMIT.saturating_sub(state.explain_text.len());
            let mut end = text.len().min(room);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            state.explain_text.push_str(&text[..end]);
        }
        Mode::Filter | Mode::SavePath => {
            let line: String = text
                .lines()
                .next()
                .unwrap_or("")
                .chars()
                .filter(|c| !c.is_control())
                .collect();
            for c in line.chars() {
                type_char(state, c);
            }
        }
        _ => {}
    }
}

/// The answer arrived: shown from its top, and the finding it names selected on Diagnosis.
fn explained(state: &mut State, answer: crate::report::explain::Explain) {
    if let Some(cause) = &answer.cause {
        let index = model::visible_findings(state)
            .iter()
            .position(|f| &f.id == cause);
        if let Some(index) = index {
            let cursor = &mut state.cursors[Tab::Diagnosis.index()];
            cursor.selected = index;
            cursor.scroll = 0;
        }
    }
    state.explanation = Some(answer);
    state.explain_scroll = 0;
    state.dirty = true;
}

fn start_scan(state: &mut State) -> Vec<Cmd> {
    if matches!(state.scan, Scan::Running { .. }) {
        return Vec::new();
    }
    state.scan = Scan::Running { since: state.now };
    state.phases = [Step::Pending, Step::Pending, Step::Pending];
    // A rescan also retries live readings that were unavailable (a driver may be back).
    if matches!(state.live, Live::Unavailable(_)) {
        state.live = Live::Off;
    }
    state.dirty = true;
    let mut cmds = vec![Cmd::Scan];
    // The first live reading is asked at once, beside the scan: it is the NVML phase of the
    // progress, and the GPUs screen then opens with a reading already there.
    if !state.sampling {
        state.sampling = true;
        state.last_sample = Some(state.now);
        state.phases[Phase::Nvml as usize] = Step::Running { since: state.now };
        if state.live == Live::Off {
            state.live = Live::Waiting;
        }
        cmds.push(Cmd::Sample);
    }
    cmds
}

fn scanned(state: &mut State, report: Report, options: PlanOptions, took: Duration) -> Vec<Cmd> {
    state.derived = Derived::new(&report);
    state.report = Some(report);
    state.scan = Scan::Done { took };
    state.phases[Phase::Choices as usize] = Step::Done {
        took: Duration::ZERO,
    };
    let old = std::mem::take(&mut state.plan.options);
    state.plan.options = options;
    if old != state.plan.options {
        state.plan.picks = [0; 3];
    }
    for tab in Tab::ALL {
        clamp_selection(state, tab);
    }
    state.dirty = true;
    let mut cmds = vec![build_plan(state)];
    cmds.extend(maybe_sample(state));
    cmds
}

fn sampled(state: &mut State, result: Result<Vec<Gpu>, String>, took: Duration) {
    state.sampling = false;
    if matches!(state.phase(Phase::Nvml), Step::Running { .. }) {
        state.phases[Phase::Nvml as usize] = match &result {
            Ok(_) => Step::Done { took },
            Err(why) => Step::Skipped(why.clone()),
        };
        state.dirty = true;
    }
    match result {
        Ok(gpus) => {
            let mut histories = match std::mem::replace(&mut state.live, Live::Off) {
                Live::On(h) if h.len() == gpus.len() => h,
                _ => vec![History::default(); gpus.len()],
            };
            for (history, gpu) in histories.iter_mut().zip(gpus) {
                history.push(gpu);
            }
            state.live = Live::On(histories);
        }
        Err(reason) => state.live = Live::Unavailable(reason),
    }
    if state.tab == Tab::Gpus {
        state.dirty = true;
    }
}

fn saved(state: &mut State, result: Result<Vec<PathBuf>, SaveError>) {
    state.dirty = true;
    match result {
        Ok(paths) => {
            let what = state.pending_save.take().map_or("file", |p| p.what);
            let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            state.status = Some(Status {
                error: false,
                text: format!("Saved the {what} to {}", names.join(" and ")),
            });
        }
        Err(SaveError::Exists(path)) => {
            if let Some(pending) = &mut state.pending_save {
                pending.path = Some(path);
                state.mode = Mode::ConfirmOverwrite;
            }
        }
        Err(SaveError::Failed(why)) => {
            state.pending_save = None;
            state.status = Some(Status {
                error: true,
                text: format!("Not saved: {}", crate::sanitize::clean(&why)),
            });
        }
    }
}

fn tick(state: &mut State, now: Duration) -> Vec<Cmd> {
    state.now = now;
    if state.busy() {
        state.ticks = state.ticks.wrapping_add(1);
        state.dirty = true;
    }
    maybe_sample(state)
}

/// Asks for a live reading when the GPUs screen wants one and the last is a second old.
fn maybe_sample(state: &mut State) -> Vec<Cmd> {
    if !state.wants_live() || state.sampling {
        return Vec::new();
    }
    let due = state
        .last_sample
        .is_none_or(|last| state.now.saturating_sub(last) >= state.sample_every());
    if !due {
        return Vec::new();
    }
    state.sampling = true;
    state.last_sample = Some(state.now);
    if state.live == Live::Off {
        state.live = Live::Waiting;
    }
    vec![Cmd::Sample]
}

fn key_press(state: &mut State, key: &KeyEvent) -> Vec<Cmd> {
    // A message stays until the next key; an Esc that only dismisses it does nothing else.
    let action = keys::action_for(state, key);
    let had_status = state.status.take().is_some();
    match action {
        Some(Action::Back) if had_status => Vec::new(),
        Some(action) => apply(state, action),
        None => {
            if let KeyCode::Char(c) = key.code
                && !key
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
            {
                type_char(state, c);
            }
            Vec::new()
        }
    }
}

fn type_char(state: &mut State, c: char) {
    match state.mode {
        Mode::Filter => {
            state.cursor_mut().filter.push(c);
            let tab = state.tab;
            clamp_selection(state, tab);
        }
        Mode::SavePath => state.input.insert(c),
        Mode::ExplainInput if state.explain_text.len() < EXPLAIN_LIMIT => {
            state.explain_text.push(c);
        }
        _ => {}
    }
}

/// Carries out a keymap action.
pub fn apply(state: &mut State, action: Action) -> Vec<Cmd> {
    match action {
        Action::Quit => {
            state.quit = true;
            Vec::new()
        }
        Action::Help => {
            state.mode = Mode::Help;
            state.help_scroll = 0;
            Vec::new()
        }
        Action::CloseHelp | Action::CloseExplain => {
            state.mode = Mode::Normal;
            Vec::new()
        }
        Action::NextTab => switch_tab(state, state.tab.next()),
        Action::PrevTab => switch_tab(state, state.tab.prev()),
        Action::GoTab(tab) => switch_tab(state, tab),
        Action::Up => move_by(state, -1),
        Action::Down => move_by(state, 1),
        Action::PageUp => move_by(state, -page(state)),
        Action::PageDown => move_by(state, page(state)),
        Action::Top => move_by(state, isize::MIN / 2),
        Action::Bottom => move_by(state, isize::MAX / 2),
        Action::ChoicePrev => change_choice(state, -1),
        Action::ChoiceNext => change_choice(state, 1),
        Action::Open => open(state),
        Action::RunSmoke => run_smoke(state),
        Action::Back => back(state),
        Action::Filter => {
            state.mode = Mode::Filter;
            state.focus = Focus::List;
            Vec::new()
        }
        Action::Explain => {
            if state.report.is_some() {
                state.mode = Mode::ExplainInput;
                state.explain_text.clear();
            }
            Vec::new()
        }
        Action::Rescan => start_scan(state),
        Action::Save => start_save(state),
        Action::Accept => accept(state),
        Action::Cancel => cancel(state),
        Action::Edit(edit) => edit_input(state, edit),
        Action::Overwrite => overwrite(state),
        Action::KeepFile => keep_file(state),
        Action::RunPlan => run::run_or_stop(state),
        Action::ConfirmRun => run::confirmed(state),
        Action::CancelRun => run::cancelled(state),
        Action::QuitWhileRunning => run::quit_asked(state),
    }
}

/// Starts the smoke test, unless one is running already.
fn run_smoke(state: &mut State) -> Vec<Cmd> {
    if matches!(state.smoke, Smoke::Running { .. }) {
        return Vec::new();
    }
    state.smoke = Smoke::Running {
        step: "starting".to_string(),
        done: 0,
        total: 0,
    };
    vec![Cmd::Smoke]
}

/// Esc in the normal mode: out of the detail pane first, then the filter is cleared.
fn back(state: &mut State) -> Vec<Cmd> {
    if state.focus == Focus::Detail {
        state.focus = Focus::List;
    } else if !state.cursor().filter.is_empty() {
        state.cursor_mut().filter.clear();
    } else if state.tab == Tab::Plan {
        // A run that ended gives the screen back to the preview.
        run::close(state);
    }
    Vec::new()
}

/// Esc in a prompt: what was typed is dropped, and a save that waited for a path is called off.
fn cancel(state: &mut State) -> Vec<Cmd> {
    match state.mode {
        Mode::Filter => {
            state.cursor_mut().filter.clear();
        }
        Mode::SavePath => {
            state.pending_save = None;
            state.status = Some(Status {
                error: false,
                text: "Not saved.".to_string(),
            });
        }
        Mode::ExplainInput => state.explain_text.clear(),
        _ => {}
    }
    state.mode = Mode::Normal;
    Vec::new()
}

/// A line-editing key in whichever prompt is open.
fn edit_input(state: &mut State, edit: super::edit::Edit) -> Vec<Cmd> {
    match state.mode {
        Mode::Filter => {
            // The filter is edited at its end: the keys that delete apply.
            let mut line = super::edit::LineEdit::new(state.cursor().filter.clone());
            line.apply(edit);
            state.cursor_mut().filter = line.text;
            let tab = state.tab;
            clamp_selection(state, tab);
        }
        Mode::SavePath => state.input.apply(edit),
        Mode::ExplainInput => {
            // A pasted text is edited at its end, as the filter is.
            let mut text = super::edit::LineEdit::new(std::mem::take(&mut state.explain_text));
            text.apply(edit);
            state.explain_text = text.text;
        }
        _ => {}
    }
    Vec::new()
}

/// The answer "overwrite" to a save whose file exists.
fn overwrite(state: &mut State) -> Vec<Cmd> {
    state.mode = Mode::Normal;
    match &state.pending_save {
        Some(
            pending @ PendingSave {
                path: Some(path), ..
            },
        ) => vec![Cmd::Save(pending.request(path.clone(), true))],
        _ => Vec::new(),
    }
}

/// The answer "keep the file" to a save whose file exists: nothing is written.
fn keep_file(state: &mut State) -> Vec<Cmd> {
    state.mode = Mode::Normal;
    if let Some(PendingSave {
        path: Some(path), ..
    }) = state.pending_save.take()
    {
        state.status = Some(Status {
            error: false,
            text: format!("Kept {}; nothing saved.", path.display()),
        });
    }
    Vec::new()
}

fn switch_tab(state: &mut State, tab: Tab) -> Vec<Cmd> {
    state.tab = tab;
    state.focus = Focus::List;
    maybe_sample(state)
}

/// Rows a page moves: the body's height less the panes' frames, at least one.
fn page(state: &State) -> isize {
    isize::try_from(state.size.1.saturating_sub(8).max(1)).unwrap_or(1)
}

fn move_by(state: &mut State, delta: isize) -> Vec<Cmd> {
    if state.mode == Mode::Explained {
        state.explain_scroll = step(
            state.explain_scroll.into(),
            delta,
            super::view::explain_max_scroll(state),
        );
        return Vec::new();
    }
    if state.mode == Mode::Help {
        state.help_scroll = step(
            state.help_scroll.into(),
            delta,
            super::view::help_max_scroll(state),
        );
        return Vec::new();
    }
    if state.focus == Focus::Detail {
        let max = super::view::detail_max_scroll(state);
        let cursor = state.cursor_mut();
        cursor.scroll = step(cursor.scroll.into(), delta, max);
        return Vec::new();
    }
    let len = model::list_len(state, state.tab);
    if len == 0 {
        return Vec::new();
    }
    let cursor = state.cursor_mut();
    let next = step(cursor.selected, delta, len - 1);
    if next != cursor.selected {
        cursor.selected = next;
        cursor.scroll = 0;
    }
    Vec::new()
}

/// `from + delta`, kept within `0..=max`.
fn step<T>(from: usize, delta: isize, max: T) -> T
where
    T: TryFrom<usize> + Into<usize> + Copy,
{
    let max_usize: usize = max.into();
    let next = from.saturating_add_signed(delta).min(max_usize);
    T::try_from(next).unwrap_or(max)
}

fn change_choice(state: &mut State, delta: isize) -> Vec<Cmd> {
    if state.report.is_none() || !run::choices_free(state) {
        return Vec::new();
    }
    let field = PlanField::ALL[state.cursors[Tab::Plan.index()]
        .selected
        .min(PlanField::ALL.len() - 1)];
    let count = state.plan.values(field).len().cast_signed();
    let pick = &mut state.plan.picks[field as usize];
    *pick = (pick.cast_signed() + delta)
        .rem_euclid(count.max(1))
        .cast_unsigned();
    vec![build_plan(state)]
}

fn build_plan(state: &mut State) -> Cmd {
    state.plan.script = Script::Building;
    Cmd::BuildPlan(state.plan.choice())
}

fn open(state: &mut State) -> Vec<Cmd> {
    if state.tab == Tab::Overview {
        let Some(report) = &state.report else {
            return Vec::new();
        };
        let selected = state.cursor().selected;
        if selected < report.findings.len().min(model::OVERVIEW_FINDINGS) {
            let diagnosis = &mut state.cursors[Tab::Diagnosis.index()];
            diagnosis.filter.clear();
            diagnosis.selected = selected;
            diagnosis.scroll = 0;
            return switch_tab(state, Tab::Diagnosis);
        }
        return Vec::new();
    }
    if state.tab == Tab::Plan || model::list_len(state, state.tab) > 0 {
        state.focus = Focus::Detail;
        state.cursor_mut().scroll = 0;
    }
    Vec::new()
}

fn start_save(state: &mut State) -> Vec<Cmd> {
    let pending = if state.tab == Tab::Plan {
        match &state.plan.script {
            Script::Ready(plan) => PendingSave {
                what: "plan",
                contents: plan.script.clone(),
                executable: true,
                companions: plan.files.clone(),
                path: None,
            },
            Script::Refused(_) | Script::None => {
                state.status = Some(Status {
                    error: true,
                    text: "No plan to save: the planner did not write one for this choice."
                        .to_string(),
                });
                return Vec::new();
            }
            Script::Building => {
                state.status = Some(Status {
                    error: true,
                    text: "The plan is still being written.".to_string(),
                });
                return Vec::new();
            }
        }
    } else {
        match &state.report {
            Some(report) => PendingSave {
                what: "report",
                contents: crate::present::text::render(report),
                executable: false,
                companions: Vec::new(),
                path: None,
            },
            None => {
                state.status = Some(Status {
                    error: true,
                    text: "Nothing to save until the scan finishes.".to_string(),
                });
                return Vec::new();
            }
        }
    };
    state.input = super::edit::LineEdit::new(if pending.what == "plan" {
        PLAN_FILE
    } else {
        REPORT_FILE
    });
    state.pending_save = Some(pending);
    state.mode = Mode::SavePath;
    Vec::new()
}

fn accept(state: &mut State) -> Vec<Cmd> {
    match state.mode {
        Mode::Filter => {
            state.mode = Mode::Normal;
            Vec::new()
        }
        Mode::SavePath => {
            let name = state.input.text.trim().to_string();
            if name.is_empty() {
                state.status = Some(Status {
                    error: true,
                    text: "Type a file name, or Esc to cancel.".to_string(),
                });
                return Vec::new();
            }
            state.mode = Mode::Normal;
            let Some(pending) = &mut state.pending_save else {
                return Vec::new();
            };
            let path = PathBuf::from(name);
            pending.path = Some(path.clone());
            vec![Cmd::Save(pending.request(path, false))]
        }
        Mode::ExplainInput => {
            if state.explain_text.trim().is_empty() {
                state.status = Some(Status {
                    error: true,
                    text: "Paste the error message first, or Esc to cancel.".to_string(),
                });
                return Vec::new();
            }
            state.mode = Mode::Explained;
            state.explanation = None;
            state.explain_scroll = 0;
            vec![Cmd::Explain(state.explain_text.clone())]
        }
        _ => Vec::new(),
    }
}

/// Keeps a screen's selection inside its (possibly filtered) list.
fn clamp_selection(state: &mut State, tab: Tab) {
    let len = model::list_len(state, tab);
    let cursor = &mut state.cursors[tab.index()];
    let clamped = cursor.selected.min(len.saturating_sub(1));
    if clamped != cursor.selected {
        cursor.selected = clamped;
        cursor.scroll = 0;
    }
}

fn clamp_scrolls(state: &mut State) {
    let max = super::view::detail_max_scroll(state);
    let cursor = state.cursor_mut();
    cursor.scroll = cursor.scroll.min(max);
    state.help_scroll = state.help_scroll.min(super::view::help_max_scroll(state));
}
