//! Is the machine set up to run GPU jobs at full speed? Settings that work but cost time, each
//! judged only from evidence this machine gave. Findings: `persistence-mode-off`,
//! `nccl-interface-unset`, `cuda-launch-blocking-set` (info) and
//! `pytorch-alloc-conf-unknown-key` (warning).
//!
//! Not a finding here, by decision: "TF32 / BF16 available, enable it". Every Ampere or newer
//! GPU with a torch build would carry it on every run, and the doctor cannot see whether the
//! user's code already sets `torch.set_float32_matmul_precision('high')` or autocast, so the
//! finding could never be resolved by the user and would turn a healthy report into a list of
//! reminders. The same advice, tied to each GPU's compute capability, is in `gpu-doctor advise`
//! (see `crate::guide::advise`), where it is asked for.
//!
//! GPUs of different models, thermal throttling and slow PCIe links are covered by
//! `mixed-gpu-models`, `gpu-thermal-throttle` and `pcie-link-degraded` in `health/`.

use super::health::gpu_label;
use super::ids;
use super::{FindingBuilder, env_var as env};
use crate::manifest::{Manifests, Segment};
use crate::report::GpuSource;
use crate::report::{Finding, Gpu, NetInterface, Report, Severity};

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    out.extend(persistence_mode_off(report, manifests));
    out.extend(nccl_interface_unset(report));
    out.extend(cuda_launch_blocking(report));
    out.extend(alloc_conf_unknown_keys(report));
    out
}

/// GPUs with readings from the driver: overrides and bus-only GPUs have no settings to judge.
fn driver_gpus(report: &Report) -> impl Iterator<Item = &Gpu> {
    report
        .gpus
        .iter()
        .filter(|g| g.source == GpuSource::Nvml || g.source == GpuSource::NvidiaSmi)
}

// ---------------------------------------------------------------------------------------------
// persistence-mode-off

/// The GPU table's name for a GPU when the table calls it a data-center GPU: by PCI device id,
/// else by the reported name when every row that name fits is a data-center row.
fn datacenter_row<'a>(gpu: &Gpu, manifests: &'a Manifests) -> Option<&'a str> {
    if let Some(row) = gpu
        .pci_device_id
        .as_deref()
        .and_then(|id| manifests.gpus.by_pci_id(id))
    {
        return (row.segment == Segment::Datacenter).then_some(row.name.as_str());
    }
    let rows = manifests.gpus.by_name(gpu.name.as_deref()?);
    let first = rows.first()?;
    rows.iter()
        .all(|r| r.segment == Segment::Datacenter)
        .then_some(first.name.as_str())
}

