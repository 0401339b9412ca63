//! The CUDA, cuDNN and ROCm a framework build names in its version's local tag or its package
//! name: jaxlib's `+cuda112` / `+cuda11.cudnn805` / `+cuda12.cudnn89`, torch's `+cu121` /
//! `+rocm6.2` / `+cpu`, the plugin era's `jax-cuda12-plugin` / `jax-cuda13-pjrt` /
//! `jax_plugins/xla_cuda13`, and CuPy's `cupy-cuda12x` / `cupy-cuda102` / `cupy-rocm-5-0`.
//!
//! One parser for all of them, because the packing differs and a misread costs a false error:
//! jaxlib's `cuda112` is CUDA 11.2 (not "112"), `cudnn805` is cuDNN 8.0.5 (not 8.05), while
//! `cuda11` is only a major. TensorFlow writes its build facts out in full (`build_info.py`).
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )
)]

/// What a build tag says; every field is absent when the tag does not say it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BuildTag {
    /// "11.2" from `cuda112`, "12" from `cuda12` (a major alone when that is all it says).
    pub cuda: Option<String>,
    /// "8.0.5" from `cudnn805`, "8.6" from `cudnn86`.
    pub cudnn: Option<String>,
    /// "6.2" from `rocm6.2`, "5.0" from `cupy-rocm-5-0`.
    pub rocm: Option<String>,
    /// A `+cpu` build.
    pub cpu: bool,
}

/// A version's local tag: what follows `+` (`0.1.65+cuda112` → `cuda112`).
#[must_use]
pub fn local_tag(version: &str) -> Option<&str> {
    version
        .split_once('+')
        .map(|(_, l)| l)
        .filter(|l| !l.is_empty())
}

/// A local version tag, jaxlib's or torch's: its dot-separated parts (`cuda11.cudnn82`,
/// `cu121`, `rocm6.2`, `cpu`, `cpu.cxx11.abi`).
#[must_use]
pub fn parse_local(tag: &str) -> BuildTag {
    let mut out = BuildTag::default();
    let parts: Vec<&str> = tag.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        if let Some(digits) = part.strip_prefix("cudnn") {
            out.cudnn = out.cudnn.take().or_else(|| cudnn_digits(digits));
        } else if let Some(digits) = part
            .strip_prefix("cuda")
            .or_else(|| part.strip_prefix("cu"))
        {
            out.cuda = out.cuda.take().or_else(|| cuda_digits(digits));
        } else if let Some(rest) = part.strip_prefix("rocm") {
            // `rocm6.2` is split by the dots; its minor is the next part.
            let minor = parts.get(i + 1).filter(|m| all_digits(m));
            out.rocm = all_digits(rest).then(|| match minor {
                Some(m) => format!("{rest}.{m}"),
                None => rest.to_string(),
            });
        } else if *part == "cpu" {
            out.cpu = true;
        }
    }
    out
}

/// The CUDA of a JAX plugin package or folder: `jax-cuda12-plugin`, `jax-cuda13-pjrt`,
/// `jax_cuda12_plugin`, `xla_cuda13` → the major ("12"). `None` for anything else.
#[must_use]
pub fn jax_plugin_cuda(name: &str) -> Option<String> {
    let normal = name.replace('_', "-");
    let rest = normal
        .strip_prefix("jax-cuda")
        .or_else(|| normal.strip_prefix("xla-cuda"))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let tail = rest.get(digits.len()..)?;
    let known_tail = ["", "-plugin", "-pjrt"].contains(&tail);
    (known_tail && !digits.is_empty()).then_some(digits)
}

/// Whether a distribution is a JAX GPU plugin (`jax-cuda12-plugin`, `jax-cuda13-pjrt`,
/// `jax-rocm60-plugin`), whose version must equal jaxlib's.
#[must_use]
pub fn is_jax_plugin(name: &str) -> bool {
    let normal = name.replace('_', "-");
    (normal.starts_with("jax-cuda") || normal.starts_with("jax-rocm"))
        && (normal.ends_with("-plugin") || normal.ends_with("-pjrt"))
}

