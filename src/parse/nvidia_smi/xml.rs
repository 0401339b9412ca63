//! `nvidia-smi -q -x`: the full XML log, one `<gpu>` element per device.
//!
//! Element names moved between driver generations (`clocks_throttle_reasons` became
//! `clocks_event_reasons`, `power_readings` became `gpu_power_readings`, ECC counters went from
//! `single_bit`/`double_bit` buckets to `sram_*`/`dram_*` counters), so every field looks in each
//! place a known driver puts it, and a field a driver does not print is `None`.

use roxmltree::{Document, Node, ParsingOptions};

use crate::parse::text::{is_dotted_numeric, leading, leading_f64, present, present_owned, yes_no};

/// The root element of the log.
const ROOT: &str = "nvidia_smi_log";

/// A cap on XML nodes: a real log has about a thousand per GPU, so this only stops runaway input
/// from eating memory.
const NODES_LIMIT: u32 = 4_000_000;

/// What `nvidia-smi -q -x` reports for the whole machine.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SmiLog {
    pub driver_version: Option<String>,
    /// The newest CUDA version the driver supports (not an installed toolkit).
    pub cuda_version: Option<String>,
    /// `attached_gpus`: can be more than `gpus.len()` when some GPUs failed to report.
    pub attached_gpus: Option<u32>,
    pub gpus: Vec<SmiGpu>,
}

/// One `<gpu>` element.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SmiGpu {
    /// The `id` attribute, e.g. `00000000:00:06.0` (falls back to `<pci><pci_bus_id>`).
    pub pci_bus_id: Option<String>,
    pub name: Option<String>,
    pub uuid: Option<String>,
    pub serial: Option<String>,
    pub vbios_version: Option<String>,
    /// `product_architecture`, e.g. `Hopper` (drivers before 510 do not print it).
    pub architecture: Option<String>,
    pub brand: Option<String>,
    /// PCI device id, lowercase hex: `0x2335` (the upper half of `<pci_device_id>233510DE`).
    pub pci_device_id: Option<String>,
    /// PCI vendor id, lowercase hex: `0x10de` (the lower half of `<pci_device_id>`).
    pub pci_vendor_id: Option<String>,
    /// `<pci_sub_system_id>` as printed, e.g. `18BF10DE`.
    pub pci_subsystem_id: Option<String>,
    pub minor_number: Option<u32>,
    pub memory_total_mib: Option<u64>,
    pub memory_used_mib: Option<u64>,
    pub temperature_c: Option<u32>,
    pub temperature_memory_c: Option<u32>,
    /// `gpu_temp_slow_threshold`. Hopper and later print thresholds relative to T.Limit instead
    /// (`gpu_temp_slow_tlimit_threshold`), which are not temperatures, so this is `None` there.
    pub temperature_slowdown_c: Option<u32>,
    /// `gpu_temp_max_threshold` (shutdown); `None` where only T.Limit offsets are printed.
    pub temperature_shutdown_c: Option<u32>,
    /// Board power draw: `power_draw` (older drivers) or `average_power_draw` (550 and later).
    pub power_draw_w: Option<f64>,
    /// `instant_power_draw` (550 and later).
    pub power_draw_instant_w: Option<f64>,
    /// The enforced limit: `current_power_limit` (newer) or `enforced_power_limit` (older).
    pub power_limit_w: Option<f64>,
    pub clocks_sm_mhz: Option<u32>,
    pub clocks_mem_mhz: Option<u32>,
    pub max_clocks_sm_mhz: Option<u32>,
    pub max_clocks_mem_mhz: Option<u32>,
    pub utilization_gpu_pct: Option<u32>,
    pub pcie_gen_current: Option<u32>,
    pub pcie_gen_max: Option<u32>,
    pub pcie_width_current: Option<u32>,
    pub pcie_width_max: Option<u32>,
    pub persistence_mode: Option<bool>,
    /// Current MIG mode as printed (`Enabled`/`Disabled`); `None` on GPUs without MIG.
    pub mig_mode: Option<String>,
    /// The MIG devices (`<mig_devices>`: one `<mig_device>` per GPU instance's compute
    /// instance, the text `None` when there is none); `None` when the element is absent.
    pub mig_devices: Option<u32>,
    /// Current ECC mode; `None` on GPUs without ECC.
    pub ecc_mode: Option<bool>,
    pub ecc_errors: SmiEcc,
    /// Names of the active clock event (throttle) reasons without their prefix, e.g. `gpu_idle`,
    /// `sw_power_cap`, `hw_slowdown`, `sw_thermal_slowdown`.
    pub throttle_reasons_active: Vec<String>,
    /// `Default`, `Exclusive_Process`, `Prohibited`.
    pub compute_mode: Option<String>,
    /// `P0`..`P12`.
    pub performance_state: Option<String>,
    /// `None`, `Pass-Through`, `VGPU`, `Host VGPU`: tells whether this is a VM's view of the GPU.
    pub virtualization_mode: Option<String>,
    pub gsp_firmware_version: Option<String>,
    /// The GPU's NVLink fabric (`<fabric>`: Hopper and later); `None` when every field is N/A
    /// (a GPU outside an NVSwitch fabric).
    pub fabric: Option<SmiFabric>,
}

/// `<fabric>`: `state` ("Not Supported", "Not Started", "In Progress", "Completed"), `status`
/// ("Success" or the error), `cliqueId`, `clusterUuid`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SmiFabric {
    pub state: Option<String>,
    pub status: Option<String>,
    pub clique_id: Option<String>,
    pub cluster_uuid: Option<String>,
}

/// ECC error counters, retired pages (before Ampere) and remapped rows (Ampere and later).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SmiEcc {
    /// Corrected errors since the driver loaded, summed over all memories.
    pub volatile_corrected: Option<u64>,
    pub volatile_uncorrected: Option<u64>,
    /// Corrected errors over the GPU's lifetime, summed over all memories.
    pub aggregate_corrected: Option<u64>,
    pub aggregate_uncorrected: Option<u64>,
    /// Pages retired after multiple single-bit errors.
    pub retired_pages_sbe: Option<u64>,
    /// Pages retired after a double-bit error.
    pub retired_pages_dbe: Option<u64>,
    /// A page retirement waits for the next driver reload.
    pub retired_pending: Option<bool>,
    pub remapped_correctable: Option<u64>,
    pub remapped_uncorrectable: Option<u64>,
    /// A row remapping waits for a GPU reset.
    pub remapped_pending: Option<bool>,
    /// A row remapping failed: the GPU needs service.
    pub remapped_failure: Option<bool>,
}

