//! Probes: each reads one family of facts through the [`Host`], and [`gather`] runs them
//! concurrently and assembles the facts part of the [`Report`].
//!
//! Probes never fail: what they cannot learn is `null` in the report, and why is a fact in
//! `probes[]` or in the outcome of the source that failed.

pub(crate) mod amd;
pub(crate) mod cdi;
pub(crate) mod compressed_module;
pub(crate) mod cuda_code;
pub(crate) mod driver;
pub(crate) mod driver_libs;
pub(crate) mod ggml;
pub(crate) mod gpu_switch;
pub(crate) mod host_compiler;
pub(crate) mod image_env;
pub(crate) mod interp_cache;
pub(crate) mod kernel;
pub(crate) mod libs;
pub(crate) mod linkmap;
pub(crate) mod loader;
pub(crate) mod module_builds;
pub(crate) mod module_files;
pub(crate) mod net;
pub(crate) mod node_envs;
pub(crate) mod overrides;
pub(crate) mod pci;
pub(crate) mod ptxas;
pub(crate) mod python;
pub(crate) mod python_managers;
pub(crate) mod rocm;
pub(crate) mod rocm_wheels;
pub(crate) mod services;
pub(crate) mod system;
pub(crate) mod toolkit;
pub(crate) mod topology;
pub(crate) mod wsl_store;

use crate::report::GpuSource;
use std::path::PathBuf;
use std::time::Instant;

use crate::host::Host;
use crate::manifest::SetInUse;
use crate::report::rocm::RocmStack;
use crate::report::{
    EnvKind, EnvVar, ModuleFileInfo, ProbeRecord, ProbeStatus, Report, SCHEMA_VERSION, ToolInfo,
};

/// Environment variables worth showing because they change what the GPU stack does.
const REPORTED_VARS: [&str; 38] = [
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "CUDA_HOME",
    "CUDA_PATH",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
    "CONDA_PREFIX",
    "VIRTUAL_ENV",
    "CUDA_LAUNCH_BLOCKING",
    "CUDA_MODULE_LOADING",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "NCCL_SOCKET_IFNAME",
    "NCCL_IB_HCA",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "HSA_OVERRIDE_GFX_VERSION",
    "ROCM_PATH",
    "HIP_PATH",
    // Which BLAS library ROCm programs hand matrix products to (hipBLASLt or rocBLAS):
    // `hipblaslt-missing-target` weighs a hipBLASLt without the GPU's target by them.
    "ROCBLAS_USE_HIPBLASLT",
    "DISABLE_ADDMM_CUDA_LT",
    "TORCH_BLAS_PREFER_HIPBLASLT",
    // The image's CUDA requirement, as the NVIDIA Container Toolkit reads it
    // (`report::IMAGE_REQUIREMENT_VARS`).
    "NVIDIA_REQUIRE_CUDA",
    "NVIDIA_DISABLE_REQUIRE",
    "CUDA_VERSION",
    // nvcc's own flags (`-allow-unsupported-compiler`); the variables naming its host compiler
    // are read by `host_compiler` and named in `host_compiler.via`.
    "NVCC_APPEND_FLAGS",
    "NVCC_PREPEND_FLAGS",
    // The ptxas Triton uses instead of the one in its wheel (`triton-ptxas-too-old-for-gpu`).
    "TRITON_PTXAS_PATH",
    "TRITON_PTXAS_BLACKWELL_PATH",
    // Triton 3.3's name for ptxas-blackwell's variable (set with `env`, not `export`).
    "TRITON_PTXAS-BLACKWELL_PATH",
    // numba-cuda's binding and its minor-version compatibility (`numba-ptx-newer-than-driver`).
    "NUMBA_CUDA_USE_NVIDIA_BINDING",
    "NUMBA_CUDA_ENABLE_MINOR_VERSION_COMPATIBILITY",
    "NUMBA_CUDA_ENABLE_PYNVJITLINK",
    // A Slurm job: Slurm sets ROCR_VISIBLE_DEVICES beside CUDA_VISIBLE_DEVICES for its GPU tasks
    // (`visible-devices-hides-gpus` names gres.conf's `Flags=nvidia_gpu_env`).
    "SLURM_JOB_ID",
    // The CUDA version whose library bitsandbytes loads instead of torch's (`cextension.py`).
    "BNB_CUDA_VERSION",
];

