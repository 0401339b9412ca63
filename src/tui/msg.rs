//! What flows through the TUI: [`Msg`]s into [`super::update::update`] (keys, ticks, results of
//! background work) and the [`Cmd`]s it returns for the runtime to carry out (The Elm
//! Architecture: the update function decides, the runtime does).

use std::path::PathBuf;
use std::time::Duration;

use crossterm::event::{KeyEvent, MouseEvent};

use super::services::{PlanChoice, PlanOptions, PlanText, SmokeEvent};
use super::state::{Phase, Step};
use crate::report::{Gpu, Report};

/// Something that happened.
#[derive(Debug, Clone)]
pub enum Msg {
    /// The app opened: start the scan.
    Start,
    Key(KeyEvent),
    /// Text the terminal pasted in one piece (bracketed paste).
    Paste(String),
    Mouse(MouseEvent),
    /// The terminal's new size (columns, rows).
    Resize(u16, u16),
    /// Time passed; the runtime's clock since the app opened.
    Tick(Duration),
    /// The scan finished: the report, the plan choices valid for it, and how long it took.
    Scanned {
        report: Box<Report>,
        options: PlanOptions,
        took: Duration,
    },
    /// The scan itself broke (a gpu-doctor bug); the message says how.
    ScanFailed(String),
    /// A phase of the scan started or finished.
    Phase(Phase, Step),
    /// One live reading of every GPU (or why there is none), and how long it took.
    Sample(Result<Vec<Gpu>, String>, Duration),
    /// A plan script, or why none could be written.
    PlanBuilt(Result<PlanText, String>),
    /// A save finished: every file written, main file first.
    Saved(Result<Vec<PathBuf>, SaveError>),
    Smoke(SmokeEvent),
    /// The answer for an error text.
    Explained(Box<crate::report::explain::Explain>),
    /// sudo answered on the terminal: root steps may run, or why not.
    Authorized(Result<(), String>),
    /// Progress of the plan running from the Plan screen.
    PlanRun(super::services::RunEvent),
    /// The terminal stopped sending input (closed, or read failed).
    InputClosed,
}

/// Something the runtime must do because of a [`Msg`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cmd {
    /// Examine the machine (in the background) and answer with [`Msg::Scanned`].
    Scan,
    /// Read live GPU sensors once and answer with [`Msg::Sample`].
    Sample,
    /// Write the plan for this choice and answer with [`Msg::PlanBuilt`].
    BuildPlan(PlanChoice),
    /// Write files; an existing one is replaced only with `overwrite`.
    Save(SaveRequest),
    /// Run the smoke test and answer with [`Msg::Smoke`] events.
    Smoke,
    /// Explain this error text on the report's machine and answer with [`Msg::Explained`].
    Explain(String),
    /// Give the terminal back for a while so sudo can ask for the password there, and answer
    /// with [`Msg::Authorized`].
    Authorize,
    /// Run the plan, logging to the path, and answer with [`Msg::PlanRun`] events.
    RunPlan(Box<PlanText>, PathBuf),
    /// Create this file: the running plan stops before its next step.
    StopPlan(PathBuf),
}

/// A save: the main file, the files that go with it (a conda plan's `environment.yml`, which
/// its script reads from the same folder), and whether existing files may be replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaveRequest {
    pub path: PathBuf,
    pub contents: String,
    /// A script: written with mode 755, as `gpu-doctor plan -o` does.
    pub executable: bool,
    /// (file name, contents), written next to `path`.
    pub companions: Vec<(String, String)>,
    pub overwrite: bool,
}

/// Why a save did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaveError {
    /// The file is there; the user is asked before it is replaced.
    Exists(PathBuf),
    /// Anything else, as the OS said it.
    Failed(String),
}
