//! The CUDA libraries a framework loads: cuDNN present and of the right version, no other copy
//! put ahead of the one it ships, and frameworks in one environment agreeing on their wheels.
//! Findings: `cudnn-missing`, `cudnn-version-mismatch`, `library-path-shadowing`,
//! `framework-wheels-conflict`.
//!
//! Load order matters: pip wheels find their libraries through RUNPATH, which the loader
//! searches *after* `LD_LIBRARY_PATH`. So a cuDNN on `LD_LIBRARY_PATH` wins over the one in
//! `nvidia/cudnn/lib` (the cause of PyTorch's "cuDNN version incompatibility" error).

use super::ids;
use std::path::Path;

use super::FindingBuilder;
use crate::framework::FrameworkName;
use crate::manifest::Manifests;
use crate::report::{Finding, Framework, Library, PythonEnv, Report, Severity, framework_subject};
use crate::version::Version;
use crate::version::package_version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    let mut out = Vec::new();
    let has_gpu = report.nvidia_gpus().any(|g| g.source != "pci");
    for env in &report.python_envs {
        // A framework whose cuDNN wheel another framework here pins differently has that
        // conflict as its root cause; its own cuDNN finding would only send the user in circles.
        let contested: Vec<&str> = conflicts(env)
            .iter()
            .filter(|c| c.wheel.starts_with("nvidia-cudnn"))
            .flat_map(|c| {
                c.pins
                    .iter()
                    .map(|(f, _)| f.name.as_str())
                    .collect::<Vec<_>>()
            })
            .collect();
        if has_gpu {
            for fw in env
                .frameworks
                .iter()
                .filter(|f| f.cuda.is_some() && !contested.contains(&f.name.as_str()))
            {
                out.extend(cudnn(report, manifests, env, fw));
            }
        }
        // With the loader's resolution at hand, `loading` says which copy shadows which.
        if !super::loading::resolved(report, env) {
            out.extend(shadowing(report, env));
        }
        out.extend(wheels_conflict(report, manifests, env));
    }
    out
}

/// The cuDNN a framework was built for: its wheel pin (torch, JAX), else its build info and
/// TensorFlow's tested configuration; for JAX without either, the cuDNN its release needs
/// (frameworks.toml: old jaxlib builds, then the `[[jax]]` ranges).
struct Need {
    major: u64,
    /// The exact or minimum version it was built against, when known.
    built: Option<Version>,
    /// Whether `built` is an exact pin (`==9.1.0.70`), which a wheel of another release
    /// departs from, rather than a minimum.
    exact: bool,
    /// An old `+cudaXYZ` jaxlib, which predates pip's cuDNN wheels and uses the system's.
    system_cudnn: bool,
    /// What says so.
    source: String,
}

fn cudnn_need(manifests: &Manifests, fw: &Framework) -> Option<Need> {
    if let Some(pin) = fw.pins.iter().find(|p| p.starts_with("nvidia-cudnn")) {
        let (_, spec) = split_pin(pin);
        let built = spec_floor(spec)?;
        let exact = spec.starts_with("==");
        // JAX's plugin pins the cuDNN it was built with as its floor (`>=9.8,<10.0` for
        // 0.6.0, "The minimum CuDNN version is v9.8"), and XLA refuses an older minor.
        let floor = fw.name == FrameworkName::Jax;
        return Some(Need {
            major: built.major(),
            built: (exact || floor).then_some(built),
            exact,
            system_cudnn: false,
            source: format!("{} pins {pin}", fw.name),
        });
    }
    // A cuDNN the build itself records (jaxlib's `+cuda11.cudnn86`, a conda build's string).
    if fw.name != FrameworkName::Tensorflow
        && let Some(recorded) = fw.cudnn.as_deref().and_then(Version::parse)
    {
        return Some(Need {
            major: recorded.major(),
            built: Some(recorded.clone()),
            exact: false,
            system_cudnn: false,
            source: format!("{} build records cuDNN {recorded} ({})", fw.name, fw.source),
        });
    }
    if fw.name == FrameworkName::Jax {
        return jax_cudnn_need(manifests, fw);
    }
    if fw.name == FrameworkName::Tensorflow {
        let major = Version::parse(fw.cudnn.as_deref()?)?.major();
        let tested = fw
            .version
            .as_deref()
            .and_then(|v| manifests.frameworks.tensorflow(v))
            .and_then(|row| Version::parse(&row.cudnn));
        return Some(Need {
            major,
            built: tested.filter(|t| t.major() == major),
            exact: false,
            system_cudnn: false,
            source: format!("tensorflow build_info says cuDNN {major}"),
        });
    }
    None
}

/// What a JAX without cuDNN pins or a cuDNN tag needs: an old `+cudaXYZ` jaxlib the cuDNN its
/// build script installed; a CUDA plugin the floor of its release's cuDNN range.
fn jax_cudnn_need(manifests: &Manifests, fw: &Framework) -> Option<Need> {
    let table = &manifests.frameworks;
    let cuda = fw.cuda.as_deref()?;
    let jaxlib = fw.components.iter().find(|c| c.name == "jaxlib");
    if let Some(lib) = jaxlib
        && let Some(release) = package_version(&lib.version)
        && let Some(row) = table.jaxlib_cudnn_built(&release.without_local().to_string(), cuda)
        && let Some(built) = Version::parse(&row.cudnn)
    {
        return Some(Need {
            major: built.major(),
            built: Some(built),
            exact: false,
            system_cudnn: true,
            source: format!(
                "jaxlib {} was built with cuDNN {} ({})",
                lib.version, row.cudnn, row.source
            ),
        });
    }
    // The plugin is released under jaxlib's version.
    let release = fw
        .components
        .iter()
        .find(|c| c.name.starts_with("jax-cuda") && c.name.ends_with("-plugin"))
        .or(jaxlib)
        .map(|c| c.version.as_str())
        .or(fw.version.as_deref())?;
    let release = package_version(release)?.without_local().to_string();
    let major = Version::parse(cuda)?.major();
    // The docs / PyPI ranges per CUDA major, else (CUDA 12) the plugin's cuDNN wheel floor read
    // from the release tag.
    let (spec, source) = table
        .jax(&release, major)
        .and_then(|row| Some((row.cudnn.as_deref()?, row.source.as_str())))
        .or_else(|| {
            let row = table.jax_cuda_check(&release).filter(|_| major == 12)?;
            Some((row.cudnn_wheel.as_deref()?, row.source.as_str()))
        })?;
    let floor = spec_floor(spec)?;
    Some(Need {
        major: floor.major(),
        built: Some(floor),
        exact: false,
        system_cudnn: false,
        source: format!("jax {release} (CUDA {major}) needs cuDNN {spec} ({source})"),
    })
}

