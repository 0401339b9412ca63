//! The command line: every clap type of gpu-doctor, and nothing else. [`crate::commands`]
//! resolves what these say into settings and runs the command; no module below it imports
//! clap. Value enums the domain owns get their clap impls in [`values`].

pub(crate) mod docs;
pub(crate) mod explain;
pub(crate) mod guide;
pub(crate) mod manifest;
mod settings_help;
pub(crate) mod smoke;
mod values;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::check::FailOn;
use crate::check::render::Format;
use crate::present::paint::ColorChoice;

/// The command line as clap parses and documents it: [`Cli`]'s derived definition, with the
/// settings' sources added to their flags' help, built (global options copied into every
/// subcommand) and with a subcommand's `-h` naming the global options in one line instead of
/// listing them (its `--help` and man page still list them).
#[cfg(test)]
#[must_use]
pub(crate) fn command() -> clap::Command {
    command_coloured(None)
}

/// `command()` with clap's own colour choice for help and usage errors (set before the build,
/// which copies it into the subcommands).
#[must_use]
pub(crate) fn command_coloured(color: Option<clap::ColorChoice>) -> clap::Command {
    let mut command = settings_help::add(<Cli as clap::CommandFactory>::command());
    if let Some(color) = color {
        command = command.color(color);
    }
    command.build();
    shorter_subcommand_help(command)
}

/// The command line for documents (man pages, completions): `command()` with every option in
/// every subcommand's help, as a man page lists them all (clap_mangen leaves the text of an
/// option hidden from `-h` out).
#[must_use]
pub(crate) fn command_documented() -> clap::Command {
    let mut command = settings_help::add(<Cli as clap::CommandFactory>::command());
    command.build();
    command
}

/// `command`'s subcommands with their `-h` naming the global options in one line.
fn shorter_subcommand_help(command: clap::Command) -> clap::Command {
    let globals: Vec<clap::Id> = command
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.get_id().clone())
        .collect();
    command.mut_subcommands(|sub| short_help_without(sub, &globals))
}

/// The line a subcommand's `-h` shows in place of the global options.
const GLOBALS_LINE: &str = "Global options (--root, --host-root, --timeout, --no-cache, --config, --color, -q, -v): \
see --help";

/// `sub` (and its subcommands) with the global options left out of `-h`, and a line saying
/// where they are.
fn short_help_without(sub: clap::Command, globals: &[clap::Id]) -> clap::Command {
    let after = sub.get_after_help().map(ToString::to_string);
    let sub = sub
        .mut_args(|arg| {
            if globals.contains(arg.get_id()) {
                arg.hide_short_help(true)
            } else {
                arg
            }
        })
        .after_help(match &after {
            Some(text) => format!("{text}\n\n{GLOBALS_LINE}"),
            None => GLOBALS_LINE.to_string(),
        })
        .after_long_help(after.unwrap_or_default());
    sub.mut_subcommands(|below| short_help_without(below, globals))
}

/// `gpu-doctor --help`'s and the man page's DESCRIPTION.
const LONG_ABOUT: &str = "Finds out why a GPU does not work with an ML framework, and what to \
install to fix it.\n\n\
gpu-doctor looks at a Linux machine (GPUs on the PCI bus, the kernel driver, NVML, the driver \
libraries, every CUDA toolkit, cuDNN, NCCL and the other CUDA libraries, every Python environment \
with its PyTorch, TensorFlow, JAX and CuPy builds) and says what is wrong, why, and how to fix it. \
It reads files instead of importing frameworks, and works on a machine without a GPU too.\n\n\
With no subcommand it opens the interactive app on a terminal, and prints `gpu-doctor doctor`'s \
report otherwise.";

/// The `--help` heading of the options every subcommand takes, so a subcommand's own options
/// stand apart from them.
const GLOBAL: &str = "Global options";

/// Finds out why a GPU does not work with an ML framework, and what to install to fix it.
#[derive(Debug, Parser)]
#[command(name = "gpu-doctor", version, long_about = LONG_ABOUT)]
pub(crate) struct Cli {
    /// Examine DIR as if it were `/` (fixtures and tests): files, PATH look-ups and commands
    /// stay inside DIR; NVML and libcuda are not loaded and interpreters are not run.
    #[arg(long, global = true, value_name = "DIR", help_heading = GLOBAL)]
    pub root: Option<PathBuf>,