/// Why an `nvidia-smi -q -x` output could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmiXmlError {
    #[error("nvidia-smi -q -x printed nothing")]
    Empty,
    #[error("nvidia-smi -q -x did not print valid XML: {0}")]
    NotXml(String),
    #[error("nvidia-smi -q -x printed XML whose root is <{0}>, not <nvidia_smi_log>")]
    WrongRoot(String),
}

/// Parses the output of `nvidia-smi -q -x`.
///
/// Lines before the XML (a warning, a shell prompt) and after `</nvidia_smi_log>` are ignored.
///
/// # Errors
///
/// [`SmiXmlError`] when the text is empty, is not XML (for example an error message printed
/// instead of the log), or is XML of another kind.
pub fn parse_xml(text: &str) -> Result<SmiLog, SmiXmlError> {
    let xml = xml_part(text);
    if xml.trim().is_empty() {
        return Err(SmiXmlError::Empty);
    }
    let options = ParsingOptions {
        allow_dtd: true,
        nodes_limit: NODES_LIMIT,
        ..ParsingOptions::default()
    };
    let doc = Document::parse_with_options(xml, options)
        .map_err(|e| SmiXmlError::NotXml(e.to_string()))?;
    let root = doc.root_element();
    if root.tag_name().name() != ROOT {
        return Err(SmiXmlError::WrongRoot(root.tag_name().name().to_string()));
    }
    Ok(SmiLog {
        driver_version: version_at(root, &["driver_version"]),
        cuda_version: version_at(root, &["cuda_version"]),
        attached_gpus: number_at(root, &["attached_gpus"]),
        gpus: elements(root)
            .filter(|n| n.has_tag_name("gpu"))
            .map(gpu)
            .collect(),
    })
}

/// The slice from the XML declaration (or the root's start tag) to the root's end tag.
fn xml_part(text: &str) -> &str {
    const END: &str = "</nvidia_smi_log>";
    let start = ["<?xml", "<!DOCTYPE", "<nvidia_smi_log"]
        .iter()
        .filter_map(|marker| text.find(marker))
        .min()
        .unwrap_or(0);
    let from_start = text.get(start..).unwrap_or(text);
    match from_start.rfind(END) {
        Some(pos) => from_start.get(..pos + END.len()).unwrap_or(from_start),
        None => from_start,
    }
}

fn gpu(node: Node<'_, '_>) -> SmiGpu {
    // `000000DE` (seen on AWS A10G) holds NVIDIA's vendor id and no device: unknown, not 0x0000.
    let pci_id = text_at(node, &["pci", "pci_device_id"])
        .and_then(|s| hex_u32(&s))
        .filter(|id| id >> 16 != 0 && id & 0xffff != 0);
    let power = first_child(node, &["gpu_power_readings", "power_readings"]);
    SmiGpu {
        pci_bus_id: node
            .attribute("id")
            .and_then(present_owned)
            .or_else(|| text_at(node, &["pci", "pci_bus_id"])),
        name: raw_at(node, &["product_name"]).and_then(product_name),
        uuid: text_at(node, &["uuid"]),
        serial: text_at(node, &["serial"]),
        vbios_version: text_at(node, &["vbios_version"]),
        architecture: text_at(node, &["product_architecture"]),
        brand: text_at(node, &["product_brand"]),
        pci_device_id: pci_id.map(|id| format!("{:#06x}", id >> 16)),
        pci_vendor_id: pci_id.map(|id| format!("{:#06x}", id & 0xffff)),
        // `<device><vendor>`: a board maker may number its board 0x0000 (Colorful's RTX 2080 Ti
        // says `00007377`), so only a vendor of 0 (or AWS's `000000DE`) means no id.
        pci_subsystem_id: text_at(node, &["pci", "pci_sub_system_id"])
            .and_then(|s| hex_u32(&s))
            .filter(|id| id & 0xffff != 0 && *id != 0x0000_00de)
            .map(|id| format!("{id:#010x}")),
        minor_number: number_at(node, &["minor_number"]),
        memory_total_mib: number_at(node, &["fb_memory_usage", "total"]),
        memory_used_mib: number_at(node, &["fb_memory_usage", "used"]),
        temperature_c: number_at(node, &["temperature", "gpu_temp"]),
        temperature_memory_c: number_at(node, &["temperature", "memory_temp"]),
        temperature_slowdown_c: number_at(node, &["temperature", "gpu_temp_slow_threshold"]),
        temperature_shutdown_c: number_at(node, &["temperature", "gpu_temp_max_threshold"]),
        power_draw_w: power.and_then(|p| {
            float_at(p, &["power_draw"]).or_else(|| float_at(p, &["average_power_draw"]))
        }),
        power_draw_instant_w: power.and_then(|p| float_at(p, &["instant_power_draw"])),
        power_limit_w: power.and_then(|p| {
            float_at(p, &["current_power_limit"])
                .or_else(|| float_at(p, &["enforced_power_limit"]))
                .or_else(|| float_at(p, &["power_limit"]))
        }),
        clocks_sm_mhz: number_at(node, &["clocks", "sm_clock"]),
        clocks_mem_mhz: number_at(node, &["clocks", "mem_clock"]),
        max_clocks_sm_mhz: number_at(node, &["max_clocks", "sm_clock"]),
        max_clocks_mem_mhz: number_at(node, &["max_clocks", "mem_clock"]),
        utilization_gpu_pct: number_at(node, &["utilization", "gpu_util"]),
        pcie_gen_current: number_at(
            node,
            &["pci", "pci_gpu_link_info", "pcie_gen", "current_link_gen"],
        ),
        pcie_gen_max: number_at(
            node,
            &["pci", "pci_gpu_link_info", "pcie_gen", "max_link_gen"],
        ),
        pcie_width_current: link_width(node, "current_link_width"),
        pcie_width_max: link_width(node, "max_link_width"),
        persistence_mode: raw_at(node, &["persistence_mode"]).and_then(yes_no),
        mig_mode: text_at(node, &["mig_mode", "current_mig"]),
        mig_devices: child(node, "mig_devices")
            .map(|m| elements(m).filter(|d| d.has_tag_name("mig_device")).count())
            .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
        ecc_mode: raw_at(node, &["ecc_mode", "current_ecc"]).and_then(yes_no),
        ecc_errors: ecc(node),
        throttle_reasons_active: throttle_reasons(node),
        compute_mode: text_at(node, &["compute_mode"]),
        performance_state: text_at(node, &["performance_state"]),
        virtualization_mode: text_at(node, &["gpu_virtualization_mode", "virtualization_mode"]),
        gsp_firmware_version: text_at(node, &["gsp_firmware_version"]),
        fabric: fabric(node),
    }
}

