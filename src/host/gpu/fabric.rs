//! NVML's GPU fabric info (NVLink fabric state, clique, cluster, health) as nvidia-smi shows it.

// FFI: NVML's GPU fabric info through nvml-wrapper's raw function table (no safe binding:
// rust-nvml/nvml-wrapper#142): foreign calls.
#![allow(unsafe_code)]

/// `NVML_STRUCT_VERSION(GpuFabricInfo, 3)` of nvml.h: the struct's size with the version in the
/// top byte.
#[allow(clippy::cast_possible_truncation)] // the struct is 40 bytes
const FABRIC_INFO_V3: u32 =
    (std::mem::size_of::<nvml_wrapper_sys::bindings::nvmlGpuFabricInfo_v3_t>() as u32) | (3 << 24);

/// NVML's fabric info as either version of the call gives it, before it is put in words.
struct RawFabric {
    state: u8,
    /// An NVML return code.
    status: u32,
    clique: u32,
    cluster_uuid: [u8; 16],
    /// (v3 only) health summary and health mask.
    health: Option<(u8, u32)>,
}

/// The GPU's NVLink fabric from NVML, as nvidia-smi shows it: `None` where the GPU is in no
/// fabric (state "Not Supported", `NVML_ERROR_NOT_SUPPORTED`) or the driver predates the call (a
/// missing symbol), which is "not applicable", never an error. Status, clique and cluster only
/// once the state is Completed, and clique and cluster only with status Success, as nvidia-smi
/// prints N/A for them otherwise.
pub(super) fn nvml_fabric(d: &nvml_wrapper::Device<'_>) -> Option<crate::report::GpuFabric> {
    use nvml_wrapper_sys::bindings as sys;
    let lib = d.nvml().lib();
    // SAFETY: the handle is only passed to NVML calls below, while `d` (and the Nvml it borrows)
    // is alive; it is never stored.
    let handle = unsafe { d.handle() };
    let raw = if let Ok(get) = lib.nvmlDeviceGetGpuFabricInfoV.as_ref() {
        let mut info = sys::nvmlGpuFabricInfo_v3_t {
            version: FABRIC_INFO_V3,
            clusterUuid: [0; 16],
            status: 0,
            cliqueId: 0,
            state: 0,
            healthMask: 0,
            healthSummary: 0,
        };
        // SAFETY: `get` is nvmlDeviceGetGpuFabricInfoV from the loaded libnvidia-ml, called with
        // a live device handle and a valid, writable v3 struct whose `version` field names
        // exactly that layout (a driver that knows only v1/v2 answers
        // NVML_ERROR_ARGUMENT_VERSION_MISMATCH without writing).
        let rc = unsafe { get(handle, &raw mut info) };
        if rc == sys::nvmlReturn_enum_NVML_SUCCESS {
            RawFabric {
                state: info.state,
                status: info.status,
                clique: info.cliqueId,
                cluster_uuid: info.clusterUuid,
                health: Some((info.healthSummary, info.healthMask)),
            }
        } else if rc == sys::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED {
            return None;
        } else {
            nvml_fabric_v1(lib, handle)?
        }
    } else {
        nvml_fabric_v1(lib, handle)?
    };
    let RawFabric {
        state,
        status,
        clique,
        cluster_uuid: uuid,
        health,
    } = raw;
    let state = match state {
        s if s == sys::NVML_GPU_FABRIC_STATE_NOT_STARTED as u8 => "Not Started",
        s if s == sys::NVML_GPU_FABRIC_STATE_IN_PROGRESS as u8 => "In Progress",
        s if s == sys::NVML_GPU_FABRIC_STATE_COMPLETED as u8 => "Completed",
        _ => return None,
    };
    let completed = state == "Completed";
    let success = completed && status == sys::nvmlReturn_enum_NVML_SUCCESS;
    Some(crate::report::GpuFabric {
        state: Some(state.to_string()),
        status: completed.then(|| nvml_error_string(lib, status)),
        clique_id: success.then(|| clique.to_string()),
        cluster_uuid: success.then(|| format_uuid(&uuid)),
        health: health.and_then(|(summary, mask)| fabric_health(summary, mask)),
    })
}

/// The v1 call (`nvmlDeviceGetGpuFabricInfo`, drivers 525-550) when the versioned one is missing
/// or refuses the v3 struct; `None` when it is missing or not supported.
fn nvml_fabric_v1(
    lib: &nvml_wrapper_sys::bindings::NvmlLib,
    handle: nvml_wrapper_sys::bindings::nvmlDevice_t,
) -> Option<RawFabric> {
    use nvml_wrapper_sys::bindings as sys;
    let get = lib.nvmlDeviceGetGpuFabricInfo.as_ref().ok()?;
    let mut info = sys::nvmlGpuFabricInfo_t {
        clusterUuid: [0; 16],
        status: 0,
        cliqueId: 0,
        state: 0,
    };
    // SAFETY: `get` is nvmlDeviceGetGpuFabricInfo from the loaded libnvidia-ml, called with a
    // live device handle and a valid, writable nvmlGpuFabricInfo_t (the unversioned layout).
    let rc = unsafe { get(handle, &raw mut info) };
    (rc == sys::nvmlReturn_enum_NVML_SUCCESS).then_some(RawFabric {
        state: info.state,
        status: info.status,
        clique: info.cliqueId,
        cluster_uuid: info.clusterUuid,
        health: None,
    })
}

