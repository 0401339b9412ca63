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

type Create = unsafe extern "C" fn(*mut Handle) -> Status;
type Destroy = unsafe extern "C" fn(Handle) -> Status;
type SetAttribute = unsafe extern "C" fn(Handle, i32, *const c_void, usize) -> Status;
type GetHeuristic = unsafe extern "C" fn(
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
) -> Status;
type Matmul = unsafe extern "C" fn(
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
) -> Status;

/// The cuBLASLt entry points the GEMM uses, looked up once.
struct Api {
    create: Create,
    destroy: Destroy,
    desc_create: unsafe extern "C" fn(*mut Handle, i32, i32) -> Status,
    desc_set: SetAttribute,
    desc_destroy: Destroy,
    layout_create: unsafe extern "C" fn(*mut Handle, i32, u64, u64, i64) -> Status,
    layout_destroy: Destroy,
    pref_create: Create,
    pref_set: SetAttribute,
    pref_destroy: Destroy,
    heuristic: GetHeuristic,
    matmul: Matmul,
    version: Option<u64>,
}

impl Api {
    fn load(lib: &Library) -> Result<Api, String> {
        // SAFETY: `cublasLtGetVersion` takes nothing and returns size_t.
        let version =
            unsafe { lib.get::<unsafe extern "C" fn() -> usize>(b"cublasLtGetVersion\0") }
                .ok()
                // SAFETY: as above.
                .map(|f| unsafe { f() } as u64);
        Ok(Api {
            create: sym!(lib, "cublasLtCreate", Create),
            destroy: sym!(lib, "cublasLtDestroy", Destroy),
            desc_create: sym!(
                lib,
                "cublasLtMatmulDescCreate",
                unsafe extern "C" fn(*mut Handle, i32, i32) -> Status
            ),
            desc_set: sym!(lib, "cublasLtMatmulDescSetAttribute", SetAttribute),
            desc_destroy: sym!(lib, "cublasLtMatmulDescDestroy", Destroy),
            layout_create: sym!(
                lib,
                "cublasLtMatrixLayoutCreate",
                unsafe extern "C" fn(*mut Handle, i32, u64, u64, i64) -> Status
            ),
            layout_destroy: sym!(lib, "cublasLtMatrixLayoutDestroy", Destroy),
            pref_create: sym!(lib, "cublasLtMatmulPreferenceCreate", Create),
            pref_set: sym!(lib, "cublasLtMatmulPreferenceSetAttribute", SetAttribute),
            pref_destroy: sym!(lib, "cublasLtMatmulPreferenceDestroy", Destroy),
            heuristic: sym!(lib, "cublasLtMatmulAlgoGetHeuristic", GetHeuristic),
            matmul: sym!(lib, "cublasLtMatmul", Matmul),
            version,
        })
    }
}

/// One cuBLASLt object (the handle, the matmul descriptor, a matrix layout, the preference),
/// destroyed with its own function when dropped: whichever step fails, what was created is
/// freed, in the reverse order of creation (locals drop last-declared first).
struct Owned {
    ptr: Handle,
    destroy: Destroy,
}

impl Owned {
    /// Creates one with `create`, which fills the out-pointer; `what` names it in errors.
    fn new(
        what: &str,
        destroy: Destroy,
        create: impl FnOnce(*mut Handle) -> Status,
    ) -> Result<Owned, String> {
        let mut owned = Owned {
            ptr: std::ptr::null_mut(),
            destroy,
        };
        ok(what, create(&raw mut owned.ptr))?;
        Ok(owned)
    }
}

impl Drop for Owned {
    fn drop(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: `ptr` was created by the matching cuBLASLt create call and is destroyed
            // once, here.
            unsafe { (self.destroy)(self.ptr) };
        }
    }
}

fn ok(what: &str, status: Status) -> Result<(), String> {
    if status == 0 {
        Ok(())
    } else {
        Err(format!("{what} returned cuBLAS status {status}"))
    }
}

/// A bf16 `n`×`n`×`n` GEMM ready to run: the objects cuBLASLt needs and the algorithm its
/// heuristic picked. Field order is drop order: the preference and layouts go before the
/// descriptor, the handle last.
struct Gemm<'a> {
    api: &'a Api,
    algo: Heuristic,
    /// Only the heuristic reads it; kept so that it is freed with the rest.
    _pref: Owned,
    layout_c: Owned,
    layout_b: Owned,
    layout_a: Owned,
    desc: Owned,
    handle: Owned,
}

