//! A bf16 GEMM through cuBLASLt, loaded at run time, to compare the card's matrix throughput
//! with what it should reach. cuBLASLt picks the kernel (its heuristic, with a workspace), the
//! way PyTorch does, so the figure is the card's, not our kernel's.

// FFI: cuBLASLt through dlopen: foreign calls, each with its SAFETY note.
#![allow(unsafe_code)]

use std::ffi::c_void;

use libloading::Library;

use super::driver::{Context, CuDevicePtr};

type Handle = *mut c_void;
type Status = i32;

/// cuBLAS/cuBLASLt enum values (cublasLt.h, library_types.h).
const CUDA_R_32F: i32 = 0;
const CUDA_R_16BF: i32 = 14;
const CUBLAS_COMPUTE_32F: i32 = 68;
const CUBLASLT_MATMUL_DESC_TRANSA: i32 = 3;
const CUBLASLT_MATMUL_DESC_TRANSB: i32 = 4;
const CUBLAS_OP_N: i32 = 0;
const CUBLAS_OP_T: i32 = 1;
const CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES: i32 = 1;

/// `cublasLtMatmulHeuristicResult_t`: the opaque 64-byte algorithm, workspace size, status,
/// waves count and four reserved ints (96 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
struct Heuristic {
    algo: [u64; 8],
    workspace_size: usize,
    state: Status,
    waves_count: f32,
    reserved: [i32; 4],
}

/// Workspace given to the heuristic: 32 MiB, what PyTorch uses on Hopper.
const WORKSPACE: usize = 32 * 1024 * 1024;

/// The measured GEMM.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct GemmResult {
    pub library: String,
    pub version: Option<u64>,
    pub size: usize,
    pub median_ms: f64,
    pub tflops: f64,
}

macro_rules! sym {
    ($lib:expr, $name:literal, $ty:ty) => {{
        let s: libloading::Symbol<'_, $ty> =
            // SAFETY: the symbol is cuBLASLt's, with the C signature spelled in `$ty` (cublasLt.h).
            unsafe { $lib.get(concat!($name, "\0").as_bytes()) }
                .map_err(|e| format!("{} lacks {}: {e}", "libcublasLt", $name))?;
        *s
    }};
}

/// Opens the first cuBLASLt that loads from `candidates` (paths or bare sonames).
///
/// # Errors
/// When none loads; the message lists what was tried.
pub(crate) fn open(candidates: &[String]) -> Result<(Library, String), String> {
    let mut tried = Vec::new();
    for name in candidates {
        // SAFETY: a cuBLASLt library; runs in the smoke child process.
        match unsafe { Library::new(name) } {
            Ok(lib) => return Ok((lib, name.clone())),
            Err(e) => tried.push(format!("{name}: {e}")),
        }
    }
    Err(format!(
        "no cuBLASLt could be loaded (tried {})",
        tried.join("; ")
    ))
}