/// The cuDNN copies the framework's process can load, first the one it would load.
fn cudnn_candidates<'a>(report: &'a Report, env: &PythonEnv) -> Vec<&'a Library> {
    let mut ld: Vec<&Library> = report
        .libraries
        .cudnn
        .iter()
        .filter(|l| l.loader_origin.as_deref() == Some("LD_LIBRARY_PATH"))
        .collect();
    ld.sort_by_key(|l| l.loader_rank);
    let pip = report
        .libraries
        .cudnn
        .iter()
        .filter(|l| l.origin == "pip" && in_env(env, &l.path));
    let mut system: Vec<&Library> = report
        .libraries
        .cudnn
        .iter()
        .filter(|l| l.on_loader_path && l.loader_origin.as_deref() != Some("LD_LIBRARY_PATH"))
        .collect();
    system.sort_by_key(|l| l.loader_rank);
    ld.into_iter().chain(pip).chain(system).collect()
}

/// The `libcudnn.so.N` the ld.so-order resolution loads for this framework, as a scanned copy.
fn resolved_cudnn<'a>(report: &'a Report, env: &PythonEnv, fw: &Framework) -> Option<&'a Library> {
    let load = report
        .libraries
        .loads
        .iter()
        .filter(|l| l.env == env.path && l.framework == fw.name)
        .flat_map(|l| &l.libraries)
        .find(|l| l.soname.starts_with("libcudnn.so."))?;
    let path = Path::new(load.path.as_deref()?);
    // The scan names the most precise file of a folder (`libcudnn.so.9.1.0`): match on folder.
    report
        .libraries
        .cudnn
        .iter()
        .find(|l| Path::new(&l.path).parent() == path.parent())
}

fn in_env(env: &PythonEnv, path: &str) -> bool {
    env.site_packages
        .iter()
        .any(|s| Path::new(path).starts_with(s))
}

fn lib_major(lib: &Library) -> Option<u64> {
    lib.version
        .as_deref()
        .and_then(Version::parse)
        .map(|v| v.major())
}

/// `cudnn-missing` or `cudnn-version-mismatch` for one framework: the cuDNN it needs, then the
/// first copy of that major it could load, the one the loader resolution names ahead of all.
fn cudnn(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
    fw: &Framework,
) -> Option<Finding> {
    let check = CudnnCheck {
        manifests,
        env,
        fw,
        need: cudnn_need(manifests, fw)?,
    };
    let mut candidates = cudnn_candidates(report, env);
    // The copy the loader resolution says this framework loads goes first.
    if let Some(lib) = resolved_cudnn(report, env, fw) {
        candidates.retain(|l| l.path != lib.path);
        candidates.insert(0, lib);
    }
    match candidates
        .iter()
        .find(|l| lib_major(l) == Some(check.need.major))
    {
        Some(loaded) => check.mismatch(loaded),
        None => Some(check.missing(&candidates)),
    }
}

/// One framework's cuDNN question: the cuDNN it needs and the environment it runs in, which
/// both findings, their details and their fixes read.
struct CudnnCheck<'a> {
    manifests: &'a Manifests,
    env: &'a PythonEnv,
    fw: &'a Framework,
    need: Need,
}