    /// Examine the node whose `/` is mounted at DIR (a container's read-only hostPath, such as
    /// /host): files, /proc, /sys, toolkits and Python environments are the node's, while
    /// NVML and libcuda are this container's, so GPU readings stay live. The node's python and
    /// nvcc are not run (versions come from files); nvidia-smi is this container's, else the
    /// node's. The report's `tool.host_root` and each `probes[].source` say what came from where.
    #[arg(long, global = true, value_name = "DIR", conflicts_with = "root", help_heading = GLOBAL)]
    pub host_root: Option<PathBuf>,

    /// Seconds any one command (nvidia-smi, nvcc, python) may run before it is stopped.
    #[arg(long, global = true, value_name = "SECS", help_heading = GLOBAL)]
    pub timeout: Option<f64>,

    /// Ask every Python interpreter again instead of using the answers remembered in
    /// $XDG_CACHE_HOME/gpu-doctor (also `GPU_DOCTOR_NO_CACHE=1`); nothing is written there.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub no_cache: bool,

    /// Read settings from FILE instead of ~/.config/gpu-doctor/config.toml.
    #[arg(long, global = true, value_name = "FILE", help_heading = GLOBAL)]
    pub config: Option<PathBuf>,

    /// When to colour the output; `NO_COLOR` set means never unless this says always.
    #[arg(long, global = true, value_enum, value_name = "WHEN", help_heading = GLOBAL)]
    pub color: Option<ColorChoice>,

    /// Say less on stderr: -q drops notes and warnings (errors stay).
    #[arg(long, short = 'q', global = true, action = clap::ArgAction::Count, conflicts_with = "verbose", help_heading = GLOBAL)]
    pub quiet: u8,

    /// Say more: -v what was read and decided (config, manifests, each probe's time) on
    /// stderr, and `doctor`'s whole report (library paths, what each framework loads); -vv
    /// also every command run.
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count, help_heading = GLOBAL)]
    pub verbose: u8,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// How `doctor` and `smoke` print the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ReportFormat {
    /// For people.
    Text,
    /// The versioned report (schema/report.schema.json).
    Json,
    /// Metrics in the Prometheus text format, for node_exporter's textfile collector.
    Prometheus,
}

/// Where and how `doctor` and `smoke` print.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Short for --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write to FILE instead of stdout, atomically (a temporary file renamed into place), so
    /// node_exporter's textfile collector never reads half a file.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl OutputArgs {
    /// The format asked for, `--json` included.
    #[must_use]
    pub(crate) fn format(&self) -> ReportFormat {
        if self.json {
            ReportFormat::Json
        } else {
            self.format
        }
    }
}

/// `gpu-doctor doctor` options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct DoctorArgs {
    #[command(flatten)]
    pub out: OutputArgs,
    /// Also import each framework with its environment's own interpreter and ask it what it
    /// sees (GPUs, build, warnings): seconds rather than milliseconds, as long as the
    /// slowest import.
    #[arg(long)]
    pub deep: bool,
    /// With --deep: seconds each framework's import and questions may take.
    #[arg(long, value_name = "SECS", requires = "deep")]
    pub deep_timeout: Option<f64>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Examine this machine's GPUs, driver, CUDA libraries and Python frameworks.
    Doctor(DoctorArgs),
    /// Check this machine against requirements, for CI: exit 0 pass, 1 unmet requirement or
    /// a finding at/above --fail-on, 2 usage error, 3 the doctor itself failed.
    #[command(
        after_help = "Requirements: driver>=535, cuda>=12.1 (driver-supported CUDA), toolkit>=12.4, \
cudnn>=9, gpu.count>=2, gpu.memory>=40GiB, gpu.cc>=8.0, torch>=2.4, torch.cuda, tensorflow.gpu, jax.gpu, cupy.gpu\n\n\
Exit codes: 0 pass; 1 a requirement is unmet or a finding is at or above --fail-on; 2 usage error; 3 the doctor failed."
    )]
    Check(CheckArgs),
    /// Prove the GPU computes: a matmul kernel and memory checks through the CUDA driver API.
    Smoke(smoke::SmokeArgs),
    /// Explain an error message (a pasted traceback, a whole log) by this machine: the finding
    /// that causes it, with its evidence and fix; else what the message means, what else
    /// causes it and which check would tell.
    #[command(
        after_help = "Examples:\n  gpu-doctor explain 'RuntimeError: CUDA error: no kernel image is available for execution on the device'\n  python train.py 2>&1 | gpu-doctor explain\n  gpu-doctor explain --log slurm-1234.out --json\n\n\
Exit codes: 0 a finding on this machine explains the text; 1 none does (or no known message was found); \
2 usage error (no text, an unreadable --log); 3 gpu-doctor itself failed."
    )]
    Explain(explain::ExplainArgs),
    /// Open the interactive terminal app (the default on a terminal).
    Tui,
    /// Show, verify or update the compatibility manifests.
    Manifest {
        #[command(subcommand)]
        action: manifest::ManifestCommand,
    },
    /// Estimate the GPU memory a model needs for training or inference.
    Estimate(guide::EstimateArgs),
    /// Which GPUs suit a workload, and what this machine's GPUs can and cannot do.
    Advise(guide::AdviseArgs),
    /// Print the JSON Schema of `doctor --json`.
    Schema,
    /// Write the shell script that takes this machine to a working CUDA stack (the fix for what
    /// the doctor finds, or the target named). Writing a plan never changes the machine.
    #[command(
        after_help = "Exit codes: 0 plan written (or run); 1 the target cannot work here (the reason is \
on stderr); 2 usage error; 3 the plan could not be written or stopped while running."
    )]
    Plan(PlanArgs),
    /// Work with reports collected from many machines.
    Report {
        #[command(subcommand)]
        action: ReportCommand,
    },
    /// Print a shell completion script.
    #[command(
        after_help = "Install: bash: gpu-doctor completions bash > ~/.local/share/bash-completion/completions/gpu-doctor\n\
zsh: gpu-doctor completions zsh > ~/.zfunc/_gpu-doctor (with fpath+=~/.zfunc before compinit)\n\
fish: gpu-doctor completions fish > ~/.config/fish/completions/gpu-doctor.fish\n\
nushell: gpu-doctor completions nushell | save -f ($nu.user-autoload-dirs | first | path join gpu-doctor.nu)"
    )]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: CompletionShell,
    },
    /// Write the man pages (gpu-doctor.1 and one per subcommand) into a folder.
    Man {
        /// Folder to write the pages into.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

/// The shells `completions` writes for: clap_complete's, and nushell's from its own crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum CompletionShell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
    Nushell,
}