/// CuPy's wheel name: `cupy-cuda13x` (any 13.x) → "13", `cupy-cuda102` → "10.2",
/// `cupy-cuda80` → "8.0", `cupy-rocm-5-0` → ROCm "5.0". Plain `cupy` (built from source) says
/// nothing.
#[must_use]
pub fn cupy_name(name: &str) -> BuildTag {
    let mut out = BuildTag::default();
    if let Some(tag) = name.strip_prefix("cupy-cuda") {
        out.cuda = match tag.strip_suffix('x') {
            Some(major) if all_digits(major) => Some(major.to_string()),
            Some(_) => None,
            None => cuda_digits(tag),
        };
    } else if let Some(rocm) = name.strip_prefix("cupy-rocm-") {
        let parts: Vec<&str> = rocm.split('-').collect();
        if !parts.is_empty() && parts.iter().all(|p| all_digits(p)) {
            out.rocm = Some(parts.join("."));
        }
    }
    out
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.len() <= 6 && s.chars().all(|c| c.is_ascii_digit())
}

/// CUDA digits as the wheels pack them. Two digits from 10 to 19 are a major alone
/// (`cuda11`, `cuda12`); other two-digit tags are major and minor (`cu92` = 9.2, `cuda80` =
/// 8.0); three digits are a two-digit major and a minor (`cuda112` = 11.2, `cu121` = 12.1,
/// `cu130` = 13.0). Anything else is not a CUDA tag.
fn cuda_digits(digits: &str) -> Option<String> {
    if !all_digits(digits) {
        return None;
    }
    let (major, minor) = match digits.len() {
        1 => return Some(digits.to_string()),
        2 if digits.starts_with('1') => return Some(digits.to_string()),
        2 => digits.split_at(1),
        3 => digits.split_at(2),
        _ => return None,
    };
    Some(format!("{major}.{minor}"))
}

