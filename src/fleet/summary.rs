//! The fleet summary: pure grouping over the reports read (one node each), the model every
//! face of `report merge` renders. Depends only on [`super::view`], [`super::load`]'s result
//! types, [`super::spread`], [`super::gpus`] and [`super::interconnect`].
//!
//! # JSON contract (`report merge --json`)
//! [`Fleet`] serialised as it is, with its own [`FLEET_SCHEMA_VERSION`] (bumped when a key
//! changes meaning or disappears; additions keep it). Every list is sorted, so the same
//! reports give the same bytes whatever order they were named in:
//! - `fleet_schema_version`, `tool {name, version}`;
//! - `healthy`: no node has an error finding or a failed smoke test (the exit code's 0 when
//!   `fewer_gpus` is empty too);
//! - `counts {nodes, groups, odd_ones_out, attention, fewer_gpus, interconnect, duplicates,
//!   skipped}`;
//! - `majority {group, nodes, tied}`: the largest group (null with no node), the reference
//!   for the odd ones out; `tied` when another group is as large, and then the first in
//!   group order is the reference;
//! - `groups[] {id, stack, nodes[], gpu_models[] {name, count}}`: nodes with an identical
//!   [`Stack`], largest first; of equal sizes, the one with fewer nodes needing attention
//!   first, then in stack order; `id` counts from 1;
//! - `odd_ones_out[] {node, group, differences[] {field, node, majority}}`: nodes outside the
//!   majority group, field by field (`driver`, `driver_cuda`, `toolkits`, `cudnn`, `nccl`,
//!   `framework:<env>:<name>`), values as display text, null when absent or empty;
//! - `attention[] {node, file, errors[] {id, title}, smoke_status, smoke_error,
//!   failed_gpus[] {index, name, reason}}`: nodes with an error finding or a failed smoke;
//! - `fewer_gpus[] {node, gpu, count, usual, nodes_with_usual}` ([`super::gpus`]): nodes
//!   whose driver shows fewer GPUs of a model than most nodes with that model (a GPU lost
//!   from the bus or the driver); not part of `healthy`, but they make the exit code 1
//!   unless `--allow-missing-gpus`;
//! - `interconnect[] {node, gpus, links, usual, nodes_with_usual, pairs[]}`
//!   ([`super::interconnect`]): nodes whose GPU pairs are linked otherwise (`nvidia-smi topo -m`)
//!   than most nodes of the same GPU model and count (a degraded NVLink, a GPU on PCIe only);
//!   informational, not part of `healthy` or the exit code;
//! - `throughput` ([`super::spread::Throughput`]): per GPU model, the spread of the smoke
//!   test's measurements, and the GPUs well below their model's median;
//! - `nodes[] {name, hostname, file, generated_at, tool_version, group, gpus[], healthy,
//!   smoke_status}`: every node merged, by name;
//! - `duplicates[] {node, kept, kept_generated_at, dropped, dropped_generated_at, reason}`:
//!   reports passed over because the same node had a newer one;
//! - `skipped[] {file, kind, reason}`: files not merged (`kind`: `not_a_report`,
//!   `newer_schema`, `older_schema`, `corrupt`, `too_large`, `unreadable`, `not_read`: the
//!   merge's time budget or its limits on what is kept were met first).
//!
//! Machine strings (host names, versions, titles) are kept as the reports hold them; the text
//! and Markdown faces clean them.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::load::{Inputs, Loaded, Skipped};
use super::spread::{self, Throughput};
use super::view::NodeReport;
use crate::report::smoke::SmokeStatus;

/// The version of the fleet summary's JSON, independent of the node report's.
pub(crate) const FLEET_SCHEMA_VERSION: u32 = 1;

