//! The facts of the report a plan depends on, gathered in one place so the planner never digs
//! through the report and the plan's header says exactly what it was made for. Pure: depends on
//! [`crate::report`], [`crate::manifest`] and [`crate::version`].

use serde::Serialize;

use crate::manifest::Manifests;
use crate::report::{DriverLibraryKind, EnvKind, Gpu, GpuSource, Report, Severity};
use crate::version::Version;

/// One GPU as the plan sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GpuFact {
    pub index: u32,
    pub name: Option<String>,
    /// `8.6`; `None` when neither the driver nor the GPU table knew it.
    pub compute_capability: Option<String>,
    pub architecture: Option<String>,
    pub pci_device_id: Option<String>,
    /// An AMD GPU's gfx target (`gfx1100`); absent for NVIDIA GPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gfx_target: Option<String>,
    /// The oldest driver release that lists this GPU: older drivers do not know it.
    pub first_driver: Option<String>,
    /// What is known when the compute capability is not ("Turing or newer").
    pub identity_note: Option<String>,
}

impl GpuFact {
    /// An NVIDIA GPU of the report, its name, compute capability and architecture filled from
    /// the GPU table by PCI id where the report lacks them, as the report's own fill step does.
    fn nvidia(g: &Gpu, manifests: &Manifests) -> GpuFact {
        let row = g
            .pci_device_id
            .as_deref()
            .and_then(|id| manifests.gpus.by_pci_id(id));
        GpuFact {
            index: g.index,
            name: g.name.clone().or_else(|| row.map(|r| r.name.clone())),
            compute_capability: g
                .compute_capability
                .clone()
                .or_else(|| row.map(|r| r.compute_capability.clone())),
            architecture: g
                .architecture
                .clone()
                .or_else(|| row.and_then(|r| r.architecture.clone())),
            pci_device_id: g.pci_device_id.clone(),
            gfx_target: None,
            first_driver: g.first_driver.clone(),
            identity_note: g.identity_note.clone(),
        }
    }
}

/// A framework found in a Python environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstalledFramework {
    pub env: String,
    /// `venv`, `conda`, `system`.
    pub env_kind: EnvKind,
    pub env_python: Option<String>,
    pub name: String,
    pub version: Option<String>,
    /// The CUDA it was built for (`12.1`, or a major for JAX and CuPy).
    pub cuda: Option<String>,
    /// `cuda`, `cpu`, `rocm`.
    pub variant: Option<String>,
}

/// A Python environment: where, what kind, which Python.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvFact {
    pub path: String,
    /// `venv`, `conda`, `system`.
    pub kind: EnvKind,
    pub python: Option<String>,
}

/// A finding, as far as a plan cares: which, how bad, what it says to do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FindingFact {
    pub id: String,
    pub severity: Severity,
    pub title: String,
    pub fix: Option<String>,
    /// The frameworks it is about (its `framework:` subjects: "torch", "jax"); empty when none.
    /// Not part of the plan's JSON: the planner's own use.
    #[serde(skip)]
    pub frameworks: Vec<String>,
}

