//! Number formats: how many bytes a value takes, and which GPUs run each format on tensor
//! cores. Pure.
//!
//! Tensor-core support by compute capability, from `reference/compat-cuda.md` §4.2 and
//! `manifests/gpus.toml`: FP16 tensor cores since Volta (cc 7.0: V100 "FP16 125", T4 "FP16
//! mixed 65"); BF16 and TF32 since Ampere (cc 8.0: "V100/T4 have no BF16/TF32", A100 has both);
//! FP8 on Ada, Hopper and Blackwell only (cc 8.9, 9.0, 10.x, 12.x: "dense FP8 = 2× dense FP16
//! (Ada/Hopper/Blackwell only); A100 has no FP8"). Jetson Thor (cc 11.0) is Blackwell, but no
//! source at hand lists its FP8 support, so it stays unknown.

use serde::Serialize;

use crate::version::Version;

/// The number format a model is trained or run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Precision {
    Fp32,
    Bf16,
    Fp16,
    Fp8,
    Int8,
    Int4,
}

impl crate::choice::Choice for Precision {
    const ALL: &'static [Precision] = &[
        Precision::Fp32,
        Precision::Bf16,
        Precision::Fp16,
        Precision::Fp8,
        Precision::Int8,
        Precision::Int4,
    ];
    fn name(self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Fp8 => "fp8",
            Precision::Int8 => "int8",
            Precision::Int4 => "int4",
        }
    }
}

impl Precision {
    /// Bits one weight takes in this format.
    #[must_use]
    pub(crate) fn weight_bits(self) -> u64 {
        match self {
            Precision::Fp32 => 32,
            Precision::Bf16 | Precision::Fp16 => 16,
            Precision::Fp8 | Precision::Int8 => 8,
            Precision::Int4 => 4,
        }
    }

    /// "BF16".
    #[must_use]
    pub(crate) fn label(self) -> &'static str {
        match self {
            Precision::Fp32 => "FP32",
            Precision::Bf16 => "BF16",
            Precision::Fp16 => "FP16",
            Precision::Fp8 => "FP8",
            Precision::Int8 => "INT8",
            Precision::Int4 => "INT4",
        }
    }

    /// Whether this is a weight-only quantised format (GPTQ, AWQ, bitsandbytes): the weights are
    /// stored small, but the matmuls and the KV cache run in 16-bit.
    #[must_use]
    pub(crate) fn weight_only(self) -> bool {
        matches!(self, Precision::Int8 | Precision::Int4)
    }
}

/// Whether a GPU runs a format on its tensor cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Support {
    Yes,
    No,
    /// The sources at hand do not say (a compute capability newer than the table, Jetson Thor).
    Unknown,
}

impl Support {
    /// "yes" / "no" / "unknown".
    #[must_use]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Support::Yes => "yes",
            Support::No => "no",
            Support::Unknown => "unknown",
        }
    }
}

/// Whether a GPU of compute capability `cc` runs `precision` on tensor cores. FP32 means its
/// tensor-core form, TF32. INT8 and INT4 mean weight-only quantisation, whose matmuls run in
/// FP16/BF16, so they follow FP16.
#[must_use]
pub(crate) fn tensor_cores(cc: &Version, precision: Precision) -> Support {
    let (major, minor) = (cc.major(), cc.minor());
    let from = |since: u64| {
        if major >= since {
            Support::Yes
        } else {
            Support::No
        }
    };
    match precision {
        Precision::Fp16 | Precision::Int8 | Precision::Int4 => from(7),
        Precision::Bf16 | Precision::Fp32 => from(8),
        Precision::Fp8 => match major {
            8 if minor == 9 => Support::Yes,
            9 | 10 | 12 => Support::Yes,
            11 | 13.. => Support::Unknown,
            _ => Support::No,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cc(text: &str) -> Version {
        Version::parse(text).unwrap()
    }

    #[test]
    fn tensor_core_formats_follow_the_architecture() {
        use Precision::*;
        use Support::*;
        // (cc, FP16, BF16, TF32 (fp32), FP8): P100, V100, T4, A100, RTX 3090, Orin, RTX 4090,
        // H100, B200, B300, Thor, RTX 5090.
        let table = [
            ("6.0", No, No, No, No),
            ("7.0", Yes, No, No, No),
            ("7.5", Yes, No, No, No),
            ("8.0", Yes, Yes, Yes, No),
            ("8.6", Yes, Yes, Yes, No),
            ("8.7", Yes, Yes, Yes, No),
            ("8.9", Yes, Yes, Yes, Yes),
            ("9.0", Yes, Yes, Yes, Yes),
            ("10.0", Yes, Yes, Yes, Yes),
            ("10.3", Yes, Yes, Yes, Yes),
            ("11.0", Yes, Yes, Yes, Unknown),
            ("12.0", Yes, Yes, Yes, Yes),
        ];
        for (text, fp16, bf16, tf32, fp8) in table {
            let v = cc(text);
            assert_eq!(tensor_cores(&v, Fp16), fp16, "{text} fp16");
            assert_eq!(tensor_cores(&v, Bf16), bf16, "{text} bf16");
            assert_eq!(tensor_cores(&v, Fp32), tf32, "{text} tf32");
            assert_eq!(tensor_cores(&v, Fp8), fp8, "{text} fp8");
            assert_eq!(
                tensor_cores(&v, Int4),
                fp16,
                "{text} int4 runs on the 16-bit path"
            );
        }
    }

    #[test]
    fn weights_take_their_format_size() {
        let bits: Vec<u64> = [
            Precision::Fp32,
            Precision::Bf16,
            Precision::Fp16,
            Precision::Fp8,
            Precision::Int8,
            Precision::Int4,
        ]
        .iter()
        .map(|p| p.weight_bits())
        .collect();
        assert_eq!(bits, [32, 16, 16, 8, 8, 4]);
    }
}
