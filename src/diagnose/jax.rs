//! JAX's packages against each other, and fix texts for JAX's cuDNN findings. Findings:
//! `jax-version-skew`, `cuda-library-too-old` (the plugin wheels against jaxlib are
//! `jax_plugin.rs`'s).
//!
//! JAX ships as `jax` (Python), `jaxlib` (compiled) and, since 0.4.26, CUDA plugins
//! (`jax-cuda12-plugin`, `jax-cuda12-pjrt`) released under jaxlib's version. Since 0.3.0
//! `import jax` refuses a jaxlib newer than jax ("jaxlib version 0.4.14 is newer than and
//! incompatible with jax version 0.4.6", jax-ml/jax#17638) and one older than jax's
//! `_minimum_jaxlib_version` ("jaxlib is version 0.3.25, but this version of jax requires
//! version >= 0.4.6", jax-ml/jax#15285); the rule is JEP 9419 as summarised in
//! conda-forge/jax-feedstock#81. Both are checked; the minimum of each jax release is
//! frameworks.toml's `jax_minimum_jaxlib`, read from jax's release tags by
//! `scripts/gen-jax-history.py`.
//!
//! jaxlib's CUDA build against the GPU (`arch-not-in-build`): XLA compiles every program for the
//! GPU it runs on, so a release must know the GPU's architecture. The dated record of what a
//! release knows is its own build list (`.bazelrc`'s compute capabilities at the tag,
//! frameworks.toml's `jaxlib_arch`): a GPU of a major above every listed architecture is newer
//! than the release (jaxlib 0.4.26 on Blackwell: "ptxas fatal : Program with .target 'sm_90a'
//! cannot be compiled to future architecture", cantinilab/stories#5; sm_100 and compute_120
//! first listed at jax-v0.6.0), and one below every listed architecture is older than it (the
//! CUDA 13 plugin's list starts at sm_75).

use super::FindingBuilder;
use super::ids;
use crate::framework::FrameworkName;
use crate::manifest::Manifests;
use crate::report::{
    Finding, Framework, LibraryFamily, LibraryLoad, PythonEnv, Report, Severity, framework_subject,
};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out: Vec<Finding> = report
        .python_envs
        .iter()
        .flat_map(|env| {
            env.frameworks
                .iter()
                .filter(|f| f.name == FrameworkName::Jax)
                .filter_map(move |fw| skew(env, fw, manifests))
        })
        .collect();
    for env in &report.python_envs {
        for fw in env
            .frameworks
            .iter()
            .filter(|f| f.name == FrameworkName::Jax)
        {
            out.extend(cuda_check(report, manifests, env, fw));
            out.extend(arch(report, manifests, env, fw));
        }
    }
    out
}

/// A usable GPU that jaxlib's CUDA build predates (its major above every listed architecture)
/// or has left behind (below every listed architecture).
fn arch(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fw: &Framework,
) -> Option<Finding> {
    if fw.variant.as_deref() != Some("cuda") {
        return None;
    }
    let cuda_major = Version::parse(fw.cuda.as_deref()?)?.major().to_string();
    let jaxlib = fw.components.iter().find(|c| c.name == "jaxlib")?;
    let jaxlib_release = release(&jaxlib.version)?.to_string();
    let table = &manifests.frameworks;
    let row = table.jaxlib_arch(&jaxlib_release, &cuda_major)?;
    let listed: Vec<Version> = row
        .sass
        .iter()
        .chain(&row.ptx)
        .filter_map(|a| Version::parse(a))
        .collect();
    let newest = listed.iter().map(Version::major).max()?;
    for gpu in report
        .nvidia_gpus()
        .filter(|g| g.source != crate::report::GpuSource::Pci)
    {
        let Some(cc) = gpu.compute_capability.as_deref().and_then(Version::parse) else {
            continue;
        };
        let newer = cc.major() > newest;
        let older = listed.iter().all(|a| a > &cc);
        if !newer && !older {
            continue;
        }
        let name = gpu.name.as_deref().unwrap_or("GPU");
        let cc_text = format!("{}.{}", cc.major(), cc.minor());
        let plugin = fw
            .components
            .iter()
            .find(|c| c.name.ends_with("-plugin"))
            .map_or_else(String::new, |c| format!(" ({} {})", c.name, c.version));
        let (title, detail, fix) = arch_words(
            manifests,
            &install_extra(env, fw),
            &jaxlib.version,
            &jaxlib_release,
            &cuda_major,
            name,
            &cc,
            newer,
        );
        return Some(
            FindingBuilder::new(&ids::ARCH_NOT_IN_BUILD, Severity::Error, title)
                .detail(detail)
                .evidence(format!(
                    "GPU {}: {name}, compute capability {cc_text}",
                    gpu.index
                ))
                .evidence(format!(
                    "jaxlib {}{plugin} in {}: CUDA {cuda_major}",
                    jaxlib.version, env.path
                ))
                .evidence(format!(
                    "jaxlib {}..{} CUDA build: SASS for [{}], PTX for [{}] ({})",
                    row.first,
                    row.last,
                    row.sass.join(", "),
                    row.ptx.join(", "),
                    row.source
                ))
                .subject(framework_subject(&env.path, FrameworkName::Jax.as_str()))
                .subject(gpu.subject())
                .explains(&ids::CUDNN_GPU_UNSUPPORTED)
                .explains(&ids::NCCL_GPU_UNSUPPORTED)
                .fix(fix)
                .build(),
        );
    }
    None
}

