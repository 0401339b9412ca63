//! The NVLink fabric of NVSwitch systems: `fabric-manager-not-running` and
//! `fabric-not-completed` (with NVLink5's InfiniBand modules and subnet manager).

// The parent's imports and shared helpers: one family of platform findings.
use super::*;
use crate::report::GpuSource;
use crate::report::Subject;
use crate::report::{PciDevice, Service};

// ---------------------------------------------------------------------------------------------
// fabric-manager-not-running

/// Process names of the fabric manager (`nv-fabricmanager` is the daemon of the
/// `nvidia-fabricmanager` service).
pub(super) const FABRIC_MANAGER: [&str; 2] = ["nv-fabricmanager", "nvidia-fabricmanager"];

/// NVSwitch bridges on the bus and no fabric manager running: on HGX/DGX boards the GPUs stay
/// unusable until the fabric manager has set up the NVSwitch fabric, and every CUDA program
/// fails with error 802 "system not yet initialized".
///
/// Said only when it can be known: `/proc` was listed (`kernel.daemons` is not null), this is not
/// a container (a container's `/proc` shows only its own processes, while the fabric manager
/// runs on the host), and the nvidia module is loaded (without it the fabric manager cannot
/// start, and `no-driver` is the cause to fix first).
pub(super) fn fabric_manager(report: &Report) -> Option<Finding> {
    let switches: Vec<_> = report.pci_devices.iter().filter(|d| d.nvswitch).collect();
    if !needs_fabric_manager(report, &switches) {
        return None;
    }
    let service = report
        .kernel
        .services
        .iter()
        .find(|s| s.name == "nvidia-fabricmanager");
    let running_in_proc = report
        .kernel
        .daemons
        .as_ref()
        .map(|d| d.iter().any(|d| FABRIC_MANAGER.contains(&d.as_str())));
    let active = service.and_then(|s| s.active).or(running_in_proc);
    let installed = service.and_then(|s| s.installed);
    // Said only when known: running is fine; "not running" needs a process list or systemctl,
    // unless the files show it was never installed (then it cannot be running either).
    match (active, installed) {
        (Some(true), _) | (None, None | Some(true)) => return None,
        _ => {}
    }
    let not_installed = installed == Some(false);
    let gpus = report
        .pci_devices
        .iter()
        .filter(|d| d.vendor == "nvidia" && !d.nvswitch)
        .count();
    let which = if not_installed {
        "an installed"
    } else {
        "a running"
    };
    // NVLink5 boards have no NVSwitch on the host's PCI bus (the switches are managed through
    // InfiniBand ports): the GPUs' fabric state says it is an NVSwitch system.
    let title = if switches.is_empty() {
        format!(
            "NVLink fabric ({} GPU(s) registering with it) without {which} fabric manager",
            in_fabric(report).len()
        )
    } else {
        format!(
            "NVSwitch system without {which} fabric manager ({} NVSwitch, {gpus} GPU(s))",
            switches.len()
        )
    };
    let nvlink5_missing = nvlink5_missing(report);
    let f = FindingBuilder::new(&ids::FABRIC_MANAGER_NOT_RUNNING, Severity::Error, title).detail(
        "The GPUs are connected through NVSwitch (an HGX or DGX board). Until the NVIDIA fabric \
         manager has set up the switch fabric, CUDA cannot use the GPUs: every CUDA program \
         fails with error 802 \"system not yet initialized\", while nvidia-smi still lists the \
         GPUs.",
    );
    let version = report
        .driver
        .version
        .as_deref()
        .or(report.kernel.nvidia_version.as_deref());
    // The fabric manager refuses to start unless its version is the driver's exactly ("fabric
    // manager NVIDIA GPU driver interface version X don't match with driver version Y":
    // NVIDIA/gpu-operator#544, siderolabs/pkgs#720); an `apt upgrade` of one without the other
    // is the usual way there (Azure/azhpc-images#86).
    let mismatch = version.and_then(|v| {
        installed_version(service?)
            .filter(|(_, fm)| fm != v)
            .map(|(package, fm)| (package, fm, v))
    });
    let f = fabric_manager_evidence(
        report,
        f,
        &switches,
        service,
        &nvlink5_missing,
        mismatch.as_ref(),
        version,
    );
    let fix = fabric_manager_fix(report, not_installed, mismatch.as_ref(), version);
    let fix = if nvlink5_missing.is_empty() || not_installed {
        fix
    } else {
        format!("{} {fix}", nvlink5_fix(report))
    };
    Some(
        f.subject(Subject::Service("nvidia-fabricmanager".into()))
            .fix_on_host(fix)
            .build(),
    )
}