impl CudnnCheck<'_> {
    /// "torch 2.5.1", as the titles name the framework.
    fn label(&self) -> String {
        format!(
            "{} {}",
            self.fw.name,
            self.fw.version.as_deref().unwrap_or("")
        )
    }

    /// `cudnn-missing`: no cuDNN of the needed major can be loaded. The copies of other majors
    /// that can are the evidence of what is there instead.
    fn missing(&self, candidates: &[&Library]) -> Finding {
        let (fw, need) = (self.fw, &self.need);
        let mut f = FindingBuilder::new(
            &ids::CUDNN_MISSING,
            Severity::Error,
            format!(
                "{} needs cuDNN {}, and no loadable cuDNN {} was found",
                self.label(),
                need.major,
                need.major
            ),
        )
        .detail(format!(
            "{} loads cuDNN (libcudnn.so.{}) for convolutions and RNNs; without it, it fails to \
             load it ('Could not load dynamic library libcudnn.so.{}') and skips the GPU or \
             crashes at the first convolution.",
            fw.name, need.major, need.major
        ))
        .evidence(need.source.clone())
        .subject(framework_subject(&self.env.path, &fw.name));
        for l in candidates {
            f = f.evidence(format!(
                "found only: cuDNN {} at {}",
                l.version.as_deref().unwrap_or("unknown"),
                l.path
            ));
        }
        if candidates.is_empty() {
            f = f.evidence(
                "no libcudnn on the loader path or in the environment's nvidia-* wheels"
                    .to_string(),
            );
        }
        f.fix(self.missing_fix()).build()
    }

    /// Bring back the cuDNN the framework's own install brings: TensorFlow's CUDA libraries for
    /// its release (`[and-cuda]` where the release has the extra), JAX's cuDNN wheel, else a
    /// reinstall of the framework, which restores its cuDNN wheel.
    fn missing_fix(&self) -> String {
        let (manifests, fw, major) = (self.manifests, self.fw, self.need.major);
        match FrameworkName::from_report(&fw.name) {
            Some(FrameworkName::Tensorflow)
                if !super::fix_history::tensorflow_has_and_cuda(manifests, fw) =>
            {
                format!(
                    "{}.",
                    super::fix_history::tensorflow_cuda_libraries(manifests, fw)
                )
            }
            Some(FrameworkName::Tensorflow) => format!(
                "Install TensorFlow's CUDA libraries for this version (`pip install 'tensorflow[and-cuda]=={}'`) or the cuDNN {} it was built for (see `gpu-doctor plan`).",
                fw.version.as_deref().unwrap_or(""),
                major
            ),
            Some(FrameworkName::Jax) => {
                super::jax::cudnn_fix(self.env, fw, &major.to_string(), None)
            }
            _ => format!(
                "Reinstall {} so pip brings its cuDNN wheel back: `pip install --force-reinstall {}`.",
                fw.name, fw.name
            ),
        }
    }

    /// `cudnn-version-mismatch` for the copy it would load, of the right major: an error when
    /// its minor is older than the one the framework was built against (frameworks refuse it),
    /// a warning when it is a pip wheel other than the exact pin (pip's resolver moved it).
    fn mismatch(&self, loaded: &Library) -> Option<Finding> {
        let loaded_v = Version::parse(loaded.version.as_deref()?)?;
        let built = self.need.built.as_ref()?;
        // cuDNN loads within a major, but frameworks check that the run-time minor is not older
        // than the one they were built against (PyTorch raises "cuDNN version incompatibility").
        let older =
            Version::parse(&loaded_v.major_minor())? < Version::parse(&built.major_minor())?;
        let wheel_off_pin =
            self.need.exact && loaded.origin == "pip" && !same_release(&loaded_v, built);
        if !older && !wheel_off_pin {
            return None;
        }
        let severity = if older {
            Severity::Error
        } else {
            Severity::Warning
        };
        let mut f = FindingBuilder::new(
            &ids::CUDNN_VERSION_MISMATCH,
            severity,
            format!(
                "{} was built for cuDNN {built} but would load cuDNN {loaded_v}",
                self.label()
            ),
        )
        .detail(self.mismatch_detail(older, &loaded_v, built))
        .evidence(self.need.source.clone())
        .evidence(format!(
            "would load: {} ({}{})",
            loaded.path,
            loaded.origin,
            loaded
                .loader_origin
                .as_deref()
                .map(|o| format!(", via {o}"))
                .unwrap_or_default()
        ))
        .subject(framework_subject(&self.env.path, &self.fw.name));
        if loaded.loader_origin.as_deref() == Some("LD_LIBRARY_PATH") {
            f = f
                .evidence("LD_LIBRARY_PATH is searched before the wheel's own RUNPATH".to_string());
        }
        Some(f.fix(self.mismatch_fix(loaded, &loaded_v, built)).build())
    }

    /// What an older minor does: XLA's own refusal for JAX and TensorFlow, PyTorch's "cuDNN
    /// version incompatibility"; for a wheel off its pin, why that is only a warning.
    fn mismatch_detail(&self, older: bool, loaded_v: &Version, built: &Version) -> String {
        let fw = self.fw;
        // XLA (JAX, TensorFlow) refuses an older cuDNN minor with its own message.
        let xla_refuses = fw.name == FrameworkName::Jax || fw.name == FrameworkName::Tensorflow;
        if older && xla_refuses {
            format!(
                "The cuDNN that would be loaded is older than the one {} was built against; XLA \
                 refuses it: 'Loaded runtime CuDNN library: {} but source was compiled with: {}. \
                 CuDNN library needs to have matching major version and equal or higher minor \
                 version.', then 'DNN library initialization failed'.",
                fw.name,
                three_parts(loaded_v),
                three_parts(built)
            )
        } else if older {
            format!(
                "The cuDNN that would be loaded is older than the one {} was built against; it \
                 refuses it ('cuDNN version incompatibility') or misbehaves.",
                fw.name
            )
        } else {
            "The installed cuDNN wheel is not the version the framework pins; pip's resolver let \
             another package move it. It usually works within the same major, but it is not the \
             tested combination."
                .to_string()
        }
    }

    /// An old jaxlib that loads the system's cuDNN needs a newer system cuDNN (or a JAX whose
    /// extra brings one); a newer JAX its cuDNN wheel, beside the torch that pins an older one;
    /// other frameworks the reinstall that restores their pin.
    fn mismatch_fix(&self, loaded: &Library, loaded_v: &Version, built: &Version) -> String {
        let (env, fw) = (self.env, self.fw);
        if self.need.system_cudnn {
            format!(
                "Install cuDNN {} or a newer {}.x for CUDA {} in place of the {loaded_v} at {} (this jaxlib predates cuDNN's pip wheels and loads the system's), or move to a JAX whose pip extra brings its own cuDNN, in a fresh environment: `pip install -U {}`.",
                built.major_minor(),
                built.major(),
                fw.cuda.as_deref().unwrap_or_default(),
                Path::new(&loaded.path)
                    .parent()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                super::jax::install_extra(env, fw)
            )
        } else if fw.name == FrameworkName::Jax {
            super::jax::cudnn_fix(
                env,
                fw,
                &built.major_minor(),
                torch_for_jax(self.manifests, env, built),
            )
        } else {
            format!(
                "Install the cuDNN {} was built for (`pip install --force-reinstall {}`), and remove other cuDNN folders from LD_LIBRARY_PATH.",
                fw.name, fw.name
            )
        }
    }
}

/// Equal at the precision both give: `9.1.0` is the release `9.1.0.70`.
fn same_release(a: &Version, b: &Version) -> bool {
    let parts = |v: &Version| v.as_str().split('.').count();
    let n = parts(a).min(parts(b)).min(3);
    let cut = |v: &Version| v.as_str().split('.').take(n).collect::<Vec<_>>().join(".");
    Version::parse(&cut(a)) == Version::parse(&cut(b))
}

