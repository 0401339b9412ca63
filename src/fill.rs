//! Facts the machine did not give, filled from the manifests and marked as such in
//! `gpus[].filled_from`: an old driver has no `compute_cap` query, and with no driver at all the
//! PCI bus gives only a device id. Each GPU also says how it was identified
//! (`gpus[].identified_by`). Pure: report and tables in, report out.

use crate::report::IdentifiedBy;
use std::collections::HashMap;

use crate::manifest::{GpuIdTable, Identity, Manifests, Match};
use crate::report::{Gpu, Report};

/// Fills each GPU's missing name, compute capability and architecture: from the GPU id table
/// by PCI device id (and subsystem, for ids several products share), else by the id's 128-id
/// block (inferred), else by the reported name when every matching row agrees. Says for each
/// GPU how its compute capability is known, and when it is not, what is.
pub fn fill_gpus(report: &mut Report, manifests: &Manifests) {
    // The bus's devices by address, first one first: one look-up per GPU rather than a walk
    // of the bus (thousands of GPUs on a hostile bus made that quadratic).
    let mut on_bus: HashMap<String, &crate::report::PciDevice> = HashMap::new();
    let mut with_id: HashMap<String, &crate::report::PciDevice> = HashMap::new();
    for d in &report.pci_devices {
        on_bus.entry(address_key(&d.address)).or_insert(d);
        if !d.device_id.is_empty() {
            with_id.entry(address_key(&d.address)).or_insert(d);
        }
    }
    for gpu in &mut report.gpus {
        if gpu.is_amd() {
            fill_amd(gpu, &on_bus, manifests);
            continue;
        }
        // nvidia-smi printed no usable id (`000000DE` on some AWS A10G): the bus has it.
        if gpu.pci_device_id.is_none()
            && let Some(bus) = gpu.pci_bus_id.as_deref()
            && let Some(device) = with_id.get(&address_key(bus))
        {
            gpu.pci_device_id = Some(device.device_id.clone());
            gpu.filled_from.push("pci_device_id: PCI bus".to_string());
            if gpu.pci_subsystem_id.is_none() {
                gpu.pci_subsystem_id.clone_from(&device.subsystem_id);
            }
        }
        fill_one(gpu, manifests);
    }
}

fn fill_one(gpu: &mut Gpu, manifests: &Manifests) {
    let had_cc = gpu.compute_capability.is_some();
    let overridden = gpu
        .filled_from
        .iter()
        .any(|f| f == "compute_capability: override");
    let device = gpu
        .pci_device_id
        .as_deref()
        .and_then(crate::manifest::device_id)
        .filter(|d| *d != 0);
    let subsystem = gpu
        .pci_subsystem_id
        .as_deref()
        .and_then(crate::manifest::subsystem_id);
    let identity = device.and_then(|d| manifests.gpu_ids.identify(d, subsystem));
    // With no id, the name: NVIDIA's names in the id table, then the GPU model table.
    let by_name = match (&identity, gpu.name.as_deref()) {
        (None, Some(name)) if device.is_none() || !had_cc => manifests.gpu_ids.by_name(name),
        _ => None,
    };
    let identity = identity.or(by_name);

    if let Some(id) = &identity {
        let how = match (id.how, by_name.is_some()) {
            (_, true) => "name",
            (Match::Listed, false) => "PCI device id",
            (Match::Block, false) => "PCI id block",
        };
        let mut fill = |field: &str, slot: &mut Option<String>, value: Option<&str>| {
            if slot.is_none()
                && let Some(value) = value
            {
                *slot = Some(value.to_string());
                gpu_note(&mut gpu.filled_from, field, how);
            }
        };
        let mut cc = gpu.compute_capability.take();
        fill("compute_capability", &mut cc, id.compute_capability);
        let mut name = gpu.name.take();
        fill("name", &mut name, id.name);
        let mut arch = gpu.architecture.take();
        fill("architecture", &mut arch, Some(id.architecture));
        gpu.compute_capability = cc;
        gpu.name = name;
        gpu.architecture = arch;
        gpu.chip = Some(id.chip.to_string());
        gpu.first_driver = id.first_driver.map(str::to_string);
    } else {
        fill_from_models(gpu, manifests);
    }

    gpu.identified_by = if overridden {
        Some(IdentifiedBy::Override)
    } else if had_cc {
        Some(IdentifiedBy::Driver)
    } else if gpu.compute_capability.is_none() {
        None
    } else if identity.is_some_and(|id| id.how == Match::Block) {
        Some(IdentifiedBy::IdBlock)
    } else {
        Some(IdentifiedBy::Table)
    };
    if gpu.compute_capability.is_none() {
        gpu.identity_note = Some(unknown_note(identity.as_ref(), device));
    }
}

