//! The messages `nvidia-smi` prints when it cannot report, recognised so that a user gets the
//! cause instead of a raw error.

use crate::parse::text::looks_like_version;

/// A known way for `nvidia-smi` to fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmiFailure {
    /// `Failed to initialize NVML: Driver/library version mismatch`: the loaded kernel module and
    /// the user-space libraries come from different driver versions (typically after a driver
    /// update without reboot). Newer drivers add `NVML library version: 580.95`.
    DriverLibraryMismatch {
        nvml_library_version: Option<String>,
    },
    /// `NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver`.
    NoDriverCommunication,
    /// `No devices were found`.
    NoDevices,
    /// `Failed to initialize NVML: Unknown Error`: common in containers whose device nodes or
    /// cgroup device permissions are missing.
    NvmlUnknown,
    /// `Insufficient Permissions`.
    NoPermission,
    /// `NVIDIA-SMI couldn't find libnvidia-ml.so library in your system.`
    NvmlLibraryNotFound,
    /// `Failed to initialize NVML: GPU access blocked by the operating system` (WSL, VMs).
    AccessBlocked,
    /// `Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost. ...`:
    /// the GPU fell off the bus or is in an error state. `reason` is the text after the bus id.
    DeviceUnreachable {
        pci_bus_id: Option<String>,
        reason: String,
    },
    /// `Field "compute_cap" is not a valid field to query.`: an older driver does not know a
    /// `--query-gpu` field.
    InvalidQueryField { field: String },
}

impl SmiFailure {
    /// One or two sentences for the user: what happened and what usually fixes it.
    pub fn message(&self) -> String {
        match self {
            Self::DriverLibraryMismatch {
                nvml_library_version,
            } => {
                let lib = nvml_library_version
                    .as_deref()
                    .map(|v| format!(" (NVML library {v})"))
                    .unwrap_or_default();
                format!(
                    "The loaded NVIDIA kernel module and the user-space driver libraries{lib} are \
                     different versions, usually after a driver update without a reboot. Reboot, \
                     or unload and reload the nvidia kernel modules."
                )
            }
            Self::NoDriverCommunication => "nvidia-smi could not talk to the NVIDIA kernel \
                 driver: the module is not loaded (not installed, not built for this kernel, or \
                 blocked by Secure Boot), or this container was started without the GPU."
                .to_string(),
            Self::NoDevices => "The NVIDIA driver is running but sees no GPU: check that the GPU \
                 is visible to this machine or container (NVIDIA_VISIBLE_DEVICES, passthrough)."
                .to_string(),
            Self::NvmlUnknown => "NVML failed to initialise with \"Unknown Error\". In a \
                 container this usually means the /dev/nvidia* devices are missing or not allowed \
                 by the container's cgroup; restart the container with the GPU runtime."
                .to_string(),
            Self::NoPermission => "nvidia-smi has insufficient permissions to open the GPU device \
                 files (/dev/nvidia*): check their permissions and this user's groups."
                .to_string(),
            Self::NvmlLibraryNotFound => "nvidia-smi could not find libnvidia-ml.so: the \
                 user-space part of the NVIDIA driver is missing or not on the loader path."
                .to_string(),
            Self::AccessBlocked => "The operating system blocks access to the GPU (on WSL: GPU \
                 support is not enabled for this distribution, or the Windows driver is too old)."
                .to_string(),
            Self::DeviceUnreachable { pci_bus_id, reason } => {
                let which = pci_bus_id
                    .as_deref()
                    .map_or_else(|| "A GPU".to_string(), |b| format!("GPU {b}"));
                format!(
                    "{which} does not respond ({reason}). Check the kernel log (dmesg) for Xid \
                     errors; a GPU reset or a reboot is usually needed."
                )
            }
            Self::InvalidQueryField { field } => format!(
                "This nvidia-smi does not know the query field \"{field}\"; the driver is older \
                 than the one that added it."
            ),
        }
    }
}

/// Recognises a known `nvidia-smi` failure in its stdout or stderr.
pub fn failure_kind(stdout: &str, stderr: &str) -> Option<SmiFailure> {
    [stderr, stdout].into_iter().find_map(failure_in)
}

fn failure_in(text: &str) -> Option<SmiFailure> {
    if text.contains("Driver/library version mismatch") {
        return Some(SmiFailure::DriverLibraryMismatch {
            nvml_library_version: nvml_library_version(text),
        });
    }
    if text.contains("couldn't communicate with the NVIDIA driver") {
        return Some(SmiFailure::NoDriverCommunication);
    }
    if text.contains("couldn't find libnvidia-ml.so") {
        return Some(SmiFailure::NvmlLibraryNotFound);
    }
    if text.contains("NVML: GPU access blocked by the operating system") {
        return Some(SmiFailure::AccessBlocked);
    }
    if text.contains("NVML: Unknown Error") {
        return Some(SmiFailure::NvmlUnknown);
    }
    if text.contains("Insufficient Permissions")
        && (text.contains("NVML: Insufficient Permissions")
            || text.lines().any(|l| l.trim() == "Insufficient Permissions"))
    {
        return Some(SmiFailure::NoPermission);
    }
    if text.contains("No devices were found") {
        return Some(SmiFailure::NoDevices);
    }
    if let Some(failure) = device_unreachable(text) {
        return Some(failure);
    }
    invalid_field(text)
}

/// `NVML library version: 580.95` → `580.95`.
fn nvml_library_version(text: &str) -> Option<String> {
    let (_, rest) = text.split_once("NVML library version:")?;
    let value = rest.split_whitespace().next()?;
    looks_like_version(value).then(|| value.to_string())
}

