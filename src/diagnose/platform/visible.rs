//! `visible-devices-hides-gpus`: `CUDA_VISIBLE_DEVICES` / `NVIDIA_VISIBLE_DEVICES` values that
//! select no GPU, or not the ones meant.

// The parent's imports and shared helpers: one family of platform findings.
use super::*;

// ---------------------------------------------------------------------------------------------
// visible-devices-hides-gpus

/// What one `CUDA_VISIBLE_DEVICES` entry selects.
#[derive(Debug, PartialEq)]
pub(super) enum Selects {
    /// The GPU at this position of `report.gpus`.
    Gpu(usize),
    /// Not judged: a MIG instance, an ambiguous UUID prefix, an index on a MIG machine, or a
    /// UUID where the report lacks GPU UUIDs.
    Unknown,
    /// CUDA matches it to no GPU; the text says why.
    Invalid(String),
}

/// Which GPU an entry selects, as CUDA matches it: a `GPU-<uuid>` (or a unique prefix of one)
/// by UUID, an index by position unless MIG is on (then CUDA enumerates MIG instances).
pub(super) fn resolve(raw: &str, entry: &Entry, gpus: &[&Gpu]) -> Selects {
    match entry {
        Entry::Mig => Selects::Unknown,
        Entry::GpuUuid(_) if gpus.iter().any(|g| g.uuid.is_none()) => Selects::Unknown,
        Entry::GpuUuid(prefix) => {
            let matches: Vec<usize> = gpus
                .iter()
                .enumerate()
                .filter(|(_, g)| {
                    g.uuid
                        .as_deref()
                        .is_some_and(|u| u.to_ascii_lowercase().starts_with(prefix.as_str()))
                })
                .map(|(i, _)| i)
                .collect();
            match matches.as_slice() {
                [i] => Selects::Gpu(*i),
                [] => Selects::Invalid(format!("`{raw}` is no GPU's UUID (see `nvidia-smi -L`)")),
                _ => Selects::Unknown,
            }
        }
        Entry::Negative => {
            Selects::Invalid(format!("`{raw}` is a negative index: it selects no GPU"))
        }
        Entry::Garbage => {
            Selects::Invalid(format!("`{raw}` is neither a GPU index nor a GPU UUID"))
        }
        Entry::Index(_)
            if gpus
                .iter()
                .any(|g| g.mig_mode == Some(crate::report::MigMode::Enabled)) =>
        {
            Selects::Unknown
        }
        Entry::Index(index) if *index >= gpus.len() => Selects::Invalid(format!(
            "`{raw}` is index {index}, but the machine has {} GPU(s), numbered 0 to {}",
            gpus.len(),
            gpus.len().saturating_sub(1)
        )),
        Entry::Index(index) => Selects::Gpu(*index),
    }
}

/// What `CUDA_VISIBLE_DEVICES` does wrong, if anything: the evidence lines and the GPUs it hides.
///
/// CUDA reads the list in order and stops at the first entry that matches no GPU: only the
/// GPUs before it are visible ("If one of the indices is invalid, only the devices whose index
/// precedes the invalid index are visible", CUDA Programming Guide). An empty value hides all.
/// A bad entry matters only when it hides something: first in the list (nothing is visible) or
/// before entries that name real GPUs. Trailing entries for GPUs this machine lacks (a cluster's
/// `0,1,2,3` on a 2-GPU box) hide nothing and are not reported.
pub(super) fn cuda_visible_problem(
    value: &str,
    gpus: &[&Gpu],
) -> Option<(Vec<String>, Vec<usize>)> {
    let all: Vec<usize> = (0..gpus.len()).collect();
    if value.trim().is_empty() {
        return Some((
            vec![format!(
                "CUDA_VISIBLE_DEVICES is set but empty: CUDA sees no GPU ({} present)",
                gpus.len()
            )],
            all,
        ));
    }
    let resolved: Vec<Selects> = visible_devices::entries(value)
        .iter()
        .map(|(raw, e)| resolve(raw, e, gpus))
        .collect();
    let (bad_at, why) = resolved.iter().enumerate().find_map(|(i, e)| match e {
        Selects::Invalid(why) => Some((i, why.clone())),
        _ => None,
    })?;
    let chosen = |range: &[Selects]| -> Vec<usize> {
        range
            .iter()
            .filter_map(|e| match e {
                Selects::Gpu(i) => Some(*i),
                _ => None,
            })
            .collect()
    };
    let visible = chosen(resolved.get(..bad_at).unwrap_or_default());
    let shown_before: std::collections::HashSet<usize> = visible.iter().copied().collect();
    let wanted_after: Vec<usize> = chosen(resolved.get(bad_at + 1..).unwrap_or_default())
        .into_iter()
        .filter(|i| !shown_before.contains(i))
        .collect();
    if !visible.is_empty() && wanted_after.is_empty() {
        return None;
    }
    let mut lines = vec![format!("CUDA_VISIBLE_DEVICES={value}"), why];
    if visible.is_empty() {
        lines.push("CUDA stops reading at that entry, so it sees no GPU".to_string());
        Some((lines, all))
    } else {
        let shown: Vec<String> = visible.iter().map(ToString::to_string).collect();
        lines.push(format!(
            "CUDA stops reading at that entry: only GPU(s) {} stay visible",
            shown.join(", ")
        ));
        Some((lines, wanted_after))
    }
}

