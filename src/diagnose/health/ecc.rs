//! `gpu-ecc-errors`: uncorrectable memory errors, pending page retirements or row remaps, and
//! failed remaps, with the steps that fix each in the order the fix gives them.

use super::{driver_gpus, gpu_label, gpus_are, gpus_named};
use crate::diagnose::{FindingBuilder, ids};
use crate::report::{Finding, Gpu, Report, Severity};

/// One memory problem of one GPU, with how bad it is and what to do about it.
struct EccProblem {
    severity: Severity,
    evidence: String,
    fixes: &'static [EccFix],
}

/// The steps that fix memory problems, in the order the fix text gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum EccFix {
    Reset,
    Rerun,
    Service,
    Watch,
}

impl EccFix {
    /// The step for the GPUs `indices` ("0", "0, 2").
    fn text(self, indices: &[u32]) -> String {
        match self {
            EccFix::Reset => {
                let cmds: Vec<String> = indices
                    .iter()
                    .map(|i| format!("`sudo nvidia-smi -r -i {i}`"))
                    .collect();
                format!(
                    "Reset the GPU so the memory repair takes effect: stop every process using \
                     it, then {} (or reboot).",
                    cmds.join(" and ")
                )
            }
            EccFix::Rerun => "Jobs that ran on it were stopped or may have computed wrong \
                              results: rerun them after the reset. `sudo dmesg | grep -i xid` \
                              shows the memory events (Xid 48, 63, 64, 94, 95)."
                .to_string(),
            EccFix::Service => {
                let list: Vec<String> = indices.iter().map(ToString::to_string).collect();
                format!(
                    "GPU {} has no spare memory rows left: take it out of service and contact \
                     your vendor for a replacement (attach the output of \
                     `sudo nvidia-bug-report.sh`).",
                    list.join(", ")
                )
            }
            EccFix::Watch => "Watch the counters with \
                              `nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT`; if they grow, \
                              run `dcgmi diag -r 3` and contact your vendor."
                .to_string(),
        }
    }
}

/// The memory problems of one GPU.
///
/// Errors: uncorrectable errors since the driver loaded (the process that hit them was killed
/// and the GPU may need a reset, Xid 48/94/95), a page retirement or row remapping waiting for
/// a reset (DCGM's level-1 "Page Retirement/Row Remap" check fails on these), and a failed row
/// remapping (the GPU has no spare rows left; NVIDIA treats it as a service case).
///
/// A warning: uncorrectable errors only in the lifetime (aggregate) counter. They happened
/// before the current driver load and retirement or remapping has handled them, so the GPU
/// works now; it is worth watching, not an emergency.
///
/// Corrected (single-bit) errors are not judged: ECC fixed them, and NVIDIA documents no count
/// that means a failing GPU, so any threshold here would be invented. Retired page counts are
/// shown only as evidence, for the same reason.
fn ecc_problems(gpu: &Gpu) -> Vec<EccProblem> {
    let ecc = &gpu.ecc;
    let mut out = Vec::new();
    if let Some(n) = ecc.volatile_uncorrected.filter(|n| *n > 0) {
        out.push(EccProblem {
            severity: Severity::Error,
            evidence: format!("{n} uncorrectable ECC error(s) since the driver loaded"),
            fixes: &[EccFix::Reset, EccFix::Rerun],
        });
    }
    if ecc.retired_pending == Some(true) {
        out.push(EccProblem {
            severity: Severity::Error,
            evidence: "a page retirement is pending (needs a reset)".to_string(),
            fixes: &[EccFix::Reset],
        });
    }
    if ecc.remapped_pending == Some(true) {
        out.push(EccProblem {
            severity: Severity::Error,
            evidence: "a row remapping is pending (needs a reset)".to_string(),
            fixes: &[EccFix::Reset],
        });
    }
    if ecc.remapped_failure == Some(true) {
        out.push(EccProblem {
            severity: Severity::Error,
            evidence: "row remapping failed".to_string(),
            fixes: &[EccFix::Service],
        });
    }
    if out.is_empty()
        && let Some(n) = ecc.aggregate_uncorrected.filter(|n| *n > 0)
    {
        out.push(EccProblem {
            severity: Severity::Warning,
            evidence: format!(
                "{n} uncorrectable ECC error(s) in the GPU's lifetime, none since the driver loaded"
            ),
            fixes: &[EccFix::Watch],
        });
    }
    out
}

pub(super) fn ecc_errors(report: &Report) -> Option<Finding> {
    let hit: Vec<(&Gpu, Vec<EccProblem>)> = driver_gpus(report)
        .map(|g| (g, ecc_problems(g)))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    let severity = hit
        .iter()
        .flat_map(|(_, p)| p.iter().map(|p| p.severity))
        .min()?;
    let gpus: Vec<&Gpu> = hit.iter().map(|(g, _)| *g).collect();
    let (title, detail) = if severity == Severity::Error {
        (
            format!("{} reporting GPU memory (ECC) errors", gpus_are(&gpus)),
            "The GPU's memory returned data that ECC could not correct, or a repair of bad \
             memory is waiting for a GPU reset or has failed. A CUDA program that touches the \
             bad memory is stopped with \"uncorrectable ECC error encountered\", and until the \
             GPU is reset new programs may fail on it too.",
        )
    } else {
        (
            format!(
                "{} had GPU memory (ECC) errors in the past",
                gpus_named(&gpus)
            ),
            "The GPU's lifetime counters show memory errors that ECC could not correct. None \
             happened since the driver loaded and the bad memory has been retired or remapped, \
             so the GPU works now; a count that keeps growing means the memory is failing.",
        )
    };
    let mut f = FindingBuilder::new(&ids::GPU_ECC_ERRORS, severity, title).detail(detail);
    let mut fixes: Vec<(EccFix, Vec<u32>)> = Vec::new();
    for (gpu, problems) in &hit {
        let label = gpu_label(gpu);
        for p in problems {
            f = f.evidence(format!("{label}: {}", p.evidence));
            for step in p.fixes {
                match fixes.iter_mut().find(|(s, _)| s == step) {
                    // One GPU's problems come together: it is the last one added if at all.
                    Some((_, gpus)) if gpus.last() == Some(&gpu.index) => {}
                    Some((_, gpus)) => gpus.push(gpu.index),
                    None => fixes.push((*step, vec![gpu.index])),
                }
            }
        }
        let ecc = &gpu.ecc;
        if let Some(n) = ecc.retired_pages.filter(|n| *n > 0) {
            f = f.evidence(format!("{label}: {n} page(s) retired"));
        }
        if let Some(n) = ecc.remapped_uncorrectable.filter(|n| *n > 0) {
            f = f.evidence(format!(
                "{label}: {n} row(s) remapped after uncorrectable errors"
            ));
        }
        f = f.subject(gpu.subject());
    }
    fixes.sort_by_key(|(step, _)| *step);
    let fix: Vec<String> = fixes
        .iter()
        .map(|(step, indices)| step.text(indices))
        .collect();
    // Resetting a GPU is the host's step; the others are the user's.
    let reset = fixes.iter().any(|(step, _)| *step == EccFix::Reset);
    Some(f.fix_on_host_if(reset).fix(fix.join(" ")).build())
}
