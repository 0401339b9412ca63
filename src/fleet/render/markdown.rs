//! The fleet summary in Markdown for an issue or a wiki page: tables whose cells escape
//! every machine string, so a host name cannot break them.

use std::fmt::Write;

use crate::fleet::hostlist::compress;
use crate::fleet::spread::{Metric, Throughput};
use crate::fleet::summary::Fleet;
use crate::sanitize::clean;

use super::{
    NODE_PIECES, diff_value, field_label, framework_lines, gpu_models, headline, majority_note,
    num, or_unknown, problems, versions,
};

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
