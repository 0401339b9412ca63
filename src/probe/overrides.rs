//! `GPU_DOCTOR_*` variables that replace detected facts, for build containers and CI runners
//! with no GPU (uv's `UV_CUDA_DRIVER_VERSION` and conda's `CONDA_OVERRIDE_CUDA` do the same).
//! Every replacement is listed in `overrides[]`, so a report never hides that it was told.

use crate::host::Env;
use crate::report::GpuSource;
use crate::report::{Gpu, Override, ProbeRecord, ProbeStatus, Report};
use crate::version::Version;

/// The variables, the report field each replaces, and whether the value must be a version.
pub(crate) const VARIABLES: [(&str, &str, bool); 6] = [
    ("GPU_DOCTOR_DRIVER_VERSION", "driver.version", true),
    ("GPU_DOCTOR_CUDA_VERSION", "driver.cuda_version", true),
    ("GPU_DOCTOR_GPU_CC", "gpus[].compute_capability", true),
    ("GPU_DOCTOR_GPU_NAME", "gpus[].name", false),
    ("GPU_DOCTOR_GPU_MEMORY_MIB", "gpus[].memory_total_mib", true),
    // A pod's hostname is the pod's, not the node's; `report merge` groups by node, so a
    // Kubernetes pod passes `spec.nodeName` in through the downward API.
    ("GPU_DOCTOR_HOSTNAME", "host.hostname", false),
];

/// Applies every override set in `env` to `report`.
pub(crate) fn apply(env: &Env, report: &mut Report) {
    let mut rejected = Vec::new();
    for (variable, field, is_number) in VARIABLES {
        let Some(value) = env.non_empty(variable).map(str::trim) else {
            continue;
        };
        if is_number && Version::parse(value).is_none() {
            rejected.push(format!(
                "{variable}={value:?} is not a version number; ignored"
            ));
            continue;
        }
        let detected = set(report, field, value);
        report.overrides.push(Override {
            field: field.to_string(),
            variable: variable.to_string(),
            value: value.to_string(),
            detected,
        });
    }
    if !rejected.is_empty() {
        report.probes.push(ProbeRecord {
            name: "overrides".to_string(),
            status: ProbeStatus::Failed,
            detail: Some(rejected.join("; ")),
            duration_ms: 0,
            source: None,
        });
    }
}

/// Sets one field and returns what was detected before.
fn set(report: &mut Report, field: &str, value: &str) -> Option<String> {
    match field {
        "driver.version" => {
            report.driver.source = Some("override".to_string());
            report.driver.version.replace(value.to_string())
        }
        "driver.cuda_version" => report.driver.cuda_version.replace(value.to_string()),
        "host.hostname" => report.host.hostname.replace(value.to_string()),
        gpu_field => {
            if report.gpus.is_empty() {
                // A runner without a GPU that is told about one: describe that GPU.
                report.gpus.push(Gpu {
                    source: GpuSource::Override,
                    ..Gpu::default()
                });
            }
            let mut before = None;
            for gpu in &mut report.gpus {
                let old = match gpu_field {
                    "gpus[].compute_capability" => {
                        gpu.compute_capability.replace(value.to_string())
                    }
                    "gpus[].name" => gpu.name.replace(value.to_string()),
                    _ => gpu
                        .memory_total_mib
                        .replace(value.parse().unwrap_or_default())
                        .map(|m| m.to_string()),
                };
                before = before.or(old);
                gpu.filled_from.push(format!(
                    "{}: override",
                    gpu_field.trim_start_matches("gpus[].")
                ));
            }
            before
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::HostInfo;

    #[test]
    fn the_hostname_override_names_the_node_and_keeps_what_was_detected() {
        let mut report = Report {
            host: HostInfo {
                hostname: Some("gpu-doctor-fleet-3".to_string()),
                ..HostInfo::default()
            },
            ..Report::default()
        };
        apply(
            &Env::from_pairs([("GPU_DOCTOR_HOSTNAME", " gpu-node-17 ")]),
            &mut report,
        );
        assert_eq!(report.host.hostname.as_deref(), Some("gpu-node-17"));
        assert_eq!(report.overrides.len(), 1);
        assert_eq!(report.overrides[0].field, "host.hostname");
        assert_eq!(
            report.overrides[0].detected.as_deref(),
            Some("gpu-doctor-fleet-3")
        );
        assert!(report.gpus.is_empty(), "a hostname invents no GPU");
    }
}
