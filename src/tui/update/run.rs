//! The Plan screen's run: `x` asks, `y` runs (after sudo, when root steps need it), `x` again
//! stops before the next step, and `x` after a stop or a failure runs the plan again, which
//! resumes where it ended. Pure, like the rest of [`super`].

use super::super::msg::Cmd;
use super::super::run::{PlanRun, RunPhase};
use super::super::services::{Outcome, RunEvent};
use super::super::state::{Mode, Script, State, Status, Tab};

/// `x` on the Plan screen: ask to run the plan shown, or stop the one running.
pub(super) fn run_or_stop(state: &mut State) -> Vec<Cmd> {
    if let Some(run) = state.plan.run.as_mut().filter(|r| r.active()) {
        if matches!(run.phase, RunPhase::Authorizing) {
            return Vec::new();
        }
        state.status = Some(Status {
            error: false,
            text: "Stopping before the next step; the running one finishes first.".to_string(),
        });
        return run.ask_stop().map(Cmd::StopPlan).into_iter().collect();
    }
    let why = match &state.plan.script {
        Script::Ready(plan) => match &plan.cannot_run {
            Some(why) => Some(why.clone()),
            None if plan.steps.is_empty() => {
                Some("The plan has no steps: there is nothing to run.".to_string())
            }
            None => None,
        },
        Script::Building => Some("The plan is still being written.".to_string()),
        Script::Refused(_) | Script::None => {
            Some("No plan to run: the planner did not write one for this choice.".to_string())
        }
    };
    if let Some(text) = why {
        state.status = Some(Status { error: true, text });
        return Vec::new();
    }
    state.mode = Mode::ConfirmRun;
    Vec::new()
}

/// The plan a run would start: the one that ended here (to resume it), else the one shown.
fn to_run(state: &State) -> Option<PlanRun> {
    if let Some(run) = &state.plan.run {
        return Some(run.clone());
    }
    match &state.plan.script {
        Script::Ready(plan) => Some(PlanRun::new(plan.clone(), state.plan.log.clone())),
        _ => None,
    }
}

/// `y`: run it. Root steps make sudo ask on the terminal first.
pub(super) fn confirmed(state: &mut State) -> Vec<Cmd> {
    state.mode = Mode::Normal;
    let Some(mut run) = to_run(state) else {
        return Vec::new();
    };
    let authorize = run.root_steps() > 0;
    run.start(authorize);
    let cmd = if authorize {
        Cmd::Authorize
    } else {
        Cmd::RunPlan(Box::new(run.plan.clone()), run.log.clone())
    };
    state.plan.run = Some(run);
    state.focus = super::super::state::Focus::List;
    vec![cmd]
}

/// `n` or Esc: nothing runs.
pub(super) fn cancelled(state: &mut State) -> Vec<Cmd> {
    state.mode = Mode::Normal;
    state.status = Some(Status {
        error: false,
        text: "Not run; nothing was changed.".to_string(),
    });
    Vec::new()
}

/// `q` while a plan runs: quitting would leave the machine half-changed, so say how to stop.
pub(super) fn quit_asked(state: &mut State) -> Vec<Cmd> {
    state.status = Some(Status {
        error: true,
        text: "A plan is running: x stops it before the next step; Ctrl-C ends it now and quits."
            .to_string(),
    });
    Vec::new()
}

/// sudo answered.
pub(super) fn authorized(state: &mut State, result: Result<(), String>) -> Vec<Cmd> {
    state.dirty = true;
    let Some(run) = state.plan.run.as_mut() else {
        return Vec::new();
    };
    match result {
        Ok(()) => {
            run.phase = RunPhase::Running;
            vec![Cmd::RunPlan(Box::new(run.plan.clone()), run.log.clone())]
        }
        Err(why) => {
            run.refused(why.clone());
            state.status = Some(Status {
                error: true,
                text: format!("Not run: {why}"),
            });
            Vec::new()
        }
    }
}

/// An event of the running plan. When it ends, the status says how, and a plan that ran to
/// the end has the machine examined again, so every screen shows what it changed.
pub(super) fn event(state: &mut State, event: RunEvent) -> Vec<Cmd> {
    state.dirty = true;
    let Some(run) = state.plan.run.as_mut() else {
        return Vec::new();
    };
    let ended = matches!(event, RunEvent::Ended(_));
    let mut cmds: Vec<Cmd> = run.apply(event).map(Cmd::StopPlan).into_iter().collect();
    if !ended {
        return cmds;
    }
    let log = run.log.display().to_string();
    let (error, text) = match run.outcome() {
        Some(Outcome::Done) => (
            false,
            format!("The plan ran to the end (log: {log}); examining the machine again."),
        ),
        Some(Outcome::Stopped) => (
            false,
            "Stopped between steps, as asked: x runs it again from where it stopped.".to_string(),
        ),
        Some(Outcome::Failed(_)) => (
            true,
            format!(
                "Step {} failed: its output is below and in {log}; x runs the plan again.",
                run.failed_step().map_or("?", |s| s.step.id.as_str())
            ),
        ),
        Some(Outcome::Error(why)) => (true, format!("Not run: {why}")),
        None => (false, String::new()),
    };
    let rescan = matches!(run.outcome(), Some(Outcome::Done));
    state.status = Some(Status { error, text });
    if rescan {
        cmds.extend(super::start_scan(state));
    }
    cmds
}

/// Whether the plan's choices may change: not while a plan runs; after it ended, a new
/// choice closes the finished run.
pub(super) fn choices_free(state: &mut State) -> bool {
    if state.plan.run.as_ref().is_some_and(PlanRun::active) {
        state.status = Some(Status {
            error: true,
            text: "A plan is running; the choices stay until it ends.".to_string(),
        });
        return false;
    }
    state.plan.run = None;
    true
}

/// Esc on the Plan screen: a run that ended gives the screen back to the preview.
pub(super) fn close(state: &mut State) {
    if state.tab == Tab::Plan && state.plan.run.as_ref().is_some_and(|r| !r.active()) {
        state.plan.run = None;
    }
}
