//! The faces of a [`Fleet`]: text for a terminal, Markdown for an issue or a wiki page, JSON
//! for scripts (its contract is in [`super::summary`]). Pure; every machine string passes
//! [`clean`], and in Markdown is escaped too, so a host name cannot break a table.
//!
//! One file per face that has a layout of its own ([`mod@text`], [`mod@markdown`]); this file holds
//! JSON and the wording both layouts share.

mod markdown;
#[cfg(test)]
mod tests;
mod text;

use std::fmt::Write;

use super::summary::{Attention, Difference, Fleet, FrameworkBuild, GpuCount, build_text};
use crate::sanitize::clean;

pub(crate) use markdown::markdown;
pub(crate) use text::text;

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
