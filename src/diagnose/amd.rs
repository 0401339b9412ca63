//! AMD GPUs and the ROCm stack under them: is the amdgpu driver loaded, does KFD (the
//! kernel's compute driver) expose `/dev/kfd`, can ROCm drive this GPU at all, may the user
//! open the device nodes, and is the ROCm install new enough for the GPU. Findings:
//! `amdgpu-not-loaded`, `kfd-missing`, `rocm-gpu-unsupported`, `rocm-device-permission`,
//! `rocm-too-old-for-gpu`.
//!
//! These are the root causes of the AMD framework findings (`amd_builds.rs`, `amd_env.rs`):
//! each lists the symptoms it explains, as the NVIDIA driver rules do.

use super::FindingBuilder;
use super::ids;
use crate::manifest::Manifests;
use crate::report::Subject;
use crate::report::rocm::{DeviceNode, RocmStack};
use crate::report::{Finding, Gpu, PciDevice, Report, Severity};
use crate::version::{GfxTarget, Version, compare};

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(amdgpu_not_loaded(report, manifests));
    out.extend(kfd_missing(report));
    out.extend(gpu_unsupported(report, manifests));
    out.extend(device_permission(report));
    out.extend(rocm_too_old(report, manifests));
    out
}

/// Anything that shows an AMD GPU is (or may be) here: an AMD display controller on the bus,
/// the amdgpu module, a KFD GPU node, `/dev/kfd`, or WSL's `/dev/dxg` with a ROCm install or
/// a ROCm framework build (under WSL the GPU is reached through the Windows driver, off the
/// PCI bus). `no-gpu` must never fire when one is there.
pub(crate) fn amd_gpu_evidence(report: &Report) -> bool {
    let rocm = report.rocm.as_ref();
    report.pci_devices.iter().any(|d| d.vendor == "amd")
        || report.kernel.amdgpu_loaded
        || rocm.is_some_and(|r| !r.kfd_nodes.is_empty())
        || has_node(report, "/dev/kfd")
        || (has_node(report, "/dev/dxg") && (rocm_installed(report) || rocm_framework(report)))
}

fn has_node(report: &Report, path: &str) -> bool {
    report.kernel.device_nodes.iter().any(|n| n == path)
}

fn rocm_installed(report: &Report) -> bool {
    // A program's own copy of ROCm (ollama's lib/ollama/rocm) is a ROCm path too: the user runs
    // ROCm code through it (ollama/ollama#10152, an RX 580 under ollama's ROCm 6 libraries).
    report
        .rocm
        .as_ref()
        .is_some_and(|r| !r.installs.is_empty() || !r.bundled.is_empty())
}

/// A framework built for ROCm in any environment.
pub(super) fn rocm_framework(report: &Report) -> bool {
    report
        .python_envs
        .iter()
        .flat_map(|e| &e.frameworks)
        .any(|f| f.variant.as_deref() == Some("rocm") || f.rocm.is_some())
}

/// A framework built for CUDA in any environment.
fn cuda_framework(report: &Report) -> bool {
    report
        .python_envs
        .iter()
        .flat_map(|e| &e.frameworks)
        .any(|f| f.variant.as_deref() == Some("cuda") || f.cuda.is_some())
}

/// Whether the machine means to compute on its AMD GPU: a ROCm install, a ROCm or CUDA build
/// of a framework (a CUDA build on an AMD-only machine is a wish for a GPU too), or a ROCm
/// variable set. A desktop whose Radeon only drives the display is told nothing.
pub(super) fn wants_amd_compute(report: &Report) -> bool {
    rocm_installed(report)
        || rocm_framework(report)
        || (cuda_framework(report) && !report.has_nvidia_gpu())
        || [
            "HIP_VISIBLE_DEVICES",
            "ROCR_VISIBLE_DEVICES",
            "HSA_OVERRIDE_GFX_VERSION",
            "ROCM_PATH",
        ]
        .iter()
        .any(|v| super::env_var(report, v).is_some())
}