/// Families a wheel ships and `LD_LIBRARY_PATH` can shadow.
fn families(report: &Report) -> [(&'static str, &Vec<Library>); 4] {
    [
        ("cuDNN", &report.libraries.cudnn),
        ("NCCL", &report.libraries.nccl),
        ("cuBLAS", &report.libraries.cublas),
        ("CUDA runtime", &report.libraries.cudart),
    ]
}

fn shadowing(report: &Report, env: &PythonEnv) -> Vec<Finding> {
    let users: Vec<&Framework> = env.frameworks.iter().filter(|f| f.cuda.is_some()).collect();
    if users.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (family, libs) in families(report) {
        let Some(wheel) = libs
            .iter()
            .find(|l| l.origin == "pip" && in_env(env, &l.path))
        else {
            continue;
        };
        let Some(shadow) = libs
            .iter()
            .filter(|l| l.loader_origin.as_deref() == Some("LD_LIBRARY_PATH"))
            .min_by_key(|l| l.loader_rank)
        else {
            continue;
        };
        let (Some(wv), Some(sv)) = (
            wheel.version.as_deref().and_then(Version::parse),
            shadow.version.as_deref().and_then(Version::parse),
        ) else {
            continue;
        };
        if wv.major() != sv.major() || same_release(&wv, &sv) {
            // Another major has another soname: it cannot be picked in place of the wheel's.
            continue;
        }
        let older = sv < wv;
        let names: Vec<String> = users.iter().map(|f| f.name.clone()).collect();
        let mut f = FindingBuilder::new(
            &ids::LIBRARY_PATH_SHADOWING,
            if older { Severity::Error } else { Severity::Warning },
            format!("LD_LIBRARY_PATH puts {family} {sv} ahead of the {wv} that {} in {} ships", names.join(", "), env.path),
        )
        .detail(format!(
            "The loader searches LD_LIBRARY_PATH before a wheel's RUNPATH, so {} loads {} instead \
             of its own copy.{}",
            names.join(" and "),
            shadow.path,
            if older { " That copy is older than the one it was built with, which breaks it." } else { "" }
        ))
        .evidence(format!("LD_LIBRARY_PATH: {} ({family} {sv})", shadow.path))
        .evidence(format!("wheel: {} ({family} {wv})", wheel.path))
        .fix(format!(
            "Remove {} from LD_LIBRARY_PATH (check ~/.bashrc, module files and conda activate scripts), or unset LD_LIBRARY_PATH when running {}.",
            Path::new(&shadow.path).parent().map(|p| p.display().to_string()).unwrap_or_default(),
            names.join("/")
        ));
        for fw in &users {
            f = f.subject(framework_subject(&env.path, &fw.name));
        }
        if family == "cuDNN" {
            f = f.explains(&ids::CUDNN_VERSION_MISMATCH);
        }
        out.push(f.build());
    }
    out
}

/// `nvidia-cudnn-cu12==9.1.0.70` → (`nvidia-cudnn-cu12`, `==9.1.0.70`).
fn split_pin(pin: &str) -> (&str, &str) {
    match pin.find(['<', '>', '=', '!', '~']) {
        Some(i) => (&pin[..i], &pin[i..]),
        None => (pin, ""),
    }
}

/// The lowest version a spec allows (`==9.1.0.70`, `>=9.12`, `<10.0,>=9.12.0.46`).
fn spec_floor(spec: &str) -> Option<Version> {
    spec.split(',').find_map(|c| {
        let c = c.trim();
        c.strip_prefix("==")
            .or_else(|| c.strip_prefix(">="))
            .or_else(|| c.strip_prefix("~="))
            .and_then(Version::parse)
    })
}

/// Whether `version` meets every clause of a PEP 440 spec; `None` when a clause is not
/// understood (then nothing is claimed).
pub(super) fn spec_allows(spec: &str, version: &Version) -> Option<bool> {
    let mut ok = true;
    for clause in spec.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let (op, rest) = ["==", ">=", "<=", "!=", "~=", ">", "<"]
            .iter()
            .find_map(|op| clause.strip_prefix(op).map(|r| (*op, r)))?;
        if rest.contains('*') {
            return None;
        }
        let want = Version::parse(rest)?;
        ok &= match op {
            "==" => same_release(version, &want),
            ">=" | "~=" => version >= &want,
            "<=" => version <= &want,
            "!=" => !same_release(version, &want),
            ">" => version > &want,
            _ => version < &want,
        };
    }
    Some(ok)
}

/// A wheel two frameworks of one environment pin incompatibly.
struct Conflict<'a> {
    wheel: &'a str,
    pins: Vec<(&'a Framework, &'a str)>,
    installed: Option<&'a crate::report::Wheel>,
}

fn conflicts(env: &PythonEnv) -> Vec<Conflict<'_>> {
    let mut wheels: Vec<&str> = env
        .frameworks
        .iter()
        .flat_map(|f| f.pins.iter().map(|p| split_pin(p).0))
        .filter(|n| n.starts_with("nvidia-"))
        .collect();
    wheels.sort_unstable();
    wheels.dedup();
    wheels
        .into_iter()
        .filter_map(|wheel| {
            let pins: Vec<(&Framework, &str)> = env
                .frameworks
                .iter()
                .filter_map(|f| {
                    f.pins
                        .iter()
                        .find(|p| split_pin(p).0 == wheel)
                        .map(|p| (f, p.as_str()))
                })
                .collect();
            if pins.len() < 2 {
                return None;
            }
            let installed = env.nvidia_wheels.iter().find(|w| w.name == wheel);
            let installed_v = installed.and_then(|w| Version::parse(&w.version));
            let broken = pins.iter().any(|(_, pin)| {
                installed_v
                    .as_ref()
                    .is_some_and(|v| spec_allows(split_pin(pin).1, v) == Some(false))
            });
            let exact: Vec<Version> = pins
                .iter()
                .filter_map(|(_, p)| split_pin(p).1.strip_prefix("==").and_then(Version::parse))
                .collect();
            let exact_disagree = exact.windows(2).any(|w| !same_release(&w[0], &w[1]));
            (broken || exact_disagree).then_some(Conflict {
                wheel,
                pins,
                installed,
            })
        })
        .collect()
}

