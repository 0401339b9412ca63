//! onnxruntime-gpu's rows of `frameworks.toml`: what its CUDA execution provider needs per
//! release range, and the newest release for a CUDA and cuDNN major.

use serde::{Deserialize, Serialize};

use super::FrameworkTable;
use crate::manifest::matching::within;

/// What the CUDA execution provider of a range of onnxruntime-gpu releases on PyPI
/// (`onnxruntime/capi/libonnxruntime_providers_cuda.so`) needs from the machine.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OnnxruntimeCuda {
    pub first: String,
    pub last: String,
    /// The CUDA major of the libraries it links (`libcudart.so.12`: "12").
    pub cuda_major: String,
    /// The cuDNN major it links (`libcudnn.so.9`: "9"); absent when it links none (1.28 on).
    #[serde(default)]
    pub cudnn_major: Option<String>,
    /// The CUDA sonames the provider needs (`DT_NEEDED`).
    pub needed: Vec<String>,
    /// The provider's RUNPATH entries (the build's own folders, or none): the nvidia-* wheels'
    /// folders are never among them.
    pub runpath: Vec<String>,
    /// Whether `onnxruntime.preload_dlls()` exists (it loads the wheels' copies by path).
    pub preload_dlls: bool,
    /// The pip extras that install the CUDA and cuDNN wheels ("cuda", "cudnn"); empty when none.
    #[serde(default)]
    pub extras: Vec<String>,
    /// Sonames loaded by soname outside `DT_NEEDED`: up to 1.15 `onnxruntime/capi/_ld_preload.py`'s
    /// list at `import onnxruntime` (one missing makes the CUDA provider unavailable); from 1.28
    /// the provider's cuDNN loader (`libcudnn.so.9` on first use).
    #[serde(default)]
    pub dlopen: Vec<String>,
    /// Whether the provider runs without cuDNN (1.28 on: it loads, and only the kernels that
    /// need cuDNN fail, "cuDNN is not available").
    #[serde(default)]
    pub cudnn_optional: bool,
    pub source: String,
    pub checked: String,
}

/// What the TensorRT execution provider of a range of onnxruntime-gpu releases on PyPI
/// (`onnxruntime/capi/libonnxruntime_providers_tensorrt.so`) links.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OnnxruntimeTensorrt {
    pub first: String,
    pub last: String,
    /// The TensorRT major (`libnvinfer.so.10`: "10").
    pub tensorrt_major: String,
    /// The CUDA major of the runtime it links (`libcudart.so.12`: "12").
    pub cuda_major: String,
    /// The TensorRT and CUDA sonames it needs.
    pub needed: Vec<String>,
    pub source: String,
    pub checked: String,
}

impl FrameworkTable {
    /// What the CUDA provider of an onnxruntime-gpu release needs, where the table has it.
    #[must_use]
    pub fn onnxruntime_cuda(&self, version: &str) -> Option<&OnnxruntimeCuda> {
        self.onnxruntime_cuda
            .iter()
            .find(|row| within(Some(&row.first), &row.last, version))
    }

    /// What the TensorRT provider of an onnxruntime-gpu release links, where the table has it.
    #[must_use]
    pub fn onnxruntime_tensorrt(&self, version: &str) -> Option<&OnnxruntimeTensorrt> {
        self.onnxruntime_tensorrt
            .iter()
            .find(|row| within(Some(&row.first), &row.last, version))
    }

    /// The newest onnxruntime-gpu release range on PyPI whose TensorRT provider links this
    /// TensorRT major.
    #[must_use]
    pub fn onnxruntime_for_tensorrt(&self, tensorrt_major: &str) -> Option<&OnnxruntimeTensorrt> {
        self.onnxruntime_tensorrt
            .iter()
            .rev()
            .find(|row| row.tensorrt_major == tensorrt_major)
    }

    /// The newest onnxruntime-gpu release range on PyPI whose CUDA provider links this CUDA
    /// major and cuDNN major.
    #[must_use]
    pub fn onnxruntime_for(&self, cuda_major: &str, cudnn_major: &str) -> Option<&OnnxruntimeCuda> {
        self.onnxruntime_cuda.iter().rev().find(|row| {
            row.cuda_major == cuda_major && row.cudnn_major.as_deref() == Some(cudnn_major)
        })
    }
}
