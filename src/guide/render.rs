//! Text for a terminal: the estimate and the advice, one fact a line, every rule of thumb
//! labelled. The JSON form is the same values through serde (see [`super::EstimateOutput`] and
//! [`super::advise::Advice`]).

use std::fmt::Write;

use super::EstimateOutput;
use super::advise::{Advice, Card};
use super::fit::Fit;
use super::memory::{Basis, Mode};
use super::quantity::{MIB, gib, grouped, short_params, signed_gib};
use crate::sanitize::clean;

fn mode_word(mode: Mode) -> &'static str {
    match mode {
        Mode::Train => "training",
        Mode::Infer => "inference",
    }
}

fn fit_line(out: &mut String, f: &Fit) {
    let verdict = if f.fits { "fits" } else { "does not fit" };
    let room = if f.fits { "free" } else { "short" };
    let amount = if f.fits {
        signed_gib(i128::from(f.headroom_bytes))
    } else {
        signed_gib(-i128::from(f.headroom_bytes))
    };
    let _ = writeln!(
        out,
        "  {:<34} {:>11}  {verdict}, {amount} {room}",
        clean(&f.gpu),
        gib(f.capacity_bytes)
    );
}

/// `gpu-doctor estimate` as text.
#[must_use]
pub(crate) fn estimate(o: &EstimateOutput) -> String {
    let e = &o.estimate;
    let mut out = String::new();
    let _ = writeln!(out, "{}", estimate_title(e));
    if let Some(shape) = e.workload.shape {
        let _ = writeln!(out, "{}", shape_line(shape));
    }
    per_gpu(&mut out, e);
    simple_rule(&mut out, &e.simple_rule);
    estimate_machine(&mut out, o);
    smallest_listed(&mut out, o);
    out.push_str("\nNot counted\n");
    for n in &e.not_counted {
        let _ = writeln!(out, "  - {n}");
    }
    out
}

/// "Memory estimate: training a 7B model (7,000,000,000 parameters), BF16 mixed precision, ...".
fn estimate_title(e: &super::memory::Estimate) -> String {
    let w = &e.workload;
    let mut title = match w.mode {
        Mode::Train => format!(
            "Memory estimate: training a {} model",
            short_params(w.params)
        ),
        Mode::Infer => format!(
            "Memory estimate: running a {} model for inference",
            short_params(w.params)
        ),
    };
    let _ = write!(
        title,
        " ({} parameters), {}",
        grouped(w.params),
        w.precision.label()
    );
    if w.mode == Mode::Train {
        if w.precision.label() != "FP32" {
            title.push_str(" mixed precision");
        }
        let _ = write!(title, ", {}", optimizer_label(e));
    }
    let _ = write!(title, ", batch {}", w.batch);
    if let Some(s) = w.seq_len {
        let _ = write!(title, ", sequence {s}");
    }
    if w.zero > 0 {
        let _ = write!(title, ", ZeRO-{} on {} GPUs", w.zero, w.gpus);
    } else if w.gpus > 1 {
        let _ = write!(
            title,
            ", {} GPUs (data parallel: each holds a full copy)",
            w.gpus
        );
    }
    title
}

/// "Model shape: 32 layers, hidden 4096, 32 heads, 8 KV heads".
fn shape_line(shape: super::memory::Shape) -> String {
    let mut line = format!(
        "Model shape: {} layers, hidden {}",
        shape.layers, shape.hidden
    );
    if let Some(a) = shape.heads {
        let _ = write!(line, ", {a} heads");
    }
    if let Some(kv) = shape.kv_heads {
        let _ = write!(line, ", {kv} KV heads");
    }
    line
}

/// Each item one GPU holds, with its formula and how sure the formula is, and the total.
fn per_gpu(out: &mut String, e: &super::memory::Estimate) {
    out.push_str("\nPer GPU\n");
    for item in &e.items {
        let mark = match item.basis {
            Basis::Arithmetic => "",
            Basis::Published => " [published formula]",
            Basis::RuleOfThumb => " [rule of thumb]",
        };
        let _ = writeln!(
            out,
            "  {:<36} {:>11}  {}{mark}",
            item.label,
            gib(item.bytes),
            item.formula
        );
    }
    let _ = writeln!(out, "  {:<36} {:>11}", "total", gib(e.total_bytes));
}

