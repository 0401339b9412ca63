//! The CUDA driver API, loaded at run time with `dlopen` (gpu-doctor never links libcuda).
//!
//! Only the ~30 entry points the smoke test uses are resolved, all up front: a stub or partial
//! libcuda is reported as a missing symbol, never a crash. Every call returns a [`CuError`] that
//! keeps the driver's own error name and text. This runs in the smoke child process, so a
//! driver that crashes or hangs takes only that process down.

// FFI: The CUDA driver API through dlopen: foreign calls, each with its SAFETY note.
#![allow(unsafe_code)]

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::fmt;

use libloading::Library;

pub(crate) type CuResult = c_int;
pub(crate) type CuDevice = c_int;
pub(crate) type CuDevicePtr = u64;
type Ptr = *mut c_void;

/// `CUresult` values the smoke test explains to the user (cuda.h).
pub(crate) mod code {
    pub(crate) const OUT_OF_MEMORY: i32 = 2;
    pub(crate) const STUB_LIBRARY: i32 = 34;
    pub(crate) const ECC_UNCORRECTABLE: i32 = 214;
    pub(crate) const INVALID_PTX: i32 = 218;
    pub(crate) const UNSUPPORTED_PTX_VERSION: i32 = 222;
    pub(crate) const ILLEGAL_ADDRESS: i32 = 700;
    pub(crate) const LAUNCH_FAILED: i32 = 719;
    pub(crate) const SYSTEM_NOT_READY: i32 = 802;
    pub(crate) const SYSTEM_DRIVER_MISMATCH: i32 = 803;
    pub(crate) const COMPAT_NOT_SUPPORTED_ON_DEVICE: i32 = 804;
    pub(crate) const UNKNOWN: i32 = 999;
}

/// Device attributes used (`CUdevice_attribute`).
pub(crate) mod attr {
    pub(crate) const MULTIPROCESSOR_COUNT: i32 = 16;
    pub(crate) const CC_MAJOR: i32 = 75;
    pub(crate) const CC_MINOR: i32 = 76;
}

/// A failed driver call: which call, the `CUresult`, and the driver's name and text for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CuError {
    pub call: &'static str,
    pub code: i32,
    pub name: String,
    pub message: String,
}

impl fmt::Display for CuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed: {} ({}): {}",
            self.call, self.name, self.code, self.message
        )
    }
}

macro_rules! api {
    ($($field:ident : $sym:literal => fn($($arg:ty),*);)*) => {
        /// Resolved entry points; all present, or loading failed.
        struct Api { $($field: unsafe extern "C" fn($($arg),*) -> CuResult,)* }

        impl Api {
            /// # Safety
            /// `lib` must be a CUDA driver library: the symbols are called with these types.
            unsafe fn resolve(lib: &Library) -> Result<Api, String> {
                Ok(Api {
                    $($field: {
                        let sym: libloading::Symbol<'_, unsafe extern "C" fn($($arg),*) -> CuResult> =
                            // SAFETY: the caller vouches for the library; the type is cuda.h's.
                            unsafe { lib.get(concat!($sym, "\0").as_bytes()) }
                                .map_err(|e| format!("libcuda has no {}: {e}", $sym))?;
                        *sym
                    },)*
                })
            }
        }
    };
}

