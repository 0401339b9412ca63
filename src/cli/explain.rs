//! `gpu-doctor explain` options.

use std::path::PathBuf;

/// Arguments of `gpu-doctor explain`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ExplainArgs {
    /// The error text, as words or one quoted argument (put `--` before a text that starts
    /// with `-`). Without it and without --log, the text is read from standard input.
    #[arg(value_name = "TEXT")]
    pub text: Vec<String>,
    /// Read the text from FILE, any size: up to 32 MiB is read whole, a larger log as its
    /// first and last 16 MiB. `-` is standard input. A FIFO or a device is refused (pipe it
    /// on standard input instead). Read as given, also under --root.
    #[arg(long, value_name = "FILE", conflicts_with = "text")]
    pub log: Option<PathBuf>,
    /// Print the doctor report with the answer in `explain`, as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also import each framework with its environment's interpreter, as `doctor --deep`
    /// does: what the frameworks say themselves can name the cause.
    #[arg(long)]
    pub deep: bool,
    /// With --deep: seconds each framework's import and questions may take.
    #[arg(long, value_name = "SECS", requires = "deep")]
    pub deep_timeout: Option<f64>,
}