/// An NVSwitch system (NVSwitch bridges, or GPUs registering with an NVLink fabric) whose
/// fabric is not working, outside a container, with the nvidia module loaded.
fn needs_fabric_manager(report: &Report, switches: &[&PciDevice]) -> bool {
    if (switches.is_empty() && in_fabric(report).is_empty())
        || report.host.container.is_some()
        || !report.kernel.nvidia_loaded
    {
        return false;
    }
    // A fabric every GPU reports Completed/Success works, wherever its fabric manager runs (on
    // GB200 NVL72 it runs on the switch trays, not on the compute node: leptonai/gpud#1106).
    let fabric = in_fabric(report);
    if !fabric.is_empty()
        && fabric.iter().all(|g| {
            g.fabric.as_ref().is_some_and(|f| {
                f.state.as_deref() == Some("Completed")
                    && f.status.as_deref().is_none_or(|s| s == "Success")
            })
        })
    {
        return false;
    }
    true
}

/// The evidence, what keeps the fabric manager from starting first: NVLink5's InfiniBand
/// pieces, a version other than the driver's; then the NVSwitch bridges, the daemons, the
/// service, its journal and log, each GPU's fabric and the driver.
fn fabric_manager_evidence(
    report: &Report,
    mut f: FindingBuilder,
    switches: &[&PciDevice],
    service: Option<&Service>,
    nvlink5_missing: &[String],
    mismatch: Option<&(String, String, &str)>,
    version: Option<&str>,
) -> FindingBuilder {
    let addresses: Vec<&str> = switches.iter().map(|d| d.address.as_str()).collect();
    let ids: Vec<&str> = {
        let mut ids: Vec<&str> = switches.iter().map(|d| d.device_id.as_str()).collect();
        ids.dedup();
        ids
    };
    // What keeps an NVLink5 fabric manager from starting leads the evidence.
    for m in nvlink5_missing {
        f = f.evidence(m.clone());
    }
    if let Some((package, fm, v)) = mismatch {
        f = f.evidence(format!(
            "{package} {fm} is not the driver's version {v}: the fabric manager starts only \
             with the driver of its own version"
        ));
    }
    if !switches.is_empty() {
        f = f.evidence(format!(
            "PCI: NVSwitch bridge(s) {} (device {})",
            addresses.join(", "),
            ids.join(", ")
        ));
    }
    if let Some(daemons) = &report.kernel.daemons {
        f = f.evidence(if daemons.is_empty() {
            "running GPU daemons: none (no nv-fabricmanager process in /proc)".to_string()
        } else {
            format!(
                "running GPU daemons: {} (no nv-fabricmanager)",
                daemons.join(", ")
            )
        });
    }
    for line in service.map(|s| s.evidence.as_slice()).unwrap_or_default() {
        if line.starts_with("systemctl") {
            f = f.evidence(line.clone());
        } else if !line.starts_with("process:") {
            f = f.evidence(format!("nvidia-fabricmanager {line}"));
        }
    }
    for line in service.map(|s| s.journal.as_slice()).unwrap_or_default() {
        f = f.evidence(format!("journalctl -u nvidia-fabricmanager: {line}"));
    }
    for line in &report.kernel.fabric_manager_log {
        f = f.evidence(format!("/var/log/fabricmanager.log: {line}"));
    }
    for line in fabric_evidence(report) {
        f = f.evidence(line);
    }
    if let Some(v) = version {
        f = f.evidence(format!("driver: {v}"));
    }
    f
}