/// The title, detail and fix of a jaxlib build older (`newer` GPU) or newer than the GPU.
#[expect(
    clippy::too_many_arguments,
    reason = "the words name each fact of the finding; a struct would only rename them"
)]
fn arch_words(
    manifests: &Manifests,
    extra: &str,
    jaxlib_text: &str,
    jaxlib_release: &str,
    cuda_major: &str,
    name: &str,
    cc: &Version,
    newer: bool,
) -> (String, String, String) {
    let table = &manifests.frameworks;
    let cc_text = format!("{}.{}", cc.major(), cc.minor());
    if newer {
        let first = table.first_jaxlib_for_major(cuda_major, cc.major());
        (
            format!(
                "jaxlib {} predates {name} (compute capability {cc_text})",
                jaxlib_text
            ),
            "XLA compiles every JAX program for the GPU it runs on, so the release must \
                 know the GPU's architecture. This jaxlib's CUDA build lists no architecture \
                 of the GPU's generation: its compiler targets the newest one it knows, which \
                 ptxas refuses for a newer GPU (\"Program with .target 'sm_90a' cannot be \
                 compiled to future architecture\"), and the cuDNN its release pins may be \
                 older than the GPU too."
                .to_string(),
            match first {
                Some(first) => format!(
                    "Install jax {first} or later, the first release whose CUDA build lists \
                         compute capability {}.x: `pip install -U {}` (with the packages that \
                         pin the old jax updated too).",
                    cc.major(),
                    extra.replacen("]\"", &format!("]>={first}\""), 1)
                ),
                None => format!(
                    "Install a jax release whose CUDA build lists compute capability {}.x \
                         (none in frameworks.toml's `jaxlib_arch` does yet).",
                    cc.major()
                ),
            },
        )
    } else {
        // The same release's CUDA 12 build, where its list reaches the GPU.
        let cuda12 = table
            .jaxlib_arch(jaxlib_release, "12")
            .filter(|r| r.cuda.as_deref() == Some("12") && cuda_major != "12")
            .filter(|r| {
                r.sass
                    .iter()
                    .filter_map(|a| Version::parse(a))
                    .any(|a| a.major() == cc.major() && &a <= cc)
            });
        (
            format!(
                "jaxlib {}'s CUDA {cuda_major} build has no code for {name} (compute capability {cc_text})",
                jaxlib_text
            ),
            "This jaxlib's CUDA build starts above the GPU's architecture: its kernels \
                 and XLA's target list leave the GPU out, so JAX fails on it."
                .to_string(),
            if cuda12.is_some() {
                format!(
                    "Use the CUDA 12 build of this release, whose list still has compute \
                         capability {cc_text}: `pip install -U \"jax[cuda12]=={jaxlib_release}\"` \
                         (and uninstall the CUDA {cuda_major} plugin)."
                )
            } else {
                format!(
                    "Install a jax release whose CUDA build lists compute capability \
                         {cc_text} (an older one; frameworks.toml's `jaxlib_arch`)."
                )
            },
        )
    }
}

