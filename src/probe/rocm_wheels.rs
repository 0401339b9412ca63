//! What ROCm builds of the Python frameworks carry, from their own files: the gfx targets of
//! the rocBLAS and hipBLASLt kernels inside the wheel (`torch/lib/rocblas/library/
//! TensileLibrary_lazy_gfx*.dat`, the evidence ollama's `rocblasGFXTargets` and rocBLAS's own
//! "Cannot read TensileLibrary.dat ... for GPU arch" error use), the ROCm runtime libraries it
//! bundles (`torch/lib/libamdhip64.so`, `libhsa-runtime64.so`), TheRock's ROCm wheels
//! (`rocm-sdk-core`, `rocm-sdk-libraries-<family>`, whose `_rocm_sdk_*` folders hold the
//! libraries and kernels), and the ROCm version of a JAX ROCm plugin (`jax-rocm60-plugin`).

use std::path::{Path, PathBuf};

use crate::framework::FrameworkName;
use crate::host::Host;
use crate::report::{Framework, PythonEnv, Wheel};

/// ROCm runtime libraries a framework may ship in its own folder: HIP, the HSA runtime ROCm
/// opens the GPU with, and the math libraries built per gfx target.
const RUNTIME_LIBS: [&str; 6] = [
    "libamdhip64.so",
    "libhsa-runtime64.so",
    "librocblas.so",
    "libhipblaslt.so",
    "libMIOpen.so",
    "librccl.so",
];

/// Fills `gfx_targets`, `bundled_runtime` and `rocm_wheels` of every environment.
pub(crate) fn enrich(host: &Host, envs: &mut [PythonEnv]) {
    for env in envs {
        let sites: Vec<PathBuf> = env.site_packages.iter().map(PathBuf::from).collect();
        env.rocm_wheels = therock_wheels(host, &sites);
        let sdk_dirs: Vec<PathBuf> = sites
            .iter()
            .flat_map(|site| {
                host.fs
                    .read_dir(site)
                    .into_iter()
                    .filter(|e| e.name.starts_with("_rocm_sdk_"))
                    .map(|e| e.path)
            })
            .collect();
        for fw in &mut env.frameworks {
            let Some(site) = site_of(fw, &sites) else {
                continue;
            };
            match FrameworkName::from_report(&fw.name) {
                Some(FrameworkName::Torch) if fw.variant.as_deref() == Some("rocm") => {
                    torch(host, fw, &site, &sdk_dirs);
                }
                Some(FrameworkName::Jax) if fw.variant.as_deref() == Some("rocm") => {
                    fw.rocm = fw.components.iter().find_map(|c| jax_plugin_rocm(&c.name));
                }
                _ => {}
            }
        }
    }
}

/// The site folder a framework was read from.
fn site_of(fw: &Framework, sites: &[PathBuf]) -> Option<PathBuf> {
    let source = Path::new(&fw.source);
    sites.iter().find(|s| source.starts_with(s)).cloned()
}

fn torch(host: &Host, fw: &mut Framework, site: &Path, sdk_dirs: &[PathBuf]) {
    let lib = site.join("torch/lib");
    let rocblas = lib.join("rocblas/library");
    let mut targets = super::rocm::kernel_targets(host, &rocblas);
    let mut source = (!targets.is_empty()).then(|| {
        format!(
            "{}: {} TensileLibrary_*gfx* targets",
            rocblas.display(),
            targets.len()
        )
    });
    // TheRock's torch keeps its kernels in the ROCm SDK wheels beside it.
    if targets.is_empty() {
        for dir in sdk_dirs {
            let library = dir.join("lib/rocblas/library");
            let found = super::rocm::kernel_targets(host, &library);
            if !found.is_empty() {
                source = Some(format!(
                    "{}: {} TensileLibrary_*gfx* targets",
                    library.display(),
                    found.len()
                ));
                targets.extend(found);
            }
        }
        targets.sort();
        targets.dedup();
    }
    fw.gfx_targets = targets;
    fw.gfx_targets_source = source;
    // hipBLASLt: the wheel's own folder, else TheRock's SDK wheels beside it.
    let own = lib.join("hipblaslt/library");
    let lt_dirs =
        std::iter::once(own).chain(sdk_dirs.iter().map(|d| d.join("lib/hipblaslt/library")));
    for dir in lt_dirs {
        let found = super::rocm::tensile_targets(host, &dir);
        if !found.is_empty() {
            fw.hipblaslt_source = Some(dir.display().to_string());
            fw.hipblaslt_targets = found;
            break;
        }
    }
    let system = system_hsa_sizes(host);
    let mut bundled: Vec<String> = host
        .fs
        .read_dir(&lib)
        .into_iter()
        .filter(|e| RUNTIME_LIBS.iter().any(|l| e.name.starts_with(l)))
        .filter(|e| {
            !(e.name.starts_with("libhsa-runtime64.so") && is_system_copy(host, &e.path, &system))
        })
        .map(|e| e.path.display().to_string())
        .collect();
    bundled.sort();
    fw.bundled_runtime = bundled;
}