/// Install, make the versions equal, or start it; no package version is named that may not
/// exist.
fn fabric_manager_fix(
    report: &Report,
    not_installed: bool,
    mismatch: Option<&(String, String, &str)>,
    version: Option<&str>,
) -> String {
    let apt = matches!(report.host.os_id.as_deref(), Some("ubuntu" | "debian"));
    let package = match version.and_then(|v| v.split('.').next().map(|branch| (v, branch))) {
        Some((v, branch)) if !apt => format!(
            "install the fabric manager package of exactly the driver's version ({v}, branch \
             {branch}) from NVIDIA's CUDA repository, the same repository the driver came from"
        ),
        Some((v, branch)) => format!(
            "install the fabric manager of the driver's branch and exact version from NVIDIA's \
             CUDA repository: `sudo apt install nvidia-fabricmanager-{branch}={v}-1`"
        ),
        None => "install the `nvidia-fabricmanager-<branch>` package of exactly the driver's \
                 version from NVIDIA's CUDA repository"
            .to_string(),
    };
    if not_installed {
        let mut first = package;
        if let Some(c) = first.get(..1) {
            first = format!("{}{}", c.to_uppercase(), &first[1..]);
        }
        format!(
            "The fabric manager is not installed. {first}, then start it and enable it at boot: \
             `sudo systemctl enable --now nvidia-fabricmanager`. `nvidia-smi -q | grep -A 2 \
             Fabric` then shows State: Completed."
        )
    } else if let Some((fm_package, fm, v)) = mismatch {
        // No package version is named that may not exist: apt lists what its sources publish.
        let install = if apt {
            format!(
                "`apt-cache madison {fm_package} | grep {v}` names the package version to give \
                 `sudo apt install {fm_package}=<that version>`, then `sudo apt-mark hold \
                 {fm_package}` so an upgrade cannot part them again"
            )
        } else {
            format!(
                "install the fabric manager package of version {v} from NVIDIA's CUDA repository"
            )
        };
        format!(
            "Make the fabric manager exactly the driver's version ({v}, not {fm}): {install}. \
             Where no {v} fabric manager is published (the driver came from another \
             repository), install the driver of version {fm} from the fabric manager's \
             repository instead. Then `sudo systemctl enable --now nvidia-fabricmanager`; \
             `nvidia-smi -q | grep -A 2 Fabric` then shows State: Completed."
        )
    } else {
        format!(
            "Start it and enable it at boot: `sudo systemctl enable --now nvidia-fabricmanager`. \
             If the service does not exist, {package}. If it fails to start, \
             `journalctl -u nvidia-fabricmanager` names the cause (usually a version \
             different from the driver's). `nvidia-smi -q | grep -A 2 Fabric` then shows \
             State: Completed."
        )
    }
}

/// The fabric manager's package and version from its dpkg record ("dpkg:
/// nvidia-fabricmanager-550 550.127.05-1" gives ("nvidia-fabricmanager-550", "550.127.05")).
fn installed_version(service: &Service) -> Option<(String, String)> {
    service.evidence.iter().find_map(|line| {
        let (package, version) = line.strip_prefix("dpkg: ")?.split_once(' ')?;
        if package.starts_with("nvidia-fabricmanager-dev") {
            return None;
        }
        let version = version.split_once(':').map_or(version, |(_, v)| v);
        let version = version.rsplit_once('-').map_or(version, |(v, _)| v);
        Some((package.to_string(), version.to_string()))
    })
}

/// On NVLink5 systems the fabric manager reaches the NVSwitches through InfiniBand management
/// ports, and its unit's start check waits for an InfiniBand device and needs `ib_umad`
/// (NVIDIA Fabric Manager user guide, "What is NVLink Subnet Manager?" and the fourth-generation
/// NVSwitch stack; spectrocloud/CanvOS#700: fabric manager 570+ on HGX B200 "requires ib_umad to be
/// loaded before nv-fabricmanager can start").
pub(super) const NVLINK5_FIX: &str = "First load the InfiniBand modules the NVSwitch management ports need and \
     keep them loaded at boot: `sudo modprobe -a ib_umad mlx5_ib && printf 'ib_umad\\nmlx5_ib\\n' | \
     sudo tee /etc/modules-load.d/nvidia-fabricmanager.conf`; `ls /sys/class/infiniband` then lists \
     the mlx5 devices, and the NVLink subnet manager (`nvlsm`) starts with the fabric manager.";

/// [`NVLINK5_FIX`], after installing the modules first where the running kernel has none
/// (Ubuntu cloud images without `linux-modules-extra`: NVIDIA/gpu-operator#2781).
pub(super) fn nvlink5_fix(report: &Report) -> String {
    let absent = &report.kernel.infiniband_modules_absent;
    if absent.is_empty() {
        return NVLINK5_FIX.to_string();
    }
    let install = if matches!(report.host.os_id.as_deref(), Some("ubuntu")) {
        "install them with `sudo apt install linux-modules-extra-$(uname -r)` (Ubuntu ships the \
         InfiniBand modules there, and cloud images leave it out)"
            .to_string()
    } else {
        "install the package of the running kernel that carries them (the distribution's extra \
         kernel modules, or NVIDIA's DOCA-OFED / MLNX_OFED)"
            .to_string()
    };
    format!(
        "The running kernel has no {} module: {install}. {NVLINK5_FIX}",
        absent.join(" or ")
    )
}

