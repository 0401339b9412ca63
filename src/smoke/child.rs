//! The smoke test's GPU work, run in a child process of gpu-doctor (the same binary started
//! with [`CHILD_ARG`]): a driver that hangs, crashes or panics a binding takes only this
//! process down, and the parent reports it. Prints one JSON [`SmokeRun`].

// FFI: Kernel launches through the driver API (raw argument pointers).
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::driver::{Context, CuError, Driver, Module, attr};
use super::{PTX, cublaslt, matmul, median};
use crate::report::smoke::{
    Bandwidth, DevicePhases, DeviceResult, DriverError, MemoryCheck, PeerAccess, RunPhases,
    SmokeRun, SmokeStatus, Throughput,
};

/// The hidden first argument that makes gpu-doctor the smoke child.
pub(crate) const CHILD_ARG: &str = "__smoke-child";

/// The matmul checked against the CPU: big enough to use every tile path, small enough that
/// the CPU reference takes well under 0.1 s.
const CHECK_SIZE: usize = 512;
/// The fp32 kernel's benchmark size.
const BENCH_FP32: usize = 4096;
/// The bf16 GEMM the reference figures use (8192³).
const BENCH_BF16: usize = 8192;
const MIB: usize = 1024 * 1024;

/// What the parent asks for.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Request {
    /// CUDA ordinals to test; all when `None`.
    pub devices: Option<Vec<u32>>,
    pub bench: bool,
    /// cuBLASLt libraries to try, in order.
    pub cublaslt: Vec<String>,
}

/// Entry point of the child: `request` is the JSON [`Request`].
#[must_use]
#[expect(
    clippy::disallowed_macros,
    reason = "the smoke child's answer to its parent: one JSON line on the child's own stdout"
)]
pub(crate) fn child_main(request: &str) -> i32 {
    let start = Instant::now();
    let request: Request = serde_json::from_str(request).unwrap_or_default();
    let mut run = execute(&request);
    run.bench = request.bench;
    run.wall_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    match serde_json::to_string(&run) {
        Ok(json) => {
            println!("{json}");
            0
        }
        Err(_) => 3,
    }
}

fn could_not_run(error: String) -> SmokeRun {
    SmokeRun {
        status: SmokeStatus::CouldNotRun,
        error: Some(error),
        ..SmokeRun::default()
    }
}

fn driver_error(e: &CuError) -> DriverError {
    DriverError {
        call: e.call.to_string(),
        code: e.code,
        name: e.name.clone(),
        message: e.message.clone(),
    }
}

fn execute(request: &Request) -> SmokeRun {
    // The CPU reference needs no GPU: it is computed on other threads from the start, while
    // the driver starts, the context is created and the GPU works, and joined only where the
    // product is compared.
    let a = matmul::random_f32(CHECK_SIZE * CHECK_SIZE, 1);
    let b = matmul::random_f32(CHECK_SIZE * CHECK_SIZE, 2);
    let reference = Reference::start(a.clone(), b.clone());
    let t = Instant::now();
    let driver = match Driver::load() {
        Ok(d) => d,
        Err(e) => return could_not_run(e),
    };
    if let Err(e) = driver.init() {
        let mut run = could_not_run(format!("the CUDA driver could not start: {e}"));
        run.devices.push(DeviceResult {
            error: Some(driver_error(&e)),
            ..DeviceResult::default()
        });
        return run;
    }
    let driver_start = ms_since(t);
    let version = driver
        .version()
        .ok()
        .and_then(|v| crate::version::Version::from_cuda_int(i64::from(v)));
    let count = match driver.device_count() {
        Ok(n) if n > 0 => n,
        Ok(_) => return could_not_run("the CUDA driver sees no GPU".to_string()),
        Err(e) => return could_not_run(e.to_string()),
    };
    // A library that claims billions of GPUs is believed only up to a machine's size.
    let count = u32::try_from(count)
        .unwrap_or(0)
        .min(crate::host::gpu::MAX_DEVICES);
    let wanted: Vec<u32> = (0..count)
        .filter(|i| request.devices.as_ref().is_none_or(|d| d.contains(i)))
        .collect();
    if wanted.is_empty() {
        return could_not_run(format!("no GPU with that index (the driver sees {count})"));
    }
    let inputs = Inputs {
        a: &a,
        b: &b,
        reference: &reference,
    };
    let devices: Vec<DeviceResult> = wanted
        .iter()
        .map(|&i| test_device(&driver, i, &inputs, request))
        .collect();
    let mut peer_access = Vec::new();
    for &x in &wanted {
        for &y in wanted.iter().filter(|&&y| y != x) {
            let (Ok(dx), Ok(dy)) = (driver.device(to_i32(x)), driver.device(to_i32(y))) else {
                continue;
            };
            if let Ok(can) = driver.can_access_peer(dx, dy) {
                peer_access.push(PeerAccess {
                    from: x,
                    to: y,
                    can_access: can,
                });
            }
        }
    }
    let passed = devices.iter().all(|d| d.passed);
    let (cpu_reference, cpu_reference_wait) = reference.times();
    SmokeRun {
        status: if passed {
            SmokeStatus::Passed
        } else {
            SmokeStatus::Failed
        },
        error: None,
        driver_api_version: version.map(|v| v.to_string()),
        devices,
        peer_access,
        bench: request.bench,
        wall_ms: 0,
        phases_ms: Some(RunPhases {
            driver_start,
            cpu_reference,
            cpu_reference_wait,
        }),
    }
}