impl<'a> Gemm<'a> {
    /// The handle, a "TN" descriptor (A stored k×m and used transposed, the layout cuBLASLt's
    /// kernels favour), the three layouts, a [`WORKSPACE`] preference and the heuristic's
    /// first algorithm.
    fn new(api: &'a Api, n: usize) -> Result<Gemm<'a>, String> {
        let dim = n as u64;
        let ld = i64::try_from(n).map_err(|_| "matrix too large".to_string())?;
        // SAFETY (every unsafe block of this function): each out-pointer is the `Owned`'s own
        // field, each attribute value points to a correctly sized local, each handle is live.
        let handle = Owned::new("cublasLtCreate", api.destroy, |p| {
            // SAFETY: as above.
            unsafe { (api.create)(p) }
        })?;
        let desc = Owned::new("cublasLtMatmulDescCreate", api.desc_destroy, |p| {
            // SAFETY: as above.
            unsafe { (api.desc_create)(p, CUBLAS_COMPUTE_32F, CUDA_R_32F) }
        })?;
        let (ta, tb) = (CUBLAS_OP_T, CUBLAS_OP_N);
        // SAFETY: as above.
        ok("set TRANSA", unsafe {
            (api.desc_set)(
                desc.ptr,
                CUBLASLT_MATMUL_DESC_TRANSA,
                (&raw const ta).cast(),
                4,
            )
        })?;
        // SAFETY: as above.
        ok("set TRANSB", unsafe {
            (api.desc_set)(
                desc.ptr,
                CUBLASLT_MATMUL_DESC_TRANSB,
                (&raw const tb).cast(),
                4,
            )
        })?;
        let layout = |what: &str| {
            Owned::new(what, api.layout_destroy, |p| {
                // SAFETY: as above.
                unsafe { (api.layout_create)(p, CUDA_R_16BF, dim, dim, ld) }
            })
        };
        let (layout_a, layout_b, layout_c) = (
            layout("layout A")?,
            layout("layout B")?,
            layout("layout C")?,
        );
        let pref = Owned::new("cublasLtMatmulPreferenceCreate", api.pref_destroy, |p| {
            // SAFETY: as above.
            unsafe { (api.pref_create)(p) }
        })?;
        let ws = WORKSPACE as u64;
        // SAFETY: as above.
        ok("set workspace", unsafe {
            (api.pref_set)(
                pref.ptr,
                CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&raw const ws).cast(),
                8,
            )
        })?;
        let mut found = [Heuristic {
            algo: [0; 8],
            workspace_size: 0,
            state: 0,
            waves_count: 0.0,
            reserved: [0; 4],
        }; 1];
        let mut count = 0i32;
        // SAFETY: every handle is live; `found` holds the one result asked for.
        ok("cublasLtMatmulAlgoGetHeuristic", unsafe {
            (api.heuristic)(
                handle.ptr,
                desc.ptr,
                layout_a.ptr,
                layout_b.ptr,
                layout_c.ptr,
                layout_c.ptr,
                pref.ptr,
                1,
                found.as_mut_ptr(),
                &raw mut count,
            )
        })?;
        if count < 1 {
            return Err("cuBLASLt found no algorithm for a bf16 GEMM on this GPU".to_string());
        }
        Ok(Gemm {
            api,
            algo: found[0],
            _pref: pref,
            layout_c,
            layout_b,
            layout_a,
            desc,
            handle,
        })
    }

    /// C = A·B once, queued on the default stream.
    fn run(
        &self,
        a: CuDevicePtr,
        b: CuDevicePtr,
        c: CuDevicePtr,
        workspace: CuDevicePtr,
    ) -> Result<(), String> {
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: every handle is live, the pointers are device allocations of the sizes the
        // layouts describe, and the workspace is at least the size passed.
        ok("cublasLtMatmul", unsafe {
            (self.api.matmul)(
                self.handle.ptr,
                self.desc.ptr,
                (&raw const alpha).cast(),
                a,
                self.layout_a.ptr,
                b,
                self.layout_b.ptr,
                (&raw const beta).cast(),
                c,
                self.layout_c.ptr,
                c,
                self.layout_c.ptr,
                &raw const self.algo,
                workspace,
                self.algo.workspace_size.min(WORKSPACE),
                std::ptr::null_mut(),
            )
        })
    }
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
    let api = Api::load(lib)?;
    let bytes = n * n * 2;
    let a = ctx.alloc(bytes).map_err(|e| e.to_string())?;
    let b = ctx.alloc(bytes).map_err(|e| e.to_string())?;
    let c = ctx.alloc(bytes).map_err(|e| e.to_string())?;
    let workspace = ctx.alloc(WORKSPACE).map_err(|e| e.to_string())?;
    let host = super::matmul::random_bf16(n * n, 7);
    ctx.upload(&a, &host).map_err(|e| e.to_string())?;
    ctx.upload(&b, &host).map_err(|e| e.to_string())?;
    let gemm = Gemm::new(&api, n)?;
    let run = || gemm.run(a.ptr, b.ptr, c.ptr, workspace.ptr);
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
        version: api.version,
        size: n,
        median_ms,
        tflops: flops / (median_ms * 1e-3) / 1e12,
    })
}