/// `gpu-doctor check` options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct CheckArgs {
    /// A requirement such as 'driver>=535' or torch.cuda (repeatable; quote it, or the shell
    /// takes `>` as a redirection). With none, only the findings at or above --fail-on decide.
    #[arg(long = "require", short = 'r', value_name = "EXPR")]
    pub require: Vec<String>,
    /// Findings of this severity or worse fail the check.
    #[arg(long, value_enum)]
    pub fail_on: Option<FailOn>,
    /// Only consider frameworks in the Python environment with this prefix.
    #[arg(long, value_name = "PATH")]
    pub env: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write the output to FILE (e.g. the JUnit report for a CI dashboard).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// `gpu-doctor plan` options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct PlanArgs {
    /// How to install: NVIDIA's apt repository, a conda environment, or pip in a virtual
    /// environment [default: pip with --framework, else apt].
    #[arg(long, value_enum, help_heading = "Target")]
    pub via: Option<crate::plan::Via>,
    /// Target CUDA version (12.4).
    #[arg(long, value_name = "X.Y", help_heading = "Target")]
    pub cuda: Option<String>,
    /// Driver branch to install, or auto (the branch the target needs). Without it a working
    /// driver stays, and a target it cannot run is refused with the branch that would.
    #[arg(long, value_name = "BRANCH|auto", help_heading = "Target")]
    pub driver: Option<String>,
    /// cuDNN major version.
    #[arg(long, value_name = "MAJOR", help_heading = "Target")]
    pub cudnn: Option<String>,
    /// torch==2.5.1, tensorflow==2.17, `jax[cuda12]`, cupy.
    #[arg(long, value_name = "NAME[==VERSION]", help_heading = "Target")]
    pub framework: Option<String>,
    /// Python version for a new environment (3.11).
    #[arg(long, value_name = "X.Y", help_heading = "Target")]
    pub python: Option<String>,
    /// conda environment name, or the virtual environment's folder for pip.
    #[arg(long, value_name = "NAME|DIR", help_heading = "Target")]
    pub env: Option<String>,
    /// The system to plan for: ubuntu-22.04 or ubuntu-24.04 [default: this machine's].
    #[arg(long, value_name = "OS", help_heading = "Target")]
    pub os: Option<String>,
    /// Write the plan to FILE (and a conda plan's environment.yml next to it).
    #[arg(long, short = 'o', value_name = "FILE", help_heading = "Output")]
    pub output: Option<PathBuf>,
    /// Overwrite FILE if it exists.
    #[arg(long, help_heading = "Output")]
    pub force: bool,
    /// Print the plan as JSON instead of a script.
    #[arg(long, conflicts_with = "execute", help_heading = "Output")]
    pub json: bool,
    /// Show the plan, ask, then run it step by step, logging to --log.
    #[arg(long, help_heading = "Running it")]
    pub execute: bool,
    /// With --execute: do not ask (needed without a terminal).
    #[arg(long, requires = "execute", help_heading = "Running it")]
    pub yes: bool,
    /// With --execute: the log file (appended to).
    #[arg(
        long,
        value_name = "FILE",
        requires = "execute",
        default_value = crate::plan::execute::DEFAULT_LOG,
        help_heading = "Running it"
    )]
    pub log: PathBuf,
}

