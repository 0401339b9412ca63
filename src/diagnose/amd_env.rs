//! How the environment steers ROCm away from the GPU: device masks that select nothing
//! (`HIP_VISIBLE_DEVICES`, `ROCR_VISIBLE_DEVICES`, and `CUDA_VISIBLE_DEVICES`, which HIP
//! honours), an integrated GPU left visible beside a discrete one, an
//! `HSA_OVERRIDE_GFX_VERSION` that names another family's target, a ROCm torch under WSL with
//! its own HSA runtime instead of WSL's, and a system ROCm on `LD_LIBRARY_PATH` before a wheel's
//! bundled runtime. Findings: `visible-devices-hides-gpus`, `rocm-igpu-visible`,
//! `hsa-override-mismatch`, `wsl-rocm-runtime-bundled`, `library-path-shadowing`.

use super::FindingBuilder;
use super::amd::{gpu_label, kfd_gpus, wants_amd_compute};
use super::ids;
use crate::framework::FrameworkName;
use crate::manifest::Manifests;
use crate::parse::visible_devices::{self, Entry};
use crate::report::Subject;
use crate::report::{Finding, Framework, Gpu, PythonEnv, Report, Severity, framework_subject};
use crate::version::{GfxTarget, Version};

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(visible_devices(report));
    out.extend(igpu_visible(report));
    out.extend(override_mismatch(report, manifests));
    out.extend(wsl_runtime(report));
    out.extend(shadowing(report));
    out
}

// ---------------------------------------------------------------------------------------------
// Which AMD GPUs a ROCm program sees

/// The masks ROCm applies, in its order: `ROCR_VISIBLE_DEVICES` picks from the KFD GPUs, then
/// `HIP_VISIBLE_DEVICES` (or, when it is unset, `CUDA_VISIBLE_DEVICES`) picks from what is left.
/// `CUDA_VISIBLE_DEVICES` is counted only on a machine without NVIDIA GPUs, where it can only
/// be meant for HIP.
fn masks(report: &Report) -> Vec<(&'static str, &str)> {
    let mut out = Vec::new();
    if let Some(v) = super::env_var(report, "ROCR_VISIBLE_DEVICES") {
        out.push(("ROCR_VISIBLE_DEVICES", v));
    }
    if let Some(v) = super::env_var(report, "HIP_VISIBLE_DEVICES") {
        out.push(("HIP_VISIBLE_DEVICES", v));
    } else if !report.has_nvidia_gpu()
        && let Some(v) = super::env_var(report, "CUDA_VISIBLE_DEVICES")
    {
        out.push(("CUDA_VISIBLE_DEVICES", v));
    }
    out
}