/// The AMD GPUs ROCm can reach: a KFD node names them.
pub(super) fn kfd_gpus(report: &Report) -> Vec<&Gpu> {
    report.amd_gpus().filter(|g| g.source == "kfd").collect()
}

/// "GPU 0 (AMD Radeon RX 7900 XTX, gfx1100)".
pub(super) fn gpu_label(gpu: &Gpu) -> String {
    let name = gpu
        .name
        .as_deref()
        .or(gpu.pci_device_id.as_deref())
        .unwrap_or("AMD GPU");
    match &gpu.gfx_target {
        Some(gfx) => format!("GPU {} ({name}, {gfx})", gpu.index),
        None => format!("GPU {} ({name})", gpu.index),
    }
}

/// The finding IDs a broken AMD driver or KFD makes follow: every framework-level AMD symptom.
const FRAMEWORK_SYMPTOMS: [&ids::Kind; 5] = [
    &ids::ROCM_IGPU_VISIBLE,
    &ids::HSA_OVERRIDE_MISMATCH,
    &ids::ROCM_DEVICE_PERMISSION,
    &ids::FRAMEWORK_CANNOT_SEE_GPU,
    &ids::VISIBLE_DEVICES_HIDES_GPUS,
];

// ---------------------------------------------------------------------------------------------
// amdgpu-not-loaded

/// An AMD GPU on the bus that no amdgpu module drives: bound to no driver, to the old `radeon`
/// driver, or to `vfio-pci`, with amdgpu neither in `/proc/modules` nor `/sys/module`. The AMD
/// twin of `no-driver`. GPUs no amdgpu release supports (pre-GCN, not in the AMD table with a
/// target) are left alone: `radeon` is their only driver.
fn amdgpu_not_loaded(report: &Report, manifests: &Manifests) -> Option<Finding> {
    if report.kernel.amdgpu_loaded || report.host.wsl {
        return None;
    }
    let undriven = undriven(report, manifests);
    if undriven.is_empty() {
        return None;
    }
    let stack = report.rocm.as_ref();
    let mut f = FindingBuilder::new(
        &ids::AMDGPU_NOT_LOADED,
        Severity::Error,
        format!(
            "AMD GPU present but the amdgpu kernel driver is not loaded ({} GPU(s) on the bus)",
            undriven.len()
        ),
    )
    .detail(
        "The GPU is on the PCI bus, but the amdgpu kernel module is not loaded, so ROCm (and \
         PyTorch, ollama or llama.cpp on it) cannot use it: there is no /dev/kfd and no render \
         node. The kernel command line or a modprobe blacklist may keep amdgpu out, the older \
         radeon driver may have taken the card, or an amdgpu-dkms module failed to build for \
         this kernel.",
    );
    // Each GPU by its normalised bus address, the first of an address kept: one look-up per
    // device instead of a search of every GPU (5,000 devices took 7 s).
    let mut by_address = std::collections::HashMap::new();
    for g in report.amd_gpus() {
        if let Some(b) = g.pci_bus_id.as_deref() {
            by_address.entry(address_key(b)).or_insert(g);
        }
    }
    for d in &undriven {
        let gpu = by_address.get(&address_key(&d.address)).copied();
        f = f.evidence(format!(
            "PCI {}: AMD {} {} bound to {}",
            d.address,
            d.device_id,
            gpu.and_then(|g| g.name.as_deref()).unwrap_or("GPU"),
            d.bound_driver.as_deref().unwrap_or("no driver")
        ));
    }
    f = f.evidence("amdgpu kernel module: not in /proc/modules, no /sys/module/amdgpu");
    let cmdline: Vec<String> = stack.map(|s| s.amdgpu.cmdline.clone()).unwrap_or_default();
    let blacklisted: Vec<String> = stack
        .map(|s| s.amdgpu.blacklisted.clone())
        .unwrap_or_default();
    for w in &cmdline {
        f = f.evidence(format!("kernel command line: {w}"));
    }
    for b in &blacklisted {
        f = f.evidence(format!("modprobe: {b}"));
    }
    let fix = amdgpu_fix(report, &undriven, &cmdline, &blacklisted);
    for id in [
        &ids::KFD_MISSING,
        &ids::ROCM_GPU_UNSUPPORTED,
        &ids::ROCM_TOO_OLD_FOR_GPU,
    ] {
        f = f.explains(id);
    }
    for id in FRAMEWORK_SYMPTOMS {
        f = f.explains(id);
    }
    Some(
        // The host's kernel; in a container `amdgpu_fix` has said so.
        f.subject(Subject::Driver(Some("amdgpu".into())))
            .fix_on_host_if(report.host.container.is_none())
            .fix(fix)
            .build(),
    )
}