api! {
    init: "cuInit" => fn(c_uint);
    driver_get_version: "cuDriverGetVersion" => fn(*mut c_int);
    device_get_count: "cuDeviceGetCount" => fn(*mut c_int);
    device_get: "cuDeviceGet" => fn(*mut CuDevice, c_int);
    device_get_name: "cuDeviceGetName" => fn(*mut c_char, c_int, CuDevice);
    device_total_mem: "cuDeviceTotalMem_v2" => fn(*mut usize, CuDevice);
    device_get_attribute: "cuDeviceGetAttribute" => fn(*mut c_int, c_int, CuDevice);
    device_can_access_peer: "cuDeviceCanAccessPeer" => fn(*mut c_int, CuDevice, CuDevice);
    primary_ctx_retain: "cuDevicePrimaryCtxRetain" => fn(*mut Ptr, CuDevice);
    primary_ctx_release: "cuDevicePrimaryCtxRelease_v2" => fn(CuDevice);
    ctx_set_current: "cuCtxSetCurrent" => fn(Ptr);
    ctx_synchronize: "cuCtxSynchronize" => fn();
    module_load_data_ex: "cuModuleLoadDataEx" => fn(*mut Ptr, *const c_void, c_uint, *mut c_int, *mut Ptr);
    module_get_function: "cuModuleGetFunction" => fn(*mut Ptr, Ptr, *const c_char);
    module_unload: "cuModuleUnload" => fn(Ptr);
    mem_alloc: "cuMemAlloc_v2" => fn(*mut CuDevicePtr, usize);
    mem_free: "cuMemFree_v2" => fn(CuDevicePtr);
    mem_alloc_host: "cuMemAllocHost_v2" => fn(*mut Ptr, usize);
    mem_free_host: "cuMemFreeHost" => fn(Ptr);
    memcpy_htod: "cuMemcpyHtoD_v2" => fn(CuDevicePtr, *const c_void, usize);
    memcpy_dtoh: "cuMemcpyDtoH_v2" => fn(*mut c_void, CuDevicePtr, usize);
    memcpy_dtod: "cuMemcpyDtoD_v2" => fn(CuDevicePtr, CuDevicePtr, usize);
    memset_d32: "cuMemsetD32_v2" => fn(CuDevicePtr, c_uint, usize);
    launch_kernel: "cuLaunchKernel" => fn(Ptr, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, Ptr, *mut Ptr, *mut Ptr);
    event_create: "cuEventCreate" => fn(*mut Ptr, c_uint);
    event_record: "cuEventRecord" => fn(Ptr, Ptr);
    event_synchronize: "cuEventSynchronize" => fn(Ptr);
    event_elapsed_time: "cuEventElapsedTime" => fn(*mut f32, Ptr, Ptr);
    event_destroy: "cuEventDestroy_v2" => fn(Ptr);
    get_error_name: "cuGetErrorName" => fn(CuResult, *mut *const c_char);
    get_error_string: "cuGetErrorString" => fn(CuResult, *mut *const c_char);
}

/// The loaded driver library.
pub(crate) struct Driver {
    api: Api,
    /// Kept alive for as long as the function pointers are used.
    _lib: Library,
}

/// A context made current on this thread (the device's primary context).
pub(crate) struct Context<'d> {
    driver: &'d Driver,
    device: CuDevice,
}

/// A loaded PTX module.
pub(crate) struct Module<'d> {
    driver: &'d Driver,
    raw: Ptr,
}

/// A device allocation, freed on drop.
pub(crate) struct DeviceBuffer<'d> {
    driver: &'d Driver,
    pub ptr: CuDevicePtr,
    pub bytes: usize,
}

/// Page-locked host memory (for honest host↔device bandwidth), freed on drop.
pub(crate) struct HostBuffer<'d> {
    driver: &'d Driver,
    ptr: Ptr,
    pub bytes: usize,
}

/// A timing event, destroyed on drop.
pub(crate) struct Event<'d> {
    driver: &'d Driver,
    raw: Ptr,
}

impl Driver {
    /// Opens `libcuda.so.1` the way every CUDA program does, and resolves the entry points.
    ///
    /// # Errors
    /// When the library is absent, or lacks a symbol (a stub or a very old driver).
    pub(crate) fn load() -> Result<Driver, String> {
        Self::load_from("libcuda.so.1")
    }

    /// Opens a driver library by name or path (tests use a fake one).
    ///
    /// # Errors
    /// As [`Driver::load`].
    pub(crate) fn load_from(name: &str) -> Result<Driver, String> {
        // SAFETY: loading runs the library's initialisers; this is the smoke child process,
        // which exists so that a misbehaving driver cannot harm the parent.
        let lib = unsafe { Library::new(name) }
            .map_err(|e| format!("{} ({name} could not be loaded: {e})", super::NO_LIBRARY))?;
        // SAFETY: a library exporting cuInit & co. under these names is the CUDA driver.
        let api = unsafe { Api::resolve(&lib) }?;
        Ok(Driver { api, _lib: lib })
    }

