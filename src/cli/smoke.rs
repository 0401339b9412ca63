//! `gpu-doctor smoke` options.

/// Arguments of `gpu-doctor smoke`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct SmokeArgs {
    /// GPU index to test (PCI bus order, as in `doctor`), or `all`.
    #[arg(long, default_value = "all")]
    pub device: String,
    /// Also measure throughput (cuBLASLt bf16 GEMM, the PTX fp32 kernel) against the card's figures.
    #[arg(long)]
    pub bench: bool,
    /// Output: text, json (the report with the results in `smoke`) or prometheus; -o FILE.
    #[command(flatten)]
    pub out: super::OutputArgs,
    /// Also compute through each framework of each Python environment (a matmul on each GPU
    /// checked against the CPU; an NCCL all-reduce with torch on two or more GPUs); results in
    /// `python_envs[].frameworks[].runtime.smoke`.
    #[arg(long)]
    pub frameworks: bool,
    /// With --frameworks: seconds each framework's import and computation may take.
    #[arg(long, value_name = "SECS", requires = "frameworks")]
    pub deep_timeout: Option<f64>,
}
