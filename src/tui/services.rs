//! The TUI's only way out: every piece of work it needs from the rest of gpu-doctor (examine
//! the machine, read live GPU sensors, write a plan, run the smoke test) goes through the
//! [`Services`] trait, so the state, update and view code never names a probe or the host, and
//! tests swap in fixtures.
//!
//! [`AppServices`] is the real one. It uses the run's manifest set (the settings pass chose it)
//! for the report, the plans and the explain box alike, and reaches the machine only through
//! [`crate::examine`],
//! [`crate::host::gpu::query`] (NVML in a child process with a deadline, the same door the
//! report uses), the pure planner [`crate::plan::plan`], and `gpu-doctor smoke` run as a child
//! process (the smoke test keeps its driver calls out of process already; its library entry
//! prints rather than returns, so the TUI reads its JSON, the contract every face shares).

use crate::report::GpuSource;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::host::Host;
use crate::host::gpu::{GpuStream, STREAM_EVERY};
use crate::manifest::{Manifests, SetInUse};
use crate::plan::choose;
use crate::report::explain::Explain;
use crate::report::smoke::{SmokeRun, SmokeStatus};
use crate::report::{Gpu, Report};
use crate::version::Version;

pub use crate::plan::Via;

/// Work the TUI asks for. Implementations are called from background threads.
pub trait Services: Send + Sync {
    /// The full report, or why examining broke (a gpu-doctor bug, never a machine problem).
    ///
    /// # Errors
    /// The panic message when examining panicked.
    fn examine(&self) -> Result<Report, String>;

    /// One live reading of every GPU.
    ///
    /// # Errors
    /// Why there are no live readings (`--root`, no NVML, the driver did not answer).
    fn sample(&self) -> Result<Vec<Gpu>, String>;

    /// Live readings are no longer wanted (the GPUs screen closed, the app quits): stop
    /// whatever [`Services::sample`] keeps running. Called often; cheap when nothing runs.
    fn stop_live(&self) {}

    /// The plan choices that make sense for this report.
    fn plan_options(&self, report: &Report) -> PlanOptions;

    /// The install script for a choice.
    ///
    /// # Errors
    /// Why no plan can be written: the planner's refusal, with the facts it rests on.
    fn plan(&self, report: &Report, choice: &PlanChoice) -> Result<PlanText, String>;

    /// Runs the smoke test, reporting progress as it goes; the last event is the outcome.
    fn smoke(&self, report: Option<&Report>, progress: &mut dyn FnMut(SmokeEvent));

    /// Whether a plan's root steps need a password asked on the terminal first: `sudo` as a
    /// user on the real machine (not as root, not under `--root`, whose stand-ins need none).
    fn sudo_asks(&self) -> bool {
        false
    }

    /// Asks `sudo` for the password on the terminal, which the runtime has given back for
    /// the while, so the plan's root steps can then run without a prompt.
    ///
    /// # Errors
    /// Why root steps cannot run: sudo refused, or is not installed.
    fn authorize(&self) -> Result<(), String> {
        Ok(())
    }

    /// Runs a written plan's [`PlanText::run_script`] as `plan --execute` does, logging to
    /// `log`, reporting progress as it goes; the last event is [`RunEvent::Ended`].
    fn run_plan(&self, plan: &PlanText, log: &std::path::Path, on_event: &mut dyn FnMut(RunEvent)) {
        let _ = (plan, log);
        on_event(RunEvent::Ended(Outcome::Error(
            "this build cannot run plans".to_string(),
        )));
    }

    /// The app quits while a plan runs: end the run's commands now.
    fn abandon_plan(&self) {}

    /// The answer for an error text on the report's machine (`gpu-doctor explain`), with the
    /// signature table of the set the report was examined with.
    fn explain(&self, report: &Report, text: &str) -> Explain;
}

/// A written plan: the script and the files it reads from its own folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanText {
    /// What the plan installs, one line each (the plan's own summary).
    pub summary: Vec<String>,
    pub script: String,
    /// (file name, contents): a conda plan's `environment.yml`.
    pub files: Vec<(String, String)>,
    /// Its steps in order, as the screen lists them while the plan runs.
    pub steps: Vec<PlanStep>,
    /// The script as `plan --execute` runs it on the examined machine: under `--root`, its
    /// machine paths are below the root, so a fixture stands in for the machine.
    pub run_script: String,
    /// Why this plan cannot be run from the screen (it can still be saved), if so.
    pub cannot_run: Option<String>,
}

