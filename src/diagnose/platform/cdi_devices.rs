//! `cdi-spec-device-mismatch`: a Container Device Interface spec whose devices are not the GPUs
//! and MIG devices present.

// The parent's imports and shared helpers: one family of platform findings.
use super::*;

use crate::report::{CdiSpec, MigMode};

// ---------------------------------------------------------------------------------------------
// cdi-spec-device-mismatch

/// A CDI spec for NVIDIA devices lists each device a container can ask for: a GPU by index
/// (`nvidia.com/gpu=0`) and UUID (`GPU-...`), a MIG device by index (`0:1`) and UUID
/// (`MIG-...`), and `all`. It is written once (`nvidia-ctk cdi generate`, a device plugin) and
/// does not follow the devices: MIG devices created or destroyed after it, or a GPU swapped,
/// leave it listing devices that are gone and lacking the ones present, and the engine
/// refuses a container that asks for one it lacks ("unresolvable CDI devices", Project-HAMi/HAMi#1903)
/// while `all` gives only what was there when it was written. NVIDIA's `nvidia-cdi-refresh`
/// follows driver changes but not MIG reconfiguration (NVIDIA/nvidia-container-toolkit#1828;
/// moby/moby#52704: "CDI specs may be present but out of date (e.g. MIG devices ...)").
/// Both directions: devices present that the spec lacks (error: no container can have them),
/// and devices the spec lists that are gone (warning: asking for them fails). A naming scheme
/// the spec does not use (index or UUID) is not compared; MIG devices are compared by count,
/// the report carrying no MIG UUIDs. Judged on the host only, as `cdi-spec-stale`.
pub(super) fn cdi_spec_device_mismatch(report: &Report) -> Vec<Finding> {
    if report.host.container.is_some() || report.host.wsl {
        return Vec::new();
    }
    let gpus = machine_gpus(report);
    if gpus.is_empty() {
        return Vec::new();
    }
    report
        .host
        .cdi_specs
        .iter()
        .filter(|s| {
            s.kind
                .as_deref()
                .is_none_or(|k| k.ends_with("nvidia.com/gpu"))
        })
        .filter_map(|spec| mismatch(spec, &gpus))
        .collect()
}

/// The device names of a spec, sorted by naming scheme.
#[derive(Default)]
struct Listed<'a> {
    gpu_index: Vec<u32>,
    gpu_uuid: Vec<&'a str>,
    mig_index: Vec<(u32, u32)>,
    mig_uuid: usize,
}

fn listed(spec: &CdiSpec) -> Listed<'_> {
    let mut l = Listed::default();
    for name in &spec.devices {
        if let Ok(i) = name.parse::<u32>() {
            l.gpu_index.push(i);
        } else if let Some((g, m)) = name.split_once(':')
            && let (Ok(g), Ok(m)) = (g.parse::<u32>(), m.parse::<u32>())
        {
            l.mig_index.push((g, m));
        } else if name.starts_with("GPU-") {
            l.gpu_uuid.push(name);
        } else if name.starts_with("MIG-") {
            l.mig_uuid += 1;
        }
    }
    l
}

/// A GPU's MIG devices when MIG is on and the driver said how many.
fn mig_count(g: &Gpu) -> Option<u32> {
    (g.mig_mode == Some(MigMode::Enabled))
        .then_some(g.mig_devices)
        .flatten()
}

/// What the spec lacks and what it lists that is gone, in words.
struct Differences {
    lacking: Vec<String>,
    gone: Vec<String>,
}

fn differences(l: &Listed<'_>, gpus: &[&Gpu]) -> Differences {
    let mut d = Differences {
        lacking: Vec::new(),
        gone: Vec::new(),
    };
    let count = u32::try_from(gpus.len()).unwrap_or(u32::MAX);
    let by_index = !l.gpu_index.is_empty() || !l.mig_index.is_empty();
    if !l.gpu_index.is_empty() {
        for i in (0..count).filter(|i| !l.gpu_index.contains(i)) {
            d.lacking.push(format!("GPU {i} (`{i}`)"));
        }
        for i in l.gpu_index.iter().filter(|i| **i >= count) {
            d.gone.push(format!("GPU `{i}` (the machine has {count})"));
        }
    }
    let uuids: Vec<&str> = gpus.iter().filter_map(|g| g.uuid.as_deref()).collect();
    if !l.gpu_uuid.is_empty() && uuids.len() == gpus.len() {
        for u in uuids.iter().filter(|u| !l.gpu_uuid.contains(u)) {
            d.lacking.push(format!("GPU `{u}`"));
        }
        for u in l.gpu_uuid.iter().filter(|u| !uuids.contains(u)) {
            d.gone.push(format!("GPU `{u}`"));
        }
    }
    if by_index {
        mig_by_index(l, gpus, &mut d);
    }
    let by_uuid = !l.gpu_uuid.is_empty() || l.mig_uuid > 0;
    let counts: Option<Vec<u32>> = gpus
        .iter()
        .filter(|g| g.mig_mode == Some(MigMode::Enabled))
        .map(|g| mig_count(g))
        .collect();
    if by_uuid && let Some(counts) = counts {
        let present: usize = counts.iter().map(|c| *c as usize).sum();
        if present > l.mig_uuid {
            d.lacking.push(format!(
                "{} of the {present} MIG devices by UUID (it lists {})",
                present - l.mig_uuid,
                l.mig_uuid
            ));
        } else if l.mig_uuid > present {
            d.gone.push(format!(
                "{} MIG devices by UUID, where the machine has {present}",
                l.mig_uuid
            ));
        }
    }
    d
}