/// The AMD GPUs on the bus that amdgpu does not drive, among those it could: the AMD table
/// gives them a gfx target. Older cards have only `radeon`, and nothing is wrong with them.
fn undriven<'a>(report: &'a Report, manifests: &Manifests) -> Vec<&'a PciDevice> {
    let table = manifests.amd_gpu_ids.table();
    report
        .pci_devices
        .iter()
        .filter(|d| d.vendor == "amd" && d.bound_driver.as_deref() != Some("amdgpu"))
        .filter(|d| {
            crate::manifest::device_id(&d.device_id)
                .and_then(|id| table.identify(id, None))
                .is_some_and(|i| i.target.is_some())
        })
        .collect()
}

/// What keeps amdgpu off, the most specific cause first: the GPU reserved for a VM (vfio-pci),
/// a kernel command line option or a modprobe blacklist, the old radeon driver holding the
/// card; else load it and read why it fails. A container shares the host's kernel, so the fix
/// is the host's.
fn amdgpu_fix(
    report: &Report,
    undriven: &[&PciDevice],
    cmdline: &[String],
    blacklisted: &[String],
) -> String {
    let radeon = undriven
        .iter()
        .any(|d| d.bound_driver.as_deref() == Some("radeon"));
    let vfio = undriven
        .iter()
        .all(|d| d.bound_driver.as_deref() == Some("vfio-pci"));
    let mut fix = if vfio {
        "The GPU is bound to vfio-pci: it is reserved for a virtual machine. If that is the \
         plan, run ROCm inside the VM; otherwise remove its id from the vfio-pci.ids= kernel \
         option (or /etc/modprobe.d), update the initramfs (`sudo update-initramfs -u`) and \
         reboot."
            .to_string()
    } else if cmdline
        .iter()
        .any(|w| w == "nomodeset" || w == "amdgpu.modeset=0" || w.starts_with("modprobe.blacklist"))
    {
        format!(
            "Remove `{}` from the kernel command line (GRUB_CMDLINE_LINUX_DEFAULT in \
             /etc/default/grub, then `sudo update-grub`) and reboot: it keeps amdgpu from \
             loading.",
            cmdline.join(" ")
        )
    } else if !blacklisted.is_empty() {
        "Delete the `blacklist amdgpu` line(s) shown above, run `sudo update-initramfs -u` and \
         reboot."
            .to_string()
    } else if radeon {
        "The old radeon driver holds the card. For GCN 1 cards boot with `radeon.si_support=0 \
         amdgpu.si_support=1`, for GCN 2 with `radeon.cik_support=0 amdgpu.cik_support=1` \
         (kernel command line), so amdgpu takes them. Note that ROCm does not run on GCN 1 or \
         2 cards at all."
            .to_string()
    } else {
        "Load the driver: `sudo modprobe amdgpu`, and read why it fails with `sudo dmesg | grep \
         -i amdgpu`. The distribution kernel ships amdgpu; with AMD's amdgpu-dkms check `sudo \
         dkms status` (no module built for the running kernel), or reinstall it with \
         `sudo amdgpu-install --usecase=rocm` (see `gpu-doctor plan`)."
            .to_string()
    };
    if let Some(runtime) = report.host.container.as_deref() {
        fix = format!("This {runtime} container uses the host's kernel; on the host: {fix}");
    }
    fix
}