struct Inputs<'a> {
    a: &'a [f32],
    b: &'a [f32],
    reference: &'a Reference,
}

type Product = (Vec<f64>, Vec<f64>);

/// The CPU reference, being computed on other threads; [`Reference::get`] waits for it.
struct Reference {
    pending: Mutex<Option<JoinHandle<(Product, f64)>>>,
    done: OnceLock<Product>,
    /// The computation's own time and how long `get` waited, in ms.
    times: Mutex<(f64, f64)>,
    inputs: (Vec<f32>, Vec<f32>),
}

impl Reference {
    fn start(a: Vec<f32>, b: Vec<f32>) -> Reference {
        let (ta, tb) = (a.clone(), b.clone());
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 8));
        let pending = std::thread::Builder::new()
            .name("cpu-reference".to_string())
            .spawn(move || {
                let t = Instant::now();
                let n = CHECK_SIZE;
                let product = matmul::cpu_reference_on(&ta, &tb, n, n, n, threads);
                (product, ms_since(t))
            })
            .ok();
        Reference {
            pending: Mutex::new(pending),
            done: OnceLock::new(),
            times: Mutex::new((0.0, 0.0)),
            inputs: (a, b),
        }
    }

    /// The reference product and the |a·b| sums; computed here if its thread failed.
    fn get(&self) -> &Product {
        self.done.get_or_init(|| {
            let t = Instant::now();
            let handle = self.pending.lock().ok().and_then(|mut p| p.take());
            let (product, took) = handle.and_then(|h| h.join().ok()).unwrap_or_else(|| {
                let t = Instant::now();
                let n = CHECK_SIZE;
                let (a, b) = &self.inputs;
                (matmul::cpu_reference(a, b, n, n, n), ms_since(t))
            });
            if let Ok(mut times) = self.times.lock() {
                *times = (took, ms_since(t));
            }
            product
        })
    }

    fn times(&self) -> (f64, f64) {
        self.times.lock().map_or((0.0, 0.0), |t| *t)
    }
}

fn to_i32(v: u32) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn test_device(
    driver: &Driver,
    index: u32,
    inputs: &Inputs<'_>,
    request: &Request,
) -> DeviceResult {
    let mut result = DeviceResult {
        index,
        ..DeviceResult::default()
    };
    if let Err(e) = run_tests(driver, index, inputs, request, &mut result) {
        result.error = Some(driver_error(&e));
        result.passed = false;
    }
    result
}

fn run_tests(
    driver: &Driver,
    index: u32,
    inputs: &Inputs<'_>,
    request: &Request,
    r: &mut DeviceResult,
) -> Result<(), CuError> {
    let device = driver.device(to_i32(index))?;
    r.name = driver.device_name(device).ok();
    let major = driver.attribute(device, attr::CC_MAJOR).ok();
    let minor = driver.attribute(device, attr::CC_MINOR).ok();
    r.compute_capability = major.zip(minor).map(|(a, b)| format!("{a}.{b}"));
    r.sm_count = driver
        .attribute(device, attr::MULTIPROCESSOR_COUNT)
        .ok()
        .and_then(|v| u32::try_from(v).ok());
    let total = driver.total_mem(device).ok();
    r.memory_total_mib = total.map(|t| (t / MIB) as u64);
    let mut phases = DevicePhases::default();
    let t = Instant::now();
    let ctx = driver.context(device)?;
    // A first allocation makes the context real; its cost belongs to start-up.
    drop(ctx.alloc(4)?);
    phases.context = ms_since(t);
    r.context_ms = Some(phases.context);
    let result = on_context_tests(&ctx, total.unwrap_or(0), inputs, request, r, &mut phases);
    let t = Instant::now();
    drop(ctx);
    phases.teardown = ms_since(t);
    r.phases_ms = Some(phases);
    result
}

