//! `schema`, `completions` and `man`: documents of gpu-doctor itself, needing neither the
//! machine nor the settings.

use std::path::Path;

use crate::exit::{CliError, CliResult, ExitStatus};
use crate::output::emit;

pub(super) fn schema() -> CliResult {
    emit(&crate::schema::render())?;
    Ok(ExitStatus::Success)
}

pub(super) fn completions(shell: crate::cli::CompletionShell) -> CliResult {
    emit(&crate::cli::docs::completions(shell))?;
    Ok(ExitStatus::Success)
}

pub(super) fn man(out: &Path) -> CliResult {
    crate::cli::docs::write_man_pages(out).map_err(CliError::failure)?;
    Ok(ExitStatus::Success)
}