// ---------------------------------------------------------------------------------------------
// kfd-missing

/// amdgpu drives an AMD GPU (or the KFD topology shows GPU nodes) and the machine wants to
/// compute on it, but `/dev/kfd` is missing: ROCm opens nothing without it ("Unable to open
/// /dev/kfd read-write: No such file or directory"; ollama: "kfd driver not loaded"). Inside a
/// container it was not passed in; on a host the kernel's amdgpu was built without KFD
/// (`CONFIG_HSA_AMD`). WSL has no `/dev/kfd` by design (its runtime uses `/dev/dxg`).
fn kfd_missing(report: &Report) -> Option<Finding> {
    if report.host.wsl || has_node(report, "/dev/kfd") {
        return None;
    }
    let stack = report.rocm.as_ref()?;
    let driven: Vec<&Gpu> = report
        .amd_gpus()
        .filter(|g| g.source == "kfd" || g.bound_driver.as_deref() == Some("amdgpu"))
        .collect();
    if driven.is_empty() || !wants_amd_compute(report) {
        return None;
    }
    let container = report.host.container.as_deref();
    let title = match container {
        Some(runtime) => format!("This {runtime} container was started without /dev/kfd"),
        None => "/dev/kfd is missing: ROCm cannot open the GPU".to_string(),
    };
    let mut f = FindingBuilder::new(&ids::KFD_MISSING, Severity::Error, title)
        .detail(
            "ROCm reaches AMD GPUs through /dev/kfd (the kernel's compute driver) and the \
             /dev/dri/renderD* nodes. /dev/kfd is not there, so every ROCm program fails to \
             find a GPU (\"Unable to open /dev/kfd\", hipErrorNoDevice, torch.cuda.is_available() \
             is False) even though amdgpu drives the card.",
        )
        .evidence("/dev/kfd: not present");
    for g in &driven {
        f = f.evidence(format!(
            "{}: driven by amdgpu{}",
            gpu_label(g),
            if g.source == "kfd" {
                " (a KFD topology node exists)"
            } else {
                ""
            }
        ));
    }
    f = f.evidence(render_nodes(stack));
    let fix = kfd_fix(container, stack);
    for id in FRAMEWORK_SYMPTOMS {
        f = f.explains(id);
    }
    Some(
        // Outside a container the kernel's; inside, how the container is started.
        f.subject(Subject::Device("/dev/kfd".into()))
            .fix_on_host_if(container.is_none())
            .fix(fix)
            .build(),
    )
}