/// One step of a written plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanStep {
    /// The step's id (`cuda-keyring`).
    pub id: String,
    pub title: String,
    /// Runs commands as root (through sudo).
    pub root: bool,
}

pub use crate::plan::execute::{Event as RunEvent, Outcome};

/// The lists the Plan screen offers, each already narrowed to what this machine can use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanOptions {
    pub vias: Vec<Via>,
    /// CUDA releases (`major.minor`) the GPUs can use, newest first; "auto" is offered besides.
    pub cudas: Vec<String>,
    /// Frameworks a plan can install, as `--framework` takes them (`torch==2.9`, `jax`); a
    /// name alone lets the planner pick the newest version that fits.
    pub frameworks: Vec<String>,
    /// Why the lists are what they are, in a sentence ("for compute capability 9.0 ...").
    pub basis: String,
}

/// What the user picked on the Plan screen. `None` means "let the planner choose".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanChoice {
    pub via: Option<Via>,
    pub cuda: Option<String>,
    pub framework: Option<String>,
}

/// Progress and the outcome of a smoke test.
#[derive(Debug, Clone, PartialEq)]
pub enum SmokeEvent {
    /// A step started: `done` of `total` finished so far.
    Progress { step: String, done: u32, total: u32 },
    /// Every check, in order.
    Finished(Vec<SmokeRow>),
    /// The test could not run at all, and why.
    Failed(String),
    /// This build or this machine cannot run it, and why.
    Unavailable(String),
}

/// One smoke-test check on one GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct SmokeRow {
    /// "GPU 0".
    pub device: String,
    /// "matmul 4096² fp16".
    pub check: String,
    pub passed: bool,
    /// The error, or what was measured in words.
    pub detail: String,
    /// Throughput measured, e.g. TFLOP/s.
    pub measured: Option<f64>,
    /// What the card should reach, from the GPU table.
    pub expected: Option<f64>,
    /// The unit of both ("TFLOP/s", "GB/s").
    pub unit: String,
}

/// The real services: this machine (or `--root`), through the app's own functions.
#[derive(Debug, Clone)]
pub struct AppServices {
    host: Host,
    /// The run's manifest set, for every service.
    set: Arc<SetInUse>,
    /// The streaming reader of live readings while the GPUs screen is open, and the number of
    /// the last reading handed out (shared by clones).
    stream: Arc<Mutex<Option<(GpuStream, u64)>>>,
    /// The process group of the plan now running from the Plan screen, if one is.
    running: Arc<Mutex<Option<i32>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl AppServices {
    #[must_use]
    pub fn new(host: Host, set: Arc<SetInUse>) -> AppServices {
        AppServices {
            host,
            set,
            stream: Arc::new(Mutex::new(None)),
            running: Arc::new(Mutex::new(None)),
        }
    }
}

impl Services for AppServices {
    fn examine(&self) -> Result<Report, String> {
        crate::examine::examine_guarded(&self.host, &self.set)
    }

    /// Under the budget a scan gets, as `gpu-doctor explain` is: a pasted text too long to
    /// search in time is searched from its start up to there, and the answer says so.
    fn explain(&self, report: &Report, text: &str) -> Explain {
        let table = self.set.manifests().errors.table();
        let end = std::time::Instant::now() + self.host.timeout + crate::host::budget::SLACK;
        crate::explain::explain_until(report, table, text.as_bytes(), None, Some(end))
    }

    fn sample(&self) -> Result<Vec<Gpu>, String> {
        if self.host.is_rooted() {
            return Err(
                "examined with --root: NVML is not loaded, so there are no live readings"
                    .to_string(),
            );
        }
        // One child streams a reading a second while the screen is open (`stop_live` ends
        // it); a reading waits at most a little over that period for a newer line.
        let mut stream = self
            .stream
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if stream.as_mut().is_some_and(|(s, _)| !s.running()) {
            // Ended (NVML failed, or it was killed): its last words, then a new one next time.
            let (ended, after) = stream.take().unwrap_or_else(|| unreachable!());
            if let Some((_, Err(why))) = ended.next_after(after, Duration::ZERO) {
                return Err(format!("NVML did not answer: {why}"));
            }
        }
        if stream.is_none() {
            *stream = Some((GpuStream::start(&self.host)?, 0));
        }
        let Some((live, after)) = stream.as_mut() else {
            return Err("no reading process".to_string());
        };
        let wait = STREAM_EVERY + STREAM_EVERY / 2 + FIRST_READING * u32::from(*after == 0);
        match live.next_after(*after, wait) {
            Some((number, reading)) => {
                *after = number;
                reading.map_err(|why| format!("NVML did not answer: {why}"))
            }
            None => Err(format!(
                "NVML did not answer within {:.1} s (a hung driver?)",
                wait.as_secs_f64()
            )),
        }
    }

