//! The faces of a [`Fleet`]: text for a terminal, Markdown for an issue or a wiki page, JSON
//! for scripts (its contract is in [`super::summary`]). Pure; every machine string passes
//! [`clean`], and in Markdown is escaped too, so a host name cannot break a table.

use std::fmt::Write;

use super::hostlist::compress;
use super::spread::{Metric, Throughput};
use super::summary::{Attention, Difference, Fleet, FrameworkBuild, GpuCount, Stack, build_text};
use crate::present::paint::Paint;
use crate::report::Severity;
use crate::sanitize::clean;

/// Range pieces of a node list shown before `(+N more)`.
const NODE_PIECES: usize = 12;

/// Pretty JSON with a trailing newline; should serialising ever fail, a JSON object saying so.
#[must_use]
pub(crate) fn json(fleet: &Fleet) -> String {
    match serde_json::to_string_pretty(fleet) {
        Ok(mut s) => {
            s.push('\n');
            crate::sanitize::json_controls(s)
        }
        Err(e) => format!("{{\"error\": {:?}}}\n", e.to_string()),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// "40 nodes, 3 stacks, 4 odd ones out, 3 need attention, 5 files skipped".
fn headline(f: &Fleet) -> String {
    let c = &f.counts;
    let mut parts = vec![
        plural(c.nodes, "node", "nodes"),
        plural(c.groups, "stack", "stacks"),
    ];
    if c.odd_ones_out > 0 {
        parts.push(plural(c.odd_ones_out, "odd one out", "odd ones out"));
    }
    parts.push(if c.nodes == 0 {
        // Nothing read is no verdict (and exit 3), never "healthy".
        "no report read".to_string()
    } else if c.attention == 0 {
        "all healthy".to_string()
    } else {
        format!(
            "{} {}",
            c.attention,
            if c.attention == 1 {
                "needs attention"
            } else {
                "need attention"
            }
        )
    });
    if c.fewer_gpus > 0 {
        parts.push(plural(
            c.fewer_gpus,
            "node with fewer GPUs than its peers",
            "nodes with fewer GPUs than their peers",
        ));
    }
    if c.interconnect > 0 {
        parts.push(plural(
            c.interconnect,
            "node wired otherwise than its peers",
            "nodes wired otherwise than their peers",
        ));
    }
    if c.duplicates > 0 {
        parts.push(plural(
            c.duplicates,
            "duplicate report",
            "duplicate reports",
        ));
    }
    if c.skipped > 0 {
        parts.push(plural(c.skipped, "file skipped", "files skipped"));
    }
    parts.join(", ")
}

fn or_unknown(v: Option<&String>) -> String {
    v.map_or_else(|| "unknown".to_string(), |s| clean(s))
}

fn versions(list: &[Option<String>]) -> String {
    if list.is_empty() {
        return "none".to_string();
    }
    list.iter()
        .map(|v| v.as_deref().map_or_else(|| "unknown".to_string(), clean))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One entry per Python environment: "/opt/venv: torch 2.5.1 (CUDA 12.4), jax ...".
fn framework_lines(frameworks: &[FrameworkBuild]) -> Vec<String> {
    let mut lines: Vec<(String, Vec<String>)> = Vec::new();
    for f in frameworks {
        let item = format!("{} {}", clean(&f.name), clean(&build_text(f)));
        match lines.last_mut() {
            Some((env, items)) if *env == f.env => items.push(item),
            _ => lines.push((f.env.clone(), vec![item])),
        }
    }
    lines
        .into_iter()
        .map(|(env, items)| format!("{}: {}", clean(&env), items.join(", ")))
        .collect()
}

fn gpu_models(models: &[GpuCount]) -> String {
    if models.is_empty() {
        return "no GPU".to_string();
    }
    models
        .iter()
        .map(|m| format!("{} × {}", m.count, clean(&m.name)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "driver", "driver CUDA", "torch in /opt/venv".
fn field_label(field: &str) -> String {
    match field {
        "driver" => "driver".to_string(),
        "driver_cuda" => "driver CUDA".to_string(),
        "toolkits" => "toolkits".to_string(),
        "cudnn" => "cuDNN".to_string(),
        "nccl" => "NCCL".to_string(),
        "rocm" => "ROCm".to_string(),
        // A framework's field is its subject's text (`framework_subject`).
        other => match crate::report::Subject::from_text(other).as_framework() {
            Some((env, name)) => format!("{} in {}:", clean(name), clean(env)),
            None => clean(other),
        },
    }
}

/// A difference's value: a missing driver is unknown, a missing list or framework is none.
fn diff_value(d: &Difference, value: Option<&String>) -> String {
    match value {
        Some(v) => clean(v),
        None if d.field.starts_with("driver") => "unknown".to_string(),
        None => "none".to_string(),
    }
}

/// The problems of one node that needs attention, one line each.
fn problems(a: &Attention) -> Vec<(bool, String)> {
    let mut out: Vec<(bool, String)> = a
        .errors
        .iter()
        .map(|e| (true, format!("{}: {}", clean(&e.id), clean(&e.title))))
        .collect();
    if let Some(status) = &a.smoke_status {
        let mut line = format!("smoke test {}", clean(&status.replace('_', " ")));
        if let Some(error) = &a.smoke_error {
            let _ = write!(line, ": {}", clean(error));
        }
        out.push((false, line));
    }
    for g in &a.failed_gpus {
        let name = g
            .name
            .as_deref()
            .map(|n| format!(" ({})", clean(n)))
            .unwrap_or_default();
        out.push((
            false,
            format!("GPU {}{name}: {}", g.index, clean(&g.reason)),
        ));
    }
    out
}

fn num(v: f64) -> String {
    format!("{v:.1}")
}

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

fn majority_note(f: &Fleet) -> String {
    match f.majority {
        Some(m) if m.tied => format!(
            "compared with stack {} of {}, tied for the largest",
            m.group,
            plural(m.nodes, "node", "nodes")
        ),
        Some(m) => format!(
            "compared with stack {} of {}",
            m.group,
            plural(m.nodes, "node", "nodes")
        ),
        None => String::new(),
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

/// Machine text for a Markdown table cell: control characters gone, and every character
/// that Markdown or HTML would act on escaped (a `|` would split the cell). Text that GitHub
/// would turn into a mention, a link or an issue reference even with its characters escaped
/// (`@org/team`, `https://…`, `www.…`, `#12`, `a@b.c`) goes in a code span instead, where
/// GitHub makes none of them; a `|` in it is escaped as tables need.
#[must_use]
pub(crate) fn md(text: &str) -> String {
    let cleaned = clean(text);
    let lower = cleaned.to_ascii_lowercase();
    if cleaned.contains(['@', '#']) || lower.contains("://") || lower.contains("www.") {
        return code_span(&cleaned);
    }
    let mut out = String::with_capacity(cleaned.len());
    for c in cleaned.chars() {
        if matches!(
            c,
            '\\' | '|' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '~' | '&' | '#'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// `text` as a Markdown code span: fenced by one more backtick than its longest run of them,
/// padded with a space where it starts or ends with one, each `|` escaped for a table.
fn code_span(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with(['`', ' ']) || text.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{}{pad}{fence}", text.replace('|', "\\|"))
}

fn row(out: &mut String, cells: &[String]) {
    let _ = writeln!(out, "| {} |", cells.join(" | "));
}

fn table_head(out: &mut String, titles: &[&str]) {
    let _ = writeln!(out, "| {} |", titles.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(titles.len()));
}

/// For a GitHub issue or a wiki page: headings and tables.
#[must_use]
pub(crate) fn markdown(f: &Fleet) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# gpu-doctor fleet summary\n\n{}.", headline(f));
    markdown_groups(&mut out, f);
    markdown_odd(&mut out, f);
    markdown_attention(&mut out, f);
    if !f.fewer_gpus.is_empty() {
        let _ = writeln!(out, "\n## Fewer GPUs than their peers\n");
        table_head(
            &mut out,
            &[
                "Node",
                "GPU",
                "Count",
                "Usual",
                "Nodes with the usual count",
            ],
        );
        for g in &f.fewer_gpus {
            row(
                &mut out,
                &[
                    md(&g.node),
                    md(&g.gpu),
                    g.count.to_string(),
                    g.usual.to_string(),
                    g.nodes_with_usual.to_string(),
                ],
            );
        }
    }
    if !f.interconnect.is_empty() {
        let _ = writeln!(out, "\n## GPUs wired otherwise than their peers\n");
        table_head(
            &mut out,
            &[
                "Node",
                "GPUs",
                "Links",
                "Usual",
                "Nodes with the usual",
                "Pairs",
            ],
        );
        for w in &f.interconnect {
            row(
                &mut out,
                &[
                    md(&w.node),
                    md(&w.gpus),
                    md(&w.links),
                    md(&w.usual),
                    w.nodes_with_usual.to_string(),
                    md(&w.pairs.join(", ")),
                ],
            );
        }
    }
    markdown_throughput(&mut out, &f.throughput);
    if !f.duplicates.is_empty() {
        let _ = writeln!(out, "\n## Duplicate reports\n");
        table_head(&mut out, &["Node", "Used", "Dropped", "Why"]);
        for d in &f.duplicates {
            row(
                &mut out,
                &[md(&d.node), md(&d.kept), md(&d.dropped), md(&d.reason)],
            );
        }
    }
    if !f.skipped.is_empty() {
        let _ = writeln!(out, "\n## Skipped files\n");
        table_head(&mut out, &["File", "Reason"]);
        for s in &f.skipped {
            row(&mut out, &[md(&s.file), md(&s.reason)]);
        }
    }
    out
}

fn markdown_groups(out: &mut String, f: &Fleet) {
    if f.groups.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n## Stacks\n");
    table_head(
        out,
        &[
            "Stack",
            "Nodes",
            "Driver",
            "Driver CUDA",
            "Toolkits",
            "cuDNN",
            "NCCL",
            "Frameworks",
            "GPUs",
        ],
    );
    for g in &f.groups {
        let s = &g.stack;
        let frameworks = framework_lines(&s.frameworks);
        row(
            out,
            &[
                g.id.to_string(),
                format!(
                    "{}: {}",
                    g.nodes.len(),
                    md(&compress(&g.nodes, NODE_PIECES))
                ),
                md(&or_unknown(s.driver.as_ref())),
                md(&or_unknown(s.driver_cuda.as_ref())),
                md(&versions(&s.toolkits)),
                md(&versions(&s.cudnn)),
                md(&versions(&s.nccl)),
                if frameworks.is_empty() {
                    "none".to_string()
                } else {
                    // One Python environment a line within the cell.
                    frameworks
                        .iter()
                        .map(|t| md(t))
                        .collect::<Vec<_>>()
                        .join("<br>")
                },
                md(&gpu_models(&g.gpu_models)),
            ],
        );
    }
}

fn markdown_odd(out: &mut String, f: &Fleet) {
    if f.odd_ones_out.is_empty() {
        return;
    }
    let mut note = majority_note(f);
    if let Some(first) = note.get_mut(..1) {
        first.make_ascii_uppercase();
    }
    let _ = writeln!(out, "\n## Odd ones out\n\n{note}.\n");
    table_head(out, &["Node", "Stack", "Field", "This node", "Most nodes"]);
    for o in &f.odd_ones_out {
        for d in &o.differences {
            row(
                out,
                &[
                    md(&o.node),
                    o.group.to_string(),
                    md(field_label(&d.field).trim_end_matches(':')),
                    md(&diff_value(d, d.node.as_ref())),
                    md(&diff_value(d, d.majority.as_ref())),
                ],
            );
        }
    }
}

fn markdown_attention(out: &mut String, f: &Fleet) {
    let _ = writeln!(out, "\n## Needs attention\n");
    if f.attention.is_empty() {
        let _ = writeln!(out, "No node has an error finding or a failed smoke test.");
        return;
    }
    table_head(out, &["Node", "Problem", "Detail"]);
    for a in &f.attention {
        for (finding, line) in problems(a) {
            let kind = if finding {
                "error finding"
            } else {
                "smoke test"
            };
            row(out, &[md(&a.node), kind.to_string(), md(&line)]);
        }
    }
}

fn markdown_throughput(out: &mut String, t: &Throughput) {
    if t.models.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n## Throughput by GPU model\n\nFrom the smoke tests; a GPU below {}% of its model's \
         median is an outlier.\n",
        t.outlier_below_pct_of_median
    );
    table_head(
        out,
        &["GPU", "Rate", "Measured", "Min", "Median", "Max", "Slowest"],
    );
    for m in &t.models {
        for metric in Metric::ALL {
            let Some(s) = m.get(metric) else { continue };
            let pct = s
                .slowest
                .pct_of_median
                .map(|p| format!(" ({p:.1}%)"))
                .unwrap_or_default();
            row(
                out,
                &[
                    md(&m.gpu),
                    format!("{} {}", metric.label(), metric.unit()),
                    s.measured.to_string(),
                    num(s.min),
                    num(s.median),
                    num(s.max),
                    format!("{} GPU {}{pct}", md(&s.slowest.node), s.slowest.index),
                ],
            );
        }
    }
    if !t.outliers.is_empty() {
        let _ = writeln!(out, "\n### Outliers\n");
        table_head(
            out,
            &[
                "Node",
                "GPU",
                "Model",
                "Rate",
                "Value",
                "Median",
                "% of median",
            ],
        );
        for o in &t.outliers {
            row(
                out,
                &[
                    md(&o.node),
                    o.index.to_string(),
                    md(&o.gpu),
                    format!("{} {}", o.metric.label(), o.metric.unit()),
                    num(o.value),
                    num(o.median),
                    format!("{:.1}", o.pct_of_median),
                ],
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_cells_cannot_split_or_render_html() {
        assert_eq!(md("a|b"), "a\\|b");
        assert_eq!(md("<img src=x>"), "\\<img src=x\\>");
        assert_eq!(md("evil\u{1b}[31m\nrow"), "evil?\\[31m?row");
        assert_eq!(md("node_01"), "node\\_01");
    }

    #[test]
    fn mentions_links_and_references_go_in_code_spans() {
        assert_eq!(md("@org/team"), "`@org/team`");
        assert_eq!(md("https://evil.example/x"), "`https://evil.example/x`");
        assert_eq!(md("WWW.evil.example"), "`WWW.evil.example`");
        assert_eq!(md("fixes #12"), "`fixes #12`");
        assert_eq!(md("a`@b|c"), "``a`@b\\|c``");
        assert_eq!(md("`@x"), "`` `@x ``");
    }

    #[test]
    fn framework_fields_read_as_name_in_env() {
        assert_eq!(
            field_label("framework:/opt/a:b:torch"),
            "torch in /opt/a:b:"
        );
        assert_eq!(field_label("driver_cuda"), "driver CUDA");
    }
}

#[cfg(test)]
mod props {
    use super::md;
    use crate::present::props::{config, hostile, non_printing};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(config())]

    #[test]
    fn a_markdown_cell_stays_one_cell_and_links_nothing(s in hostile()) {
        let cell = md(&s);
        prop_assert!(!cell.chars().any(non_printing), "{cell:?}");
        prop_assert!(!cell.contains('\n'));
        // The table parser's view (GFM): a `|` not after a backslash splits the row.
        let mut escaped = false;
        for c in cell.chars() {
            prop_assert!(escaped || c != '|', "unescaped | in {cell:?}");
            escaped = !escaped && c == '\\';
        }
        let spanned = cell.starts_with('`');
        for active in ["@", "://", "www.", "#"] {
            if cell.to_ascii_lowercase().contains(active) {
                prop_assert!(spanned, "{active} outside a code span: {cell:?}");
            }
        }
        if !spanned {
            let mut escaped = false;
            for c in cell.chars() {
                prop_assert!(escaped || !"<>&`[]*_".contains(c), "{c} unescaped in {cell:?}");
                escaped = !escaped && c == '\\';
            }
        }
    }
    }
}