/// `Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot ...`
/// (some drivers put a space after `GPU`).
fn device_unreachable(text: &str) -> Option<SmiFailure> {
    const PREFIX: &str = "Unable to determine the device handle for GPU";
    let (_, rest) = text.split_once(PREFIX)?;
    let line = rest.lines().next().unwrap_or("").trim();
    // The bus id itself contains colons: it ends at the first ": ".
    let (bus, reason) = match line.split_once(": ") {
        Some((bus, reason)) => (bus.trim(), reason.trim()),
        None => ("", line.trim_start_matches(':').trim()),
    };
    Some(SmiFailure::DeviceUnreachable {
        pci_bus_id: (!bus.is_empty()).then(|| bus.to_string()),
        reason: if reason.is_empty() {
            "no reason given".to_string()
        } else {
            reason.to_string()
        },
    })
}

/// `Field "compute_cap" is not a valid field to query.`
fn invalid_field(text: &str) -> Option<SmiFailure> {
    const SUFFIX: &str = "\" is not a valid field to query";
    let before = text.get(..text.find(SUFFIX)?)?;
    let (_, field) = before.rsplit_once("Field \"")?;
    Some(SmiFailure::InvalidQueryField {
        field: field.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{body, garbage, huge};

    #[test]
    fn known_failures() {
        let mismatch = "Failed to initialize NVML: Driver/library version mismatch\n\
                        NVML library version: 580.95\n";
        assert_eq!(
            failure_kind(mismatch, ""),
            Some(SmiFailure::DriverLibraryMismatch {
                nvml_library_version: Some("580.95".into())
            })
        );
        assert_eq!(
            failure_kind(
                "",
                "Failed to initialize NVML: Driver/library version mismatch\n"
            ),
            Some(SmiFailure::DriverLibraryMismatch {
                nvml_library_version: None
            })
        );
        let no_driver = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA \
                         driver. Make sure that the latest NVIDIA driver is installed and running.\n\n";
        assert_eq!(
            failure_kind(no_driver, ""),
            Some(SmiFailure::NoDriverCommunication)
        );
        assert_eq!(
            failure_kind("No devices were found\n", ""),
            Some(SmiFailure::NoDevices)
        );
        assert_eq!(
            failure_kind("Failed to initialize NVML: Unknown Error\n", ""),
            Some(SmiFailure::NvmlUnknown)
        );
        assert_eq!(
            failure_kind("", "Failed to initialize NVML: Insufficient Permissions\n"),
            Some(SmiFailure::NoPermission)
        );
        assert_eq!(
            failure_kind("Insufficient Permissions\n", ""),
            Some(SmiFailure::NoPermission)
        );
        let no_lib = "NVIDIA-SMI couldn't find libnvidia-ml.so library in your system. Please make \
                      sure that the NVIDIA Display Driver is properly installed and present in \
                      your system.\nPlease also try adding directory that contains \
                      libnvidia-ml.so to your system PATH.\n";
        assert_eq!(
            failure_kind(no_lib, ""),
            Some(SmiFailure::NvmlLibraryNotFound)
        );
        assert_eq!(
            failure_kind(
                "Failed to initialize NVML: GPU access blocked by the operating system\n",
                ""
            ),
            Some(SmiFailure::AccessBlocked)
        );
        let lost = "Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  \
                    Reboot the system to recover this GPU\n";
        assert_eq!(
            failure_kind(lost, ""),
            Some(SmiFailure::DeviceUnreachable {
                pci_bus_id: Some("0000:3B:00.0".into()),
                reason: "GPU is lost.  Reboot the system to recover this GPU".into(),
            })
        );
        assert_eq!(
            failure_kind(
                "",
                "Field \"compute_cap\" is not a valid field to query.\n\n"
            ),
            Some(SmiFailure::InvalidQueryField {
                field: "compute_cap".into()
            })
        );
    }

    #[test]
    fn messages_name_the_cause() {
        let m = SmiFailure::DriverLibraryMismatch {
            nvml_library_version: Some("580.95".into()),
        }
        .message();
        assert!(m.contains("NVML library 580.95"), "{m}");
        let m = SmiFailure::DeviceUnreachable {
            pci_bus_id: Some("0000:3B:00.0".into()),
            reason: "GPU is lost".into(),
        }
        .message();
        assert!(
            m.starts_with("GPU 0000:3B:00.0 does not respond (GPU is lost)"),
            "{m}"
        );
        assert!(SmiFailure::NvmlUnknown.message().contains("container"));
    }

    #[test]
    fn working_output_is_not_a_failure() {
        let table = include_str!("../../../tests/data/h200/smi.txt");
        let xml = include_str!("../../../tests/data/h200/smi_x.txt");
        let q = include_str!("../../../tests/data/h200/smi_q.txt");
        for out in [table, xml, q] {
            assert_eq!(failure_kind(body(out), ""), None);
        }
    }

    #[test]
    fn garbage_truncated_and_huge() {
        assert_eq!(failure_kind("", ""), None);
        assert_eq!(failure_kind(&garbage(), &garbage()), None);
        assert_eq!(failure_kind("Failed to initialize NVML: Driv", ""), None);
        assert_eq!(
            failure_kind("Field \"compute_c", "is not a valid field"),
            None
        );
        let big = huge("some unrelated output line\n");
        assert_eq!(failure_kind(&big, &big), None);
        // A truncated device-handle line still names what is known.
        assert_eq!(
            failure_kind("Unable to determine the device handle for GPU", ""),
            Some(SmiFailure::DeviceUnreachable {
                pci_bus_id: None,
                reason: "no reason given".into()
            })
        );
    }
}