/// jax's integer minimum as a library version: cuBLAS writes `major*10000 + minor*100 + patch`
/// (120100 = 12.1.0; jax-ml/jax#19121: "Found cuBLAS version 120103"), cuSPARSE
/// `major*1000 + minor*100 + patch` (12100 = 12.1.0; jax-ml/jax#18027: CUDA 12.0's cuSPARSE is
/// "Installed version: 12002"). What a library reports can lag its file's version
/// (jax-ml/jax#20079: nvidia-cusparse-cu12 12.2.0.103 reports 12103), so only the file's
/// version is compared with this, never turned into a reported number.
fn minimum_version(family: &str, min: u64) -> Option<Version> {
    let (major, minor, patch) = match family {
        "cublas" => (min / 10000, min / 100 % 100, min % 100),
        "cusparse" => (min / 1000, min / 100 % 10, min % 100),
        _ => return None,
    };
    Version::parse(&format!("{major}.{minor}.{patch}"))
}

/// jax's own check of the libraries its CUDA plugin loaded (`_check_cuda_versions`, jax 0.4.26
/// on): a cuBLAS or cuSPARSE below the explicit minimum of its release (frameworks.toml
/// `jax_cuda_check`) stops the CUDA backend ("Outdated cuSPARSE installation found", then
/// "CUDA backend failed to initialize") and JAX runs on the CPU. Finding: `cuda-library-too-old`.
fn cuda_check(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fw: &Framework,
) -> Vec<Finding> {
    // The plugin is released under jaxlib's version.
    let Some(release) = fw
        .components
        .iter()
        .find(|c| c.name.starts_with("jax-cuda") && c.name.ends_with("-plugin"))
        .or_else(|| fw.components.iter().find(|c| c.name == "jaxlib"))
        .and_then(|c| release(&c.version))
    else {
        return Vec::new();
    };
    let Some(row) = manifests.frameworks.jax_cuda_check(&release.to_string()) else {
        return Vec::new();
    };
    let loads: Vec<&LibraryLoad> = report
        .libraries
        .loads
        .iter()
        .filter(|l| l.env == env.path && l.framework == fw.name)
        .flat_map(|l| &l.libraries)
        .collect();
    let mut out = Vec::new();
    for (family, name, min) in [
        (LibraryFamily::Cublas, "cuBLAS", row.cublas_check_min),
        (LibraryFamily::Cusparse, "cuSPARSE", row.cusparse_check_min),
    ] {
        let Some(min) = min else { continue };
        let Some(load) = loads
            .iter()
            .find(|l| l.family == family && !l.soname.contains("Lt"))
        else {
            continue;
        };
        let (Some(path), Some(version)) = (
            load.path.as_deref(),
            load.version.as_deref().and_then(Version::parse),
        ) else {
            continue;
        };
        let Some(floor) = minimum_version(family.as_str(), min) else {
            continue;
        };
        if version >= floor {
            continue;
        }
        let via = load.via.as_deref().unwrap_or("");
        let dir = std::path::Path::new(path)
            .parent()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        let fix = if via == "LD_LIBRARY_PATH" {
            format!(
                "Remove {dir} from LD_LIBRARY_PATH for JAX (check ~/.bashrc, module files and conda activate scripts), so that the {name} of JAX's CUDA wheels loads; without those wheels: `pip install -U {}`.",
                install_extra(env, fw)
            )
        } else {
            format!(
                "Install JAX with its CUDA wheels (`pip install -U {}`), which bring a {name} it accepts, or upgrade the CUDA toolkit that provides {dir} to 12.1 or newer.",
                install_extra(env, fw)
            )
        };
        out.push(
            FindingBuilder::new(
                &ids::CUDA_LIBRARY_TOO_OLD,
                Severity::Error,
                format!(
                    "jax {} would load {name} {version}, older than its own check accepts: it runs on the CPU",
                    fw.version.as_deref().unwrap_or("")
                ),
            )
            .detail(format!(
                "JAX's CUDA plugin checks the libraries it loaded and refuses a {name} older than \
                 {floor}: \"Outdated {name} installation found. ... Minimum supported: {min}\", then \
                 \"CUDA backend failed to initialize\" and JAX falls back to the CPU."
            ))
            .evidence(format!(
                "jax {release}'s `_check_cuda_versions` requires {name} >= {floor} (min_supported_version={min}; {})",
                row.source
            ))
            .evidence(format!(
                "would load: {path} ({name} {version}, via {via})"
            ))
            .subject(framework_subject(&env.path, FrameworkName::Jax.as_str()))
            .fix(fix)
            .build(),
        );
    }
    out
}

