//! Command-line definitions (clap types only; [`crate::app`] acts on them).

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Finds out why a GPU does not work with an ML framework, and what to install to fix it.
#[derive(Debug, Parser)]
#[command(name = "gpu-doctor", version, about, long_about = None)]
pub struct Cli {
    /// Examine DIR as if it were `/` (fixtures and tests): files, PATH look-ups and commands
    /// stay inside DIR; NVML and libcuda are not loaded and interpreters are not run.
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// Seconds any one command (nvidia-smi, nvcc, python) may run before it is stopped.
    #[arg(long, global = true, value_name = "SECS", default_value_t = 5.0)]
    pub timeout: f64,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Examine this machine's GPUs, driver, CUDA libraries and Python frameworks.
    Doctor {
        /// Print the report as JSON (schema in schema/report.schema.json) on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Print the JSON Schema of `doctor --json`.
    Schema,
}
