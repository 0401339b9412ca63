//! The fp32 matmul check: the PTX kernel on the GPU against a CPU reference, and its timing.

// FFI: Kernel launches through the driver API (raw argument pointers).
#![allow(unsafe_code)]

use std::ffi::c_void;

use super::driver::{Context, CuError, Module};
use crate::report::smoke::MatmulCheck;

/// The kernel's tile: M and N must be multiples of this, K of 8.
pub(crate) const TILE: usize = 128;

/// fp32 relative error allowed per element, against the sum of |a·b| terms (so cancellation
/// does not inflate it). fp32 accumulation over K = 512 stays near 1e-7; 1e-4 leaves room for
/// any summation order and still catches a wrong result by orders of magnitude.
pub(crate) const FP32_TOLERANCE: f64 = 1e-4;

/// A bit pattern no correct result has (a NaN): written before the kernel runs, so an element
/// the kernel never wrote is caught.
const POISON: u32 = 0xFFC0_DEAD;

/// Deterministic values in [-0.5, 0.5): the same inputs on every run and every GPU.
#[must_use]
pub(crate) fn random_f32(len: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            #[expect(
                clippy::cast_precision_loss,
                reason = "24 random bits fit an f32 exactly"
            )]
            let unit = ((x >> 40) as f32) / 16_777_216.0;
            unit - 0.5
        })
        .collect()
}

/// Deterministic bf16 values (as raw bits) for the cuBLASLt benchmark.
#[must_use]
pub(crate) fn random_bf16(len: usize, seed: u64) -> Vec<u16> {
    random_f32(len, seed)
        .into_iter()
        .map(|v| (v.to_bits() >> 16) as u16)
        .collect()
}

/// The reference product on the CPU, in f64 with the |a·b| sums used for the error bound.
///
/// Every element is computed (the check compares all of them). The release build is
/// optimised for size (`opt-level = "z"`, no loop vectoriser, little inlining), under which
/// the first version's indexed loop with an `f64::from` per product took about 450 ms for
/// 512³ on the H200 machine's CPU; here B is converted to f64 once, the inner loop walks
/// zipped slices (no bounds checks), and the rows are split over up to `threads` threads.
#[must_use]
pub(crate) fn cpu_reference(
    a: &[f32],
    b: &[f32],
    m: usize,
    n: usize,
    k: usize,
) -> (Vec<f64>, Vec<f64>) {
    cpu_reference_on(a, b, m, n, k, 1)
}

/// [`cpu_reference`] with the rows split over `threads` scoped threads.
#[must_use]
pub(crate) fn cpu_reference_on(
    a: &[f32],
    b: &[f32],
    m: usize,
    n: usize,
    k: usize,
    threads: usize,
) -> (Vec<f64>, Vec<f64>) {
    let mut c = vec![0f64; m * n];
    let mut mag = vec![0f64; m * n];
    if m == 0 || n == 0 || a.len() < m * k || b.len() < k * n {
        return (c, mag);
    }
    let b64: Vec<f64> = b[..k * n].iter().map(|&v| f64::from(v)).collect();
    let rows_per = m.div_ceil(threads.clamp(1, m));
    let work = |a_rows: &[f32], out: &mut [f64], out_mag: &mut [f64]| {
        for ((a_row, out), out_mag) in a_rows
            .chunks_exact(k)
            .zip(out.chunks_exact_mut(n))
            .zip(out_mag.chunks_exact_mut(n))
        {
            for (&av, b_row) in a_row.iter().zip(b64.chunks_exact(n)) {
                let av = f64::from(av);
                for ((o, g), &bv) in out.iter_mut().zip(out_mag.iter_mut()).zip(b_row) {
                    let prod = av * bv;
                    *o += prod;
                    *g += prod.abs();
                }
            }
        }
    };
    std::thread::scope(|s| {
        let parts = a[..m * k]
            .chunks(rows_per * k)
            .zip(c.chunks_mut(rows_per * n))
            .zip(mag.chunks_mut(rows_per * n));
        let mut here = Vec::new();
        for (i, ((a_rows, out), out_mag)) in parts.enumerate() {
            if i == 0 {
                // The first part runs here once the others are started.
                here.push((a_rows, out, out_mag));
            } else {
                s.spawn(|| work(a_rows, out, out_mag));
            }
        }
        for (a_rows, out, out_mag) in here {
            work(a_rows, out, out_mag);
        }
    });
    (c, mag)
}

