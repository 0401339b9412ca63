//! `cudnn-missing` and `cudnn-version-mismatch`: the cuDNN copy a framework's process would
//! load, set against the one it was built for ([`super::need`]). Kept apart from the wheel
//! conflict because this question is about one framework and the loader, not two frameworks.

use std::path::Path;

use super::in_env;
use super::need::{Need, cudnn_need};
use super::pins::{same_release, three_parts};
use super::torch_upgrade::torch_for_jax;
use crate::diagnose::FindingBuilder;
use crate::diagnose::ids;
use crate::framework::FrameworkName;
use crate::manifest::Manifests;
use crate::report::{Finding, Framework, Library, PythonEnv, Report, Severity, framework_subject};
use crate::version::Version;

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

fn lib_major(lib: &Library) -> Option<u64> {
    lib.version
        .as_deref()
        .and_then(Version::parse)
        .map(|v| v.major())
}

/// `cudnn-missing` or `cudnn-version-mismatch` for one framework: the cuDNN it needs, then the
/// first copy of that major it could load, the one the loader resolution names ahead of all.
pub(super) fn cudnn(
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
                if !crate::diagnose::fix_history::tensorflow_has_and_cuda(manifests, fw) =>
            {
                format!(
                    "{}.",
                    crate::diagnose::fix_history::tensorflow_cuda_libraries(manifests, fw)
                )
            }
            Some(FrameworkName::Tensorflow) => format!(
                "Install TensorFlow's CUDA libraries for this version (`pip install 'tensorflow[and-cuda]=={}'`) or the cuDNN {} it was built for (see `gpu-doctor plan`).",
                fw.version.as_deref().unwrap_or(""),
                major
            ),
            Some(FrameworkName::Jax) => {
                crate::diagnose::jax::cudnn_fix(self.env, fw, &major.to_string(), None)
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
                crate::diagnose::jax::install_extra(env, fw)
            )
        } else if fw.name == FrameworkName::Jax {
            crate::diagnose::jax::cudnn_fix(
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
