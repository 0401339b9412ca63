//! gpu-doctor's entry point: parse arguments, run, map the outcome to an exit code.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // The driver probe child is this same binary; it must not parse the public CLI.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == gpu_doctor::host::gpu::CHILD_ARG)
    {
        return ExitCode::from(u8::try_from(gpu_doctor::host::gpu::child_main()).unwrap_or(3));
    }
    let mut args = std::env::args_os();
    if args
        .nth(1)
        .is_some_and(|a| a == gpu_doctor::smoke::child::CHILD_ARG)
    {
        let request = args
            .next()
            .and_then(|a| a.into_string().ok())
            .unwrap_or_default();
        return ExitCode::from(
            u8::try_from(gpu_doctor::smoke::child::child_main(&request)).unwrap_or(3),
        );
    }
    let cli = gpu_doctor::cli::Cli::parse();
    ExitCode::from(gpu_doctor::app::run(&cli))
}