/// Compares GPU output with the reference: every element written, finite, and within tolerance.
#[must_use]
pub(crate) fn compare(gpu: &[f32], reference: &[f64], magnitude: &[f64]) -> MatmulCheck {
    let mut max_rel = 0f64;
    let mut bad = 0usize;
    let mut unwritten = 0usize;
    for ((g, r), m) in gpu.iter().zip(reference).zip(magnitude) {
        if g.to_bits() == POISON {
            unwritten += 1;
            continue;
        }
        if !g.is_finite() {
            bad += 1;
            continue;
        }
        let rel = (f64::from(*g) - r).abs() / m.max(f64::MIN_POSITIVE);
        if rel > max_rel {
            max_rel = rel;
        }
        if rel > FP32_TOLERANCE {
            bad += 1;
        }
    }
    let passed = bad == 0 && unwritten == 0 && gpu.len() == reference.len();
    MatmulCheck {
        passed,
        size: [0, 0, 0],
        max_rel_error: max_rel,
        tolerance: FP32_TOLERANCE,
        wrong_elements: bad,
        unwritten_elements: unwritten,
    }
}

/// Runs C = A·B with the PTX kernel on `m`×`n`×`k` and returns C.
///
/// # Errors
/// The driver's error.
pub(crate) fn run_kernel(
    ctx: &Context<'_>,
    module: &Module<'_>,
    a: &[f32],
    b: &[f32],
    m: usize,
    n: usize,
    k: usize,
) -> Result<Vec<f32>, CuError> {
    let da = ctx.alloc(a.len() * 4)?;
    let db = ctx.alloc(b.len() * 4)?;
    let dc = ctx.alloc(m * n * 4)?;
    ctx.upload(&da, a)?;
    ctx.upload(&db, b)?;
    ctx.fill_u32(&dc, POISON)?;
    launch(module, &da.ptr, &db.ptr, &dc.ptr, m, n, k)?;
    ctx.synchronize()?;
    let mut out = vec![0f32; m * n];
    ctx.download(&mut out, &dc)?;
    Ok(out)
}

/// Launches the tiled kernel once on existing buffers.
///
/// # Errors
/// The driver's error.
pub(crate) fn launch(
    module: &Module<'_>,
    a: &u64,
    b: &u64,
    c: &u64,
    m: usize,
    n: usize,
    k: usize,
) -> Result<(), CuError> {
    let (mut mi, mut ni, mut ki) = (to_i32(m), to_i32(n), to_i32(k));
    let (mut pa, mut pb, mut pc) = (*a, *b, *c);
    let mut params: [*mut c_void; 6] = [
        (&raw mut mi).cast(),
        (&raw mut ni).cast(),
        (&raw mut ki).cast(),
        (&raw mut pa).cast(),
        (&raw mut pb).cast(),
        (&raw mut pc).cast(),
    ];
    let grid = (to_u32(n / TILE), to_u32(m / TILE));
    // SAFETY: the parameters match `sgemm_128x128(int, int, int, const float*, const float*,
    // float*)`; the buffers hold m×k, k×n and m×n floats; m, n are multiples of 128, k of 8.
    unsafe { module.launch("sgemm_128x128", grid, 256, &mut params) }
}

fn to_i32(v: usize) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

fn to_u32(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_and_compare_agree_on_an_exact_product() {
        // [[1,2],[3,4]] · [[5,6],[7,8]] = [[19,22],[43,50]]
        let (c, mag) = cpu_reference(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], 2, 2, 2);
        assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
        let check = compare(&[19.0, 22.0, 43.0, 50.0], &c, &mag);
        assert!(check.passed);
        assert_eq!(check.max_rel_error, 0.0);
    }

    #[test]
    fn nan_wrong_and_unwritten_elements_fail() {
        let (c, mag) = cpu_reference(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0], 2, 2, 2);
        let nan = compare(&[19.0, f32::NAN, 43.0, 50.0], &c, &mag);
        assert!(!nan.passed);
        assert_eq!(nan.wrong_elements, 1);
        let wrong = compare(&[19.0, 22.5, 43.0, 50.0], &c, &mag);
        assert!(!wrong.passed);
        let unwritten = compare(&[19.0, f32::from_bits(POISON), 43.0, 50.0], &c, &mag);
        assert!(!unwritten.passed);
        assert_eq!(unwritten.unwritten_elements, 1);
    }

    #[test]
    fn threaded_reference_is_the_single_threaded_one() {
        let (m, n, k) = (40, 24, 16);
        let a = random_f32(m * k, 3);
        let b = random_f32(k * n, 4);
        let one = cpu_reference(&a, &b, m, n, k);
        for threads in [2, 3, 7, 64] {
            assert_eq!(cpu_reference_on(&a, &b, m, n, k, threads), one, "{threads}");
        }
        // Row by row, the naive triple loop.
        let (i, j) = (17, 5);
        let want: f64 = (0..k)
            .map(|p| f64::from(a[i * k + p]) * f64::from(b[p * n + j]))
            .sum();
        assert!((one.0[i * n + j] - want).abs() < 1e-12);
    }

    #[test]
    fn inputs_are_deterministic_and_centred() {
        let a = random_f32(1000, 1);
        assert_eq!(a, random_f32(1000, 1));
        assert_ne!(a, random_f32(1000, 2));
        assert!(a.iter().all(|v| (-0.5..0.5).contains(v)));
        let mean: f32 = a.iter().sum::<f32>() / 1000.0;
        assert!(mean.abs() < 0.05, "{mean}");
    }
}
