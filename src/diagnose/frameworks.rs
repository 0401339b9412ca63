//! Can each framework build use this machine's driver and GPU? Findings:
//! `driver-too-old-for-framework`, `cpu-only-framework-build`, `arch-not-in-build`.
//!
//! Three CUDA versions are in play and users confuse them: the driver's (the highest CUDA it
//! runs, what nvidia-smi prints), each framework build's (bundled in its wheels), and the local
//! toolkit's (nvcc; see `toolkits.rs`). Only the driver's matters to a pip-installed framework.

use super::FindingBuilder;
use super::ids;
use crate::framework::FrameworkName;
use crate::manifest::{Manifests, TorchBuild};
use crate::report::GpuSource;
use crate::report::Subject;
use crate::report::{
    Extension, Finding, Framework, PythonEnv, Report, Severity, framework_subject,
};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    for env in &report.python_envs {
        for fw in &env.frameworks {
            // A framework that found the GPU when asked (`doctor --deep`) disproves what its
            // files suggested about the driver and the build.
            if !super::runtime::sees_gpu(fw) {
                out.extend(driver_too_old(report, manifests, env, fw));
                out.extend(cpu_only(report, manifests, env, fw));
            }
            out.extend(arch_missing(report, manifests, env, fw));
        }
    }
    out
}

/// NVIDIA GPUs a CUDA framework could use: reported by a driver (or stated by an override),
/// not merely seen on the PCI bus. AMD GPUs are the ROCm rules' (`amd_builds.rs`).
fn usable_gpus(report: &Report) -> impl Iterator<Item = &crate::report::Gpu> {
    report.nvidia_gpus().filter(|g| g.source != GpuSource::Pci)
}

fn label(fw: &Framework) -> String {
    format!(
        "{} {}",
        fw.name,
        fw.version.as_deref().unwrap_or("(version unknown)")
    )
}

/// The CUDA version the driver supports: as the driver said, else from its branch.
fn driver_cuda(report: &Report, manifests: &Manifests) -> Option<Version> {
    report
        .driver
        .cuda_version
        .as_deref()
        .or_else(|| {
            report
                .driver
                .version
                .as_deref()
                .and_then(|d| manifests.cuda.max_cuda_for_driver(d))
        })
        .and_then(Version::parse)
}

/// The driver programs get and its CUDA: the host driver's, or a forward-compatibility libcuda's
/// where one serves every GPU (a data-center part) and gives a newer CUDA. Every comparison of
/// a build's CUDA with the driver's goes through this (or [`runs_here`]), so a framework that
/// works through the compat package is never called "driver too old", nor steered off a build
/// it runs.
pub(super) fn effective_driver(
    report: &Report,
    manifests: &Manifests,
) -> Option<(Version, Version)> {
    let driver = Version::parse(report.driver.version.as_deref()?)?;
    let cuda = driver_cuda(report, manifests)?;
    match super::platform::compat_cuda(report, manifests) {
        Some((compat, compat_cuda)) if compat_cuda > cuda => Some((compat, compat_cuda)),
        _ => Some((driver, cuda)),
    }
}

/// The torch variant tag of a build: from the local version (`+cu130`), else from its CUDA.
fn torch_variant(fw: &Framework) -> Option<String> {
    if let Some((_, local)) = fw.version.as_deref().and_then(|v| v.split_once('+')) {
        return Some(local.to_string());
    }
    match (
        fw.variant.as_deref(),
        fw.cuda.as_deref().and_then(Version::parse),
    ) {
        (Some("cuda"), Some(c)) => Some(format!("cu{}{}", c.major(), c.minor())),
        (Some("cpu"), _) => Some("cpu".to_string()),
        _ => None,
    }
}

pub(super) fn torch_build<'m>(manifests: &'m Manifests, fw: &Framework) -> Option<&'m TorchBuild> {
    let version = fw.version.as_deref()?;
    let variant = torch_variant(fw)?;
    manifests
        .frameworks
        .torch(version, &variant)
        .map(|m| m.build)
        .or_else(|| {
            // The old rows are the pip wheels' (pytorch/builder manywheel); a conda build's
            // list came from another script.
            let conda = fw
                .distribution
                .as_deref()
                .is_some_and(|d| d.ends_with("(conda)"));
            (!conda)
                .then(|| manifests.frameworks.torch_old_build(version, &variant))
                .flatten()
        })
        .or_else(|| {
            manifests
                .frameworks
                .torch_nightly_stand_in(version, &variant)
                .map(|m| m.build)
        })
}

/// Whether a driver runs code built for `cuda`: natively (`cuda <= driver_cuda`) or through
/// minor-version compatibility (same major, driver at or above that major's floor).
fn driver_runs(
    manifests: &Manifests,
    driver: &Version,
    driver_cuda: &Version,
    cuda: &Version,
) -> bool {
    cuda <= driver_cuda
        || (cuda.major() == driver_cuda.major()
            && manifests
                .cuda
                .major(cuda.major())
                .and_then(|m| Version::parse(&m.minor_compat_floor))
                .is_some_and(|floor| driver >= &floor))
}