/// The rule guides quote, what it reads as, and why this estimate differs from it.
fn simple_rule(out: &mut String, rule: &super::memory::SimpleRule) {
    #[expect(
        clippy::cast_precision_loss,
        reason = "display only: two decimals of GB"
    )]
    let rule_gb = rule.bytes as f64 / 1e9;
    let _ = writeln!(
        out,
        "\nThe rule quoted in guides, \"{}\": {rule_gb:.2} GB ({})",
        rule.rule,
        gib(rule.bytes)
    );
    let _ = writeln!(out, "  read as: {}", rule.reading);
    for why in &rule.differences {
        let _ = writeln!(out, "  - {why}");
    }
}

/// Whether it fits each GPU of this machine.
fn estimate_machine(out: &mut String, o: &EstimateOutput) {
    let w = &o.estimate.workload;
    out.push_str("\nThis machine\n");
    if o.machine.gpus.is_empty() && o.machine.memory_unknown.is_empty() {
        out.push_str("  no NVIDIA GPU found\n");
    }
    for f in &o.machine.gpus {
        fit_line(out, f);
    }
    for gpu in &o.machine.memory_unknown {
        let _ = writeln!(out, "  {}: memory not reported by a driver", clean(gpu));
    }
    if w.gpus > 1
        && o.machine.gpus.len() + o.machine.memory_unknown.len()
            < usize::try_from(w.gpus).unwrap_or(usize::MAX)
    {
        let _ = writeln!(
            out,
            "  (the plan needs {} GPUs; this machine has {})",
            w.gpus,
            o.machine.gpus.len() + o.machine.memory_unknown.len()
        );
    }
}

/// The smallest GPUs in the table that hold it, and how to spread it when none does.
fn smallest_listed(out: &mut String, o: &EstimateOutput) {
    out.push_str(
        "\nSmallest GPUs in gpu-doctor's table that hold it (marketed GB, read as 10^9 bytes)\n",
    );
    if o.smallest_listed.is_empty() {
        out.push_str("  none on its own\n");
    }
    for f in &o.smallest_listed {
        fit_line(out, f);
    }
    if let Some(s) = &o.spread {
        let _ = writeln!(
            out,
            "  spread over {} × {} with {}",
            s.count,
            clean(&s.gpu),
            s.how
        );
    }
}

fn optimizer_label(e: &super::memory::Estimate) -> String {
    e.items
        .iter()
        .find(|i| i.id == "optimizer_states")
        .and_then(|i| {
            i.label
                .strip_prefix("optimizer states (")
                .and_then(|s| s.strip_suffix(')'))
        })
        .unwrap_or("optimizer")
        .to_string()
}

fn tflops(card: &Card) -> String {
    let parts: Vec<String> = card
        .throughput
        .iter()
        .map(|t| match t.tflops {
            Some(v) => format!("{v} {}", column_label(t.column)),
            None => format!("? {}", column_label(t.column)),
        })
        .collect();
    parts.join(", ")
}

fn column_label(column: &str) -> &'static str {
    match column {
        "fp32" => "FP32",
        "tf32_tensor" => "TF32",
        "fp16_tensor" => "FP16",
        "bf16_tensor" => "BF16",
        "fp8_tensor" => "FP8",
        _ => "",
    }
}

/// `gpu-doctor advise` as text.
#[must_use]
pub(crate) fn advise(a: &Advice) -> String {
    let q = &a.query;
    let mut out = String::new();
    let _ = writeln!(out, "{}", advise_title(a));
    if let Some(need) = a.needed_bytes {
        needs_line(&mut out, a, need);
    }
    if q.precision.weight_only() {
        let _ = writeln!(
            out,
            "{} is taken as weight-only quantisation (GPTQ, AWQ, bitsandbytes): the matmuls run in \
             16-bit, so the FP16 figures apply.",
            q.precision.label()
        );
    }
    card_table(&mut out, a);
    out.push_str("\nThis machine\n");
    if a.machine.is_empty() {
        out.push_str("  no NVIDIA GPU found\n");
    }
    for g in &a.machine {
        machine_gpu(&mut out, g);
    }
    for t in &a.torch_builds {
        let _ = writeln!(out, "  torch {}", clean(t));
    }
    if let Some(p) = &a.power {
        let mut line = format!(
            "\nPower: GPUs' board power {} W (gpus.toml)",
            p.gpu_tdp_sum_w
        );
        if let Some(limit) = p.driver_power_limit_sum_w {
            let _ = write!(line, "; driver power limits {limit:.0} W");
        }
        let _ = writeln!(out, "{line}");
        let _ = writeln!(out, "  {}", p.note);
    }
    out
}

