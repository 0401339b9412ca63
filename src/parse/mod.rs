//! Pure text parsers for what GPU machines print and store. No I/O here: callers pass text in.
// The crate denies unwrap, expect and panic outside tests (Cargo.toml `[lints]`); parsers read
// whatever a broken machine holds, so here indexing that could panic is denied too.
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]

pub mod accounts;
pub mod cuda_files;
pub mod dynsym;
pub mod elf;
pub mod fatbin;
pub mod gpu_switch;
pub mod host_compiler;
pub mod kernel;
pub mod kfd;
pub mod ld_cache;
pub mod libfamily;
pub mod libname;
pub mod modinfo;
pub mod modinfo_scan;
pub mod mounts;
pub mod nccl_log;
pub mod nvcc;
pub mod nvidia_require;
pub mod nvidia_smi;
pub mod offload_bundle;
pub mod os_release;
pub mod proc_nvidia;
#[cfg(test)]
mod props;
mod pyliteral;
pub mod python_pkg;
pub mod rocm_files;
mod text;
pub mod visible_devices;
