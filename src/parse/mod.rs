//! Pure text parsers for what GPU machines print and store. No I/O here: callers pass text in.

pub mod cuda_files;
pub mod elf;
pub mod kernel;
pub mod ld_cache;
pub mod libfamily;
pub mod libname;
pub mod nvcc;
pub mod nvidia_smi;
pub mod os_release;
pub mod proc_nvidia;
mod pyliteral;
pub mod python_pkg;
mod text;