/// A data-center GPU whose driver reports persistence mode off.
///
/// Without persistence the driver tears the GPU's state down when the last program using it
/// exits and builds it again for the next one, so every job start and every `nvidia-smi` call
/// waits for GPU initialisation. NVIDIA recommends the persistence daemon on Linux data-center
/// GPUs (<https://docs.nvidia.com/deploy/driver-persistence/>), and DCGM's level-1 diagnostic
/// has a "Persistence Mode" check (`reference/peers.md` §6). Desktop and workstation cards are
/// not judged: a display keeps their driver loaded, and their owners start jobs by hand.
fn persistence_mode_off(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let hit: Vec<(&Gpu, &str)> = driver_gpus(report)
        .filter(|g| g.persistence_mode == Some(false))
        .filter_map(|g| datacenter_row(g, manifests).map(|row| (g, row)))
        .collect();
    let (first, _) = hit.first()?;
    let indices: Vec<String> = hit.iter().map(|(g, _)| g.index.to_string()).collect();
    let title = if hit.len() == 1 {
        format!("Persistence mode is off on data-center GPU {}", first.index)
    } else {
        format!(
            "Persistence mode is off on data-center GPUs {}",
            indices.join(", ")
        )
    };
    let mut f = FindingBuilder::new(&ids::PERSISTENCE_MODE_OFF, Severity::Info, title).detail(
        "With persistence mode off, the driver tears down the GPU's state when the last program \
         using it exits and sets it up again for the next one, so every job start (and every \
         nvidia-smi call) waits for the GPU to initialise, which can take seconds on servers \
         with several GPUs. NVIDIA recommends running the persistence daemon on Linux \
         data-center GPUs, and DCGM's level-1 diagnostic checks for it.",
    );
    for (gpu, row) in &hit {
        f = f
            .evidence(format!(
                "{}: persistence mode Disabled (from {})",
                gpu_label(gpu),
                gpu.source
            ))
            .evidence(format!(
                "GPU {}: {row} is a data-center GPU (gpus.toml)",
                gpu.index
            ))
            .subject(gpu.subject());
    }
    let daemon_running = report
        .kernel
        .daemons
        .as_ref()
        .map(|d| d.iter().any(|name| name == "nvidia-persistenced"));
    f = f.evidence(match daemon_running {
        Some(true) => "nvidia-persistenced is running (/proc)".to_string(),
        Some(false) => "nvidia-persistenced is not running (/proc)".to_string(),
        None => {
            "whether nvidia-persistenced runs is unknown (/proc could not be listed)".to_string()
        }
    });
    let where_ = super::gpu_modes::on_the_host(report);
    let fix = if daemon_running == Some(true) {
        format!(
            "{where_}check how the daemon is started (`systemctl cat nvidia-persistenced`): \
             `--no-persistence-mode` leaves persistence off. To turn it on now: \
             `sudo nvidia-smi -i {} -pm 1`.",
            indices.join(",")
        )
    } else {
        format!(
            "{where_}`sudo systemctl enable --now nvidia-persistenced` (the daemon NVIDIA \
             recommends; it keeps persistence across reboots). `sudo nvidia-smi -pm 1` turns it \
             on until the next reboot."
        )
    };
    // The host's steps; in a container `where_` has said so.
    Some(
        f.fix_on_host_if(report.host.container.is_none())
            .fix(fix)
            .build(),
    )
}

// ---------------------------------------------------------------------------------------------
// nccl-interface-unset

/// Interfaces NCCL could send traffic to other machines through: up, and backed by a device.
///
/// NCCL, left to itself, uses interfaces starting with `ib` first and then any other except
/// `lo` and `docker*` (NCCL docs, "Environment Variables", `NCCL_SOCKET_IFNAME`). Software
/// interfaces (bridges, veth pairs, tunnels) rarely carry an address the other nodes can reach,
/// so only device-backed ones are counted: two of those is the case where NCCL's choice can
/// land on the wrong network (a management NIC instead of the fast fabric).
fn nccl_candidates(interfaces: &[NetInterface]) -> Vec<&NetInterface> {
    interfaces
        .iter()
        .filter(|i| i.has_device)
        .filter(|i| i.operstate.as_deref() == Some("up"))
        .filter(|i| i.link_type.as_deref() != Some("loopback"))
        .collect()
}

