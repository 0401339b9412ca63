//! `gpus.toml`: GPU models with their compute capability, memory, power, dense peak throughput
//! and market segment.

use serde::{Deserialize, Serialize};

use super::validate::{Checker, ProblemKind};
use super::{ManifestFile, Meta, verified_default};

/// The contents of `gpus.toml`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GpuTable {
    pub meta: Meta,
    #[serde(rename = "gpu")]
    pub gpus: Vec<Gpu>,
    /// Row words and name look-ups made so far ([`GpuTable::by_name`]).
    #[serde(skip)]
    names: super::memo::NameMemo,
}

/// One GPU model (one form factor: H100 PCIe and H100 SXM5 are two rows).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Gpu {
    pub name: String,
    /// PCI device ids, `0x` plus four lowercase hex digits; several when a model ships in
    /// variants. Written by `scripts/gen-gpu-spec-ids.py` from the id table and the hand-kept
    /// join (`scripts/gpu-ids-data/spec-join.csv`); empty for parts with no PCI id (Jetson).
    pub pci_device_ids: Vec<String>,
    /// `[device id, "vendor:device" subsystem]` pairs, for ids NVIDIA shares between products
    /// told apart only by the subsystem (A2 / A16 are both `0x25b6`). Written by the same
    /// generator; an id listed here is in no row's `pci_device_ids` unless one product keeps
    /// the id's other subsystems (Quadro RTX 6000 and 8000 on `0x1e30`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pci_subsystems: Vec<(String, String)>,
    pub architecture: Option<String>,
    pub compute_capability: String,
    pub segment: Segment,
    /// Whether the GPU can run a newer CUDA on an older driver through the `cuda-compat`
    /// package. GeForce cannot (error 804), data-center GPUs and Jetson can.
    pub forward_compat: bool,
    /// Memory sizes it is sold with, in GB as marketed. Empty when unknown.
    #[serde(default)]
    pub memory_gb: Vec<u32>,
    pub memory_type: Option<String>,
    pub memory_bus_bits: Option<u32>,
    /// Peak memory bandwidth in GB/s.
    pub bandwidth_gbs: Option<f64>,
    /// Board power (TDP / TGP) in watts.
    pub tdp_w: Option<u32>,
    #[serde(default)]
    pub tflops: Tflops,
    #[serde(default = "verified_default")]
    pub verified: bool,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// Where a GPU is sold, which decides forward compatibility and the driver packages to suggest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Segment {
    Consumer,
    Workstation,
    Datacenter,
    Embedded,
}

/// Dense peak throughput in TFLOP/s. Tensor-core figures are dense: NVIDIA's "with sparsity"
/// numbers are twice these and never stored. `None` where the precision does not exist on the
/// GPU or the reference lacks the figure.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Tflops {
    /// Non-tensor FP32.
    pub fp32: Option<f64>,
    pub tf32_tensor: Option<f64>,
    pub fp16_tensor: Option<f64>,
    pub bf16_tensor: Option<f64>,
    pub fp8_tensor: Option<f64>,
    pub fp4_tensor: Option<f64>,
}

impl GpuTable {
    /// The model row of a GPU by its PCI ids: the row naming its subsystem (`0x157e10de`, the
    /// form nvidia-smi and sysfs give, device then vendor) where its id is shared, else the row
    /// with its device id. `None` when the table has no row for this product; never a guess
    /// between two (the generator's join gives each id and subsystem at most one row).
    #[must_use]
    pub fn by_pci(&self, device: &str, subsystem: Option<&str>) -> Option<&Gpu> {
        let wanted = device_id(device)?;
        if let Some((vendor, sub)) = subsystem.and_then(subsystem_id) {
            let key = format!("{vendor:04x}:{sub:04x}");
            let named = self.gpus.iter().find(|gpu| {
                gpu.pci_subsystems
                    .iter()
                    .any(|(own, s)| device_id(own) == Some(wanted) && *s == key)
            });
            if named.is_some() {
                return named;
            }
        }
        self.by_pci_id(device)
    }

    /// The GPU with a PCI device id. Takes `0x2335`, `2335` and the `0x233510DE` form
    /// `nvidia-smi -q` prints (device id followed by NVIDIA's vendor id), in any case.
    #[must_use]
    pub fn by_pci_id(&self, id: &str) -> Option<&Gpu> {
        let wanted = device_id(id)?;
        self.gpus.iter().find(|gpu| {
            gpu.pci_device_ids
                .iter()
                .any(|own| device_id(own) == Some(wanted))
        })
    }

    /// The rows a reported product name (`NVIDIA A100-SXM4-80GB`, `NVIDIA GeForce RTX 4070 Ti`)
    /// fits best, for when no PCI id matches.
    ///
    /// A row fits when every word of its name except the form factor appears in the reported
    /// name; among those, rows naming more of its words win, and then rows whose form factor
    /// (`SXM4`, `PCIe`, `NVL`) is named too. Several rows come back when the name cannot tell
    /// them apart (`NVIDIA H200`: SXM and NVL); they share a compute capability.
    #[must_use]
    pub fn by_name(&self, reported: &str) -> Vec<&Gpu> {
        let all = self
            .names
            .words(|| self.gpus.iter().map(|gpu| name_words(&gpu.name)).collect());
        let found = self.names.rows(reported, || {
            let words = name_words(reported);
            let scored: Vec<_> = all
                .iter()
                .enumerate()
                .filter_map(|(i, own)| {
                    let (forms, core): (Vec<&String>, Vec<&String>) = own
                        .iter()
                        .partition(|word| FORM_FACTORS.contains(&word.as_str()));
                    let fits = !core.is_empty() && core.iter().all(|word| words.contains(*word));
                    let forms_named = forms.iter().filter(|word| words.contains(**word)).count();
                    fits.then_some(((core.len(), forms_named), i))
                })
                .collect();
            let Some(best) = scored.iter().map(|(score, _)| *score).max() else {
                return Vec::new();
            };
            scored
                .into_iter()
                .filter(|(score, _)| *score == best)
                .map(|(_, i)| i)
                .collect()
        });
        found.iter().filter_map(|i| self.gpus.get(*i)).collect()
    }