/// The older path: the GPU model table (`gpus.toml`), by PCI id, else by name.
fn fill_from_models(gpu: &mut Gpu, manifests: &Manifests) {
    let by_id = gpu
        .pci_device_id
        .as_deref()
        .and_then(|id| manifests.gpus.by_pci_id(id));
    let row = by_id.or_else(|| {
        let rows = manifests.gpus.by_name(gpu.name.as_deref()?);
        let first = *rows.first()?;
        rows.iter()
            .all(|r| r.compute_capability == first.compute_capability)
            .then_some(first)
    });
    let Some(row) = row else { return };
    let how = if by_id.is_some() {
        "PCI device id"
    } else {
        "name"
    };
    if gpu.compute_capability.is_none() {
        gpu.compute_capability = Some(row.compute_capability.clone());
        gpu.filled_from
            .push(format!("compute_capability: manifest gpus.toml by {how}"));
    }
    if gpu.name.is_none() {
        gpu.name = Some(row.name.clone());
        gpu.filled_from
            .push(format!("name: manifest gpus.toml by {how}"));
    }
    if gpu.architecture.is_none()
        && let Some(arch) = &row.architecture
    {
        gpu.architecture = Some(arch.clone());
        gpu.filled_from
            .push(format!("architecture: manifest gpus.toml by {how}"));
    }
}

/// An AMD GPU's name, gfx target, family and APU flag from the AMD GPU table by PCI id and
/// revision. The KFD node's target, when there is one, is what the runtime uses and stays; the
/// table's is filled only without it.
fn fill_amd(
    gpu: &mut Gpu,
    on_bus: &HashMap<String, &crate::report::PciDevice>,
    manifests: &Manifests,
) {
    let device = gpu
        .pci_device_id
        .as_deref()
        .and_then(crate::manifest::device_id)
        .filter(|d| *d != 0);
    let revision = gpu
        .pci_bus_id
        .as_deref()
        .and_then(|bus| on_bus.get(&address_key(bus)))
        .and_then(|d| d.revision.as_deref())
        .and_then(|r| u8::from_str_radix(r.trim_start_matches("0x"), 16).ok());
    let table = manifests.amd_gpu_ids.table();
    let identity = device.and_then(|d| table.identify(d, revision));
    let from_kfd = gpu.gfx_target.is_some();
    if let Some(id) = &identity {
        if gpu.name.is_none()
            && let Some(name) = id.name
        {
            gpu.name = Some(name.to_string());
            let how = if id.by_revision {
                "PCI device id and revision"
            } else {
                "PCI device id"
            };
            gpu.filled_from
                .push(format!("name: manifest amd-gpu-ids.toml by {how}"));
        }
        if gpu.gfx_target.is_none()
            && let Some(t) = id.target
        {
            gpu.gfx_target = Some(t.gfx.clone());
            gpu.filled_from
                .push("gfx_target: manifest amd-gpu-ids.toml by PCI device id".to_string());
        }
        if let Some(apu) = id.apu
            && gpu.integrated != Some(apu)
        {
            gpu.integrated = Some(apu);
            gpu.filled_from
                .push("integrated: manifest amd-gpu-ids.toml by PCI device id".to_string());
        }
    }
    // The family follows the target the GPU has, whichever source named it.
    if gpu.architecture.is_none()
        && let Some(t) = gpu.gfx_target.as_deref().and_then(|g| table.target(g))
    {
        gpu.architecture = Some(t.family.clone());
        if gpu.integrated.is_none() {
            gpu.integrated = Some(t.apu);
        }
    }
    gpu.identified_by = if from_kfd {
        Some(IdentifiedBy::Kfd)
    } else if gpu.gfx_target.is_some() {
        Some(IdentifiedBy::Table)
    } else {
        None
    };
    if gpu.gfx_target.is_none() {
        gpu.identity_note = Some(match (device, identity.is_some()) {
            (Some(d), true) => format!(
                "AMD GPU {d:#06x}: its gfx target is not in gpu-doctor's AMD table and no KFD node names it (amdgpu not loaded, or no /sys/class/kfd); with the driver loaded `rocminfo | grep gfx` shows it"
            ),
            (Some(d), false) => format!(
                "AMD GPU {d:#06x} is not in gpu-doctor's AMD table and no KFD node names its gfx target; with the driver loaded `rocminfo | grep gfx` shows it, or run `gpu-doctor manifest update`"
            ),
            (None, _) => {
                "AMD GPU without a PCI id or KFD node: its gfx target is unknown".to_string()
            }
        });
    }
}

