//! The one registry of finding IDs: every ID a rule, the smoke test or `--deep` can report, the
//! severities it may carry and what it means in a few words. IDs are a public interface
//! (`doctor --json`, `check`, Prometheus labels, README's findings table); tests keep this table,
//! the rules' `explains` lists and README in step, so a typo in an ID fails a test instead of
//! silently never matching. Depends on `report` only.

use crate::report::Severity;

/// One kind of finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    /// The stable ID ("driver-library-mismatch").
    pub id: &'static str,
    /// The severities it is reported with, most severe first.
    pub severities: &'static [Severity],
    /// What it means, in a few words.
    pub title: &'static str,
}

/// Every finding kind, in README's order.
pub const KINDS: &[Kind] = &[
    Kind {
        id: "no-gpu",
        severities: &[Severity::Info],
        title: "nothing on the PCI bus and no driver",
    },
    Kind {
        id: "no-driver",
        severities: &[Severity::Error],
        title: "an NVIDIA GPU is on the bus but the nvidia module is not loaded",
    },
    Kind {
        id: "amdgpu-not-loaded",
        severities: &[Severity::Error],
        title: "an AMD GPU is on the bus but the amdgpu module is not loaded",
    },
    Kind {
        id: "kfd-missing",
        severities: &[Severity::Error],
        title: "amdgpu drives the GPU but /dev/kfd is missing (a container started without it, or a kernel without KFD)",
    },
    Kind {
        id: "rocm-gpu-unsupported",
        severities: &[Severity::Error, Severity::Warning],
        title: "no ROCm release can run on the AMD GPU (GCN 1 to 4, or not taken by KFD)",
    },
    Kind {
        id: "rocm-device-permission",
        severities: &[Severity::Error],
        title: "the user may not open /dev/kfd or the GPU's render node (not in the render / video group)",
    },
    Kind {
        id: "rocm-too-old-for-gpu",
        severities: &[Severity::Error, Severity::Warning],
        title: "the installed ROCm predates the AMD GPU's gfx target",
    },
    Kind {
        id: "nova-core-bound",
        severities: &[Severity::Error],
        title: "nova_core (nouveau's Rust successor in newer kernels) holds the GPU, so the nvidia module cannot bind",
    },
    Kind {
        id: "nouveau-loaded",
        severities: &[Severity::Error],
        title: "the nouveau driver holds the GPU",
    },
    Kind {
        id: "driver-library-mismatch",
        severities: &[Severity::Error],
        title: "kernel module and user-space driver libraries differ",
    },
    Kind {
        id: "nvidia-smi-failed",
        severities: &[Severity::Error],
        title: "nvidia-smi is there but fails or hangs",
    },
    Kind {
        id: "driver-too-old-for-gpu",
        severities: &[Severity::Error],
        title: "the installed driver predates the GPU",
    },
    Kind {
        id: "driver-too-old-for-framework",
        severities: &[Severity::Error],
        title: "a framework's CUDA build needs a newer driver",
    },
    Kind {
        id: "toolkit-newer-than-driver",
        severities: &[Severity::Warning, Severity::Error],
        title: "a toolkit newer than the driver's CUDA",
    },
    Kind {
        id: "cpu-only-framework-build",
        severities: &[Severity::Warning, Severity::Info],
        title: "a CPU-only framework build on a machine with a usable GPU",
    },
    Kind {
        id: "arch-not-in-build",
        severities: &[Severity::Error],
        title: "the GPU's compute capability has neither SASS nor PTX in the build (AMD: its gfx target has no code in the ROCm build)",
    },
    Kind {
        id: "cuda-build-on-amd-gpu",
        severities: &[Severity::Error],
        title: "a framework's CUDA build on a machine whose GPUs are AMD",
    },
    Kind {
        id: "hsa-override-mismatch",
        severities: &[Severity::Error, Severity::Warning],
        title: "HSA_OVERRIDE_GFX_VERSION is malformed, names another family's target, or is needless",
    },
    Kind {
        id: "rocm-igpu-visible",
        severities: &[Severity::Warning],
        title: "ROCm sees an APU's integrated GPU beside the discrete one",
    },
    Kind {
        id: "wsl-rocm-runtime-bundled",
        severities: &[Severity::Error],
        title: "a ROCm torch under WSL2 loads its own HSA runtime instead of WSL's",
    },
    Kind {
        id: "cudnn-missing",
        severities: &[Severity::Error],
        title: "no loadable cuDNN of the major a framework needs",
    },
    Kind {
        id: "cudnn-version-mismatch",
        severities: &[Severity::Error, Severity::Warning],
        title: "the cuDNN that would load is older than the build's, or not the pinned wheel",
    },
    Kind {
        id: "library-path-shadowing",
        severities: &[Severity::Error, Severity::Warning],
        title: "the copy the loader picks is another version than the one the framework ships or pins",
    },
    Kind {
        id: "library-copies-differ",
        severities: &[Severity::Warning],
        title: "one process maps two copies of one CUDA library (one loaded by path, one by soname) and their versions differ",
    },
    Kind {
        id: "library-not-found",
        severities: &[Severity::Error],
        title: "a framework module needs a CUDA soname that no folder on its search path has",
    },
    Kind {
        id: "multiple-toolkits",
        severities: &[Severity::Warning],
        title: "nvcc on PATH, CUDA_HOME and /usr/local/cuda name different toolkits",
    },
    Kind {
        id: "toolkit-cannot-target-gpu",
        severities: &[Severity::Warning],
        title: "the toolkit extension builds use",
    },
    Kind {
        id: "toolkit-framework-cuda-mismatch",
        severities: &[Severity::Warning, Severity::Info],
        title: "that toolkit's CUDA differs from torch's build in the major",
    },
    Kind {
        id: "jax-version-skew",
        severities: &[Severity::Error, Severity::Warning],
        title: "jaxlib newer than jax",
    },
    Kind {
        id: "arch-check-skipped",
        severities: &[Severity::Info],
        title: "whether a torch build has kernels for a GPU could not be checked",
    },
    Kind {
        id: "framework-wheels-conflict",
        severities: &[Severity::Error],
        title: "frameworks in one environment pin different nvidia-* wheels",
    },
    Kind {
        id: "stub-libcuda-on-path",
        severities: &[Severity::Error, Severity::Warning],
        title: "a link-time stub libcuda is on the run-time loader path",
    },
    Kind {
        id: "forward-compat-unsupported",
        severities: &[Severity::Error],
        title: "a forward-compatibility libcuda",
    },
    Kind {
        id: "container-driver-capabilities",
        severities: &[Severity::Error, Severity::Warning, Severity::Info],
        title: "a container has the GPU and nvidia-smi",
    },
    Kind {
        id: "driver-compute-libraries-missing",
        severities: &[Severity::Error, Severity::Warning],
        title: "a host driver without its CUDA library",
    },
    Kind {
        id: "container-no-gpu-runtime",
        severities: &[Severity::Error, Severity::Info],
        title: "a container started without the NVIDIA runtime whose bus shows a GPU",
    },
    Kind {
        id: "visible-devices-hides-gpus",
        severities: &[Severity::Error],
        title: "CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES (AMD: HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES) hide the GPUs",
    },
    Kind {
        id: "wsl-driver-in-guest",
        severities: &[Severity::Error, Severity::Warning],
        title: "a Linux NVIDIA driver inside WSL2 shadows the Windows driver's libraries",
    },
    Kind {
        id: "fabric-not-completed",
        severities: &[Severity::Error],
        title: "the fabric manager runs but a GPU's NVLink fabric state is not Completed (NVLink5: InfiniBand modules, devices or the NVLink subnet manager missing)",
    },
    Kind {
        id: "fabric-manager-not-running",
        severities: &[Severity::Error],
        title: "NVSwitch system without nv-fabricmanager",
    },
    Kind {
        id: "gpu-thermal-throttle",
        severities: &[Severity::Warning],
        title: "thermal or power-brake clock throttling",
    },
    Kind {
        id: "gpu-ecc-errors",
        severities: &[Severity::Error, Severity::Warning],
        title: "uncorrectable ECC errors, pending retirement or row remap",
    },
    Kind {
        id: "pcie-link-degraded",
        severities: &[Severity::Warning],
        title: "PCIe link below its generation or width while busy",
    },
    Kind {
        id: "mixed-gpu-models",
        severities: &[Severity::Warning],
        title: "compute GPUs of different models in one machine",
    },
    Kind {
        id: "persistence-mode-off",
        severities: &[Severity::Info],
        title: "persistence mode off on a data-center GPU",
    },
    Kind {
        id: "nccl-interface-unset",
        severities: &[Severity::Info],
        title: "several GPUs and several device-backed network interfaces up, no NCCL_SOCKET_IFNAME / NCCL_IB_HCA",
    },
    Kind {
        id: "cuda-launch-blocking-set",
        severities: &[Severity::Info],
        title: "CUDA_LAUNCH_BLOCKING=1 left set",
    },
    Kind {
        id: "pytorch-alloc-conf-unknown-key",
        severities: &[Severity::Warning],
        title: "PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF names an option PyTorch refuses",
    },
    Kind {
        id: "manifests-stale",
        severities: &[Severity::Info],
        title: "the compatibility data in use is more than 90 days old",
    },
    Kind {
        id: "framework-cannot-see-gpu",
        severities: &[Severity::Error],
        title: "a CUDA build that, imported, reports no GPU while the driver reports some",
    },
    Kind {
        id: "framework-import-failed",
        severities: &[Severity::Error],
        title: "import <framework> raises in its environment",
    },
    Kind {
        id: "framework-probe-failed",
        severities: &[Severity::Warning, Severity::Error],
        title: "importing or first asking a framework hung past the deadline, or crashed the interpreter",
    },
    Kind {
        id: "framework-smoke-failed",
        severities: &[Severity::Error],
        title: "a framework's matmul on a GPU raised or differs from the CPU's",
    },
    Kind {
        id: "nccl-allreduce-failed",
        severities: &[Severity::Error],
        title: "an NCCL all-reduce across two GPUs with torch.distributed failed",
    },
    Kind {
        id: "gpu-wrong-results",
        severities: &[Severity::Error],
        title: "the GPU's matmul differs from the CPU's, has NaNs or unwritten elements",
    },
    Kind {
        id: "gpu-memory-errors",
        severities: &[Severity::Error],
        title: "device memory did not read back the pattern written",
    },
    Kind {
        id: "gpu-underperforming",
        severities: &[Severity::Warning],
        title: "below 70% of the card's bf16 or memory-bandwidth figure",
    },
    Kind {
        id: "driver-too-old-for-ptx",
        severities: &[Severity::Error],
        title: "the driver refuses the shipped PTX",
    },
    Kind {
        id: "gpu-out-of-memory",
        severities: &[Severity::Error],
        title: "the driver's own error during the test, explained",
    },
    Kind {
        id: "gpu-fault",
        severities: &[Severity::Error],
        title: "the driver's own error during the test, explained",
    },
    Kind {
        id: "smoke-cuda-error",
        severities: &[Severity::Error],
        title: "the driver's own error during the test, explained",
    },
];

