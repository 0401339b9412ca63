//! `mixed-gpu-models`: different GPU models that one data-parallel job would run on, unless
//! `CUDA_VISIBLE_DEVICES` or a container's `NVIDIA_VISIBLE_DEVICES` leaves one model.

use crate::diagnose::{FindingBuilder, ids};
use crate::manifest::Manifests;
use crate::report::GpuSource;
use crate::report::{EnvVar, Finding, Gpu, Report, Severity};
use crate::version::Version;

/// The model a GPU is, for comparing GPUs: the driver's name, else the GPU table's name for its
/// PCI device id; `None` when neither is known (then it is not compared).
fn model(gpu: &Gpu, manifests: &Manifests) -> Option<String> {
    gpu.name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .or_else(|| {
            gpu.pci_device_id
                .as_deref()
                .and_then(|id| manifests.gpus.by_pci_id(id))
                .map(|row| row.name.clone())
        })
}

/// A GPU's compute capability, from the driver or the GPU table.
fn capability(gpu: &Gpu, manifests: &Manifests) -> Option<String> {
    gpu.compute_capability.clone().or_else(|| {
        gpu.pci_device_id
            .as_deref()
            .and_then(|id| manifests.gpus.by_pci_id(id))
            .map(|row| row.compute_capability.clone())
    })
}

/// The lowest compute capability CUDA 12 compiles for (`cuda.toml` `[[major]]` 12's `min_sm`:
/// 12.0 removed Kepler, compat-cuda.md R6); below it no current framework build runs.
fn cuda12_min_sm(manifests: &Manifests) -> Option<&str> {
    manifests.cuda.major(12).map(|m| m.min_sm.as_str())
}

/// Below CUDA 12's lowest compute capability ([`cuda12_min_sm`]).
fn below_cuda12(gpu: &Gpu, manifests: &Manifests) -> bool {
    capability(gpu, manifests)
        .as_deref()
        .and_then(Version::parse)
        .zip(cuda12_min_sm(manifests).and_then(Version::parse))
        .is_some_and(|(cc, min)| cc < min)
}

