//! The scan's time budget: `--timeout` bounds each command, and the whole scan's commands
//! together get `--timeout` plus [`SLACK`]. Once it is spent no new command is started (each
//! one started gets at most what is left), and what was not run is named in the report's
//! `probes[]` (`budget`). Eight hanging `nvcc` then cost one `--timeout`, not eight.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What the scan may take beyond one `--timeout`: commands that run one after another
/// (`nvidia-smi -q` then its CSV query, then `nvcc`) share it.
pub const SLACK: Duration = Duration::from_millis(1000);

/// How many skipped commands are named.
const MAX_SKIPPED: usize = 20;

#[derive(Debug)]
pub struct Budget {
    end: Instant,
    skipped: Mutex<Vec<String>>,
}

impl Budget {
    /// A budget of `total` from now.
    #[must_use]
    pub fn new(total: Duration) -> Budget {
        Budget {
            end: Instant::now() + total,
            skipped: Mutex::new(Vec::new()),
        }
    }

    /// Time left; zero when spent.
    #[must_use]
    pub fn remaining(&self) -> Duration {
        self.end.saturating_duration_since(Instant::now())
    }

    /// Notes a command that was not started.
    pub fn skip(&self, what: String) {
        if let Ok(mut s) = self.skipped.lock()
            && s.len() < MAX_SKIPPED
        {
            s.push(what);
        }
    }

    /// The commands not started, in order.
    #[must_use]
    pub fn skipped(&self) -> Vec<String> {
        self.skipped.lock().map(|s| s.clone()).unwrap_or_default()
    }
}
