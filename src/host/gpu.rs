//! Placeholder: NVML and libcuda, queried in a child process.