/// The NVIDIA GPUs that report an NVLink fabric (a state other than "Not Supported").
pub(super) fn in_fabric(report: &Report) -> Vec<&Gpu> {
    report
        .nvidia_gpus()
        .filter(|g| {
            g.fabric
                .as_ref()
                .and_then(|f| f.state.as_deref())
                .is_some_and(|s| s != "Not Supported")
        })
        .collect()
}

/// One line per GPU fabric: state, status, clique and cluster.
pub(super) fn fabric_evidence(report: &Report) -> Vec<String> {
    in_fabric(report)
        .iter()
        .filter_map(|g| {
            let f = g.fabric.as_ref()?;
            let health = f
                .health
                .as_deref()
                .map(|h| format!(", health {h}"))
                .unwrap_or_default();
            let from = if g.source == GpuSource::Nvml {
                "NVML GPU fabric info"
            } else {
                "nvidia-smi -q -x"
            };
            Some(format!(
                "GPU {}: fabric state {}, status {}, clique id {}, cluster UUID {}{health} ({from})",
                g.index,
                f.state.as_deref().unwrap_or("N/A"),
                f.status.as_deref().unwrap_or("N/A"),
                f.clique_id.as_deref().unwrap_or("N/A"),
                f.cluster_uuid.as_deref().unwrap_or("N/A")
            ))
        })
        .collect()
}

/// What an NVLink5 system (Blackwell, compute capability 10.x, in a fabric) lacks for its
/// fabric: `ib_umad` / `mlx5_ib`, an InfiniBand device, the NVLink subnet manager.
pub(super) fn nvlink5_missing(report: &Report) -> Vec<String> {
    let nvlink5 = in_fabric(report).iter().any(|g| {
        g.compute_capability
            .as_deref()
            .and_then(|c| c.split('.').next())
            .and_then(|m| m.parse::<u32>().ok())
            .is_some_and(|m| m == 10)
    });
    if !nvlink5 {
        return Vec::new();
    }
    let k = &report.kernel;
    let mut out = Vec::new();
    for m in crate::report::NVLINK5_INFINIBAND_MODULES {
        if !k.infiniband_modules.iter().any(|x| x == m) {
            out.push(if k.infiniband_modules_absent.iter().any(|x| x == m) {
                format!(
                    "NVLink5 (Blackwell) fabric: the {m} module is not loaded (/proc/modules) \
                     and not installed for the running kernel (not in /lib/modules/{}/modules.dep)",
                    report.host.kernel_release.as_deref().unwrap_or("<release>")
                )
            } else {
                format!("NVLink5 (Blackwell) fabric: the {m} module is not loaded (/proc/modules)")
            });
        }
    }
    match &k.infiniband_devices {
        Some(d) if d.is_empty() => out.push(
            "NVLink5 fabric: /sys/class/infiniband is empty (no NVSwitch management port)"
                .to_string(),
        ),
        None => out.push(
            "NVLink5 fabric: no /sys/class/infiniband (no NVSwitch management port)".to_string(),
        ),
        Some(_) => {}
    }
    if k.daemons
        .as_ref()
        .is_some_and(|d| !d.iter().any(|x| x == "nvlsm"))
    {
        out.push("NVLink5 fabric: no nvlsm (NVLink subnet manager) process in /proc".to_string());
    }
    out
}

// ---------------------------------------------------------------------------------------------
// fabric-not-completed