/// `gpu-doctor report` subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum ReportCommand {
    /// Merge many `doctor --json` / `smoke --json` reports (one per node) into a fleet summary:
    /// nodes grouped by stack, the odd ones out, nodes with errors or failed smoke tests, nodes
    /// with fewer GPUs than their peers, and throughput spread per GPU model. Exit 0 all
    /// healthy, 1 a node needs attention or shows fewer GPUs than its peers, 2 usage error,
    /// 3 no report could be read.
    ///
    /// A node needs attention for an error finding or a failed smoke test. A node whose
    /// driver shows fewer GPUs of a model than most nodes with that model (a GPU fallen off
    /// the bus, Xid 79) also fails the run, unless --allow-missing-gpus; a tie between two
    /// counts (a fleet of 8- and 4-GPU machines in equal numbers) names no usual count and
    /// fails nothing. Drift alone does not fail: nodes on different stacks, GPUs well below
    /// their model's median, two
    /// reports for one node (the newest by `generated_at` is used) and files that are not
    /// reports are all shown, and the exit code stays 0. A node is named by its report's
    /// host name, else by the file's name. Reports of a newer schema than this gpu-doctor
    /// reads are refused with a message, and corrupt files are skipped, never fatal.
    Merge(MergeArgs),
}

/// How `report merge` prints the fleet summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum MergeFormat {
    Text,
    Json,
    /// For a ticket or a wiki page.
    Markdown,
}

/// `gpu-doctor report merge` options.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct MergeArgs {
    /// Report files, or folders whose `*.json` files are reports. A folder is read one level
    /// deep: subfolders are not entered, and names starting with `.` (temporary files of
    /// writers) and fleet summaries (`report merge --json` output) are passed over.
    #[arg(required = true, value_name = "FILE|DIR")]
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = MergeFormat::Text)]
    pub format: MergeFormat,
    /// Short for --format json.
    #[arg(long, conflicts_with = "format")]
    pub json: bool,
    /// Write to FILE instead of stdout (atomically).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Nodes showing fewer GPUs than their peers are still named, but do not make the exit
    /// code 1 (a fleet where some nodes are meant to have GPUs taken out, or a GPU under RMA).
    #[arg(long)]
    pub allow_missing_gpus: bool,
}

impl MergeArgs {
    /// The format asked for, `--json` included.
    #[must_use]
    pub(crate) fn format(&self) -> MergeFormat {
        if self.json {
            MergeFormat::Json
        } else {
            self.format
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn help(args: &[&str]) -> String {
        let mut argv = vec!["gpu-doctor"];
        argv.extend_from_slice(args);
        match command().try_get_matches_from(argv) {
            Err(e) => e.render().to_string(),
            Ok(_) => String::new(),
        }
    }

    #[test]
    fn a_subcommands_short_help_names_the_global_options_in_one_line() {
        let short = help(&["check", "-h"]);
        assert!(short.contains("--require <EXPR>"), "{short}");
        assert!(!short.contains("--host-root <DIR>"), "{short}");
        assert!(short.contains(GLOBALS_LINE), "{short}");
        assert!(short.lines().count() < 30, "{short}");
        let long = help(&["check", "--help"]);
        assert!(long.contains("--host-root <DIR>"), "{long}");
        assert!(!long.contains(GLOBALS_LINE), "{long}");
        // Nested subcommands too; the top level keeps its own options.
        assert!(!help(&["report", "merge", "-h"]).contains("--host-root <DIR>"));
        assert!(help(&["-h"]).contains("--host-root <DIR>"));
    }

    #[test]
    fn every_global_option_is_in_the_line() {
        let listed: Vec<&str> = GLOBALS_LINE
            .split_once('(')
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(names, _)| names.split(", ").collect())
            .unwrap_or_default();
        for arg in command().get_arguments().filter(|a| a.is_global_set()) {
            let long = arg.get_long().map(|l| format!("--{l}"));
            let short = arg.get_short().map(|s| format!("-{s}"));
            assert!(
                [long.clone(), short]
                    .iter()
                    .flatten()
                    .any(|n| listed.contains(&n.as_str())),
                "{long:?} missing from {GLOBALS_LINE}"
            );
        }
    }
}