/// The torch variant to suggest for this driver: the newest the driver runs natively, else the
/// oldest it runs through minor-version compatibility (the fewest newer-minor features missing).
fn torch_variant_for(manifests: &Manifests, fw: &Framework, report: &Report) -> Option<String> {
    let (driver, driver_cuda) = effective_driver(report, manifests)?;
    let release = manifests.frameworks.torch_release(fw.version.as_deref()?)?;
    let runnable: Vec<(&TorchBuild, Version)> = release
        .builds
        .iter()
        .filter_map(|b| Some((b, Version::parse(&b.cuda()?)?)))
        .filter(|(_, c)| driver_runs(manifests, &driver, &driver_cuda, c))
        .collect();
    let native = runnable
        .iter()
        .filter(|(_, c)| c <= &driver_cuda)
        .max_by(|a, b| a.1.cmp(&b.1));
    native
        .or_else(|| runnable.iter().min_by(|a, b| a.1.cmp(&b.1)))
        .map(|(b, _)| b.variant.clone())
}

/// Whether CUDA `needed` runs here: on the driver natively or through minor-version
/// compatibility, or through a forward-compatibility libcuda on a data-center GPU, which runs
/// what the host driver cannot.
fn runs_here(
    report: &Report,
    manifests: &Manifests,
    driver: &Version,
    have: &Version,
    needed: &Version,
) -> bool {
    driver_runs(manifests, driver, have, needed)
        || super::platform::compat_cuda(report, manifests)
            .is_some_and(|(compat, cuda)| driver_runs(manifests, &compat, &cuda, needed))
}

/// Packages that load PTX built by their framework's CUDA at run time, so that
/// minor-version compatibility (which covers compiled kernels, not PTX JIT) does not carry
/// them onto an older driver of the same major, with the source that says so. NVIDIA's CUDA
/// compatibility guide lists PTX JIT among minor-version compatibility's limits.
const PTX_AT_RUN_TIME: &[(&str, &str)] = &[(
    "vllm",
    "vLLM's troubleshooting guide, 'the provided PTX was compiled with an unsupported \
     toolchain' (vllm-project/vllm#28305): update the driver to the build's CUDA",
)];

/// The first package of `PTX_AT_RUN_TIME` installed in `env`, with its source.
fn ptx_at_run_time(env: &PythonEnv) -> Option<(&Extension, &'static str)> {
    env.extensions.iter().find_map(|e| {
        PTX_AT_RUN_TIME
            .iter()
            .find(|(name, _)| *name == e.name)
            .map(|(_, source)| (e, *source))
    })
}

/// Why the driver is too old: below the major's floor, or below the build's own CUDA for a
/// package that loads its PTX at run time.
fn too_old_detail(
    fw: &Framework,
    ptx_user: Option<(&Extension, &str)>,
    have: &Version,
    needed: &Version,
) -> String {
    match ptx_user {
        Some((ext, source)) => format!(
            "Minor-version compatibility lets a driver of CUDA {have} run {}'s CUDA {needed} \
             kernels that are compiled for the GPU, but not PTX: {} {} loads PTX built by CUDA \
             {needed} at run time, which this driver cannot compile ('the provided PTX was \
             compiled with an unsupported toolchain', CUDA error 222). Source: {source}.",
            fw.name, ext.name, ext.version
        ),
        None => format!(
            "A framework's CUDA build needs a driver that supports that CUDA version. Within one \
             major version a driver at or above the major's floor is enough (minor-version \
             compatibility), but this driver is older than that, so {} will report that no GPU \
             is available or fail with 'CUDA driver version is insufficient for CUDA runtime \
             version'.",
            fw.name
        ),
    }
}

/// The fix: a driver of the major's floor, or of the build's own CUDA when a package loads its
/// PTX; else a build for the driver's CUDA (NGC release, torch variant, or the package's).
fn too_old_fix(
    report: &Report,
    manifests: &Manifests,
    fw: &Framework,
    ptx_user: Option<(&Extension, &str)>,
    have: &Version,
    needed: &Version,
    floor: Option<&str>,
) -> String {
    // PTX of CUDA `needed` needs a driver of that CUDA itself, not the major's floor.
    let native = ptx_user
        .and_then(|_| manifests.cuda.min_driver_for(&needed.to_string()))
        .and_then(|r| r.toolkit_driver);
    let mut fix = format!(
        "Upgrade the NVIDIA driver to {} or newer (see `gpu-doctor plan`)",
        native
            .or(floor)
            .unwrap_or("a branch that supports this CUDA")
    );
    if super::fix_history::ngc_build(fw) {
        fix.push_str(&format!(
            ". {}",
            super::fix_history::ngc_fix(fw, Some(&have.to_string()))
        ));
        fix.pop();
    } else if let Some((ext, _)) = ptx_user {
        // A torch of the driver's CUDA leaves the package's own PTX as it is.
        fix.push_str(&format!(
            ", or install a build of {} made for CUDA {have} or older",
            ext.name
        ));
    } else if fw.name == FrameworkName::Torch
        && let Some(variant) = torch_variant_for(manifests, fw, report)
    {
        fix.push_str(&format!(
                ", or install the build for the CUDA this driver has: `pip install --force-reinstall torch=={} --index-url {}`",
                fw.version.as_deref().and_then(|v| v.split('+').next()).unwrap_or(""),
                manifests.frameworks.torch_index_url(&variant)
            ));
    }
    fix.push('.');
    fix
}