/// Several GPUs and several device-backed interfaces up, with neither `NCCL_SOCKET_IFNAME` nor
/// `NCCL_IB_HCA` naming the one to use.
///
/// Info, not a warning: on one machine NCCL moves data over NVLink or PCIe and the choice of
/// network matters only for its start-up handshake; it matters for jobs that span machines,
/// which the doctor cannot see coming.
fn nccl_interface_unset(report: &Report) -> Option<Finding> {
    let gpus: Vec<&Gpu> = driver_gpus(report).collect();
    if gpus.len() < 2 {
        return None;
    }
    let interfaces = report.host.network_interfaces.as_deref()?;
    let candidates = nccl_candidates(interfaces);
    if candidates.len() < 2 {
        return None;
    }
    let set = |name| env(report, name).is_some_and(|v| !v.trim().is_empty());
    if set("NCCL_SOCKET_IFNAME") || set("NCCL_IB_HCA") {
        return None;
    }
    let listed: Vec<String> = candidates
        .iter()
        .map(|i| match &i.link_type {
            Some(kind) => format!("{} ({kind})", i.name),
            None => i.name.clone(),
        })
        .collect();
    let mut f = FindingBuilder::new(
        &ids::NCCL_INTERFACE_UNSET,
        Severity::Info,
        format!(
            "{} GPUs and {} network interfaces, but NCCL is not told which to use",
            gpus.len(),
            candidates.len()
        ),
    )
    .detail(
        "When a job spans several machines, NCCL sends its traffic over one network interface. \
         Left to itself it takes InfiniBand interfaces (names starting with `ib`) first, then any \
         other except lo and docker, which on a machine with a management network and a fast \
         fabric can be the slow or unreachable one: jobs then run slowly or hang at start-up.",
    )
    .evidence(format!(
        "{} GPUs: {}",
        gpus.len(),
        gpus.iter()
            .map(|g| gpu_label(g))
            .collect::<Vec<_>>()
            .join(", ")
    ))
    .evidence(format!(
        "network interfaces up and backed by a device: {} (/sys/class/net)",
        listed.join(", ")
    ))
    .evidence("NCCL_SOCKET_IFNAME and NCCL_IB_HCA are not set");
    let nearest = nearest_hcas(report);
    if let Some((line, _)) = &nearest {
        f = f.evidence(line.clone());
    }
    for gpu in &gpus {
        f = f.subject(gpu.subject());
    }
    let example = candidates
        .iter()
        .find(|i| i.link_type.as_deref() == Some("infiniband"))
        .or_else(|| candidates.first())
        .map_or("eth0", |i| i.name.as_str());
    let mut fix = format!(
        "Name the interface on the network the other machines share, e.g. \
         `export NCCL_SOCKET_IFNAME=={example}` (a leading `=` matches the exact name; without it \
         the value is a prefix)."
    );
    if candidates
        .iter()
        .any(|i| i.link_type.as_deref() == Some("infiniband"))
    {
        match &nearest {
            Some((_, hcas)) if !hcas.is_empty() => fix.push_str(&format!(
                " For InfiniBand, also pick the adapters, those nearest the GPUs: \
                 `export NCCL_IB_HCA={}`.",
                hcas.join(",")
            )),
            _ => fix.push_str(
                " For InfiniBand, also pick the adapters: `export NCCL_IB_HCA=mlx5_0` with names \
                 from `ls /sys/class/infiniband`.",
            ),
        }
    }
    fix.push_str(
        " Check NCCL's choice with `NCCL_DEBUG=INFO`: its `NET/` lines name the interface.",
    );
    Some(f.fix(fix).build())
}

/// What `nvidia-smi topo -m` says of each GPU's nearest network cards, as one evidence line
/// ("GPU-NIC affinity (nvidia-smi topo -m): GPU0 mlx5_0 (PIX, NUMA 0), ..."), and the RDMA
/// devices nearest some GPU, in the matrix's order: the adapters for `NCCL_IB_HCA`. NCCL uses
/// a GPU's nearest NIC for GPUDirect RDMA when it sits at PIX or PXB (its "NET/IB: GPU Direct
/// RDMA" choice); a GPU whose nearest card is across the CPU (PHB, NODE, SYS) sends through host
/// memory. `None` without a matrix or NICs in it.
fn nearest_hcas(report: &Report) -> Option<(String, Vec<String>)> {
    let topo = report.topology.as_ref()?;
    if topo.nics.is_empty() {
        return None;
    }
    let mut hcas: Vec<String> = Vec::new();
    let mut parts = Vec::new();
    for gpu in &topo.gpus {
        let (nics, link) = topo.nearest_nics(gpu);
        let Some(link) = link else { continue };
        let names: Vec<&str> = nics
            .iter()
            .map(|n| n.device.as_deref().unwrap_or(n.label.as_str()))
            .collect();
        for nic in &nics {
            if let Some(device) = &nic.device
                && !hcas.contains(device)
            {
                hcas.push(device.clone());
            }
        }
        let numa = gpu
            .numa_node
            .map(|n| format!(", NUMA {n}"))
            .unwrap_or_default();
        parts.push(format!(
            "GPU{} {} ({link}{numa})",
            gpu.index,
            names.join("/")
        ));
    }
    let far = topo
        .gpus
        .iter()
        .filter(|g| topo.nearest_nics(g).1.is_some_and(|l| !l.is_close()))
        .count();
    let mut line = format!(
        "GPU-NIC affinity (nvidia-smi topo -m): {}",
        parts.join(", ")
    );
    if far > 0 {
        line.push_str(&format!(
            "; {far} GPU(s) have no NIC below their PCIe switch (nearest at PHB, NODE or SYS): \
             their network traffic crosses the CPU"
        ));
    }
    Some((line, hcas))
}