/// The fabric manager runs, yet a GPU's fabric is not "Completed" (or its status is not
/// "Success"): CUDA on that GPU still fails with error 802 until it is. Each GPU moves from
/// "Not Started" to "In Progress" to "Completed" (NVIDIA/NVSentinel#883). The reasons named: the
/// fabric manager's own log, and on NVLink5 systems the InfiniBand modules, devices and NVLink
/// subnet manager its NVSwitch management ports need.
pub(super) fn fabric_not_completed(report: &Report) -> Option<Finding> {
    if !report.kernel.nvidia_loaded {
        return None;
    }
    if report.host.container.is_some() {
        return fabric_not_completed_in_container(report);
    }
    let running = report
        .kernel
        .services
        .iter()
        .find(|s| s.name == "nvidia-fabricmanager")
        .and_then(|s| s.active)
        .or_else(|| {
            report
                .kernel
                .daemons
                .as_ref()
                .map(|d| d.iter().any(|d| FABRIC_MANAGER.contains(&d.as_str())))
        });
    if running != Some(true) {
        return None;
    }
    let stuck = stuck_in_fabric(report);
    if stuck.is_empty() {
        return None;
    }
    let missing = nvlink5_missing(report);
    let mut f = FindingBuilder::new(
        &ids::FABRIC_NOT_COMPLETED,
        Severity::Error,
        format!(
            "The fabric manager runs but the NVLink fabric of {} GPU(s) is not completed",
            stuck.len()
        ),
    )
    .detail(
        "Each GPU of an NVSwitch system registers with the fabric: its state goes from \
         \"Not Started\" to \"In Progress\" to \"Completed\". Until it is Completed (with status \
         Success) CUDA programs on it fail with error 802 \"system not yet initialized\", even \
         though the fabric manager is running.",
    );
    for m in &missing {
        f = f.evidence(m.clone());
    }
    for line in &report.kernel.fabric_manager_log {
        f = f.evidence(format!("/var/log/fabricmanager.log: {line}"));
    }
    for line in fabric_evidence(report) {
        f = f.evidence(line);
    }
    let fix = if missing.is_empty() {
        "Read the fabric manager's log (`/var/log/fabricmanager.log`, `journalctl -u \
         nvidia-fabricmanager`) for the failing step; a fabric manager whose version differs from \
         the driver's, or a GPU/NVSwitch link error (`nvidia-smi nvlink -s`), keeps the fabric from \
         completing. After fixing it, `sudo systemctl restart nvidia-fabricmanager` and check \
         `nvidia-smi -q | grep -A 3 Fabric` shows State: Completed."
            .to_string()
    } else {
        format!(
            "{} Then `sudo systemctl restart nvidia-fabricmanager` and check \
             `nvidia-smi -q | grep -A 3 Fabric` shows State: Completed.",
            nvlink5_fix(report)
        )
    };
    Some(
        f.subject(Subject::Service("nvidia-fabricmanager".into()))
            .explains(&ids::SMOKE_CUDA_ERROR)
            .fix_on_host(fix)
            .build(),
    )
}

/// The GPUs registering with an NVLink fabric whose state is not Completed with status Success:
/// CUDA programs on them fail with error 802.
fn stuck_in_fabric(report: &Report) -> Vec<&Gpu> {
    in_fabric(report)
        .into_iter()
        .filter(|g| {
            let f = g.fabric.as_ref();
            let state = f.and_then(|f| f.state.as_deref());
            let status = f.and_then(|f| f.status.as_deref());
            state != Some("Completed") || status.is_some_and(|s| s != "Success")
        })
        .collect()
}

/// `fabric-not-completed` inside a container. The fabric manager is the host's, and a container
/// sees neither its process nor its unit, but each GPU given to the container still reports its
/// own fabric state through NVML: a state other than Completed means every CUDA program here
/// fails with 802, whatever the image holds (huggingface/huggingface_hub#4134: an HF Jobs H200
/// container whose "fabric manager never reported Completed"). Nothing inside can complete it,
/// so the fix is the host's, or, on a service whose hosts are not the user's, another node.
fn fabric_not_completed_in_container(report: &Report) -> Option<Finding> {
    let stuck = stuck_in_fabric(report);
    if stuck.is_empty() {
        return None;
    }
    let mut f = FindingBuilder::new(
        &ids::FABRIC_NOT_COMPLETED,
        Severity::Error,
        format!(
            "The NVLink fabric of {} GPU(s) given to this container is not completed: the host's \
             fabric manager has not set it up",
            stuck.len()
        ),
    )
    .detail(
        "Each GPU of an NVSwitch system registers with the fabric: its state goes from \
         \"Not Started\" to \"In Progress\" to \"Completed\". Until it is Completed (with status \
         Success) CUDA programs on it fail with error 802 \"system not yet initialized\", while \
         nvidia-smi lists the GPU. The fabric manager that completes it runs on the host, out of \
         this container's sight, so nothing inside the container (image, CUDA version, \
         retries) changes it.",
    );
    for line in fabric_evidence(report) {
        f = f.evidence(line);
    }
    Some(
        f.evidence(format!(
            "inside a container ({}): the host's fabric manager and its log are not visible here",
            report.host.container.as_deref().unwrap_or("unknown engine")
        ))
        .explains(&ids::SMOKE_CUDA_ERROR)
        .fix_on_host(
            "On the host: `systemctl status nvidia-fabricmanager` and `journalctl -u \
             nvidia-fabricmanager` say whether the fabric manager runs and why the fabric did not \
             complete (its version must be the driver's exactly; on Blackwell it needs the \
             `ib_umad` and `mlx5_ib` modules); after fixing it, `nvidia-smi -q | grep -A 3 Fabric` \
             shows State: Completed. Where the host is not yours (a cloud instance or job \
             service), report the node and run the job on another one.",
        )
        .build(),
    )
}
