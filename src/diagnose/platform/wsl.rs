//! `wsl-driver-in-guest`: a Linux NVIDIA driver installed inside WSL2, shadowing the Windows
//! driver's libraries.

// The parent's imports and shared helpers: one family of platform findings.
use super::*;

// ---------------------------------------------------------------------------------------------
// wsl-driver-in-guest

/// A Linux NVIDIA driver installed inside a WSL2 distribution. Under WSL the GPU belongs to the
/// Windows driver, which WSL maps into `/usr/lib/wsl/lib`; a Linux driver's libcuda cannot talk
/// to `/dev/dxg`, so when the loader picks it CUDA finds no GPU, and its `nvidia-smi` "couldn't
/// communicate with the NVIDIA driver". NVIDIA's CUDA-on-WSL guide: never install a Linux
/// display driver in WSL.
///
/// An error when a Linux libcuda ranks before WSL's (it is the one programs load) or the nvidia
/// kernel module is loaded in the guest; a warning when Linux copies are there but behind
/// WSL's: nothing loads them today, but their `nvidia-smi` and a changed `LD_LIBRARY_PATH`
/// or loader cache put them back in the way.
pub(super) fn wsl_driver_in_guest(report: &Report) -> Option<Finding> {
    if !report.host.wsl {
        return None;
    }
    let libcuda = libs(report, "libcuda");
    let wsl_rank = libcuda.iter().find(|l| l.origin == "wsl").map(|l| l.rank);
    let linux: Vec<&DriverLibrary> = ["libcuda", "libnvidia-ml"]
        .iter()
        .flat_map(|name| libs(report, name))
        .filter(|l| l.kind == DriverLibraryKind::Driver && l.origin != "wsl")
        .collect();
    let linux_libcuda_first = libcuda
        .first()
        .is_some_and(|l| l.kind == DriverLibraryKind::Driver && l.origin != "wsl");
    let module = report.kernel.nvidia_loaded;
    if linux.is_empty() && !module {
        return None;
    }
    let severity = if linux_libcuda_first || module {
        Severity::Error
    } else {
        Severity::Warning
    };
    let title = if linux_libcuda_first {
        "A Linux NVIDIA driver inside WSL is loaded instead of the Windows driver"
    } else if module {
        "The Linux nvidia kernel module is loaded inside WSL"
    } else {
        "A Linux NVIDIA driver is installed inside WSL"
    };
    let mut f = FindingBuilder::new(&ids::WSL_DRIVER_IN_GUEST, severity, title).detail(
        "Under WSL2 the GPU is driven by the Windows NVIDIA driver, which WSL maps into \
         /usr/lib/wsl/lib. A Linux driver installed inside the distribution (often pulled in by \
         the `cuda`, `cuda-drivers` or `nvidia-driver-*` packages) cannot reach the GPU: when \
         its libcuda is loaded CUDA finds no device, and its nvidia-smi cannot talk to a driver.",
    );
    for lib in &libcuda {
        f = f.evidence(lib_line(lib));
    }
    for lib in linux.iter().filter(|l| l.name != "libcuda") {
        f = f.evidence(lib_line(lib));
    }
    if wsl_rank.is_none() {
        f = f.evidence("libcuda: WSL's /usr/lib/wsl/lib copy is not on the loader path");
    }
    if module {
        f = f.evidence(format!(
            "nvidia kernel module loaded in the guest{}",
            report
                .kernel
                .nvidia_version
                .as_deref()
                .map_or(String::new(), |v| format!(" ({v})"))
        ));
    }
    let smi_is_linux = report
        .driver
        .nvidia_smi_path
        .as_deref()
        .is_some_and(|p| !p.starts_with("/usr/lib/wsl/"));
    if smi_is_linux
        && matches!(
            report.driver.nvidia_smi.status,
            ProbeStatus::Failed | ProbeStatus::TimedOut
        )
    {
        if let Some(path) = &report.driver.nvidia_smi_path {
            f = f.evidence(format!(
                "{path} (the Linux driver's nvidia-smi, not /usr/lib/wsl/lib/nvidia-smi) fails"
            ));
        }
        f = f.explains(&ids::NVIDIA_SMI_FAILED);
    }
    let mut fix = String::from(
        "Remove the Linux driver from the distribution and keep only the Windows driver: \
         `sudo apt-get purge 'nvidia-driver-*' 'nvidia-utils-*' 'libnvidia-compute-*' \
         cuda-drivers && sudo apt-get autoremove && sudo ldconfig` (a runfile install: \
         `sudo nvidia-uninstall`), then run `wsl --shutdown` in Windows and reopen the \
         distribution. Install toolkits in WSL only from NVIDIA's WSL-Ubuntu repository as \
         `cuda-toolkit-X-Y`, never the `cuda` or `cuda-drivers` packages.",
    );
    let linux_libcuda: Vec<&DriverLibrary> = linux
        .iter()
        .copied()
        .filter(|l| l.name == "libcuda")
        .collect();
    if let Some(cmd) = ld_library_path_fix(report, &linux_libcuda) {
        fix.push_str(&format!(
            " Take the Linux folder out of LD_LIBRARY_PATH: `{cmd}`."
        ));
    }
    Some(f.subject(Subject::Host("wsl".into())).fix(fix).build())
}