fn driver_too_old(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fw: &Framework,
) -> Option<Finding> {
    let needed = Version::parse(fw.cuda.as_deref()?)?;
    let driver = report.driver.version.as_deref()?;
    let have = driver_cuda(report, manifests)?;
    let floor = manifests
        .cuda
        .major(needed.major())
        .map(|m| m.minor_compat_floor.as_str());
    let driver_v = Version::parse(driver)?;
    let runs = runs_here(report, manifests, &driver_v, &have, &needed);
    // JAX checks the driver itself and refuses to start below its own floor.
    let jax_floor = (fw.name == FrameworkName::Jax)
        .then(|| {
            fw.version
                .as_deref()
                .and_then(|v| manifests.frameworks.jax(v, needed.major()))
        })
        .flatten()
        .and_then(|row| row.driver_min.as_deref());
    // JAX asks the libcuda it loads, so a forward-compatibility copy's version is what it sees.
    let seen = effective_driver(report, manifests).map_or(driver_v.clone(), |(d, _)| d);
    let below_jax = jax_floor.and_then(Version::parse).is_some_and(|f| seen < f);
    // Minor-version compatibility runs any minor of the major (without PTX JIT of newer code,
    // which arch-not-in-build covers), unless a package in the environment loads PTX of the
    // framework's newer CUDA at run time (`PTX_AT_RUN_TIME`).
    let ptx_user = (runs && needed > have)
        .then(|| ptx_at_run_time(env))
        .flatten();
    if runs && !below_jax && ptx_user.is_none() {
        return None;
    }
    let detail = too_old_detail(fw, ptx_user, &have, &needed);
    let mut f = FindingBuilder::new(
        &ids::DRIVER_TOO_OLD_FOR_FRAMEWORK,
        Severity::Error,
        format!(
            "{} is built for CUDA {needed}, but driver {driver} supports CUDA up to {have}",
            label(fw)
        ),
    )
    .detail(detail)
    .evidence(format!(
        "driver: {driver} (CUDA {have}, from {})",
        report.driver.source.as_deref().unwrap_or("unknown source")
    ))
    .evidence(format!(
        "{} in {}: CUDA {needed} ({})",
        label(fw),
        env.path,
        fw.source
    ))
    .subject(framework_subject(&env.path, &fw.name))
    .subject(Subject::Driver(None));
    // A toolkit of the framework's own CUDA (an NGC or CUDA image ships both) is too new for
    // the same reason: one cause, one error.
    if let Some(t) = report.toolkits.iter().find(|t| {
        t.version
            .as_deref()
            .and_then(Version::parse)
            .is_some_and(|v| v.major_minor() == needed.major_minor())
    }) {
        f = f
            .evidence(format!(
                "toolkit {} (CUDA {}) is the framework's own CUDA: the same driver is too old for it",
                t.path,
                t.version.as_deref().unwrap_or("?")
            ))
            .explains(&ids::TOOLKIT_NEWER_THAN_DRIVER);
    }
    if let Some(floor) = floor {
        f = f.evidence(format!(
            "CUDA {}.x needs a driver >= {floor} (cuda.toml)",
            needed.major()
        ));
    }
    if let Some(j) = jax_floor.filter(|_| below_jax) {
        f = f.evidence(format!(
            "{} needs a driver >= {j} (frameworks.toml)",
            label(fw)
        ));
    }
    for line in super::runtime::confirmation(fw) {
        f = f.evidence(line);
    }
    let fix = too_old_fix(report, manifests, fw, ptx_user, &have, &needed, floor);
    Some(f.fix(fix).build())
}

