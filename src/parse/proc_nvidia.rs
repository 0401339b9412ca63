//! `/proc/driver/nvidia/version` and `/proc/driver/nvidia/gpus/*/information`: what the loaded
//! NVIDIA kernel module says about itself and each GPU.
//!
//! These exist whenever the kernel module is loaded, even when `nvidia-smi` or the user-space
//! libraries are broken or missing, so they are the ground truth for "which driver is running".

use crate::parse::text::{is_dotted_numeric, present, yes_no};

/// The `NVRM version:` banner of the loaded kernel module.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcDriverVersion {
    /// e.g. `580.159.04`.
    pub version: String,
    /// The open-source kernel module (`Open Kernel Module`), required on Blackwell and later.
    pub open_module: bool,
    /// `x86_64`, `aarch64`, `ppc64le` when the banner names it.
    pub arch: Option<String>,
}

/// Parses `/proc/driver/nvidia/version`.
///
/// Banners seen in the wild:
/// - `NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)`
/// - `NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023`
/// - `NVRM version: NVIDIA UNIX aarch64 Kernel Module  535.104.05  Sat Aug 19 01:13:08 UTC 2023`
pub fn parse_driver_version(text: &str) -> Option<ProcDriverVersion> {
    let banner = text
        .lines()
        .find_map(|line| line.split_once("NVRM version:").map(|(_, rest)| rest))?;
    let (before, after) = banner.split_once("Kernel Module")?;
    let open_module = before.split_whitespace().any(|w| w == "Open");

    let mut words = after.split_whitespace().peekable();
    // Open modules name the architecture after the words: `Kernel Module for x86_64`.
    let mut arch = None;
    if words.peek() == Some(&"for") {
        words.next();
        arch = words.next().map(str::to_string);
    }
    // Closed modules name it before: `NVIDIA UNIX x86_64 Kernel Module`.
    if arch.is_none() {
        arch = before
            .split_whitespace()
            .rfind(|w| !matches!(*w, "NVIDIA" | "UNIX" | "Open"))
            .map(str::to_string);
    }
    let version = words.find(|w| is_dotted_numeric(w))?;
    Some(ProcDriverVersion {
        version: version.to_string(),
        open_module,
        arch,
    })
}

/// What `/proc/driver/nvidia/gpus/<bus id>/information` says about one GPU.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcGpuInfo {
    pub model: Option<String>,
    pub uuid: Option<String>,
    /// e.g. `0000:00:06.0` (the directory name).
    pub bus_location: Option<String>,
    /// As printed (lowercase here, uppercase in `nvidia-smi`).
    pub video_bios: Option<String>,
    /// `GPU Firmware`: the GSP firmware version, when the GPU runs GSP firmware.
    pub firmware: Option<String>,
    /// `GPU Excluded: Yes` means the driver refused this GPU (e.g. it failed to initialise).
    pub excluded: Option<bool>,
    /// `PCIe`, `PCI`, `AGP`, `SoC` (Jetson-style integrated GPUs).
    pub bus_type: Option<String>,
    pub device_minor: Option<u32>,
}