    fn check(&self, call: &'static str, rc: CuResult) -> Result<(), CuError> {
        if rc == 0 {
            return Ok(());
        }
        let text = |f: unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult| {
            let mut p: *const c_char = std::ptr::null();
            // SAFETY: the driver writes a pointer to a static string, or leaves it null.
            let ok = unsafe { f(rc, &raw mut p) } == 0 && !p.is_null();
            // SAFETY: non-null pointers from these calls are NUL-terminated static strings.
            ok.then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        };
        Err(CuError {
            call,
            code: rc,
            name: text(self.api.get_error_name).unwrap_or_else(|| format!("CUDA_ERROR_{rc}")),
            message: text(self.api.get_error_string).unwrap_or_else(|| "unknown error".to_string()),
        })
    }

    /// `cuInit(0)`.
    ///
    /// # Errors
    /// The driver's error (no device, stub library, driver/library mismatch, ...).
    pub(crate) fn init(&self) -> Result<(), CuError> {
        // SAFETY: plain call with a flags argument of 0, as documented.
        self.check("cuInit", unsafe { (self.api.init)(0) })
    }

    /// The CUDA version the driver implements, as the integer 13000.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn version(&self) -> Result<i32, CuError> {
        let mut v = 0;
        // SAFETY: `v` is a valid out-pointer.
        self.check("cuDriverGetVersion", unsafe {
            (self.api.driver_get_version)(&raw mut v)
        })?;
        Ok(v)
    }

    /// Number of devices visible to this process.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn device_count(&self) -> Result<i32, CuError> {
        let mut n = 0;
        // SAFETY: `n` is a valid out-pointer.
        self.check("cuDeviceGetCount", unsafe {
            (self.api.device_get_count)(&raw mut n)
        })?;
        Ok(n)
    }

    /// The handle of device `ordinal`.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn device(&self, ordinal: i32) -> Result<CuDevice, CuError> {
        let mut d = 0;
        // SAFETY: `d` is a valid out-pointer.
        self.check("cuDeviceGet", unsafe {
            (self.api.device_get)(&raw mut d, ordinal)
        })?;
        Ok(d)
    }

    /// The device's marketing name.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn device_name(&self, device: CuDevice) -> Result<String, CuError> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: the buffer is writable for its stated length.
        self.check("cuDeviceGetName", unsafe {
            (self.api.device_get_name)(buf.as_mut_ptr(), 256, device)
        })?;
        // SAFETY: the driver NUL-terminates within the buffer; the last byte stays 0.
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    /// Total device memory in bytes.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn total_mem(&self, device: CuDevice) -> Result<usize, CuError> {
        let mut b = 0usize;
        // SAFETY: `b` is a valid out-pointer.
        self.check("cuDeviceTotalMem", unsafe {
            (self.api.device_total_mem)(&raw mut b, device)
        })?;
        Ok(b)
    }

    /// One `CUdevice_attribute`.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn attribute(&self, device: CuDevice, attribute: i32) -> Result<i32, CuError> {
        let mut v = 0;
        // SAFETY: `v` is a valid out-pointer.
        self.check("cuDeviceGetAttribute", unsafe {
            (self.api.device_get_attribute)(&raw mut v, attribute, device)
        })?;
        Ok(v)
    }

    /// Whether `a` can access `b`'s memory directly (NVLink or PCIe peer-to-peer).
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn can_access_peer(&self, a: CuDevice, b: CuDevice) -> Result<bool, CuError> {
        let mut v = 0;
        // SAFETY: `v` is a valid out-pointer.
        self.check("cuDeviceCanAccessPeer", unsafe {
            (self.api.device_can_access_peer)(&raw mut v, a, b)
        })?;
        Ok(v != 0)
    }

    /// Retains the device's primary context and makes it current on this thread.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn context(&self, device: CuDevice) -> Result<Context<'_>, CuError> {
        let mut ctx: Ptr = std::ptr::null_mut();
        // SAFETY: `ctx` is a valid out-pointer.
        self.check("cuDevicePrimaryCtxRetain", unsafe {
            (self.api.primary_ctx_retain)(&raw mut ctx, device)
        })?;
        let context = Context {
            driver: self,
            device,
        };
        // SAFETY: `ctx` was just returned by the driver.
        self.check("cuCtxSetCurrent", unsafe {
            (self.api.ctx_set_current)(ctx)
        })?;
        Ok(context)
    }
}