/// `probes[].source` of the facts a `--host-root` run took from its own container: NVML,
/// libcuda and the container's nvidia-smi.
pub(crate) const CONTAINER_SOURCE: &str = "container";

/// Runs every probe and returns the report without findings.
/// `set` is the run's manifest set, which one probe asks in a rare fallback (see
/// [`linkmap::probe`]).
#[must_use]
pub(crate) fn gather(host: &Host, set: &SetInUse) -> Report {
    let host = &host.with_budget(host.timeout + crate::host::budget::SLACK);
    // The driver probe (the NVML child, or nvidia-smi) needs nothing the other probes find and
    // nothing needs it until the report is put together: it runs beside the whole scan (issue
    // 29: once the interpreters' answers are cached, it is the longest probe on a GPU machine).
    std::thread::scope(|s| {
        let driver = s.spawn(|| timed("driver", || driver::probe(host)));
        gather_besides(host, set, move || driver.join())
    })
}

type Driven = (driver::DriverFacts, ProbeRecord);

/// What the first stage of probes found: each needs nothing but the machine.
struct FirstStage {
    system: crate::report::HostInfo,
    pci: Vec<crate::report::PciDevice>,
    kernel: crate::report::KernelInfo,
    loader: loader::LoaderPath,
    python_envs: Vec<crate::report::PythonEnv>,
}

/// What the second stage found, from the first stage's facts.
struct SecondStage {
    toolkits: Vec<crate::report::Toolkit>,
    host_compiler: Option<crate::report::HostCompiler>,
    driver_libraries: Vec<crate::report::DriverLibrary>,
    libraries: crate::report::Libraries,
    rocm: Option<RocmStack>,
    amd_gpus: Vec<crate::report::Gpu>,
}

/// The first stage: the system, the PCI bus, the kernel, the loader's path and the Python
/// environments, side by side.
fn first_stage(host: &Host, records: &mut Vec<ProbeRecord>) -> FirstStage {
    let ((system, pci, kernel, loader), python) = std::thread::scope(|s| {
        let system = s.spawn(|| timed("system", || system::probe(host)));
        let pci = s.spawn(|| timed("pci", || pci::probe(host)));
        let kernel = s.spawn(|| timed("kernel", || kernel::probe(host)));
        let loader = s.spawn(|| timed("loader-path", || loader::LoaderPath::discover(host)));
        let python = timed("python", || python::probe(host));
        (
            (system.join(), pci.join(), kernel.join(), loader.join()),
            python,
        )
    });
    // A probe thread that panicked (a bug) costs its own facts only.
    let (system, system_rec) = system.unwrap_or_else(|_| panicked("system"));
    let (pci, mut pci_rec) = pci.unwrap_or_else(|_| panicked("pci"));
    if pci_rec.status == ProbeStatus::Ok && host.fs.read_dir("/sys/bus/pci/devices").is_empty() {
        // Told apart from "listed, and no GPU on it": only a bus that was read shows absence.
        pci_rec.status = ProbeStatus::Absent;
        pci_rec.detail = Some("/sys/bus/pci/devices could not be listed".to_string());
    }
    let (kernel, kernel_rec) = kernel.unwrap_or_else(|_| panicked("kernel"));
    let (loader, loader_rec) = loader.unwrap_or_else(|_| panicked("loader-path"));
    let (python_envs, python_rec) = python;
    records.extend([system_rec, pci_rec, kernel_rec, loader_rec, python_rec]);
    FirstStage {
        system,
        pci,
        kernel,
        loader,
        python_envs,
    }
}

/// What the module files of the running kernel say, written into the kernel facts.
#[derive(Default)]
struct ModuleFacts {
    /// Read only where the kernel release is known.
    files: Option<ModuleFiles>,
    /// The module signing key.
    signing_key: Option<String>,
    /// The distribution's kernel-module packages.
    packages: Vec<String>,
}

/// The running kernel's module files.
struct ModuleFiles {
    /// The NVIDIA module files.
    nvidia: Vec<String>,
    /// Where it can matter (the nvidia module loaded and an InfiniBand module of the NVLink5
    /// fabric not), the fabric's InfiniBand modules the kernel does not have at all.
    infiniband_absent: Option<Vec<String>>,
    /// What the NVIDIA module files' own `.modinfo` says, read while the module is not loaded.
    info: Vec<ModuleFileInfo>,
    /// While the module is not loaded: its local builds (DKMS, akmods) and, where there are
    /// any, whether the running kernel's headers are there to build it.
    builds: Vec<crate::report::ModuleBuild>,
    headers: Option<bool>,
    /// While no module is there for the running kernel: the other kernels that have one.
    other_kernels: Vec<String>,
    /// While a module built for the running kernel is not loaded under Secure Boot: whether
    /// the kernel's config has the machine keyring that trusts MOK keys for modules.
    machine_keyring: Option<bool>,
}