/// Everything that runs on the context, which the caller creates and releases (timed).
fn on_context_tests(
    ctx: &Context<'_>,
    total: usize,
    inputs: &Inputs<'_>,
    request: &Request,
    r: &mut DeviceResult,
    phases: &mut DevicePhases,
) -> Result<(), CuError> {
    let t = Instant::now();
    let module = ctx.load_ptx(PTX)?;
    phases.module_load = ms_since(t);
    r.ptx_load_ms = Some(phases.module_load);

    let n = CHECK_SIZE;
    let t = Instant::now();
    let gpu = matmul::run_kernel(ctx, &module, inputs.a, inputs.b, n, n, n)?;
    phases.matmul = ms_since(t);

    // The memory and bandwidth tests run before the comparison, so the CPU reference has
    // their time to finish; a driver error in them still leaves the matmul's verdict.
    let sms = r.sm_count.unwrap_or(16);
    let rest = (|| -> Result<bool, CuError> {
        let t = Instant::now();
        let memory = memory_check(ctx, &module, (total / 8).min(512 * MIB), sms)?;
        phases.memory_patterns = ms_since(t);
        let memory_ok = memory.passed;
        r.memory = Some(memory);
        r.bandwidth = Some(bandwidth(ctx, (total / 8).min(1024 * MIB), phases)?);
        if request.bench {
            let t = Instant::now();
            r.throughput = Some(throughput(ctx, &module, request, total));
            phases.throughput = ms_since(t);
        }
        Ok(memory_ok)
    })();

    let t = Instant::now();
    let (reference, magnitude) = inputs.reference.get();
    let mut check = matmul::compare(&gpu, reference, magnitude);
    phases.matmul_compare = ms_since(t);
    check.size = [n, n, n];
    let matmul_ok = check.passed;
    r.matmul = Some(check);
    r.passed = matmul_ok && rest?;
    Ok(())
}

/// Writes and reads back two patterns over `bytes` of device memory, on the GPU.
fn memory_check(
    ctx: &Context<'_>,
    module: &Module<'_>,
    bytes: usize,
    sms: u32,
) -> Result<MemoryCheck, CuError> {
    let bytes = (bytes / 4) * 4;
    let buf = ctx.alloc(bytes.max(4))?;
    let errors = ctx.alloc(8)?;
    let mut words = (bytes / 4) as u64;
    let grid = (sms.saturating_mul(8).clamp(1, 65_535), 1);
    let mut total_errors = 0u64;
    let seeds = [0x1234_5678u32, 0xA5A5_5A5Au32];
    for seed in seeds {
        ctx.fill_u32(&errors, 0)?;
        let (mut p, mut s, mut e) = (buf.ptr, seed, errors.ptr);
        let mut fill: [*mut c_void; 3] = [
            (&raw mut p).cast(),
            (&raw mut words).cast(),
            (&raw mut s).cast(),
        ];
        // SAFETY: matches fill_pattern(unsigned*, unsigned long long, unsigned); `words`
        // words of `buf` exist.
        unsafe { module.launch("fill_pattern", grid, 256, &mut fill)? };
        let mut check: [*mut c_void; 4] = [
            (&raw mut p).cast(),
            (&raw mut words).cast(),
            (&raw mut s).cast(),
            (&raw mut e).cast(),
        ];
        // SAFETY: matches check_pattern(const unsigned*, unsigned long long, unsigned,
        // unsigned long long*); `errors` holds one u64.
        unsafe { module.launch("check_pattern", grid, 256, &mut check)? };
        ctx.synchronize()?;
        let mut count = [0u64; 1];
        ctx.download(&mut count, &errors)?;
        total_errors += count[0];
    }
    Ok(MemoryCheck {
        passed: total_errors == 0,
        bytes: bytes as u64,
        patterns: seeds.len() as u32,
        errors: total_errors,
    })
}