/// What the plan knows about the machine it is made for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Machine {
    pub gpus: Vec<GpuFact>,
    /// An AMD GPU is there (a plan for NVIDIA's stack cannot help it).
    pub amd_gpu: bool,
    pub driver_version: Option<String>,
    /// The highest CUDA the driver runs (what nvidia-smi prints, else its branch's).
    pub driver_cuda: Option<String>,
    /// The nvidia kernel module is loaded.
    pub driver_loaded: bool,
    /// The loaded module is the open one (`Some(false)`: proprietary).
    pub driver_open: Option<bool>,
    /// The user-space driver libraries' version (libcuda / libnvidia-ml), which the kernel
    /// module must match.
    pub library_version: Option<String>,
    pub nouveau_loaded: bool,
    /// An nvidia module is built for the running kernel (`/lib/modules/$(uname -r)/…`), loaded
    /// or not.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub module_built: bool,
    /// The local key DKMS signs modules with (`/var/lib/dkms/mok.pub`), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub module_signing_key: Option<String>,
    /// For a plan for AMD GPUs (`plan::rocm`): the amdgpu driver and ROCm in words, which the
    /// header shows as the driver; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub amd_driver: Option<String>,
    pub os_id: Option<String>,
    pub os_version: Option<String>,
    pub os_pretty_name: Option<String>,
    pub arch: Option<String>,
    pub kernel_release: Option<String>,
    pub secure_boot: Option<bool>,
    pub container: Option<String>,
    pub wsl: bool,
    /// `/usr/local/cuda-12.4` and the like, with their versions.
    pub toolkits: Vec<(String, Option<String>)>,
    pub frameworks: Vec<InstalledFramework>,
    /// Every Python environment found, with its Python: what a pip line is checked against.
    pub python_envs: Vec<EnvFact>,
    /// The Python of the system environment (`/usr`), which `python3 -m venv` copies.
    pub system_python: Option<String>,
    pub findings: Vec<FindingFact>,
}