impl Drop for Context<'_> {
    fn drop(&mut self) {
        // SAFETY: releases the reference taken in `Driver::context`; errors only mean the
        // context is already gone.
        unsafe {
            (self.driver.api.ctx_set_current)(std::ptr::null_mut());
            (self.driver.api.primary_ctx_release)(self.device);
        }
    }
}

impl<'d> Context<'d> {
    /// Waits for all work on this context.
    ///
    /// # Errors
    /// The driver's error, including a kernel's failure reported late.
    pub(crate) fn synchronize(&self) -> Result<(), CuError> {
        // SAFETY: a context is current on this thread.
        self.driver.check("cuCtxSynchronize", unsafe {
            (self.driver.api.ctx_synchronize)()
        })
    }

    /// JIT-compiles PTX text. The error carries the JIT log, which names what the driver could
    /// not compile (a PTX ISA newer than the driver, for one).
    ///
    /// # Errors
    /// The driver's error with the JIT log appended to its message.
    pub(crate) fn load_ptx(&self, ptx: &str) -> Result<Module<'d>, CuError> {
        let text = CString::new(ptx).map_err(|_| CuError {
            call: "cuModuleLoadDataEx",
            code: code::INVALID_PTX,
            name: "CUDA_ERROR_INVALID_PTX".into(),
            message: "the PTX text contains a NUL byte".into(),
        })?;
        let mut log = vec![0u8; 16 * 1024];
        // CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 (cuda.h).
        let mut options: [c_int; 2] = [5, 6];
        // The size option's value is passed in the pointer slot itself, as cuda.h specifies.
        let mut values: [Ptr; 2] = [
            log.as_mut_ptr().cast(),
            std::ptr::without_provenance_mut(log.len()),
        ];
        let mut module: Ptr = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call; the log buffer outlives it.
        let rc = unsafe {
            (self.driver.api.module_load_data_ex)(
                &raw mut module,
                text.as_ptr().cast(),
                2,
                options.as_mut_ptr(),
                values.as_mut_ptr(),
            )
        };
        self.driver
            .check("cuModuleLoadDataEx", rc)
            .map_err(|mut e| {
                let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
                let jit = String::from_utf8_lossy(log.get(..end).unwrap_or_default());
                if !jit.trim().is_empty() {
                    e.message = format!("{}; JIT log: {}", e.message, jit.trim());
                }
                e
            })?;
        Ok(Module {
            driver: self.driver,
            raw: module,
        })
    }

    /// Allocates device memory.
    ///
    /// # Errors
    /// The driver's error (out of memory, ...).
    pub(crate) fn alloc(&self, bytes: usize) -> Result<DeviceBuffer<'d>, CuError> {
        let mut ptr: CuDevicePtr = 0;
        // SAFETY: `ptr` is a valid out-pointer.
        self.driver.check("cuMemAlloc", unsafe {
            (self.driver.api.mem_alloc)(&raw mut ptr, bytes)
        })?;
        Ok(DeviceBuffer {
            driver: self.driver,
            ptr,
            bytes,
        })
    }

    /// Allocates page-locked host memory.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn alloc_host(&self, bytes: usize) -> Result<HostBuffer<'d>, CuError> {
        let mut ptr: Ptr = std::ptr::null_mut();
        // SAFETY: `ptr` is a valid out-pointer.
        self.driver.check("cuMemAllocHost", unsafe {
            (self.driver.api.mem_alloc_host)(&raw mut ptr, bytes)
        })?;
        Ok(HostBuffer {
            driver: self.driver,
            ptr,
            bytes,
        })
    }

    /// Creates a timing event.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn event(&self) -> Result<Event<'d>, CuError> {
        let mut raw: Ptr = std::ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; flags 0 = default (timing enabled).
        self.driver.check("cuEventCreate", unsafe {
            (self.driver.api.event_create)(&raw mut raw, 0)
        })?;
        Ok(Event {
            driver: self.driver,
            raw,
        })
    }

    /// Copies host data to the device.
    ///
    /// # Errors
    /// The driver's error; a size larger than the buffer is refused before the call.
    pub(crate) fn upload<T: Copy>(&self, dst: &DeviceBuffer<'_>, src: &[T]) -> Result<(), CuError> {
        let bytes = std::mem::size_of_val(src);
        guard_len("cuMemcpyHtoD", bytes, dst.bytes)?;
        // SAFETY: `src` is valid for `bytes` reads and `dst` for `bytes` writes.
        self.driver.check("cuMemcpyHtoD", unsafe {
            (self.driver.api.memcpy_htod)(dst.ptr, src.as_ptr().cast(), bytes)
        })
    }

    /// Copies device data to the host.
    ///
    /// # Errors
    /// The driver's error; a size larger than the buffer is refused before the call.
    pub(crate) fn download<T: Copy>(
        &self,
        dst: &mut [T],
        src: &DeviceBuffer<'_>,
    ) -> Result<(), CuError> {
        let bytes = std::mem::size_of_val(dst);
        guard_len("cuMemcpyDtoH", bytes, src.bytes)?;
        // SAFETY: `dst` is valid for `bytes` writes and `src` for `bytes` reads.
        self.driver.check("cuMemcpyDtoH", unsafe {
            (self.driver.api.memcpy_dtoh)(dst.as_mut_ptr().cast(), src.ptr, bytes)
        })
    }

    /// Copies pinned host memory to the device (for bandwidth).
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn upload_pinned(
        &self,
        dst: &DeviceBuffer<'_>,
        src: &HostBuffer<'_>,
    ) -> Result<(), CuError> {
        let bytes = src.bytes.min(dst.bytes);
        // SAFETY: both buffers are valid for `bytes`.
        self.driver.check("cuMemcpyHtoD", unsafe {
            (self.driver.api.memcpy_htod)(dst.ptr, src.ptr, bytes)
        })
    }

    /// Copies device memory to pinned host memory (for bandwidth).
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn download_pinned(
        &self,
        dst: &HostBuffer<'_>,
        src: &DeviceBuffer<'_>,
    ) -> Result<(), CuError> {
        let bytes = src.bytes.min(dst.bytes);
        // SAFETY: both buffers are valid for `bytes`.
        self.driver.check("cuMemcpyDtoH", unsafe {
            (self.driver.api.memcpy_dtoh)(dst.ptr, src.ptr, bytes)
        })
    }

    /// Device-to-device copy of `min(src, dst)` bytes.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn copy(
        &self,
        dst: &DeviceBuffer<'_>,
        src: &DeviceBuffer<'_>,
    ) -> Result<(), CuError> {
        let bytes = src.bytes.min(dst.bytes);
        // SAFETY: both device buffers are valid for `bytes`.
        self.driver.check("cuMemcpyDtoD", unsafe {
            (self.driver.api.memcpy_dtod)(dst.ptr, src.ptr, bytes)
        })
    }

    /// Sets every 32-bit word of a buffer.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn fill_u32(&self, dst: &DeviceBuffer<'_>, value: u32) -> Result<(), CuError> {
        // SAFETY: the buffer holds `bytes / 4` words.
        self.driver.check("cuMemsetD32", unsafe {
            (self.driver.api.memset_d32)(dst.ptr, value, dst.bytes / 4)
        })
    }
}

