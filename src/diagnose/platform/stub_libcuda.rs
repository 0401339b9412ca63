//! `stub-libcuda-on-path`: the toolkit's link-time stub `libcuda.so` ahead of the driver's.

// The parent's imports and shared helpers: one family of platform findings.
use super::*;

// ---------------------------------------------------------------------------------------------
// stub-libcuda-on-path

/// The CUDA toolkit's `stubs/libcuda.so` lets programs link against the driver API on a machine
/// without a driver; it has no driver in it, and a program that loads it at run time fails with
/// CUDA error 34 "CUDA driver is a stub library". A stubs folder belongs on `LIBRARY_PATH` (the
/// linker's), never on the run-time loader path.
///
/// An error when the stub ranks first and is named `libcuda.so.1`, the name every CUDA program
/// opens (the CUDA runtime, hence PyTorch, TensorFlow and JAX): all of them load it. A warning
/// when the first one is only `libcuda.so` (programs that open the unversioned name, such as
/// Numba, get the stub; those asking for `libcuda.so.1` skip that folder) or when the stub sits
/// behind a real driver copy (nothing loads it today; it is a trap for the next path change).
pub(super) fn stub_libcuda(report: &Report) -> Option<Finding> {
    let libcuda = libs(report, "libcuda");
    let stubs: Vec<&DriverLibrary> = libcuda
        .iter()
        .copied()
        .filter(|l| l.kind == DriverLibraryKind::Stub)
        .collect();
    let first = libcuda.first()?;
    if stubs.is_empty() {
        return None;
    }
    let stub_first = first.kind == DriverLibraryKind::Stub;
    let soname_stub = stub_first && first.path.ends_with("libcuda.so.1");
    let severity = if soname_stub {
        Severity::Error
    } else {
        Severity::Warning
    };
    let title = if soname_stub {
        "The loader finds the toolkit's stub libcuda.so.1 before the real driver"
    } else if stub_first {
        "The toolkit's stub libcuda.so comes before the real driver on the loader path"
    } else {
        "The toolkit's stub libcuda is on the run-time loader path"
    };
    let detail = if soname_stub {
        "A folder of link-time stubs is on the run-time loader path, and it holds a libcuda.so.1, \
         so every CUDA program (PyTorch, TensorFlow, JAX) loads the stub instead of the driver \
         and fails with CUDA error 34 \"CUDA driver is a stub library\" (some versions say \"CUDA \
         driver version is insufficient for CUDA runtime version\"). Stubs are for linking on machines without a driver."
    } else if stub_first {
        "A folder of link-time stubs comes first on the run-time loader path. Programs that open \
         `libcuda.so` (Numba, some build and JIT tools) load the stub and fail with CUDA error 34 \
         \"CUDA driver is a stub library\"; the CUDA runtime asks for libcuda.so.1 and still \
         finds the driver. Stubs are for linking on machines without a driver."
    } else {
        "A folder of link-time stubs is on the run-time loader path, behind the real driver, so \
         nothing loads the stub today. If the order changes (a new LD_LIBRARY_PATH, a \
         container without the driver mounted) programs load it and fail with CUDA error 34."
    };
    let mut f = FindingBuilder::new(&ids::STUB_LIBCUDA_ON_PATH, severity, title).detail(detail);
    for lib in &libcuda {
        f = f.evidence(lib_line(lib));
    }
    for lib in libs(report, "libnvidia-ml")
        .iter()
        .filter(|l| l.kind == DriverLibraryKind::Stub)
    {
        f = f.evidence(lib_line(lib));
    }
    if let Some(v) = env(report, "LD_LIBRARY_PATH") {
        f = f.evidence(format!("LD_LIBRARY_PATH={v}"));
    }
    let mut fix = Vec::new();
    if let Some(cmd) = ld_library_path_fix(report, &stubs) {
        fix.push(format!(
            "Take the stubs folder off the run-time path: `{cmd}` (and remove it where it is \
             set: shell profile, job script, Dockerfile `ENV`)."
        ));
    }
    if stubs.iter().any(|l| l.origin == "ld.so.conf") {
        fix.push(
            "Remove the stubs folder from /etc/ld.so.conf.d/*.conf, then run `sudo ldconfig`."
                .to_string(),
        );
    }
    if stubs.iter().any(|l| l.path.ends_with("libcuda.so.1")) {
        let links: Vec<&str> = stubs
            .iter()
            .filter(|l| l.path.ends_with("libcuda.so.1"))
            .map(|l| l.path.as_str())
            .collect();
        fix.push(format!(
            "Delete the libcuda.so.1 link made in the stubs folder (`sudo rm {}`): the toolkit \
             ships only libcuda.so there.",
            links.join(" ")
        ));
    }
    fix.push(
        "To build against the stub, give it to the linker only: \
         `LIBRARY_PATH=/usr/local/cuda/lib64/stubs` or `-L/usr/local/cuda/lib64/stubs`."
            .to_string(),
    );
    for lib in &stubs {
        f = f.subject(Subject::Library(lib.path.clone()));
    }
    Some(f.fix(fix.join(" ")).build())
}
