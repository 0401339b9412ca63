//! `gpu-doctor tui` (and plain `gpu-doctor` on a terminal): the interactive app. Exit 0 when
//! the user quits, 2 without a terminal, 3 when the terminal failed or the app crashed.

use super::settings::Settings;
use crate::exit::{CliError, CliResult, ExitStatus};
use crate::tui::TuiError;

pub(super) fn run(settings: &Settings) -> CliResult {
    if dumb_terminal() {
        crate::term::note("TERM=dumb cannot draw the interactive app; printing the text report");
        return super::doctor::run(settings, &super::doctor::text_report());
    }
    crate::tui::run(
        &settings.host,
        std::sync::Arc::clone(&settings.manifests),
        settings.color(true),
    )
    .map_err(|e| {
        let status = match e {
            TuiError::NoTerminal => ExitStatus::Usage,
            TuiError::Terminal(_) | TuiError::Crashed => ExitStatus::Failure,
        };
        CliError::new(status, e.to_string())
    })?;
    Ok(ExitStatus::Success)
}

/// `TERM=dumb` (Emacs shells, some CI consoles): no cursor movement, so no full-screen app.
pub(super) fn dumb_terminal() -> bool {
    std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}
