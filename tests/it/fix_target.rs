//! Whether a finding's fix is the host's is the rule's decision (`fix` or `fix_on_host` where the
//! finding is built, `fix_on_host` on an `errors.toml` row), not read from its words. These tests
//! hold the decisions against the words on every fixture machine and every row: a fix that
//! names a step only the host can take is marked as the host's, or says itself where it runs.

use gpu_doctor::diagnose::diagnose_with;
use gpu_doctor::manifest::embedded;
use gpu_doctor::report::{FixTarget, Report};

use crate::support::{doctor_all, machine_names};

/// Commands and steps only the host can carry out: the kernel module, the initramfs, the
/// driver packages, Secure Boot keys, GPU modes and resets, host services.
const HOST_ONLY: [&str; 10] = [
    "reboot",
    "rmmod",
    "modprobe",
    "update-initramfs",
    "dkms",
    "ubuntu-drivers",
    "mokutil",
    "nvidia-smi -pm",
    "nvidia-smi -r",
    "systemctl",
];

/// The fix names a host-only step and does not say itself that it is for the host.
fn unmarked_host_step(fix: &str) -> Option<&'static str> {
    let lower = fix.to_lowercase();
    if lower.contains("on the host") {
        return None;
    }
    HOST_ONLY.into_iter().find(|s| lower.contains(s))
}

#[test]
fn in_a_container_every_host_step_is_said_to_be_the_hosts() {
    let names = machine_names();
    let mut fixes = 0;
    let mut failures = Vec::new();
    for (name, json) in doctor_all(&names) {
        let mut report: Report = serde_json::from_value(json).expect("a fixture report reads back");
        // Each machine as its own container would see it: where the decision shows.
        let runtime = report
            .host
            .container
            .get_or_insert_with(|| "docker".to_string())
            .clone();
        for f in diagnose_with(&report, embedded()) {
            let Some(fix) = &f.fix else { continue };
            fixes += 1;
            let framed = fix.starts_with(&format!("This is a {runtime} container: "));
            if f.fix_target == FixTarget::Host {
                if !framed {
                    failures.push(format!("{name}: {} is the host's but not framed", f.id));
                }
            } else if let Some(step) = unmarked_host_step(fix) {
                failures.push(format!(
                    "{name}: {} names `{step}` but is not marked fix_on_host: {fix}",
                    f.id
                ));
            }
        }
    }
    assert!(fixes > 100, "only {fixes} fixes were diagnosed");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_error_row_that_names_a_host_step_is_marked_fix_on_host() {
    let unmarked: Vec<String> = embedded()
        .errors
        .table()
        .errors
        .iter()
        .filter(|row| !row.fix_on_host)
        .filter_map(|row| unmarked_host_step(&row.fix).map(|step| format!("{} (`{step}`)", row.id)))
        .collect();
    assert!(
        unmarked.is_empty(),
        "errors.toml rows whose fix is the host's without fix_on_host = true: {unmarked:?}"
    );
}