    fn stop_live(&self) {
        if let Ok(mut stream) = self.stream.try_lock() {
            // Dropping it closes the child's input and reaps it.
            stream.take();
        }
    }

    fn plan_options(&self, report: &Report) -> PlanOptions {
        plan_options(report, self.set.manifests())
    }

    fn plan(&self, report: &Report, choice: &PlanChoice) -> Result<PlanText, String> {
        write_plan(report, self.set.manifests(), choice, Some(&self.host))
    }

    fn sudo_asks(&self) -> bool {
        !self.host.is_rooted() && !rustix::process::geteuid().is_root()
    }

    fn authorize(&self) -> Result<(), String> {
        sudo_validate()
    }

    fn run_plan(&self, plan: &PlanText, log: &std::path::Path, on_event: &mut dyn FnMut(RunEvent)) {
        if let Some(why) = &plan.cannot_run {
            on_event(RunEvent::Ended(Outcome::Error(why.clone())));
            return;
        }
        let keep_alive =
            (self.sudo_asks() && plan.steps.iter().any(|s| s.root)).then(SudoKeepAlive::start);
        crate::plan::execute::run_watched(&self.host, &plan.run_script, log, &mut |event| {
            match &event {
                RunEvent::Started { group, .. } => {
                    *lock(&self.running) = i32::try_from(*group).ok();
                }
                RunEvent::Ended(_) => *lock(&self.running) = None,
                _ => {}
            }
            on_event(event);
        });
        drop(keep_alive);
    }

    fn abandon_plan(&self) {
        if let Some(group) = lock(&self.running).take() {
            // sudo passes the signal on to the command it runs as root.
            if let Some(pid) = rustix::process::Pid::from_raw(group) {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
            }
        }
    }