/// The registered kind of `id`.
#[must_use]
pub fn kind(id: &str) -> Option<&'static Kind> {
    KINDS.iter().find(|k| k.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every quoted ID after one of `patterns` in the crate's sources.
    fn quoted_after(patterns: &[&str]) -> Vec<(String, String)> {
        let mut found = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src"
        ))];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                if path.extension().is_none_or(|e| e != "rs") || path.ends_with("ids.rs") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                for pattern in patterns {
                    for (at, _) in text.match_indices(pattern) {
                        let rest = text[at + pattern.len()..].trim_start();
                        let Some(rest) = rest.strip_prefix('"') else {
                            continue;
                        };
                        let Some(end) = rest.find('"') else { continue };
                        found.push((rest[..end].to_string(), path.display().to_string()));
                    }
                }
            }
        }
        found
    }

    #[test]
    fn ids_are_unique_and_well_formed() {
        for (i, k) in KINDS.iter().enumerate() {
            assert!(
                k.id.split('-').all(|w| !w.is_empty()
                    && w.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())),
                "{}",
                k.id
            );
            assert!(!k.severities.is_empty() && !k.title.is_empty(), "{}", k.id);
            assert!(KINDS[..i].iter().all(|o| o.id != k.id), "{} twice", k.id);
        }
    }

    #[test]
    fn every_id_the_code_names_is_registered() {
        let named = quoted_after(&["FindingBuilder::new(", ".explains(", "explains: vec!["]);
        assert!(named.len() > 40, "the scan found too few IDs: {named:?}");
        for (id, file) in named {
            assert!(
                kind(&id).is_some(),
                "{file} names the unregistered finding ID {id:?}"
            );
        }
    }

    #[test]
    fn readme_documents_exactly_the_registered_ids_with_their_severities() {
        let readme = include_str!("../../README.md");
        let table = readme
            .split("### Findings")
            .nth(1)
            .and_then(|s| s.split("\n### ").next())
            .unwrap();
        let mut documented = Vec::new();
        for line in table.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = line.split(" | ").collect();
            let severities: Vec<&str> = cells[1].split(" / ").map(str::trim).collect();
            for id in cells[0].split('`').skip(1).step_by(2) {
                let k = kind(id).unwrap_or_else(|| panic!("README documents unregistered {id}"));
                let want: Vec<&str> = k.severities.iter().map(|s| s.as_str()).collect();
                assert_eq!(severities, want, "{id}: README and registry disagree");
                documented.push(id.to_string());
            }
        }
        for k in KINDS {
            assert!(
                documented.iter().any(|d| d == k.id),
                "README does not document {}",
                k.id
            );
        }
    }
}