fn fabric(node: Node<'_, '_>) -> Option<SmiFabric> {
    let f = SmiFabric {
        state: text_at(node, &["fabric", "state"]),
        status: text_at(node, &["fabric", "status"]),
        clique_id: text_at(node, &["fabric", "cliqueId"]),
        cluster_uuid: text_at(node, &["fabric", "clusterUuid"]),
    };
    (f != SmiFabric::default()).then_some(f)
}

/// A product name, or `None` for a no-value word or the placeholder `Graphics Device` that a
/// driver older than the card prints (a GTX 1660 Ti on 418.43): the PCI id names that card.
pub(super) fn product_name(raw: &str) -> Option<String> {
    present(raw)
        .filter(|name| !name.eq_ignore_ascii_case("Graphics Device"))
        .map(str::to_string)
}

/// `16x` → 16.
fn link_width(gpu: Node<'_, '_>, which: &str) -> Option<u32> {
    let raw = raw_at(gpu, &["pci", "pci_gpu_link_info", "link_widths", which])?;
    let value = present(raw)?;
    value.trim_end_matches(['x', 'X']).trim().parse().ok()
}

fn ecc(gpu: Node<'_, '_>) -> SmiEcc {
    let errors = child(gpu, "ecc_errors");
    let (volatile_corrected, volatile_uncorrected) =
        ecc_counts(errors.and_then(|e| child(e, "volatile")));
    let (aggregate_corrected, aggregate_uncorrected) =
        ecc_counts(errors.and_then(|e| child(e, "aggregate")));
    let retired = child(gpu, "retired_pages");
    let remapped = child(gpu, "remapped_rows");
    SmiEcc {
        volatile_corrected,
        volatile_uncorrected,
        aggregate_corrected,
        aggregate_uncorrected,
        retired_pages_sbe: retired
            .and_then(|r| number_at(r, &["multiple_single_bit_retirement", "retired_count"])),
        retired_pages_dbe: retired
            .and_then(|r| number_at(r, &["double_bit_retirement", "retired_count"])),
        retired_pending: retired.and_then(|r| {
            raw_at(r, &["pending_retirement"])
                .and_then(yes_no)
                .or_else(|| raw_at(r, &["pending_blacklist"]).and_then(yes_no))
        }),
        remapped_correctable: remapped.and_then(|r| number_at(r, &["remapped_row_corr"])),
        remapped_uncorrectable: remapped.and_then(|r| number_at(r, &["remapped_row_unc"])),
        remapped_pending: remapped
            .and_then(|r| raw_at(r, &["remapped_row_pending"]))
            .and_then(yes_no),
        remapped_failure: remapped
            .and_then(|r| raw_at(r, &["remapped_row_failure"]))
            .and_then(yes_no),
    }
}

/// (corrected, uncorrected) totals of one `<volatile>` or `<aggregate>` section.
///
/// Older drivers group counters into `<single_bit>` (corrected) and `<double_bit>`
/// (uncorrected) buckets with a `<total>`; newer ones print flat `sram_correctable`,
/// `sram_uncorrectable_parity`, `dram_uncorrectable`, ... counters. A total is `None` only when
/// no counter of its kind had a number.
fn ecc_counts(section: Option<Node<'_, '_>>) -> (Option<u64>, Option<u64>) {
    let mut corrected = None;
    let mut uncorrected = None;
    for counter in section.into_iter().flat_map(elements) {
        let name = counter.tag_name().name();
        if name == "single_bit" {
            add(&mut corrected, bucket_total(counter));
        } else if name == "double_bit" {
            add(&mut uncorrected, bucket_total(counter));
        } else if name.contains("uncorrectable") {
            add(&mut uncorrected, counter.text().and_then(leading));
        } else if name.contains("correctable") {
            add(&mut corrected, counter.text().and_then(leading));
        }
    }
    (corrected, uncorrected)
}

/// A `<single_bit>`/`<double_bit>` bucket: its `<total>`, else the sum of its counters.
fn bucket_total(bucket: Node<'_, '_>) -> Option<u64> {
    if let Some(total) = number_at(bucket, &["total"]) {
        return Some(total);
    }
    let mut sum = None;
    for counter in elements(bucket) {
        add(&mut sum, counter.text().and_then(leading));
    }
    sum
}

fn add(sum: &mut Option<u64>, value: Option<u64>) {
    if let Some(v) = value {
        *sum = Some(sum.unwrap_or(0).saturating_add(v));
    }
}

/// Element names under `clocks_event_reasons` (drivers 535+) or `clocks_throttle_reasons`
/// (older) whose value is `Active`, without the `clocks_*_reason_` prefix.
fn throttle_reasons(gpu: Node<'_, '_>) -> Vec<String> {
    let Some(reasons) = first_child(gpu, &["clocks_event_reasons", "clocks_throttle_reasons"])
    else {
        return Vec::new();
    };
    elements(reasons)
        .filter(|r| {
            r.text()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("active"))
        })
        .map(|r| {
            let name = r.tag_name().name();
            name.strip_prefix("clocks_event_reason_")
                .or_else(|| name.strip_prefix("clocks_throttle_reason_"))
                .unwrap_or(name)
                .to_string()
        })
        .collect()
}