/// Data-parallel training (DDP, FSDP, Horovod, `jax.pmap`) steps all GPUs in lockstep, so a
/// job spread over different models runs at the slowest one's pace and is limited by the
/// smallest one's memory; frameworks also pick "GPU 0" by speed order, not bus order. Any two
/// different models is worth a warning: there is no threshold to choose, the pace is set by
/// the slowest card whatever the gap.
///
/// Not judged when `CUDA_VISIBLE_DEVICES` already narrows the set to one GPU, or names GPUs by
/// UUID that are all one model: then programs see only one model.
pub(super) fn mixed_models(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let all: Vec<(&Gpu, String)> = report
        .nvidia_gpus()
        .filter(|g| g.source != GpuSource::Override)
        .filter_map(|g| model(g, manifests).map(|m| (g, m)))
        .collect();
    // A card no CUDA 12 framework computes on (compute capability below CUDA 12's lowest, e.g.
    // a GT 710 driving the display) is never in a data-parallel job beside compute GPUs.
    let (known, display_only): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|(g, _)| !below_cuda12(g, manifests));
    let mut groups: Vec<(String, Vec<&Gpu>)> = Vec::new();
    for (gpu, name) in &known {
        match groups.iter_mut().find(|(n, _)| n == name) {
            Some((_, list)) => list.push(gpu),
            None => groups.push((name.clone(), vec![gpu])),
        }
    }
    if groups.len() < 2 {
        return None;
    }
    let visible = report
        .environment
        .iter()
        .find(|v| v.name == "CUDA_VISIBLE_DEVICES");
    if visible.is_some_and(|v| narrows_to_one_model(v, &known)) {
        return None;
    }
    // Inside a container the PCI bus is the host's: the GPUs this container was given are
    // NVIDIA_VISIBLE_DEVICES's, by index or UUID (NVIDIA/nvidia-container-toolkit#1227: a pod
    // given one GPU of a host with A10s and T4s).
    let given = report
        .environment
        .iter()
        .find(|v| v.name == "NVIDIA_VISIBLE_DEVICES");
    if report.host.container.is_some() && given.is_some_and(|v| given_one_model(v, &known)) {
        return None;
    }
    let names: Vec<String> = groups
        .iter()
        .map(|(name, list)| format!("{}x {name}", list.len()))
        .collect();
    let mut f = FindingBuilder::new(
        &ids::MIXED_GPU_MODELS,
        Severity::Warning,
        format!("Different GPU models in one machine: {}", names.join(", ")),
    )
    .detail(
        "A job that trains on all GPUs at once (data parallel: DDP, FSDP, DeepSpeed, Horovod) \
         waits for the slowest GPU at every step and must fit the smallest GPU's memory, so \
         the faster GPUs idle part of the time. CUDA also numbers GPUs fastest first by \
         default, so \"GPU 0\" in a program need not be GPU 0 in nvidia-smi.",
    );
    for (gpu, name) in &display_only {
        f = f.evidence(format!(
            "GPU {}: {name} left out: compute capability {}, below the {} CUDA 12 needs, so \
             frameworks do not compute on it",
            gpu.index,
            capability(gpu, manifests).unwrap_or_default(),
            cuda12_min_sm(manifests).unwrap_or_default()
        ));
    }
    for (gpu, name) in &known {
        let mut facts = Vec::new();
        if let Some(cc) = &gpu.compute_capability {
            facts.push(format!("compute capability {cc}"));
        }
        if let Some(mib) = gpu.memory_total_mib {
            facts.push(format!("{mib} MiB"));
        }
        if let Some(bus) = &gpu.pci_bus_id {
            facts.push(bus.clone());
        }
        let facts = if facts.is_empty() {
            String::new()
        } else {
            format!(" ({})", facts.join(", "))
        };
        f = f
            .evidence(format!("GPU {}: {name}{facts}", gpu.index))
            .subject(gpu.subject());
    }
    if let Some(v) = visible {
        f = f.evidence(format!(
            "CUDA_VISIBLE_DEVICES={} (indices count fastest first unless CUDA_DEVICE_ORDER=PCI_BUS_ID)",
            v.value
        ));
    }
    let choices: Vec<String> = groups
        .iter()
        .map(|(name, list)| {
            let ids: Vec<String> = list.iter().map(|g| g.index.to_string()).collect();
            format!(
                "only the {name} GPUs: `export CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES={}`",
                ids.join(",")
            )
        })
        .collect();
    Some(
        f.fix(format!(
            "Run each data-parallel job on GPUs of one model, and use the others for separate \
             jobs. To use {}.",
            choices.join("; or ")
        ))
        .build(),
    )
}

/// Whether a container's `NVIDIA_VISIBLE_DEVICES` gives it GPUs of one model at most: one
/// UUID, UUIDs of one model, indices (the host's order) of one model, or none at all (`void`,
/// `none`, empty). `all` gives every GPU.
fn given_one_model(var: &EnvVar, known: &[(&Gpu, String)]) -> bool {
    let value = var.value.trim().to_ascii_lowercase();
    if value == "all" {
        return false;
    }
    if matches!(value.as_str(), "" | "void" | "none") || narrows_to_one_model(var, known) {
        return true;
    }
    let indices: Option<Vec<u32>> = value.split(',').map(|e| e.trim().parse().ok()).collect();
    indices.is_some_and(|indices| {
        let mut models: Vec<&String> = known
            .iter()
            .filter(|(g, _)| indices.contains(&g.index))
            .map(|(_, m)| m)
            .collect();
        models.sort();
        models.dedup();
        models.len() < 2
    })
}

/// Whether `CUDA_VISIBLE_DEVICES` leaves programs a single model: one entry, or UUIDs (or
/// unique UUID prefixes) that all belong to GPUs of one model.
fn narrows_to_one_model(var: &EnvVar, known: &[(&Gpu, String)]) -> bool {
    let entries: Vec<&str> = var
        .value
        .split(',')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    if entries.len() == 1 {
        return true;
    }
    let mut models = Vec::new();
    for entry in &entries {
        let wanted = entry.to_ascii_lowercase();
        if !wanted.starts_with("gpu-") {
            return false;
        }
        let matches: Vec<&String> = known
            .iter()
            .filter(|(g, _)| {
                g.uuid
                    .as_deref()
                    .is_some_and(|u| u.to_ascii_lowercase().starts_with(&wanted))
            })
            .map(|(_, m)| m)
            .collect();
        let [model] = matches.as_slice() else {
            return false;
        };
        if !models.contains(model) {
            models.push(*model);
        }
    }
    models.len() <= 1
}
