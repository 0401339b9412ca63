//! Facts the machine did not give, filled from the manifests and marked as such in
//! `gpus[].filled_from`: an old driver has no `compute_cap` query, and with no driver at all the
//! PCI bus gives only a device id. Pure: report and tables in, report out.

use crate::manifest::Manifests;
use crate::report::Report;

/// Fills each GPU's missing name, compute capability and architecture from the GPU table,
/// by PCI device id, else by the reported name when every matching row agrees.
pub fn fill_gpus(report: &mut Report, manifests: &Manifests) {
    for gpu in &mut report.gpus {
        if gpu.compute_capability.is_some() && gpu.name.is_some() && gpu.architecture.is_some() {
            continue;
        }
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
        let Some(row) = row else { continue };
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
}
