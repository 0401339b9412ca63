//! The KFD topology's node `properties` files (`/sys/class/kfd/kfd/topology/nodes/<n>/
//! properties`): one `name value` pair a line, values in decimal. The amdkfd driver writes them
//! (`kfd_topology.c`); rocm_agent_enumerator, rocminfo and ollama read the same keys.

use std::collections::BTreeMap;

/// A node's properties, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KfdProperties {
    values: BTreeMap<String, u64>,
}

impl KfdProperties {
    /// A property's value; `None` when absent or not a decimal number.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<u64> {
        self.values.get(name).copied()
    }

    /// A GPU node: it has SIMDs (CPU nodes have `simd_count 0`) or a gfx target.
    #[must_use]
    pub fn is_gpu(&self) -> bool {
        self.get("simd_count").is_some_and(|n| n > 0)
            || self.get("gfx_target_version").is_some_and(|v| v > 0)
    }

    /// The PCI address the node sits at ("0000:03:00.0"), from `domain` and `location_id`
    /// (`bus << 8 | device << 3 | function`, the kernel's `pci_dev_id`). `None` without
    /// `location_id`, or for a CPU node (whose location is 0).
    #[must_use]
    pub fn pci_address(&self) -> Option<String> {
        let location = self
            .get("location_id")
            .filter(|l| *l != 0 && *l <= 0xffff)?;
        let domain = self.get("domain").unwrap_or(0);
        (domain <= 0xffff).then(|| {
            format!(
                "{domain:04x}:{:02x}:{:02x}.{}",
                location >> 8,
                (location >> 3) & 0x1f,
                location & 0x7
            )
        })
    }
}

/// Parses a `properties` file. Lines that are not `name number` are skipped: a newer kernel's
/// extra keys or a cut file cost only themselves.
#[must_use]
pub fn properties(text: &str) -> KfdProperties {
    let mut values = BTreeMap::new();
    for line in text.lines() {
        let mut words = line.split_whitespace();
        let (Some(name), Some(value), None) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        if let Ok(number) = value.parse::<u64>() {
            values.insert(name.to_string(), number);
        }
    }
    KfdProperties { values }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An RX 7900 XTX node as amdkfd writes it (trimmed).
    const NAVI31: &str = "cpu_cores_count 0\nsimd_count 192\nmem_banks_count 1\n\
        gfx_target_version 110000\nvendor_id 4098\ndevice_id 29772\nlocation_id 768\n\
        domain 0\ndrm_render_minor 128\nhive_id 0\nunique_id 15276476520447690000\n";

    #[test]
    fn a_gpu_node_gives_its_target_device_and_address() {
        let p = properties(NAVI31);
        assert!(p.is_gpu());
        assert_eq!(p.get("gfx_target_version"), Some(110_000));
        assert_eq!(p.get("device_id"), Some(0x744c));
        assert_eq!(p.pci_address().as_deref(), Some("0000:03:00.0"));
        assert_eq!(p.get("drm_render_minor"), Some(128));
    }

    #[test]
    fn a_cpu_node_is_not_a_gpu_and_has_no_address() {
        let p =
            properties("cpu_cores_count 16\nsimd_count 0\ngfx_target_version 0\nlocation_id 0\n");
        assert!(!p.is_gpu());
        assert_eq!(p.pci_address(), None);
    }

    #[test]
    fn devices_and_functions_are_decoded_and_junk_is_skipped() {
        // 0xc1 = device 24, function 1 on bus 0x0a; domain 1.
        let p = properties("location_id 2753\ndomain 1\nname gfx\nsimd_count x\n\nbad line here\n");
        assert_eq!(p.pci_address().as_deref(), Some("0001:0a:18.1"));
        assert_eq!(p.get("simd_count"), None);
    }
}