// ---------------------------------------------------------------------------------------------
// cuda-launch-blocking-set

/// `CUDA_LAUNCH_BLOCKING=1` left in the environment. CUDA documents the values 0 and 1: 1
/// "disables asynchronous kernel launches" (CUDA C++ Programming Guide, "CUDA Environment
/// Variables"), so every launch waits for the kernel to finish. Only `1` is judged.
fn cuda_launch_blocking(report: &Report) -> Option<Finding> {
    let value = env(report, "CUDA_LAUNCH_BLOCKING")?;
    if value.trim() != "1" {
        return None;
    }
    Some(
        FindingBuilder::new(
            &ids::CUDA_LAUNCH_BLOCKING_SET,
            Severity::Info,
            "CUDA_LAUNCH_BLOCKING=1 makes every GPU kernel launch wait for the kernel",
        )
        .detail(
            "CUDA_LAUNCH_BLOCKING=1 turns off asynchronous kernel launches: the CPU waits for \
             each kernel to finish before queuing the next, so the GPU idles between kernels and \
             training or inference runs much slower. It is a debugging switch (it makes a CUDA \
             error appear at the call that caused it, which is why PyTorch's error messages \
             suggest it) and is easy to forget in a shell profile, job script or image.",
        )
        .evidence(format!(
            "CUDA_LAUNCH_BLOCKING={value} in gpu-doctor's environment (the shell it was started from)"
        ))
        .fix(
            "When debugging is done: `unset CUDA_LAUNCH_BLOCKING`, and remove it from where it \
             was set (~/.bashrc, the job script, the container image's ENV).",
        )
        .build(),
    )
}

// ---------------------------------------------------------------------------------------------
// pytorch-alloc-conf-unknown-key

/// Every key PyTorch's CUDA caching allocator accepts, over its versions: the device-generic
/// keys of `AcceleratorAllocatorConfig::getKeys()` (`c10/core/AllocatorConfig.h`) and the CUDA
/// ones of `CUDAAllocatorConfig::getKeys()` (`c10/cuda/CUDAAllocatorConfig.h`), pytorch/pytorch
/// main; the older parser in `c10/cuda/CUDAAllocatorConfig.cpp` accepts a subset. The documented
/// list (<https://docs.pytorch.org/docs/stable/notes/cuda.html>, "Optimizing memory usage with
/// PYTORCH_CUDA_ALLOC_CONF") is a subset too. ROCm builds accept the `hip` spellings.
const KNOWN_ALLOC_KEYS: [&str; 18] = [
    "backend",
    "expandable_segments",
    "garbage_collection_threshold",
    "graph_capture_record_stream_reuse",
    "large_segment_size_mb",
    "max_non_split_rounding_mb",
    "max_split_size_mb",
    "per_process_memory_fraction",
    "pinned_free_catch_all",
    "pinned_num_register_threads",
    "pinned_reserve_segment_size_mb",
    "pinned_use_background_threads",
    "pinned_use_cuda_host_register",
    "pinned_use_hip_host_register",
    "release_lock_on_cudamalloc",
    "release_lock_on_hipmalloc",
    "roundup_power2_divisions",
    "throw_on_cudamalloc_oom",
];

/// The variables PyTorch reads its allocator settings from: `PYTORCH_CUDA_ALLOC_CONF`, and
/// `PYTORCH_ALLOC_CONF`, the device-generic name newer releases read too.
const ALLOC_CONF_VARS: [&str; 2] = ["PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"];

/// The option names in an allocator setting, as PyTorch's tokenizer sees them: items separated
/// by commas outside `[...]` (`roundup_power2_divisions:[256:1,>:4]` is one item), the name
/// being what comes before the first `:`, with spaces dropped.
fn alloc_conf_keys(value: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0_u32;
    let mut current = String::new();
    for c in value.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    items.push(current);
    items
        .iter()
        .map(|item| {
            item.split(':')
                .next()
                .unwrap_or_default()
                .chars()
                .filter(|c| *c != ' ')
                .collect::<String>()
        })
        .filter(|key| !key.is_empty())
        .collect()
}

