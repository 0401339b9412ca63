//! The binary: everything is in the library (`gpu_doctor::commands::main`), where the tests
//! reach it too.

fn main() -> std::process::ExitCode {
    gpu_doctor::commands::main()
}
