//! The choices an AMD plan is made of before any step: what an AMD plan refuses, the GPUs'
//! gfx targets, the machine in the plan's words, and the ROCm release to install.

use crate::framework::FrameworkName;
use crate::manifest::Manifests;
use crate::report::{Gpu, Report};
use crate::version::GfxTarget;

use super::RocmChoice;
use crate::plan::machine::GpuFact;
use crate::plan::{Machine, Target, Via};

/// `--cuda`, `--cudnn`, `--driver R`, `--via conda` and frameworks other than PyTorch are for
/// NVIDIA's stack (or have no ROCm data in the tables): refused with what to ask instead.
pub(super) fn refuse_nvidia_only(target: &Target, via: Via) -> Result<(), String> {
    if target.cuda.is_some()
        || target.cudnn.is_some()
        || matches!(target.driver, crate::plan::DriverChoice::Branch(_))
    {
        return Err(
            "--cuda, --cudnn and --driver choose NVIDIA's CUDA stack, and this machine's GPUs are \
             AMD: plan ROCm without them (`gpu-doctor plan`, `gpu-doctor plan --framework torch`)"
                .to_string(),
        );
    }
    if via == Via::Conda {
        return Err(
            "conda plans are made for NVIDIA's CUDA stack: PyTorch's ROCm builds come from its pip \
             index; use --via pip (the wheel only) or --via apt (ROCm and the wheel)"
                .to_string(),
        );
    }
    if let Some(fw) = &target.framework
        && fw.name != FrameworkName::Torch
    {
        return Err(format!(
            "gpu-doctor's tables hold ROCm wheel data for PyTorch only; {}'s ROCm builds are not \
             planned (rocm.toml gaps)",
            fw.name.as_str()
        ));
    }
    Ok(())
}

/// The gfx targets of the GPUs ROCm programs run on, deduplicated; none (WSL, or only signs of
/// an AMD GPU) or one no ROCm runs is a refusal with the reason.
pub(super) fn gfx_targets(report: &Report, m: &Manifests) -> Result<Vec<String>, String> {
    let gpus = target_gpus(report);
    if gpus.is_empty() {
        return Err(if report.host.wsl {
            format!(
                "under WSL the AMD GPU is reached through the Windows driver, and its gfx target \
                 cannot be read here, so no ROCm release or wheel can be chosen for it: follow \
                 AMD's ROCm-on-WSL guide (the Windows Adrenalin driver it names, then \
                 `amdgpu-install -y --usecase={} --no-dkms` from a ROCm release whose WSL \
                 support matrix lists the GPU)",
                m.rocm.install.usecase_wsl
            )
        } else {
            "no AMD GPU is on the PCI bus of this machine (only signs of one: the amdgpu \
             module, /dev/kfd or a ROCm install), so no ROCm release can be chosen for it"
                .to_string()
        });
    }
    for g in &gpus {
        if let Some(why) = unsupported(m, g) {
            return Err(why);
        }
    }
    let mut targets: Vec<String> = gpus.iter().filter_map(|g| g.gfx_target.clone()).collect();
    targets.dedup();
    Ok(targets)
}

/// The plan's view of the machine: its AMD GPUs with their targets, the driver in words.
pub(super) fn machine(report: &Report, m: &Manifests) -> Machine {
    let mut machine = Machine::from_report(report, m);
    machine.gpus = report
        .amd_gpus()
        .map(|g| GpuFact {
            index: g.index,
            name: g.name.clone(),
            compute_capability: None,
            architecture: g.architecture.clone(),
            pci_device_id: g.pci_device_id.clone(),
            gfx_target: Some(
                g.gfx_target
                    .clone()
                    .unwrap_or_else(|| "gfx unknown".to_string()),
            ),
            first_driver: None,
            identity_note: g.identity_note.clone(),
        })
        .collect();
    let module = report.rocm.as_ref().map_or("amdgpu", |s| {
        if report.host.wsl {
            return "the Windows driver (WSL)";
        }
        match (s.amdgpu.loaded, s.amdgpu.kind.as_deref()) {
            (false, _) => "amdgpu not loaded",
            (true, Some("dkms")) => "amdgpu-dkms",
            _ => "amdgpu (the kernel's own)",
        }
    });
    machine.amd_driver = Some(match &report.kernel.rocm_version {
        Some(v) => format!("{module}, ROCm {v} in /opt/rocm"),
        None => format!("{module}, no ROCm installed"),
    });
    machine
}

/// The GPUs ROCm programs would run on: an APU's iGPU beside a discrete GPU is left out (it is
/// hidden with HIP_VISIBLE_DEVICES, not planned for).
pub(super) fn target_gpus(report: &Report) -> Vec<&Gpu> {
    let all: Vec<&Gpu> = report.amd_gpus().collect();
    let discrete = all.iter().any(|g| g.integrated == Some(false));
    all.into_iter()
        .filter(|g| !(discrete && g.integrated == Some(true)))
        .collect()
}

