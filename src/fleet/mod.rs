//! `gpu-doctor report merge`: many nodes' reports into one fleet summary. (Being written.)

use crate::cli::MergeArgs;
use crate::present::paint::Paint;

/// Runs `report merge` and returns the exit code.
#[must_use]
pub fn run(args: &MergeArgs, paint: Paint) -> u8 {
    let _ = (args, paint);
    crate::app::exit::FAILED
}
