//! `gpu-doctor smoke`: proves the GPU computes, through the CUDA driver API loaded at run time.

use crate::host::Host;

/// Arguments of `gpu-doctor smoke`.
#[derive(Debug, Clone, clap::Args)]
pub struct SmokeArgs {
    /// GPU index to test, or `all`.
    #[arg(long, default_value = "all")]
    pub device: String,
    /// Also measure throughput (cuBLASLt GEMM, the PTX kernel) against the card's figures.
    #[arg(long)]
    pub bench: bool,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the smoke test and returns the exit code.
#[must_use]
pub fn run(_host: &Host, _args: &SmokeArgs) -> u8 {
    eprintln!("gpu-doctor: smoke is not built yet");
    crate::app::exit::FAILED
}
