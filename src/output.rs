//! Where a command's output goes: stdout, or `-o FILE` replaced atomically
//! ([`crate::outfile`]). A closed pipe (`gpu-doctor doctor | head`) is success, as in ripgrep
//! and uv; any other write error is the command's failure.

use std::io::Write;
use std::path::Path;

use crate::exit::CliError;

/// Writes `text` to stdout.
///
/// # Errors
/// When stdout cannot be written (other than a closed pipe).
pub(crate) fn emit(text: &str) -> Result<(), CliError> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::failure(format!("cannot write the report: {e}"))),
    }
}

/// Writes `text` to `output` (replaced atomically) or, without one, to stdout.
///
/// # Errors
/// When the file or stdout cannot be written.
pub(crate) fn deliver(text: &str, output: Option<&Path>) -> Result<(), CliError> {
    match output {
        None => emit(text),
        Some(path) => {
            crate::outfile::replace(path, text).map_err(CliError::failure)?;
            crate::term::verbose(&format!("wrote {}", path.display()));
            Ok(())
        }
    }
}

/// Writes `value` as pretty JSON and a newline to stdout, DEL, C1 and invisible characters
/// escaped ([`crate::sanitize::json_controls`]).
///
/// # Errors
/// When it cannot be rendered or written.
pub(crate) fn emit_json<T: serde::Serialize>(value: &T) -> Result<(), CliError> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| CliError::failure(format!("cannot render JSON: {e}")))?;
    text.push('\n');
    emit(&crate::sanitize::json_controls(text))
}