/// "GPUs for training a 7B model in BF16, 2 cards".
fn advise_title(a: &Advice) -> String {
    let q = &a.query;
    let mut title = match (q.mode, q.params) {
        (Mode::Train, Some(p)) => format!("GPUs for training a {} model", short_params(p)),
        (Mode::Infer, Some(p)) => format!("GPUs for running a {} model", short_params(p)),
        (mode, None) => format!("GPUs for {}", mode_word(mode)),
    };
    let _ = write!(title, " in {}", q.precision.label());
    if let Some(b) = q.budget {
        let _ = write!(title, ", {b} cards");
    }
    title
}

/// The least memory it needs, what that holds, and what it leaves out.
fn needs_line(out: &mut String, a: &Advice, need: u64) {
    let q = &a.query;
    let (held, before) = match q.mode {
        Mode::Train if q.precision == super::precision::Precision::Fp32 => (
            "weights, gradients and AdamW states",
            "activations (`gpu-doctor estimate` with the model's shape counts them)",
        ),
        Mode::Train => (
            "weights, gradients, FP32 master weights and AdamW states",
            "activations (`gpu-doctor estimate` with the model's shape counts them)",
        ),
        Mode::Infer => (
            "the weights",
            "the KV cache (`gpu-doctor estimate` with the model's shape counts it)",
        ),
    };
    let _ = writeln!(
        out,
        "Needs at least {}: {held} plus the CUDA context (a rule-of-thumb {} MiB), before \
         {before}.",
        gib(need),
        super::memory::CONTEXT_BYTES / MIB,
    );
}

/// The cards that hold it, one a line, and why others are not listed.
fn card_table(out: &mut String, a: &Advice) {
    let _ = writeln!(
        out,
        "\n  {:<38} {:<11} {:>6} {:>10} {:<22} {:>6}  tensor cores",
        "card", "segment", "memory", "bandwidth", "dense TFLOP/s", "TDP"
    );
    for c in &a.cards {
        let bandwidth = c
            .bandwidth_gbs
            .map_or_else(|| "?".to_string(), |b| format!("{b} GB/s"));
        let tdp = c
            .tdp_w
            .map_or_else(|| "?".to_string(), |w| format!("{w} W"));
        let _ = writeln!(
            out,
            "  {:<38} {:<11} {:>3} GB {:>10} {:<22} {:>6}  {}",
            c.name,
            c.segment,
            c.memory_gb,
            bandwidth,
            tflops(c),
            tdp,
            c.tensor_cores.as_str()
        );
    }
    if a.cards.is_empty() {
        out.push_str("  none in the table\n");
    }
    let mut foot = Vec::new();
    if a.cards_too_small > 0 {
        foot.push(format!("{} listed cards are too small", a.cards_too_small));
    }
    if a.rows_without_memory > 0 {
        foot.push(format!(
            "{} table rows have no memory figure and are not listed",
            a.rows_without_memory
        ));
    }
    if !foot.is_empty() {
        let _ = writeln!(
            out,
            "  ({}; ? = not in the table; figures are dense, never \"with sparsity\")",
            foot.join("; ")
        );
    }
}

/// One GPU of this machine: its table row, what its tensor cores take, what it can and cannot do.
fn machine_gpu(out: &mut String, g: &super::advise::MachineGpu) {
    let mut line = format!(
        "  GPU {}  {}",
        g.index,
        clean(g.name.as_deref().unwrap_or("unknown"))
    );
    let mut facts = Vec::new();
    if let Some(row) = &g.table_row {
        facts.push(format!("table: {}", clean(row)));
    }
    if let Some(cc) = &g.compute_capability {
        facts.push(format!("cc {}", clean(cc)));
    }
    if let Some(m) = g.memory_mib {
        facts.push(format!("{m} MiB"));
    }
    if let Some(fits) = g.fits {
        facts.push(
            if fits {
                "the model fits"
            } else {
                "the model does not fit"
            }
            .to_string(),
        );
    }
    if !facts.is_empty() {
        let _ = write!(line, " ({})", facts.join(", "));
    }
    let _ = writeln!(out, "{line}");
    if !g.formats.is_empty() {
        let formats: Vec<String> = g
            .formats
            .iter()
            .map(|f| format!("{} {}", f.format, f.tensor_cores.as_str()))
            .collect();
        let _ = writeln!(out, "    tensor cores: {}", formats.join(", "));
    }
    for c in &g.can {
        let _ = writeln!(out, "    can:    {c}");
    }
    for c in &g.cannot {
        let _ = writeln!(out, "    cannot: {c}");
    }
}
