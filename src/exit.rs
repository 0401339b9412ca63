//! How a command ends: its [`ExitStatus`] (the four codes README and `--help` document) and,
//! when it failed, a [`CliError`] that says why. Commands return [`CliResult`]; `main` prints
//! the error once and turns the status into the process's exit code, so no other place picks
//! a number.
//!
//! A leaf module: it depends on nothing in the crate.

/// What the exit code tells a script or a CI job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ExitStatus {
    /// 0: done, and nothing needs attention.
    Success,
    /// 1: done, and the output names a problem (an error finding, an unmet requirement, a
    /// failed smoke test, a node that needs attention, a plan that cannot work here).
    Problem,
    /// 2: the command line, a setting or an input file was wrong; nothing was done.
    Usage,
    /// 3: gpu-doctor itself could not do its job (could not write, could not run, a bug).
    Failure,
}

impl ExitStatus {
    /// The process exit code.
    #[must_use]
    pub fn code(self) -> u8 {
        match self {
            ExitStatus::Success => 0,
            ExitStatus::Problem => 1,
            ExitStatus::Usage => 2,
            ExitStatus::Failure => 3,
        }
    }

    /// [`ExitStatus::Problem`] when `problem` holds, else success.
    #[must_use]
    pub fn problem_if(problem: bool) -> ExitStatus {
        if problem {
            ExitStatus::Problem
        } else {
            ExitStatus::Success
        }
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(status: ExitStatus) -> Self {
        std::process::ExitCode::from(status.code())
    }
}

/// A command that stopped: the status to exit with and what to tell the user on stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CliError {
    pub status: ExitStatus,
    pub said: Vec<Said>,
}

/// One thing a [`CliError`] tells the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Said {
    /// A `gpu-doctor: <line>` message.
    Error(String),
    /// Text printed as it is (a plan's refusal, which is a small report of its own).
    Text(String),
}

impl CliError {
    /// A wrong command line, setting or input (exit 2).
    pub(crate) fn usage(message: impl Into<String>) -> CliError {
        CliError::new(ExitStatus::Usage, message)
    }

    /// gpu-doctor could not do its job (exit 3).
    pub(crate) fn failure(message: impl Into<String>) -> CliError {
        CliError::new(ExitStatus::Failure, message)
    }

    /// A problem found, said on stderr rather than in the output (exit 1).
    pub(crate) fn problem(message: impl Into<String>) -> CliError {
        CliError::new(ExitStatus::Problem, message)
    }

    /// `status` with one message.
    pub(crate) fn new(status: ExitStatus, message: impl Into<String>) -> CliError {
        CliError {
            status,
            said: vec![Said::Error(message.into())],
        }
    }

    /// `status` with nothing more to say: the output already told (a JSON error object).
    #[must_use]
    pub(crate) fn silent(status: ExitStatus) -> CliError {
        CliError {
            status,
            said: Vec::new(),
        }
    }

    /// This error with one more message after what it says.
    #[must_use]
    pub(crate) fn and(mut self, message: impl Into<String>) -> CliError {
        self.said.push(Said::Error(message.into()));
        self
    }
}

/// What every command returns.
pub(crate) type CliResult = Result<ExitStatus, CliError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_four_in_order_of_gravity() {
        let all = [
            ExitStatus::Success,
            ExitStatus::Problem,
            ExitStatus::Usage,
            ExitStatus::Failure,
        ];
        assert_eq!(all.map(ExitStatus::code), [0, 1, 2, 3]);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(ExitStatus::problem_if(true), ExitStatus::Problem);
        assert_eq!(ExitStatus::problem_if(false), ExitStatus::Success);
    }

    #[test]
    fn errors_keep_what_they_say_in_order() {
        let e = CliError::failure("first").and("second");
        assert_eq!(e.status, ExitStatus::Failure);
        assert_eq!(
            e.said,
            [Said::Error("first".into()), Said::Error("second".into())]
        );
        assert!(CliError::silent(ExitStatus::Usage).said.is_empty());
    }
}