/// The kernel option that puts MOK keys where module signatures are checked (Linux 5.18+).
const MACHINE_KEYRING: &str = "CONFIG_INTEGRITY_MACHINE_KEYRING";

fn module_facts(host: &Host, first: &FirstStage) -> ModuleFacts {
    let kernel = &first.kernel;
    let files = first.system.kernel_release.as_deref().map(|release| {
        let files = module_files::nvidia_modules(host, release);
        let absent = kernel.nvidia_loaded.then(|| {
            let unloaded: Vec<&str> = crate::report::NVLINK5_INFINIBAND_MODULES
                .into_iter()
                .filter(|m| !kernel.infiniband_modules.iter().any(|x| x == m))
                .collect();
            module_files::absent_modules(host, release, &unloaded)
        });
        // The module's own `.modinfo` matters only while it is not loaded: a loaded one
        // names its flavour in `/proc/driver/nvidia/version`.
        let info = if kernel.nvidia_loaded {
            Vec::new()
        } else {
            module_files::module_info(host, &files)
        };
        // A loaded module needs no build; an unloaded one's builds say why it is missing.
        let builds = if kernel.nvidia_loaded {
            Vec::new()
        } else {
            module_builds::probe(host)
        };
        let headers = if builds.is_empty() {
            None
        } else {
            module_builds::kernel_headers(host, release)
        };
        let other_kernels = if kernel.nvidia_loaded || !files.is_empty() {
            Vec::new()
        } else {
            module_builds::other_kernels_with_module(host, release)
        };
        let machine_keyring =
            (!kernel.nvidia_loaded && !files.is_empty() && first.system.secure_boot == Some(true))
                .then(|| host.fs.read_opt(format!("/boot/config-{release}")))
                .flatten()
                .and_then(|config| crate::parse::kernel::config_option(&config, MACHINE_KEYRING));
        ModuleFiles {
            nvidia: files,
            infiniband_absent: absent,
            info,
            builds,
            headers,
            other_kernels,
            machine_keyring,
        }
    });
    ModuleFacts {
        files,
        signing_key: module_files::signing_key(host),
        packages: module_files::driver_packages(host),
    }
}