/// Runs `iterations` bf16 `n`×`n`×`n` GEMMs after warm-up and returns the median.
///
/// # Errors
/// A message naming the cuBLASLt or driver call that failed.
pub(crate) fn bench_bf16(
    ctx: &Context<'_>,
    lib: &Library,
    library: &str,
    n: usize,
    iterations: usize,
) -> Result<GemmResult, String> {
    let create = sym!(
        lib,
        "cublasLtCreate",
        unsafe extern "C" fn(*mut Handle) -> Status
    );
    let destroy = sym!(
        lib,
        "cublasLtDestroy",
        unsafe extern "C" fn(Handle) -> Status
    );
    let desc_create = sym!(
        lib,
        "cublasLtMatmulDescCreate",
        unsafe extern "C" fn(*mut Handle, i32, i32) -> Status
    );
    let desc_set = sym!(
        lib,
        "cublasLtMatmulDescSetAttribute",
        unsafe extern "C" fn(Handle, i32, *const c_void, usize) -> Status
    );
    let desc_destroy = sym!(
        lib,
        "cublasLtMatmulDescDestroy",
        unsafe extern "C" fn(Handle) -> Status
    );
    let layout_create = sym!(
        lib,
        "cublasLtMatrixLayoutCreate",
        unsafe extern "C" fn(*mut Handle, i32, u64, u64, i64) -> Status
    );
    let layout_destroy = sym!(
        lib,
        "cublasLtMatrixLayoutDestroy",
        unsafe extern "C" fn(Handle) -> Status
    );
    let pref_create = sym!(
        lib,
        "cublasLtMatmulPreferenceCreate",
        unsafe extern "C" fn(*mut Handle) -> Status
    );
    let pref_set = sym!(
        lib,
        "cublasLtMatmulPreferenceSetAttribute",
        unsafe extern "C" fn(Handle, i32, *const c_void, usize) -> Status
    );
    let pref_destroy = sym!(
        lib,
        "cublasLtMatmulPreferenceDestroy",
        unsafe extern "C" fn(Handle) -> Status
    );
    let heuristic = sym!(
        lib,
        "cublasLtMatmulAlgoGetHeuristic",
        unsafe extern "C" fn(
            Handle,
            Handle,
            Handle,
            Handle,
            Handle,
            Handle,
            Handle,
            i32,
            *mut Heuristic,
            *mut i32,
        ) -> Status
    );
    let matmul = sym!(
        lib,
        "cublasLtMatmul",
        unsafe extern "C" fn(
            Handle,
            Handle,
            *const c_void,
            CuDevicePtr,
            Handle,
            CuDevicePtr,
            Handle,
            *const c_void,
            CuDevicePtr,
            Handle,
            CuDevicePtr,
            Handle,
            *const Heuristic,
            CuDevicePtr,
            usize,
            Handle,
        ) -> Status
    );
    // SAFETY: `cublasLtGetVersion` takes nothing and returns size_t.
    let version: Option<u64> =
        unsafe { lib.get::<unsafe extern "C" fn() -> usize>(b"cublasLtGetVersion\0") }
            .ok()
            // SAFETY: as above.
            .map(|f| unsafe { f() } as u64);

    let ok = |what: &str, status: Status| {
        if status == 0 {
            Ok(())
        } else {
            Err(format!("{what} returned cuBLAS status {status}"))
        }
    };
    let bytes = n * n * 2;
    let a = ctx.alloc(bytes).map_err(|e| e.to_string())?;
    let b = ctx.alloc(bytes).map_err(|e| e.to_string())?;
    let c = ctx.alloc(bytes).map_err(|e| e.to_string())?;
    let workspace = ctx.alloc(WORKSPACE).map_err(|e| e.to_string())?;
    let host = super::matmul::random_bf16(n * n, 7);
    ctx.upload(&a, &host).map_err(|e| e.to_string())?;
    ctx.upload(&b, &host).map_err(|e| e.to_string())?;
    let dim = n as u64;
    let ld = i64::try_from(n).map_err(|_| "matrix too large".to_string())?;

    let mut handle: Handle = std::ptr::null_mut();
    let mut desc: Handle = std::ptr::null_mut();
    let mut la: Handle = std::ptr::null_mut();
    let mut lb: Handle = std::ptr::null_mut();
    let mut lc: Handle = std::ptr::null_mut();
    let mut pref: Handle = std::ptr::null_mut();
    // SAFETY: every out-pointer is valid; attribute values point to correctly sized locals.
    let result = unsafe {
        (|| -> Result<GemmResult, String> {
            ok("cublasLtCreate", create(&raw mut handle))?;
            ok(
                "cublasLtMatmulDescCreate",
                desc_create(&raw mut desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
            )?;
            // "TN": A is stored k×m and used transposed, the layout cuBLASLt's kernels favour.
            let (ta, tb) = (CUBLAS_OP_T, CUBLAS_OP_N);
            ok(
                "set TRANSA",
                desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSA, (&raw const ta).cast(), 4),
            )?;
            ok(
                "set TRANSB",
                desc_set(desc, CUBLASLT_MATMUL_DESC_TRANSB, (&raw const tb).cast(), 4),
            )?;
            ok(
                "layout A",
                layout_create(&raw mut la, CUDA_R_16BF, dim, dim, ld),
            )?;
            ok(
                "layout B",
                layout_create(&raw mut lb, CUDA_R_16BF, dim, dim, ld),
            )?;
            ok(
                "layout C",
                layout_create(&raw mut lc, CUDA_R_16BF, dim, dim, ld),
            )?;
            ok("cublasLtMatmulPreferenceCreate", pref_create(&raw mut pref))?;
            let ws = WORKSPACE as u64;
            ok(
                "set workspace",
                pref_set(
                    pref,
                    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    (&raw const ws).cast(),
                    8,
                ),
            )?;
            let mut found = [Heuristic {
                algo: [0; 8],
                workspace_size: 0,
                state: 0,
                waves_count: 0.0,
                reserved: [0; 4],
            }; 1];
            let mut count = 0i32;
            ok(
                "cublasLtMatmulAlgoGetHeuristic",
                heuristic(
                    handle,
                    desc,
                    la,
                    lb,
                    lc,
                    lc,
                    pref,
                    1,
                    found.as_mut_ptr(),
                    &raw mut count,
                ),
            )?;
            if count < 1 {
                return Err("cuBLASLt found no algorithm for a bf16 GEMM on this GPU".to_string());
            }
            let algo = found[0];
            let (alpha, beta) = (1.0f32, 0.0f32);
            let run = || {
                ok(
                    "cublasLtMatmul",
                    matmul(
                        handle,
                        desc,
                        (&raw const alpha).cast(),
                        a.ptr,
                        la,
                        b.ptr,
                        lb,
                        (&raw const beta).cast(),
                        c.ptr,
                        lc,
                        c.ptr,
                        lc,
                        &raw const algo,
                        workspace.ptr,
                        algo.workspace_size.min(WORKSPACE),
                        std::ptr::null_mut(),
                    ),
                )
            };
            for _ in 0..3 {
                run()?;
            }
            ctx.synchronize().map_err(|e| e.to_string())?;
            let mut times = Vec::with_capacity(iterations);
            for _ in 0..iterations {
                let (start, end) = (
                    ctx.event().map_err(|e| e.to_string())?,
                    ctx.event().map_err(|e| e.to_string())?,
                );
                start.record().map_err(|e| e.to_string())?;
                run()?;
                end.record().map_err(|e| e.to_string())?;
                times.push(f64::from(
                    start.elapsed_ms(&end).map_err(|e| e.to_string())?,
                ));
            }
            let median_ms = super::median(&mut times);
            let flops = 2.0 * (n as f64).powi(3);
            Ok(GemmResult {
                library: library.to_string(),
                version,
                size: n,
                median_ms,
                tflops: flops / (median_ms * 1e-3) / 1e12,
            })
        })()
    };
    // SAFETY: destroying what was created above; null handles are skipped.
    unsafe {
        if !pref.is_null() {
            pref_destroy(pref);
        }
        for l in [la, lb, lc] {
            if !l.is_null() {
                layout_destroy(l);
            }
        }
        if !desc.is_null() {
            desc_destroy(desc);
        }
        if !handle.is_null() {
            destroy(handle);
        }
    }
    result
}