    fn smoke(&self, report: Option<&Report>, progress: &mut dyn FnMut(SmokeEvent)) {
        if self.host.is_rooted() {
            progress(SmokeEvent::Unavailable(
                "examined with --root: the smoke test needs the real machine's driver".to_string(),
            ));
            return;
        }
        if let Some(why) = report.and_then(crate::smoke::amd_only) {
            progress(SmokeEvent::Unavailable(why));
            return;
        }
        if report.is_some_and(|r| r.gpus.iter().all(|g| g.source == GpuSource::Pci)) {
            progress(SmokeEvent::Unavailable(
                "no GPU answers through the driver, so there is nothing to run on".to_string(),
            ));
            return;
        }
        let gpus = report.map_or(0, |r| r.gpus.len());
        progress(SmokeEvent::Progress {
            step: format!(
                "{gpus} GPU(s): context, PTX JIT, fp32 matmul against the CPU, memory patterns, \
                 bandwidth, then cuBLASLt bf16 and PTX fp32 throughput"
            ),
            done: 0,
            total: 0,
        });
        progress(run_smoke(&self.host, self.set.manifests(), report));
    }
}

/// The smoke test with benchmarks on the machine `report` describes: the same child process,
/// deadline and findings as `gpu-doctor smoke --bench`.
fn run_smoke(host: &Host, manifests: &Manifests, report: Option<&Report>) -> SmokeEvent {
    let mut report = report.cloned().unwrap_or_default();
    let run = crate::smoke::test(host, &mut report, manifests, None, true);
    smoke_outcome(&run)
}

/// A smoke run as the rows the screen lists: one per check per GPU, throughput beside what
/// the card should reach.
#[must_use]
pub fn smoke_outcome(run: &SmokeRun) -> SmokeEvent {
    if run.status == SmokeStatus::CouldNotRun {
        return SmokeEvent::Unavailable(
            run.error
                .clone()
                .unwrap_or_else(|| "the smoke test could not run".to_string()),
        );
    }
    let mut rows = Vec::new();
    for d in &run.devices {
        let device = format!("GPU {}", d.index);
        let row = |check: &str, passed: bool, detail: String| SmokeRow {
            device: device.clone(),
            check: check.to_string(),
            passed,
            detail,
            measured: None,
            expected: None,
            unit: String::new(),
        };
        if let Some(e) = &d.error {
            rows.push(row(
                "driver",
                false,
                format!("{} failed: {} ({}) {}", e.call, e.name, e.code, e.message),
            ));
        }
        if let (Some(context), Some(jit)) = (d.context_ms, d.ptx_load_ms) {
            rows.push(row(
                "context + PTX JIT",
                true,
                format!("{context:.0} ms + {jit:.0} ms"),
            ));
        }
        if let Some(m) = &d.matmul {
            rows.push(row(
                &format!("fp32 matmul {}³ vs CPU", m.size[0]),
                m.passed,
                format!("rel. error {:.1e}", m.max_rel_error),
            ));
        }
        if let Some(m) = &d.memory {
            rows.push(row(
                "memory patterns",
                m.passed,
                format!(
                    "{} MiB ×{}, {} errors",
                    m.bytes / (1024 * 1024),
                    m.patterns,
                    m.errors
                ),
            ));
        }
        if let Some(b) = &d.bandwidth {
            let mut r = row(
                "device copy bandwidth",
                true,
                format!(
                    "H→D {}, D→H {} GB/s",
                    b.host_to_device_gbs
                        .map_or_else(|| "?".to_string(), |v| format!("{v:.0}")),
                    b.device_to_host_gbs
                        .map_or_else(|| "?".to_string(), |v| format!("{v:.0}"))
                ),
            );
            r.measured = b.device_to_device_gbs;
            r.expected = b.expected_gbs;
            r.unit = "GB/s".to_string();
            rows.push(r);
        }
        if let Some(t) = &d.throughput {
            if t.cublaslt_bf16_tflops.is_some() || t.cublaslt_error.is_some() {
                let mut r = row(
                    "cuBLASLt bf16 GEMM",
                    t.cublaslt_error.is_none(),
                    t.cublaslt_error.clone().unwrap_or_default(),
                );
                r.measured = t.cublaslt_bf16_tflops;
                r.expected = t.expected_bf16_tflops;
                r.unit = "TFLOP/s".to_string();
                rows.push(r);
            }
            if t.ptx_fp32_tflops.is_some() {
                let mut r = row("PTX fp32 kernel", true, String::new());
                r.measured = t.ptx_fp32_tflops;
                r.expected = t.expected_fp32_tflops;
                r.unit = "TFLOP/s".to_string();
                rows.push(r);
            }
        }
        if !rows.iter().any(|r| r.device == device) {
            rows.push(row("all checks", d.passed, String::new()));
        }
    }
    match (&run.error, rows.is_empty()) {
        (Some(e), true) => SmokeEvent::Failed(e.clone()),
        _ => SmokeEvent::Finished(rows),
    }
}

/// Writes the install script for a choice with [`crate::plan`], as `gpu-doctor plan` would,
/// with the script that runs it on `host` (the examined machine) as `plan --execute` would, or
/// why it cannot be run from there; `None`: the script as written is the one run.
///
/// # Errors
/// The planner's refusal, rendered with its facts; or a framework the planner cannot parse.
pub fn write_plan(
    report: &Report,
    manifests: &Manifests,
    choice: &PlanChoice,
    host: Option<&Host>,
) -> Result<PlanText, String> {
    let framework = choice
        .framework
        .as_deref()
        .map(crate::plan::target::parse_framework)
        .transpose()
        .map_err(|e| e.to_string())?;
    let target = crate::plan::Target {
        via: choice.via,
        cuda: choice.cuda.clone(),
        framework,
        ..crate::plan::Target::default()
    };
    let plan = crate::plan::plan(report, manifests, &target).map_err(|r| r.render())?;
    let script = crate::plan::shell::render(&plan, &crate::plan::shell::Options::default());
    let (run_script, cannot_run) = match host {
        None => (script.clone(), None),
        Some(host) => runnable(host, &plan, &script),
    };
    Ok(PlanText {
        summary: plan.summary.clone(),
        files: plan
            .files
            .iter()
            .map(|f| (f.name.clone(), f.content.clone()))
            .collect(),
        steps: plan
            .steps
            .iter()
            .map(|s| PlanStep {
                id: s.id().into_owned(),
                title: s.title.clone(),
                root: s.needs_root,
            })
            .collect(),
        script,
        run_script,
        cannot_run,
    })
}

/// The script that runs a plan on `host` (below the root under `--root`, as `plan --execute`
/// writes it), and why it may not run there: `plan --execute`'s own refusals.
fn runnable(host: &Host, plan: &crate::plan::Plan, script: &str) -> (String, Option<String>) {
    if host.host_root().is_some() {
        return (
            String::new(),
            Some(
                "Examined through --host-root: running a plan here would change the \
                 container, not the node it examined. Save it (s) and run it on the node."
                    .to_string(),
            ),
        );
    }
    if !host.is_rooted() {
        return (script.to_string(), None);
    }
    let options = crate::plan::shell::Options {
        root: host.fs.root().display().to_string(),
    };
    let why = crate::plan::execute::escapes_root(host, plan).map(|why| format!("Not run: {why}"));
    (crate::plan::shell::render(plan, &options), why)
}

/// Asks sudo for the password on the terminal (`sudo -v`), waiting at most
/// [`SUDO_PROMPT_LIMIT`] for the answer.
fn sudo_validate() -> Result<(), String> {
    let Ok(sudo) = which::which("sudo") else {
        return Err(
            "the plan has steps that run as root and sudo is not installed: run gpu-doctor as \
             root, or save the plan (s) and run it as root"
                .to_string(),
        );
    };
    let mut child = std::process::Command::new(sudo)
        .args([
            "-v",
            "-p",
            "gpu-doctor: the plan's root steps run with sudo; password for %p: ",
        ])
        .spawn()
        .map_err(|e| format!("cannot start sudo: {e}"))?;
    let deadline = std::time::Instant::now() + SUDO_PROMPT_LIMIT;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(_)) => return Err("sudo did not accept; nothing was run".to_string()),
            Ok(None) if std::time::Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("no password was given to sudo in time; nothing was run".to_string());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("lost the sudo process: {e}")),
        }
    }
}