/// The whole fleet summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Fleet {
    pub fleet_schema_version: u32,
    pub tool: Tool,
    pub healthy: bool,
    pub counts: Counts,
    pub majority: Option<Majority>,
    pub groups: Vec<Group>,
    pub odd_ones_out: Vec<OddOne>,
    pub attention: Vec<Attention>,
    pub fewer_gpus: Vec<super::gpus::FewerGpus>,
    pub interconnect: Vec<super::interconnect::OddInterconnect>,
    pub throughput: Throughput,
    pub nodes: Vec<NodeSummary>,
    pub duplicates: Vec<Duplicate>,
    pub skipped: Vec<Skipped>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Tool {
    pub name: &'static str,
    pub version: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    pub nodes: usize,
    pub groups: usize,
    pub odd_ones_out: usize,
    pub attention: usize,
    pub fewer_gpus: usize,
    pub interconnect: usize,
    pub duplicates: usize,
    pub skipped: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Majority {
    pub group: usize,
    pub nodes: usize,
    pub tied: bool,
}

/// What makes two nodes run the same software: driver, CUDA libraries and framework builds.
/// Lists are sets (sorted, each version once); an entry of null is a copy whose version
/// nothing said, which is not the same as no copy.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct Stack {
    pub driver: Option<String>,
    /// The highest CUDA the driver supports (`driver.cuda_version`).
    pub driver_cuda: Option<String>,
    pub toolkits: Vec<Option<String>>,
    pub cudnn: Vec<Option<String>>,
    /// NCCL belongs here: nodes of one job that load different NCCL builds can hang or fail
    /// at the first collective.
    pub nccl: Vec<Option<String>>,
    pub frameworks: Vec<FrameworkBuild>,
    /// The ROCm `/opt/rocm` points at (`kernel.rocm_version`); absent on nodes without ROCm.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rocm: Option<String>,
}

