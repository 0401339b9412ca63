//! `forward-compat-unsupported`: a cuda-compat (forward compatibility) libcuda on a GPU that
//! cannot use it; `forward-compat-older-than-driver` and `forward-compat-branch-unsupported`: one
//! on a host driver it does not run on (newer than itself, or of a branch it does not accept).

// The parent's imports and shared helpers: one family of platform findings.
use super::*;
use crate::version::Version;

// ---------------------------------------------------------------------------------------------
// forward-compatibility-unsupported

/// The libcuda that loads first when it is a forward-compatibility copy: from a compat folder,
/// or (by version, not folder) one whose version is that of a cuda-compat copy on this machine
/// and newer than the loaded kernel module, which is what a compat library mounted over the
/// driver's own file name looks like. The second value is that cuda-compat copy.
pub(in crate::diagnose) fn forward_compat_libcuda(
    report: &Report,
) -> Option<(&DriverLibrary, Option<&DriverLibrary>)> {
    let libcuda = libs(report, "libcuda");
    let first = libcuda
        .iter()
        .copied()
        .find(|l| l.origin != "cuda-compat")?;
    if first.kind == DriverLibraryKind::Compat {
        return Some((first, None));
    }
    if first.kind != DriverLibraryKind::Driver {
        return None;
    }
    let version = first.version.as_deref()?;
    let module = report.kernel.nvidia_version.as_deref()?;
    let newer = matches!(
        (
            Version::parse(version),
            Version::parse(module)
        ),
        (Some(v), Some(m)) if v > m
    );
    let twin = libcuda
        .iter()
        .copied()
        .find(|l| l.kind == DriverLibraryKind::Compat && l.version.as_deref() == Some(version))?;
    newer.then_some((first, Some(twin)))
}

/// The CUDA level a forward-compatibility libcuda gives programs, where it counts: the loader
/// picks a `cuda-compat` libcuda and every GPU is one the GPU table marks `forward_compat` (a
/// data-center part). A framework or toolkit that needs more than the host driver's CUDA runs
/// through it (NVIDIA's forward compatibility; compat-cuda.md R5), so the driver is not "too old"
/// for it. The compat library's version names its branch; `cuda.toml`'s `[[driver_branch]]`
/// gives that branch's CUDA. Returns the compat library's version and its CUDA.
pub(in crate::diagnose) fn compat_cuda(
    report: &Report,
    manifests: &Manifests,
) -> Option<(Version, Version)> {
    let (first, twin) = forward_compat_libcuda(report)?;
    let gpus = machine_gpus(report);
    if gpus.is_empty()
        || !gpus
            .iter()
            .all(|g| matches!(forward_compat_of(g, manifests), Some((true, _))))
    {
        return None;
    }
    let text = first
        .version
        .as_deref()
        .or(twin.and_then(|t| t.version.as_deref()))?;
    let version = Version::parse(text)?;
    let cuda = Version::parse(manifests.cuda.max_cuda_for_driver(text)?)?;
    Some((version, cuda))
}

/// The driver's CUDA level when it cannot run programs of CUDA major `needed`: its own level
/// (what it reports, else what `cuda.toml` gives its version) below that major, and no
/// forward-compatibility libcuda ([`compat_cuda`]) that reaches it. `None` when it can, or
/// when its level is not known.
pub(in crate::diagnose) fn driver_below_cuda_major(
    report: &Report,
    manifests: &Manifests,
    needed: u64,
) -> Option<Version> {
    let driver = report.driver.version.as_deref()?;
    let have = report
        .driver
        .cuda_version
        .as_deref()
        .or_else(|| manifests.cuda.max_cuda_for_driver(driver))
        .and_then(Version::parse)?;
    let runs = have.major() >= needed
        || compat_cuda(report, manifests).is_some_and(|(_, c)| c.major() >= needed);
    (!runs).then_some(have)
}

