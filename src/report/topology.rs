//! `topology`: how the machine's GPUs reach each other and its network cards, as
//! `nvidia-smi topo -m` prints it: the GPU-to-GPU and GPU-to-NIC matrix, each GPU's CPU and NUMA
//! affinity, and each NIC's NUMA node.
//!
//! Asked only where it can matter (two GPUs or more on the PCI bus, or a GPU and an InfiniBand
//! card); the key is absent from other reports. Added to schema 1 without changing a key.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The matrix, in the order nvidia-smi prints it (GPUs by NVML index, NICs by its `NIC#`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Topology {
    /// What printed it: "nvidia-smi topo -m".
    pub source: String,
    pub gpus: Vec<TopoGpu>,
    #[serde(default)]
    pub nics: Vec<TopoNic>,
    /// What could not be read, in words: a row whose cells ran together when it was pasted,
    /// a cell that is no link nvidia-smi prints. The rest of the matrix stands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
}

/// One GPU's row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TopoGpu {
    /// From the row's name, `GPU3`: NVML's index.
    pub index: u32,
    /// Its link to each GPU of [`Topology::gpus`], in that order (`X` to itself).
    #[cfg_attr(test, schemars(with = "Vec<String>"))]
    pub gpus: Vec<Link>,
    /// Its link to each NIC of [`Topology::nics`], in that order.
    #[serde(default)]
    #[cfg_attr(test, schemars(with = "Vec<String>"))]
    pub nics: Vec<Link>,
    /// "0-47,96-143": the CPUs nearest it, as printed.
    pub cpu_affinity: Option<String>,
    /// Its NUMA node when the "NUMA Affinity" column names one ("0"); `null` for "N/A" or a
    /// range.
    pub numa_node: Option<u32>,
    /// The "NUMA Affinity" column as printed, where it is not one node ("0-1", "N/A").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa_affinity: Option<String>,
}

/// One network card's column.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TopoNic {
    /// The column's name: "NIC0" (older drivers print the device, "mlx5_0").
    pub label: String,
    /// The RDMA device from the "NIC Legend" ("mlx5_0"), or the label itself when it is one.
    pub device: Option<String>,
    /// `/sys/class/infiniband/DEVICE/device/numa_node`; `null` where unread or -1 (none).
    pub numa_node: Option<u32>,
}

/// How two devices are connected, nearest first (nvidia-smi's legend).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// `X`: the device itself.
    Itself,
    /// `NV#`: a bonded set of # NVLinks.
    NvLink(u32),
    /// `PIX`: at most a single PCIe bridge.
    Pix,
    /// `PXB`: several PCIe bridges, no host bridge.
    Pxb,
    /// `PHB`: through a PCIe host bridge (typically the CPU).
    Phb,
    /// `NODE`: between host bridges within a NUMA node.
    Node,
    /// `SYS` (`SOC` in old drivers): across the SMP interconnect between NUMA nodes.
    Sys,
    /// Anything else, as printed.
    Other(String),
}

impl Link {
    /// nvidia-smi's word for a cell, or `None` for an empty one.
    #[must_use]
    pub fn parse(cell: &str) -> Option<Link> {
        let cell = cell.trim();
        Some(match cell {
            "" => return None,
            "X" => Link::Itself,
            "PIX" => Link::Pix,
            "PXB" => Link::Pxb,
            "PHB" => Link::Phb,
            "NODE" => Link::Node,
            "SYS" | "SOC" => Link::Sys,
            other => match other.strip_prefix("NV").and_then(|n| n.parse().ok()) {
                Some(count) => Link::NvLink(count),
                None => Link::Other(other.to_string()),
            },
        })
    }

    /// How far: 0 itself, 1 NVLink, then PIX, PXB, PHB, NODE, SYS; unknown last.
    #[must_use]
    pub fn distance(&self) -> u8 {
        match self {
            Link::Itself => 0,
            Link::NvLink(_) => 1,
            Link::Pix => 2,
            Link::Pxb => 3,
            Link::Phb => 4,
            Link::Node => 5,
            Link::Sys => 6,
            Link::Other(_) => 7,
        }
    }

    /// Whether traffic between the two stays below one PCIe switch or on NVLink (PIX, PXB,
    /// NV#): what NCCL calls a NIC "close" to a GPU for GPUDirect RDMA.
    #[must_use]
    pub fn is_close(&self) -> bool {
        matches!(self, Link::NvLink(_) | Link::Pix | Link::Pxb)
    }
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Link::Itself => f.write_str("X"),
            Link::NvLink(n) => write!(f, "NV{n}"),
            Link::Pix => f.write_str("PIX"),
            Link::Pxb => f.write_str("PXB"),
            Link::Phb => f.write_str("PHB"),
            Link::Node => f.write_str("NODE"),
            Link::Sys => f.write_str("SYS"),
            Link::Other(text) => f.write_str(text),
        }
    }
}

impl Serialize for Link {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Link {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Link, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(Link::parse(&text).unwrap_or(Link::Other(text)))
    }
}

impl Topology {
    /// Every pair of distinct GPUs once, with its link: `(index a, index b, link)`.
    pub fn gpu_pairs(&self) -> impl Iterator<Item = (u32, u32, &Link)> {
        self.gpus.iter().enumerate().flat_map(move |(i, row)| {
            self.gpus
                .iter()
                .enumerate()
                .skip(i + 1)
                .filter_map(move |(j, other)| Some((row.index, other.index, row.gpus.get(j)?)))
        })
    }

    /// The NICs nearest a GPU row (by [`Link::distance`]) with that link; empty without NICs.
    #[must_use]
    pub fn nearest_nics<'a>(&'a self, gpu: &'a TopoGpu) -> (Vec<&'a TopoNic>, Option<&'a Link>) {
        let Some(best) = gpu.nics.iter().min_by_key(|link| link.distance()) else {
            return (Vec::new(), None);
        };
        let nics = gpu
            .nics
            .iter()
            .zip(&self.nics)
            .filter(|(link, _)| link.distance() == best.distance())
            .map(|(_, nic)| nic)
            .collect();
        (nics, Some(best))
    }

    /// One line for people: "8 GPUs, NV18 between every pair; 8 NICs, each GPU has one at PIX".
    #[must_use]
    pub fn summary(&self) -> String {
        let gpus = self.gpus.len();
        let links: std::collections::BTreeSet<String> = self
            .gpu_pairs()
            .map(|(_, _, link)| link.to_string())
            .collect();
        let between = match links.len() {
            0 => String::new(),
            1 => format!(
                ", {} between every pair",
                links.iter().next().map_or("", String::as_str)
            ),
            _ => format!(
                ", {} between pairs",
                links.iter().cloned().collect::<Vec<_>>().join("/")
            ),
        };
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        let mut text = format!("{}{between}", plural(gpus, "GPU"));
        if !self.nics.is_empty() {
            let nearest: std::collections::BTreeSet<String> = self
                .gpus
                .iter()
                .filter_map(|gpu| self.nearest_nics(gpu).1.map(ToString::to_string))
                .collect();
            let at = nearest.into_iter().collect::<Vec<_>>().join("/");
            text.push_str(&format!(
                "; {}, each GPU's nearest at {at}",
                plural(self.nics.len(), "NIC")
            ));
        }
        text
    }
}