/// The DRM nodes ROCm would open beside `/dev/kfd`: whether the GPU reached the container (or
/// the host's udev) at all.
fn render_nodes(stack: &RocmStack) -> String {
    let renders: Vec<&DeviceNode> = stack
        .device_nodes
        .iter()
        .filter(|n| n.path.starts_with("/dev/dri/"))
        .collect();
    if renders.is_empty() {
        "/dev/dri: no render nodes either".to_string()
    } else {
        format!(
            "/dev/dri: {}",
            renders
                .iter()
                .map(|n| n.path.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// A container is given the devices (Kubernetes through AMD's device plugin); a host whose
/// kernel has no KFD boots one that has it; a host with KFD but no node has a udev problem.
fn kfd_fix(container: Option<&str>, stack: &RocmStack) -> String {
    match container {
        Some("kubernetes") => "Request the GPU from AMD's device plugin (`resources: {limits: \
             {amd.com/gpu: 1}}`, the ROCm k8s-device-plugin or GPU Operator on the node), which \
             passes /dev/kfd and the render node in."
            .to_string(),
        Some(runtime) => format!(
            "Start the {runtime} container with the devices: `{runtime} run --device=/dev/kfd \
             --device=/dev/dri --group-add video --group-add render ...` (add `--security-opt \
             seccomp=unconfined` as AMD's container docs do for ROCm images); Compose: `devices: \
             [/dev/kfd, /dev/dri]`."
        ),
        None if !stack.kfd_topology => "The running kernel's amdgpu has no KFD (built without \
             CONFIG_HSA_AMD): boot the distribution's standard kernel, or install AMD's \
             amdgpu-dkms (`sudo amdgpu-install --usecase=rocm`, see `gpu-doctor plan`) and \
             reboot. `sudo dmesg | grep -i kfd` shows what the driver said."
            .to_string(),
        None => "KFD is in the kernel (its topology is listed) but the device node was not \
             created: check udev (`sudo udevadm trigger`, a rule for KERNEL==\"kfd\") and \
             `sudo dmesg | grep -i kfd`, then reboot."
            .to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// rocm-gpu-unsupported

/// An AMD GPU ROCm cannot drive at all: its target is one amdkfd does not support (GCN 1,
/// Bonaire, Kabini: "not supported in kfd"), or one no current ROCm ships code for (GCN 2 to
/// 4: gfx7xx and gfx8xx, dropped in ROCm 4.0), or amdgpu drives it and KFD lists other GPUs but
/// not it. Reported when the machine wants GPU compute; a warning when another AMD GPU here is
/// usable, an error when none is.
fn gpu_unsupported(report: &Report, manifests: &Manifests) -> Option<Finding> {
    if !wants_amd_compute(report) {
        return None;
    }
    let kfd_topology = report.rocm.as_ref().is_some_and(|s| s.kfd_topology);
    let bad: Vec<(&Gpu, String)> = report
        .amd_gpus()
        .filter_map(|gpu| Some((gpu, unsupported_because(manifests, gpu, kfd_topology)?)))
        .collect();
    if bad.is_empty() {
        return None;
    }
    let usable_other = report
        .amd_gpus()
        .any(|g| g.source == "kfd" && !bad.iter().any(|(b, _)| b.index == g.index));
    let severity = if usable_other {
        Severity::Warning
    } else {
        Severity::Error
    };
    let dropped = bad.iter().all(|(g, _)| dropped_in_rocm4(manifests, g));
    let mut f = FindingBuilder::new(
        &ids::ROCM_GPU_UNSUPPORTED,
        severity,
        if bad.len() == 1 {
            format!("ROCm cannot run on {}", gpu_label(bad[0].0))
        } else {
            format!("ROCm cannot run on {} of the AMD GPUs", bad.len())
        },
    )
    .detail(if usable_other {
        "ROCm never uses this GPU; the other AMD GPU(s) here are the ones ROCm programs run on. \
         Hide it from ROCm so nothing tries it (HIP_VISIBLE_DEVICES)."
    } else if dropped {
        "ROCm dropped this GPU's target in 4.0: no current ROCm release (and so no current ROCm \
         build of PyTorch, ollama or llama.cpp) ships code for it, and HSA_OVERRIDE_GFX_VERSION \
         does not help (it only maps a GPU onto a sibling target of its own family, and there is \
         none here). The ROCm releases before 4.0 did run it."
    } else {
        "No ROCm release (and so no ROCm build of PyTorch, ollama or llama.cpp) can compute on \
         this GPU, whatever is installed: HSA_OVERRIDE_GFX_VERSION does not help (it only maps \
         a GPU onto a sibling target of its own family, and there is none here)."
    });
    for (gpu, why) in &bad {
        f = f.evidence(why.clone()).subject(gpu.subject());
    }
    let fix = if usable_other {
        let keep: Vec<String> = kfd_gpus(report)
            .iter()
            .filter(|g| !bad.iter().any(|(b, _)| b.index == g.index))
            .filter_map(|g| g.rocm_index.map(|i| i.to_string()))
            .collect();
        format!(
            "Run ROCm programs with the supported GPU(s) only: `export HIP_VISIBLE_DEVICES={}`.",
            keep.join(",")
        )
    } else {
        no_rocm_fix(dropped)
    };
    if !usable_other {
        for id in [
            &ids::ARCH_NOT_IN_BUILD,
            &ids::CUDA_BUILD_ON_AMD_GPU,
            &ids::CPU_ONLY_FRAMEWORK_BUILD,
            &ids::KFD_MISSING,
            &ids::ROCM_TOO_OLD_FOR_GPU,
            &ids::HSA_OVERRIDE_MISMATCH,
        ] {
            f = f.explains(id);
        }
    }
    Some(f.fix(fix).build())
}

/// Whether ROCm once ran this GPU and dropped it: a gfx7 or gfx8 target that amdkfd supports,
/// whose code ROCm stopped shipping in 4.0 (shared/reference/rocm.md: "gfx8 dropped in ROCm
/// 4.0"; ROCm/tensorflow-upstream#1305: RX 570, "wont get official support any more, since
/// ROCm-4.0 ... You can downgrade to ROCm-3.5.1"), as against a target KFD never drove.
fn dropped_in_rocm4(manifests: &Manifests, gpu: &Gpu) -> bool {
    let table = manifests.amd_gpu_ids.table();
    let never = gpu
        .gfx_target
        .as_deref()
        .and_then(|g| table.target(g))
        .is_some_and(|t| t.kfd == "no");
    !never
        && gpu
            .gfx_target
            .as_deref()
            .and_then(GfxTarget::parse)
            .is_some_and(|g| (7..=8).contains(&g.major))
}

/// What to do about a GPU no current ROCm runs: where an older ROCm did, say so (it is a path,
/// if an old one), then the backends that run on it today.
fn no_rocm_fix(dropped: bool) -> String {
    let others = "use a backend that runs on it (Vulkan in llama.cpp or ollama's Vulkan build, \
         OpenCL), run on the CPU, or use a GPU that current ROCm supports (`gpu-doctor advise`).";
    if dropped {
        format!(
            "Current ROCm has no path for this GPU, but the ROCm releases before 4.0 (ROCm 3.x; \
             users run these cards on ROCm 3.5.1) did, with the framework builds of that time \
             and a distribution and kernel those releases support. Otherwise {others}"
        )
    } else {
        format!("There is no ROCm path for this GPU: {others}")
    }
}

/// Why ROCm cannot drive this GPU, if it cannot: KFD does not support its target, no ROCm since
/// 4.0 ships code for gfx8 or older, or amdgpu drives it while the KFD topology (present) has
/// no node for it.
fn unsupported_because(manifests: &Manifests, gpu: &Gpu, kfd_topology: bool) -> Option<String> {
    let table = manifests.amd_gpu_ids.table();
    let target = gpu.gfx_target.as_deref().and_then(|g| table.target(g));
    let gfx = gpu.gfx_target.as_deref().and_then(GfxTarget::parse);
    if let Some(t) = target.filter(|t| t.kfd == "no") {
        Some(format!(
            "{} is {} ({}): the kernel's KFD has no support for it, so ROCm never sees it",
            gpu_label(gpu),
            t.family,
            t.gfx
        ))
    } else if let Some(g) = gfx.filter(|g| g.major <= 8) {
        Some(format!(
            "{} is {} ({g}): no ROCm release since 4.0 ships code for gfx8 or older",
            gpu_label(gpu),
            target.map_or("GCN", |t| t.family.as_str())
        ))
    } else if gpu.source != "kfd" && gpu.bound_driver.as_deref() == Some("amdgpu") && kfd_topology {
        Some(format!(
            "{}: amdgpu drives it, but the KFD topology has no node for it (the kernel log \
             says why: \"not supported in kfd\", or \"PCI rejects atomics\" on a slot \
             without PCIe atomics)",
            gpu_label(gpu)
        ))
    } else {
        None
    }
}

// ---------------------------------------------------------------------------------------------
// rocm-device-permission

/// `/dev/kfd` or an AMD GPU's render node is there, but its mode and group do not let this
/// (non-root) user open it read-write: ROCm then reports no GPU ("Unable to open /dev/kfd
/// read-write: Permission denied"; ollama: "permission denied ... /dev/kfd"). The fix AMD and
/// the distributions give is membership in the node's group (`render`, on older udev rules
/// `video`) and a new login.
fn device_permission(report: &Report) -> Option<Finding> {
    let stack = report.rocm.as_ref()?;
    let user = stack.user.as_ref()?;
    let ours: Vec<&str> = report
        .amd_gpus()
        .filter_map(|g| g.render_node.as_deref())
        .collect();
    let denied: Vec<&DeviceNode> = stack
        .device_nodes
        .iter()
        .filter(|n| n.accessible == Some(false))
        .filter(|n| n.path == "/dev/kfd" || ours.is_empty() || ours.contains(&n.path.as_str()))
        .collect();
    if denied.is_empty() || (report.amd_gpus().next().is_none() && !rocm_installed(report)) {
        return None;
    }
    let who = user
        .name
        .clone()
        .or_else(|| user.uid.map(|u| format!("uid {u}")))
        .unwrap_or_else(|| "this user".to_string());
    let mut groups: Vec<String> = denied.iter().filter_map(|n| n.group.clone()).collect();
    groups.sort();
    groups.dedup();
    let mut f = FindingBuilder::new(
        &ids::ROCM_DEVICE_PERMISSION,
        Severity::Error,
        format!(
            "{who} may not open {}: ROCm sees no GPU",
            denied
                .iter()
                .map(|n| n.path.as_str())
                .collect::<Vec<_>>()
                .join(" and ")
        ),
    )
    .detail(
        "ROCm opens /dev/kfd and the GPU's /dev/dri/renderD* read-write. Their permissions let \
         only root and members of their group do that, and this user is neither, so every ROCm \
         program (PyTorch, ollama, llama.cpp) finds no GPU or fails with \"Permission denied\".",
    );
    for n in &denied {
        f = f
            .evidence(format!(
                "{}: mode {} owner uid {} group {}",
                n.path,
                n.mode.as_deref().unwrap_or("?"),
                n.uid.map_or_else(|| "?".to_string(), |u| u.to_string()),
                n.group
                    .clone()
                    .or_else(|| n.gid.map(|g| format!("gid {g}")))
                    .unwrap_or_else(|| "?".to_string())
            ))
            .subject(Subject::Device(n.path.clone()));
    }
    f = f.evidence(format!(
        "{who}: groups {}",
        if user.groups.is_empty() {
            "(none)".to_string()
        } else {
            user.groups.join(", ")
        }
    ));
    let pending: Vec<&String> = user
        .pending_groups
        .iter()
        .filter(|g| groups.contains(g))
        .collect();
    for g in &pending {
        f = f.evidence(format!(
            "/etc/group lists {who} in {g}, but this login session does not have it yet"
        ));
    }
    let fix = permission_fix(report, &who, &groups, &pending);
    Some(f.fix(fix).explains(&ids::ROCM_IGPU_VISIBLE).build())
}

/// In a container the user gets the node's group from the runtime; a user already added to it
/// needs only a new login; anyone else joins the groups (`render`, and `video` of older udev
/// rules, besides the nodes' own), as does a service's user.
fn permission_fix(report: &Report, who: &str, groups: &[String], pending: &[&String]) -> String {
    let add = if groups.is_empty() {
        "render,video".to_string()
    } else {
        let mut all = groups.to_vec();
        for g in ["render", "video"] {
            if !all.iter().any(|x| x == g) {
                all.push(g.to_string());
            }
        }
        all.join(",")
    };
    match report.host.container.as_deref() {
        Some(runtime) => format!(
            "Give the container's user the device group: `{runtime} run --group-add video \
             --group-add render ...` (or the host's numeric gid of the node's group, \
             `--group-add $(getent group render | cut -d: -f3)`, when the image has no render \
             group), or run as root."
        ),
        None if !pending.is_empty() => format!(
            "{who} was already added to {}: log out and in again (or run `newgrp {}`) so the \
             session gets the group.",
            pending
                .iter()
                .map(|g| g.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            pending.first().map_or("render", |g| g.as_str())
        ),
        None => format!(
            "Add the user to the device groups and log in again: `sudo usermod -aG {add} \
             $USER`. For a service (ollama, a Jupyter server), add its user instead: `sudo \
             usermod -aG {add} <service-user>` and restart it."
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// rocm-too-old-for-gpu

/// The ROCm that `/opt/rocm` points at predates the GPU's target (RDNA 4 before ROCm 6.4.1,
/// MI350 before 7.0): its runtime and libraries have no code for it. An error when something
/// here uses that install (no ROCm framework brings its own runtime), a warning when the
/// frameworks bundle theirs and only tools built against `/opt/rocm` are affected.
fn rocm_too_old(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let stack: &RocmStack = report.rocm.as_ref()?;
    let install = stack
        .default_install
        .as_deref()
        .and_then(|d| stack.installs.iter().find(|i| i.path == d))
        .or_else(|| {
            stack.installs.iter().max_by(|a, b| {
                compare(
                    a.version.as_deref().unwrap_or(""),
                    b.version.as_deref().unwrap_or(""),
                )
            })
        })?;
    let version_text = install.version.as_deref()?;
    let version = Version::parse(version_text)?;
    let mut late: Vec<(&Gpu, &str)> = Vec::new();
    for gpu in report.amd_gpus() {
        let Some(gfx) = gpu.gfx_target.as_deref() else {
            continue;
        };
        if let Some(first) = manifests.rocm.first_release(gfx)
            && Version::parse(&first.rocm).is_some_and(|f| version < f)
        {
            late.push((gpu, first.rocm.as_str()));
        }
    }
    let (_, need) = *late.iter().max_by(|a, b| compare(a.1, b.1))?;
    let bundled = report
        .python_envs
        .iter()
        .flat_map(|e| &e.frameworks)
        .any(|f| f.variant.as_deref() == Some("rocm") && !f.bundled_runtime.is_empty());
    let severity = if bundled {
        Severity::Warning
    } else {
        Severity::Error
    };
    let mut f = FindingBuilder::new(
        &ids::ROCM_TOO_OLD_FOR_GPU,
        severity,
        format!(
            "ROCm {version_text} in {} predates {}: it needs ROCm {need} or newer",
            install.path,
            late.iter()
                .map(|(g, _)| gpu_label(g))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .detail(
        "The installed ROCm was released before this GPU: its runtime and math libraries carry \
         no code for the GPU's target, so programs built against it fail on the GPU \
         (\"invalid device function\", hipErrorNoBinaryForGpu) or do not list it.",
    )
    .evidence(format!("{}: ROCm {version_text}", install.path));
    for (gpu, first) in &late {
        f = f
            .evidence(format!(
                "{}: first supported by ROCm {first} (rocm.toml)",
                gpu_label(gpu)
            ))
            .subject(gpu.subject());
    }
    if !install.rocblas_targets.is_empty() {
        f = f.evidence(format!(
            "{}/lib/rocblas/library has kernels for: {}",
            install.path,
            install.rocblas_targets.join(" ")
        ));
    }
    if bundled {
        f = f.evidence(
            "the ROCm builds of the Python frameworks here bring their own runtime: they are not affected",
        );
    }
    if !bundled {
        f = f.explains(&ids::ARCH_NOT_IN_BUILD);
    }
    Some(
        f.fix(format!(
            "Install ROCm {need} or newer with AMD's installer (`amdgpu-install` from \
             repo.radeon.com; `gpu-doctor plan` writes the steps), so that /opt/rocm points at it."
        ))
        .build(),
    )
}

/// A PCI address as its spellings (`0000:03:00.0`, `00000000:03:00.0`) compare equal: lower
/// case, the domain's leading zeros gone.
fn address_key(x: &str) -> String {
    let x = x.to_ascii_lowercase();
    match x.split_once(':') {
        Some((domain, rest)) => format!("{}:{rest}", domain.trim_start_matches('0')),
        None => x,
    }
}