/// What the GPU tables say about one GPU's forward compatibility: `gpus.toml`'s row by PCI id,
/// else `gpu-ids.toml`'s data-center list by PCI id (every NVIDIA id, China-market parts
/// included), else `gpus.toml`'s rows by name; `None` when none of them can tell.
pub(super) fn forward_compat_of(gpu: &Gpu, manifests: &Manifests) -> Option<(bool, String)> {
    if let Some(row) = gpu
        .pci_device_id
        .as_deref()
        .and_then(|id| manifests.gpus.by_pci_id(id))
    {
        return Some((row.forward_compat, row.name.clone()));
    }
    if let Some(device) = gpu
        .pci_device_id
        .as_deref()
        .and_then(crate::manifest::device_id)
        && let Some(verdict) = manifests.gpu_ids.forward_compat(device)
    {
        let name = gpu
            .name
            .clone()
            .unwrap_or_else(|| format!("PCI device {device:#06x}"));
        return Some((verdict, name));
    }
    let rows = manifests.gpus.by_name(gpu.name.as_deref()?);
    let first = rows.first()?;
    rows.iter()
        .all(|r| r.forward_compat == first.forward_compat)
        .then(|| (first.forward_compat, first.name.clone()))
}

/// The loader picks a forward-compatibility libcuda (the `cuda-compat` package, which lets a
/// data-center GPU run a newer CUDA than its driver) on a GPU that cannot use it: GeForce and
/// most workstation cards (compat-cuda.md R5). CUDA then fails with error 804 "forward
/// compatibility was attempted on non supported HW".
///
/// An error for a GPU the table marks `forward_compat = false`; a warning when a GPU is not in
/// the table, since then it cannot be told. Nothing when every GPU supports it or none is known.
pub(super) fn forward_compat(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let libcuda = libs(report, "libcuda");
    let (first, twin) = forward_compat_libcuda(report)?;
    let gpus = machine_gpus(report);
    let verdicts: Vec<(&Gpu, Option<(bool, String)>)> = gpus
        .iter()
        .map(|g| (*g, forward_compat_of(g, manifests)))
        .collect();
    let unsupported: Vec<_> = verdicts
        .iter()
        .filter(|(_, v)| matches!(v, Some((false, _))))
        .collect();
    let unknown: Vec<_> = verdicts.iter().filter(|(_, v)| v.is_none()).collect();
    if unsupported.is_empty() && unknown.is_empty() {
        return None;
    }
    let (severity, title) = if unsupported.is_empty() {
        (
            Severity::Warning,
            "A forward-compatibility libcuda loads first on a GPU that may not support it",
        )
    } else {
        (
            Severity::Error,
            "A forward-compatibility libcuda loads first on a GPU that does not support it",
        )
    };
    let mut f = FindingBuilder::new(&ids::FORWARD_COMPAT_UNSUPPORTED, severity, title).detail(
        "The libcuda the loader picks first comes from the cuda-compat package (forward \
         compatibility), which lets a data-center GPU run a newer CUDA than its driver. GeForce \
         and most workstation GPUs cannot use it: CUDA fails with error 804 \"forward \
         compatibility was attempted on non supported HW\". This usually comes from a container \
         image (NGC, nvidia/cuda) built for a newer CUDA than the host driver, with the compat \
         folder on LD_LIBRARY_PATH or its libcuda mounted at the driver's own name by the \
         container runtime.",
    );
    f = f.evidence(lib_line(first));
    if let Some(twin) = twin {
        f = f.evidence(format!(
            "libcuda {}: the version of the cuda-compat copy {} and newer than the kernel \
             module, so a forward-compatibility library, whatever folder it was mounted in",
            first.version.as_deref().unwrap_or("?"),
            twin.path
        ));
    }
    if let Some(real) = libcuda
        .iter()
        .find(|l| l.kind == DriverLibraryKind::Driver && !std::ptr::eq(**l, first))
    {
        f = f.evidence(lib_line(real));
    }
    if let Some(m) = &report.kernel.nvidia_version {
        f = f.evidence(format!("kernel module: {m}"));
    }
    for (gpu, verdict) in unsupported.iter().chain(unknown.iter()) {
        let id = gpu.pci_device_id.as_deref().unwrap_or("unknown device id");
        f = f
            .evidence(match verdict {
                Some((_, row)) => format!(
                    "{} [{id}]: \"{row}\" in the GPU table, no forward compatibility",
                    gpu_label(gpu)
                ),
                None => format!(
                    "{} [{id}]: not in the GPU table, forward compatibility unknown",
                    gpu_label(gpu)
                ),
            })
            .subject(gpu.subject());
    }
    let mut fix = Vec::new();
    if let Some(cmd) = ld_library_path_fix(report, &[first]) {
        fix.push(format!(
            "Take the compat folder off the loader path so the host driver's libcuda loads: `{cmd}`."
        ));
    } else if first.origin == "ld.so.conf" && twin.is_none() {
        fix.push(
            "Remove the compat folder from /etc/ld.so.conf.d/*.conf and run `sudo ldconfig`, so \
             the host driver's libcuda loads."
                .to_string(),
        );
    }
    if twin.is_some() || report.host.container.is_some() && fix.is_empty() {
        // Mounted over the driver's own name (the container runtime does that with an image's
        // cuda-compat): the image carries it, so the image is where it goes away.
        fix.push(
            "In the image, remove the cuda-compat package (`apt-get purge -y 'cuda-compat-*'` in \
             its Dockerfile, or delete /usr/local/cuda*/compat), or stop mounting or copying the \
             compat folder into the container, so the host driver's own libcuda is used; if the \
             host itself has a `cuda-compat-*` package, the container runtime injects it: \
             remove it there (`sudo apt purge 'cuda-compat-*'`)."
                .to_string(),
        );
    }
    let needed = first.version.as_deref().map_or(String::new(), |v| {
        format!(" (at least {v}, the compat library's version)")
    });
    fix.push(format!(
        "Then either upgrade the host driver to one that supports the image's CUDA natively{needed}, \
         or use an image built for the CUDA version the host driver supports (`nvidia-smi` \
         shows it)."
    ));
    Some(
        f.subject(Subject::Library(first.path.clone()))
            .fix(fix.join(" "))
            .build(),
    )
}