/// One framework build in one Python environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct FrameworkBuild {
    pub env: String,
    pub name: String,
    pub version: Option<String>,
    /// The CUDA it was built for; null for a CPU or ROCm build.
    pub cuda: Option<String>,
    /// The ROCm a ROCm build was made with; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rocm: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Group {
    pub id: usize,
    pub stack: Stack,
    pub nodes: Vec<String>,
    pub gpu_models: Vec<GpuCount>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub(crate) struct GpuCount {
    /// The GPU's name, or "unknown GPU".
    pub name: String,
    pub count: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct OddOne {
    pub node: String,
    pub group: usize,
    pub differences: Vec<Difference>,
}

/// One field where a node's stack differs from the majority's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Difference {
    pub field: String,
    pub node: Option<String>,
    pub majority: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Attention {
    pub node: String,
    pub file: String,
    pub errors: Vec<FindingRef>,
    /// The smoke test's status when it did not pass (or a GPU failed); null otherwise.
    pub smoke_status: Option<String>,
    pub smoke_error: Option<String>,
    pub failed_gpus: Vec<FailedGpu>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct FindingRef {
    pub id: String,
    pub title: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct FailedGpu {
    pub index: u64,
    pub name: Option<String>,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct NodeSummary {
    pub name: String,
    pub hostname: Option<String>,
    pub file: String,
    pub generated_at: Option<String>,
    pub tool_version: Option<String>,
    pub group: usize,
    pub gpus: Vec<String>,
    pub healthy: bool,
    /// Null for a `doctor` report (no smoke test).
    pub smoke_status: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Duplicate {
    pub node: String,
    pub kept: String,
    pub kept_generated_at: Option<String>,
    pub dropped: String,
    pub dropped_generated_at: Option<String>,
    pub reason: String,
}

/// A report with the node it speaks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub name: String,
    pub file: String,
    pub report: NodeReport,
}

/// Name for a GPU whose report does not name it.
pub(crate) const UNKNOWN_GPU: &str = "unknown GPU";

/// The summary of everything read.
#[must_use]
pub(crate) fn summarize(inputs: &Inputs) -> Fleet {
    let (nodes, duplicates) = dedupe(inputs.reports.clone());
    let attention: Vec<Attention> = nodes.iter().filter_map(attention).collect();
    let sick: BTreeSet<&str> = attention.iter().map(|a| a.node.as_str()).collect();
    let groups = group(&nodes, &sick);
    let group_of: BTreeMap<&str, usize> = groups
        .iter()
        .flat_map(|g| g.nodes.iter().map(move |n| (n.as_str(), g.id)))
        .collect();
    let majority = groups.first().map(|first| Majority {
        group: first.id,
        nodes: first.nodes.len(),
        tied: groups
            .get(1)
            .is_some_and(|g| g.nodes.len() == first.nodes.len()),
    });
    let odd_ones_out = match groups.first() {
        Some(first) => odd_ones(&nodes, &group_of, first),
        None => Vec::new(),
    };
    let summaries: Vec<NodeSummary> = nodes
        .iter()
        .map(|n| NodeSummary {
            name: n.name.clone(),
            hostname: n.report.host.hostname.clone(),
            file: n.file.clone(),
            generated_at: n.report.generated_at.clone(),
            tool_version: n.report.tool.version.clone(),
            group: group_of.get(n.name.as_str()).copied().unwrap_or(0),
            gpus: n
                .report
                .gpus
                .iter()
                .map(|g| g.name.clone().unwrap_or_else(|| UNKNOWN_GPU.to_string()))
                .collect(),
            healthy: !sick.contains(n.name.as_str()),
            smoke_status: n.report.smoke.as_ref().map(smoke_status_text),
        })
        .collect();
    let fewer_gpus = super::gpus::fewer_gpus(&nodes);
    let interconnect = super::interconnect::odd_interconnects(&nodes);
    Fleet {
        fleet_schema_version: FLEET_SCHEMA_VERSION,
        tool: Tool {
            name: "gpu-doctor",
            version: env!("CARGO_PKG_VERSION"),
        },
        healthy: attention.is_empty(),
        counts: Counts {
            nodes: nodes.len(),
            groups: groups.len(),
            odd_ones_out: odd_ones_out.len(),
            attention: attention.len(),
            fewer_gpus: fewer_gpus.len(),
            interconnect: interconnect.len(),
            duplicates: duplicates.len(),
            skipped: inputs.skipped.len(),
        },
        majority,
        throughput: spread::throughput(&nodes),
        groups,
        odd_ones_out,
        attention,
        fewer_gpus,
        interconnect,
        nodes: summaries,
        duplicates,
        skipped: inputs.skipped.clone(),
    }
}

/// The node a report speaks for: its host name, else its file's stem (`node07.json`).
#[must_use]
pub(crate) fn node_name(file: &str, report: &NodeReport) -> String {
    match report.host.hostname.as_deref().map(str::trim) {
        Some(name) if !name.is_empty() => name.to_string(),
        _ => std::path::Path::new(file)
            .file_stem()
            .map_or_else(|| file.to_string(), |s| s.to_string_lossy().into_owned()),
    }
}

/// `generated_at` as an instant, when it is an RFC 3339 time (`2026-12-01T10:59:07Z`, or with
/// an offset or fractions of a second: `2026-12-01T12:59:07+02:00`).
#[must_use]
pub(crate) fn timestamp(report: &NodeReport) -> Option<jiff::Timestamp> {
    crate::date::parse_timestamp(report.generated_at.as_deref()?)
}

/// One report per node: the newest by `generated_at` (a known time beats an unknown one);
/// with equal or unknown times, the first by file name. Nodes come back sorted by name.
#[must_use]
pub(crate) fn dedupe(reports: Vec<Loaded>) -> (Vec<Node>, Vec<Duplicate>) {
    let mut by_name: BTreeMap<String, Vec<Loaded>> = BTreeMap::new();
    for loaded in reports {
        by_name
            .entry(node_name(&loaded.file, &loaded.report))
            .or_default()
            .push(loaded);
    }
    let mut nodes = Vec::new();
    let mut duplicates = Vec::new();
    for (name, mut copies) in by_name {
        copies.sort_by(|a, b| {
            timestamp(&b.report)
                .cmp(&timestamp(&a.report))
                .then_with(|| a.file.cmp(&b.file))
        });
        let mut copies = copies.into_iter();
        let Some(kept) = copies.next() else { continue };
        for dropped in copies {
            let text = |r: &NodeReport| r.generated_at.as_deref().unwrap_or_default().to_string();
            let (k, d) = (text(&kept.report), text(&dropped.report));
            let reason = match (timestamp(&kept.report), timestamp(&dropped.report)) {
                (Some(kt), Some(dt)) if kt != dt => format!("older ({d}; kept {k})"),
                (Some(_), None) => format!("no usable generated_at (kept {k})"),
                _ => "no newer by generated_at; kept the first by file name".to_string(),
            };
            duplicates.push(Duplicate {
                node: name.clone(),
                kept: kept.file.clone(),
                kept_generated_at: kept.report.generated_at.clone(),
                dropped: dropped.file,
                dropped_generated_at: dropped.report.generated_at,
                reason,
            });
        }
        nodes.push(Node {
            name: name.clone(),
            file: kept.file,
            report: kept.report,
        });
    }
    (nodes, duplicates)
}

/// A node's stack.
#[must_use]
pub(crate) fn stack(report: &NodeReport) -> Stack {
    fn versions<'a>(items: impl Iterator<Item = &'a Option<String>>) -> Vec<Option<String>> {
        let set: BTreeSet<Option<String>> = items.cloned().collect();
        set.into_iter().collect()
    }
    let frameworks: BTreeSet<FrameworkBuild> = report
        .python_envs
        .iter()
        .flat_map(|env| {
            env.frameworks.iter().map(|f| FrameworkBuild {
                env: env.path.clone(),
                name: f.name.clone(),
                version: f.version.clone(),
                cuda: f.cuda.clone(),
                rocm: f.rocm.clone(),
            })
        })
        .collect();
    Stack {
        driver: report.driver.version.clone(),
        driver_cuda: report.driver.cuda_version.clone(),
        toolkits: versions(report.toolkits.iter().map(|t| &t.version)),
        cudnn: versions(report.libraries.cudnn.iter().map(|l| &l.version)),
        nccl: versions(report.libraries.nccl.iter().map(|l| &l.version)),
        frameworks: frameworks.into_iter().collect(),
        rocm: report.kernel.rocm_version.clone(),
    }
}

/// Nodes of identical stacks: largest group first; among groups of one size, those with
/// fewer nodes in `sick` (needing attention) first, so that a tie for the largest group is
/// broken towards a healthy stack as the reference; then in stack order.
#[must_use]
pub(crate) fn group(nodes: &[Node], sick: &BTreeSet<&str>) -> Vec<Group> {
    let mut by_stack: BTreeMap<Stack, Vec<&Node>> = BTreeMap::new();
    for node in nodes {
        by_stack.entry(stack(&node.report)).or_default().push(node);
    }
    let mut groups: Vec<(Stack, Vec<&Node>)> = by_stack.into_iter().collect();
    let sick_in = |members: &[&Node]| {
        members
            .iter()
            .filter(|n| sick.contains(n.name.as_str()))
            .count()
    };
    // Stable: otherwise equal groups keep the stack order of the map.
    groups.sort_by(|a, b| {
        b.1.len()
            .cmp(&a.1.len())
            .then_with(|| sick_in(&a.1).cmp(&sick_in(&b.1)))
    });
    groups
        .into_iter()
        .enumerate()
        .map(|(i, (stack, members))| {
            let mut models: BTreeMap<String, usize> = BTreeMap::new();
            for gpu in members.iter().flat_map(|n| &n.report.gpus) {
                let name = gpu.name.clone().unwrap_or_else(|| UNKNOWN_GPU.to_string());
                *models.entry(name).or_default() += 1;
            }
            Group {
                id: i + 1,
                stack,
                nodes: members.iter().map(|n| n.name.clone()).collect(),
                gpu_models: models
                    .into_iter()
                    .map(|(name, count)| GpuCount { name, count })
                    .collect(),
            }
        })
        .collect()
}

fn odd_ones(nodes: &[Node], group_of: &BTreeMap<&str, usize>, majority: &Group) -> Vec<OddOne> {
    nodes
        .iter()
        .filter_map(|n| {
            let group = group_of.get(n.name.as_str()).copied()?;
            (group != majority.id).then(|| OddOne {
                node: n.name.clone(),
                group,
                differences: differences(&stack(&n.report), &majority.stack),
            })
        })
        .collect()
}

/// Field by field, what `node` has that `majority` has not.
#[must_use]
pub(crate) fn differences(node: &Stack, majority: &Stack) -> Vec<Difference> {
    let mut out = Vec::new();
    let mut field = |name: &str, n: Option<String>, m: Option<String>| {
        if n != m {
            out.push(Difference {
                field: name.to_string(),
                node: n,
                majority: m,
            });
        }
    };
    field("driver", node.driver.clone(), majority.driver.clone());
    field(
        "driver_cuda",
        node.driver_cuda.clone(),
        majority.driver_cuda.clone(),
    );
    field("toolkits", list(&node.toolkits), list(&majority.toolkits));
    field("cudnn", list(&node.cudnn), list(&majority.cudnn));
    field("nccl", list(&node.nccl), list(&majority.nccl));
    field("rocm", node.rocm.clone(), majority.rocm.clone());
    let (n, m) = (builds(&node.frameworks), builds(&majority.frameworks));
    let keys: BTreeSet<&(String, String)> = n.keys().chain(m.keys()).collect();
    for key in keys {
        let (env, name) = key;
        field(
            &crate::report::framework_subject(env, name).to_string(),
            n.get(key).cloned(),
            m.get(key).cloned(),
        );
    }
    out
}

/// A version set as text ("9.1.0, 9.19.0"); null when empty.
fn list(versions: &[Option<String>]) -> Option<String> {
    (!versions.is_empty()).then(|| {
        versions
            .iter()
            .map(|v| v.as_deref().unwrap_or("unknown"))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// (env, framework) -> its builds as text ("2.5.1+cu124 (CUDA 12.4)").
fn builds(frameworks: &[FrameworkBuild]) -> BTreeMap<(String, String), String> {
    let mut out: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for f in frameworks {
        out.entry((f.env.clone(), f.name.clone()))
            .or_default()
            .push(build_text(f));
    }
    out.into_iter().map(|(k, v)| (k, v.join(", "))).collect()
}

/// "2.5.1+cu124 (CUDA 12.4)", "2.5.1 (no CUDA)".
#[must_use]
pub(crate) fn build_text(f: &FrameworkBuild) -> String {
    let version = f.version.as_deref().unwrap_or("unknown version");
    match (&f.cuda, &f.rocm) {
        (Some(cuda), _) => format!("{version} (CUDA {cuda})"),
        (None, Some(rocm)) => format!("{version} (ROCm {rocm})"),
        (None, None) => format!("{version} (no CUDA)"),
    }
}

/// What needs a person on this node: error findings, a smoke test that did not pass.
fn attention(node: &Node) -> Option<Attention> {
    let errors: Vec<FindingRef> = node
        .report
        .findings
        .iter()
        .filter(|f| f.severity == "error")
        .map(|f| FindingRef {
            id: f.id.clone(),
            title: f.title.clone(),
        })
        .collect();
    let smoke = node.report.smoke.as_ref();
    let mut failed_gpus: Vec<FailedGpu> = smoke
        .map(|s| {
            s.devices
                .iter()
                .filter(|d| d.passed == Some(false))
                .map(|d| FailedGpu {
                    index: d.index,
                    name: d.name.clone(),
                    reason: device_reason(d),
                })
                .collect()
        })
        .unwrap_or_default();
    failed_gpus.sort_by_key(|g| g.index);
    let smoke_failed = smoke.is_some_and(|s| s.status != Some(SmokeStatus::Passed));
    if errors.is_empty() && failed_gpus.is_empty() && !smoke_failed {
        return None;
    }
    let smoke = smoke.filter(|_| smoke_failed || !failed_gpus.is_empty());
    Some(Attention {
        node: node.name.clone(),
        file: node.file.clone(),
        errors,
        smoke_status: smoke.map(smoke_status_text),
        smoke_error: smoke.and_then(|s| s.error.clone()),
        failed_gpus,
    })
}

/// A node's smoke status as the summary shows it: as the report spelt it, "unknown" when the
/// report has none.
fn smoke_status_text(smoke: &super::view::Smoke) -> String {
    smoke
        .status
        .as_ref()
        .map_or_else(|| "unknown".to_string(), |s| s.as_str().to_string())
}

/// Why a GPU's smoke test failed, in the words of its results.
fn device_reason(d: &super::view::Device) -> String {
    if let Some(e) = &d.error {
        return format!("{}: {} ({})", e.call, e.name, e.message);
    }
    if let Some(m) = d.matmul.as_ref().filter(|m| m.passed == Some(false)) {
        return format!(
            "matmul result wrong ({} wrong, {} unwritten elements, max relative error {})",
            m.wrong_elements.unwrap_or(0),
            m.unwritten_elements.unwrap_or(0),
            m.max_rel_error
                .map_or_else(|| "unknown".to_string(), |e| format!("{e:.3e}"))
        );
    }
    if let Some(m) = d.memory.as_ref().filter(|m| m.passed == Some(false)) {
        return format!(
            "memory check found {} errors",
            m.errors
                .map_or_else(|| "unknown".to_string(), |e| e.to_string())
        );
    }
    "failed (no reason given)".to_string()
}

#[cfg(test)]
mod tests {
    use super::super::view::{self, Versioned};
    use super::*;

    /// A report of one node with a driver and a torch build.
    fn report(host: &str, driver: &str, torch: &str) -> NodeReport {
        NodeReport {
            schema_version: 1,
            host: view::Host {
                hostname: Some(host.to_string()),
            },
            driver: view::Driver {
                version: Some(driver.to_string()),
                cuda_version: Some("13.0".to_string()),
            },
            gpus: vec![view::Gpu {
                index: 0,
                name: Some("NVIDIA H200".to_string()),
            }],
            libraries: view::Libraries {
                cudnn: vec![
                    Versioned {
                        version: Some("9.19.0".into()),
                    },
                    Versioned {
                        version: Some("9.19.0".into()),
                    },
                ],
                nccl: vec![],
            },
            python_envs: vec![view::PythonEnv {
                path: "/opt/venv".into(),
                frameworks: vec![view::Framework {
                    name: "torch".into(),
                    version: Some(torch.to_string()),
                    cuda: Some("13.0".into()),
                    rocm: None,
                }],
            }],
            ..NodeReport::default()
        }
    }

    fn loaded(file: &str, report: NodeReport) -> Loaded {
        Loaded {
            file: file.to_string(),
            report,
        }
    }

    fn inputs(reports: Vec<Loaded>) -> Inputs {
        Inputs {
            reports,
            ..Inputs::default()
        }
    }

    #[test]
    fn nodes_group_by_stack_and_the_odd_ones_say_what_differs() {
        let mut reports: Vec<Loaded> = (1..=5)
            .map(|i| {
                let host = format!("n{i}");
                loaded(
                    &format!("{host}.json"),
                    report(&host, "580.159.04", "2.11.0"),
                )
            })
            .collect();
        reports.push(loaded("n6.json", report("n6", "550.54.15", "2.11.0")));
        reports.push(loaded("n7.json", report("n7", "580.159.04", "2.5.1")));
        let fleet = summarize(&inputs(reports));
        assert_eq!(fleet.groups.len(), 3);
        assert_eq!(fleet.groups[0].nodes, ["n1", "n2", "n3", "n4", "n5"]);
        assert_eq!(fleet.groups[0].stack.cudnn, [Some("9.19.0".to_string())]);
        assert_eq!(
            fleet.groups[0].gpu_models,
            [GpuCount {
                name: "NVIDIA H200".into(),
                count: 5
            }]
        );
        assert_eq!(
            fleet.majority,
            Some(Majority {
                group: 1,
                nodes: 5,
                tied: false
            })
        );
        let odd: Vec<(&str, &Vec<Difference>)> = fleet
            .odd_ones_out
            .iter()
            .map(|o| (o.node.as_str(), &o.differences))
            .collect();
        assert_eq!(odd.len(), 2);
        assert_eq!(odd[0].0, "n6");
        assert_eq!(
            odd[0].1,
            &[Difference {
                field: "driver".into(),
                node: Some("550.54.15".into()),
                majority: Some("580.159.04".into()),
            }]
        );
        assert_eq!(
            odd[1].1,
            &[Difference {
                field: "framework:/opt/venv:torch".into(),
                node: Some("2.5.1 (CUDA 13.0)".into()),
                majority: Some("2.11.0 (CUDA 13.0)".into()),
            }]
        );
        assert!(fleet.healthy);
    }

    #[test]
    fn a_framework_missing_on_one_side_is_a_difference() {
        let with = stack(&report("a", "1", "2.5.1"));
        let mut without = with.clone();
        without.frameworks.clear();
        without.toolkits = vec![None];
        let d = differences(&without, &with);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].field, "toolkits");
        assert_eq!(d[0].node.as_deref(), Some("unknown"));
        assert_eq!(d[0].majority, None);
        assert_eq!(d[1].node, None);
    }

    #[test]
    fn the_newest_report_of_a_node_wins_and_ties_go_by_file_name() {
        let mut old = report("n1", "550.54.15", "2.5.1");
        old.generated_at = Some("2026-01-01T00:00:00Z".into());
        let mut new = report("n1", "580.159.04", "2.5.1");
        new.generated_at = Some("2026-02-01T00:00:00Z".into());
        let mut odd_time = report("n1", "1.0", "2.5.1");
        odd_time.generated_at = Some("2026-03-01".into());
        let (nodes, dups) = dedupe(vec![
            loaded("b.json", old),
            loaded("c.json", odd_time),
            loaded("a.json", new),
        ]);
        assert_eq!(nodes.len(), 1);
        assert_eq!(nodes[0].file, "a.json");
        assert_eq!(dups.len(), 2);
        assert_eq!(dups[0].dropped, "b.json");
        assert!(
            dups[0].reason.starts_with("older (2026-01-01"),
            "{}",
            dups[0].reason
        );
        assert_eq!(dups[1].dropped, "c.json");
        assert!(dups[1].reason.starts_with("no usable generated_at"));

        let (nodes, dups) = dedupe(vec![
            loaded("z.json", report("n1", "1", "1")),
            loaded("y.json", report("n1", "2", "1")),
        ]);
        assert_eq!(nodes[0].file, "y.json");
        assert_eq!(dups[0].dropped, "z.json");
    }

    #[test]
    fn a_node_without_a_host_name_is_named_by_its_file() {
        let mut r = report("", "1", "1");
        assert_eq!(node_name("dir/gpu17.json", &r), "gpu17");
        r.host.hostname = None;
        assert_eq!(node_name("gpu18.json", &r), "gpu18");
        r.host.hostname = Some(" gpu19 ".into());
        assert_eq!(node_name("x.json", &r), "gpu19");
    }

    #[test]
    fn error_findings_and_failed_smoke_need_attention() {
        let mut sick = report("n1", "1", "1");
        sick.findings = vec![
            view::Finding {
                id: "driver-library-mismatch".into(),
                severity: "error".into(),
                title: "Driver/library version mismatch".into(),
            },
            view::Finding {
                id: "x".into(),
                severity: "warning".into(),
                title: "x".into(),
            },
        ];
        let mut failed = report("n2", "1", "1");
        failed.smoke = Some(view::Smoke {
            status: Some("failed".into()),
            devices: vec![view::Device {
                index: 1,
                passed: Some(false),
                memory: Some(view::Check {
                    passed: Some(false),
                    errors: Some(12),
                    ..view::Check::default()
                }),
                ..view::Device::default()
            }],
            ..view::Smoke::default()
        });
        let mut passed = report("n3", "1", "1");
        passed.smoke = Some(view::Smoke {
            status: Some("passed".into()),
            ..view::Smoke::default()
        });
        let fleet = summarize(&inputs(vec![
            loaded("n1.json", sick),
            loaded("n2.json", failed),
            loaded("n3.json", passed),
        ]));
        assert!(!fleet.healthy);
        assert_eq!(fleet.attention.len(), 2);
        assert_eq!(fleet.attention[0].errors.len(), 1);
        assert_eq!(fleet.attention[0].smoke_status, None);
        assert_eq!(fleet.attention[1].smoke_status.as_deref(), Some("failed"));
        assert_eq!(
            fleet.attention[1].failed_gpus[0].reason,
            "memory check found 12 errors"
        );
        assert_eq!(fleet.nodes[2].smoke_status.as_deref(), Some("passed"));
        assert!(fleet.nodes[2].healthy);
    }

    #[test]
    fn equal_groups_are_a_tie_in_stack_order() {
        let fleet = summarize(&inputs(vec![
            loaded("a.json", report("a", "580.159.04", "1")),
            loaded("b.json", report("b", "550.54.15", "1")),
        ]));
        let majority = fleet.majority.unwrap();
        assert!(majority.tied);
        assert_eq!(fleet.groups[0].stack.driver.as_deref(), Some("550.54.15"));
        assert_eq!(fleet.odd_ones_out[0].node, "a");
    }

    #[test]
    fn timestamps_are_any_rfc_3339_time() {
        let mut r = NodeReport::default();
        for (text, ok) in [
            ("2026-12-01T10:59:07Z", true),
            ("2026-12-01T10:59:07.5Z", true),
            ("2026-12-01T12:59:07+02:00", true),
            ("2026-12-01 10:59:07Z", true),
            ("2026-12-01T10:59:0xZ", false),
            ("2026-12-01T10:59Z", false),
            ("2026-12-01T10:59:07", false),
        ] {
            r.generated_at = Some(text.into());
            assert_eq!(timestamp(&r).is_some(), ok, "{text}");
        }
    }

    /// Offsets are compared as instants, not as text: `12:59:07+02:00` is 10:59:07 UTC, older
    /// than `11:00:00Z` although its text sorts after it; equal instants are a tie.
    #[test]
    fn the_newest_report_is_chosen_by_instant_across_offsets() {
        let at = |file: &str, when: &str| {
            let mut r = report("n", "580.159.04", "1");
            r.generated_at = Some(when.into());
            loaded(file, r)
        };
        let (nodes, dups) = dedupe(vec![
            at("a.json", "2026-12-01T12:59:07+02:00"),
            at("b.json", "2026-12-01T11:00:00Z"),
        ]);
        assert_eq!(nodes[0].file, "b.json");
        assert_eq!(dups[0].dropped, "a.json");
        assert!(
            dups[0]
                .reason
                .starts_with("older (2026-12-01T12:59:07+02:00;"),
            "{}",
            dups[0].reason
        );

        let (nodes, dups) = dedupe(vec![
            at("b.json", "2026-12-01T10:59:07Z"),
            at("a.json", "2026-12-01T12:59:07+02:00"),
        ]);
        assert_eq!(nodes[0].file, "a.json");
        assert!(dups[0].reason.starts_with("no newer"), "{}", dups[0].reason);
    }
}