/// `233510DE` or `0x233510DE` → 0x233510de.
fn hex_u32(s: &str) -> Option<u32> {
    let digits = s
        .trim()
        .strip_prefix("0x")
        .or_else(|| s.trim().strip_prefix("0X"))
        .unwrap_or(s.trim());
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

fn elements<'a, 'i>(node: Node<'a, 'i>) -> impl Iterator<Item = Node<'a, 'i>> {
    node.children().filter(Node::is_element)
}

fn child<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    elements(node).find(|n| n.has_tag_name(name))
}

/// The first child that has one of `names`, tried in order.
fn first_child<'a, 'i>(node: Node<'a, 'i>, names: &[&str]) -> Option<Node<'a, 'i>> {
    names.iter().find_map(|name| child(node, name))
}

/// The raw text of the element at `path` below `node`.
fn raw_at<'a>(node: Node<'a, '_>, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(node, |n, name| child(n, name))?.text()
}

/// The trimmed text at `path`, or `None` for "N/A" and friends.
fn text_at(node: Node<'_, '_>, path: &[&str]) -> Option<String> {
    raw_at(node, path).and_then(present_owned)
}

/// A version at `path`: dotted numbers only, so `Not Found` or `N/A` is no version.
fn version_at(node: Node<'_, '_>, path: &[&str]) -> Option<String> {
    text_at(node, path).filter(|v| is_dotted_numeric(v))
}

fn number_at<T: std::str::FromStr>(node: Node<'_, '_>, path: &[&str]) -> Option<T> {
    raw_at(node, path).and_then(leading)
}