fn cpu_only(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fw: &Framework,
) -> Option<Finding> {
    if fw.variant.as_deref() != Some("cpu") {
        return None;
    }
    let gpu = usable_gpus(report).next()?;
    let name = gpu.name.as_deref().unwrap_or("an NVIDIA GPU");
    if let Some(dist) = fw.distribution.as_deref().filter(|d| d.ends_with("-cpu")) {
        // Chosen by name: a CPU build is what was asked for, not an accident of pip.
        return Some(
            FindingBuilder::new(
                &ids::CPU_ONLY_FRAMEWORK_BUILD,
                Severity::Info,
                format!("{} in {} is the CPU-only `{dist}` package, chosen by name", label(fw), env.path),
            )
            .detail(format!(
                "`{dist}` is the CPU build by its name, so it runs on the CPU by design even though \
                 {name} is here. Nothing is wrong if that was the intent."
            ))
            .evidence(format!("{}: distribution {dist} ({})", label(fw), fw.source))
            .evidence(format!("GPU {}: {name} ({})", gpu.index, gpu.source))
            .subject(framework_subject(&env.path, &fw.name))
            .fix(format!(
                "Only to use the GPU: `pip uninstall -y {dist}`, then {}.",
                if super::fix_history::tensorflow_has_and_cuda(manifests, fw) {
                    "`pip install 'tensorflow[and-cuda]'`".to_string()
                } else {
                    super::fix_history::tensorflow_cuda_libraries(manifests, fw)
                }
            ))
            .build(),
        );
    }
    let fix = match FrameworkName::from_report(&fw.name) {
        Some(FrameworkName::Torch) => {
            let variant = torch_variant_for(manifests, fw, report);
            match variant {
                Some(v) => format!(
                    "Install a CUDA build: `pip install --force-reinstall torch --index-url {}`.",
                    manifests.frameworks.torch_index_url(&v)
                ),
                None => "Install a CUDA build of PyTorch (see `gpu-doctor plan --framework torch`).".to_string(),
            }
        }
        Some(FrameworkName::Tensorflow) if !super::fix_history::tensorflow_has_and_cuda(manifests, fw) => format!(
            "{}.",
            super::fix_history::tensorflow_cuda_libraries(manifests, fw)
        ),
        Some(FrameworkName::Tensorflow) => "Install TensorFlow with its CUDA libraries: `pip install 'tensorflow[and-cuda]'`.".to_string(),
        Some(FrameworkName::Jax) => "Install JAX with its CUDA plugin: `pip install -U 'jax[cuda12]'` (or `jax[cuda13]` on a driver for CUDA 13).".to_string(),
        _ => format!("Install a CUDA build of {}.", fw.name),
    };
    // A container the runtime gave a GPU (its device node is in): the CPU build is the image's,
    // the GPU was asked for, and a pip install in the running container is lost on restart
    // (kserve/kserve#4640: KServe 0.15's default huggingfaceserver image is the CPU build, its
    // GPU build the `-gpu` tag, and a pod given a MIG device "crashed").
    if let Some(runtime) = report
        .host
        .container
        .as_deref()
        .filter(|_| gpu_device_passed_in(report))
    {
        return Some(cpu_only_in_container(runtime, env, fw, gpu, name, &fix));
    }
    Some(
        FindingBuilder::new(
            &ids::CPU_ONLY_FRAMEWORK_BUILD,
            Severity::Warning,
            format!("{} in {} is a CPU-only build on a machine with {name}", label(fw), env.path),
        )
        .detail(format!(
            "This {} build has no CUDA support, so it runs everything on the CPU even though a usable \
             GPU is here. Usually pip picked the CPU wheel (PyPI's default for some frameworks, or an \
             index URL for CPU builds).",
            fw.name
        ))
        .evidence(format!("{}: {} build ({})", label(fw), fw.variant.as_deref().unwrap_or("cpu"), fw.source))
        .evidence(format!("GPU {}: {name} ({})", gpu.index, gpu.source))
        .subject(framework_subject(&env.path, &fw.name))
        .fix(fix)
        .build(),
    )
}

/// [`cpu_only`] in a container the runtime gave a GPU: an error whose fix is the image's.
fn cpu_only_in_container(
    runtime: &str,
    env: &PythonEnv,
    fw: &Framework,
    gpu: &crate::report::Gpu,
    name: &str,
    fix: &str,
) -> Finding {
    FindingBuilder::new(
        &ids::CPU_ONLY_FRAMEWORK_BUILD,
        Severity::Error,
        format!(
            "{} in {} is a CPU-only build, in a {runtime} container that was given {name}",
            label(fw),
            env.path
        ),
    )
    .detail(format!(
        "The container runtime passed the GPU in, so the workload was meant to use it, but \
             the image's {} has no CUDA support and runs everything on the CPU (or fails where \
             it asks for `cuda`). Projects that publish an image in CPU and GPU variants tag \
             them apart (`-gpu`, `-cuda`, a CUDA version); this one is the CPU variant, or was \
             built from a CPU wheel.",
        fw.name
    ))
    .evidence(format!(
        "{}: {} build ({})",
        label(fw),
        fw.variant.as_deref().unwrap_or("cpu"),
        fw.source
    ))
    .evidence(format!(
        "GPU {}: {name} ({}), passed into the {runtime} container",
        gpu.index, gpu.source
    ))
    .subject(framework_subject(&env.path, &fw.name))
    .fix(format!(
        "Run the image's GPU variant (its CUDA tag, such as `-gpu`), or build the image with a \
             CUDA build of {}: in its Dockerfile, {} A pip install inside the running container is \
             lost when it restarts.",
        fw.name,
        lowercase_first(fix)
    ))
    .build()
}

