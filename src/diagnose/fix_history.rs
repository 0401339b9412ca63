//! Fix texts checked against the framework's own history: a pip extra or an index is named only
//! for the releases that have it. TensorFlow's `[and-cuda]` extra exists from 2.14
//! (`tensorflow_pip.and_cuda_first`); older releases need CUDA and cuDNN from the system, at the
//! versions the build records (`build_info.py`) or TensorFlow's tested configurations list.

use crate::framework::FrameworkName;
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

/// Whether this is one of NVIDIA's NGC container builds rather than a release from the
/// framework's own indexes: PyTorch from source at a pre-release with a commit
/// (`2.1.0a0+32f93b1`, `2.3.0a0+40ec155e58.nv24.03`), or a build tagged `nv24.03`. pip cannot
/// reinstall these versions from PyTorch's indexes; the container release is what changes them.
#[must_use]
pub(super) fn ngc_build(fw: &Framework) -> bool {
    let Some(v) = fw.version.as_deref() else {
        return false;
    };
    let (public, local) = v.split_once('+').unwrap_or((v, ""));
    let from_source = public.ends_with("a0") && !local.is_empty() && !local.starts_with("cu");
    let nv_tag = |s: &str| {
        s.split(['.', '+', '-']).any(|p| {
            p.strip_prefix("nv")
                .is_some_and(|d| d.len() == 2 && d.bytes().all(|b| b.is_ascii_digit()))
        })
    };
    from_source || nv_tag(local) || v.contains(".nv")
}

/// What to do instead of a pip reinstall for an NGC build: pick the container release for the
/// host driver (the gap: which NGC release carries which CUDA is not in gpu-doctor's tables).
#[must_use]
pub(super) fn ngc_fix(fw: &Framework, driver_cuda: Option<&str>) -> String {
    let version = fw.version.as_deref().unwrap_or("");
    let cuda = driver_cuda.map_or(String::new(), |c| format!(" built on CUDA {c} or older"));
    format!(
        "{} {version} is NVIDIA's NGC container build (not on {}'s package indexes, so `pip \
         install {}=={version}` cannot replace it): run an NGC container release{cuda} (each \
         release's notes say \"is based on CUDA X, which requires NVIDIA Driver release N or \
         later\"), or upgrade the host driver.",
        fw.name,
        if fw.name == FrameworkName::Torch {
            "PyTorch"
        } else {
            "the framework"
        },
        fw.name
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
    fn ngc_builds_are_told_from_index_releases() {
        let torch = |v: &str| Framework {
            name: "torch".into(),
            version: Some(v.into()),
            ..Framework::default()
        };
        assert!(ngc_build(&torch("2.1.0a0+32f93b1")));
        assert!(ngc_build(&torch("2.3.0a0+40ec155e58.nv24.03")));
        assert!(ngc_build(&tf("2.15.0+nv24.03", None, None)));
        assert!(!ngc_build(&torch("2.5.1+cu124")));
        assert!(!ngc_build(&torch("2.6.0")));
        let fix = ngc_fix(&torch("2.1.0a0+32f93b1"), Some("11.0"));
        assert!(fix.contains("NGC container build"), "{fix}");
        assert!(fix.contains("built on CUDA 11.0 or older"), "{fix}");
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