// ---------------------------------------------------------------------------------------------
// forward-compat-older-than-driver

/// The other direction of the compat package's edge: a `cuda-compat` libcuda older than the
/// host's kernel module. Forward compatibility only runs a newer user-space driver on an older
/// module; an older one fails every CUDA call with error 803
/// (`CUDA_ERROR_SYSTEM_DRIVER_MISMATCH`, "system has unsupported display driver / cuda driver
/// combination"). Images that put their compat folder in `/etc/ld.so.conf.d` do this on any host
/// whose driver is newer than the image's CUDA (vllm-project/vllm#34821, a B200 on 580.105.08;
/// NVIDIA-NeMo/labs-molt#44: "forcing it on a 595 host gives CUDA error 803").
pub(super) fn forward_compat_older_than_driver(report: &Report) -> Option<Finding> {
    let libcuda = libs(report, "libcuda");
    let first = libcuda
        .iter()
        .copied()
        .find(|l| l.origin != "cuda-compat")?;
    if first.kind != DriverLibraryKind::Compat {
        return None;
    }
    let compat_text = first.version.as_deref()?;
    let compat = Version::parse(compat_text)?;
    let (host_text, host_source) = match report.kernel.nvidia_version.as_deref() {
        Some(m) => (m, "kernel module"),
        None => (report.driver.version.as_deref()?, "driver"),
    };
    let host = Version::parse(host_text)?;
    if compat >= host {
        return None;
    }
    let mut f = FindingBuilder::new(
        &ids::FORWARD_COMPAT_OLDER_THAN_DRIVER,
        Severity::Error,
        format!(
            "A forward-compatibility libcuda {compat_text} loads first, older than the host's driver \
             {host_text}"
        ),
    )
    .detail(
        "The cuda-compat package lets an older kernel module run a newer CUDA; it never runs on a \
         newer module. With the image's compat libcuda picked before the host driver's own, \
         every CUDA call fails with error 803 (\"system has unsupported display driver / cuda \
         driver combination\"), and frameworks see no GPU. The host driver already runs the \
         image's CUDA natively.",
    )
    .evidence(lib_line(first))
    .evidence(format!("{host_source}: {host_text}"));
    if let Some(real) = libcuda.iter().find(|l| l.kind == DriverLibraryKind::Driver) {
        f = f.evidence(lib_line(real));
    }
    let fix = match ld_library_path_fix(report, &[first]) {
        Some(cmd) => format!(
            "Take the compat folder off the loader path so the host driver's libcuda loads: \
             `{cmd}`."
        ),
        None => "Remove the compat folder from /etc/ld.so.conf.d (the image's `cuda-compat.conf` \
                 or similar) and run `ldconfig`, or start the image with compat loading turned \
                 off where it offers a switch, so the host driver's libcuda loads."
            .to_string(),
    };
    Some(
        f.fix(fix)
            .subject(Subject::Driver(None))
            .explains(&ids::FRAMEWORK_CANNOT_SEE_GPU)
            .build(),
    )
}