/// A GPU device node (`/dev/nvidia0`, not only the control nodes) is present: in a container,
/// the runtime passed a GPU in.
fn gpu_device_passed_in(report: &Report) -> bool {
    report.kernel.device_nodes.iter().any(|n| {
        n.strip_prefix("/dev/nvidia")
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// "Install a CUDA build ..." → "install a CUDA build ...", to follow a colon.
fn lowercase_first(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |c| {
        c.to_lowercase().chain(chars).collect::<String>()
    })
}

/// Whether a build with `sass` machine code and `ptx` runs on `cc`. SASS for sm_XY runs on any
/// sm_XZ with Z >= Y of the same major; PTX for compute_XY is JIT-compiled for any cc >= XY.
fn covers(sass: &[Version], ptx: &[Version], cc: &Version) -> Coverage {
    if sass
        .iter()
        .any(|s| s.major() == cc.major() && s.minor() <= cc.minor())
    {
        Coverage::Sass
    } else if ptx.iter().any(|p| p <= cc) {
        Coverage::PtxJit
    } else {
        Coverage::None
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Coverage {
    Sass,
    PtxJit,
    None,
}

/// `sm_90`, `compute_90`, `9.0`, `9.0a` → (is PTX, version).
fn arch_entry(text: &str) -> Option<(bool, Version)> {
    let t = text.trim();
    let (ptx, digits) = if let Some(d) = t.strip_prefix("compute_") {
        (true, d)
    } else if let Some(d) = t.strip_prefix("sm_") {
        (false, d)
    } else {
        return Version::parse(t).map(|v| (false, v));
    };
    let digits: String = digits.chars().take_while(char::is_ascii_digit).collect();
    if digits.len() < 2 {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Version::parse(&format!("{major}.{minor}")).map(|v| (ptx, v))
}

/// An arch list ("sm_90", "compute_90") as (SASS, PTX) versions; entries that are not CUDA
/// architectures (a ROCm build's "gfx90a") are left out.
fn split_arch_list(list: &[String]) -> (Vec<Version>, Vec<Version>) {
    let entries: Vec<(bool, Version)> = list.iter().filter_map(|a| arch_entry(a)).collect();
    let pick = |want_ptx: bool| {
        entries
            .iter()
            .filter(|(p, _)| *p == want_ptx)
            .map(|(_, v)| v.clone())
            .collect()
    };
    (pick(false), pick(true))
}

/// The kernels a CUDA build carries: machine code (SASS) and PTX, per architecture, and where
/// the list was read.
struct Kernels {
    sass: Vec<Version>,
    ptx: Vec<Version>,
    source: String,
}

impl Kernels {
    /// Read from what the framework itself reported, else from torch's arch list in
    /// frameworks.toml or TensorFlow's `cuda_compute_capabilities`; empty where nothing says.
    /// `None` for a torch build the table does not know or lists no SASS for, which is then not
    /// judged at all.
    fn of(manifests: &Manifests, fw: &Framework) -> Option<Kernels> {
        let runtime_list = super::runtime::arch_list(fw);
        let name = FrameworkName::from_report(&fw.name);
        let (sass, ptx, source): (Vec<Version>, Vec<Version>, String) = match name {
            // What the framework itself reported outranks the tables.
            _ if let Some((list, source)) = runtime_list => {
                let (sass, ptx) = split_arch_list(list);
                (sass, ptx, source)
            }
            Some(FrameworkName::Torch) => {
                let build = torch_build(manifests, fw)?;
                let sass = build.sass.as_ref()?;
                let parse = |l: &Vec<String>| {
                    l.iter()
                        .filter_map(|s| Version::parse(s))
                        .collect::<Vec<_>>()
                };
                (
                    parse(sass),
                    build.ptx.as_ref().map(parse).unwrap_or_default(),
                    nightly_note(manifests, fw).unwrap_or_else(|| {
                        format!(
                            "arch list of torch {} {} (frameworks.toml)",
                            build_release(fw),
                            build.variant
                        )
                    }),
                )
            }
            Some(FrameworkName::Tensorflow) if !fw.arch_list.is_empty() => {
                let (sass, ptx) = split_arch_list(&fw.arch_list);
                (
                    sass,
                    ptx,
                    format!("cuda_compute_capabilities in {}", fw.source),
                )
            }
            _ => (Vec::new(), Vec::new(), String::new()),
        };
        Some(Kernels { sass, ptx, source })
    }

    /// Nothing known: only the CUDA major's own range can then rule a GPU out.
    fn is_empty(&self) -> bool {
        self.sass.is_empty() && self.ptx.is_empty()
    }

    /// "SASS for [8.0, 9.0], PTX for [9.0] (source)".
    fn evidence(&self) -> String {
        let list = |l: &[Version]| {
            l.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "SASS for [{}], PTX for [{}] ({})",
            list(&self.sass),
            list(&self.ptx),
            self.source
        )
    }
}

/// A usable GPU the build has neither SASS nor PTX for, or (when its lists are unknown) one the
/// build's CUDA major itself dropped: every kernel launch fails with "no kernel image is
/// available".
fn arch_missing(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fw: &Framework,
) -> Option<Finding> {
    let cuda = Version::parse(fw.cuda.as_deref()?)?;
    let kernels = Kernels::of(manifests, fw)?;
    let major = manifests.cuda.major(cuda.major());
    for gpu in usable_gpus(report) {
        let Some(cc_text) = gpu.compute_capability.as_deref() else {
            continue;
        };
        let Some(cc) = Version::parse(cc_text) else {
            continue;
        };
        let name = gpu.name.as_deref().unwrap_or("GPU");
        // The CUDA major itself may have dropped this architecture (CUDA 13 has no Pascal).
        let dropped_by_cuda = major.is_some_and(|m| {
            Version::parse(&m.min_sm).is_some_and(|min| cc < min)
                || m.removed_sm.iter().any(|r| r == cc_text)
        });
        let coverage = if kernels.is_empty() {
            if dropped_by_cuda {
                Coverage::None
            } else {
                continue;
            }
        } else {
            covers(&kernels.sass, &kernels.ptx, &cc)
        };
        if coverage != Coverage::None {
            continue;
        }
        let mut f = FindingBuilder::new(
            &ids::ARCH_NOT_IN_BUILD,
            Severity::Error,
            format!("{} has no kernels for {name} (compute capability {cc_text})", label(fw)),
        )
        .detail(format!(
            "The build contains machine code (SASS) only for other GPU generations and no PTX that the \
             driver could compile for this one, so every GPU operation fails with 'no kernel image is \
             available for execution on the device'. {}",
            if cc > Version::parse("9.0").unwrap_or_else(|| cc.clone()) {
                "The GPU is newer than the build: install a build for a newer CUDA."
            } else {
                "The GPU is older than the build supports: install a build for an older CUDA."
            }
        ))
        .evidence(format!("GPU {}: {name}, compute capability {cc_text}", gpu.index))
        .evidence(format!("{} in {}: CUDA {cuda}", label(fw), env.path))
        .subject(framework_subject(&env.path, &fw.name))
        .subject(gpu.subject())
        // A build with no kernels for the GPU is the cause of its cuDNN and torch.compile
        // failures there too: the build's own cuDNN, and a compiler with nothing to run.
        .explains(&ids::CUDNN_GPU_UNSUPPORTED)
        .explains(&ids::TRITON_GPU_TOO_OLD)
        .explains(&ids::NCCL_GPU_UNSUPPORTED);
        if !kernels.is_empty() {
            f = f.evidence(kernels.evidence());
        }
        if dropped_by_cuda && let Some(m) = major {
            f = f.evidence(format!(
                "CUDA {}.x supports compute capability {} to {} (cuda.toml)",
                m.major, m.min_sm, m.max_sm
            ));
        }
        for line in super::runtime::confirmation(fw) {
            f = f.evidence(line);
        }
        return Some(f.fix(arch_fix(report, manifests, fw, &cc)).build());
    }
    None
}

/// An NGC container's build changes with the container release, not with pip; a torch build
/// the variant of its release that has kernels for the GPU (and that this driver runs); else
/// any build whose arch list has them.
fn arch_fix(report: &Report, manifests: &Manifests, fw: &Framework, cc: &Version) -> String {
    match torch_variant_covering(manifests, report, fw, cc) {
        _ if super::fix_history::ngc_build(fw) => super::fix_history::ngc_fix(fw, None),
        Some(variant) => format!(
            "Install the torch build that has kernels for sm_{}{}: `pip install --force-reinstall torch=={} --index-url {}`.",
            cc.major(),
            cc.minor(),
            build_release(fw),
            manifests.frameworks.torch_index_url(&variant)
        ),
        None => format!(
            "Install a {} build whose arch list includes sm_{}{} (see `gpu-doctor plan --framework {}`).",
            fw.name,
            cc.major(),
            cc.minor(),
            fw.name
        ),
    }
}

/// A variant of the same torch release with kernels for `cc` that this driver runs.
fn torch_variant_covering(
    manifests: &Manifests,
    report: &Report,
    fw: &Framework,
    cc: &Version,
) -> Option<String> {
    if fw.name != FrameworkName::Torch {
        return None;
    }
    let release = manifests.frameworks.torch_release(fw.version.as_deref()?)?;
    let effective = effective_driver(report, manifests);
    let parse = |l: &Vec<String>| {
        l.iter()
            .filter_map(|s| Version::parse(s))
            .collect::<Vec<_>>()
    };
    release
        .builds
        .iter()
        .filter_map(|b| {
            let cuda = Version::parse(&b.cuda()?)?;
            let sass = parse(b.sass.as_ref()?);
            let ptx = b.ptx.as_ref().map(parse).unwrap_or_default();
            let runs = effective
                .as_ref()
                .is_none_or(|(d, dc)| driver_runs(manifests, d, dc, &cuda));
            (runs && covers(&sass, &ptx, cc) != Coverage::None).then(|| (cuda, b.variant.clone()))
        })
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, variant)| variant)
}

/// For a nightly judged by an earlier release's build (`torch_nightly_stand_in`), where its
/// arch list was read; `None` when the build is the nightly's own release's.
fn nightly_note(manifests: &Manifests, fw: &Framework) -> Option<String> {
    let version = fw.version.as_deref()?;
    let variant = torch_variant(fw)?;
    if manifests.frameworks.torch(version, &variant).is_some() {
        return None;
    }
    let stand_in = manifests
        .frameworks
        .torch_nightly_stand_in(version, &variant)?;
    Some(format!(
        "arch list of torch {} {}, the last release of {variant} before the nightly {} \
         (frameworks.toml; nightlies are built by the release scripts of their time)",
        stand_in.release.version,
        stand_in.build.variant,
        build_release(fw)
    ))
}

fn build_release(fw: &Framework) -> String {
    fw.version
        .as_deref()
        .and_then(|v| v.split('+').next())
        .unwrap_or("")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::embedded;
    use crate::report::{Gpu, PythonEnv};

    fn gpu(name: &str, cc: &str) -> Gpu {
        Gpu {
            name: Some(name.into()),
            compute_capability: Some(cc.into()),
            source: "nvml".into(),
            ..Gpu::default()
        }
    }

    fn torch(version: &str, cuda: Option<&str>) -> Framework {
        Framework {
            name: "torch".into(),
            version: Some(version.into()),
            cuda: cuda.map(str::to_string),
            variant: Some(if cuda.is_some() { "cuda" } else { "cpu" }.into()),
            source: "/venv/lib/python3.12/site-packages/torch/version.py".into(),
            ..Framework::default()
        }
    }

    fn machine(driver: &str, driver_cuda: &str, gpus: Vec<Gpu>, fw: Framework) -> Report {
        let mut r = Report {
            gpus,
            python_envs: vec![PythonEnv {
                path: "/venv".into(),
                kind: "venv".into(),
                frameworks: vec![fw],
                ..PythonEnv::default()
            }],
            ..Report::default()
        };
        r.driver.version = Some(driver.into());
        r.driver.cuda_version = Some(driver_cuda.into());
        r.driver.source = Some("nvml".into());
        r
    }

    fn ids(r: &Report) -> Vec<String> {
        findings(r, embedded()).into_iter().map(|f| f.id).collect()
    }

    #[test]
    fn cu130_torch_on_a_cuda_12_driver_is_too_old_and_the_fix_names_a_wheel_it_can_run() {
        let r = machine(
            "550.54.15",
            "12.4",
            vec![gpu("NVIDIA A10", "8.6")],
            torch("2.11.0+cu130", Some("13.0")),
        );
        let f = findings(&r, embedded());
        let too_old = f
            .iter()
            .find(|f| f.id == "driver-too-old-for-framework")
            .expect("finding");
        assert_eq!(too_old.severity, Severity::Error);
        assert!(
            too_old.evidence.iter().any(|e| e.contains("580.65.06")),
            "{:?}",
            too_old.evidence
        );
        let fix = too_old.fix.as_deref().unwrap_or("");
        assert!(fix.contains("download.pytorch.org/whl/cu126"), "{fix}");
        assert!(
            too_old
                .subjects
                .contains(&Subject::framework("/venv", "torch"))
        );
    }

    #[test]
    fn minor_version_compatibility_is_not_a_problem() {
        // torch cu128 on driver 550 (CUDA 12.4): same major, above the 525.60.13 floor.
        let r = machine(
            "550.54.15",
            "12.4",
            vec![gpu("NVIDIA A10", "8.6")],
            torch("2.8.0+cu128", Some("12.8")),
        );
        assert!(!ids(&r).contains(&"driver-too-old-for-framework".to_string()));
        let r = machine(
            "580.159.04",
            "13.0",
            vec![gpu("NVIDIA H200", "9.0")],
            torch("2.11.0+cu130", Some("13.0")),
        );
        assert!(ids(&r).is_empty(), "{:?}", ids(&r));
    }

    #[test]
    fn cpu_build_with_a_gpu_is_a_warning_without_a_gpu_nothing() {
        let r = machine(
            "560.35.03",
            "12.6",
            vec![gpu("NVIDIA GeForce RTX 4070", "8.9")],
            torch("2.5.1+cpu", None),
        );
        let f = findings(&r, embedded());
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].id, "cpu-only-framework-build");
        assert_eq!(f[0].severity, Severity::Warning);
        assert!(
            f[0].fix.as_deref().unwrap_or("").contains("whl/cu12"),
            "{:?}",
            f[0].fix
        );
        let r = machine("560.35.03", "12.6", vec![], torch("2.5.1+cpu", None));
        assert!(ids(&r).is_empty());
    }

    #[test]
    fn a_nightly_of_a_variant_its_release_never_published_is_judged_by_the_last_release_of_it() {
        let r = machine(
            "575.57.08",
            "12.9",
            vec![gpu("NVIDIA GeForce RTX 5070 Ti", "12.0")],
            torch("2.6.0.dev20241112+cu121", Some("12.1")),
        );
        let found = findings(&r, embedded());
        let f = found
            .iter()
            .find(|f| f.id == "arch-not-in-build")
            .expect("arch-not-in-build");
        assert!(
            f.evidence.iter().any(|e| e.contains("torch 2.5 cu121")),
            "{:?}",
            f.evidence
        );
        // A release (not a nightly) the table does not know stays unjudged.
        let r = machine(
            "575.57.08",
            "12.9",
            vec![gpu("NVIDIA GeForce RTX 5070 Ti", "12.0")],
            torch("2.6.0+cu121", Some("12.1")),
        );
        assert!(
            !findings(&r, embedded())
                .iter()
                .any(|f| f.id == "arch-not-in-build")
        );
    }

    #[test]
    fn blackwell_with_a_build_without_sm_120_has_no_kernels() {
        // torch 2.11 cu126's arch list ends at 9.0 with no PTX: an RTX 5090 (12.0) has no kernels.
        let r = machine(
            "580.95.05",
            "13.0",
            vec![gpu("NVIDIA GeForce RTX 5090", "12.0")],
            torch("2.11.0+cu126", Some("12.6")),
        );
        let f = findings(&r, embedded());
        let arch = f
            .iter()
            .find(|f| f.id == "arch-not-in-build")
            .expect("arch finding");
        assert!(
            arch.evidence
                .iter()
                .any(|e| e.contains("SASS for [5.0, 6.0, 7.0, 7.5, 8.0, 8.6, 9.0]")),
            "{:?}",
            arch.evidence
        );
        // The same build covers an L4 (8.9) through its sm_86 code.
        let r = machine(
            "580.95.05",
            "13.0",
            vec![gpu("NVIDIA L4", "8.9")],
            torch("2.11.0+cu126", Some("12.6")),
        );
        assert!(ids(&r).is_empty(), "{:?}", ids(&r));
    }

    #[test]
    fn pascal_with_a_cuda_13_build_is_dropped_by_cuda_itself() {
        let r = machine(
            "580.95.05",
            "13.0",
            vec![gpu("Tesla P100-PCIE-16GB", "6.0")],
            torch("2.11.0+cu130", Some("13.0")),
        );
        let f = findings(&r, embedded());
        let arch = f
            .iter()
            .find(|f| f.id == "arch-not-in-build")
            .expect("arch finding");
        assert!(arch.detail.contains("older"), "{}", arch.detail);
    }

    #[test]
    fn tensorflow_arch_list_with_ptx_covers_newer_gpus() {
        let mut tf = Framework {
            name: "tensorflow".into(),
            version: Some("2.15.0".into()),
            cuda: Some("12.2".into()),
            variant: Some("cuda".into()),
            arch_list: vec![
                "sm_60".into(),
                "sm_70".into(),
                "sm_80".into(),
                "sm_89".into(),
                "compute_90".into(),
            ],
            ..Framework::default()
        };
        let r = machine(
            "550.54.15",
            "12.4",
            vec![gpu("NVIDIA H100 80GB HBM3", "9.0")],
            tf.clone(),
        );
        assert!(
            ids(&r).is_empty(),
            "PTX compute_90 is JIT-compiled: {:?}",
            ids(&r)
        );
        tf.arch_list = vec!["sm_80".into(), "sm_86".into()];
        let r = machine(
            "550.54.15",
            "12.4",
            vec![gpu("NVIDIA H100 80GB HBM3", "9.0")],
            tf,
        );
        assert_eq!(ids(&r), ["arch-not-in-build"]);
    }

    #[test]
    fn arch_entries_parse() {
        assert_eq!(
            arch_entry("sm_90"),
            Some((false, Version::parse("9.0").unwrap()))
        );
        assert_eq!(
            arch_entry("compute_120"),
            Some((true, Version::parse("12.0").unwrap()))
        );
        assert_eq!(
            arch_entry("8.6"),
            Some((false, Version::parse("8.6").unwrap()))
        );
        assert_eq!(arch_entry("sm_"), None);
    }
}
