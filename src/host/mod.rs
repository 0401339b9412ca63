//! The only door to the machine: files (below a root), environment, PATH look-ups, commands
//! with deadlines, and whether the GPU libraries may be loaded at all.
//!
//! Probes take a `&Host` and nothing else from the outside world, which is what lets
//! `--root DIR` turn a folder into a machine for tests.

#![allow(
    clippy::disallowed_methods,
    reason = "host/ is the one door to the machine: the only module that calls std::fs to read"
)]

pub mod budget;
pub mod cmd;
pub mod env;
pub mod fs;
pub mod gpu;
pub mod ranged;
pub mod reap;
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
    /// NVML and libcuda may be loaded (a real run) or not (`--root`, where a fixture stands in).
    live_gpu: bool,
    /// `--host-root`: the files are a node's, mounted into this container, while the GPU
    /// libraries are the container's own; programs found in the node's files are not run.
    host_root: bool,
    /// The scan's total time for commands, while a scan runs ([`Host::with_budget`]).
    pub budget: Option<std::sync::Arc<budget::Budget>>,
    /// Where the Python interpreters' answers are remembered between runs
    /// ([`crate::probe::interp_cache`]); None (the default, `--no-cache`, `--root`) asks each
    /// time and writes nothing.
    pub interpreter_cache: Option<PathBuf>,
}

impl Host {
    /// The machine gpu-doctor runs on.
    #[must_use]
    pub fn real(env: Env, timeout: Duration) -> Host {
        Host {
            fs: RootFs::new("/"),
            env,
            timeout,
            live_gpu: true,
            host_root: false,
            budget: None,
            interpreter_cache: None,
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
            live_gpu: false,
            host_root: false,
            budget: None,
            interpreter_cache: None,
        }
    }

    /// A test's machine: a temporary folder holding `files` (path, text), examined as `/` with
    /// an empty environment.
    #[cfg(test)]
    pub(crate) fn with_files(files: &[(&str, &str)]) -> (tempfile::TempDir, Host) {
        let dir = tempfile::tempdir().expect("a temporary folder");
        for (path, text) in files {
            let path = dir.path().join(path.trim_start_matches('/'));
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("its folders");
            }
            std::fs::write(path, text).expect("the file");
        }
        let host = Host::rooted(dir.path(), Env::default(), Duration::from_secs(5));
        (dir, host)
    }

    /// This host with a scan budget of `total` starting now: commands run through it share
    /// it, and file work stops when it is spent too.
    #[must_use]
    pub fn with_budget(&self, total: Duration) -> Host {
        let end = std::time::Instant::now() + total;
        Host {
            budget: Some(std::sync::Arc::new(budget::Budget::new(total))),
            // File work stops at the same time as commands.
            fs: self.fs.for_scan(end),
            ..self.clone()
        }
    }

    /// A node's `/` mounted at `root` inside this container (`--host-root`, a DaemonSet's
    /// read-only hostPath): files, `/proc`, `/sys`, PATH look-ups, toolkits and Python
    /// environments are the node's, read below `root`; NVML and libcuda are loaded in this
    /// container as on a real run (the NVIDIA container toolkit mounts the node's driver
    /// libraries in), so GPU facts stay live.
    ///
    /// Programs found in the node's files are not run (see [`Host::runs_found_programs`]):
    /// the node's `python3` and `nvcc` link against the node's libraries, not the
    /// container's, and starting them from a pod is what node agents such as
    /// node-problem-detector avoid; their versions come from files instead (`pyvenv.cfg`,
    /// `version.json`, library names). The one exception is `nvidia-smi` when NVML does not
    /// answer: the container's own copy first ([`Host::container`]), else the node's, which
    /// is the same binary the NVIDIA container toolkit would mount into any GPU container.
    #[must_use]
    pub fn host_rooted(root: impl Into<PathBuf>, env: Env, timeout: Duration) -> Host {
        Host {
            fs: RootFs::new(root),
            env,
            timeout,
            live_gpu: true,
            host_root: true,
            budget: None,
            interpreter_cache: None,
        }
    }

    /// The node's root as this container sees it (`--host-root DIR`), or `None`.
    #[must_use]
    pub fn host_root(&self) -> Option<&Path> {
        self.host_root.then(|| self.fs.root())
    }

    /// How the report names where the node's files were read: `host-root:/host`.
    #[must_use]
    pub fn host_root_source(&self) -> Option<String> {
        self.host_root()
            .map(|root| format!("host-root:{}", root.display()))
    }

    /// Under `--host-root`, the container itself as a host: its own `/` and PATH, for the
    /// `nvidia-smi` the NVIDIA container toolkit mounts in. `None` on any other host.
    #[must_use]
    pub fn container(&self) -> Option<Host> {
        self.host_root.then(|| Host {
            fs: RootFs::new("/"),
            env: self.env.clone(),
            timeout: self.timeout,
            live_gpu: true,
            host_root: false,
            budget: self.budget.clone(),
            interpreter_cache: None,
        })
    }

    /// Whether interpreters and `nvcc` found in the machine's files may be started: on a
    /// real run only (not under `--root`, a fixture, nor `--host-root`, a node's files).
    #[must_use]
    pub fn runs_found_programs(&self) -> bool {
        self.live_gpu && !self.host_root
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
        let env = self.env.child_pairs(remove);
        let mut timeout = self.timeout;
        if let Some(budget) = &self.budget {
            let left = budget.remaining();
            if left < Duration::from_millis(50) {
                budget.skip(format!("{} {}", program.display(), args.join(" ")));
                return Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the scan's time budget is spent; not started",
                ));
            }
            timeout = timeout.min(left);
        }
        cmd::run(&real, args, &env, timeout)
    }
}
