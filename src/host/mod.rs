//! The only door to the machine: files (below a root), environment, PATH look-ups, commands
//! with deadlines, and whether the GPU libraries may be loaded at all.
//!
//! Probes take a `&Host` and nothing else from the outside world, which is what lets
//! `--root DIR` turn a folder into a machine for tests.

pub mod cmd;
pub mod env;
pub mod fs;
pub mod gpu;
pub mod ranged;
mod which_sys;

use std::path::{Path, PathBuf};
use std::time::Duration;

pub use cmd::CmdOutput;
pub use env::Env;
pub use fs::RootFs;

/// How long any one command may run unless told otherwise (`--timeout`).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// Variables a child probe must not inherit: the driver-level view has to see every GPU.
/// Their values are reported instead.
pub const GPU_MASKING_VARS: [&str; 2] = ["CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES"];

/// The machine as probes see it.
#[derive(Debug, Clone)]
pub struct Host {
    pub fs: RootFs,
    pub env: Env,
    /// Deadline for each command.
    pub timeout: Duration,
    /// The user's settings (config file and `GPU_DOCTOR_*` variables), read once at start.
    pub config: crate::config::Config,
    /// NVML and libcuda may be loaded (a real run) or not (`--root`, where a fixture stands in).
    live_gpu: bool,
}

impl Host {
    /// The machine gpu-doctor runs on.
    #[must_use]
    pub fn real(env: Env, timeout: Duration) -> Host {
        Host {
            fs: RootFs::new("/"),
            env,
            timeout,
            config: crate::config::Config::default(),
            live_gpu: true,
        }
    }

    /// A folder examined as if it were `/`; GPU libraries are never loaded and interpreters
    /// never run.
    #[must_use]
    pub fn rooted(root: impl Into<PathBuf>, env: Env, timeout: Duration) -> Host {
        Host {
            fs: RootFs::new(root),
            env,
            timeout,
            config: crate::config::Config::default(),
            live_gpu: false,
        }
    }

    /// Whether this host is a fixture tree (`--root`).
    #[must_use]
    pub fn is_rooted(&self) -> bool {
        !self.live_gpu
    }

    /// Whether NVML, libcuda and Python interpreters may be used.
    #[must_use]
    pub fn live(&self) -> bool {
        self.live_gpu
    }

    /// The first executable called `name` on the host's PATH, as a machine path.
    #[must_use]
    pub fn which(&self, name: &str) -> Option<PathBuf> {
        self.which_all(name).into_iter().next()
    }

    /// Every executable called `name` on the host's PATH, in PATH order.
    #[must_use]
    pub fn which_all(&self, name: &str) -> Vec<PathBuf> {
        let path = self.env.path_list("PATH");
        if path.is_empty() {
            return Vec::new();
        }
        which_sys::find_all(&self.fs, name, &path)
    }

    /// Runs a program (a machine path) with the host's environment and deadline.
    pub fn run(&self, program: &Path, args: &[&str]) -> std::io::Result<CmdOutput> {
        self.run_without(program, args, &[])
    }

    /// Like [`Host::run`] with some variables removed from the child's environment.
    pub fn run_without(
        &self,
        program: &Path,
        args: &[&str],
        remove: &[&str],
    ) -> std::io::Result<CmdOutput> {
        // On the real machine run the path as named: resolving a venv's `bin/python3` link
        // would start the base interpreter, which does not know it is in the venv.
        let real = if self.fs.is_real_root() {
            program.to_path_buf()
        } else {
            self.fs.real_path(program)?
        };
        let env: Vec<(String, String)> = self
            .env
            .with_prefix("")
            .filter(|(k, _)| !remove.contains(k))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        cmd::run(&real, args, &env, self.timeout)
    }
}