/// MIG devices by index (`GPU:MIG`): those of a MIG-enabled GPU the spec lacks, and those it
/// lists on a GPU without MIG or past the GPU's count.
fn mig_by_index(l: &Listed<'_>, gpus: &[&Gpu], d: &mut Differences) {
    for (i, g) in gpus.iter().enumerate() {
        let i = u32::try_from(i).unwrap_or(u32::MAX);
        let listed: Vec<u32> = l
            .mig_index
            .iter()
            .filter(|(gi, _)| *gi == i)
            .map(|(_, m)| *m)
            .collect();
        match (g.mig_mode.as_ref(), mig_count(g)) {
            (Some(MigMode::Enabled), Some(n)) => {
                let missing: Vec<String> = (0..n)
                    .filter(|m| !listed.contains(m))
                    .map(|m| format!("`{i}:{m}`"))
                    .collect();
                if !missing.is_empty() {
                    d.lacking.push(format!(
                        "MIG device{} {} of GPU {i}",
                        if missing.len() == 1 { "" } else { "s" },
                        missing.join(", ")
                    ));
                }
                for m in listed.iter().filter(|m| **m >= n) {
                    d.gone
                        .push(format!("MIG device `{i}:{m}` (GPU {i} has {n})"));
                }
            }
            (Some(MigMode::Disabled), _) if !listed.is_empty() => {
                d.gone.push(format!(
                    "{} MIG device{} of GPU {i}, which has MIG off",
                    listed.len(),
                    if listed.len() == 1 { "" } else { "s" }
                ));
            }
            _ => {}
        }
    }
    let count = u32::try_from(gpus.len()).unwrap_or(u32::MAX);
    let beyond = l.mig_index.iter().filter(|(gi, _)| *gi >= count).count();
    if beyond > 0 {
        d.gone.push(format!(
            "{beyond} MIG device{} of GPUs the machine does not have",
            if beyond == 1 { "" } else { "s" }
        ));
    }
}

fn mismatch(spec: &CdiSpec, gpus: &[&Gpu]) -> Option<Finding> {
    let l = listed(spec);
    let d = differences(&l, gpus);
    if d.lacking.is_empty() && d.gone.is_empty() {
        return None;
    }
    let severity = if d.lacking.is_empty() {
        Severity::Warning
    } else {
        Severity::Error
    };
    let title = if d.lacking.is_empty() {
        format!(
            "The CDI spec {} lists devices this machine no longer has",
            spec.path
        )
    } else {
        format!(
            "The CDI spec {} lacks devices this machine has: {}",
            spec.path,
            d.lacking.join("; ")
        )
    };
    let mut f = FindingBuilder::new(&ids::CDI_SPEC_DEVICE_MISMATCH, severity, title).detail(
        "A container engine that uses CDI (Podman, containerd, CRI-O, Docker with CDI) gives a \
         container a GPU or MIG device only as a device the spec lists: one it lacks is \
         refused (\"unresolvable CDI devices\"), and `all` gives only the devices that were \
         there when the spec was written. The spec does not follow the devices: creating or \
         destroying MIG devices, or changing GPUs, needs it written again (NVIDIA's \
         `nvidia-cdi-refresh` follows driver changes, not MIG changes).",
    );
    f = f.evidence(format!("{}: lists {}", spec.path, spec.devices.join(", ")));
    for g in gpus {
        let mig = match (g.mig_mode.as_ref(), g.mig_devices) {
            (Some(MigMode::Enabled), Some(n)) => format!(", MIG on with {n} MIG devices"),
            (Some(MigMode::Enabled), None) => ", MIG on".to_string(),
            _ => String::new(),
        };
        f = f.evidence(format!(
            "present: GPU {} {}{mig}",
            g.index,
            g.uuid.as_deref().unwrap_or("(no UUID read)")
        ));
    }
    for gone in &d.gone {
        f = f.evidence(format!("listed but not present: {gone}"));
    }
    Some(
        f.subject(Subject::Container(None))
            .fix_on_host(regenerate(spec))
            .build(),
    )
}

/// Write the spec again: NVIDIA's own with `nvidia-ctk`, another program's (a device plugin's
/// `k8s.device-plugin.nvidia.com/gpu`) by that program.
fn regenerate(spec: &CdiSpec) -> String {
    match spec.kind.as_deref() {
        Some(kind) if kind != "nvidia.com/gpu" => format!(
            "The spec is {kind}'s, written by the program that owns that kind (a Kubernetes \
             device plugin): restart it so that it writes the spec for the devices present \
             (its pod on this node), and upgrade it if it does not write the spec when it \
             creates MIG devices (HAMi 2.9.0 does, Project-HAMi/HAMi#1903)."
        ),
        _ => format!(
            "Generate the spec again for the devices present: `sudo nvidia-ctk cdi generate \
             --output={}` (`nvidia-ctk cdi list` then shows each GPU and MIG device), after \
             every MIG reconfiguration too (`nvidia-cdi-refresh.service` does not follow MIG \
             changes, NVIDIA/nvidia-container-toolkit#1828).",
            spec.path
        ),
    }
}