/// The known key a misspelt one most likely meant: at most two edits away, so that
/// `expandable_segment` suggests `expandable_segments` and `foo` suggests nothing.
fn closest_key(key: &str) -> Option<&'static str> {
    KNOWN_ALLOC_KEYS
        .iter()
        .map(|known| (edit_distance(key, known), *known))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, known)| known)
}

/// Levenshtein distance over bytes (the keys are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.bytes().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

/// An allocator setting with a key PyTorch does not know.
///
/// A warning rather than tuning advice: PyTorch refuses such a setting at the first CUDA
/// allocation, with `RuntimeError: Unrecognized CachingAllocator option: <key>` (releases up to
/// 2.8, `CUDAAllocatorConfig::parseArgs`) or `Unrecognized key '<key>' in CUDA allocator config`
/// (later releases), so every torch program started from this environment fails on the GPU. Not
/// an error: a key newer than this list would be flagged too, so the finding says which list
/// it checked against.
fn alloc_conf_unknown_keys(report: &Report) -> Option<Finding> {
    let mut bad: Vec<(&str, &str, String)> = Vec::new();
    for var in ALLOC_CONF_VARS {
        let Some(value) = env(report, var) else {
            continue;
        };
        for key in alloc_conf_keys(value) {
            if !KNOWN_ALLOC_KEYS.contains(&key.as_str()) {
                bad.push((var, value, key));
            }
        }
    }
    let (first_var, _, first_key) = bad.first()?;
    let keys: Vec<&str> = bad.iter().map(|(_, _, k)| k.as_str()).collect();
    let mut f = FindingBuilder::new(
        &ids::PYTORCH_ALLOC_CONF_UNKNOWN_KEY,
        Severity::Warning,
        format!(
            "{first_var} has an option PyTorch does not know: {}",
            keys.join(", ")
        ),
    )
    .detail(
        "PyTorch reads its CUDA memory allocator settings from this variable when a program \
         first uses the GPU, and stops with \"Unrecognized CachingAllocator option\" (or \
         \"Unrecognized key ... in CUDA allocator config\" in newer releases) on a name it does \
         not know: every torch program started from this environment fails on the GPU. Names \
         are case-sensitive; options also differ between releases (expandable_segments needs \
         torch 2.1 or newer).",
    );
    let mut shown: Vec<&str> = Vec::new();
    for (var, value, key) in &bad {
        if !shown.contains(var) {
            f = f.evidence(format!("{var}={value}"));
            shown.push(var);
        }
        f = f.evidence(match closest_key(key) {
            Some(known) => format!("`{key}` is not an allocator option (did you mean `{known}`?)"),
            None => format!("`{key}` is not an allocator option"),
        });
    }
    f = f.evidence(format!(
        "options known to PyTorch's allocator (c10 AllocatorConfig / CUDAAllocatorConfig): {}",
        KNOWN_ALLOC_KEYS.join(", ")
    ));
    let fix = match closest_key(first_key) {
        Some(known) => format!(
            "Correct the name in {first_var} (`{first_key}` → `{known}`), or remove the option; \
             `python -c \"import torch; torch.zeros(1, device='cuda')\"` shows whether torch accepts it."
        ),
        None => format!(
            "Remove `{first_key}` from {first_var} (or correct it to one of the options listed), \
             then check with `python -c \"import torch; torch.zeros(1, device='cuda')\"`."
        ),
    };
    Some(f.fix(fix).build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::test_support::{has_evidence, ids, one};
    use crate::report::{EnvVar, KernelInfo};

    fn run(report: &Report) -> Vec<Finding> {
        findings(report, crate::manifest::embedded())
    }

    fn var(name: &str, value: &str) -> EnvVar {
        EnvVar {
            name: name.into(),
            value: value.into(),
        }
    }

    /// An A100 PCIe 40GB as nvidia-smi describes it, persistence on.
    fn a100(index: u32) -> Gpu {
        Gpu {
            index,
            name: Some("NVIDIA A100-PCIE-40GB".into()),
            pci_device_id: Some("0x20f1".into()),
            compute_capability: Some("8.0".into()),
            persistence_mode: Some(true),
            source: "nvidia-smi".into(),
            ..Gpu::default()
        }
    }

    fn rtx4090(index: u32) -> Gpu {
        Gpu {
            index,
            name: Some("NVIDIA GeForce RTX 4090".into()),
            pci_device_id: Some("0x2684".into()),
            compute_capability: Some("8.9".into()),
            persistence_mode: Some(false),
            source: "nvidia-smi".into(),
            ..Gpu::default()
        }
    }

    fn machine(gpus: Vec<Gpu>) -> Report {
        let mut r = Report {
            gpus,
            ..Report::default()
        };
        r.kernel = KernelInfo {
            daemons: Some(Vec::new()),
            ..KernelInfo::default()
        };
        r
    }

    fn nic(name: &str, kind: &str, state: &str, has_device: bool) -> NetInterface {
        NetInterface {
            name: name.into(),
            operstate: Some(state.into()),
            link_type: Some(kind.into()),
            has_device,
        }
    }

    #[test]
    fn a_healthy_machine_gives_no_tuning_findings() {
        assert!(run(&machine(vec![a100(0)])).is_empty());
        assert!(run(&Report::default()).is_empty());
    }

    #[test]
    fn persistence_off_on_a_datacenter_gpu_is_reported_with_the_daemon_state() {
        let mut off = a100(1);
        off.persistence_mode = Some(false);
        let found = run(&machine(vec![a100(0), off]));
        let f = one(&found, "persistence-mode-off");
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(f.title, "Persistence mode is off on data-center GPU 1");
        assert!(
            has_evidence(
                f,
                "GPU 1 (NVIDIA A100-PCIE-40GB): persistence mode Disabled (from nvidia-smi)"
            ),
            "{f:#?}"
        );
        assert!(
            has_evidence(f, "A100 40GB PCIe is a data-center GPU"),
            "{f:#?}"
        );
        assert!(
            has_evidence(f, "nvidia-persistenced is not running"),
            "{f:#?}"
        );
        assert_eq!(f.subjects, ["gpu:1"]);
        let fix = f.fix.as_deref().unwrap_or_default();
        assert!(
            fix.contains("systemctl enable --now nvidia-persistenced"),
            "{fix}"
        );
    }

    #[test]
    fn persistence_off_with_the_daemon_running_points_at_its_options() {
        let mut off = a100(0);
        off.persistence_mode = Some(false);
        let mut r = machine(vec![off]);
        r.kernel.daemons = Some(vec!["nvidia-persistenced".into()]);
        r.host.container = Some("docker".into());
        let found = run(&r);
        let fix = one(&found, "persistence-mode-off")
            .fix
            .clone()
            .unwrap_or_default();
        assert!(fix.starts_with("On the host"), "{fix}");
        assert!(fix.contains("--no-persistence-mode"), "{fix}");
        assert!(fix.contains("nvidia-smi -i 0 -pm 1"), "{fix}");
    }

    #[test]
    fn persistence_is_not_judged_on_consumer_cards_unknown_readings_or_overrides() {
        // A GeForce card with persistence off: a desktop, not a server.
        assert!(run(&machine(vec![rtx4090(0)])).is_empty());
        // Not reported by the driver: unknown is not "off".
        let mut unknown = a100(0);
        unknown.persistence_mode = None;
        assert!(run(&machine(vec![unknown])).is_empty());
        let mut overridden = a100(0);
        overridden.persistence_mode = Some(false);
        overridden.source = "override".into();
        assert!(run(&machine(vec![overridden])).is_empty());
        // A GPU the table does not know is not called a server GPU.
        let mut unknown_model = a100(0);
        unknown_model.persistence_mode = Some(false);
        unknown_model.pci_device_id = Some("0xffff".into());
        unknown_model.name = Some("NVIDIA Mystery".into());
        assert!(run(&machine(vec![unknown_model])).is_empty());
    }

    fn two_nic_machine() -> Report {
        let mut r = machine(vec![a100(0), a100(1)]);
        r.host.network_interfaces = Some(vec![
            nic("docker0", "ethernet", "up", false),
            nic("eth0", "ethernet", "up", true),
            nic("ib0", "infiniband", "up", true),
            nic("lo", "loopback", "unknown", false),
        ]);
        r
    }

    #[test]
    fn several_gpus_and_nics_without_nccl_settings_is_reported() {
        let found = run(&two_nic_machine());
        assert_eq!(ids(&found), ["nccl-interface-unset"]);
        let f = &found[0];
        assert_eq!(f.severity, Severity::Info);
        assert_eq!(
            f.title,
            "2 GPUs and 2 network interfaces, but NCCL is not told which to use"
        );
        assert!(
            has_evidence(
                f,
                "network interfaces up and backed by a device: eth0 (ethernet), ib0 (infiniband)"
            ),
            "{f:#?}"
        );
        let fix = f.fix.as_deref().unwrap_or_default();
        assert!(fix.contains("NCCL_SOCKET_IFNAME==ib0"), "{fix}");
        assert!(fix.contains("NCCL_IB_HCA"), "{fix}");
        assert_eq!(f.subjects, ["gpu:0", "gpu:1"]);
    }

    fn capture(file: &str) -> crate::report::topology::Topology {
        let path = format!(
            "{}/tests/data/nvidia-smi-topo/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        crate::parse::nvidia_smi::parse_topo(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn nccl_names_the_adapters_nearest_each_gpu_from_the_topology() {
        let mut r = two_nic_machine();
        r.topology = Some(capture("sglang-30401-hgx-8x-h100-8nic.txt"));
        let found = run(&r);
        let f = &found[0];
        assert!(
            has_evidence(
                f,
                "GPU-NIC affinity (nvidia-smi topo -m): GPU0 mlx5_0 (PIX, NUMA 0), \
                 GPU1 mlx5_1 (PIX, NUMA 0), GPU2 mlx5_2 (PIX, NUMA 0), GPU3 mlx5_3 (PIX, NUMA 0), \
                 GPU4 mlx5_4 (PIX, NUMA 1), GPU5 mlx5_5 (PIX, NUMA 1), GPU6 mlx5_6 (PIX, NUMA 1), \
                 GPU7 mlx5_7 (PIX, NUMA 1)"
            ),
            "{:?}",
            f.evidence
        );
        let fix = f.fix.as_deref().unwrap();
        assert!(
            fix.contains(
                "`export NCCL_IB_HCA=mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7`"
            ),
            "{fix}"
        );
        // A PCIe box whose cards sit across the host bridge from both GPUs says so.
        r.topology = Some(capture("stelline-puget-wrx90-2x-rtx6000ada.txt"));
        let found = run(&r);
        assert!(
            has_evidence(
                &found[0],
                "GPU-NIC affinity (nvidia-smi topo -m): GPU0 mlx5_0/mlx5_1 (NODE, NUMA 0), \
                 GPU1 mlx5_0/mlx5_1 (NODE, NUMA 0); 2 GPU(s) have no NIC below their PCIe switch \
                 (nearest at PHB, NODE or SYS): their network traffic crosses the CPU"
            ),
            "{:?}",
            found[0].evidence
        );
        // Without a matrix the finding reads as before.
        r.topology = None;
        let found = run(&r);
        assert!(!found[0].evidence.iter().any(|e| e.contains("affinity")));
        assert!(
            found[0]
                .fix
                .as_deref()
                .unwrap()
                .contains("`export NCCL_IB_HCA=mlx5_0` with names")
        );
    }

    #[test]
    fn nccl_is_quiet_when_told_or_when_there_is_no_choice() {
        for name in ["NCCL_SOCKET_IFNAME", "NCCL_IB_HCA"] {
            let mut r = two_nic_machine();
            r.environment = vec![var(name, "=ib0")];
            assert!(run(&r).is_empty(), "{name}");
        }
        // One GPU.
        let mut r = two_nic_machine();
        r.gpus.truncate(1);
        assert!(run(&r).is_empty());
        // One usable interface: the other is down, and software interfaces do not count.
        let mut r = two_nic_machine();
        r.host.network_interfaces = Some(vec![
            nic("docker0", "ethernet", "up", false),
            nic("eth0", "ethernet", "up", true),
            nic("eth1", "ethernet", "down", true),
        ]);
        assert!(run(&r).is_empty());
        // Interfaces not known at all: nothing to say.
        let mut r = two_nic_machine();
        r.host.network_interfaces = None;
        assert!(run(&r).is_empty());
    }

    #[test]
    fn cuda_launch_blocking_1_is_reported_and_0_is_not() {
        let mut r = machine(vec![a100(0)]);
        r.environment = vec![var("CUDA_LAUNCH_BLOCKING", "1")];
        let found = run(&r);
        let f = one(&found, "cuda-launch-blocking-set");
        assert_eq!(f.severity, Severity::Info);
        assert!(has_evidence(f, "CUDA_LAUNCH_BLOCKING=1"), "{f:#?}");
        assert!(
            f.fix
                .as_deref()
                .is_some_and(|x| x.contains("unset CUDA_LAUNCH_BLOCKING"))
        );
        for value in ["0", ""] {
            r.environment = vec![var("CUDA_LAUNCH_BLOCKING", value)];
            assert!(run(&r).is_empty(), "CUDA_LAUNCH_BLOCKING={value:?}");
        }
    }

    #[test]
    fn alloc_conf_keys_follow_pytorchs_tokenizer() {
        assert_eq!(
            alloc_conf_keys("expandable_segments:True, max_split_size_mb:512"),
            ["expandable_segments", "max_split_size_mb"]
        );
        // Commas and colons inside brackets belong to the value.
        assert_eq!(
            alloc_conf_keys("roundup_power2_divisions:[256:1,512:2,>:4],backend:native,"),
            ["roundup_power2_divisions", "backend"]
        );
        assert_eq!(alloc_conf_keys(""), Vec::<String>::new());
    }

    #[test]
    fn an_unknown_allocator_key_is_a_warning_with_a_suggestion() {
        let mut r = machine(vec![rtx4090(0)]);
        r.environment = vec![var(
            "PYTORCH_CUDA_ALLOC_CONF",
            "expandable_segment:True,max_split_size_mb:512",
        )];
        let found = run(&r);
        let f = one(&found, "pytorch-alloc-conf-unknown-key");
        assert_eq!(f.severity, Severity::Warning);
        assert_eq!(
            f.title,
            "PYTORCH_CUDA_ALLOC_CONF has an option PyTorch does not know: expandable_segment"
        );
        assert!(
            has_evidence(
                f,
                "`expandable_segment` is not an allocator option (did you mean `expandable_segments`?)"
            ),
            "{f:#?}"
        );
        assert!(
            f.fix
                .as_deref()
                .is_some_and(|x| x.contains("`expandable_segment` → `expandable_segments`"))
        );
        // Case matters to PyTorch, and a name far from any option gets no suggestion.
        r.environment = vec![var("PYTORCH_ALLOC_CONF", "Expandable_Segments:True,foo:1")];
        let found = run(&r);
        let f = one(&found, "pytorch-alloc-conf-unknown-key");
        assert!(
            has_evidence(f, "`foo` is not an allocator option"),
            "{f:#?}"
        );
        assert!(
            has_evidence(f, "did you mean `expandable_segments`"),
            "{f:#?}"
        );
    }

    #[test]
    fn known_allocator_keys_pass() {
        let mut r = machine(vec![rtx4090(0)]);
        r.environment = vec![var(
            "PYTORCH_CUDA_ALLOC_CONF",
            "backend:cudaMallocAsync,expandable_segments:True,garbage_collection_threshold:0.6,\
             roundup_power2_divisions:[256:1,>:4],pinned_use_cuda_host_register:True",
        )];
        assert!(run(&r).is_empty());
    }

    #[test]
    fn edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("backend", "backend"), 0);
        assert_eq!(closest_key("max_split_size"), None, "three edits away");
        assert_eq!(closest_key("max_split_sizemb"), Some("max_split_size_mb"));
    }
}