// ---------------------------------------------------------------------------------------------
// forward-compat-branch-unsupported

/// The host-branch side of the compat package's edge: a `cuda-compat` libcuda newer than the
/// host's kernel module, on a branch that does not accept its CUDA. NVIDIA's forward
/// compatibility serves Long Term Support and Production branches while they are in support,
/// never New Feature Branches (ComputeCanada/software-stack-config#70: "this makes CUDA 12.2
/// invisible on Cedar with the 530 driver, as this NFB isn't supported"; #101: "The 470 LTS
/// branch confirmed to no longer support 12.8"); `cuda.toml`'s `[[forward_compat_host]]` holds
/// what the sources show per branch. Both ways a branch fails: it ended before the compat
/// package's CUDA (R470 under 12.8), or it is a New Feature Branch (R530 under 12.2). Inside
/// a container the image's `NVIDIA_REQUIRE_CUDA` is judged by `driver-too-old-for-image`; this
/// rule reads the libraries the loader picks, wherever they run. Nothing on a GPU the compat
/// package does not serve at all (`forward-compat-unsupported` says that).
pub(super) fn forward_compat_branch_unsupported(
    report: &Report,
    manifests: &Manifests,
) -> Option<Finding> {
    let (first, twin) = forward_compat_libcuda(report)?;
    let compat_text = first
        .version
        .as_deref()
        .or(twin.and_then(|t| t.version.as_deref()))?;
    let compat = Version::parse(compat_text)?;
    let (host_text, host_source) = match report.kernel.nvidia_version.as_deref() {
        Some(m) => (m, "kernel module"),
        None => (report.driver.version.as_deref()?, "driver"),
    };
    let host = Version::parse(host_text)?;
    if host.major() >= compat.major() {
        return None;
    }
    let gpus = machine_gpus(report);
    if gpus
        .iter()
        .any(|g| matches!(forward_compat_of(g, manifests), Some((false, _))))
    {
        return None;
    }
    let table = &manifests.cuda;
    let cuda = table.max_cuda_for_driver(compat_text)?;
    let cuda_v = Version::parse(cuda)?;
    let row = table.forward_compat_host(host.major())?;
    let refused = Version::parse(row.refuses_from.as_deref()?)?;
    if cuda_v < refused {
        return None;
    }
    let b = host.major();
    let why = match &row.accepts_up_to {
        None => format!(
            "R{b} accepts no cuda-compat package newer than its own CUDA: NVIDIA's images never \
             list it (a New Feature Branch, which forward compatibility never serves)"
        ),
        Some(up) => format!(
            "R{b} accepts cuda-compat packages up to CUDA {up}; from CUDA {} on it refuses them \
             (forward compatibility serves a branch only while NVIDIA supports it)",
            row.refuses_from.as_deref().unwrap_or("?")
        ),
    };
    let accepting = accepting_branches(table, &cuda_v);
    let mut f = FindingBuilder::new(
        &ids::FORWARD_COMPAT_BRANCH_UNSUPPORTED,
        Severity::Error,
        format!(
            "A forward-compatibility libcuda {compat_text} (CUDA {cuda}) loads first on host \
             driver {host_text}, whose R{b} branch does not accept it"
        ),
    )
    .detail(format!(
        "The cuda-compat package runs a newer CUDA on an older kernel module only of the \
         driver branches NVIDIA accepts for it. {why}, so CUDA does not initialise through this \
         library and frameworks see no GPU."
    ))
    .evidence(lib_line(first))
    .evidence(format!("{host_source}: {host_text} (R{b})"))
    .evidence(format!(
        "cuda.toml forward_compat_host R{b}: {}",
        row.source
    ));
    if !accepting.is_empty() {
        f = f.evidence(format!(
            "branches the sources show accepting CUDA {cuda}'s compat package: {}",
            accepting.join(", ")
        ));
    }
    Some(
        f.subject(Subject::Library(first.path.clone()))
            .fix_on_host(branch_fix(report, table, first, host_text, row, cuda))
            .explains(&ids::FRAMEWORK_CANNOT_SEE_GPU)
            .build(),
    )
}