/// `CUDA_VISIBLE_DEVICES` that hides the GPUs (empty, `-1`, indices past the last GPU, UUIDs of
/// no GPU here), or, inside a container, `NVIDIA_VISIBLE_DEVICES` of `void`/`none`/empty with
/// no GPU device node passed in. Judged only when the machine's GPUs are known: without them an
/// index cannot be checked, and the empty-value case is better told by the no-GPU findings.
pub(super) fn visible_devices(report: &Report) -> Option<Finding> {
    let gpus = machine_gpus(report);
    if gpus.is_empty() {
        return None;
    }
    let cuda = env(report, "CUDA_VISIBLE_DEVICES").and_then(|v| cuda_visible_problem(v, &gpus));
    let nvidia = env(report, "NVIDIA_VISIBLE_DEVICES").filter(|v| {
        report.host.container.is_some() && is_no_gpu_value(v) && !has_gpu_device_node(report)
    });
    if cuda.is_none() && nvidia.is_none() {
        return None;
    }
    let mut hidden: Vec<usize> = Vec::new();
    let mut f = FindingBuilder::new(
        &ids::VISIBLE_DEVICES_HIDES_GPUS,
        Severity::Error,
        match (&cuda, nvidia) {
            (Some(_), None) => "CUDA_VISIBLE_DEVICES hides the GPUs from CUDA programs",
            (None, _) => "NVIDIA_VISIBLE_DEVICES gave this container no GPU",
            (Some(_), Some(_)) => "CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES hide the GPUs",
        },
    )
    .detail(
        "A variable that selects GPUs selects none (or fewer than it names), so PyTorch, \
         TensorFlow and JAX see no GPU or fewer GPUs and fall back to the CPU or fail with \
         \"No CUDA GPUs are available\" / CUDA_ERROR_NO_DEVICE. If you meant to run on the \
         CPU, this is expected.",
    );
    let mut fixes = Vec::new();
    if let Some((lines, ids)) = &cuda {
        for line in lines {
            f = f.evidence(line.clone());
        }
        hidden.extend(ids);
        let last = gpus.len().saturating_sub(1);
        fixes.push(format!(
            "Unset it (`unset CUDA_VISIBLE_DEVICES`) or set valid GPUs: indices 0 to {last} or \
             UUIDs from `nvidia-smi -L`. Look for where it is set (shell profile, job script, \
             Dockerfile `ENV`); a scheduler such as Slurm sets it to the GPUs a job was granted, \
             so ask for GPUs there (`--gres=gpu:1`)."
        ));
        f = f.subject(Subject::EnvVar("CUDA_VISIBLE_DEVICES".into()));
    }
    if let Some(value) = nvidia {
        f = f
            .evidence(format!(
                "NVIDIA_VISIBLE_DEVICES={value:?} inside a container: the NVIDIA runtime passes in no GPU"
            ))
            .evidence("/dev: no /dev/nvidia<N> GPU device node")
            .explains(&ids::CONTAINER_NO_GPU_RUNTIME)
            .subject(Subject::EnvVar("NVIDIA_VISIBLE_DEVICES".into()));
        hidden.extend(0..gpus.len());
        fixes.push(
            "Start the container with the GPUs it should use: `docker run --gpus all ...` or \
             `-e NVIDIA_VISIBLE_DEVICES=all` with the NVIDIA runtime (remove any \
             `ENV NVIDIA_VISIBLE_DEVICES=void` from the image)."
                .to_string(),
        );
    }
    hidden.sort_unstable();
    hidden.dedup();
    for gpu in hidden.iter().filter_map(|i| gpus.get(*i)) {
        f = f
            .evidence(format!("hidden: {}", gpu_label(gpu)))
            .subject(gpu.subject());
    }
    Some(f.fix(fixes.join(" ")).build())
}

