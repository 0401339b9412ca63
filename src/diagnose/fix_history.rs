//! Fix texts checked against the framework's own history: a pip extra or an index is named only
//! for the releases that have it. TensorFlow's `[and-cuda]` extra exists from 2.14
//! (`tensorflow_pip.and_cuda_first`); older releases need CUDA and cuDNN from the system, at the
//! versions the build records (`build_info.py`) or TensorFlow's tested configurations list.

use crate::manifest::Manifests;
use crate::report::Framework;
use crate::version::compare;

/// Whether this TensorFlow release has the `[and-cuda]` extra; unknown versions are assumed to.
#[must_use]
pub(super) fn tensorflow_has_and_cuda(manifests: &Manifests, fw: &Framework) -> bool {
    let first = &manifests.frameworks.tensorflow_pip.and_cuda_first;
    fw.version
        .as_deref()
        .map(|v| v.split('+').next().unwrap_or(v))
        .is_none_or(|v| compare(v, first).is_ge())
}

/// How to give this TensorFlow the CUDA libraries it loads: `[and-cuda]` at its own version
/// where the extra exists, else the system CUDA and cuDNN its build names.
#[must_use]
pub(super) fn tensorflow_cuda_libraries(manifests: &Manifests, fw: &Framework) -> String {
    let version = fw.version.as_deref().unwrap_or("");
    if tensorflow_has_and_cuda(manifests, fw) {
        return if version.is_empty() {
            "`pip install 'tensorflow[and-cuda]'`".to_string()
        } else {
            format!("`pip install 'tensorflow[and-cuda]=={version}'`")
        };
    }
    let first = &manifests.frameworks.tensorflow_pip.and_cuda_first;
    let tested = manifests.frameworks.tensorflow(version);
    let cuda = fw.cuda.clone().or_else(|| tested.map(|t| t.cuda.clone()));
    let cudnn = fw.cudnn.clone().or_else(|| tested.map(|t| t.cudnn.clone()));
    let wants = match (&cuda, &cudnn) {
        (Some(c), Some(d)) => format!("CUDA {c} and cuDNN {d}"),
        (Some(c), None) => format!("CUDA {c} and its cuDNN"),
        _ => "the CUDA and cuDNN of its tested configuration".to_string(),
    };
    let said_by = match (fw.cuda.is_some(), tested) {
        (true, _) => "as its build_info.py records".to_string(),
        (false, Some(t)) => format!(
            "TensorFlow's tested configuration for {}: {}",
            t.version, t.source
        ),
        (false, None) => "see tensorflow.org/install/source#gpu".to_string(),
    };
    let conda = match (&cuda, &cudnn) {
        (Some(c), Some(d)) => format!(
            " (conda: `conda install -c conda-forge cudatoolkit={c} cudnn={}`)",
            d.split('.').next().unwrap_or(d)
        ),
        _ => String::new(),
    };
    format!(
        "TensorFlow {version} predates the `[and-cuda]` extra (first in {first}), so pip cannot \
         bring its CUDA libraries: install {wants} ({said_by}) from NVIDIA's archives{conda} and \
         put their lib folder on LD_LIBRARY_PATH, or move to TensorFlow {first} or newer (Python 3.9 or newer) and \
         `pip install 'tensorflow[and-cuda]'`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tf(version: &str, cuda: Option<&str>, cudnn: Option<&str>) -> Framework {
        Framework {
            name: "tensorflow".into(),
            version: Some(version.into()),
            cuda: cuda.map(str::to_string),
            cudnn: cudnn.map(str::to_string),
            variant: Some("cuda".into()),
            ..Framework::default()
        }
    }

    #[test]
    fn and_cuda_only_from_its_first_release() {
        let m = crate::manifest::embedded();
        let new = tensorflow_cuda_libraries(m, &tf("2.15.0", Some("12.2"), Some("8")));
        assert_eq!(new, "`pip install 'tensorflow[and-cuda]==2.15.0'`");
        let old = tensorflow_cuda_libraries(m, &tf("2.3.0", Some("10.1"), Some("7")));
        assert!(!old.contains("[and-cuda]=="), "{old}");
        assert!(
            old.contains("predates the `[and-cuda]` extra (first in 2.14)"),
            "{old}"
        );
        assert!(old.contains("CUDA 10.1 and cuDNN 7"), "{old}");
        // No build facts: the tested-configuration table speaks, with its source.
        let table = tensorflow_cuda_libraries(m, &tf("2.4.1", None, None));
        assert!(table.contains("CUDA 11.0 and cuDNN 8.0"), "{table}");
        assert!(table.contains("tensorflow.org/install/source"), "{table}");
    }
}