fn float_at(node: Node<'_, '_>, path: &[&str]) -> Option<f64> {
    raw_at(node, path).and_then(leading_f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{body, garbage, huge};

    const H200: &str = include_str!("../../../tests/data/h200/smi_x.txt");

    /// A Tesla V100 on driver 470 (abridged): `clocks_throttle_reasons`, `power_readings` with
    /// `enforced_power_limit`, `single_bit`/`double_bit` ECC buckets, retired pages, no row
    /// remapping, no `product_architecture`; a second GPU mostly N/A.
    const V100_470: &str = r#"<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v11.dtd">
<nvidia_smi_log>
	<timestamp>Mon Jul 10 09:12:44 2023</timestamp>
	<driver_version>470.199.02</driver_version>
	<cuda_version>11.4</cuda_version>
	<attached_gpus>2</attached_gpus>
	<gpu id="00000000:00:1E.0">
		<product_name>Tesla V100-SXM2-16GB</product_name>
		<product_brand>Tesla</product_brand>
		<display_mode>Enabled</display_mode>
		<display_active>Disabled</display_active>
		<persistence_mode>Disabled</persistence_mode>
		<mig_mode>
			<current_mig>N/A</current_mig>
			<pending_mig>N/A</pending_mig>
		</mig_mode>
		<serial>0323218052416</serial>
		<uuid>GPU-8a1e7a6b-5c3e-2f11-8a4e-2c1f0b7d9e31</uuid>
		<minor_number>0</minor_number>
		<vbios_version>88.00.4F.00.09</vbios_version>
		<pci>
			<pci_bus>00</pci_bus>
			<pci_device>1E</pci_device>
			<pci_domain>0000</pci_domain>
			<pci_device_id>1DB110DE</pci_device_id>
			<pci_bus_id>00000000:00:1E.0</pci_bus_id>
			<pci_sub_system_id>121210DE</pci_sub_system_id>
			<pci_gpu_link_info>
				<pcie_gen>
					<max_link_gen>3</max_link_gen>
					<current_link_gen>3</current_link_gen>
				</pcie_gen>
				<link_widths>
					<max_link_width>16x</max_link_width>
					<current_link_width>8x</current_link_width>
				</link_widths>
			</pci_gpu_link_info>
		</pci>
		<fan_speed>N/A</fan_speed>
		<performance_state>P0</performance_state>
		<clocks_throttle_reasons>
			<clocks_throttle_reason_gpu_idle>Not Active</clocks_throttle_reason_gpu_idle>
			<clocks_throttle_reason_applications_clocks_setting>Not Active</clocks_throttle_reason_applications_clocks_setting>
			<clocks_throttle_reason_sw_power_cap>Active</clocks_throttle_reason_sw_power_cap>
			<clocks_throttle_reason_hw_slowdown>Active</clocks_throttle_reason_hw_slowdown>
			<clocks_throttle_reason_hw_thermal_slowdown>Not Active</clocks_throttle_reason_hw_thermal_slowdown>
			<clocks_throttle_reason_hw_power_brake_slowdown>Not Active</clocks_throttle_reason_hw_power_brake_slowdown>
			<clocks_throttle_reason_sync_boost>Not Active</clocks_throttle_reason_sync_boost>
			<clocks_throttle_reason_sw_thermal_slowdown>Not Active</clocks_throttle_reason_sw_thermal_slowdown>
			<clocks_throttle_reason_display_clocks_setting>Not Active</clocks_throttle_reason_display_clocks_setting>
		</clocks_throttle_reasons>
		<fb_memory_usage>
			<total>16160 MiB</total>
			<used>15623 MiB</used>
			<free>537 MiB</free>
		</fb_memory_usage>
		<compute_mode>Exclusive_Process</compute_mode>
		<utilization>
			<gpu_util>100 %</gpu_util>
			<memory_util>38 %</memory_util>
		</utilization>
		<ecc_mode>
			<current_ecc>Enabled</current_ecc>
			<pending_ecc>Enabled</pending_ecc>
		</ecc_mode>
		<ecc_errors>
			<volatile>
				<single_bit>
					<device_memory>2</device_memory>
					<register_file>0</register_file>
					<l1_cache>N/A</l1_cache>
					<l2_cache>0</l2_cache>
					<texture_memory>N/A</texture_memory>
					<texture_shm>N/A</texture_shm>
					<cbu>N/A</cbu>
					<total>2</total>
				</single_bit>
				<double_bit>
					<device_memory>0</device_memory>
					<register_file>0</register_file>
					<l1_cache>N/A</l1_cache>
					<l2_cache>0</l2_cache>
					<texture_memory>N/A</texture_memory>
					<texture_shm>N/A</texture_shm>
					<cbu>0</cbu>
					<total>0</total>
				</double_bit>
			</volatile>
			<aggregate>
				<single_bit>
					<device_memory>7</device_memory>
					<register_file>0</register_file>
					<l1_cache>N/A</l1_cache>
					<l2_cache>0</l2_cache>
					<texture_memory>N/A</texture_memory>
					<texture_shm>N/A</texture_shm>
					<cbu>N/A</cbu>
					<total>7</total>
				</single_bit>
				<double_bit>
					<device_memory>1</device_memory>
					<register_file>0</register_file>
					<l1_cache>N/A</l1_cache>
					<l2_cache>0</l2_cache>
					<texture_memory>N/A</texture_memory>
					<texture_shm>N/A</texture_shm>
					<cbu>0</cbu>
					<total>1</total>
				</double_bit>
			</aggregate>
		</ecc_errors>
		<retired_pages>
			<multiple_single_bit_retirement>
				<retired_count>0</retired_count>
				<retired_pagelist>
				</retired_pagelist>
			</multiple_single_bit_retirement>
			<double_bit_retirement>
				<retired_count>1</retired_count>
				<retired_pagelist>
					<retired_page_address>0x000000000003f2a1</retired_page_address>
					<retired_page_timestamp>Sun Jul  9 22:03:10 2023</retired_page_timestamp>
				</retired_pagelist>
			</double_bit_retirement>
			<pending_blacklist>No</pending_blacklist>
			<pending_retirement>Yes</pending_retirement>
		</retired_pages>
		<remapped_rows>N/A</remapped_rows>
		<temperature>
			<gpu_temp>61 C</gpu_temp>
			<gpu_temp_max_threshold>90 C</gpu_temp_max_threshold>
			<gpu_temp_slow_threshold>87 C</gpu_temp_slow_threshold>
			<gpu_temp_max_gpu_threshold>83 C</gpu_temp_max_gpu_threshold>
			<gpu_target_temperature>N/A</gpu_target_temperature>
			<memory_temp>58 C</memory_temp>
			<gpu_temp_max_mem_threshold>85 C</gpu_temp_max_mem_threshold>
		</temperature>
		<power_readings>
			<power_state>P0</power_state>
			<power_management>Supported</power_management>
			<power_draw>285.42 W</power_draw>
			<power_limit>300.00 W</power_limit>
			<default_power_limit>300.00 W</default_power_limit>
			<enforced_power_limit>250.00 W</enforced_power_limit>
			<min_power_limit>150.00 W</min_power_limit>
			<max_power_limit>300.00 W</max_power_limit>
		</power_readings>
		<clocks>
			<graphics_clock>1530 MHz</graphics_clock>
			<sm_clock>1530 MHz</sm_clock>
			<mem_clock>877 MHz</mem_clock>
			<video_clock>1372 MHz</video_clock>
		</clocks>
		<max_clocks>
			<graphics_clock>1530 MHz</graphics_clock>
			<sm_clock>1530 MHz</sm_clock>
			<mem_clock>877 MHz</mem_clock>
			<video_clock>1372 MHz</video_clock>
		</max_clocks>
		<processes>
		</processes>
	</gpu>
	<gpu id="00000000:00:1F.0">
		<product_name>Tesla V100-SXM2-16GB</product_name>
		<persistence_mode>Disabled</persistence_mode>
		<uuid>[Unknown Error]</uuid>
		<pci>
			<pci_device_id>0x1DB110DE</pci_device_id>
		</pci>
		<fb_memory_usage>
			<total>Unknown Error</total>
			<used>0 MiB</used>
		</fb_memory_usage>
		<ecc_mode>
			<current_ecc>N/A</current_ecc>
		</ecc_mode>
		<ecc_errors>
			<volatile>
				<single_bit>
					<device_memory>N/A</device_memory>
					<l2_cache>3</l2_cache>
					<total>N/A</total>
				</single_bit>
			</volatile>
		</ecc_errors>
		<temperature>
			<gpu_temp>[Not Supported]</gpu_temp>
		</temperature>
	</gpu>
</nvidia_smi_log>
"#;

    /// An A100 on driver 535 with MIG on: `gpu_power_readings` with `power_draw`, flat
    /// `sram_*`/`dram_*` ECC counters, remapped rows with a pending remap.
    const A100_535: &str = r#"<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
	<timestamp>Wed Oct 11 14:02:51 2023</timestamp>
	<driver_version>535.104.12</driver_version>
	<cuda_version>12.2</cuda_version>
	<attached_gpus>1</attached_gpus>
	<gpu id="00000000:07:00.0">
		<product_name>NVIDIA A100-SXM4-80GB</product_name>
		<product_brand>NVIDIA</product_brand>
		<product_architecture>Ampere</product_architecture>
		<persistence_mode>Enabled</persistence_mode>
		<mig_mode>
			<current_mig>Enabled</current_mig>
			<pending_mig>Enabled</pending_mig>
		</mig_mode>
		<uuid>GPU-4f2b9a0e-1d3c-7e55-9a61-0c8e2f7b3d14</uuid>
		<pci>
			<pci_device_id>20B210DE</pci_device_id>
			<pci_bus_id>00000000:07:00.0</pci_bus_id>
		</pci>
		<clocks_event_reasons>
			<clocks_event_reason_gpu_idle>Active</clocks_event_reason_gpu_idle>
			<clocks_event_reason_sw_thermal_slowdown>Active</clocks_event_reason_sw_thermal_slowdown>
		</clocks_event_reasons>
		<fb_memory_usage>
			<total>81920 MiB</total>
			<reserved>1185 MiB</reserved>
			<used>0 MiB</used>
			<free>80734 MiB</free>
		</fb_memory_usage>
		<compute_mode>Default</compute_mode>
		<utilization>
			<gpu_util>N/A</gpu_util>
		</utilization>
		<ecc_mode>
			<current_ecc>Enabled</current_ecc>
			<pending_ecc>Enabled</pending_ecc>
		</ecc_mode>
		<ecc_errors>
			<volatile>
				<sram_correctable>4</sram_correctable>
				<sram_uncorrectable>0</sram_uncorrectable>
				<dram_correctable>10</dram_correctable>
				<dram_uncorrectable>2</dram_uncorrectable>
			</volatile>
			<aggregate>
				<sram_correctable>N/A</sram_correctable>
				<sram_uncorrectable>N/A</sram_uncorrectable>
				<dram_correctable>N/A</dram_correctable>
				<dram_uncorrectable>N/A</dram_uncorrectable>
			</aggregate>
		</ecc_errors>
		<retired_pages>
			<multiple_single_bit_retirement>
				<retired_count>N/A</retired_count>
				<retired_pagelist>N/A</retired_pagelist>
			</multiple_single_bit_retirement>
			<double_bit_retirement>
				<retired_count>N/A</retired_count>
				<retired_pagelist>N/A</retired_pagelist>
			</double_bit_retirement>
			<pending_blacklist>N/A</pending_blacklist>
			<pending_retirement>N/A</pending_retirement>
		</retired_pages>
		<remapped_rows>
			<remapped_row_corr>0</remapped_row_corr>
			<remapped_row_unc>1</remapped_row_unc>
			<remapped_row_pending>Yes</remapped_row_pending>
			<remapped_row_failure>No</remapped_row_failure>
		</remapped_rows>
		<temperature>
			<gpu_temp>33 C</gpu_temp>
			<gpu_temp_max_threshold>92 C</gpu_temp_max_threshold>
			<gpu_temp_slow_threshold>89 C</gpu_temp_slow_threshold>
		</temperature>
		<gpu_power_readings>
			<power_state>P0</power_state>
			<power_draw>63.45 W</power_draw>
			<current_power_limit>400.00 W</current_power_limit>
			<requested_power_limit>400.00 W</requested_power_limit>
		</gpu_power_readings>
	</gpu>
</nvidia_smi_log>
"#;

    #[test]
    fn h200_capture() {
        let log = parse_xml(body(H200)).unwrap();
        assert_eq!(log.driver_version.as_deref(), Some("580.159.04"));
        assert_eq!(log.cuda_version.as_deref(), Some("13.0"));
        assert_eq!(log.attached_gpus, Some(1));
        assert_eq!(log.gpus.len(), 1);
        let g = &log.gpus[0];
        assert_eq!(g.pci_bus_id.as_deref(), Some("00000000:00:06.0"));
        assert_eq!(g.name.as_deref(), Some("NVIDIA H200"));
        assert_eq!(
            g.uuid.as_deref(),
            Some("GPU-93d73297-7074-b467-5b79-c5d039e92c6f")
        );
        assert_eq!(g.serial.as_deref(), Some("1654024031050"));
        assert_eq!(g.vbios_version.as_deref(), Some("96.00.A5.00.1A"));
        assert_eq!(g.architecture.as_deref(), Some("Hopper"));
        assert_eq!(g.brand.as_deref(), Some("NVIDIA"));
        assert_eq!(g.pci_device_id.as_deref(), Some("0x2335"));
        assert_eq!(g.pci_vendor_id.as_deref(), Some("0x10de"));
        assert_eq!(g.pci_subsystem_id.as_deref(), Some("0x18bf10de"));
        assert_eq!(g.minor_number, Some(0));
        assert_eq!(g.memory_total_mib, Some(143771));
        assert_eq!(g.memory_used_mib, Some(0));
        assert_eq!(g.temperature_c, Some(39));
        assert_eq!(g.temperature_memory_c, Some(42));
        // Hopper prints only offsets from T.Limit (-2 C, -8 C), not absolute thresholds.
        assert_eq!(g.temperature_slowdown_c, None);
        assert_eq!(g.temperature_shutdown_c, None);
        assert_eq!(g.power_draw_w, Some(117.12));
        assert_eq!(g.power_draw_instant_w, Some(82.82));
        assert_eq!(g.power_limit_w, Some(700.0));
        assert_eq!(g.clocks_sm_mhz, Some(465));
        assert_eq!(g.clocks_mem_mhz, Some(3201));
        assert_eq!(g.max_clocks_sm_mhz, Some(1980));
        assert_eq!(g.max_clocks_mem_mhz, Some(3201));
        assert_eq!(g.utilization_gpu_pct, Some(0));
        assert_eq!(g.pcie_gen_current, Some(5));
        assert_eq!(g.pcie_gen_max, Some(5));
        assert_eq!(g.pcie_width_current, Some(16));
        assert_eq!(g.pcie_width_max, Some(16));
        assert_eq!(g.persistence_mode, Some(true));
        assert_eq!(g.mig_mode.as_deref(), Some("Disabled"));
        assert_eq!(g.ecc_mode, Some(true));
        assert_eq!(g.throttle_reasons_active, vec!["gpu_idle".to_string()]);
        assert_eq!(g.compute_mode.as_deref(), Some("Default"));
        assert_eq!(g.performance_state.as_deref(), Some("P0"));
        assert_eq!(g.virtualization_mode.as_deref(), Some("Pass-Through"));
        assert_eq!(g.gsp_firmware_version.as_deref(), Some("580.159.04"));
        // The H200 is one PCIe/NVL GPU outside an NVSwitch fabric: every fabric field is N/A.
        assert_eq!(g.fabric, None);
        assert_eq!(
            g.ecc_errors,
            SmiEcc {
                volatile_corrected: Some(0),
                volatile_uncorrected: Some(0),
                aggregate_corrected: Some(0),
                aggregate_uncorrected: Some(0),
                retired_pages_sbe: None,
                retired_pages_dbe: None,
                retired_pending: None,
                remapped_correctable: Some(0),
                remapped_uncorrectable: Some(0),
                remapped_pending: Some(false),
                remapped_failure: Some(false),
            }
        );
    }

    #[test]
    fn whole_capture_with_command_line_and_exit_status_still_parses() {
        let log = parse_xml(H200).unwrap();
        assert_eq!(log.gpus.len(), 1);
        assert_eq!(log.driver_version.as_deref(), Some("580.159.04"));
    }

    #[test]
    fn old_driver_v100() {
        let log = parse_xml(V100_470).unwrap();
        assert_eq!(log.driver_version.as_deref(), Some("470.199.02"));
        assert_eq!(log.cuda_version.as_deref(), Some("11.4"));
        assert_eq!(log.gpus.len(), 2);
        let g = &log.gpus[0];
        assert_eq!(g.architecture, None);
        assert_eq!(g.brand.as_deref(), Some("Tesla"));
        assert_eq!(g.pci_device_id.as_deref(), Some("0x1db1"));
        assert_eq!(g.mig_mode, None);
        assert_eq!(g.persistence_mode, Some(false));
        assert_eq!(g.pcie_gen_max, Some(3));
        assert_eq!(g.pcie_width_current, Some(8));
        assert_eq!(g.temperature_slowdown_c, Some(87));
        assert_eq!(g.temperature_shutdown_c, Some(90));
        assert_eq!(g.power_draw_w, Some(285.42));
        assert_eq!(g.power_draw_instant_w, None);
        assert_eq!(g.power_limit_w, Some(250.0));
        assert_eq!(g.compute_mode.as_deref(), Some("Exclusive_Process"));
        assert_eq!(
            g.throttle_reasons_active,
            vec!["sw_power_cap".to_string(), "hw_slowdown".to_string()]
        );
        assert_eq!(
            g.ecc_errors,
            SmiEcc {
                volatile_corrected: Some(2),
                volatile_uncorrected: Some(0),
                aggregate_corrected: Some(7),
                aggregate_uncorrected: Some(1),
                retired_pages_sbe: Some(0),
                retired_pages_dbe: Some(1),
                retired_pending: Some(true),
                remapped_correctable: None,
                remapped_uncorrectable: None,
                remapped_pending: None,
                remapped_failure: None,
            }
        );

        // The second GPU is mostly unreadable: markers become None, 0 stays 0.
        let bad = &log.gpus[1];
        assert_eq!(bad.pci_bus_id.as_deref(), Some("00000000:00:1F.0"));
        assert_eq!(bad.uuid, None);
        assert_eq!(bad.pci_device_id.as_deref(), Some("0x1db1"));
        assert_eq!(bad.memory_total_mib, None);
        assert_eq!(bad.memory_used_mib, Some(0));
        assert_eq!(bad.temperature_c, None);
        assert_eq!(bad.ecc_mode, None);
        // No <total>: the bucket falls back to the sum of the counters that have numbers.
        assert_eq!(bad.ecc_errors.volatile_corrected, Some(3));
        assert_eq!(bad.ecc_errors.volatile_uncorrected, None);
        assert_eq!(bad.ecc_errors.aggregate_corrected, None);
        assert!(bad.throttle_reasons_active.is_empty());
    }

    #[test]
    fn a100_mig_and_flat_ecc_counters() {
        let log = parse_xml(A100_535).unwrap();
        let g = &log.gpus[0];
        assert_eq!(g.mig_mode.as_deref(), Some("Enabled"));
        assert_eq!(g.pci_device_id.as_deref(), Some("0x20b2"));
        assert_eq!(g.power_draw_w, Some(63.45));
        assert_eq!(g.power_limit_w, Some(400.0));
        assert_eq!(g.utilization_gpu_pct, None);
        assert_eq!(g.temperature_slowdown_c, Some(89));
        assert_eq!(
            g.throttle_reasons_active,
            vec!["gpu_idle".to_string(), "sw_thermal_slowdown".to_string()]
        );
        let e = &g.ecc_errors;
        assert_eq!(e.volatile_corrected, Some(14));
        assert_eq!(e.volatile_uncorrected, Some(2));
        assert_eq!(e.aggregate_corrected, None);
        assert_eq!(e.aggregate_uncorrected, None);
        assert_eq!(e.retired_pages_dbe, None);
        assert_eq!(e.remapped_uncorrectable, Some(1));
        assert_eq!(e.remapped_pending, Some(true));
        assert_eq!(e.remapped_failure, Some(false));
    }

    #[test]
    fn bad_input_is_a_readable_error() {
        assert_eq!(parse_xml(""), Err(SmiXmlError::Empty));
        assert_eq!(parse_xml(" \n\t"), Err(SmiXmlError::Empty));
        assert!(matches!(parse_xml(&garbage()), Err(SmiXmlError::NotXml(_))));

        // What nvidia-smi prints on stdout when the driver is gone.
        let failed = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. \
                      Make sure that the latest NVIDIA driver is installed and running.\n";
        let err = parse_xml(failed).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("nvidia-smi -q -x did not print valid XML")
        );

        assert_eq!(
            parse_xml("<html><body/></html>"),
            Err(SmiXmlError::WrongRoot("html".to_string()))
        );

        // Truncated in the middle of the first GPU.
        let full = body(H200);
        let cut = full.get(..full.len() / 2).unwrap();
        assert!(matches!(parse_xml(cut), Err(SmiXmlError::NotXml(_))));

        // A root with no GPUs is valid: nothing to report.
        let empty = parse_xml("<nvidia_smi_log></nvidia_smi_log>").unwrap();
        assert_eq!(empty, SmiLog::default());
    }

    #[test]
    fn entity_expansion_bomb_is_refused() {
        let bomb = r#"<?xml version="1.0"?>
<!DOCTYPE nvidia_smi_log [
 <!ENTITY a "aaaaaaaaaa">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
 <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
 <!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
 <!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
 <!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">
 <!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">
 <!ENTITY i "&h;&h;&h;&h;&h;&h;&h;&h;&h;&h;">
]>
<nvidia_smi_log><driver_version>&i;</driver_version></nvidia_smi_log>"#;
        assert!(matches!(parse_xml(bomb), Err(SmiXmlError::NotXml(_))));
    }

    #[test]
    fn huge_input_is_linear() {
        // ~2 MiB of garbage text.
        assert!(matches!(
            parse_xml(&huge("not xml at all ")),
            Err(SmiXmlError::NotXml(_))
        ));
    }

    #[test]
    fn many_gpus_is_linear() {
        // ~2.7 MB of valid XML: 100 copies of the H200's <gpu> element.  (A debug build parses
        // about 1 MB/s; 10 MB would only make the test suite slow.)
        let full = body(H200);
        let start = full.find("<gpu id=").unwrap();
        let end = full.rfind("</gpu>").unwrap() + "</gpu>".len();
        let gpu = full.get(start..end).unwrap();
        let many = format!("<nvidia_smi_log>{}</nvidia_smi_log>", gpu.repeat(100));
        let log = parse_xml(&many).unwrap();
        assert_eq!(log.gpus.len(), 100);
        assert!(log.gpus.iter().all(|g| g.memory_total_mib == Some(143771)));
    }

    #[test]
    fn pci_id_halves() {
        assert_eq!(hex_u32("233510DE"), Some(0x2335_10de));
        assert_eq!(hex_u32("0x233510DE"), Some(0x2335_10de));
        assert_eq!(hex_u32("+23"), None);
        assert_eq!(hex_u32("1233510DE"), None);
        assert_eq!(hex_u32(""), None);
    }

    /// nvidia-smi's no-value words are never values: `Not Found` as the CUDA version (a
    /// GeForce GTX 1070 on 530.30.02, seen in a public test corpus), `000000DE` as the PCI id
    /// (an AWS A10G), `[N/A]`, `[Not Supported]`, `Unknown Error`, `Insufficient Permissions`.
    #[test]
    fn no_value_words_are_never_values() {
        let xml = r#"<?xml version="1.0" ?>
<nvidia_smi_log>
	<driver_version>530.30.02</driver_version>
	<cuda_version>Not Found</cuda_version>
	<attached_gpus>1</attached_gpus>
	<gpu id="00000000:00:1E.0">
		<product_name>NVIDIA A10G</product_name>
		<product_architecture>Unknown</product_architecture>
		<pci>
			<pci_device_id>000000DE</pci_device_id>
			<pci_sub_system_id>000000DE</pci_sub_system_id>
		</pci>
		<fb_memory_usage>
			<total>[N/A]</total>
			<used>Insufficient Permissions</used>
		</fb_memory_usage>
		<temperature><gpu_temp>[Not Supported]</gpu_temp></temperature>
		<power_readings><power_draw>Unknown Error</power_draw></power_readings>
	</gpu>
</nvidia_smi_log>"#;
        let log = parse_xml(xml).unwrap();
        assert_eq!(log.driver_version.as_deref(), Some("530.30.02"));
        assert_eq!(log.cuda_version, None, "Not Found is no CUDA version");
        let g = &log.gpus[0];
        assert_eq!(g.name.as_deref(), Some("NVIDIA A10G"));
        assert_eq!(g.architecture, None);
        assert_eq!(g.pci_device_id, None, "000000DE holds no device id");
        assert_eq!(g.pci_subsystem_id, None);
        assert_eq!(g.memory_total_mib, None);
        assert_eq!(g.memory_used_mib, None);
        assert_eq!(g.temperature_c, None);
        assert_eq!(g.power_draw_w, None);
        // Versions must be dotted numbers.
        for bad in ["N/A", "[N/A]", "Unknown Error", "580.x", ""] {
            let text = format!(
                "<nvidia_smi_log><driver_version>{bad}</driver_version><cuda_version>{bad}</cuda_version></nvidia_smi_log>"
            );
            let log = parse_xml(&text).unwrap();
            assert_eq!(log.driver_version, None, "{bad}");
            assert_eq!(log.cuda_version, None, "{bad}");
        }
    }

    /// A driver older than the card names it `Graphics Device` (telegraf's GTX 1660 Ti log,
    /// driver 418.43): no name, so the GPU id table names it from the PCI id.
    #[test]
    fn placeholder_name_is_no_name() {
        let xml = r#"<nvidia_smi_log><gpu id="00000000:43:00.0">
		<product_name>Graphics Device</product_name>
		<pci><pci_device_id>218410DE</pci_device_id></pci>
	</gpu></nvidia_smi_log>"#;
        let g = &parse_xml(xml).unwrap().gpus[0];
        assert_eq!(g.name, None);
        assert_eq!(g.pci_device_id.as_deref(), Some("0x2184"));
        assert_eq!(product_name(" Tesla T4 ").as_deref(), Some("Tesla T4"));
        assert_eq!(product_name("graphics device"), None);
    }

    /// A subsystem id is `<device><vendor>`; a board numbered 0x0000 by its maker (Colorful,
    /// 0x7377, in OpenPAI's RTX 2080 Ti log) is still an id, a vendor of 0 is none.
    #[test]
    fn subsystem_with_board_zero_is_an_id() {
        let sub = |raw: &str| {
            let xml = format!(
                "<nvidia_smi_log><gpu><pci><pci_sub_system_id>{raw}</pci_sub_system_id></pci></gpu></nvidia_smi_log>"
            );
            parse_xml(&xml).unwrap().gpus[0].pci_subsystem_id.clone()
        };
        assert_eq!(sub("00007377").as_deref(), Some("0x00007377"));
        assert_eq!(sub("37AF1458").as_deref(), Some("0x37af1458"));
        assert_eq!(sub("00000000"), None);
        assert_eq!(sub("000000DE"), None);
        assert_eq!(sub("37AF0000"), None);
        assert_eq!(sub("[REDACTED]"), None);
    }
}

#[cfg(test)]
mod fabric_tests {
    #[test]
    fn a_fabric_in_progress_is_read() {
        let xml = "<nvidia_smi_log><gpu id=\"00000000:18:00.0\"><product_name>NVIDIA B200</product_name>\
                   <fabric><state>In Progress</state><status>N/A</status><cliqueId>N/A</cliqueId>\
                   <clusterUuid>N/A</clusterUuid></fabric></gpu></nvidia_smi_log>";
        let log = super::parse_xml(xml).expect("parses");
        let f = log.gpus[0].fabric.clone().expect("a fabric");
        assert_eq!(f.state.as_deref(), Some("In Progress"));
        assert_eq!(f.status, None);
    }
}
