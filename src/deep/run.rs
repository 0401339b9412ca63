//! Running the probe: one interpreter process per (environment, framework), all started at once,
//! each with its own deadline. This is the deep scan's only side effect, and it goes through
//! [`crate::host::cmd`] like every other command.
//!
//! One process per framework, not per environment: a hanging `import tensorflow` must not hide
//! what torch says, and a crash in one framework's native code takes only its own answer.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::parse;
use crate::host::Host;
use crate::report::ProbeStatus;
use crate::report::runtime::FrameworkRuntime;

/// The probe script, run with `python -I -c`.
const PROBE: &str = include_str!("probe.py");

/// Most probe processes at once. Each import of a GPU framework takes ~0.5–1 GB of memory and a
/// few CPU-seconds; a machine with a dozen conda environments must not start fifty at once.
const MAX_PARALLEL: usize = 16;

/// One probe to run.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    /// The framework's name as the report has it ("torch", "tensorflow", "jax", "cupy").
    pub framework: String,
    /// The environment's interpreter, as a machine path.
    pub interpreter: PathBuf,
}

/// Runs every job, `MAX_PARALLEL` at a time, and returns their answers in the jobs' order.
/// With fewer jobs than that (the usual case) the whole scan takes as long as its slowest
/// import, not the sum of them.
#[must_use]
pub(crate) fn run_all(
    host: &Host,
    jobs: &[Job],
    timeout: Duration,
    smoke: bool,
) -> Vec<FrameworkRuntime> {
    let next = AtomicUsize::new(0);
    let workers = jobs.len().min(MAX_PARALLEL);
    let mut answers: Vec<Option<FrameworkRuntime>> = vec![None; jobs.len()];
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        done.push((i, run_one(host, job, timeout, smoke)));
                    }
                    done
                })
            })
            .collect();
        for handle in handles {
            if let Ok(done) = handle.join() {
                for (i, answer) in done {
                    if let Some(slot) = answers.get_mut(i) {
                        *slot = Some(answer);
                    }
                }
            }
        }
    });
    answers
        .into_iter()
        .zip(jobs)
        .map(|(answer, job)| {
            answer.unwrap_or_else(|| FrameworkRuntime {
                status: ProbeStatus::Failed,
                detail: Some("the probe's thread panicked (a bug in gpu-doctor)".to_string()),
                interpreter: Some(job.interpreter.display().to_string()),
                ..FrameworkRuntime::default()
            })
        })
        .collect()
}

/// Imports one framework with one interpreter: `python -I -c PROBE <framework> <mode> <secs>`,
/// from a new empty working folder, with the deadline.
#[must_use]
pub(crate) fn run_one(host: &Host, job: &Job, timeout: Duration, smoke: bool) -> FrameworkRuntime {
    let shown = job.interpreter.display().to_string();
    let failed = |detail: String| FrameworkRuntime {
        status: ProbeStatus::Failed,
        detail: Some(detail),
        interpreter: Some(shown.clone()),
        ..FrameworkRuntime::default()
    };
    // Started by the path the environment names, not the file its links resolve to (what
    // `RootFs::real_path` would give): a venv's `bin/python3` links to the base interpreter,
    // and only started through the link does it find its `pyvenv.cfg` and its site-packages.
    // Probes run only on the real machine, whose root is `/`, so the path is a real one.
    if host.host_root().is_some() {
        return failed("the node's interpreters are not run under --host-root".to_string());
    }
    if !host.live() {
        return failed("interpreters are not run under --root".to_string());
    }
    let program = job.interpreter.as_path();
    let budget = format!("{:.1}", timeout.as_secs_f64());
    let mode = if smoke { "smoke" } else { "probe" };
    let args = [
        "-I",
        "-c",
        PROBE,
        job.framework.as_str(),
        mode,
        budget.as_str(),
    ];
    let env = child_env(host, &job.framework);
    match crate::host::cmd::run_in_empty_dir(program, &args, &env, timeout, &scratch_dir(host)) {
        Ok(out) => parse::from_output(&out, &shown, timeout),
        Err(e) => failed(format!("cannot start {shown}: {e}")),
    }
}

/// The user's environment, which is what decides what a framework sees (`CUDA_VISIBLE_DEVICES`,
/// `LD_LIBRARY_PATH`), with three changes that make the probe a good guest:
/// - `TF_CPP_MIN_LOG_LEVEL=1`: TensorFlow's and XLA's warnings (the evidence, such as "Cannot
///   dlopen some GPU libraries") are printed, their INFO chatter is not, and a user's `3` does
///   not silence them;
/// - `XLA_PYTHON_CLIENT_PREALLOCATE=false`: JAX would otherwise take 75% of each GPU's memory
///   at start, failing next to a running job;
/// - `TF_FORCE_GPU_ALLOW_GROWTH=true`: the same for TensorFlow, which takes nearly all of it.
fn child_env(host: &Host, framework: &str) -> Vec<(String, String)> {
    let overrides: &[(&str, &str)] = match framework {
        "tensorflow" => &[
            ("TF_CPP_MIN_LOG_LEVEL", "1"),
            ("TF_FORCE_GPU_ALLOW_GROWTH", "true"),
        ],
        "jax" => &[
            ("TF_CPP_MIN_LOG_LEVEL", "1"),
            ("XLA_PYTHON_CLIENT_PREALLOCATE", "false"),
        ],
        _ => &[],
    };
    host.env
        .with_prefix("")
        .filter(|(k, _)| !overrides.iter().any(|(o, _)| o == k))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .chain(
            overrides
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string())),
        )
        .collect()
}

/// Where the probe's empty working folders are made: `$TMPDIR` as the user set it, else /tmp.
/// Probes only run on the real machine, so this is a real path.
fn scratch_dir(host: &Host) -> PathBuf {
    host.env
        .path("TMPDIR")
        .filter(|p| p.is_dir())
        .unwrap_or_else(|| Path::new("/tmp").to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Env;

    #[test]
    fn the_probe_script_is_valid_for_old_pythons_in_its_own_words() {
        // The script promises 3.8 syntax; the most likely slips are newer constructs.
        for newer in [
            ":=",
            "match ",
            "| None",
            "removeprefix",
            "dict[",
            "list[",
            "tuple[",
        ] {
            assert!(!PROBE.contains(newer), "probe.py uses {newer:?}");
        }
    }

    #[test]
    fn the_child_keeps_the_users_environment_with_the_guest_settings() {
        let host = Host::real(
            Env::from_pairs([
                ("CUDA_VISIBLE_DEVICES", "1"),
                ("TF_CPP_MIN_LOG_LEVEL", "3"),
                ("PATH", "/usr/bin"),
            ]),
            Duration::from_secs(5),
        );
        let env = child_env(&host, "tensorflow");
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("CUDA_VISIBLE_DEVICES"), Some("1"));
        assert_eq!(get("TF_CPP_MIN_LOG_LEVEL"), Some("1"));
        assert_eq!(get("TF_FORCE_GPU_ALLOW_GROWTH"), Some("true"));
        assert_eq!(
            env.iter()
                .filter(|(k, _)| k == "TF_CPP_MIN_LOG_LEVEL")
                .count(),
            1
        );
        let torch = child_env(&host, "torch");
        assert!(
            torch
                .iter()
                .any(|(k, v)| k == "TF_CPP_MIN_LOG_LEVEL" && v == "3")
        );
    }
}