/// NVML's own words for a return code ("Success"), as nvidia-smi prints the fabric status.
fn nvml_error_string(lib: &nvml_wrapper_sys::bindings::NvmlLib, rc: u32) -> String {
    let fallback = || format!("NVML error {rc}");
    let Ok(string) = lib.nvmlErrorString.as_ref() else {
        return fallback();
    };
    // SAFETY: nvmlErrorString takes any return code and returns a pointer to a static,
    // NUL-terminated string owned by the library (or null), which is copied at once.
    let ptr = unsafe { string(rc) };
    if ptr.is_null() {
        return fallback();
    }
    // SAFETY: non-null, NUL-terminated and static (above); read only within this call.
    unsafe { std::ffi::CStr::from_ptr(ptr) }
        .to_string_lossy()
        .into_owned()
}

/// A cluster UUID as nvidia-smi prints it: 8-4-4-4-12 lowercase hex.
fn format_uuid(b: &[u8; 16]) -> String {
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// NVML's fabric health summary with the health mask's set flags, or `None` where the driver
/// does not report a summary.
fn fabric_health(summary: u8, mask: u32) -> Option<String> {
    use nvml_wrapper_sys::bindings as sys;
    let summary = match u32::from(summary) {
        sys::NVML_GPU_FABRIC_HEALTH_SUMMARY_HEALTHY => "Healthy",
        sys::NVML_GPU_FABRIC_HEALTH_SUMMARY_UNHEALTHY => "Unhealthy",
        sys::NVML_GPU_FABRIC_HEALTH_SUMMARY_LIMITED_CAPACITY => "Limited Capacity",
        _ => return None,
    };
    let field = |shift: u32, width: u32| (mask >> shift) & width;
    let mut flags = Vec::new();
    for (shift, width, name) in [
        (
            sys::NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_DEGRADED_BW,
            sys::NVML_GPU_FABRIC_HEALTH_MASK_WIDTH_DEGRADED_BW,
            "degraded bandwidth",
        ),
        (
            sys::NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_RECOVERY,
            sys::NVML_GPU_FABRIC_HEALTH_MASK_WIDTH_ROUTE_RECOVERY,
            "route recovery in progress",
        ),
        (
            sys::NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ROUTE_UNHEALTHY,
            sys::NVML_GPU_FABRIC_HEALTH_MASK_WIDTH_ROUTE_UNHEALTHY,
            "route unhealthy",
        ),
        (
            sys::NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_ACCESS_TIMEOUT_RECOVERY,
            sys::NVML_GPU_FABRIC_HEALTH_MASK_WIDTH_ACCESS_TIMEOUT_RECOVERY,
            "access timeout recovery",
        ),
    ] {
        // Each of these fields is 1 for "true" (0 not supported, 2 false).
        if field(shift, width) == 1 {
            flags.push(name);
        }
    }
    match field(
        sys::NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_INCORRECT_CONFIGURATION,
        sys::NVML_GPU_FABRIC_HEALTH_MASK_WIDTH_INCORRECT_CONFIGURATION,
    ) {
        sys::NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INCORRECT_SYSGUID => {
            flags.push("incorrect system GUID");
        }
        sys::NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INCORRECT_CHASSIS_SN => {
            flags.push("incorrect chassis serial number");
        }
        sys::NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_NO_PARTITION => {
            flags.push("no partition");
        }
        sys::NVML_GPU_FABRIC_HEALTH_MASK_INCORRECT_CONFIGURATION_INSUFFICIENT_NVLINKS => {
            flags.push("insufficient NVLinks");
        }
        _ => {}
    }
    Some(if flags.is_empty() {
        summary.to_string()
    } else {
        format!("{summary} ({})", flags.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_uuid_prints_as_nvidia_smi_prints_it() {
        let b: [u8; 16] = [
            0x9c, 0x6f, 0x5a, 0xf3, 0x53, 0xbf, 0x49, 0xb5, 0xa4, 0x36, 0xb6, 0x67, 0x66, 0xc4,
            0x13, 0xc3,
        ];
        // gpud#1106 shows this cluster UUID of a GB200 NVL72 in NVML's own words.
        assert_eq!(format_uuid(&b), "9c6f5af3-53bf-49b5-a436-b66766c413c3");
    }

    #[test]
    fn the_fabric_health_names_the_set_flags() {
        // Not reported (summary 0): nothing said.
        assert_eq!(fabric_health(0, 0), None);
        // Healthy, every flag "false" (2) or not supported (0).
        assert_eq!(fabric_health(1, 0b10_10_10).as_deref(), Some("Healthy"));
        // Degraded bandwidth (bits 0-1 = 1) and route unhealthy (bits 4-5 = 1), and the
        // configuration field (bits 8-11) saying insufficient NVLinks (5).
        let mask = 1 | (1 << 4) | (5 << 8);
        assert_eq!(
            fabric_health(2, mask).as_deref(),
            Some("Unhealthy (degraded bandwidth, route unhealthy, insufficient NVLinks)")
        );
        assert_eq!(fabric_health(3, 0).as_deref(), Some("Limited Capacity"));
    }
}
