//! TensorFlow's `tensorflow/python/platform/build_info.py`: the CUDA and cuDNN versions and
//! GPU architectures a TensorFlow wheel was built for.

use crate::parse::pyliteral::{Literal, Tok, Tokens};

/// TensorFlow's `tensorflow/python/platform/build_info.py`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TfBuildInfo {
    /// e.g. `12.3`.
    pub cuda_version: Option<String>,
    /// e.g. `8` (TensorFlow records only the major version).
    pub cudnn_version: Option<String>,
    pub is_cuda_build: Option<bool>,
    pub is_rocm_build: Option<bool>,
    /// e.g. `["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"]`.
    pub cuda_compute_capabilities: Vec<String>,
}

/// Parses `build_info.py` in the forms TensorFlow has used: a dict literal
/// (`build_info = {'cuda_version': '12.3', ...}`), an `OrderedDict([('cuda_version', '11.2'),
/// ...])`, and TF 2.1–2.3's plain assignments (`cuda_version_number = '10.1'`).
pub fn tf_build_info(text: &str) -> TfBuildInfo {
    let mut info = TfBuildInfo::default();
    let mut tokens = Tokens::new(text);
    while let Some(tok) = tokens.next() {
        let key = match &tok {
            Tok::Str(s) => s.as_str(),
            Tok::Name(n) => n,
            _ => continue,
        };
        let Some(field) = TfField::named(key) else {
            continue;
        };
        let mut look = tokens.clone();
        let is_entry = match (&tok, look.next()) {
            // 'key': value  or  ('key', value)
            (Tok::Str(_), Some(Tok::Punct(':' | ','))) => true,
            // build_info['key'] = value
            (Tok::Str(_), Some(Tok::Punct(']'))) => look.next() == Some(Tok::Punct('=')),
            // key = value  (but not key == value)
            (Tok::Name(_), Some(Tok::Punct('='))) => look.clone().next() != Some(Tok::Punct('=')),
            _ => false,
        };
        if !is_entry {
            continue;
        }
        tokens = look;
        let mut value = tokens.clone();
        match (field, value.next()) {
            (TfField::ComputeCapabilities, Some(Tok::Punct('[' | '('))) => {
                info.cuda_compute_capabilities = value.string_list();
                tokens = value;
            }
            (TfField::CudaVersion, _) => info.cuda_version = tokens.literal().and_then(text_of),
            (TfField::CudnnVersion, _) => {
                info.cudnn_version = tokens.literal().and_then(text_of);
            }
            (TfField::IsCuda, _) => info.is_cuda_build = tokens.literal().and_then(bool_of),
            (TfField::IsRocm, _) => info.is_rocm_build = tokens.literal().and_then(bool_of),
            (TfField::ComputeCapabilities, _) => {}
        }
    }
    info
}

#[derive(Debug, Clone, Copy)]
enum TfField {
    CudaVersion,
    CudnnVersion,
    IsCuda,
    IsRocm,
    ComputeCapabilities,
}

impl TfField {
    fn named(key: &str) -> Option<Self> {
        Some(match key {
            "cuda_version" | "cuda_version_number" => Self::CudaVersion,
            "cudnn_version" | "cudnn_version_number" => Self::CudnnVersion,
            "is_cuda_build" => Self::IsCuda,
            "is_rocm_build" => Self::IsRocm,
            "cuda_compute_capabilities" => Self::ComputeCapabilities,
            _ => return None,
        })
    }
}

fn text_of(literal: Literal) -> Option<String> {
    literal.into_string().filter(|s| !s.trim().is_empty())
}

fn bool_of(literal: Literal) -> Option<bool> {
    match literal {
        Literal::Bool(b) => Some(b),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{garbage, huge};

    #[test]
    fn tf_build_info_forms() {
        let one_line = "build_info = {'cpu_compiler': '/usr/lib/llvm-17/bin/clang', \
                        'cuda_compute_capabilities': ['sm_60', 'sm_70', 'sm_80', 'sm_89', 'compute_90'], \
                        'cuda_version': '12.3', 'cudnn_version': '8', 'is_cuda_build': True, \
                        'is_rocm_build': False, 'is_tensorrt_build': True}\n";
        let expected = TfBuildInfo {
            cuda_version: Some("12.3".into()),
            cudnn_version: Some("8".into()),
            is_cuda_build: Some(true),
            is_rocm_build: Some(false),
            cuda_compute_capabilities: ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"]
                .map(String::from)
                .to_vec(),
        };
        assert_eq!(tf_build_info(one_line), expected);

        let multi_line = "# Copyright 2023 The TensorFlow Authors.\n\
                          \"\"\"Auto-generated module providing information about the build.\"\"\"\n\
                          import collections\n\n\
                          build_info = collections.OrderedDict([\n\
                          \x20   ('cpu_compiler', '/usr/lib/llvm-17/bin/clang'),\n\
                          \x20   ('cuda_compute_capabilities', ['sm_60', 'sm_70', 'sm_80', 'sm_89', 'compute_90']),\n\
                          \x20   ('cuda_version', '12.3'),\n\
                          \x20   ('cudnn_version', '8'),\n\
                          \x20   ('is_cuda_build', True),\n\
                          \x20   ('is_rocm_build', False),\n\
                          \x20   ('is_tensorrt_build', True),\n\
                          ])\n";
        assert_eq!(tf_build_info(multi_line), expected);

        let tf23 = "is_rocm_build = False\nis_cuda_build = True\n\
                    cuda_version_number = '10.1'\ncudnn_version_number = '7'\n\
                    msvcp_dll_names = 'msvcp140.dll,msvcp140_1.dll'\n";
        let info = tf_build_info(tf23);
        assert_eq!(info.cuda_version.as_deref(), Some("10.1"));
        assert_eq!(info.cudnn_version.as_deref(), Some("7"));
        assert_eq!(info.is_cuda_build, Some(true));
        assert_eq!(info.is_rocm_build, Some(false));
        assert!(info.cuda_compute_capabilities.is_empty());

        let cpu_only = "build_info = {'cpu_compiler': '/usr/bin/gcc', 'is_cuda_build': False, \
                        'is_rocm_build': False, 'is_tensorrt_build': False}";
        let info = tf_build_info(cpu_only);
        assert_eq!(info.is_cuda_build, Some(false));
        assert_eq!(info.cuda_version, None);
        // A comparison mentioning a key is not an assignment.
        assert_eq!(
            tf_build_info("if is_cuda_build == True: pass").is_cuda_build,
            None
        );
    }

    #[test]
    fn garbage_truncated_and_huge() {
        assert_eq!(tf_build_info(""), TfBuildInfo::default());
        assert_eq!(tf_build_info(&garbage()), TfBuildInfo::default());
        assert_eq!(
            tf_build_info("build_info = {'cuda_compute_capabilities': ['sm_80', 'sm_9"),
            TfBuildInfo {
                cuda_compute_capabilities: vec!["sm_80".into(), "sm_9".into()],
                ..TfBuildInfo::default()
            }
        );
        assert_eq!(tf_build_info("'cuda_version':"), TfBuildInfo::default());

        assert_eq!(tf_build_info(&huge("x = 'y'\n")), TfBuildInfo::default());
        let big_list = format!("'cuda_compute_capabilities': [{}]", huge("'sm_80', "));
        assert!(tf_build_info(&big_list).cuda_compute_capabilities.len() > 200_000);
    }
}