/// The release part of a Python version, local tag dropped (`0.4.20+cuda12.cudnn89`).
fn release(text: &str) -> Option<pep440_rs::Version> {
    crate::version::package_version(text).map(pep440_rs::Version::without_local)
}

fn skew(env: &PythonEnv, fw: &Framework, manifests: &Manifests) -> Option<Finding> {
    let jax_text = fw.version.as_deref()?;
    let jax = release(jax_text)?;
    let jaxlib = fw.components.iter().find(|c| c.name == "jaxlib");
    let jaxlib_v = jaxlib.and_then(|c| release(&c.version));
    let lib_newer = jaxlib_v.as_ref().is_some_and(|lib| lib > &jax);
    // The oldest jaxlib this jax imports, from its release tag.
    let minimum = manifests
        .frameworks
        .jax_minimum_jaxlib(&jax.to_string())
        .filter(|row| {
            let min = release(&row.jaxlib_min);
            jaxlib_v
                .as_ref()
                .zip(min)
                .is_some_and(|(lib, min)| *lib < min)
        });
    if !lib_newer && minimum.is_none() {
        return None;
    }
    let jaxlib_text = jaxlib.map_or("", |c| c.version.as_str());
    // jaxlib prints its `__version__`, without the local tag.
    let jaxlib_release = jaxlib_v
        .as_ref()
        .map_or_else(String::new, ToString::to_string);
    let (severity, title, detail) = if let Some(row) = minimum {
        // The message gained its ">=" in jax 0.3.0 (jax/_src/lib/__init__.py at the tags).
        let ge = if jax >= pep440_rs::Version::new([0, 3, 0]) {
            ">= "
        } else {
            ""
        };
        (
            Severity::Error,
            format!(
                "jaxlib {jaxlib_text} is older than jax {jax_text} accepts (>= {}): `import jax` fails",
                row.jaxlib_min
            ),
            format!(
                "jax {jax_text} refuses a jaxlib older than {min}: importing it raises \"jaxlib is \
                 version {jaxlib_release}, but this version of jax requires version {ge}{min}.\" \
                 (jax's `_minimum_jaxlib_version`, {source}).",
                min = row.jaxlib_min,
                source = row.source
            ),
        )
    } else {
        (
            Severity::Error,
            format!("jaxlib {jaxlib_text} is newer than jax {jax_text}: `import jax` fails"),
            format!(
                "jax refuses a jaxlib newer than itself: importing it raises \"RuntimeError: \
                 jaxlib version {jaxlib_text} is newer than and incompatible with jax version \
                 {jax_text}. Please update your jax and/or jaxlib packages.\""
            ),
        )
    };
    let mut f = FindingBuilder::new(&ids::JAX_VERSION_SKEW, severity, title)
        .detail(detail)
        .evidence(format!("jax {jax_text} in {}", env.path))
        .subject(framework_subject(&env.path, FrameworkName::Jax.as_str()));
    for c in &fw.components {
        f = f.evidence(format!("{} {}", c.name, c.version));
    }
    let extra = install_extra(env, fw);
    // Keeping this jaxlib (its CUDA build fits the machine as it is): the newest jax release
    // that still accepts it, from the same table.
    let keep = minimum
        .and_then(|_| newest_jax_accepting(manifests, jaxlib_v.as_ref()?))
        .map(|jax| {
            format!(
                "Keep jaxlib {jaxlib_text} and install the newest jax that accepts it: `pip install \"jax=={jax}\"`; or install matching versions of both"
            )
        });
    Some(
        f.fix(format!(
            "{} in one step: `pip install -U {extra}` (it brings jax, jaxlib and the plugins at one version).",
            keep.unwrap_or_else(|| "Install matching versions".to_string())
        ))
        .build(),
    )
}