/// cuDNN digits: the first is the major (cuDNN has had no two-digit major), the second the
/// minor, the rest the patch: `cudnn805` = 8.0.5, `cudnn82` = 8.2, `cudnn91` = 9.1, `cudnn8` = 8.
fn cudnn_digits(digits: &str) -> Option<String> {
    if !all_digits(digits) || digits.len() > 4 {
        return None;
    }
    let (major, rest) = digits.split_at(1);
    Some(match rest.len() {
        0 => major.to_string(),
        1 => format!("{major}.{rest}"),
        _ => {
            let (minor, patch) = rest.split_at(1);
            format!("{major}.{minor}.{patch}")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{garbage, huge};

    fn cuda(tag: &str) -> Option<String> {
        parse_local(tag).cuda
    }

    fn cudnn(tag: &str) -> Option<String> {
        parse_local(tag).cudnn
    }

    /// Every jaxlib local tag form the JAX release index has used.
    #[test]
    fn jaxlib_tags() {
        // 0.1.x: major and minor packed (`jaxlib==0.1.52+cuda110`, jax-ml/jax#4065).
        for (tag, want) in [
            ("cuda100", "10.0"),
            ("cuda101", "10.1"),
            ("cuda102", "10.2"),
            ("cuda110", "11.0"),
            ("cuda111", "11.1"),
            ("cuda112", "11.2"),
            ("cuda92", "9.2"),
        ] {
            assert_eq!(cuda(tag).as_deref(), Some(want), "{tag}");
            assert_eq!(cudnn(tag), None, "{tag}");
        }
        // 0.1.7x to 0.4.x: CUDA major and cuDNN (jax-ml/jax#22522, #16625, #16038).
        for (tag, c, d) in [
            ("cuda11.cudnn805", "11", "8.0.5"),
            ("cuda11.cudnn82", "11", "8.2"),
            ("cuda11.cudnn86", "11", "8.6"),
            ("cuda12.cudnn88", "12", "8.8"),
            ("cuda12.cudnn89", "12", "8.9"),
            ("cuda12.cudnn91", "12", "9.1"),
        ] {
            let t = parse_local(tag);
            assert_eq!(t.cuda.as_deref(), Some(c), "{tag}");
            assert_eq!(t.cudnn.as_deref(), Some(d), "{tag}");
        }
        assert_eq!(
            local_tag("0.4.11.dev20230517+cuda11.cudnn86"),
            Some("cuda11.cudnn86")
        );
        assert_eq!(local_tag("0.4.30"), None);
        assert_eq!(local_tag("0.4.30+"), None);
    }

    #[test]
    fn torch_tags() {
        assert_eq!(cuda("cu121").as_deref(), Some("12.1"));
        assert_eq!(cuda("cu130").as_deref(), Some("13.0"));
        assert_eq!(cuda("cu92").as_deref(), Some("9.2"));
        assert_eq!(cuda("cu80").as_deref(), Some("8.0"));
        assert_eq!(cuda("cu102").as_deref(), Some("10.2"));
        let rocm = parse_local("rocm6.2");
        assert_eq!((rocm.cuda, rocm.rocm.as_deref()), (None, Some("6.2")));
        assert_eq!(parse_local("rocm5.7").rocm.as_deref(), Some("5.7"));
        assert!(parse_local("cpu").cpu);
        assert!(parse_local("cpu.cxx11.abi").cpu);
        assert_eq!(parse_local("cpu.cxx11.abi").cuda, None);
    }

    #[test]
    fn jax_plugin_names() {
        for (name, want) in [
            ("jax-cuda12-plugin", Some("12")),
            ("jax-cuda13-plugin", Some("13")),
            ("jax-cuda12-pjrt", Some("12")),
            ("jax_cuda13_pjrt", Some("13")),
            ("xla_cuda13", Some("13")),
            ("jax-cuda12-plugin-extra", None),
            ("jax-rocm60-plugin", None),
            ("jaxlib", None),
        ] {
            assert_eq!(jax_plugin_cuda(name).as_deref(), want, "{name}");
        }
        assert!(is_jax_plugin("jax-cuda12-pjrt"));
        assert!(is_jax_plugin("jax-rocm60-plugin"));
        assert!(!is_jax_plugin("jaxlib"));
        assert!(!is_jax_plugin("jax"));
    }

    #[test]
    fn cupy_names() {
        assert_eq!(cupy_name("cupy-cuda13x").cuda.as_deref(), Some("13"));
        assert_eq!(cupy_name("cupy-cuda11x").cuda.as_deref(), Some("11"));
        assert_eq!(cupy_name("cupy-cuda102").cuda.as_deref(), Some("10.2"));
        assert_eq!(cupy_name("cupy-cuda117").cuda.as_deref(), Some("11.7"));
        assert_eq!(cupy_name("cupy-cuda90").cuda.as_deref(), Some("9.0"));
        assert_eq!(cupy_name("cupy-rocm-5-0").rocm.as_deref(), Some("5.0"));
        assert_eq!(cupy_name("cupy"), BuildTag::default());
        assert_eq!(cupy_name("cupy-cudaxx"), BuildTag::default());
    }

    #[test]
    fn garbage_truncated_and_huge() {
        for bad in [
            "",
            "cuda",
            "cudnn",
            "cu",
            "cuda1234567",
            "cudnn12345",
            "rocm",
            "+",
        ] {
            let t = parse_local(bad);
            assert_eq!((t.cuda, t.cudnn, t.rocm), (None, None, None), "{bad:?}");
        }
        assert_eq!(parse_local(&garbage()).cuda, None);
        assert_eq!(parse_local(&huge("cuda.")).cuda, None);
        assert_eq!(jax_plugin_cuda(&garbage()), None);
        assert_eq!(cupy_name(&huge("cupy-cuda")).cuda, None);
    }
}
