//! WSL2's NVIDIA driver store: the folder of the Windows driver (`/usr/lib/wsl/drivers/
//! nv*.inf_amd64_*`) whose files CUDA under WSL loads, and which of them are not there.
//!
//! The NVIDIA Container Toolkit mounts a fixed list of them into a WSL container
//! (`requiredDriverStoreFiles`, nvidia-container-toolkit `pkg/nvcdi/driver-wsl.go`):
//! `libcuda.so.1.1`, `libcuda_loader.so`, `libnvidia-ptxjitcompiler.so.1`,
//! `libnvidia-ml.so.1`, `libnvidia-ml_loader.so`, `libnvdxgdmal.so.1`, `nvcubins.bin`,
//! `nvidia-smi`. Windows drivers 555 and newer added `libnvdxgdmal.so.1`, which libcuda needs
//! (NVIDIA/nvidia-container-toolkit#520); a Toolkit older than 1.14.4 / 1.15.0 does not mount it.
//!
//! Bounded: at most [`MAX_DIRS`] driver folders are looked at, only names are checked.

use crate::host::Host;
use crate::report::WslDriverStore;

/// The files the NVIDIA Container Toolkit mounts from the driver store (its
/// `requiredDriverStoreFiles`).
const REQUIRED_FILES: [&str; 8] = [
    "libcuda.so.1.1",
    "libcuda_loader.so",
    "libnvidia-ptxjitcompiler.so.1",
    "libnvidia-ml.so.1",
    "libnvidia-ml_loader.so",
    "libnvdxgdmal.so.1",
    "nvcubins.bin",
    "nvidia-smi",
];
const DRIVERS: &str = "/usr/lib/wsl/drivers";
const MAX_DIRS: usize = 64;

/// The first driver-store folder holding `libcuda.so.1.1` (the NVIDIA one, as the Toolkit picks
/// it), with the required files it lacks; `None` outside WSL or without such a folder. A file
/// WSL also maps into `/usr/lib/wsl/lib` counts as present.
#[must_use]
pub(crate) fn probe(host: &Host, wsl: bool) -> Option<WslDriverStore> {
    if !wsl {
        return None;
    }
    let dir = host
        .fs
        .read_dir(DRIVERS)
        .into_iter()
        .take(MAX_DIRS)
        .find(|d| host.fs.exists(d.path.join("libcuda.so.1.1")))?;
    let missing = REQUIRED_FILES
        .iter()
        .filter(|f| {
            !host.fs.exists(dir.path.join(f))
                && !host
                    .fs
                    .exists(std::path::Path::new("/usr/lib/wsl/lib").join(f))
        })
        .map(|f| (*f).to_string())
        .collect();
    Some(WslDriverStore {
        path: dir.path.display().to_string(),
        missing,
    })
}