/// The newest jax release whose `_minimum_jaxlib_version` is at most `jaxlib` (and not older
/// than it: jax refuses a newer jaxlib).
fn newest_jax_accepting(manifests: &Manifests, jaxlib: &pep440_rs::Version) -> Option<String> {
    manifests
        .frameworks
        .jax_minimum_jaxlib
        .iter()
        .filter(|row| release(&row.jaxlib_min).is_some_and(|min| min <= *jaxlib))
        .filter(|row| release(&row.last).is_some_and(|last| last >= *jaxlib))
        .filter_map(|row| Some((release(&row.last)?, row.last.clone())))
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, last)| last)
}

/// Python's minor version as a number pair (`3.10.12` → (3, 10)).
fn python(env: &PythonEnv) -> Option<(u64, u64)> {
    let v = Version::parse(env.python_version.as_deref()?)?;
    Some((v.major(), v.minor()))
}

/// The pip requirement that installs a CUDA JAX for this environment: `jax[cuda12]` /
/// `jax[cuda13]` where the plugins exist (Python 3.10 and newer, jax 0.4.31 onwards), the
/// `cuda11_pip` / `cuda12_pip` extras with JAX's wheel index before (compat-frameworks.md 4.1).
pub(super) fn install_extra(env: &PythonEnv, fw: &Framework) -> String {
    let major = fw
        .cuda
        .as_deref()
        .and_then(Version::parse)
        .map_or(12, |v| v.major());
    let modern = python(env).is_none_or(|p| p >= (3, 10));
    if modern {
        format!("\"jax[cuda{}]\"", major.max(12))
    } else {
        format!(
            "\"jax[cuda{}_pip]\" -f https://storage.googleapis.com/jax-releases/jax_cuda_releases.html",
            major.clamp(11, 12)
        )
    }
}

