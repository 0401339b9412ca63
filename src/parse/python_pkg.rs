//! What Python packages leave on disk that tells their version and CUDA build without importing
//! them: `torch/version.py`, TensorFlow's `build_info.py`, `*.dist-info` / `*.egg-info` folder
//! names and `METADATA`, `pyvenv.cfg`, conda's `environments.txt`, JAX's `version.py`.
//!
//! Importing torch takes seconds and can crash on a broken CUDA setup; reading these files
//! cannot.
//!
//! Each kind of file has its own module under `python_pkg/`; this module gathers their items.

mod build_tag;
mod dist_info;
mod env_files;
mod tf_build_info;
mod version_py;

pub use build_tag::{BuildTag, cupy_name, is_jax_plugin, jax_plugin_cuda, local_tag, parse_local};
pub use dist_info::{PkgMetadata, Requirement, dist_info_name, metadata, normalize_name};
pub use env_files::{PyvenvCfg, conda_environments_txt, pyvenv_cfg};
pub use tf_build_info::{TfBuildInfo, tf_build_info};
pub use version_py::{TorchVersionPy, jax_plugin_version_py, torch_version_py};