/// Parses `/proc/driver/nvidia/gpus/*/information` (`Key: \t value` lines).
///
/// Values the driver could not read are printed as `??.??.??.??.??` or `GPU-????...`; those are
/// `None`.
pub fn parse_gpu_information(text: &str) -> ProcGpuInfo {
    let mut info = ProcGpuInfo::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let Some(value) = present(value).filter(|v| !v.contains("??")) else {
            continue;
        };
        let owned = || Some(value.to_string());
        match key.trim() {
            "Model" => info.model = owned(),
            "GPU UUID" => info.uuid = owned(),
            "Bus Location" => info.bus_location = owned(),
            "Video BIOS" => info.video_bios = owned(),
            "GPU Firmware" => info.firmware = owned(),
            "GPU Excluded" => info.excluded = yes_no(value),
            "Bus Type" => info.bus_type = owned(),
            "Device Minor" => info.device_minor = value.parse().ok(),
            _ => {}
        }
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{body, garbage, huge};

    const PROC: &str = include_str!("../../tests/data/h200/proc.txt");

    #[test]
    fn h200_open_module() {
        let v = parse_driver_version(body(PROC)).unwrap();
        assert_eq!(
            v,
            ProcDriverVersion {
                version: "580.159.04".into(),
                open_module: true,
                arch: Some("x86_64".into()),
            }
        );
    }

    #[test]
    fn other_banners() {
        let closed = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023\n\
                      GCC version:  gcc version 11.3.0 (Ubuntu 11.3.0-1ubuntu1~22.04.1)\n";
        assert_eq!(
            parse_driver_version(closed),
            Some(ProcDriverVersion {
                version: "535.54.03".into(),
                open_module: false,
                arch: Some("x86_64".into()),
            })
        );
        let arm_closed = "NVRM version: NVIDIA UNIX aarch64 Kernel Module  535.104.05  Sat Aug 19 01:13:08 UTC 2023\n";
        let v = parse_driver_version(arm_closed).unwrap();
        assert_eq!(v.version, "535.104.05");
        assert_eq!(v.arch.as_deref(), Some("aarch64"));
        assert!(!v.open_module);

        let arm_open = "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  550.54.15  Release Build  (dvs-builder@U16-I3-B16-4-3)  Tue Mar  5 22:16:35 UTC 2024\n";
        let v = parse_driver_version(arm_open).unwrap();
        assert_eq!(v.version, "550.54.15");
        assert_eq!(v.arch.as_deref(), Some("aarch64"));
        assert!(v.open_module);

        let ppc = "NVRM version: NVIDIA UNIX ppc64le Kernel Module  418.67  Sat Apr  6 02:50:36 CDT 2019\n";
        assert_eq!(
            parse_driver_version(ppc).unwrap().arch.as_deref(),
            Some("ppc64le")
        );

        // Very old banners name no architecture.
        let legacy =
            "NVRM version: NVIDIA UNIX Kernel Module  304.137  Tue Nov 21 12:43:24 PST 2017\n";
        let v = parse_driver_version(legacy).unwrap();
        assert_eq!(v.version, "304.137");
        assert_eq!(v.arch, None);
    }

    #[test]
    fn h200_gpu_information() {
        let text = body(PROC);
        let start = text.find("Model:").unwrap();
        let end = text.find("GPU Excluded:").unwrap();
        let end = end + text.get(end..).unwrap().find('\n').unwrap();
        let info = parse_gpu_information(text.get(start..end).unwrap());
        assert_eq!(
            info,
            ProcGpuInfo {
                model: Some("NVIDIA H200".into()),
                uuid: Some("GPU-93d73297-7074-b467-5b79-c5d039e92c6f".into()),
                bus_location: Some("0000:00:06.0".into()),
                video_bios: Some("96.00.a5.00.1a".into()),
                firmware: Some("580.159.04".into()),
                excluded: Some(false),
                bus_type: Some("PCIe".into()),
                device_minor: Some(0),
            }
        );
    }

    #[test]
    fn unreadable_values_and_old_drivers() {
        let old = "Model: \t\t Tesla K80\n\
                   IRQ:   \t\t 89\n\
                   GPU UUID: \t GPU-????????-????-????-????-????????????\n\
                   Video BIOS: \t ??.??.??.??.??\n\
                   Bus Type: \t PCIe\n\
                   DMA Size: \t 40 bits\n\
                   DMA Mask: \t 0xffffffffff\n\
                   Bus Location: \t 0000:00:1e.0\n\
                   Device Minor: \t 0\n\
                   Blacklisted:\t No\n";
        let info = parse_gpu_information(old);
        assert_eq!(info.model.as_deref(), Some("Tesla K80"));
        assert_eq!(info.uuid, None);
        assert_eq!(info.video_bios, None);
        assert_eq!(info.firmware, None);
        assert_eq!(info.excluded, None);
        assert_eq!(info.bus_location.as_deref(), Some("0000:00:1e.0"));

        let excluded =
            "Model: \t\t NVIDIA A100-SXM4-40GB\nGPU Firmware: \t N/A\nGPU Excluded:\t Yes\n";
        let info = parse_gpu_information(excluded);
        assert_eq!(info.excluded, Some(true));
        assert_eq!(info.firmware, None);
    }

    #[test]
    fn garbage_truncated_and_huge() {
        assert_eq!(parse_driver_version(""), None);
        assert_eq!(parse_driver_version(&garbage()), None);
        assert_eq!(
            parse_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel"),
            None
        );
        assert_eq!(
            parse_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  "),
            None
        );
        assert_eq!(
            parse_driver_version(&huge("NVRM Kernel Module 1.2\n")),
            None
        );

        assert_eq!(parse_gpu_information(""), ProcGpuInfo::default());
        assert_eq!(parse_gpu_information(&garbage()), ProcGpuInfo::default());
        assert_eq!(parse_gpu_information("Model"), ProcGpuInfo::default());
        let big = parse_gpu_information(&huge("Model: \t\t NVIDIA H200\n"));
        assert_eq!(big.model.as_deref(), Some("NVIDIA H200"));
    }
}
