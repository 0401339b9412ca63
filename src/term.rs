//! What gpu-doctor says on stderr besides its output: errors always, warnings and notes unless
//! `-q`, what it read and decided with `-v`, every command it ran with `-vv`.
//!
//! The level is set once, by [`crate::commands::run`], before anything is printed; it is process
//! state because the messages come from every face and module, and threading a logger
//! through pure code would only carry this one number.

use std::io::Write;
use std::sync::atomic::{AtomicI8, Ordering};

/// -1 quiet, 0 normal, 1 verbose (-v), 2 and more: also each command (-vv).
static LEVEL: AtomicI8 = AtomicI8::new(0);

/// Sets the level from the counts of `-v` and `-q`.
pub(crate) fn set_level(verbose: u8, quiet: u8) {
    let level = i16::from(verbose.min(3)) - i16::from(quiet.min(3));
    LEVEL.store(
        i8::try_from(level.clamp(-1, 3)).unwrap_or(0),
        Ordering::Relaxed,
    );
}

/// The level in force.
#[must_use]
pub(crate) fn level() -> i8 {
    LEVEL.load(Ordering::Relaxed)
}

fn say(text: &str) {
    // Messages quote the machine (paths, a TOML error's line of the file, a tool's stderr):
    // control characters go here, once, for every message.
    let text = crate::sanitize::clean_lines(text);
    // A closed stderr is nobody's problem: there is no one left to tell.
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// Text already written for a person (a refusal's explanation, a question, a progress line),
/// as it is, whatever the level: where a face's own words go to stderr.
pub(crate) fn raw(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(text.as_bytes());
    let _ = stderr.flush();
}

/// An error the user must see, whatever the level: `gpu-doctor: <text>`.
pub(crate) fn error(text: &str) {
    say(&format!("gpu-doctor: {text}"));
}

/// A warning, dropped by `-q`.
pub(crate) fn warn(text: &str) {
    if level() >= 0 {
        say(&format!("gpu-doctor: warning: {text}"));
    }
}

/// Progress and other notes for a person waiting, dropped by `-q`.
pub(crate) fn note(text: &str) {
    if level() >= 0 {
        say(&format!("gpu-doctor: {text}"));
    }
}

/// What was read and decided, shown with `-v`.
pub(crate) fn verbose(text: &str) {
    if level() >= 1 {
        say(&format!("gpu-doctor: {text}"));
    }
}

/// Each command run and its outcome, shown with `-vv`.
pub(crate) fn trace(text: &str) {
    if level() >= 2 {
        say(&format!("gpu-doctor: {text}"));
    }
}