/// How long sudo's password prompt may wait for the user.
const SUDO_PROMPT_LIMIT: Duration = Duration::from_secs(300);

/// Keeps sudo's remembered password fresh (`sudo -n -v` every minute) while a long plan runs,
/// so a step late in it does not fail for want of a prompt no one could answer.
struct SudoKeepAlive {
    stop: Arc<(Mutex<bool>, std::sync::Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SudoKeepAlive {
    fn start() -> SudoKeepAlive {
        let stop = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let theirs = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("sudo-keep-alive".to_string())
            .spawn(move || {
                let (flag, wake) = &*theirs;
                let mut stopped = lock(flag);
                while !*stopped {
                    let (guard, timeout) = wake
                        .wait_timeout(stopped, Duration::from_secs(60))
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    stopped = guard;
                    if timeout.timed_out() && !*stopped {
                        let _ = std::process::Command::new("sudo")
                            .args(["-n", "-v"])
                            .stdin(std::process::Stdio::null())
                            .stdout(std::process::Stdio::null())
                            .stderr(std::process::Stdio::null())
                            .status();
                    }
                }
            })
            .ok();
        SudoKeepAlive { stop, thread }
    }
}

impl Drop for SudoKeepAlive {
    fn drop(&mut self) {
        let (flag, wake) = &*self.stop;
        *lock(flag) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A choice in words: "via apt, CUDA 12.8, torch".
#[must_use]
pub fn describe(choice: &PlanChoice) -> String {
    format!(
        "via {}, CUDA {}, {}",
        choice.via.map_or("auto", Via::as_str),
        choice.cuda.as_deref().unwrap_or("auto"),
        choice.framework.as_deref().unwrap_or("no framework")
    )
}

/// How many torch releases the framework list offers besides "the newest that fits".
const TORCH_RELEASES: usize = 4;

/// The plan choices for this machine, from the compatibility tables and the planner's own
/// rules ([`choose::cuda_refuses_gpus`], [`choose::torch_build`]): the CUDA releases every GPU
/// can use, and the torch releases with kernels for every GPU. Pure.
#[must_use]
pub fn plan_options(report: &Report, manifests: &Manifests) -> PlanOptions {
    let table = &manifests.cuda;
    let mut ccs: Vec<String> = report
        .gpus
        .iter()
        .filter_map(|g| g.compute_capability.clone())
        .collect();
    ccs.sort();
    ccs.dedup();
    let mut cudas: Vec<Version> = Vec::new();
    for release in &table.releases {
        let Some(minor) =
            Version::parse(&release.version).and_then(|v| Version::parse(&v.major_minor()))
        else {
            continue;
        };
        if release.verified
            && !cudas.contains(&minor)
            && choose::cuda_refuses_gpus(table, &minor, &ccs).is_none()
        {
            cudas.push(minor);
        }
    }
    cudas.sort();
    cudas.reverse();
    let mut frameworks = vec!["torch".to_string()];
    frameworks.extend(
        manifests
            .frameworks
            .torch
            .iter()
            .rev()
            .filter(|release| choose::torch_build(table, release, &ccs, None, None).is_ok())
            .take(TORCH_RELEASES)
            .map(|release| format!("torch=={}", release.version)),
    );
    frameworks.extend(["tensorflow", "jax", "cupy"].map(str::to_string));
    let basis = if ccs.is_empty() {
        "No GPU reported a compute capability, so every CUDA release is listed.".to_string()
    } else {
        format!(
            "Lists hold what compute capability {} can use (cuda.toml, frameworks.toml).",
            ccs.join(", ")
        )
    };
    PlanOptions {
        vias: vec![Via::Apt, Via::Conda, Via::Pip],
        cudas: cudas.iter().map(ToString::to_string).collect(),
        frameworks,
        basis,
    }
}

/// How often live readings are taken while the GPUs screen is open and in use.
pub const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// How long the first reading of a new streaming child may take besides the period: loading
/// and initialising NVML (about 12 ms on a healthy H200; generous, to catch a hang).
const FIRST_READING: Duration = Duration::from_secs(2);

/// How often once nobody has pressed a key for [`IDLE_AFTER`]. Readings come from one child
/// that keeps NVML loaded ([`crate::host::gpu::stream_main`]); before that, each reading was a
/// process that loaded NVML and libcuda (about 37 ms of CPU on an H200: ~4 % of a core at one
/// a second). The idle back-off stays: the screen redraws less often.
pub const IDLE_SAMPLE_EVERY: Duration = Duration::from_secs(5);

/// How long without a key before live readings slow down.
pub const IDLE_AFTER: Duration = Duration::from_secs(60);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Gpu;

    fn with_cc(cc: &str) -> Report {
        Report {
            gpus: vec![Gpu {
                compute_capability: Some(cc.to_string()),
                source: crate::report::GpuSource::NvidiaSmi,
                ..Gpu::default()
            }],
            ..Report::default()
        }
    }

    #[test]
    fn cuda_list_follows_the_gpu() {
        let m = crate::manifest::embedded();
        let hopper = plan_options(&with_cc("9.0"), m);
        assert!(hopper.cudas.iter().any(|c| c.starts_with("12.")));
        assert!(
            !hopper.cudas.iter().any(|c| c.starts_with("11.7")),
            "{hopper:?}"
        );
        let sorted: Vec<Version> = hopper
            .cudas
            .iter()
            .filter_map(|c| Version::parse(c))
            .collect();
        assert!(sorted.windows(2).all(|w| w[0] > w[1]), "newest first");
        let pascal = plan_options(&with_cc("6.0"), m);
        assert!(
            !pascal.cudas.iter().any(|c| c.starts_with("13.")),
            "CUDA 13 dropped Pascal: {pascal:?}"
        );
    }

    #[test]
    fn torch_list_only_holds_releases_with_kernels_for_the_gpu() {
        let m = crate::manifest::embedded();
        let options = plan_options(&with_cc("9.0"), m);
        assert_eq!(
            options.frameworks.first().map(String::as_str),
            Some("torch")
        );
        assert!(options.frameworks.iter().any(|f| f.starts_with("torch==")));
        for f in &options.frameworks {
            assert!(crate::plan::target::parse_framework(f).is_ok(), "{f}");
        }
    }

    #[test]
    fn the_real_planner_writes_or_refuses_with_reasons() {
        let m = crate::manifest::embedded();
        let report = with_cc("9.0");
        let choice = PlanChoice {
            via: Some(Via::Pip),
            cuda: None,
            framework: Some("torch".to_string()),
        };
        match write_plan(&report, m, &choice, None) {
            Ok(plan) => assert!(plan.script.starts_with("#!"), "{}", plan.script),
            Err(reason) => assert!(!reason.is_empty()),
        }
        let bad = PlanChoice {
            framework: Some("numpy".to_string()),
            ..PlanChoice::default()
        };
        assert!(write_plan(&report, m, &bad, None).is_err());
    }

    #[test]
    fn a_choice_reads_as_words() {
        let choice = PlanChoice {
            via: Some(Via::Pip),
            cuda: Some("12.8".to_string()),
            framework: Some("torch".to_string()),
        };
        assert_eq!(describe(&choice), "via pip, CUDA 12.8, torch");
        assert_eq!(
            describe(&PlanChoice::default()),
            "via auto, CUDA auto, no framework"
        );
    }
}
