//! The interactive terminal app: the report's screens, the plan builder and the smoke test.

use crate::host::Host;

/// Opens the TUI and returns the exit code.
#[must_use]
pub fn run(_host: &Host) -> u8 {
    eprintln!("gpu-doctor: the TUI is not built yet");
    crate::app::exit::FAILED
}