fn guard_len(call: &'static str, want: usize, have: usize) -> Result<(), CuError> {
    if want <= have {
        return Ok(());
    }
    Err(CuError {
        call,
        code: 1,
        name: "CUDA_ERROR_INVALID_VALUE".into(),
        message: format!("copy of {want} bytes into a buffer of {have}"),
    })
}

impl Module<'_> {
    /// Launches kernel `name` on the default stream.
    ///
    /// # Safety
    /// `params` must point to values whose types match the kernel's parameters, in order, and
    /// any device pointers among them must be valid for what the kernel accesses.
    ///
    /// # Errors
    /// The driver's error (unknown kernel, bad launch configuration, ...).
    pub(crate) unsafe fn launch(
        &self,
        name: &str,
        grid: (u32, u32),
        block: u32,
        params: &mut [Ptr],
    ) -> Result<(), CuError> {
        let cname = CString::new(name).unwrap_or_default();
        let mut func: Ptr = std::ptr::null_mut();
        // SAFETY: `func` is a valid out-pointer, `cname` NUL-terminated.
        self.driver.check("cuModuleGetFunction", unsafe {
            (self.driver.api.module_get_function)(&raw mut func, self.raw, cname.as_ptr())
        })?;
        // SAFETY: the caller guarantees the parameters; the rest are plain values.
        self.driver.check("cuLaunchKernel", unsafe {
            (self.driver.api.launch_kernel)(
                func,
                grid.0,
                grid.1,
                1,
                block,
                1,
                1,
                0,
                std::ptr::null_mut(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }
}

impl Drop for Module<'_> {
    fn drop(&mut self) {
        // SAFETY: unloading a module this process loaded; an error leaves nothing to do.
        unsafe {
            (self.driver.api.module_unload)(self.raw);
        }
    }
}

impl Drop for DeviceBuffer<'_> {
    fn drop(&mut self) {
        // SAFETY: frees an allocation made by `Context::alloc`.
        unsafe {
            (self.driver.api.mem_free)(self.ptr);
        }
    }
}

impl HostBuffer<'_> {
    /// The pinned memory as words, for filling and checking.
    pub(crate) fn as_mut_u32(&mut self) -> &mut [u32] {
        // SAFETY: the allocation is `bytes` long, page-aligned, and only reachable through
        // this exclusive borrow.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<u32>(), self.bytes / 4) }
    }
}