/// The sizes of `/opt/rocm/lib/libhsa-runtime64.so.1*`: AMD's ROCm-on-WSL guide replaces the
/// wheel's HSA runtime with a copy of that one.
fn system_hsa_sizes(host: &Host) -> Vec<u64> {
    host.fs
        .read_dir("/opt/rocm/lib")
        .into_iter()
        .filter(|e| e.name.starts_with("libhsa-runtime64.so.1"))
        .filter_map(|e| host.fs.metadata(&e.path).ok())
        .filter(std::fs::Metadata::is_file)
        .map(|m| m.len())
        .collect()
}

/// Whether a wheel's `libhsa-runtime64.so` is the system's: a link into `/opt/rocm*`, or a file
/// of the same size as `/opt/rocm`'s (the guide's `cp`). Such a copy is not the wheel's own.
fn is_system_copy(host: &Host, path: &Path, system: &[u64]) -> bool {
    if host
        .fs
        .canonical(path, true)
        .is_ok_and(|real| real.starts_with("/opt") && real.to_string_lossy().contains("/opt/rocm"))
    {
        return true;
    }
    host.fs
        .metadata(path)
        .is_ok_and(|m| m.is_file() && system.contains(&m.len()))
}

/// TheRock's ROCm wheels in an environment (`rocm`, `rocm-sdk-core`, `rocm-sdk-libraries-
/// gfx110x-dgpu`, `rocm-sdk-devel`).
fn therock_wheels(host: &Host, sites: &[PathBuf]) -> Vec<Wheel> {
    let mut out: Vec<Wheel> = sites
        .iter()
        .flat_map(|site| {
            host.fs.read_dir(site).into_iter().filter_map(move |e| {
                if !e.name.ends_with(".dist-info") {
                    return None;
                }
                let (name, version) = crate::parse::python_pkg::dist_info_name(&e.name)?;
                (name == "rocm" || name.starts_with("rocm-sdk")).then(|| {
                    let lib = format!("_{}", name.replace('-', "_"));
                    let lib_dir = site.join(&lib).join("lib");
                    Wheel {
                        name,
                        version,
                        lib_dir: host
                            .fs
                            .is_dir(&lib_dir)
                            .then(|| lib_dir.display().to_string()),
                    }
                })
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.dedup_by(|a, b| a.name == b.name);
    out
}

/// `jax-rocm60-plugin` → "6.0", `jax-rocm7-pjrt` → "7".
fn jax_plugin_rocm(name: &str) -> Option<String> {
    let digits = name
        .strip_prefix("jax-rocm")
        .or_else(|| name.strip_prefix("jax_rocm"))?;
    let digits: String = digits.chars().take_while(char::is_ascii_digit).collect();
    match digits.len() {
        1 => Some(digits),
        2 => Some(format!("{}.{}", &digits[..1], &digits[1..])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::jax_plugin_rocm;

    #[test]
    fn jax_rocm_plugin_names_give_the_rocm_version() {
        assert_eq!(jax_plugin_rocm("jax-rocm60-plugin").as_deref(), Some("6.0"));
        assert_eq!(jax_plugin_rocm("jax-rocm7-pjrt").as_deref(), Some("7"));
        assert_eq!(jax_plugin_rocm("jax-cuda12-plugin"), None);
    }
}