/// Times `f` after one warm-up: the median of `runs` event-timed runs, in ms.
fn time_ms(
    ctx: &Context<'_>,
    runs: usize,
    mut f: impl FnMut() -> Result<(), CuError>,
) -> Result<f64, CuError> {
    f()?;
    ctx.synchronize()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (start, end) = (ctx.event()?, ctx.event()?);
        start.record()?;
        f()?;
        end.record()?;
        times.push(f64::from(start.elapsed_ms(&end)?));
    }
    Ok(median(&mut times))
}

fn gbs(bytes: f64, ms: f64) -> Option<f64> {
    (ms > 0.0).then(|| bytes / (ms * 1e-3) / 1e9)
}

fn bandwidth(
    ctx: &Context<'_>,
    d2d_bytes: usize,
    phases: &mut DevicePhases,
) -> Result<Bandwidth, CuError> {
    let t = Instant::now();
    let d2d_bytes = d2d_bytes.max(MIB);
    let src = ctx.alloc(d2d_bytes)?;
    let dst = ctx.alloc(d2d_bytes)?;
    ctx.fill_u32(&src, 0x3F80_0000)?;
    let d2d = time_ms(ctx, 5, || ctx.copy(&dst, &src))?;
    phases.bandwidth_device_copy = ms_since(t);
    let t = Instant::now();
    let host_bytes = 64 * MIB;
    let mut pinned = ctx.alloc_host(host_bytes)?;
    pinned.as_mut_u32().fill(0x0102_0304);
    phases.bandwidth_pinned_alloc = ms_since(t);
    let t = Instant::now();
    let h2d = time_ms(ctx, 5, || ctx.upload_pinned(&dst, &pinned))?;
    phases.bandwidth_host_to_device = ms_since(t);
    let t = Instant::now();
    let d2h = time_ms(ctx, 5, || ctx.download_pinned(&pinned, &src))?;
    phases.bandwidth_device_to_host = ms_since(t);
    #[expect(clippy::cast_precision_loss, reason = "byte counts far below 2^52")]
    let (d, h) = (d2d_bytes as f64, host_bytes.min(d2d_bytes) as f64);
    Ok(Bandwidth {
        host_to_device_gbs: gbs(h, h2d),
        device_to_host_gbs: gbs(h, d2h),
        device_to_device_gbs: gbs(2.0 * d, d2d),
        device_to_device_bytes: d2d_bytes as u64,
        expected_gbs: None,
    })
}

fn throughput(
    ctx: &Context<'_>,
    module: &Module<'_>,
    request: &Request,
    total: usize,
) -> Throughput {
    let mut t = Throughput::default();
    let n = BENCH_FP32;
    let fp32 = (|| -> Result<f64, CuError> {
        let a = ctx.alloc(n * n * 4)?;
        let b = ctx.alloc(n * n * 4)?;
        let c = ctx.alloc(n * n * 4)?;
        ctx.fill_u32(&a, 0x3F80_0000)?;
        ctx.fill_u32(&b, 0x3F80_0000)?;
        time_ms(ctx, 5, || {
            matmul::launch(module, &a.ptr, &b.ptr, &c.ptr, n, n, n)
        })
    })();
    if let Ok(ms) = fp32 {
        t.ptx_fp32_tflops = Some(2.0 * (n as f64).powi(3) / (ms * 1e-3) / 1e12);
        t.ptx_fp32_size = Some(n);
    }
    // Three 8192² bf16 matrices and the workspace need ~420 MiB.
    if total < 1024 * MIB {
        t.cublaslt_error = Some("skipped: less than 1 GiB of GPU memory".to_string());
        return t;
    }
    match cublaslt::open(&request.cublaslt) {
        Ok((lib, name)) => match cublaslt::bench_bf16(ctx, &lib, &name, BENCH_BF16, 10) {
            Ok(g) => {
                t.cublaslt_bf16_tflops = Some(g.tflops);
                t.cublaslt_size = Some(g.size);
                t.cublaslt_library = Some(g.library);
            }
            Err(e) => t.cublaslt_error = Some(e),
        },
        Err(e) => t.cublaslt_error = Some(e),
    }
    t
}