impl Drop for HostBuffer<'_> {
    fn drop(&mut self) {
        // SAFETY: frees an allocation made by `Context::alloc_host`.
        unsafe {
            (self.driver.api.mem_free_host)(self.ptr);
        }
    }
}

impl Event<'_> {
    /// Records the event on the default stream.
    ///
    /// # Errors
    /// The driver's error.
    pub(crate) fn record(&self) -> Result<(), CuError> {
        // SAFETY: a live event on the default (null) stream.
        self.driver.check("cuEventRecord", unsafe {
            (self.driver.api.event_record)(self.raw, std::ptr::null_mut())
        })
    }

    /// Milliseconds from `self` to `end`, after waiting for `end`.
    ///
    /// # Errors
    /// The driver's error (a kernel between the two events that failed shows here).
    pub(crate) fn elapsed_ms(&self, end: &Event<'_>) -> Result<f32, CuError> {
        // SAFETY: live events.
        self.driver.check("cuEventSynchronize", unsafe {
            (self.driver.api.event_synchronize)(end.raw)
        })?;
        let mut ms = 0f32;
        // SAFETY: `ms` is a valid out-pointer; both events were recorded.
        self.driver.check("cuEventElapsedTime", unsafe {
            (self.driver.api.event_elapsed_time)(&raw mut ms, self.raw, end.raw)
        })?;
        Ok(ms)
    }
}

impl Drop for Event<'_> {
    fn drop(&mut self) {
        // SAFETY: destroys an event this process created.
        unsafe {
            (self.driver.api.event_destroy)(self.raw);
        }
    }
}