/// Why no ROCm can run on a GPU, when none can.
pub(super) fn unsupported(m: &Manifests, g: &Gpu) -> Option<String> {
    let name = g.name.as_deref().unwrap_or("AMD GPU");
    let Some(gfx) = g.gfx_target.as_deref() else {
        return Some(format!(
            "the gfx target of GPU {} ({name}, {}) is not known, so no ROCm release or wheel can be \
             chosen for it: with amdgpu loaded, `rocminfo | grep gfx` names it",
            g.index,
            g.pci_device_id.as_deref().unwrap_or("no PCI id")
        ));
    };
    let target = m.amd_gpu_ids.table().target(gfx);
    if let Some(t) = target.filter(|t| t.kfd == "no") {
        return Some(format!(
            "no ROCm release runs on GPU {} ({name}, {gfx}, {}): the kernel's KFD, through which \
             ROCm reaches a GPU, does not drive it; use a Vulkan or OpenCL backend, or another GPU",
            g.index, t.family
        ));
    }
    if GfxTarget::parse(gfx).is_some_and(|t| t.major <= 8) {
        return Some(format!(
            "no ROCm release runs on GPU {} ({name}, {gfx}): ROCm dropped gfx8 and older in 4.0 \
             (rocm.toml no_override); use a Vulkan or OpenCL backend, or another GPU",
            g.index
        ));
    }
    None
}

/// Ubuntu's code name from `--os` or the machine.
pub(super) fn codename(report: &Report, target: &Target) -> Result<String, String> {
    let wanted = match &target.os {
        Some(os) => os.clone(),
        None => format!(
            "{}-{}",
            report.host.os_id.as_deref().unwrap_or("unknown"),
            report.host.os_version.as_deref().unwrap_or("")
        ),
    };
    match wanted.as_str() {
        "ubuntu-22.04" => Ok("jammy".to_string()),
        "ubuntu-24.04" => Ok("noble".to_string()),
        other => Err(format!(
            "AMD plans are written for Ubuntu 22.04 and 24.04 (the amdgpu-install packages of \
             rocm.toml), and this is {other}: pass --os ubuntu-22.04 or --os ubuntu-24.04, or \
             install ROCm as AMD documents it for your distribution"
        )),
    }
}

/// `Some(())` when a ROCm release lists the target itself, or its sibling through the
/// maintainers' override.
pub(super) fn supported_by_release(m: &Manifests, rocm: &str, gfx: &str) -> Option<()> {
    let release = m.rocm.release(rocm)?;
    if release.targets.iter().any(|t| t == gfx) {
        return Some(());
    }
    sibling_release(m, rocm, gfx).map(|_| ())
}

/// `(family, value)` when the release lists only the target's override sibling.
pub(super) fn sibling_release(m: &Manifests, rocm: &str, gfx: &str) -> Option<(String, String)> {
    let release = m.rocm.release(rocm)?;
    if release.targets.iter().any(|t| t == gfx) {
        return None;
    }
    let group = m.rocm.override_group(gfx)?;
    let sibling = GfxTarget::from_override(&group.value)?.to_string();
    release
        .targets
        .contains(&sibling)
        .then(|| (group.family.clone(), group.value.clone()))
}

/// The newest ROCm with an installer for this Ubuntu whose list has every target (or its
/// sibling); how to run it: the use case for the GPU kind, and `--no-dkms` while a working
/// amdgpu driver (with /dev/kfd) is there.
pub(super) fn choose_rocm<'m>(
    report: &Report,
    m: &'m Manifests,
    codename: String,
    targets: &[String],
) -> Result<RocmChoice<'m>, String> {
    let installer = m
        .rocm
        .installers
        .iter()
        .rev()
        .filter(|i| i.codenames.contains(&codename))
        .find(|i| {
            targets
                .iter()
                .all(|t| supported_by_release(m, &i.rocm, t).is_some())
        })
        .ok_or_else(|| {
            let reasons: Vec<String> = targets
                .iter()
                .map(|t| match m.rocm.no_override(t) {
                    Some(n) => format!(
                        "{t} is in the official list of no ROCm release rocm.toml holds, and \
                         HSA_OVERRIDE_GFX_VERSION is no way round it: {}",
                        n.reason
                    ),
                    None => format!(
                        "{t} is in the official list of no ROCm release rocm.toml holds, nor is \
                         a sibling of one"
                    ),
                })
                .collect();
            let pip = targets
                .iter()
                .all(|t| m.rocm.torch_wheel(&m.frameworks, None, t, None).is_some());
            format!(
                "no ROCm release with an amdgpu-install package for Ubuntu {codename} supports \
                 this GPU ({}){}",
                reasons.join("; "),
                if pip {
                    "; PyTorch's ROCm wheels bring their own runtime and carry it: --via pip \
                     --framework torch plans that alone"
                } else {
                    ""
                }
            )
        })?;
    // Instinct accelerators (class 0380) and containers compute only: no graphics use case.
    let compute_only = report.host.container.is_some()
        || report
            .pci_devices
            .iter()
            .any(|d| d.vendor == "amd" && d.class.starts_with("0x0380"));
    let usecase = if compute_only {
        m.rocm.install.usecase_instinct.clone()
    } else {
        m.rocm.install.usecase_radeon.clone()
    };
    let working =
        report.kernel.amdgpu_loaded && report.kernel.device_nodes.iter().any(|n| n == "/dev/kfd");
    Ok(RocmChoice {
        installer,
        codename,
        usecase,
        no_dkms: working || report.host.container.is_some(),
    })
}
