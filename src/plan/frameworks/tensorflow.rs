//! TensorFlow with `[and-cuda]`: the release whose tested CUDA and cuDNN fit these GPUs and this
//! Python, and a system cuDNN's major.

use crate::manifest::Manifests;
use crate::version::Version;

use super::aarch64::tensorflow_aarch64;
use super::{FrameworkPlan, land, pin, python_range, short_python};
use crate::plan::choose::{self};
use crate::plan::target::{FrameworkName, FrameworkSpec};
use crate::version::{compare, python_fits};

pub(super) fn tensorflow(
    m: &Manifests,
    arch: &str,
    spec: &FrameworkSpec,
    ccs: &[String],
    cuda: Option<&Version>,
    python: Option<&str>,
    cudnn: Option<u64>,
) -> Result<FrameworkPlan, String> {
    let tf = &m.frameworks;
    let config = match &spec.version {
        Some(v) => tf.tensorflow(v).ok_or_else(|| {
            let known: Vec<&str> = tf.tensorflow.iter().map(|r| r.version.as_str()).collect();
            format!(
                "TensorFlow {v} is not a release the manifests know ({})",
                known.join(", ")
            )
        })?,
        None => tf
            .tensorflow
            .last()
            .ok_or("the manifests list no TensorFlow release")?,
    };
    let series = Version::parse(&config.version)
        .map(|v| v.major_minor())
        .unwrap_or_default();
    let first = &tf.tensorflow_pip.and_cuda_first;
    if compare(&series, first).is_lt() {
        return Err(format!(
            "TensorFlow {series} predates the [and-cuda] extra (first in {first}): it needs CUDA \
             {} and cuDNN {} from the system, which gpu-doctor plans do not install",
            config.cuda, config.cudnn
        ));
    }
    let built_cuda = Version::parse(&config.cuda).ok_or("TensorFlow's CUDA")?;
    let built_cudnn = Version::parse(&config.cudnn).ok_or("TensorFlow's cuDNN")?;
    if let Some(c) = cuda
        && c.major() != built_cuda.major()
    {
        return Err(format!(
            "TensorFlow {series} is built for CUDA {built_cuda}, not CUDA {c}.x"
        ));
    }
    if let Some(major) = cudnn
        && major != built_cudnn.major()
    {
        return Err(format!(
            "TensorFlow {series} was built with cuDNN {built_cudnn}: it loads only cuDNN {}.x \
             (libcudnn.so.{}), never cuDNN {major}",
            built_cudnn.major(),
            built_cudnn.major()
        ));
    }
    if let Some(py) = python
        && !python_fits(py, &config.python_min, Some(&config.python_max))
    {
        return Err(format!(
            "TensorFlow {series} supports Python {}, not {py}",
            python_range(&config.python_min, Some(&config.python_max))
        ));
    }
    if let Some(why) = choose::wheels_refuse_gpus(&m.cuda, &built_cuda, ccs) {
        return Err(format!("TensorFlow {series} cannot work here: {why}"));
    }
    if arch == "aarch64" {
        tensorflow_aarch64(m, &series)?;
    }
    if let Some(py) = python {
        land(m, arch, "tensorflow", Some(&series), Some("and-cuda"), py)?;
    }
    let pulls = tf
        .tensorflow_and_cuda(&config.version)
        .map_or_else(String::new, |row| {
            format!(
                " ([and-cuda] pulls CUDA {} wheels {}, cuDNN {}, NCCL {})",
                row.cuda_major, row.cuda_wheels, row.cudnn, row.nccl
            )
        });
    let version = spec.version.clone().unwrap_or_else(|| series.clone());
    Ok(FrameworkPlan {
        name: FrameworkName::Tensorflow,
        label: format!("TensorFlow {version} with [and-cuda]"),
        requirement: format!("tensorflow[and-cuda]{}", pin(&version, None)),
        index_url: None,
        dist: "tensorflow".to_string(),
        dist_prefix: format!("{version}."),
        dist_local: None,
        cuda: built_cuda.clone(),
        cuda_is_minor: true,
        driver_floor: Version::parse(&tf.tensorflow_pip.driver_min_linux),
        cudnn: Some(built_cudnn.major()),
        python_default: Some(config.python_max.clone()),
        replace: false,
        python: python.map(short_python),
        extra_dist: Some(("tensorflow".to_string(), "and-cuda".to_string())),
        why: format!(
            "TensorFlow {series} is built with CUDA {built_cuda} and cuDNN {built_cudnn}; the \
             [and-cuda] extra installs matching NVIDIA wheels{pulls}, so no system CUDA is needed \
             (frameworks.toml tensorflow, tensorflow_and_cuda)."
        ),
        companions: Vec::new(),
    })
}