/// The branches whose `[[forward_compat_host]]` row shows them accepting compat CUDA `cuda`.
fn accepting_branches(table: &crate::manifest::CudaTable, cuda: &Version) -> Vec<String> {
    table
        .forward_compat_hosts
        .iter()
        .filter(|r| {
            r.accepts_up_to
                .as_deref()
                .and_then(Version::parse)
                .is_some_and(|up| &up >= cuda)
        })
        .map(|r| format!("R{}", r.branch))
        .collect()
}

/// The fix for a compat package on a branch that refuses it: a supported branch that runs its
/// CUDA natively, or an older compat package (none on a New Feature Branch), and the compat
/// folder off the loader path.
fn branch_fix(
    report: &Report,
    table: &crate::manifest::CudaTable,
    first: &DriverLibrary,
    host_text: &str,
    row: &crate::manifest::ForwardCompatHost,
    cuda: &str,
) -> String {
    let cuda_v = Version::parse(cuda);
    let native = table
        .driver_branches
        .iter()
        .filter(|r| r.verified)
        .find(|r| {
            Version::parse(&r.max_cuda)
                .zip(cuda_v.as_ref())
                .is_some_and(|(max, c)| &max >= c)
                && table.branch_in_support(r, &table.as_of())
        })
        .map(|r| r.branch);
    let move_to = native.map_or_else(
        || format!("a driver branch that runs CUDA {cuda} natively"),
        |n| format!("R{n} or newer, which runs CUDA {cuda} natively (no compat package needed)"),
    );
    let older = row.accepts_up_to.as_deref().map_or_else(
        || {
            format!(
                "run programs built for CUDA {} or older without the compat package",
                table
                    .max_cuda_for_driver(host_text)
                    .unwrap_or("the driver's own CUDA")
            )
        },
        |up| format!("use a compat package for CUDA {up} or older, with programs built for it"),
    );
    let off_path = ld_library_path_fix(report, &[first]).map_or_else(String::new, |cmd| {
        format!(
            " Either way, take the compat folder off the loader path when it is not needed: \
             `{cmd}`."
        )
    });
    format!("Move the host driver to {move_to}, or {older}.{off_path}")
}
