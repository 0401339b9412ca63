//! GPUs on the PCI bus, read from `/sys/bus/pci/devices`: this works with no driver at all,
//! which is how a GPU without a working driver is still seen.

use crate::host::Host;
use crate::parse::kernel::{parse_class, parse_hex_id, pcie_gen_from_speed};
use crate::report::PciDevice;

const NVIDIA: u16 = 0x10de;
const AMD: u16 = 0x1002;

#[must_use]
pub(crate) fn probe(host: &Host) -> Vec<PciDevice> {
    let mut out = Vec::new();
    for entry in host.fs.read_dir("/sys/bus/pci/devices") {
        let read = |name: &str| host.fs.read_opt(entry.path.join(name));
        let Some(vendor_id) = read("vendor").and_then(|v| parse_hex_id(&v)) else {
            continue;
        };
        let vendor = match vendor_id {
            NVIDIA => "nvidia",
            AMD => "amd",
            _ => continue,
        };
        let Some(class) = read("class").and_then(|c| parse_class(&c)) else {
            continue;
        };
        // Base class 0x03 is a display controller (VGA 0x0300, 3D 0x0302). NVIDIA's NVSwitch
        // sits under 0x0680 ("other bridge"): it is not a GPU but tells an HGX/DGX board.
        let display = class >> 16 == 0x03;
        let nvswitch = vendor_id == NVIDIA && class >> 8 == 0x0680;
        if !display && !nvswitch {
            continue;
        }
        let device_id = read("device").and_then(|d| parse_hex_id(&d));
        let number = |name: &str| read(name).and_then(|v| v.trim().parse::<u32>().ok());
        let subsystem_id = match (
            read("subsystem_vendor").and_then(|v| parse_hex_id(&v)),
            read("subsystem_device").and_then(|d| parse_hex_id(&d)),
        ) {
            (Some(vendor), Some(device)) if vendor != 0 => {
                Some(format!("0x{device:04x}{vendor:04x}"))
            }
            _ => None,
        };
        out.push(PciDevice {
            address: entry.name.clone(),
            vendor: vendor.to_string(),
            vendor_id: format!("0x{vendor_id:04x}"),
            device_id: device_id.map(|d| format!("0x{d:04x}")).unwrap_or_default(),
            class: format!("0x{class:06x}"),
            // One AMD id is several products told apart by revision (0x744c: 7900 XTX, XT, GRE).
            revision: (vendor_id == AMD)
                .then(|| read("revision").and_then(|r| parse_hex_id(&r)))
                .flatten()
                .filter(|r| *r <= 0xff)
                .map(|r| format!("0x{r:02x}")),
            subsystem_id,
            bound_driver: host
                .fs
                .read_link(entry.path.join("driver"))
                .and_then(|t| t.file_name().and_then(|n| n.to_str()).map(str::to_string)),
            link_gen_current: read("current_link_speed").and_then(|s| pcie_gen_from_speed(&s)),
            link_gen_max: read("max_link_speed").and_then(|s| pcie_gen_from_speed(&s)),
            link_width_current: number("current_link_width"),
            link_width_max: number("max_link_width"),
            nvswitch,
            iommu_domain: read("iommu_group/type")
                .map(|t| t.trim().to_string())
                .filter(|t| {
                    !t.is_empty()
                        && t.len() <= 16
                        && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                }),
        });
    }
    out
}