// ---------------------------------------------------------------------------------------------
// wsl-container-driver-file-missing

/// A container under WSL2 gets the Windows driver's files from the NVIDIA Container Toolkit,
/// which mounts a fixed list of them from the driver store (`requiredDriverStoreFiles` in
/// nvidia-container-toolkit's `pkg/nvcdi/driver-wsl.go`). Windows drivers 555 and newer added
/// `libnvdxgdmal.so.1`, which libcuda needs: a Toolkit that does not mount it (before 1.14.4 /
/// 1.15.0, Docker Desktop before 4.31) leaves CUDA failing to initialise with error 500 "named
/// symbol not found" while `nvidia-smi` works (NVIDIA/nvidia-container-toolkit#520, NVIDIA:
/// "NVIDIA drivers 555.xx and newer for Windows have added a library called
/// `libnvdxgdmal.so.1` that must be mapped into the container"; open-webui/open-webui#2527).
/// Judged inside a container only: in the WSL guest itself the driver store is the whole
/// Windows folder. A driver older than 555 has no such file to miss.
pub(super) fn wsl_container_driver_file_missing(report: &Report) -> Option<Finding> {
    if !report.host.wsl || report.host.container.is_none() {
        return None;
    }
    let store = report.host.wsl_driver_store.as_ref()?;
    if !store.missing.iter().any(|f| f == "libnvdxgdmal.so.1") {
        return None;
    }
    let driver = report.driver.version.as_deref()?;
    let branch = crate::version::Version::parse(driver)?.major();
    if branch < 555 {
        return None;
    }
    let mut f = FindingBuilder::new(
        &ids::WSL_CONTAINER_DRIVER_FILE_MISSING,
        Severity::Error,
        format!(
            "The Windows driver {driver} needs libnvdxgdmal.so.1, which this WSL container was \
             not given: CUDA cannot initialise (error 500)"
        ),
    )
    .detail(
        "Under WSL2 a container gets the Windows driver's files from the NVIDIA Container \
         Toolkit, which mounts a fixed list of them from the driver store. Windows drivers 555 \
         and newer added libnvdxgdmal.so.1, which libcuda needs; a Toolkit that predates it \
         (before 1.14.4 / 1.15.0; Docker Desktop before 4.31) does not mount it, and CUDA \
         initialisation fails with error 500 \"named symbol not found\" (CUDA_ERROR_NOT_FOUND) \
         while nvidia-smi still shows the GPU.",
    )
    .evidence(format!(
        "{}: no libnvdxgdmal.so.1 (nor in /usr/lib/wsl/lib)",
        store.path
    ))
    .evidence(format!("Windows driver: {driver} (R{branch})"));
    let others: Vec<&str> = store
        .missing
        .iter()
        .map(String::as_str)
        .filter(|m| *m != "libnvdxgdmal.so.1")
        .collect();
    if !others.is_empty() {
        f = f.evidence(format!(
            "also not mounted from the driver store: {}",
            others.join(", ")
        ));
    }
    Some(
        f.subject(Subject::Container(None))
            .fix_on_host(
                "Update the NVIDIA Container Toolkit in the WSL distribution to 1.15.0 or newer \
                 (`sudo apt-get install --only-upgrade nvidia-container-toolkit`), or Docker \
                 Desktop to 4.31 or newer, and start the container again; a Windows driver \
                 older than 555 also works until then.",
            )
            .build(),
    )
}
