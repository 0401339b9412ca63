//! What a plan step does and checks, as data: words, commands and checks that
//! [`super::shell`] renders. Pure; depends on nothing else in the crate.
//!
//! Values from outside gpu-doctor's own code (an environment name, a path, a package name from a
//! manifest, a GPU name from the machine) can only enter a command as [`Word::Lit`] or
//! [`Word::Path`], which the renderer always quotes. Shell syntax enters only through
//! `&'static str` (a variable name), so no runtime text can become shell code.

/// One shell word, or a piece of one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Word {
    /// Literal text, always quoted.
    Lit(String),
    /// A machine path. Absolute paths are written below the script's `$root` (empty on a real
    /// run, the fixture under `--root`), so the same plan can run against a fixture tree.
    Path(String),
    /// A script variable (`"$tmp"`, `"$kernel"`: the running kernel's release); only names
    /// gpu-doctor's own code chooses.
    Var(&'static str),
    /// Pieces written next to each other as one word (`"$tmp"'/cuda-keyring.deb'`).
    Join(Vec<Word>),
}

impl Word {
    pub fn lit(text: impl Into<String>) -> Word {
        Word::Lit(text.into())
    }

    pub fn path(text: impl Into<String>) -> Word {
        Word::Path(text.into())
    }
}

/// Words from literals: `words(["apt-get", "install", "-y"])`.
pub fn words<I, S>(items: I) -> Vec<Word>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    items.into_iter().map(|s| Word::Lit(s.into())).collect()
}

/// The Python a step uses: a virtual environment's interpreter or a conda environment's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Python {
    /// `<prefix>/bin/python` of a venv (or of a conda prefix).
    Prefix(String),
    /// `conda run -n NAME python`.
    CondaEnv(String),
}

/// What a step runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// A simple command; `sudo` when it changes the system.
    Run { argv: Vec<Word>, sudo: bool },
    /// Writes a whole file (as root), creating its folder.
    WriteFile { path: String, lines: Vec<String> },
    /// Installs packages at the newest version apt knows that starts with `prefix` and ends
    /// with `suffix`: NCCL must match the CUDA minor (`-1+cuda12.4`), cuDNN for pre-Turing GPUs
    /// must stay on 9.10. The version is looked up on the machine because the manifests hold
    /// the pattern, not every build.
    AptInstallMatching {
        /// The package whose versions are listed; the others get the same version.
        packages: Vec<String>,
        prefix: String,
        suffix: String,
    },
    /// Runs Python's pip (`python -m pip ARGS`) in the step's environment. `version`: the
    /// `major.minor` of that environment's Python when known, which the requirement was
    /// checked against (and [`super::lines`] checks it again).
    Pip {
        python: Python,
        args: Vec<Word>,
        version: Option<String>,
        /// The step's [`Command::Companions`] found in the environment go with the packages
        /// named (installed or uninstalled together, so pip resolves them as one).
        companions: bool,
    },
    /// Finds which of these distributions the environment has (torchvision and torchaudio pin
    /// one torch release each): a later [`Command::Pip`] with `companions` moves them with the
    /// framework instead of leaving them at releases that no longer match it.
    Companions { python: Python, dists: Vec<String> },
    /// Prints a line for the person running the plan.
    Say(String),
    /// After pip: checks in the step's Python that the GPU build landed, and stops the plan
    /// with `message` when it did not (pip exits 0 after settling on a CPU-only build).
    Landed {
        python: Python,
        check: Landed,
        message: String,
    },
}

/// What shows that a GPU build landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Landed {
    /// `import torch` reports a CUDA version (`torch.version.cuda` is not None).
    TorchCuda,
    /// Every requirement the extra adds to the distribution is installed (`jax[cuda13]` pulls
    /// `jax-cuda13-plugin`, `tensorflow[and-cuda]` the `nvidia-*` wheels).
    ExtraWheels { dist: String, extra: String },
}

/// A condition checked on the machine when the step runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// The package is installed (dpkg's status says `install ok installed`).
    DpkgInstalled(String),
    /// `dpkg-query` reports an installed version of PKG that starts with `prefix` and ends
    /// with `suffix`.
    DpkgVersion {
        package: String,
        prefix: String,
        suffix: String,
    },
    /// The file has this exact line.
    FileHasLine { path: String, line: String },
    /// The file contains this text.
    FileContains { path: String, text: String },
    /// The path is an executable file.
    Executable(String),
    /// Nothing is at the path.
    Missing(String),
    /// mokutil finds the key enrolled already, or waiting in the enrollment request for the
    /// next boot's MOK manager (`mokutil --test-key` says "is already ...").
    MokKeyKnown(String),
    /// No command of this name on PATH.
    CommandMissing(String),
    /// A Python distribution is installed at a version starting with `prefix` (`2.5.` or `` for
    /// any) and, when given, with the local tag `+local` (`cu124`).
    PythonDist {
        python: Python,
        dist: String,
        prefix: String,
        local: Option<String>,
    },
    /// A conda environment of this name exists.
    CondaEnvExists(String),
    /// A conda package is installed in the environment at this version (series).
    CondaPackage {
        env: String,
        package: String,
        version: String,
    },
    /// An earlier step changed the driver or the initramfs, so a reboot comes first.
    RebootPending,
    /// The headers of the kernel running when the script runs are installed
    /// (`linux-headers-$(uname -r)`).
    RunningKernelHeaders,
    /// Any of these holds.
    Any(Vec<Check>),
    /// All of these hold.
    All(Vec<Check>),
}

/// What happens when a guard's check holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The step is already done (or cannot apply): skip it with this reason.
    Skip(String),
    /// The step must not run: stop the plan with this message.
    Fail(String),
}

/// A check tried before a step's commands, in order; the first that holds decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Guard {
    pub check: Check,
    pub outcome: Outcome,
}

impl Guard {
    pub fn skip(check: Check, reason: impl Into<String>) -> Guard {
        Guard {
            check,
            outcome: Outcome::Skip(reason.into()),
        }
    }

    pub fn fail(check: Check, message: impl Into<String>) -> Guard {
        Guard {
            check,
            outcome: Outcome::Fail(message.into()),
        }
    }
}
