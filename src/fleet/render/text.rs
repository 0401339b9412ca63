//! The fleet summary for a terminal: sections of aligned lines, painted where the terminal
//! takes colour.

use std::fmt::Write;

use crate::fleet::hostlist::compress;
use crate::fleet::spread::{Metric, Throughput};
use crate::fleet::summary::{Fleet, Stack};
use crate::present::paint::Paint;
use crate::report::Severity;
use crate::sanitize::clean;

use super::{
    NODE_PIECES, diff_value, field_label, framework_lines, gpu_models, headline, majority_note,
    num, or_unknown, plural, problems, versions,
};

/// For a terminal (or a log): short sections, colour from `paint`.
#[must_use]
pub(crate) fn text(f: &Fleet, paint: Paint) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", paint.heading(&format!("Fleet: {}", headline(f))));
    text_groups(&mut out, f, paint);
    text_odd(&mut out, f, paint);
    text_attention(&mut out, f, paint);
    if !f.fewer_gpus.is_empty() {
        section(
            &mut out,
            paint,
            &format!("Fewer GPUs than their peers ({})", f.fewer_gpus.len()),
        );
        for g in &f.fewer_gpus {
            let _ = writeln!(
                out,
                "  {}: {} × {} (usual: {}, on {} nodes)",
                clean(&g.node),
                g.count,
                clean(&g.gpu),
                g.usual,
                g.nodes_with_usual
            );
        }
    }
    if !f.interconnect.is_empty() {
        section(
            &mut out,
            paint,
            &format!(
                "GPUs wired otherwise than their peers ({})",
                f.interconnect.len()
            ),
        );
        for w in &f.interconnect {
            let _ = writeln!(
                out,
                "  {}: {}, links {} (usual: {}, on {} nodes){}",
                clean(&w.node),
                clean(&w.gpus),
                clean(&w.links),
                clean(&w.usual),
                w.nodes_with_usual,
                if w.pairs.is_empty() {
                    String::new()
                } else {
                    format!(": {}", clean(&w.pairs.join(", ")))
                }
            );
        }
    }
    text_throughput(&mut out, &f.throughput, paint);
    if !f.duplicates.is_empty() {
        section(
            &mut out,
            paint,
            &format!("Duplicate reports ({})", f.duplicates.len()),
        );
        for d in &f.duplicates {
            let _ = writeln!(
                out,
                "  {}: used {}, dropped {}: {}",
                clean(&d.node),
                clean(&d.kept),
                clean(&d.dropped),
                clean(&d.reason)
            );
        }
    }
    if !f.skipped.is_empty() {
        section(
            &mut out,
            paint,
            &format!("Skipped files ({})", f.skipped.len()),
        );
        for s in &f.skipped {
            let _ = writeln!(out, "  {}: {}", clean(&s.file), clean(&s.reason));
        }
    }
    out
}

fn section(out: &mut String, paint: Paint, title: &str) {
    let _ = writeln!(out, "\n{}", paint.heading(title));
}

fn text_groups(out: &mut String, f: &Fleet, paint: Paint) {
    if f.groups.is_empty() {
        return;
    }
    section(out, paint, &format!("Stacks ({})", f.groups.len()));
    for g in &f.groups {
        let _ = writeln!(
            out,
            "  stack {}: {}: {}",
            g.id,
            plural(g.nodes.len(), "node", "nodes"),
            clean(&compress(&g.nodes, NODE_PIECES))
        );
        text_stack(out, &g.stack);
        let _ = writeln!(out, "    GPUs        {}", gpu_models(&g.gpu_models));
    }
}

fn text_stack(out: &mut String, s: &Stack) {
    let _ = writeln!(
        out,
        "    driver      {} (CUDA {})",
        or_unknown(s.driver.as_ref()),
        or_unknown(s.driver_cuda.as_ref())
    );
    let _ = writeln!(out, "    toolkits    {}", versions(&s.toolkits));
    let _ = writeln!(out, "    cuDNN       {}", versions(&s.cudnn));
    let _ = writeln!(out, "    NCCL        {}", versions(&s.nccl));
    if let Some(rocm) = &s.rocm {
        let _ = writeln!(out, "    ROCm        {rocm}");
    }
    let lines = framework_lines(&s.frameworks);
    if lines.is_empty() {
        let _ = writeln!(out, "    frameworks  none");
    }
    for (i, line) in lines.iter().enumerate() {
        let label = if i == 0 { "frameworks" } else { "" };
        let _ = writeln!(out, "    {label:<10}  {line}");
    }
}

fn text_odd(out: &mut String, f: &Fleet, paint: Paint) {
    if f.odd_ones_out.is_empty() {
        return;
    }
    section(
        out,
        paint,
        &format!(
            "Odd ones out ({}, {})",
            f.odd_ones_out.len(),
            majority_note(f)
        ),
    );
    for o in &f.odd_ones_out {
        let _ = writeln!(out, "  {} (stack {})", clean(&o.node), o.group);
        for d in &o.differences {
            let _ = writeln!(
                out,
                "    {} {} (most: {})",
                field_label(&d.field),
                diff_value(d, d.node.as_ref()),
                diff_value(d, d.majority.as_ref())
            );
        }
    }
}

fn text_attention(out: &mut String, f: &Fleet, paint: Paint) {
    if f.attention.is_empty() {
        if f.counts.nodes > 0 {
            let _ = writeln!(
                out,
                "\n{}",
                paint.good(&format!(
                    "All {} healthy: no error finding, no failed smoke test.",
                    plural(f.counts.nodes, "node", "nodes")
                ))
            );
        }
        return;
    }
    section(
        out,
        paint,
        &format!("Needs attention ({})", f.attention.len()),
    );
    for a in &f.attention {
        let _ = writeln!(out, "  {} ({})", clean(&a.node), clean(&a.file));
        for (finding, line) in problems(a) {
            let mark = if finding {
                paint.severity(Severity::Error, "[error]")
            } else {
                paint.bad("[failed]")
            };
            let _ = writeln!(out, "    {mark} {line}");
        }
    }
}

fn text_throughput(out: &mut String, t: &Throughput, paint: Paint) {
    if t.models.is_empty() {
        return;
    }
    section(
        out,
        paint,
        &format!(
            "Throughput by GPU model (outliers: below {}% of the model's median)",
            t.outlier_below_pct_of_median
        ),
    );
    for m in &t.models {
        let _ = writeln!(
            out,
            "  {}: {} measured",
            clean(&m.gpu),
            plural(m.gpus_measured, "GPU", "GPUs")
        );
        for metric in Metric::ALL {
            let Some(s) = m.get(metric) else { continue };
            let pct = s
                .slowest
                .pct_of_median
                .map(|p| format!(" at {p:.1}%"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    {:<17} min {}  median {}  max {} {} over {}; slowest {} GPU {}{pct}",
                metric.label(),
                num(s.min),
                num(s.median),
                num(s.max),
                metric.unit(),
                s.measured,
                clean(&s.slowest.node),
                s.slowest.index
            );
        }
    }
    if !t.outliers.is_empty() {
        let _ = writeln!(
            out,
            "  {}",
            paint.bad(&format!("Outliers ({})", t.outliers.len()))
        );
        for o in &t.outliers {
            let _ = writeln!(
                out,
                "    {} GPU {} ({}): {} {} {}, {:.1}% of the median {}",
                clean(&o.node),
                o.index,
                clean(&o.gpu),
                o.metric.label(),
                num(o.value),
                o.metric.unit(),
                o.pct_of_median,
                num(o.median)
            );
        }
    }
}
