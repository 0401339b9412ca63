//! `container-shm-small`: a container's `/dev/shm` below what NCCL's guide asks for.
//!
//! NCCL keeps the buffers ranks on one node exchange in `/dev/shm` segments and fails to set
//! up when it cannot grow them ("failed to extend /dev/shm/nccl-… to N bytes"); PyTorch's
//! DataLoader workers pass batches through it and die with a bus error when it is full.
//! Docker and containerd give a container 64 MiB unless told otherwise. NCCL's
//! troubleshooting guide ("Shared memory", Docker) asks for `--shm-size=1g --ulimit
//! memlock=-1`; that 1 GiB is the line drawn here.

use super::*;

/// NCCL's guide: `--shm-size=1g`.
const NCCL_SHM_MIB: u64 = 1024;

pub(super) fn container_shm_small(report: &Report) -> Option<Finding> {
    let runtime = report.host.container.as_deref()?;
    let shm = report.host.shm_mib.filter(|m| *m < NCCL_SHM_MIB)?;
    let gpus = report.gpus.len();
    if gpus == 0 {
        return None;
    }
    // One GPU: NCCL talks to no other rank on the node, only DataLoader workers need the space.
    let severity = if gpus >= 2 {
        Severity::Warning
    } else {
        Severity::Info
    };
    let title = format!("This {runtime} container's /dev/shm is {shm} MiB (NCCL asks for 1 GiB)");
    let detail = if gpus >= 2 {
        "Ranks of a multi-GPU job on one node talk through shared-memory segments in /dev/shm; \
         NCCL cannot create them in this little space and stops during setup ('failed to \
         extend /dev/shm/nccl-...', 'unhandled system error'), and PyTorch DataLoader workers \
         die with 'bus error' when a batch does not fit."
    } else {
        "PyTorch DataLoader workers pass batches through /dev/shm and die with 'bus error' \
         (or 'insufficient shared memory') when one does not fit; with one GPU NCCL does not \
         need it."
    };
    let fix = if runtime == "kubernetes" {
        "Mount an `emptyDir` volume with `medium: Memory` (and a `sizeLimit`) at /dev/shm in the \
         pod spec: a pod's /dev/shm cannot be resized otherwise."
    } else {
        "Start the container with `--shm-size=1g` or more (NCCL's guide: `--shm-size=1g \
         --ulimit memlock=-1`), or with `--ipc=host` to use the host's /dev/shm; in Compose, \
         `shm_size: 1gb` or `ipc: host`."
    };
    Some(
        FindingBuilder::new(&ids::CONTAINER_SHM_SMALL, severity, title)
            .detail(detail)
            .evidence(format!(
                "/dev/shm: {shm} MiB (the size= of its tmpfs in /proc/self/mounts)"
            ))
            .evidence(format!("container: {runtime}"))
            .evidence(format!(
                "{gpus} GPU{} in this container",
                if gpus == 1 { "" } else { "s" }
            ))
            .fix(fix)
            .build(),
    )
}