/// One finding per environment, listing every wheel its frameworks disagree on: one cause
/// (two frameworks sharing one environment), however many wheels it touches.
fn wheels_conflict(report: &Report, manifests: &Manifests, env: &PythonEnv) -> Option<Finding> {
    let conflicts = conflicts(env);
    let first = conflicts.first()?;
    let mut names: Vec<&str> = conflicts
        .iter()
        .flat_map(|c| c.pins.iter().map(|(f, _)| f.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let wheels: Vec<&str> = conflicts.iter().map(|c| c.wheel).collect();
    let mut f = FindingBuilder::new(
        &ids::FRAMEWORK_WHEELS_CONFLICT,
        Severity::Error,
        format!(
            "{} in {} need different versions of {}",
            names.join(" and "),
            env.path,
            if wheels.len() == 1 {
                first.wheel.to_string()
            } else {
                format!("{} CUDA library wheels", wheels.len())
            }
        ),
    )
    .detail(
        "Each framework's wheel pins the CUDA libraries it was built with. Frameworks sharing \
         one environment pin them differently, so whichever was installed last decides, and the \
         other loads libraries it was not built for (typically failing to load cuDNN or NCCL).",
    );
    for c in &conflicts {
        for (fw, pin) in &c.pins {
            f = f.evidence(format!(
                "{} {} requires {pin}",
                fw.name,
                fw.version.as_deref().unwrap_or("")
            ));
        }
        f = f.evidence(match c.installed {
            Some(w) => format!("installed: {} {}", w.name, w.version),
            None => format!("{} is not installed", c.wheel),
        });
        if c.wheel.starts_with("nvidia-cudnn") {
            f = jax_loads_cudnn(report, env, c, f);
        }
    }
    for name in &names {
        f = f.subject(framework_subject(&env.path, name));
    }
    let ways: Vec<String> = conflicts
        .iter()
        .filter_map(|c| resolution(manifests, env, c))
        .collect();
    let separate = "give each framework its own environment (`python -m venv` or `conda create`)";
    Some(
        f.fix(if ways.is_empty() {
            "Give each framework its own environment (`python -m venv` or `conda create`), or \
             install versions of the frameworks built against the same CUDA libraries."
                .to_string()
        } else {
            let ways = ways.join("; ");
            let mut first = ways.chars();
            let ways = first
                .next()
                .map(|c| c.to_uppercase().collect::<String>() + first.as_str())
                .unwrap_or_default();
            format!("{ways}; or {separate}.")
        })
        .build(),
    )
}

/// The copy of cuDNN a JAX in this environment will load, as evidence: JAX's CUDA plugin
/// (0.6.2 on) loads the `nvidia/cudnn` wheel's library by path, whichever framework's pins
/// brought it; XLA then refuses a minor older than the one it was built with.
fn jax_loads_cudnn<'a>(
    report: &Report,
    env: &PythonEnv,
    c: &Conflict<'a>,
    f: FindingBuilder,
) -> FindingBuilder {
    let Some((jax, pin)) = c.pins.iter().find(|(fw, _)| fw.name == FrameworkName::Jax) else {
        return f;
    };
    let Some(installed) = c.installed else {
        return f;
    };
    let (Some(have), Some(floor)) = (
        Version::parse(&installed.version),
        spec_floor(split_pin(pin).1),
    ) else {
        return f;
    };
    let loaded = report
        .libraries
        .loads
        .iter()
        .filter(|l| l.env == env.path && l.framework == jax.name)
        .flat_map(|l| &l.libraries)
        .find(|l| l.soname.starts_with("libcudnn.so."))
        .and_then(|l| l.path.clone());
    let mut f = f;
    if let Some(path) = loaded {
        f = f.evidence(format!(
            "jax {} would load {path} ({} {})",
            jax.version.as_deref().unwrap_or(""),
            installed.name,
            installed.version
        ));
    }
    let older = Version::parse(&have.major_minor()) < Version::parse(&floor.major_minor());
    if older {
        f = f.evidence(format!(
            "XLA refuses it: \"Loaded runtime CuDNN library: {} but source was compiled with: {}. CuDNN library needs to have matching major version and equal or higher minor version.\"",
            three_parts(&have),
            three_parts(&floor)
        ));
    }
    f
}

/// `9.1.0.70` → `9.1.0`, `9.8` → `9.8.0`: how XLA prints a cuDNN version.
fn three_parts(v: &Version) -> String {
    let mut parts: Vec<&str> = v.as_str().split('.').take(3).collect();
    while parts.len() < 3 {
        parts.push("0");
    }
    parts.join(".")
}

/// A way out that keeps both frameworks, from sourced data only: a version of the wheel that
/// one framework pins exactly and every other pin allows; else a newer torch release (for the
/// environment's Python, from frameworks.toml) whose build pins a version the others allow.
fn resolution(manifests: &Manifests, env: &PythonEnv, c: &Conflict<'_>) -> Option<String> {
    let allowed_by_all = |v: &Version, skip: Option<&str>| {
        c.pins
            .iter()
            .filter(|(fw, _)| Some(fw.name.as_str()) != skip)
            .all(|(_, pin)| spec_allows(split_pin(pin).1, v) == Some(true))
    };
    let exact: Vec<(&Framework, Version)> = c
        .pins
        .iter()
        .filter_map(|(fw, p)| {
            let v = split_pin(p).1.strip_prefix("==").and_then(Version::parse)?;
            Some((*fw, v))
        })
        .collect();
    if let Some((fw, v)) = exact.iter().find(|(_, v)| allowed_by_all(v, None)) {
        return Some(format!(
            "install the {} that {} pins, which every framework here allows: `pip install \"{}=={v}\"`",
            c.wheel, fw.name, c.wheel
        ));
    }
    // torch pins exactly; a newer torch may pin a version the others allow.
    let (torch, _) = exact
        .iter()
        .find(|(fw, _)| fw.name == FrameworkName::Torch)?;
    let wheel_major: u64 = c
        .wheel
        .rsplit_once("-cu")
        .and_then(|(_, m)| m.parse().ok())?;
    let up = torch_with_cudnn(manifests, env, torch, wheel_major, |v| {
        allowed_by_all(v, Some("torch"))
    })?;
    Some(format!(
        "upgrade torch to {} built for CUDA {} (its wheel pins {}=={}, which the others allow; `pip install \"torch=={}.*\" --index-url {}`)",
        up.release, up.cuda, c.wheel, up.cudnn, up.release, up.index
    ))
}

/// For a JAX that needs cuDNN `built` (its minor or newer) beside a torch that pins an older
/// cuDNN wheel: the published torch whose cuDNN JAX accepts.
fn torch_for_jax(manifests: &Manifests, env: &PythonEnv, built: &Version) -> Option<String> {
    let torch = env
        .frameworks
        .iter()
        .find(|f| f.name == FrameworkName::Torch)?;
    let pin = torch.pins.iter().find(|p| p.starts_with("nvidia-cudnn"))?;
    let (wheel, _) = split_pin(pin);
    let major: u64 = wheel.rsplit_once("-cu").and_then(|(_, m)| m.parse().ok())?;
    let floor = Version::parse(&built.major_minor())?;
    let up = torch_with_cudnn(manifests, env, torch, major, |v| {
        v.major() == floor.major() && Version::parse(&v.major_minor()).is_some_and(|m| m >= floor)
    })?;
    Some(format!(
        "torch {} built for CUDA {} pins {wheel}=={} (`pip install \"torch=={}.*\" --index-url {}`)",
        up.release, up.cuda, up.cudnn, up.release, up.index
    ))
}

/// A published torch build (frameworks.toml) newer than the installed torch's minor series,
/// for the environment's Python, built for CUDA `cuda_major`, whose cuDNN wheel pin `allows`.
struct TorchUpgrade {
    release: String,
    cuda: String,
    cudnn: String,
    index: String,
}

fn torch_with_cudnn(
    manifests: &Manifests,
    env: &PythonEnv,
    torch: &Framework,
    cuda_major: u64,
    allows: impl Fn(&Version) -> bool,
) -> Option<TorchUpgrade> {
    let installed = package_version(torch.version.as_deref()?)?
        .without_local()
        .to_string();
    let fits_python = |min: &str, max: Option<&str>| {
        env.python_version
            .as_deref()
            .is_none_or(|py| crate::version::python_fits(py, min, max))
    };
    for release in &manifests.frameworks.torch {
        // Only releases after the installed one's minor series.
        let same_series = installed.starts_with(&format!("{}.", release.version));
        if same_series
            || crate::version::compare(&release.version, &installed).is_le()
            || !fits_python(&release.python_min, release.python_max.as_deref())
        {
            continue;
        }
        for build in &release.builds {
            let Some(cuda) = build.cuda().as_deref().and_then(Version::parse) else {
                continue;
            };
            let Some(cudnn) = build.cudnn.as_deref().and_then(Version::parse) else {
                continue;
            };
            if cuda.major() == cuda_major && allows(&cudnn) {
                return Some(TorchUpgrade {
                    release: release.version.clone(),
                    cuda: cuda.major_minor(),
                    cudnn: build.cudnn.clone().unwrap_or_default(),
                    index: manifests.frameworks.torch_index_url(&build.variant),
                });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::diagnose;
    use crate::manifest::embedded;
    use crate::report::{Component, Gpu, Wheel};

    const SITE: &str = "/venv/lib/python3.11/site-packages";

    fn lib(version: &str, path: &str, origin: &str, loader: Option<(&str, u32)>) -> Library {
        Library {
            version: Some(version.into()),
            path: path.into(),
            origin: origin.into(),
            version_source: Some("file-name".into()),
            on_loader_path: loader.is_some(),
            loader_origin: loader.map(|(o, _)| o.to_string()),
            loader_rank: loader.map(|(_, r)| r),
        }
    }

    fn torch(pins: &[&str]) -> Framework {
        Framework {
            name: "torch".into(),
            version: Some("2.4.0+cu121".into()),
            cuda: Some("12.1".into()),
            variant: Some("cuda".into()),
            pins: pins.iter().map(|p| (*p).to_string()).collect(),
            ..Framework::default()
        }
    }

    fn machine(frameworks: Vec<Framework>, cudnn: Vec<Library>, wheels: Vec<Wheel>) -> Report {
        let mut r = Report {
            gpus: vec![Gpu {
                name: Some("NVIDIA A10G".into()),
                source: "nvml".into(),
                ..Gpu::default()
            }],
            python_envs: vec![PythonEnv {
                path: "/venv".into(),
                kind: "venv".into(),
                site_packages: vec![SITE.into()],
                frameworks,
                nvidia_wheels: wheels,
                ..PythonEnv::default()
            }],
            ..Report::default()
        };
        r.libraries.cudnn = cudnn;
        r
    }

    fn ids(r: &Report) -> Vec<String> {
        diagnose(r).into_iter().map(|f| f.id).collect()
    }

    fn wheel_cudnn(version: &str) -> Library {
        lib(
            version,
            &format!("{SITE}/nvidia/cudnn/lib/libcudnn.so.9"),
            "pip",
            None,
        )
    }

    #[test]
    fn torch_with_its_cudnn_wheel_is_fine_without_it_cudnn_is_missing() {
        let pins = ["nvidia-cudnn-cu12==9.1.0.70"];
        let ok = machine(vec![torch(&pins)], vec![wheel_cudnn("9.1.0")], vec![]);
        assert!(ids(&ok).is_empty(), "{:?}", ids(&ok));
        let system8 = lib(
            "8.9.7",
            "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7",
            "system",
            Some(("ld.so.conf", 3)),
        );
        let missing = machine(vec![torch(&pins)], vec![system8], vec![]);
        let f = diagnose(&missing);
        assert_eq!(
            f.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(),
            ["cudnn-missing"]
        );
        assert!(
            f[0].evidence
                .iter()
                .any(|e| e.contains("found only: cuDNN 8.9.7")),
            "{:?}",
            f[0].evidence
        );
    }

    #[test]
    fn an_older_cudnn_on_ld_library_path_shadows_the_wheel_and_explains_the_mismatch() {
        let pins = ["nvidia-cudnn-cu12==9.1.0.70"];
        let old = lib(
            "9.0.0",
            "/opt/cudnn-9.0/lib/libcudnn.so.9.0.0",
            "system",
            Some(("LD_LIBRARY_PATH", 0)),
        );
        let r = machine(vec![torch(&pins)], vec![old, wheel_cudnn("9.1.0")], vec![]);
        let f = diagnose(&r);
        assert_eq!(
            f.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(),
            ["library-path-shadowing"]
        );
        assert_eq!(f[0].severity, Severity::Error);
        assert_eq!(f[0].explains, ["cudnn-version-mismatch"]);
        // A newer copy there still shadows, as a warning.
        let newer = lib(
            "9.5.1",
            "/opt/cudnn-9.5/lib/libcudnn.so.9.5.1",
            "system",
            Some(("LD_LIBRARY_PATH", 0)),
        );
        let r = machine(
            vec![torch(&pins)],
            vec![newer, wheel_cudnn("9.1.0")],
            vec![],
        );
        let f = diagnose(&r);
        assert_eq!(
            f.iter()
                .map(|f| (f.id.as_str(), f.severity))
                .collect::<Vec<_>>(),
            [("library-path-shadowing", Severity::Warning)]
        );
    }

    #[test]
    fn tensorflow_built_for_cudnn_8_with_only_cudnn_9() {
        let tf = Framework {
            name: "tensorflow".into(),
            version: Some("2.15.0".into()),
            cuda: Some("12.2".into()),
            cudnn: Some("8".into()),
            variant: Some("cuda".into()),
            ..Framework::default()
        };
        let nine = lib(
            "9.1.0",
            "/usr/lib/x86_64-linux-gnu/libcudnn.so.9.1.0",
            "system",
            Some(("ld.so.conf", 2)),
        );
        assert_eq!(
            ids(&machine(vec![tf.clone()], vec![nine], vec![])),
            ["cudnn-missing"]
        );
        let eight = lib(
            "8.9.7",
            "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7",
            "system",
            Some(("ld.so.conf", 2)),
        );
        assert!(ids(&machine(vec![tf], vec![eight], vec![])).is_empty());
    }

    #[test]
    fn two_frameworks_pinning_different_cudnn_wheels_conflict() {
        let tf = Framework {
            name: "tensorflow".into(),
            version: Some("2.15.0".into()),
            pins: vec!["nvidia-cudnn-cu12==8.9.4.25".into()],
            ..Framework::default()
        };
        let wheels = vec![Wheel {
            name: "nvidia-cudnn-cu12".into(),
            version: "9.1.0.70".into(),
            lib_dir: None,
        }];
        let r = machine(
            vec![torch(&["nvidia-cudnn-cu12==9.1.0.70"]), tf],
            vec![wheel_cudnn("9.1.0")],
            wheels,
        );
        let f = wheels_conflict(&r, embedded(), &r.python_envs[0]).expect("a conflict");
        assert!(
            f.evidence
                .iter()
                .any(|e| e == "tensorflow 2.15.0 requires nvidia-cudnn-cu12==8.9.4.25"),
            "{:?}",
            f.evidence
        );
        assert_eq!(
            f.title,
            "tensorflow and torch in /venv need different versions of nvidia-cudnn-cu12"
        );
        // The conflict is the root cause: TF's own cuDNN finding is not added on top.
        let ids: Vec<String> = diagnose(&r).into_iter().map(|f| f.id).collect();
        assert_eq!(ids, ["framework-wheels-conflict"]);
        // Ranges both satisfied by the installed wheel: no conflict.
        let jax = Framework {
            name: "jax".into(),
            pins: vec!["nvidia-cudnn-cu12<10.0,>=9.0".into()],
            ..Framework::default()
        };
        let wheels = vec![Wheel {
            name: "nvidia-cudnn-cu12".into(),
            version: "9.1.0.70".into(),
            lib_dir: None,
        }];
        let r = machine(
            vec![torch(&["nvidia-cudnn-cu12==9.1.0.70"]), jax],
            vec![],
            wheels,
        );
        assert!(wheels_conflict(&r, embedded(), &r.python_envs[0]).is_none());
    }

    fn jax(version: &str, pins: &[&str]) -> Framework {
        Framework {
            name: "jax".into(),
            version: Some(version.into()),
            cuda: Some("12".into()),
            variant: Some("cuda".into()),
            pins: pins.iter().map(|p| (*p).to_string()).collect(),
            components: vec![
                Component {
                    name: "jax-cuda12-plugin".into(),
                    version: version.into(),
                },
                Component {
                    name: "jaxlib".into(),
                    version: version.into(),
                },
            ],
            ..Framework::default()
        }
    }

    fn cudnn_wheel(version: &str) -> Vec<Wheel> {
        vec![Wheel {
            name: "nvidia-cudnn-cu12".into(),
            version: version.into(),
            lib_dir: None,
        }]
    }

    /// AI-Hypercomputer/maxtext#1509: torch's nvidia-cudnn-cu12==9.1.0.70 under a JAX that
    /// needs 9.8. No cuDNN satisfies both; a newer torch whose wheel pins a cuDNN JAX allows
    /// does, and the fix names it (for the environment's Python), then separate environments.
    #[test]
    fn conflict_fix_names_a_torch_whose_cudnn_jax_allows() {
        let mut torch26 = torch(&["nvidia-cudnn-cu12==9.1.0.70"]);
        torch26.version = Some("2.6.0+cu124".into());
        let jax6 = jax("0.6.0", &["nvidia-cudnn-cu12<10.0,>=9.8"]);
        let mut r = machine(
            vec![torch26.clone(), jax6.clone()],
            vec![wheel_cudnn("9.1.0")],
            cudnn_wheel("9.1.0.70"),
        );
        r.python_envs[0].python_version = Some("3.11.9".into());
        let f = wheels_conflict(&r, embedded(), &r.python_envs[0]).expect("a conflict");
        let fix = f.fix.clone().unwrap_or_default();
        assert!(
            fix.starts_with("Upgrade torch to 2.8 built for CUDA 12.6 (its wheel pins nvidia-cudnn-cu12==9.10.2.21"),
            "{fix}"
        );
        assert!(
            fix.contains("https://download.pytorch.org/whl/cu126"),
            "{fix}"
        );
        assert!(
            fix.ends_with(
                "or give each framework its own environment (`python -m venv` or `conda create`)."
            ),
            "{fix}"
        );
        assert!(
            f.evidence.iter().any(|e| e.contains(
                "Loaded runtime CuDNN library: 9.1.0 but source was compiled with: 9.8.0."
            )),
            "{:?}",
            f.evidence
        );
        // The reverse order of installs: pip moved the wheel to 9.10 for JAX, breaking
        // torch's exact pin. torch's own 9.1.0.70 is within JAX 0.4.31's >=9.1: install it.
        let jax431 = jax("0.4.31", &["nvidia-cudnn-cu12<10.0,>=9.1"]);
        let r = machine(
            vec![torch26.clone(), jax431],
            vec![wheel_cudnn("9.10.2")],
            cudnn_wheel("9.10.2.21"),
        );
        let f = wheels_conflict(&r, embedded(), &r.python_envs[0]).expect("a conflict");
        let fix = f.fix.clone().unwrap_or_default();
        assert!(
            fix.starts_with("Install the nvidia-cudnn-cu12 that torch pins, which every framework here allows: `pip install \"nvidia-cudnn-cu12==9.1.0.70\"`"),
            "{fix}"
        );
        // No torch release fits Python 3.7: only separate environments remain.
        let mut r = machine(
            vec![torch26, jax6],
            vec![wheel_cudnn("9.1.0")],
            cudnn_wheel("9.1.0.70"),
        );
        r.python_envs[0].python_version = Some("3.7.1".into());
        let f = wheels_conflict(&r, embedded(), &r.python_envs[0]).expect("a conflict");
        let fix = f.fix.clone().unwrap_or_default();
        assert!(
            fix.starts_with("Give each framework its own environment"),
            "{fix}"
        );
    }

    /// A JAX whose plugin metadata gives no cuDNN pin: its release's range from frameworks.toml
    /// (0.6.x: >=9.8) against the cuDNN it would load.
    #[test]
    fn jax_without_pins_takes_its_release_cudnn_floor() {
        let r = machine(vec![jax("0.6.2", &[])], vec![wheel_cudnn("9.1.0")], vec![]);
        let f = diagnose(&r);
        let ids: Vec<&str> = f.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["cudnn-version-mismatch"]);
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].evidence[0].starts_with("jax 0.6.2 (CUDA 12) needs cuDNN >=9.8,<10.0"),
            "{:?}",
            f[0].evidence
        );
        // A newer wheel within the range is fine: a floor, not an exact pin.
        // jax 0.11.0's [[jax]] row gives no cuDNN; its tag's build/nvidia-requirements.txt does.
        let f = diagnose(&machine(
            vec![jax("0.11.0", &[])],
            vec![wheel_cudnn("9.1.0")],
            vec![],
        ));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].evidence[0].contains("build/nvidia-requirements.txt"),
            "{:?}",
            f[0].evidence
        );
        let ok = machine(vec![jax("0.6.2", &[])], vec![wheel_cudnn("9.10.2")], vec![]);
        assert!(ids_of(&ok).is_empty(), "{:?}", ids_of(&ok));
        let pinned = machine(
            vec![jax("0.6.2", &["nvidia-cudnn-cu12<10.0,>=9.8"])],
            vec![wheel_cudnn("9.10.2")],
            vec![],
        );
        assert!(ids_of(&pinned).is_empty(), "{:?}", ids_of(&pinned));
    }

    /// jax-ml/jax#6517: jaxlib 0.1.65+cuda112 was built with cuDNN 8.1.0.77 (its
    /// build/install_cuda.sh); cuDNN 8.0.5 is refused.
    #[test]
    fn old_jaxlib_cudnn_comes_from_its_build_script() {
        let mut old = jax("0.2.12", &[]);
        old.cuda = Some("11.2".into());
        old.components = vec![Component {
            name: "jaxlib".into(),
            version: "0.1.65+cuda112".into(),
        }];
        let system805 = lib(
            "8.0.5",
            "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.0.5",
            "system",
            Some(("ld.so.conf", 2)),
        );
        let r = machine(vec![old.clone()], vec![system805], vec![]);
        let f = diagnose(&r);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].title,
            "jax 0.2.12 was built for cuDNN 8.1.0.77 but would load cuDNN 8.0.5"
        );
        let system81 = lib(
            "8.1.1",
            "/usr/lib/x86_64-linux-gnu/libcudnn.so.8.1.1",
            "system",
            Some(("ld.so.conf", 2)),
        );
        assert!(ids_of(&machine(vec![old], vec![system81], vec![])).is_empty());
    }

    fn ids_of(r: &Report) -> Vec<String> {
        ids(r)
    }

    #[test]
    fn specs() {
        let v = |s: &str| Version::parse(s).unwrap();
        assert_eq!(spec_allows("==9.1.0.70", &v("9.1.0.70")), Some(true));
        assert_eq!(
            spec_allows("<10.0,>=9.12.0.46", &v("9.19.0.56")),
            Some(true)
        );
        assert_eq!(spec_allows("<10.0,>=9.12.0.46", &v("9.5.0")), Some(false));
        assert_eq!(spec_allows("==9.*", &v("9.5.0")), None);
        assert_eq!(spec_floor("<10.0,>=9.12.0.46"), Some(v("9.12.0.46")));
        assert!(same_release(&v("9.1.0"), &v("9.1.0.70")));
        assert!(!same_release(&v("9.1.0"), &v("9.5.1")));
    }
}