/// How a GPU was identified, in words for the text report and the TUI: "the driver", "the GPU
/// id table (chip AD102)", "its PCI id block, inferred (chip GB202)", an override,
/// or, when nothing placed it, what is known.
#[must_use]
pub fn identified_by_words(gpu: &Gpu) -> String {
    let chip = gpu
        .chip
        .as_deref()
        .map_or_else(String::new, |c| format!(" (chip {c})"));
    match &gpu.identified_by {
        Some(IdentifiedBy::Driver) => format!("the driver{chip}"),
        Some(IdentifiedBy::Table) => format!("the GPU id table{chip}"),
        Some(IdentifiedBy::IdBlock) => format!("its PCI id block, inferred{chip}"),
        Some(IdentifiedBy::Override) => "an override (GPU_DOCTOR_GPU_CC)".to_string(),
        Some(IdentifiedBy::Kfd) => format!(
            "the KFD topology ({})",
            gpu.gfx_target.as_deref().unwrap_or("gfx unknown")
        ),
        Some(IdentifiedBy::Other(other)) => other.clone(),
        None => gpu
            .identity_note
            .clone()
            .unwrap_or_else(|| "not identified".to_string()),
    }
}

fn gpu_note(filled_from: &mut Vec<String>, field: &str, how: &str) {
    filled_from.push(format!("{field}: manifest gpu-ids.toml by {how}"));
}

/// What is known of a GPU whose compute capability is not, and how to say it.
fn unknown_note(identity: Option<&Identity<'_>>, device: Option<u16>) -> String {
    const HOW: &str = "state it with GPU_DOCTOR_GPU_CC=X.Y (see developer.nvidia.com/cuda-gpus)";
    match (identity, device) {
        (Some(id), _) => format!(
            "chip {} ({}) has no known compute capability yet; {HOW}",
            id.chip, id.architecture
        ),
        (None, Some(device)) => match GpuIdTable::lower_bound(device) {
            Some(bound) => format!(
                "PCI id {device:#06x} is newer than gpu-doctor's GPU table and in no known block of ids: {bound}; {HOW}, or run `gpu-doctor manifest update`"
            ),
            None => format!("PCI id {device:#06x} is not a GPU gpu-doctor knows; {HOW}"),
        },
        (None, None) => format!("no PCI id or known name; {HOW}"),
    }
}

/// A bus address as both spellings agree on: sysfs's `0000:01:00.0` and NVML's
/// `00000000:01:00.0` give the same key.
fn address_key(address: &str) -> String {
    let a = address.to_ascii_lowercase();
    match a.split_once(':') {
        Some((domain, rest)) => format!("{}:{rest}", domain.trim_start_matches('0')),
        None => a,
    }
}