/// The AMD variables ollama's backend loader reads: from ollama 0.9.3 (commit 1c6669e6, "Re-remove
/// cuda v11") to 0.11.4 (gone in d5a0d8d9, "llm: New memory management", first in 0.11.5),
/// `ggml_backend_load_all_from_path` loads the CUDA backend only `if (!hip_devices &&
/// !rocr_devices)` and the HIP one otherwise ("Avoid mixed hip+cuda configurations"), whatever
/// their value, an empty one included.
const HIP_SELECTORS: [&str; 2] = ["ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"];

/// AMD's GPU-selection variables set where every GPU is NVIDIA's, beside ollama's CUDA backend:
/// ollama 0.9.3 to 0.11.4 then load no CUDA backend and run on the CPU. Slurm sets
/// `CUDA_VISIBLE_DEVICES`, `ROCR_VISIBLE_DEVICES` and `GPU_DEVICE_ORDINAL` for every task that
/// asks for GPUs unless `gres.conf` says `Flags=nvidia_gpu_env` (ollama/ollama#11220, "SLURM
/// incorrectly sets `ROCR_VISIBLE_DEVICES=0`"; alan-turing-institute/ollama-hpc-example#1). A
/// warning: ollama's release is not read, and later releases ignore the variables. Not judged
/// where an AMD GPU is on the bus (the variable may be meant for it).
pub(super) fn amd_selectors_hide_nvidia(report: &Report) -> Option<Finding> {
    let gpus = machine_gpus(report);
    let amd_gpu = report
        .gpus
        .iter()
        .any(|g| g.vendor == crate::report::GpuVendor::Amd);
    if gpus.is_empty() || amd_gpu {
        return None;
    }
    if report
        .pci_devices
        .iter()
        .any(|d| d.vendor == "amd" && d.class.starts_with("0x03"))
    {
        return None;
    }
    let set: Vec<(&str, &str)> = HIP_SELECTORS
        .iter()
        .filter_map(|name| env(report, name).map(|v| (*name, v)))
        .collect();
    let (first, _) = *set.first()?;
    let ollama: Vec<&str> = report
        .libraries
        .cuda_code
        .iter()
        .filter(|c| c.program == "ollama")
        .map(|c| c.path.as_str())
        .collect();
    let lib = *ollama.first()?;
    let slurm = env(report, "SLURM_JOB_ID").is_some();
    let names: Vec<&str> = set.iter().map(|(n, _)| *n).collect();
    let mut f = FindingBuilder::new(
        &ids::VISIBLE_DEVICES_HIDES_GPUS,
        Severity::Warning,
        format!(
            "{} is set on a machine whose GPUs are all NVIDIA's: ollama 0.9.3 to 0.11.4 then \
             load no CUDA backend",
            names.join(" and ")
        ),
    )
    .detail(
        "ollama releases 0.9.3 to 0.11.4 choose between their CUDA and ROCm backends by AMD's \
         GPU-selection variables: when ROCR_VISIBLE_DEVICES or HIP_VISIBLE_DEVICES is set, to \
         any value, an empty one included, they load the ROCm backend instead of CUDA, find no \
         AMD GPU, and run models on the CPU, though CUDA_VISIBLE_DEVICES names the GPU.",
    );
    for (name, value) in &set {
        f = f.evidence(format!("{name}={value:?}"));
    }
    f = f.evidence(format!("ollama's CUDA backend: {lib}"));
    if slurm {
        f = f.evidence(
            "SLURM_JOB_ID is set: Slurm sets ROCR_VISIBLE_DEVICES (with CUDA_VISIBLE_DEVICES and \
             GPU_DEVICE_ORDINAL) for a task that asks for GPUs, unless gres.conf says \
             Flags=nvidia_gpu_env",
        );
    }
    for gpu in &gpus {
        f = f.subject(gpu.subject());
    }
    let unset = format!("unset {}", names.join(" "));
    let fix = if slurm {
        format!(
            "Remove the variable before starting ollama, in the job script: `{unset}` (setting \
             it empty is not enough; it must be unset). On the cluster, the administrators can \
             add `Flags=nvidia_gpu_env` to the NVIDIA GPUs' lines in gres.conf, so Slurm sets \
             only CUDA_VISIBLE_DEVICES for them. ollama 0.11.5 and later no longer read the \
             variable."
        )
    } else {
        format!(
            "Unset the variable where ollama starts (`{unset}`; an empty value is not enough), \
             or upgrade ollama to 0.11.5 or later, which no longer reads it for this choice."
        )
    };
    Some(
        f.subject(Subject::EnvVar(first.to_string()))
            .fix(fix)
            .build(),
    )
}
