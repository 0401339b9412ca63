//! A plan run from the Plan screen (`x`): what each step is doing, what the script printed, and
//! how the run ended. Plain data and the pure rules that read the runner's events into it
//! ([`crate::plan::execute::run_watched`] does the running, through the services).
//!
//! Stopping is between steps: the script checks a file before each step ([`PlanRun::stop`]).
//! Running the same plan again resumes: every step checks first whether it is done, so the
//! steps finished before are skipped, and the screen keeps saying which they were.

use std::collections::VecDeque;
use std::path::PathBuf;

use super::services::{Outcome, PlanStep, PlanText, RunEvent};

/// How many of the script's last lines the screen keeps (the log has every line).
pub const OUTPUT_LINES: usize = 2000;

/// Where a step is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepState {
    ToDo,
    Running,
    Done,
    /// It found itself done already; why.
    Skipped(String),
    Failed,
}

/// One step of the plan being run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunStep {
    pub step: PlanStep,
    pub state: StepState,
    /// Done or skipped in an earlier start of this run (before a stop or a failure).
    pub earlier: bool,
}

/// Where the run is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunPhase {
    /// sudo is asking for the password on the terminal.
    Authorizing,
    Running,
    Ended(Outcome),
}

/// A plan run and what it has shown so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanRun {
    /// The plan it runs: kept, so a choice changed meanwhile does not change what runs.
    pub plan: PlanText,
    pub steps: Vec<RunStep>,
    /// The script's last lines, oldest first.
    pub output: VecDeque<String>,
    pub phase: RunPhase,
    /// The file that stops the script before its next step, once the script started.
    pub stop: Option<PathBuf>,
    /// The user asked to stop after the running step.
    pub stop_asked: bool,
    /// Where every line is logged (`plan --execute`'s default log).
    pub log: PathBuf,
    /// How many times it was started: a resume is a second start.
    pub starts: u32,
    /// The step now running (index into `steps`).
    current: Option<usize>,
}

impl PlanRun {
    /// A run of `plan` about to start, logging to `log`.
    #[must_use]
    pub fn new(plan: PlanText, log: PathBuf) -> PlanRun {
        let steps = plan
            .steps
            .iter()
            .map(|step| RunStep {
                step: step.clone(),
                state: StepState::ToDo,
                earlier: false,
            })
            .collect();
        PlanRun {
            plan,
            steps,
            output: VecDeque::new(),
            phase: RunPhase::Authorizing,
            stop: None,
            stop_asked: false,
            log,
            starts: 0,
            current: None,
        }
    }

    /// Starts it (again): steps finished before keep their state (those done, marked as done
    /// by an earlier start); the rest are to do. `authorize`: sudo must ask first.
    pub fn start(&mut self, authorize: bool) {
        for s in &mut self.steps {
            match s.state {
                StepState::Done => s.earlier = true,
                StepState::Skipped(_) => {}
                StepState::ToDo | StepState::Running | StepState::Failed => {
                    s.state = StepState::ToDo;
                }
            }
        }
        if self.starts > 0 {
            self.push(format!(
                "── run {} of this plan: every step checks first whether it is done ──",
                self.starts + 1
            ));
        }
        self.starts += 1;
        self.stop = None;
        self.stop_asked = false;
        self.current = None;
        self.phase = if authorize {
            RunPhase::Authorizing
        } else {
            RunPhase::Running
        };
    }

    /// The script is running (or sudo is asking for it to).
    #[must_use]
    pub fn active(&self) -> bool {
        !matches!(self.phase, RunPhase::Ended(_))
    }

    /// How many steps run as root.
    #[must_use]
    pub fn root_steps(&self) -> usize {
        self.steps.iter().filter(|s| s.step.root).count()
    }

    /// The run cannot start: why, as its outcome.
    pub fn refused(&mut self, why: String) {
        self.push(format!("Not run: {why}"));
        self.phase = RunPhase::Ended(Outcome::Error(why));
    }

    /// Reads one event of the runner. Returns the stop file to create now: the user asked to
    /// stop before the script had said where its file is.
    pub fn apply(&mut self, event: RunEvent) -> Option<PathBuf> {
        match event {
            RunEvent::Started { stop, .. } => {
                self.stop = Some(stop.clone());
                if self.stop_asked {
                    return Some(stop);
                }
            }
            RunEvent::Output(line) => self.push(line),
            RunEvent::Step(n) => {
                let index = n.checked_sub(1).filter(|&i| i < self.steps.len());
                if let Some(i) = index {
                    self.steps[i].state = StepState::Running;
                }
                self.current = index;
            }
            RunEvent::Skipped(why) => self.finish_current(StepState::Skipped(why)),
            RunEvent::StepDone => self.finish_current(StepState::Done),
            RunEvent::StepFailed => self.finish_current(StepState::Failed),
            RunEvent::Ended(outcome) => {
                // A step left running when the script ended did not finish.
                if !matches!(outcome, Outcome::Done) {
                    self.finish_current(StepState::Failed);
                }
                self.current = None;
                self.stop = None;
                self.stop_asked = false;
                self.phase = RunPhase::Ended(outcome);
            }
        }
        None
    }

