//! `gpu-doctor explain`: reads the error text (the arguments, `--log FILE` or standard input),
//! examines the machine and prints the answer.
//!
//! Exit 0 when a finding on this machine explains the text, 1 when none does (or no known
//! message was found), 2 when there is no text or the log cannot be read, 3 when gpu-doctor
//! itself failed.
//!
//! The log is the user's own file: it is read as given, not inside `--root` (which names the
//! machine examined, not where the log lives), without blocking on a FIFO, and bounded: up to
//! [`WHOLE`] bytes whole, a larger file as its first and last [`HALF`].

use std::io::{IsTerminal, Read, Seek, SeekFrom};
use std::path::Path;

use super::settings::Settings;
use crate::cli::explain::ExplainArgs;
use crate::exit::{CliError, CliResult, ExitStatus};

/// A log up to this size is read whole.
pub(super) const WHOLE: u64 = 32 * 1024 * 1024;
/// Of a larger log, this much of its head and of its tail.
pub(super) const HALF: u64 = 16 * 1024 * 1024;

pub(super) fn run(settings: &Settings, args: &ExplainArgs) -> CliResult {
    let deep = settings.deep(
        args.deep,
        args.deep_timeout,
        crate::deep::DEFAULT_TIMEOUT_SECS,
        false,
    )?;
    let (bytes, cut) = text(args)?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(CliError::usage(
            "nothing to explain: give the error as arguments, --log FILE, or on standard input",
        ));
    }
    let report = crate::examine::explain_guarded(
        &settings.host,
        &settings.manifests,
        deep.as_ref(),
        &bytes,
        cut,
    )
        .map_err(|message| {
            CliError::failure(format!(
                "internal error while examining the machine: {message}\n\
                 This is a bug in gpu-doctor; please report it with the output of `gpu-doctor doctor --json`."
            ))
        })?;
    if let Some(warning) = &report.manifests.warning {
        crate::term::warn(warning);
    }
    let Some(answer) = &report.explain else {
        return Err(CliError::failure("the explanation is missing (a bug)"));
    };
    let named = answer.cause.is_some();
    let out = if args.json {
        crate::present::json::render(&report)
    } else {
        crate::explain::render::render(&report, answer, settings.paint())
    };
    crate::output::emit(&out)?;
    Ok(ExitStatus::problem_if(!named))
}

/// The text to explain and, when it was shortened, how.
fn text(args: &ExplainArgs) -> Result<(Vec<u8>, Option<String>), CliError> {
    match &args.log {
        Some(path) if path.as_os_str() == "-" => stdin(),
        Some(path) => log(path),
        None if !args.text.is_empty() => Ok((args.text.join(" ").into_bytes(), None)),
        None => stdin(),
    }
}

/// Standard input, up to [`WHOLE`] bytes (more is left unread: a pipe cannot be read from its
/// end without reading all of it).
fn stdin() -> Result<(Vec<u8>, Option<String>), CliError> {
    let input = std::io::stdin();
    if input.is_terminal() {
        crate::term::note("paste the error text, then press Ctrl-D on a line of its own");
    }
    let mut bytes = Vec::new();
    input
        .lock()
        .take(WHOLE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::usage(format!("cannot read standard input: {e}")))?;
    if bytes.len() as u64 > WHOLE {
        bytes.truncate(usize::try_from(WHOLE).unwrap_or(usize::MAX));
        return Ok((
            bytes,
            Some(format!(
                "standard input gave more than {} MiB; only its first {} MiB were read",
                WHOLE >> 20,
                WHOLE >> 20
            )),
        ));
    }
    Ok((bytes, None))
}

/// The user's log file: a regular file only, whole up to [`WHOLE`], else its head and tail.
fn log(path: &Path) -> Result<(Vec<u8>, Option<String>), CliError> {
    let name = path.display();
    let refuse = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::InvalidInput => CliError::usage(format!(
            "--log {name}: {e}; pipe it on standard input instead (`... | gpu-doctor explain`)"
        )),
        _ => CliError::usage(format!("--log {name}: {e}")),
    };
    let mut file = crate::host::fs::open_regular(path).map_err(refuse)?;
    let size = file.metadata().map_err(refuse)?.len();
    let mut bytes = Vec::new();
    if size <= WHOLE {
        file.by_ref()
            .take(WHOLE)
            .read_to_end(&mut bytes)
            .map_err(refuse)?;
        return Ok((bytes, None));
    }
    file.by_ref()
        .take(HALF)
        .read_to_end(&mut bytes)
        .map_err(refuse)?;
    bytes.extend_from_slice(b"\n[... the middle of the log was not read ...]\n");
    file.seek(SeekFrom::Start(size - HALF)).map_err(refuse)?;
    file.take(HALF).read_to_end(&mut bytes).map_err(refuse)?;
    Ok((
        bytes,
        Some(format!(
            "the log is {} MiB; its first and last {} MiB were read",
            size >> 20,
            HALF >> 20
        )),
    ))
}