/// The second stage needs the first one's facts; its groups need nothing of each other but
/// the toolkits, so they run side by side (issue 29: the scan is as long as its longest chain,
/// and this one ran beside the driver probe for about as long). The kernel facts it finds are
/// written into `first.kernel`.
fn second_stage(
    host: &Host,
    set: &SetInUse,
    first: &mut FirstStage,
    records: &mut Vec<ProbeRecord>,
) -> SecondStage {
    let conda: Vec<PathBuf> = first
        .python_envs
        .iter()
        .filter(|e| e.kind == EnvKind::Conda)
        .map(|e| PathBuf::from(&e.path))
        .collect();
    let f = &*first;
    let (modules, services, driver_libraries, rocm_found, toolkits, libraries, resolution) =
        std::thread::scope(|s| {
            let modules = s.spawn(|| module_facts(host, f));
            let services = s.spawn(|| {
                timed("services", || {
                    services::probe(
                        host,
                        f.kernel.daemons.as_ref(),
                        f.system.container.is_some(),
                    )
                })
            });
            let driver_libraries = s.spawn(|| {
                timed("driver-libraries", || {
                    driver_libs::probe(host, &f.loader, f.system.wsl)
                })
            });
            let rocm = s.spawn(|| {
                timed("rocm", || {
                    let topology = amd::topology(host);
                    let gpus = amd::gpus(host, &f.pci, &topology);
                    (rocm::probe(host, &f.kernel, &f.pci, &topology), gpus)
                })
            });
            let toolkits = timed("toolkits", || toolkit::probe(host, &conda));
            let (libraries, resolution) = std::thread::scope(|s| {
                let libraries = s.spawn(|| {
                    timed("libraries", || {
                        libs::probe(host, &f.loader, &toolkits.0, &f.python_envs)
                    })
                });
                let resolution = timed("library-resolution", || {
                    linkmap::probe(host, &f.loader, &toolkits.0, &f.python_envs, set)
                });
                (libraries.join(), resolution)
            });
            (
                modules.join(),
                services.join(),
                driver_libraries.join(),
                rocm.join(),
                toolkits,
                libraries,
                resolution,
            )
        });
    let kernel = &mut first.kernel;
    let modules = modules.unwrap_or_default();
    kernel.module_packages = modules.packages;
    if let Some(files) = modules.files {
        kernel.module_files = files.nvidia;
        kernel.module_info = files.info;
        kernel.module_builds = files.builds;
        kernel.kernel_headers = files.headers;
        kernel.module_kernels = files.other_kernels;
        kernel.machine_keyring = files.machine_keyring;
        if let Some(absent) = files.infiniband_absent {
            kernel.infiniband_modules_absent = absent;
        }
    }
    kernel.module_signing_key = modules.signing_key;
    let (services, rec) = services.unwrap_or_else(|_| panicked("services"));
    kernel.services = services;
    records.push(rec);
    let (toolkits, rec) = toolkits;
    records.push(rec);
    let host_compiler = host_compiler::probe(host, &toolkits);
    let (driver_libraries, rec) = driver_libraries.unwrap_or_else(|_| panicked("driver-libraries"));
    records.push(rec);
    let (mut libraries, rec) = libraries.unwrap_or_else(|_| panicked("libraries"));
    records.push(rec);
    let (resolved, rec) = resolution;
    libraries.loads = resolved.loads;
    libraries.loader_table = resolved.table;
    libraries.symbol_gaps = resolved.symbol_gaps;
    libraries.symbols_unread = resolved.symbols_unread;
    records.push(rec);
    let ((rocm, amd_gpus), rec) = rocm_found.unwrap_or_else(|_| panicked("rocm"));
    records.push(rec);
    if let Some(version) = rocm.as_ref().and_then(rocm::main_version) {
        kernel.rocm_version = Some(version);
    }
    rocm_wheels::enrich(host, &mut first.python_envs);
    SecondStage {
        toolkits,
        host_compiler,
        driver_libraries,
        libraries,
        rocm,
        amd_gpus,
    }
}

/// The topology probe's answer from its thread: the matrix and its record, nothing when it did
/// not run, and a record of the panic when its thread died.
fn joined_topology(
    topo: std::thread::Result<Option<(Option<crate::report::topology::Topology>, ProbeRecord)>>,
    records: &mut Vec<ProbeRecord>,
) -> Option<crate::report::topology::Topology> {
    match topo {
        Ok(Some((topology, rec))) => {
            records.push(rec);
            topology
        }
        Ok(None) => None,
        Err(_) => {
            records.push(panicked::<()>("topology").1);
            None
        }
    }
}

/// Under `--host-root`, whose facts each probe gave: the node's, or the container's own for a
/// driver answered by the container's NVML and nvidia-smi.
fn mark_sources(host: &Host, records: &mut [ProbeRecord], smi_from_node: bool) {
    if let Some(node) = host.host_root_source() {
        for record in records {
            let container = record.name == "driver" && !smi_from_node;
            record.source = Some(if container {
                CONTAINER_SOURCE.to_string()
            } else {
                node.clone()
            });
        }
    }
}