impl Machine {
    /// The facts of a report. GPUs whose compute capability the report lacks are looked up in
    /// the GPU table by PCI id, as the report's own fill step does. Only NVIDIA GPUs: the CUDA
    /// stack is planned for them (an AMD GPU sets `amd_gpu`).
    #[must_use]
    pub fn from_report(report: &Report, manifests: &Manifests) -> Machine {
        let gpus = report
            .nvidia_gpus()
            .map(|g| GpuFact::nvidia(g, manifests))
            .collect();
        let driver_cuda = report.driver.cuda_version.clone().or_else(|| {
            report
                .driver
                .version
                .as_deref()
                .and_then(|d| manifests.cuda.max_cuda_for_driver(d))
                .map(str::to_string)
        });
        let frameworks = installed_frameworks(report);
        Machine {
            gpus,
            amd_gpu: report.pci_devices.iter().any(|d| d.vendor == "amd"),
            driver_version: report.driver.version.clone(),
            driver_cuda,
            // A driver stated with GPU_DOCTOR_DRIVER_VERSION is the other machine's working
            // driver (a build container planning for it has no module of its own).
            driver_loaded: report.kernel.nvidia_loaded
                || report.overrides.iter().any(|o| o.field == "driver.version")
                || jetson_driver_answers(report, manifests),
            driver_open: report.kernel.nvidia_open,
            library_version: report
                .driver_libraries
                .iter()
                .filter(|l| l.kind == DriverLibraryKind::Driver)
                .find_map(|l| l.version.clone()),
            nouveau_loaded: report.kernel.nouveau_loaded,
            module_built: !report.kernel.module_files.is_empty(),
            module_signing_key: report.kernel.module_signing_key.clone(),
            amd_driver: None,
            os_id: report.host.os_id.clone(),
            os_version: report.host.os_version.clone(),
            os_pretty_name: report.host.os_pretty_name.clone(),
            arch: report.host.arch.clone(),
            kernel_release: report.host.kernel_release.clone(),
            secure_boot: report.host.secure_boot,
            container: report.host.container.clone(),
            wsl: report.host.wsl,
            toolkits: report
                .toolkits
                .iter()
                .map(|t| (t.path.clone(), t.version.clone()))
                .collect(),
            frameworks,
            python_envs: report
                .python_envs
                .iter()
                .map(|e| EnvFact {
                    path: e.path.clone(),
                    kind: e.kind.clone(),
                    python: e.python_version.clone(),
                })
                .collect(),
            system_python: report
                .python_envs
                .iter()
                .find(|e| e.kind == EnvKind::System)
                .and_then(|e| e.python_version.clone()),
            findings: report
                .findings
                .iter()
                .map(|f| FindingFact {
                    id: f.id.clone(),
                    severity: f.severity,
                    title: f.title.clone(),
                    fix: f.fix.clone(),
                    frameworks: f
                        .subjects
                        .iter()
                        .filter_map(|s| match s {
                            crate::report::Subject::Framework { name, .. } => Some(name.clone()),
                            _ => None,
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// Whether the driver is out of this machine's hands: a container gets it from its host,
    /// WSL from Windows. The reason, in words, when it is.
    #[must_use]
    pub fn driver_fixed(&self) -> Option<String> {
        if self.wsl {
            Some(
                "this is WSL: the driver is the Windows driver; install or upgrade it in Windows"
                    .to_string(),
            )
        } else {
            self.container.as_ref().map(|c| {
                format!(
                    "this is a {c} container: the driver comes from the host; install or upgrade \
                     it there"
                )
            })
        }
    }

    /// The driver version when a usable driver is there (loaded, or seen through nvidia-smi on
    /// WSL or in a container, where no module is visible).
    #[must_use]
    pub fn working_driver(&self) -> Option<Version> {
        let usable = self.driver_loaded || self.wsl || self.container.is_some();
        self.driver_version
            .as_deref()
            .filter(|_| usable && !self.nouveau_loaded)
            .and_then(Version::parse)
    }

    /// The highest CUDA the working driver runs.
    #[must_use]
    pub fn working_driver_cuda(&self) -> Option<Version> {
        self.working_driver()?;
        self.driver_cuda.as_deref().and_then(Version::parse)
    }

    /// One line per GPU for the plan's header.
    #[must_use]
    pub fn gpu_lines(&self) -> Vec<String> {
        self.gpus
            .iter()
            .map(|g| {
                let name = g.name.as_deref().unwrap_or("unknown model");
                if let Some(gfx) = &g.gfx_target {
                    return match &g.architecture {
                        Some(arch) => format!("GPU {}: {name} ({gfx}, {arch})", g.index),
                        None => format!("GPU {}: {name} ({gfx})", g.index),
                    };
                }
                let cc = g.compute_capability.as_deref().map_or_else(
                    || "compute capability unknown".to_string(),
                    |c| format!("compute capability {c}"),
                );
                match &g.architecture {
                    Some(arch) => format!("GPU {}: {name} ({cc}, {arch})", g.index),
                    None => format!("GPU {}: {name} ({cc})", g.index),
                }
            })
            .collect()
    }

    /// The driver in words for the header.
    #[must_use]
    pub fn driver_line(&self) -> String {
        if let (None, Some(amd)) = (&self.driver_version, &self.amd_driver) {
            return amd.clone();
        }
        match (&self.driver_version, &self.driver_cuda) {
            _ if self.nouveau_loaded => "none: nouveau holds the GPU".to_string(),
            (Some(v), Some(c)) if self.working_driver().is_some() => {
                format!("{v} (runs CUDA up to {c})")
            }
            (Some(v), _) if self.working_driver().is_some() => v.clone(),
            (Some(v), _) => format!("{v} installed but not loaded"),
            (None, _) => "none loaded".to_string(),
        }
    }

    /// The system in words for the header.
    #[must_use]
    pub fn os_line(&self) -> String {
        let name = self
            .os_pretty_name
            .clone()
            .or_else(|| {
                Some(format!(
                    "{} {}",
                    self.os_id.as_deref()?,
                    self.os_version.as_deref().unwrap_or("")
                ))
            })
            .unwrap_or_else(|| "unknown system".to_string());
        let mut parts = vec![name];
        if let Some(arch) = &self.arch {
            parts.push(arch.clone());
        }
        if let Some(kernel) = &self.kernel_release {
            parts.push(format!("kernel {kernel}"));
        }
        parts.push(match self.secure_boot {
            Some(true) => "Secure Boot on".to_string(),
            Some(false) => "Secure Boot off".to_string(),
            None => "Secure Boot unknown".to_string(),
        });
        if let Some(c) = &self.container {
            parts.push(format!("{c} container"));
        }
        if self.wsl {
            parts.push("WSL".to_string());
        }
        parts.join(", ")
    }

    /// The newest of the GPUs' first driver releases, and the GPU it is for: a driver older
    /// than that does not know that GPU ("No devices were found").
    #[must_use]
    pub fn newest_first_driver(&self) -> Option<(Version, &GpuFact)> {
        self.gpus
            .iter()
            .filter_map(|g| Some((Version::parse(g.first_driver.as_deref()?)?, g)))
            .max_by(|a, b| a.0.cmp(&b.0))
    }

    /// Whether the doctor reported a finding of this kind (the compiler keeps the id right; the
    /// plan asks by kind only).
    #[must_use]
    pub fn has(&self, kind: &crate::diagnose::ids::Kind) -> bool {
        self.findings.iter().any(|f| f.id == kind.id)
    }

    /// Whether the doctor reported a finding of this kind as an error or a warning: a kind
    /// that is information on some machines (`toolkit-newer-than-driver` where nothing
    /// JIT-compiles PTX) asks for no step there.
    #[must_use]
    pub fn has_problem(&self, kind: &crate::diagnose::ids::Kind) -> bool {
        self.findings
            .iter()
            .any(|f| f.id == kind.id && matches!(f.severity, Severity::Error | Severity::Warning))
    }
}

/// Every framework of every Python environment, each with its environment: what a plan must
/// keep working (or fix) where it is.
/// A Jetson's driver is JetPack's (cuda.toml's `l4t_driver` rows): its GPU is driven by
/// `nvgpu`, not by an `nvidia` module, so no module is loaded while the driver works. When
/// `nvidia-smi` answers with such a release, the driver is working and a plan installs none
/// (installing a desktop/server driver branch on a Jetson replaces JetPack's own).
fn jetson_driver_answers(report: &Report, manifests: &Manifests) -> bool {
    let answered = report.gpus.iter().any(|g| g.source == GpuSource::NvidiaSmi);
    answered
        && report.driver.version.as_deref().is_some_and(|v| {
            manifests
                .cuda
                .l4t_drivers
                .iter()
                .any(|row| row.driver == v.trim())
        })
}

fn installed_frameworks(report: &Report) -> Vec<InstalledFramework> {
    report
        .python_envs
        .iter()
        .flat_map(|env| {
            env.frameworks.iter().map(|fw| InstalledFramework {
                env: env.path.clone(),
                env_kind: env.kind.clone(),
                env_python: env.python_version.clone(),
                name: fw.name.clone(),
                version: fw.version.clone(),
                cuda: fw.cuda.clone(),
                variant: fw.variant.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::DriverInfo;

    fn jetson(driver: &str, source: &str) -> Report {
        Report {
            driver: DriverInfo {
                version: Some(driver.to_string()),
                ..DriverInfo::default()
            },
            gpus: vec![Gpu {
                name: Some("Orin (nvgpu)".into()),
                source: source.into(),
                ..Gpu::default()
            }],
            ..Report::default()
        }
    }

    /// JetPack 6's driver (540.4.0, an `l4t_driver` row) works with no `nvidia` module loaded;
    /// a desktop branch seen only by nvidia-smi's answer does not count, nor a Jetson release
    /// nvidia-smi did not answer with.
    #[test]
    fn a_jetson_driver_that_answers_is_working_without_an_nvidia_module() {
        let m = crate::manifest::embedded();
        assert!(Machine::from_report(&jetson("540.4.0", "nvidia-smi"), m).driver_loaded);
        assert!(!Machine::from_report(&jetson("550.54.15", "nvidia-smi"), m).driver_loaded);
        assert!(!Machine::from_report(&jetson("540.4.0", "pci"), m).driver_loaded);
    }
}