/// The fix for a JAX build that needs cuDNN `needed` where `loaded` (or none) would load:
/// names a package in the same environment that pins an older cuDNN (torch 1.13 / 2.0's
/// `nvidia-cudnn-cu11==8.5.0.96`), and the install command that fits the environment's Python.
pub(super) fn cudnn_fix(
    env: &PythonEnv,
    fw: &Framework,
    needed: &str,
    upgrade: Option<String>,
) -> String {
    let need = Version::parse(needed);
    let pinner = env
        .frameworks
        .iter()
        .filter(|other| other.name != fw.name)
        .find_map(|other| {
            let pin = other.pins.iter().find(|p| p.starts_with("nvidia-cudnn"))?;
            let pinned = pin.split("==").nth(1)?;
            let pinned_v = Version::parse(pinned)?;
            let older = need
                .as_ref()
                .is_some_and(|n| pinned_v.major() == n.major() && pinned_v.minor() < n.minor());
            older.then(|| {
                format!(
                    "{} {} pins {pin}, the older cuDNN loaded here; ",
                    other.name,
                    other.version.as_deref().unwrap_or("")
                )
            })
        });
    let extra = install_extra(env, fw);
    match pinner {
        Some(who) => format!(
            "{who}give JAX its own environment (`python -m venv jax-env && jax-env/bin/pip install -U {extra}`), or upgrade that package to a release that allows cuDNN {needed}{}.",
            upgrade.map(|u| format!(": {u}")).unwrap_or_default()
        ),
        None => format!(
            "Install the cuDNN this jaxlib was built for with pip, in a fresh environment: `pip install -U {extra}`; and unset LD_LIBRARY_PATH entries that point at an older cuDNN."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::test_support::jax_env as env;

    fn ids(e: PythonEnv) -> Vec<(String, Severity)> {
        let r = Report {
            python_envs: vec![e],
            ..Report::default()
        };
        findings(&r, crate::manifest::embedded())
            .into_iter()
            .map(|f| (f.id, f.severity))
            .collect()
    }

    #[test]
    fn jaxlib_newer_than_jax_is_refused_at_import() {
        let f = ids(env("3.11.4", "0.4.6", "0.4.14+cuda12.cudnn89", &[]));
        assert_eq!(f, [("jax-version-skew".to_string(), Severity::Error)]);
        // Equal releases, local tags ignored; jaxlib older than jax is allowed (down to jax's minimum).
        assert!(ids(env("3.11.4", "0.4.14", "0.4.14+cuda12.cudnn89", &[])).is_empty());
        assert!(ids(env("3.11.4", "0.4.26", "0.4.25", &[])).is_empty());
    }

    #[test]
    fn jaxlib_older_than_jax_minimum_is_refused_at_import() {
        // jax-ml/jax#15285: jax 0.4.7 with jaxlib 0.3.25; jax 0.4.7's minimum is 0.4.6.
        let e = env("3.10.6", "0.4.7", "0.3.25+cuda11.cudnn805", &[]);
        assert_eq!(
            ids(e.clone()),
            [("jax-version-skew".to_string(), Severity::Error)]
        );
        let r = Report {
            python_envs: vec![e],
            ..Report::default()
        };
        let f = findings(&r, crate::manifest::embedded()).remove(0);
        assert!(f.title.contains("(>= 0.4.6)"), "{}", f.title);
        assert!(
            f.detail.contains(
                "jaxlib is version 0.3.25, but this version of jax requires version >= 0.4.6."
            ),
            "{}",
            f.detail
        );
        assert!(
            f.fix.as_deref().unwrap_or_default().starts_with(
                "Keep jaxlib 0.3.25+cuda11.cudnn805 and install the newest jax that accepts it: `pip install \"jax==0.4.1\"`"
            ),
            "{:?}",
            f.fix
        );
        // At the minimum, and between the minimum and jax: accepted.
        assert!(ids(env("3.10.6", "0.4.7", "0.4.6", &[])).is_empty());
        assert!(ids(env("3.10.6", "0.4.25", "0.4.20", &[])).is_empty());
        // One below: refused (jax 0.4.25 needs 0.4.20).
        assert_eq!(ids(env("3.10.6", "0.4.25", "0.4.19", &[])).len(), 1);
        // A jax newer than the tags read: no claim.
        assert!(ids(env("3.12.3", "0.99.0", "0.4.19", &[])).is_empty());
    }

    /// jax-ml/jax#18027 (chiblya): jaxlib 0.4.26 on an HPC node with CUDA 12.0's cuSPARSE:
    /// "Outdated cuSPARSE installation found. ... Minimum supported: 12100 Installed version: 12002".
    #[test]
    fn a_cusparse_below_the_plugin_check_is_an_error() {
        let machine = |plugin: &str, cusparse: &str, via: &str| {
            let mut e = env("3.11.4", plugin, plugin, &[("jax-cuda12-plugin", plugin)]);
            e.frameworks[0].version = Some(plugin.into());
            let mut r = Report {
                python_envs: vec![e],
                ..Report::default()
            };
            r.libraries.loads = vec![crate::report::FrameworkLoads {
                env: "/venv".into(),
                framework: "jax".into(),
                basis: "model".into(),
                libraries: vec![LibraryLoad {
                    family: "cusparse".into(),
                    soname: "libcusparse.so.12".into(),
                    path: Some(format!(
                        "/usr/local/cuda-12.0/lib64/libcusparse.so.{cusparse}"
                    )),
                    via: Some(via.into()),
                    version: Some(cusparse.into()),
                    ..LibraryLoad::default()
                }],
            }];
            findings(&r, crate::manifest::embedded())
        };
        let f = machine("0.4.26", "12.0.2.55", "LD_LIBRARY_PATH");
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].id, "cuda-library-too-old");
        assert!(
            f[0].detail.contains("Minimum supported: 12100"),
            "{}",
            f[0].detail
        );
        assert!(
            f[0].evidence[0].contains("requires cuSPARSE >= 12.1.0"),
            "{:?}",
            f[0].evidence
        );
        assert!(
            f[0].fix
                .as_deref()
                .unwrap_or_default()
                .starts_with("Remove /usr/local/cuda-12.0/lib64 from LD_LIBRARY_PATH"),
            "{:?}",
            f[0].fix
        );
        // 12.1 passes; jax 0.4.25 gives no explicit minimum (it compares with its own build's).
        assert!(machine("0.4.26", "12.1.0.106", "LD_LIBRARY_PATH").is_empty());
        assert!(machine("0.4.25", "12.0.2.55", "ld.so.cache").is_empty());
        let f = machine("0.9.0", "12.0.2.55", "ld.so.cache");
        assert!(
            f[0].fix
                .as_deref()
                .unwrap_or_default()
                .starts_with("Install JAX with its CUDA wheels"),
            "{:?}",
            f[0].fix
        );
    }

    #[test]
    fn cudnn_fix_fits_python_and_names_the_pinning_package() {
        let mut e = env("3.9.16", "0.4.13", "0.4.13+cuda11.cudnn86", &[]);
        e.frameworks[0].cuda = Some("11".into());
        e.frameworks.push(Framework {
            name: "torch".into(),
            version: Some("1.13.1".into()),
            pins: vec!["nvidia-cudnn-cu11==8.5.0.96".into()],
            ..Framework::default()
        });
        let fix = cudnn_fix(&e, &e.frameworks[0].clone(), "8.6", None);
        assert!(
            fix.contains("torch 1.13.1 pins nvidia-cudnn-cu11==8.5.0.96"),
            "{fix}"
        );
        assert!(fix.contains("jax[cuda11_pip]"), "{fix}");

        let e = env("3.12.3", "0.4.20", "0.4.20+cuda12.cudnn89", &[]);
        let fix = cudnn_fix(&e, &e.frameworks[0].clone(), "8.9", None);
        assert!(fix.contains("\"jax[cuda12]\""), "{fix}");
        assert!(!fix.contains("pins"), "{fix}");
    }

    fn with_gpu(e: PythonEnv, cc: &str) -> Vec<Finding> {
        let r = Report {
            python_envs: vec![e],
            gpus: vec![crate::report::Gpu {
                index: 0,
                name: Some("GPU".into()),
                compute_capability: Some(cc.into()),
                source: "nvml".into(),
                ..crate::report::Gpu::default()
            }],
            ..Report::default()
        };
        findings(&r, crate::manifest::embedded())
            .into_iter()
            .filter(|f| f.id == "arch-not-in-build")
            .collect()
    }

    fn cuda13(mut e: PythonEnv) -> PythonEnv {
        e.frameworks[0].cuda = Some("13".into());
        e
    }

    #[test]
    fn a_gpu_newer_than_jaxlibs_build_list_is_arch_not_in_build_with_the_first_release_that_lists_it()
     {
        // cantinilab/stories#5: jaxlib 0.4.26 (compute_90 last) on an RTX 5070 Ti (12.0).
        let plugin = [("jax-cuda12-plugin", "0.4.26")];
        let f = with_gpu(env("3.11.9", "0.4.26", "0.4.26", &plugin), "12.0");
        assert_eq!(f.len(), 1);
        assert!(
            f[0].fix
                .as_deref()
                .unwrap_or("")
                .contains("jax[cuda12]>=0.6.0")
        );
        // The same release on Hopper, and 0.6.0 (sm_100, compute_120) on Blackwell: no finding.
        assert!(with_gpu(env("3.11.9", "0.4.26", "0.4.26", &plugin), "9.0").is_empty());
        let new = [("jax-cuda12-plugin", "0.6.0")];
        assert!(with_gpu(env("3.11.9", "0.6.0", "0.6.0", &new), "12.0").is_empty());
        assert!(with_gpu(env("3.11.9", "0.6.0", "0.6.0", &new), "10.0").is_empty());
        // A release newer than every row is not judged.
        assert!(with_gpu(env("3.11.9", "9.0.0", "9.0.0", &[]), "12.0").is_empty());
    }

    #[test]
    fn a_gpu_older_than_the_cuda13_build_list_is_arch_not_in_build_with_the_cuda12_build_as_the_fix()
     {
        // The CUDA 13 plugin's list starts at sm_75 (.bazelrc at jax-v0.7.2 on); Volta is 7.0.
        let plugin = [("jax-cuda13-plugin", "0.8.0")];
        let f = with_gpu(cuda13(env("3.12.3", "0.8.0", "0.8.0", &plugin)), "7.0");
        assert_eq!(f.len(), 1);
        assert!(
            f[0].fix
                .as_deref()
                .unwrap_or("")
                .contains("jax[cuda12]==0.8.0")
        );
        // The CUDA 12 build of the same release lists sm_70; Turing runs the CUDA 13 one.
        let cu12 = [("jax-cuda12-plugin", "0.8.0")];
        assert!(with_gpu(env("3.12.3", "0.8.0", "0.8.0", &cu12), "7.0").is_empty());
        assert!(with_gpu(cuda13(env("3.12.3", "0.8.0", "0.8.0", &plugin)), "7.5").is_empty());
    }
}
