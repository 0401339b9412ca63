//! The deep scan (`doctor --deep`, `smoke --frameworks`): each Python environment's own
//! interpreter imports each GPU framework found in its files and says what it sees:
//! `torch.cuda.is_available()`, the GPUs, the build's arch list, and every warning printed on
//! the way. The answers join the report as `python_envs[].frameworks[].runtime` before the
//! diagnosis, so the rules weigh what the framework said against what its files suggested.
//!
//! Reading files answers in milliseconds; importing torch takes seconds. So this runs only when
//! asked, every probe at once (the scan costs its slowest import), each in its own process with
//! a deadline, and never under `--root` (interpreters of a fixture tree are not run).
//!
//! `run` holds the side effect (starting interpreters through [`crate::host::cmd`]), `parse`
//! reads their answers into [`crate::report::runtime`] (the data, part of the report), `text`
//! draws it. `probe.py` is the script.

pub(crate) mod parse;
pub(crate) mod run;
pub(crate) mod text;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::host::Host;
use crate::report::runtime::FrameworkRuntime;
use crate::report::{ProbeStatus, PythonEnv, Report, Severity, Subject, framework_subject};

/// `doctor --deep`'s deadline for each probe: importing TensorFlow on a cold disk takes tens of
/// seconds; conda's own CUDA probe allows 60.
pub(crate) const DEFAULT_TIMEOUT_SECS: f64 = 60.0;

/// `smoke --frameworks`'s deadline: the import, CUDA context creation, JAX's first compile and
/// NCCL's set-up between two processes.
pub(crate) const SMOKE_TIMEOUT_SECS: f64 = 120.0;

/// The frameworks the probe knows how to ask.
pub(crate) const FRAMEWORKS: [&str; 4] = ["torch", "tensorflow", "jax", "cupy"];

/// How to run the deep scan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Options {
    /// Deadline of each probe process.
    pub timeout: Duration,
    /// Also compute on the GPU (`smoke --frameworks`).
    pub smoke: bool,
}

impl Options {
    /// Options from the command line's seconds.
    ///
    /// # Errors
    /// When `secs` is not a positive number of at most an hour.
    pub(crate) fn new(secs: f64, smoke: bool) -> Result<Options, String> {
        let secs = crate::config::check_seconds(secs).map_err(|m| format!("--deep-timeout {m}"))?;
        Ok(Options {
            timeout: Duration::from_secs_f64(secs),
            smoke,
        })
    }
}

/// Asks every framework of every environment in `report` and stores the answers in
/// `frameworks[].runtime`. Under `--root`, and for environments without an interpreter, each
/// framework gets a `skipped` runtime that says why.
pub(crate) fn attach(host: &Host, report: &mut Report, options: &Options) {
    // One probe per (environment index, framework name), in report order; no job where the
    // environment has no interpreter.
    let mut asked: Vec<(usize, String, Option<run::Job>)> = Vec::new();
    for (e, env) in report.python_envs.iter().enumerate() {
        for name in framework_names(env) {
            let job = env.interpreter.as_ref().map(|i| run::Job {
                framework: name.to_string(),
                interpreter: PathBuf::from(i),
            });
            asked.push((e, name.to_string(), job));
        }
    }
    let runnable: Vec<run::Job> = if host.runs_found_programs() {
        asked.iter().filter_map(|(_, _, job)| job.clone()).collect()
    } else {
        Vec::new()
    };
    let mut answers = run::run_all(host, &runnable, options.timeout, options.smoke).into_iter();
    for (e, name, job) in asked {
        let runtime = match job {
            _ if host.host_root().is_some() => {
                skipped("the node's interpreters are not run under --host-root")
            }
            _ if !host.live() => skipped("interpreters are not run under --root"),
            None => skipped("no Python interpreter was found in this environment"),
            Some(_) => answers.next().unwrap_or_else(|| skipped("not run")),
        };
        let Some(env) = report.python_envs.get_mut(e) else {
            continue;
        };
        let copies = env
            .frameworks
            .iter()
            .map(|f| (f.name.as_str(), f.source.as_str()));
        let slot = answering_copy(copies, &name, runtime.module_path.as_deref());
        if let Some(fw) = slot.and_then(|i| env.frameworks.get_mut(i)) {
            fw.runtime = Some(runtime);
        }
    }
}

fn skipped(why: &str) -> FrameworkRuntime {
    FrameworkRuntime {
        status: ProbeStatus::Skipped,
        detail: Some(why.to_string()),
        ..FrameworkRuntime::default()
    }
}

/// Which of an environment's `(name, source)` entries the interpreter imported: the copy whose
/// files are in the site folder of `module_path`, else the first of that name. An environment
/// can hold two (a Debian dist-packages torch and a pip one in /usr/local).
fn answering_copy<'a>(
    frameworks: impl Iterator<Item = (&'a str, &'a str)>,
    name: &str,
    module_path: Option<&str>,
) -> Option<usize> {
    let site = module_path.and_then(|m| Path::new(m).parent());
    let candidates: Vec<(usize, &str)> = frameworks
        .enumerate()
        .filter(|(_, (n, _))| *n == name)
        .map(|(i, (_, source))| (i, source))
        .collect();
    candidates
        .iter()
        .find(|(_, source)| site.is_some_and(|s| Path::new(source).starts_with(s)))
        .or(candidates.first())
        .map(|(i, _)| *i)
}

/// The frameworks of an environment the probe can ask, each name once.
fn framework_names(env: &PythonEnv) -> Vec<&str> {
    let mut names: Vec<&str> = env
        .frameworks
        .iter()
        .map(|f| f.name.as_str())
        .filter(|n| FRAMEWORKS.contains(n))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Whether a framework that was asked has an error finding against it: `smoke --frameworks`
/// fails when any framework cannot compute on the GPU, whatever the cause.
#[must_use]
pub(crate) fn any_failure(report: &Report) -> bool {
    let asked: Vec<Subject> = report
        .python_envs
        .iter()
        .flat_map(|e| {
            e.frameworks
                .iter()
                .filter(|f| f.runtime.is_some())
                .map(|f| framework_subject(&e.path, &f.name))
        })
        .collect();
    report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .any(|f| f.subjects.iter().any(|s| asked.contains(s)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_in_the_imported_site_folder_answers() {
        let fws = [
            ("torch", "/usr/lib/python3/dist-packages/torch/version.py"),
            (
                "jax",
                "/usr/local/lib/python3.12/dist-packages/jax-0.4.dist-info",
            ),
            (
                "torch",
                "/usr/local/lib/python3.12/dist-packages/torch/version.py",
            ),
        ];
        let pick = |m| answering_copy(fws.iter().copied(), "torch", m);
        assert_eq!(
            pick(Some("/usr/local/lib/python3.12/dist-packages/torch")),
            Some(2)
        );
        assert_eq!(pick(Some("/elsewhere/torch")), Some(0));
        assert_eq!(pick(None), Some(0));
        assert_eq!(answering_copy(fws.iter().copied(), "cupy", None), None);
    }

    #[test]
    fn the_deadline_must_be_sensible() {
        assert!(Options::new(60.0, false).is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 3601.0] {
            assert!(Options::new(bad, false).is_err(), "{bad}");
        }
    }
}