/// Every probe but the driver's, whose result `driver` waits for at the end.
fn gather_besides(
    host: &Host,
    set: &SetInUse,
    driver: impl FnOnce() -> std::thread::Result<Driven>,
) -> Report {
    let mut records: Vec<ProbeRecord> = Vec::new();
    let mut first = first_stage(host, &mut records);
    // nvidia-smi topo -m (several GPUs only) runs beside the second stage: it takes nvidia-smi's
    // start-up time, which nothing else waits for.
    let pci = first.pci.clone();
    let (second, topo) = std::thread::scope(|s| {
        let topo = s.spawn(|| topology::probe(host, &pci));
        let second = second_stage(host, set, &mut first, &mut records);
        (second, topo.join())
    });
    let SecondStage {
        toolkits,
        host_compiler,
        driver_libraries,
        libraries,
        rocm,
        amd_gpus,
    } = second;
    let topology = joined_topology(topo, &mut records);
    let FirstStage {
        system,
        pci,
        kernel,
        python_envs,
        ..
    } = first;
    let (mut driver, mut driver_rec) = driver().unwrap_or_else(|_| panicked("driver"));
    if driver_rec.detail.is_none() {
        driver_rec.detail = driver.phases.take();
    }
    records.push(driver_rec);
    driver::fill_from_kernel(&mut driver, &kernel);
    let smi_from_node = driver.smi_from_node;
    let mut gpus = driver.gpus;
    if gpus.is_empty() {
        gpus = gpus_from_pci(host, &pci);
    }
    let mut gpus = with_amd(gpus, amd_gpus);
    if let Some(record) = cap_gpus(&mut gpus) {
        records.push(record);
    }
    records.sort_by(|a, b| a.name.cmp(&b.name));
    mark_sources(host, &mut records, smi_from_node);
    let mut report = Report {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: env!("CARGO_PKG_NAME").to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            root: host
                .is_rooted()
                .then(|| host.fs.root().display().to_string()),
            host_root: host.host_root().map(|r| r.display().to_string()),
        },
        // Stamped by `examine::examine`, which owns the clock.
        generated_at: None,
        // Filled in by `examine::examine` from the set the settings pass chose.
        manifests: crate::report::ManifestSet::default(),
        host: system,
        pci_devices: pci,
        kernel,
        driver: driver.driver,
        gpus,
        topology,
        driver_libraries,
        toolkits,
        host_compiler,
        ptxas: Vec::new(),
        libraries,
        python_envs,
        rocm,
        environment: REPORTED_VARS
            .iter()
            .filter_map(|k| {
                host.env.get(k).map(|v| EnvVar {
                    name: (*k).to_string(),
                    value: v.to_string(),
                })
            })
            .collect(),
        overrides: Vec::new(),
        probes: records,
        findings: Vec::new(),
        smoke: None,
        explain: None,
    };
    let from_pid1 =
        image_env::from_pid1(host, report.host.container.is_some(), &report.environment);
    report.environment.extend(from_pid1);
    report.ptxas = ptxas::probe(host, &report.environment);
    overrides::apply(&host.env, &mut report);
    report.probes.extend(limits_met(host));
    report
}

/// Keeps the first [`MAX_DEVICES`](crate::host::gpu::MAX_DEVICES) GPUs, as the NVML children
/// believe no more: a listing of tens of thousands (an nvidia-smi stand-in's 16 MiB of XML,
/// 20,000 PCI devices or KFD nodes) made every face's memory grow with it (30,000 GPUs:
/// `doctor --json` 223 MB). A record says how many were found when some were left out.
fn cap_gpus(gpus: &mut Vec<crate::report::Gpu>) -> Option<ProbeRecord> {
    let max = usize::try_from(crate::host::gpu::MAX_DEVICES).unwrap_or(usize::MAX);
    let found = gpus.len();
    if found <= max {
        return None;
    }
    gpus.truncate(max);
    gpus.shrink_to_fit();
    Some(ProbeRecord {
        name: "gpus".to_string(),
        status: ProbeStatus::Skipped,
        detail: Some(format!(
            "{found} GPUs found; only the first {max} are in the report (gpu-doctor's device cap)"
        )),
        duration_ms: 0,
        source: None,
    })
}

/// Records for what the scan's limits stopped: files refused or cut (`reads`) and commands
/// not started once the time budget was spent (`budget`). None when nothing was stopped.
fn limits_met(host: &Host) -> Vec<ProbeRecord> {
    let mut out = Vec::new();
    let notes = host.fs.notes();
    if !notes.is_empty() {
        out.push(ProbeRecord {
            name: "reads".to_string(),
            status: ProbeStatus::Failed,
            detail: Some(notes.join("; ")),
            duration_ms: 0,
            source: host.host_root_source(),
        });
    }
    if let Some(skipped) = host.budget.as_ref().map(|b| b.skipped())
        && !skipped.is_empty()
    {
        out.push(ProbeRecord {
            name: "budget".to_string(),
            status: ProbeStatus::Skipped,
            detail: Some(format!(
                "the scan's time budget ({:.1} s) was spent; not run: {}",
                (host.timeout + crate::host::budget::SLACK).as_secs_f64(),
                skipped.join("; ")
            )),
            duration_ms: 0,
            source: None,
        });
    }
    out
}