    pub(super) fn check(&self, c: &mut Checker) {
        c.start(Self::FILE, &self.meta);
        for gpu in &self.gpus {
            let label = format!("gpu \"{}\"", gpu.name);
            c.provenance(&label, &gpu.source, &gpu.checked);
            c.cc(&label, "compute_capability", &gpu.compute_capability);
            for id in &gpu.pci_device_ids {
                if !is_pci_id(id) {
                    c.report(
                        &label,
                        ProblemKind::BadPciId,
                        format!("PCI device id `{id}` is not 0x and four lowercase hex digits"),
                    );
                }
            }
            // GeForce never runs forward compatibility; data-center GPUs and Jetson do.
            // Workstation cards vary (select NGC-Server-Ready SKUs), so their rows decide.
            let expected = match gpu.segment {
                Segment::Consumer => Some(false),
                Segment::Datacenter | Segment::Embedded => Some(true),
                Segment::Workstation => None,
            };
            if expected.is_some_and(|expected| expected != gpu.forward_compat) {
                c.report(
                    &label,
                    ProblemKind::Inconsistent,
                    format!(
                        "forward_compat = {} contradicts segment {:?}: forward compatibility is for data-center GPUs and Jetson, never GeForce",
                        gpu.forward_compat, gpu.segment
                    ),
                );
            }
        }
        c.unique(
            "GPU name",
            self.gpus
                .iter()
                .map(|gpu| (format!("gpu \"{}\"", gpu.name), gpu.name.as_str())),
        );
        for (device, sub) in gpus_subsystems(&self.gpus) {
            let fine = is_pci_id(device)
                && sub.split_once(':').is_some_and(|(v, d)| {
                    [v, d].iter().all(|part| {
                        part.len() == 4
                            && part
                                .bytes()
                                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                    })
                });
            if !fine {
                c.report(
                    "pci_subsystems",
                    ProblemKind::BadPciId,
                    format!(
                        "[{device}, {sub}] is not [0x and four lowercase hex digits, vvvv:dddd]"
                    ),
                );
            }
        }
        c.unique(
            "PCI subsystem",
            self.gpus.iter().flat_map(|gpu| {
                gpu.pci_subsystems
                    .iter()
                    .map(move |(d, s)| (format!("gpu \"{}\"", gpu.name), format!("{d} {s}")))
            }),
        );
        // Compared as numbers so `0x2335` and `0x233510de` count as the same device.
        c.unique(
            "PCI device id",
            self.gpus.iter().flat_map(|gpu| {
                gpu.pci_device_ids.iter().filter_map(move |id| {
                    Some((
                        format!("gpu \"{}\"", gpu.name),
                        format!("{:#06x}", device_id(id)?),
                    ))
                })
            }),
        );
    }
}

impl ManifestFile for GpuTable {
    const FILE: &'static str = "gpus.toml";

    fn meta(&self) -> &Meta {
        &self.meta
    }
}

/// Words that name a form factor rather than a model.
const FORM_FACTORS: [&str; 6] = ["sxm", "sxm2", "sxm4", "sxm5", "pcie", "nvl"];

/// Brand words that product names carry or drop at will (`Tesla T4` vs `NVIDIA T4`).
const BRAND_WORDS: [&str; 3] = ["nvidia", "geforce", "tesla"];

fn name_words(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_ascii_lowercase)
        .filter(|word| !BRAND_WORDS.contains(&word.as_str()))
        .collect()
}

/// The 16-bit device id in `0x2335`, `2335` or `0x233510DE` (device id, then vendor id).
#[must_use]
pub fn device_id(text: &str) -> Option<u16> {
    let hex = text.trim();
    let hex = hex
        .strip_prefix("0x")
        .or_else(|| hex.strip_prefix("0X"))
        .unwrap_or(hex);
    let device = match hex.len() {
        4 => hex,
        8 => hex.get(..4)?,
        _ => return None,
    };
    u16::from_str_radix(device, 16).ok()
}

/// Every `[device, subsystem]` pair of the table.
fn gpus_subsystems(gpus: &[Gpu]) -> impl Iterator<Item = (&str, &str)> {
    gpus.iter()
        .flat_map(|gpu| gpu.pci_subsystems.iter())
        .map(|(d, s)| (d.as_str(), s.as_str()))
}

/// `(vendor, device)` of a subsystem id as nvidia-smi and sysfs give it: `0x157e10de` is
/// subsystem device `0x157e` of vendor `0x10de`.
#[must_use]
pub fn subsystem_id(text: &str) -> Option<(u16, u16)> {
    let hex = text.trim();
    let hex = hex
        .strip_prefix("0x")
        .or_else(|| hex.strip_prefix("0X"))
        .unwrap_or(hex);
    if hex.len() != 8 {
        return None;
    }
    let device = u16::from_str_radix(hex.get(..4)?, 16).ok()?;
    let vendor = u16::from_str_radix(hex.get(4..)?, 16).ok()?;
    Some((vendor, device))
}

/// The form the manifest stores: `0x` and four lowercase hex digits.
fn is_pci_id(text: &str) -> bool {
    text.strip_prefix("0x").is_some_and(|hex| {
        hex.len() == 4
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}
