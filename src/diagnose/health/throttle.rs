//! `gpu-thermal-throttle`: a GPU that cut its own clocks for heat or a power brake, judged
//! from NVML's clock event reasons (which of them mean a fault is the subject of this file).

use super::{driver_gpus, gpu_label, gpus_are};
use crate::diagnose::{FindingBuilder, ids};
use crate::report::{Finding, Gpu, Report, Severity};

/// Reasons that always mean the GPU cut its own clocks to protect itself (NVML
/// `nvmlClocksEventReasons`): the GPU or its memory is over its operating temperature
/// (`sw_thermal_slowdown`), the hardware thermal brake is on (`hw_thermal_slowdown`), or the
/// system's power supply asserted the external power brake (`hw_power_brake_slowdown`). Each
/// costs speed for as long as it lasts, so each is worth a warning.
const PROTECTIVE_REASONS: [&str; 3] = [
    "hw_thermal_slowdown",
    "sw_thermal_slowdown",
    "hw_power_brake_slowdown",
];

/// `hw_slowdown` halves the clocks or more for heat, a power brake or a power spike, but NVML
/// documents that it "may be also reported during PState or clock change": on an idle, cool GPU
/// it alone proves nothing, so it counts only on a busy GPU or one at its slowdown temperature.
const HW_SLOWDOWN: &str = "hw_slowdown";

/// Not judged: `sw_power_cap` (the normal way a loaded GPU holds its power limit; idle GPUs
/// show it too), `applications_clocks_setting` and `display_clocks_setting` (settings, not
/// faults), `sync_boost` (a deliberate group setting) and `gpu_idle` (the probe drops it).
fn slowdown_reasons(gpu: &Gpu) -> Vec<&str> {
    let has = |reason: &str| gpu.throttle_reasons.iter().any(|r| r == reason);
    let mut reasons: Vec<&str> = PROTECTIVE_REASONS
        .iter()
        .copied()
        .filter(|r| has(r))
        .collect();
    let at_slowdown_temperature = matches!(
        (gpu.temperature_c, gpu.temperature_slowdown_c),
        (Some(t), Some(limit)) if t >= limit
    );
    let busy = gpu.utilization_pct.is_some_and(|u| u > 0);
    if has(HW_SLOWDOWN) && (!reasons.is_empty() || busy || at_slowdown_temperature) {
        reasons.insert(0, HW_SLOWDOWN);
    }
    reasons
}

pub(super) fn thermal_throttle(report: &Report) -> Option<Finding> {
    let hit: Vec<(&Gpu, Vec<&str>)> = driver_gpus(report)
        .map(|g| (g, slowdown_reasons(g)))
        .filter(|(_, reasons)| !reasons.is_empty())
        .collect();
    if hit.is_empty() {
        return None;
    }
    let all: Vec<&str> = hit.iter().flat_map(|(_, r)| r.iter().copied()).collect();
    let thermal = all.iter().any(|r| r.contains("thermal"));
    let brake = all.contains(&"hw_power_brake_slowdown");
    let cause = match (thermal, brake) {
        (true, true) => "too hot, and the power supply is braking it",
        (true, false) => "too hot",
        (false, true) => "the power supply is braking it",
        (false, false) => "hardware slowdown",
    };
    let gpus: Vec<&Gpu> = hit.iter().map(|(g, _)| *g).collect();
    let mut f = FindingBuilder::new(
        &ids::GPU_THERMAL_THROTTLE,
        Severity::Warning,
        format!(
            "{} throttling {} clocks: {cause}",
            gpus_are(&gpus),
            if gpus.len() == 1 { "its" } else { "their" }
        ),
    )
    .detail(throttle_detail(thermal, brake));
    for (gpu, reasons) in &hit {
        let label = gpu_label(gpu);
        f = f.evidence(format!(
            "{label}: active slowdown reasons {}",
            reasons.join(", ")
        ));
        if let Some(t) = gpu.temperature_c {
            f = f.evidence(match gpu.temperature_slowdown_c {
                Some(limit) => format!("{label}: temperature {t} °C (slowdown at {limit} °C)"),
                None => format!("{label}: temperature {t} °C (slowdown threshold not reported)"),
            });
        }
        if let (Some(now), Some(max)) = (gpu.clock_sm_mhz, gpu.clock_sm_max_mhz) {
            f = f.evidence(format!(
                "{label}: SM clock {now} MHz of {max} MHz max{}",
                percent(now, max).map_or(String::new(), |p| format!(" ({p}%)"))
            ));
        }
        if let Some(draw) = gpu.power_draw_w {
            f = f.evidence(match gpu.power_limit_w {
                Some(limit) => format!("{label}: power draw {draw:.1} W of {limit:.1} W limit"),
                None => format!("{label}: power draw {draw:.1} W"),
            });
        }
        if let Some(u) = gpu.utilization_pct {
            f = f.evidence(format!("{label}: utilization {u}%"));
        }
        f = f.subject(gpu.subject());
    }
    let first = gpus.first().map_or(0, |g| g.index);
    let mut fix = String::from(
        "Watch it under load with `nvidia-smi -q -d TEMPERATURE,PERFORMANCE -l 5`. Improve \
         cooling: clean dust from heatsinks and fans, make sure the case or rack moves air \
         through the cards (fan curves, blanking panels, a free slot between GPUs), and keep \
         the room or inlet air cool.",
    );
    if brake {
        fix.push_str(
            " For the power brake: check that the power supply is rated for all GPUs at full \
             load and that every PCIe power connector is plugged in with its own cable (no \
             splitters).",
        );
    }
    fix.push_str(&format!(
        " As a stopgap, a lower power limit keeps the GPU cooler at a small speed cost: \
         `sudo nvidia-smi -i {first} -pl <watts>`."
    ));
    Some(f.fix(fix).build())
}

/// What the active reasons mean, in the user's terms: only the causes that are present.
fn throttle_detail(thermal: bool, brake: bool) -> String {
    let mut text = String::from(
        "The GPU is cutting its own clock speed to protect itself, so training and inference run \
         slower than the card can.",
    );
    if thermal {
        text.push_str(
            " The GPU or its memory reached its temperature limit: blocked or dusty fans, poor \
             case or rack airflow, cards packed without space between them, or a hot room.",
        );
    }
    if brake {
        text.push_str(
            " The system's power supply asserted the power brake because it cannot deliver the \
             power the GPU draws.",
        );
    }
    if !thermal && !brake {
        text.push_str(
            " Hardware slowdown cuts the clocks by half or more; it is triggered by high \
             temperature, a power brake from the power supply, or power spikes.",
        );
    }
    text
}

/// `part` as a whole percentage of `whole`, when `whole` is not zero.
fn percent(part: u32, whole: u32) -> Option<u64> {
    (whole > 0).then(|| u64::from(part) * 100 / u64::from(whole))
}