    /// Asks the script to stop before its next step. Returns the file to create, when the
    /// script has said where it is (else [`PlanRun::apply`] returns it once it does).
    pub fn ask_stop(&mut self) -> Option<PathBuf> {
        self.stop_asked = true;
        self.stop.clone()
    }

    /// The outcome, once it ended.
    #[must_use]
    pub fn outcome(&self) -> Option<&Outcome> {
        match &self.phase {
            RunPhase::Ended(outcome) => Some(outcome),
            _ => None,
        }
    }

    /// The step that failed, if one did.
    #[must_use]
    pub fn failed_step(&self) -> Option<&RunStep> {
        self.steps.iter().find(|s| s.state == StepState::Failed)
    }

    /// The running step ended: only a skip keeps the mark of an earlier run (the step found
    /// that run's work in place); done or failed, it ran now.
    fn finish_current(&mut self, state: StepState) {
        if let Some(step) = self.current.take().and_then(|i| self.steps.get_mut(i)) {
            step.earlier &= matches!(state, StepState::Skipped(_));
            step.state = state;
        }
    }

    fn push(&mut self, line: String) {
        if self.output.len() == OUTPUT_LINES {
            self.output.pop_front();
        }
        self.output.push_back(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(ids: &[&str]) -> PlanText {
        PlanText {
            steps: ids
                .iter()
                .map(|id| PlanStep {
                    id: (*id).to_string(),
                    title: format!("do {id}"),
                    root: *id != "venv",
                })
                .collect(),
            ..PlanText::default()
        }
    }

    #[test]
    fn events_move_each_step_and_a_failure_stays_on_its_step() {
        let mut run = PlanRun::new(plan(&["keyring", "driver", "venv"]), "log".into());
        run.start(false);
        assert_eq!(run.root_steps(), 2);
        run.apply(RunEvent::Step(1));
        assert_eq!(run.steps[0].state, StepState::Running);
        run.apply(RunEvent::Skipped("already there".to_string()));
        run.apply(RunEvent::Step(2));
        run.apply(RunEvent::Output("Setting up nvidia-driver".to_string()));
        run.apply(RunEvent::StepDone);
        run.apply(RunEvent::Step(3));
        run.apply(RunEvent::Ended(Outcome::Failed(Some(1))));
        let states: Vec<&StepState> = run.steps.iter().map(|s| &s.state).collect();
        assert_eq!(
            states,
            [
                &StepState::Skipped("already there".to_string()),
                &StepState::Done,
                &StepState::Failed
            ]
        );
        assert_eq!(run.failed_step().map(|s| s.step.id.as_str()), Some("venv"));
        assert!(!run.active());
        // Again: what was finished is kept, what this run did marked; the failed step is to do.
        run.start(false);
        assert!(!run.steps[0].earlier && run.steps[1].earlier);
        assert_eq!(run.steps[2].state, StepState::ToDo);
        assert!(run.output.back().is_some_and(|l| l.contains("run 2")));
    }

    #[test]
    fn a_stop_asked_before_the_script_started_is_passed_on_when_it_does() {
        let mut run = PlanRun::new(plan(&["a", "b"]), "log".into());
        run.start(true);
        assert_eq!(run.phase, RunPhase::Authorizing);
        assert_eq!(run.ask_stop(), None);
        let file = PathBuf::from("/tmp/x/stop");
        assert_eq!(
            run.apply(RunEvent::Started {
                stop: file.clone(),
                group: 7
            }),
            Some(file.clone())
        );
        assert_eq!(run.ask_stop(), Some(file));
        run.apply(RunEvent::Ended(Outcome::Stopped));
        assert!(!run.stop_asked && run.stop.is_none());
    }

    #[test]
    fn output_keeps_the_last_lines_only() {
        let mut run = PlanRun::new(plan(&["a"]), "log".into());
        for i in 0..OUTPUT_LINES + 5 {
            run.apply(RunEvent::Output(i.to_string()));
        }
        assert_eq!(run.output.len(), OUTPUT_LINES);
        assert_eq!(run.output.front().map(String::as_str), Some("5"));
    }
}