/// With no driver answering, the PCI bus still shows which NVIDIA GPUs are there, and a loaded
/// module still names them in `/proc/driver/nvidia/gpus/<address>/information`.
fn gpus_from_pci(host: &Host, pci: &[crate::report::PciDevice]) -> Vec<crate::report::Gpu> {
    pci.iter()
        .filter(|d| d.vendor == "nvidia" && !d.nvswitch)
        .enumerate()
        .map(|(i, d)| {
            let info = host
                .fs
                .read_opt(format!(
                    "/proc/driver/nvidia/gpus/{}/information",
                    d.address
                ))
                .map(|t| crate::parse::proc_nvidia::parse_gpu_information(&t));
            let filled_from = if info.as_ref().is_some_and(|i| i.model.is_some()) {
                vec!["name: /proc/driver/nvidia/gpus".to_string()]
            } else {
                Vec::new()
            };
            (i, d, info, filled_from)
        })
        .map(|(i, d, info, filled_from)| crate::report::Gpu {
            index: u32::try_from(i).unwrap_or(u32::MAX),
            name: info.as_ref().and_then(|i| i.model.clone()),
            uuid: info.as_ref().and_then(|i| i.uuid.clone()),
            filled_from,
            pci_bus_id: Some(nvml_bus_id(&d.address)),
            pci_device_id: Some(d.device_id.clone()).filter(|id| !id.is_empty()),
            pci_subsystem_id: d.subsystem_id.clone(),
            pcie_gen_current: d.link_gen_current,
            pcie_gen_max: d.link_gen_max,
            pcie_width_current: d.link_width_current,
            pcie_width_max: d.link_width_max,
            source: GpuSource::Pci,
            ..crate::report::Gpu::default()
        })
        .collect()
}

/// NVIDIA's GPUs and AMD's in one list. With no AMD GPU the NVIDIA list is kept as the driver
/// gave it; with both, every GPU takes its place in PCI bus order and `index` is renumbered.
fn with_amd(
    nvidia: Vec<crate::report::Gpu>,
    amd: Vec<crate::report::Gpu>,
) -> Vec<crate::report::Gpu> {
    if amd.is_empty() {
        return nvidia;
    }
    let mut all: Vec<crate::report::Gpu> = nvidia.into_iter().chain(amd).collect();
    // A GPU without a bus id (an override) goes last.
    all.sort_by(|a, b| match (&a.pci_bus_id, &b.pci_bus_id) {
        (Some(x), Some(y)) => x.to_ascii_lowercase().cmp(&y.to_ascii_lowercase()),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    for (i, gpu) in all.iter_mut().enumerate() {
        gpu.index = u32::try_from(i).unwrap_or(u32::MAX);
    }
    all
}

/// sysfs names a device `0000:01:00.0`; NVML and nvidia-smi use an 8-digit domain,
/// `00000000:01:00.0`. GPUs read from the bus use the driver's form so both compare equal.
fn nvml_bus_id(address: &str) -> String {
    match address.split_once(':') {
        Some((domain, rest))
            if domain.len() < 8 && domain.bytes().all(|b| b.is_ascii_hexdigit()) =>
        {
            format!("{domain:0>8}:{rest}")
        }
        _ => address.to_string(),
    }
}

/// The most threads one probe starts for its items (environments, frameworks): 5,000 conda
/// environments are read by this many threads, not 5,000.
pub(crate) const MAX_THREADS: usize = 8;

/// `f` of every item, on at most [`MAX_THREADS`] threads, in the items' order; an item whose
/// `f` panicked (a bug) is left out, the others kept.
pub(crate) fn in_parallel<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let threads = items.len().clamp(1, MAX_THREADS);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break };
                        let result =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(item)));
                        if let Ok(r) = result {
                            out.push((i, r));
                        }
                    }
                    out
                })
            })
            .collect();
        workers
            .into_iter()
            .filter_map(|w| w.join().ok())
            .flatten()
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

fn timed<T>(name: &str, f: impl FnOnce() -> T) -> (T, ProbeRecord) {
    let start = Instant::now();
    let value = f();
    let record = ProbeRecord {
        name: name.to_string(),
        status: ProbeStatus::Ok,
        detail: None,
        duration_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
        source: None,
    };
    (value, record)
}

fn panicked<T: Default>(name: &str) -> (T, ProbeRecord) {
    (
        T::default(),
        ProbeRecord {
            name: name.to_string(),
            status: ProbeStatus::Failed,
            detail: Some(
                "the probe crashed; this is a gpu-doctor bug, please report it".to_string(),
            ),
            duration_ms: 0,
            source: None,
        },
    )
}