/// What the masks leave visible, as positions in the KFD GPU list, and the first entry that
/// selects nothing (variable, entry, why). ROCm, like CUDA, stops reading a list at such an
/// entry. `None` when an entry cannot be judged (a UUID): then nothing is claimed.
struct Visible {
    gpus: Vec<usize>,
    bad: Option<(&'static str, String, String)>,
    /// Entries after a bad one that named real GPUs: hidden by the stop.
    lost_after_bad: bool,
}

/// Whether ROCm programs see the AMD GPU of ROCm number `rocm_index` through the masks; true
/// when no mask is set or one cannot be judged (a UUID), and for a GPU ROCm does not number.
pub(super) fn rocm_sees(report: &Report, rocm_index: Option<u32>) -> bool {
    let Some(index) = rocm_index else {
        return true;
    };
    let count = report.amd_gpus().filter(|g| g.rocm_index.is_some()).count();
    visible(report, count).is_none_or(|v| usize::try_from(index).is_ok_and(|i| v.gpus.contains(&i)))
}

fn visible(report: &Report, count: usize) -> Option<Visible> {
    let mut current: Vec<usize> = (0..count).collect();
    let mut bad = None;
    let mut lost_after_bad = false;
    for (var, value) in masks(report) {
        let entries = visible_devices::entries(value);
        if entries.is_empty() {
            if bad.is_none() {
                bad = Some((
                    var,
                    value.to_string(),
                    format!("{var} is set but empty: ROCm sees no GPU"),
                ));
            }
            current.clear();
            continue;
        }
        let mut next = Vec::new();
        let mut stopped = false;
        for (raw, entry) in &entries {
            let pick = match entry {
                Entry::Index(i) if *i < current.len() => current.get(*i).copied(),
                Entry::GpuUuid(_) | Entry::Mig => return None,
                _ => None,
            };
            match (pick, stopped) {
                (Some(p), false) => next.push(p),
                (Some(_), true) => lost_after_bad = true,
                (None, false) => {
                    stopped = true;
                    if bad.is_none() {
                        let why = match entry {
                            Entry::Index(i) => format!(
                                "`{raw}` in {var} is index {i}, but ROCm has {} GPU(s) to choose from there, numbered 0 to {}",
                                current.len(),
                                current.len().saturating_sub(1)
                            ),
                            Entry::Negative => {
                                format!("`{raw}` in {var} is a negative index: it selects no GPU")
                            }
                            _ => format!("`{raw}` in {var} is not a GPU index"),
                        };
                        bad = Some((var, value.to_string(), why));
                    }
                }
                (None, true) => {}
            }
        }
        current = next;
    }
    Some(Visible {
        gpus: current,
        bad,
        lost_after_bad,
    })
}

/// `HIP_VISIBLE_DEVICES`, `ROCR_VISIBLE_DEVICES` or (with no NVIDIA GPU) `CUDA_VISIBLE_DEVICES`
/// that leave ROCm no GPU, or stop at an entry that selects nothing before entries that name
/// real GPUs. A valid mask that hides some GPUs on purpose (the iGPU) is not a problem.
fn visible_devices(report: &Report) -> Option<Finding> {
    let gpus = kfd_gpus(report);
    if gpus.is_empty() {
        return None;
    }
    let seen = visible(report, gpus.len())?;
    let (var, value, why) = seen.bad.clone()?;
    if !seen.gpus.is_empty() && !seen.lost_after_bad {
        return None;
    }
    let mut f = FindingBuilder::new(
        &ids::VISIBLE_DEVICES_HIDES_GPUS,
        Severity::Error,
        format!("{var} hides the AMD GPUs from ROCm programs"),
    )
    .detail(
        "A variable that selects GPUs for ROCm selects none (or fewer than it names), so PyTorch \
         and other HIP programs see no GPU (torch.cuda.is_available() is False, \
         hipErrorNoDevice) and fall back to the CPU. If you meant to run on the CPU, this is \
         expected.",
    )
    .evidence(format!("{var}={value}"))
    .evidence(why)
    .subject(Subject::EnvVar(var.to_string()));
    let visible: std::collections::HashSet<usize> = seen.gpus.iter().copied().collect();
    for (i, gpu) in gpus.iter().enumerate() {
        if !visible.contains(&i) {
            f = f
                .evidence(format!("hidden: {}", gpu_label(gpu)))
                .subject(gpu.subject());
        }
    }
    let last = gpus.len().saturating_sub(1);
    let stacked = masks(report).len() > 1;
    let fix = if stacked {
        format!(
            "ROCm applies ROCR_VISIBLE_DEVICES first and then numbers what is left from 0 for \
             HIP_VISIBLE_DEVICES / CUDA_VISIBLE_DEVICES, so the two together select nothing. Set \
             only ROCR_VISIBLE_DEVICES (indices 0 to {last} of this machine's AMD GPUs) and unset \
             the other (`unset {}`), or set the second to 0.",
            masks(report).get(1).map_or("HIP_VISIBLE_DEVICES", |m| m.0)
        )
    } else {
        format!(
            "Unset it (`unset {var}`) or name GPUs that exist: ROCm numbers this machine's AMD \
             GPUs 0 to {last} (`rocm-smi` or `amd-smi list` shows them). Look for where it is \
             set: a shell profile, a service's environment, a container's `ENV`."
        )
    };
    Some(f.fix(fix).explains(&ids::ROCM_IGPU_VISIBLE).build())
}

// ---------------------------------------------------------------------------------------------
// rocm-igpu-visible

/// KFD exposes an APU's integrated GPU beside a discrete one, and no mask hides it: HIP then
/// counts the iGPU as a device (often device 0), and frameworks that use every device or pick
/// the first hit "shared object initialization failed", page faults, or run on the slow iGPU
/// (pytorch/pytorch#111601; TheRock#5543). The maintainers' fix: hide it with
/// `HIP_VISIBLE_DEVICES`, exported before the process starts.
fn igpu_visible(report: &Report) -> Option<Finding> {
    if !wants_amd_compute(report) {
        return None;
    }
    let gpus = kfd_gpus(report);
    let seen = visible(report, gpus.len())?;
    let shown: Vec<&Gpu> = seen
        .gpus
        .iter()
        .filter_map(|i| gpus.get(*i).copied())
        .collect();
    let igpus: Vec<&&Gpu> = shown
        .iter()
        .filter(|g| g.integrated == Some(true))
        .collect();
    let dgpus: Vec<&&Gpu> = shown
        .iter()
        .filter(|g| g.integrated == Some(false))
        .collect();
    if igpus.is_empty() || dgpus.is_empty() {
        return None;
    }
    let keep: Vec<String> = gpus
        .iter()
        .filter(|g| g.integrated == Some(false))
        .filter_map(|g| g.rocm_index.map(|i| i.to_string()))
        .collect();
    let mut f = FindingBuilder::new(
        &ids::ROCM_IGPU_VISIBLE,
        Severity::Warning,
        format!(
            "ROCm sees the integrated GPU ({}) next to the discrete one",
            igpus
                .iter()
                .map(|g| g.name.as_deref().unwrap_or("iGPU"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .detail(
        "The processor's integrated GPU is a ROCm device too. Programs that use all devices, or \
         take device 0, end up on the iGPU, which the ROCm builds usually carry no code for: \
         \"HIP error: invalid device function\", \"shared object initialization failed\", page \
         faults, or a crawl. Hiding it for ROCm leaves the display untouched.",
    );
    for g in &shown {
        f = f
            .evidence(format!(
                "ROCm device {}: {}{}",
                g.rocm_index
                    .map_or_else(|| "?".to_string(), |i| i.to_string()),
                gpu_label(g),
                if g.integrated == Some(true) {
                    " (integrated)"
                } else {
                    " (discrete)"
                }
            ))
            .subject(g.subject());
    }
    f = f.evidence(if masks(report).is_empty() {
        "HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES are not set".to_string()
    } else {
        "the ROCm masks set leave the integrated GPU visible".to_string()
    });
    Some(
        f.fix(format!(
            "Hide the iGPU from ROCm before starting the program: `export HIP_VISIBLE_DEVICES={}` \
             (in the shell profile, or `Environment=HIP_VISIBLE_DEVICES={}` in a systemd \
             service such as ollama's); setting it inside Python after import is too late. Or \
             disable the integrated graphics in the firmware (UEFI) settings.",
            keep.join(","),
            keep.join(",")
        ))
        .build(),
    )
}

// ---------------------------------------------------------------------------------------------
// hsa-override-mismatch

/// `HSA_OVERRIDE_GFX_VERSION` makes the ROCm runtime treat every GPU as the named target and
/// load that target's code. It works only for a sibling target of the GPU's own family, in the
/// mappings the maintainers give (RDNA 2 as 10.3.0, RDNA 3 dGPUs as 11.0.0). An error when the
/// value is malformed or names another family's target for some GPU (10.3.0 on an RX 7900;
/// 11.0.0 on a 780M iGPU); a warning when a ROCm build here already carries the GPU's own
/// target, so the override only forces foreign code onto it.
fn override_mismatch(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let value = super::env_var(report, "HSA_OVERRIDE_GFX_VERSION")?;
    let gpus: Vec<&Gpu> = report
        .amd_gpus()
        .filter(|g| g.gfx_target.is_some())
        .collect();
    if value.trim().is_empty() || (gpus.is_empty() && !wants_amd_compute(report)) {
        return None;
    }
    let Some(target) = GfxTarget::from_override(value) else {
        return Some(malformed_override(value));
    };
    let named = target.to_string();
    let Misfits { wrong, needless } = misfits(report, manifests, &gpus, target);
    if wrong.is_empty() && needless.is_empty() {
        return None;
    }
    let error = !wrong.is_empty();
    let mut f = FindingBuilder::new(
        &ids::HSA_OVERRIDE_MISMATCH,
        if error { Severity::Error } else { Severity::Warning },
        if error {
            format!(
                "HSA_OVERRIDE_GFX_VERSION={value} ({named}) does not fit {}",
                wrong
                    .iter()
                    .map(|(g, _)| gpu_label(g))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            format!("HSA_OVERRIDE_GFX_VERSION={value} is set although the build carries the GPU's own target")
        },
    )
    .detail(if error {
        "HSA_OVERRIDE_GFX_VERSION makes ROCm run code built for the named target on every GPU. \
         That only works between sibling targets of one family; here it names another target, \
         so kernels fail (\"invalid device function\"), produce garbage, fault the GPU or hang \
         the machine."
    } else {
        "The override is a workaround for builds without the GPU's target. This build has the \
         target, so the override only makes ROCm run code made for a sibling GPU instead of the \
         GPU's own, which is slower at best."
    })
    .evidence(format!("HSA_OVERRIDE_GFX_VERSION={value}: ROCm treats every GPU as {named}"))
    .subject(Subject::EnvVar("HSA_OVERRIDE_GFX_VERSION".into()));
    for (gpu, why) in wrong.iter().chain(needless.iter()) {
        f = f
            .evidence(format!("{}: {why}", gpu_label(gpu)))
            .subject(gpu.subject());
    }
    let fix = if error {
        override_fix(manifests, &wrong)
    } else {
        "Unset it (`unset HSA_OVERRIDE_GFX_VERSION`): the build runs the GPU with its own code."
            .to_string()
    };
    Some(f.fix(fix).build())
}

/// A value that is not three numbers naming a target: ROCm rejects or misreads it on any GPU,
/// so it is an error before any GPU is looked at.
fn malformed_override(value: &str) -> Finding {
    FindingBuilder::new(
        &ids::HSA_OVERRIDE_MISMATCH,
        Severity::Error,
        format!("HSA_OVERRIDE_GFX_VERSION={value} is not a valid value"),
    )
    .detail(
        "The value must be three decimal numbers, major.minor.stepping, naming a gfx \
         target (10.3.0 is gfx1030, 11.0.0 is gfx1100). ROCm rejects or misreads this \
         one, so programs fail to start on the GPU or ignore it.",
    )
    .evidence(format!("HSA_OVERRIDE_GFX_VERSION={value}"))
    .subject(Subject::EnvVar("HSA_OVERRIDE_GFX_VERSION".into()))
    .fix(
        "Unset it (`unset HSA_OVERRIDE_GFX_VERSION`, and remove it from where it is set: \
         a shell profile, a service's Environment=), or set a value of the form 11.0.0.",
    )
    .build()
}

/// The GPUs a valid override does not fit, each with why. `wrong`: it names a target outside
/// the GPU's own override group (an error). `needless`: it fits, but a ROCm build here carries
/// the GPU's own target, so it only swaps in a sibling's code (a warning).
struct Misfits<'a> {
    wrong: Vec<(&'a Gpu, String)>,
    needless: Vec<(&'a Gpu, String)>,
}

fn misfits<'a>(
    report: &Report,
    manifests: &Manifests,
    gpus: &[&'a Gpu],
    target: GfxTarget,
) -> Misfits<'a> {
    let table = &manifests.rocm;
    let named = target.to_string();
    let mut wrong: Vec<(&Gpu, String)> = Vec::new();
    let mut needless: Vec<(&Gpu, String)> = Vec::new();
    for &gpu in gpus {
        let Some(own) = gpu.gfx_target.as_deref() else {
            continue;
        };
        if own == named {
            continue;
        }
        if !override_fits(manifests, own, target) {
            let why = match table.no_override(own) {
                Some(n) => n.reason.clone(),
                None => format!(
                    "{own} and {named} are different targets{}: the code built for {named} does \
                     not run correctly on {own}",
                    family_words(manifests, own, &named)
                ),
            };
            wrong.push((gpu, why));
        } else if let Some((env, fw)) = carrier(report, own) {
            needless.push((
                gpu,
                format!("{} in {} carries {own} itself", label(fw), env.path),
            ));
        }
    }
    Misfits { wrong, needless }
}

/// Whether `HSA_OVERRIDE_GFX_VERSION` naming `named` fits a GPU of target `own`: the GPU's own
/// target, or the sibling its family's override group gives (`rocm.toml` `[[override_group]]`).
/// A misfit is `hsa-override-mismatch`'s; the library and build rules then judge the GPU's own
/// target, not the foreign one (ROCm/rocm-systems#3531: 12.0.1 on a gfx1151).
pub(super) fn override_fits(manifests: &Manifests, own: &str, named: GfxTarget) -> bool {
    own == named.to_string()
        || manifests
            .rocm
            .override_group(own)
            .is_some_and(|g| GfxTarget::from_override(&g.value) == Some(named))
}

/// Unset the override; where a GPU's own family has an override value, offer that instead,
/// else a build that carries the GPU's own target.
fn override_fix(manifests: &Manifests, wrong: &[(&Gpu, String)]) -> String {
    let proper: Vec<String> = wrong
        .iter()
        .filter_map(|(g, _)| {
            let own = g.gfx_target.as_deref()?;
            manifests.rocm.override_group(own).map(|grp| {
                format!(
                    "{own} runs as HSA_OVERRIDE_GFX_VERSION={} ({} family)",
                    grp.value, grp.family
                )
            })
        })
        .collect();
    let mut text = "Unset it (`unset HSA_OVERRIDE_GFX_VERSION`; remove it from the shell \
                    profile or the service's Environment= too)"
        .to_string();
    if proper.is_empty() {
        text.push_str(" and install a build that carries the GPU's own target (see `arch-not-in-build`, `gpu-doctor plan`).");
    } else {
        text.push_str(&format!(
            ", or set the value of the GPU's own family: {}.",
            proper.join("; ")
        ));
    }
    text
}

/// " (RDNA 3 and RDNA 2)" when the table knows both families.
fn family_words(manifests: &Manifests, own: &str, named: &str) -> String {
    let t = manifests.amd_gpu_ids.table();
    match (t.target(own), t.target(named)) {
        (Some(a), Some(b)) if a.family != b.family => {
            format!(" of different families ({} and {})", a.family, b.family)
        }
        _ => String::new(),
    }
}

/// A ROCm framework build here whose files carry `gfx`.
fn carrier<'a>(report: &'a Report, gfx: &str) -> Option<(&'a PythonEnv, &'a Framework)> {
    report.python_envs.iter().find_map(|env| {
        env.frameworks
            .iter()
            .find(|f| {
                f.variant.as_deref() == Some("rocm") && f.gfx_targets.iter().any(|t| t == gfx)
            })
            .map(|f| (env, f))
    })
}

fn label(fw: &Framework) -> String {
    format!(
        "{} {}",
        fw.name,
        fw.version.as_deref().unwrap_or("(version unknown)")
    )
}

// ---------------------------------------------------------------------------------------------
// wsl-rocm-runtime-bundled

/// Under WSL2 the GPU is reached through `/dev/dxg` and the WSL build of the HSA runtime that
/// AMD's ROCm-for-WSL installs in `/opt/rocm/lib`; a ROCm torch that loads its own bundled
/// `libhsa-runtime64.so` (a pytorch.org wheel, or a repo.radeon.com wheel before the step AMD's
/// WSL guide gives) looks for `/dev/kfd` and finds no GPU.
fn wsl_runtime(report: &Report) -> Option<Finding> {
    if !report.host.wsl
        || !report.kernel.device_nodes.iter().any(|n| n == "/dev/dxg")
        || report.kernel.device_nodes.iter().any(|n| n == "/dev/kfd")
    {
        return None;
    }
    let mut f: Option<FindingBuilder> = None;
    for env in &report.python_envs {
        for fw in env
            .frameworks
            .iter()
            .filter(|f| f.name == FrameworkName::Torch && f.variant.as_deref() == Some("rocm"))
        {
            let Some(own) = fw.bundled_runtime.iter().find(|p| {
                p.rsplit('/')
                    .next()
                    .is_some_and(|n| n.starts_with("libhsa-runtime64.so"))
            }) else {
                continue;
            };
            let b = f.take().unwrap_or_else(|| {
                FindingBuilder::new(
                    &ids::WSL_ROCM_RUNTIME_BUNDLED,
                    Severity::Error,
                    "ROCm torch under WSL loads its own HSA runtime, which cannot reach the GPU",
                )
                .detail(
                    "WSL2 has no /dev/kfd: the GPU is reached through /dev/dxg by the WSL build of \
                     the HSA runtime that ROCm for WSL installs in /opt/rocm/lib. This torch \
                     ships its own libhsa-runtime64.so, built for /dev/kfd, and loads it first, \
                     so torch.cuda.is_available() is False.",
                )
                .evidence("WSL2: /dev/dxg present, no /dev/kfd")
            });
            f = Some(
                b.evidence(format!("{} in {}: bundles {own}", label(fw), env.path))
                    .subject(framework_subject(&env.path, &fw.name)),
            );
        }
    }
    let f = f?;
    let wsl_runtime = report.rocm.as_ref().and_then(|r| r.default_install.clone());
    let f = match &wsl_runtime {
        Some(path) => f.evidence(format!("ROCm for WSL: {path}")),
        None => f.evidence("/opt/rocm: not installed (ROCm for WSL provides the runtime)"),
    };
    let mut fix = String::new();
    if wsl_runtime.is_none() {
        fix.push_str(
            "Install ROCm for WSL first: `sudo amdgpu-install -y --usecase=wsl,rocm --no-dkms` \
             (amdgpu-install from repo.radeon.com, see `gpu-doctor plan`). Then ",
        );
    }
    fix.push_str(
        "use AMD's WSL wheels (pip install the torch wheel from \
         https://repo.radeon.com/rocm/manylinux/rocm-rel-<your ROCm>/) and replace the wheel's \
         runtime with WSL's: `cd \"$(python3 -c 'import torch, os; \
         print(os.path.dirname(torch.__file__))')/lib\" && rm libhsa-runtime64.so* && cp \
         /opt/rocm/lib/libhsa-runtime64.so.1* .` (AMD's ROCm-on-WSL PyTorch guide).",
    );
    // amdgpu-install is the host's (WSL's) step; swapping a wheel's runtime is the user's.
    Some(
        f.fix_on_host_if(wsl_runtime.is_none())
            .fix(fix)
            .explains(&ids::KFD_MISSING)
            .build(),
    )
}

// ---------------------------------------------------------------------------------------------
// library-path-shadowing (a system ROCm before a wheel's bundled runtime)

/// A ROCm wheel bundles its HIP runtime (`torch/lib/libamdhip64.so`) and finds it through its
/// RUNPATH, which `LD_LIBRARY_PATH` comes before: a system ROCm's `lib` there makes the process
/// load the system's HIP instead. An error when that ROCm is another release than the wheel's
/// (symbol errors, "invalid device function"), a warning when the release matches or is
/// unknown.
fn shadowing(report: &Report) -> Vec<Finding> {
    let Some(stack) = report.rocm.as_ref() else {
        return Vec::new();
    };
    let Some(path) = super::env_var(report, "LD_LIBRARY_PATH") else {
        return Vec::new();
    };
    let entries: Vec<&str> = path.split(':').filter(|p| !p.is_empty()).collect();
    // The install a LD_LIBRARY_PATH folder is the `lib` (or `lib64`) of, by its own path or
    // through `/opt/rocm`.
    let install_of = |dir: &str| {
        let dir = dir.trim_end_matches('/');
        let base = dir
            .strip_suffix("/lib")
            .or_else(|| dir.strip_suffix("/lib64"))?;
        let path = if base == "/opt/rocm" {
            stack.default_install.as_deref()?
        } else {
            base
        };
        stack
            .installs
            .iter()
            .find(|i| i.path == path && i.hip_version.is_some())
    };
    let Some((dir, install)) = entries
        .iter()
        .find_map(|dir| install_of(dir).map(|i| (dir.trim_end_matches('/'), i)))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for env in &report.python_envs {
        for fw in &env.frameworks {
            let Some(bundled) = fw.bundled_runtime.iter().find(|p| {
                p.rsplit('/')
                    .next()
                    .is_some_and(|n| n.starts_with("libamdhip64.so"))
            }) else {
                continue;
            };
            let theirs = fw.rocm.as_deref().and_then(Version::parse);
            let system_v = install.version.as_deref().and_then(Version::parse);
            let differ = match (&theirs, &system_v) {
                (Some(a), Some(b)) => a.major_minor() != b.major_minor(),
                _ => false,
            };
            let kept: Vec<&str> = entries
                .iter()
                .copied()
                .filter(|e| install_of(e).is_none())
                .collect();
            out.push(
                FindingBuilder::new(
                    &ids::LIBRARY_PATH_SHADOWING,
                    if differ {
                        Severity::Error
                    } else {
                        Severity::Warning
                    },
                    format!(
                        "{} in {} loads the system ROCm {} from LD_LIBRARY_PATH instead of its own",
                        label(fw),
                        env.path,
                        install.version.as_deref().unwrap_or("")
                    ),
                )
                .detail(
                    "The wheel bundles its own HIP runtime and finds it through its RUNPATH, but \
                     LD_LIBRARY_PATH is searched first, so the process maps the system ROCm's \
                     libamdhip64 and the libraries beside it. Built for another ROCm release, they \
                     fail with missing symbols, \"invalid device function\" or crashes.",
                )
                .evidence(format!("LD_LIBRARY_PATH={path}"))
                .evidence(format!(
                    "{dir}: ROCm {} (HIP {})",
                    install.version.as_deref().unwrap_or("?"),
                    install.hip_version.as_deref().unwrap_or("?")
                ))
                .evidence(format!(
                    "{}: bundles {bundled} (ROCm {})",
                    label(fw),
                    fw.rocm.as_deref().unwrap_or("?")
                ))
                .subject(framework_subject(&env.path, &fw.name))
                .fix(format!(
                    "Take the system ROCm out of LD_LIBRARY_PATH for this environment: `export \
                     LD_LIBRARY_PATH={}` (and where it is set: the shell profile, the venv's \
                     activate script); ROCm programs find /opt/rocm through ld.so.conf, not \
                     LD_LIBRARY_PATH.",
                    kept.join(":")
                ))
                .build(),
            );
        }
    }
    out
}
