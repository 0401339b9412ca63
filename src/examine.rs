//! Gathering and diagnosing: the one function every face calls to turn the machine into a
//! [`Report`]. It runs the probes through the [`Host`], attaches the deep scan when asked,
//! has the manifest set the settings pass handed it chosen beside the probes, fills what the
//! GPU id table knows, and diagnoses.
//!
//! Depends on the probes, the manifests and the rules (not on `update`: which set is in use is
//! decided above, in the settings pass); nothing below it imports it back except the faces that
//! show a report.

use crate::host::Host;
use crate::manifest::SetInUse;
use crate::report::Report;

/// When the report is made: now, or under `--root` the fixed `SOURCE_DATE_EPOCH` if any.
fn generated_at(host: &Host) -> Option<String> {
    let secs = if host.is_rooted() {
        host.env
            .non_empty("SOURCE_DATE_EPOCH")?
            .trim()
            .parse()
            .ok()?
    } else {
        u64::try_from(jiff::Timestamp::now().as_second()).ok()?
    };
    crate::date::utc_timestamp(secs)
}

/// Gathers and diagnoses: the full report for any face.
///
/// Uses the run's manifest set (`set`: the installed one when there is a good one, else the
/// built-in set); `report.manifests` says which. Today's date comes from the system
/// clock for the `manifests-stale` rule, except under `--root`, where a fixture's report must
/// be the same every day.
#[must_use]
pub(crate) fn examine(host: &Host, set: &SetInUse) -> Report {
    examine_with(host, set, None)
}

/// [`examine`], and with `deep` each framework imported by its environment's interpreter before
/// the diagnosis (`doctor --deep`, `smoke --frameworks`), so the rules weigh what the
/// frameworks said.
#[must_use]
pub(crate) fn examine_with(
    host: &Host,
    set: &SetInUse,
    deep: Option<&crate::deep::Options>,
) -> Report {
    let report = gather_beside_choice(host, set);
    finish(host, deep, set, report)
}

/// The probes' report, with the manifest set chosen (the embedded one parsed, or an installed
/// one verified) on its own thread while the probes run: the probes need no manifest but in a
/// rare fallback, and on a GPU machine the scan waits for the driver probe anyway, so this
/// takes the parsing off `doctor`'s critical path (issue 29).
fn gather_beside_choice(host: &Host, set: &SetInUse) -> Report {
    std::thread::scope(|s| {
        let chosen = s.spawn(|| {
            let manifests = set.manifests();
            // The GPU id tables are parsed on first use, which comes right after the driver
            // probe, on the critical path: parse them here, beside the probes, when the
            // machine has the vendor's device nodes.
            if host.fs.exists("/dev/nvidiactl") {
                let _ = manifests.gpu_ids.table();
            }
            if host.fs.exists("/dev/kfd") {
                let _ = manifests.amd_gpu_ids.table();
            }
        });
        let report = crate::probe::gather(host, set);
        // A panic while choosing is a bug; asking again here lets it surface on this thread,
        // where `guarded` turns it into a message.
        if chosen.join().is_err() {
            let _ = set.get();
        }
        report
    })
}

/// The report with an error text explained against the same manifest set the diagnosis
/// used: what `gpu-doctor explain` prints. `input_cut` says how the text was shortened when it
/// was read.
#[must_use]
pub(crate) fn explain(
    host: &Host,
    set: &SetInUse,
    deep: Option<&crate::deep::Options>,
    text: &[u8],
    input_cut: Option<String>,
) -> Report {
    // The examination and the search of the text share the budget a scan gets.
    let end = std::time::Instant::now() + host.timeout + crate::host::budget::SLACK;
    let report = gather_beside_choice(host, set);
    let mut report = finish(host, deep, set, report);
    let table = set.manifests().errors.table();
    report.explain = Some(crate::explain::explain_until(
        &report,
        table,
        text,
        input_cut,
        Some(end),
    ));
    report
}

/// [`explain`], with a bug in gpu-doctor turned into a message (see [`examine_guarded`]).
///
/// # Errors
/// The panic message, when examining or explaining panicked.
pub(crate) fn explain_guarded(
    host: &Host,
    set: &SetInUse,
    deep: Option<&crate::deep::Options>,
    text: &[u8],
    input_cut: Option<String>,
) -> Result<Report, String> {
    guarded(|| explain(host, set, deep, text, input_cut))
}

/// The probes' report completed: the deep scan, the manifest summary, the GPUs' table facts
/// and the diagnosis.
fn finish(
    host: &Host,
    deep: Option<&crate::deep::Options>,
    set: &SetInUse,
    mut report: Report,
) -> Report {
    let in_use = set.get();
    let manifests = in_use.manifests.as_ref();
    report.generated_at = generated_at(host);
    if let Some(deep) = deep {
        crate::deep::attach(host, &mut report, deep);
    }
    let today = if host.is_rooted() {
        None
    } else {
        crate::date::Date::from_system_time(std::time::SystemTime::now())
    };
    report.manifests = crate::report::ManifestSet {
        origin: in_use.origin.to_string(),
        version: in_use.version.clone(),
        updated: in_use.updated.clone(),
        today: today.map(|d| d.to_string()),
        warning: in_use.warning.clone(),
    };
    crate::fill::fill_gpus(&mut report, manifests);
    report.findings = crate::diagnose::diagnose_with(&report, manifests);
    report
}

/// [`examine`], with a bug in gpu-doctor turned into a message rather than a crash: CI jobs
/// gate on `check`'s exit code and must tell "your machine fails" (1) from "the doctor broke"
/// (3).
///
/// # Errors
/// The panic message, when examining panicked.
pub(crate) fn examine_guarded(host: &Host, set: &SetInUse) -> Result<Report, String> {
    examine_guarded_with(host, set, None)
}

/// [`examine_guarded`] with the deep scan of [`examine_with`].
///
/// # Errors
/// The panic message, when examining panicked.
pub(crate) fn examine_guarded_with(
    host: &Host,
    set: &SetInUse,
    deep: Option<&crate::deep::Options>,
) -> Result<Report, String> {
    guarded(|| examine_with(host, set, deep))
}

/// Runs `work`, a panic in it becoming its message.
fn guarded(work: impl FnOnce() -> Report) -> Result<Report, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
            .unwrap_or_else(|| "unknown panic".to_string())
    })
}
