//! Nodes whose GPUs are wired differently from their peers': on identical machines every node's
//! `nvidia-smi topo -m` shows the same links between GPU pairs (NV18 everywhere on an HGX
//! H100), so a node where a pair shows fewer NVLinks or a PCIe path (a link that trained down, a
//! GPU whose NVLinks are off, a board in another slot) stands out across the fleet though it
//! looks sound alone. Pure.
//!
//! Nodes are compared with those of the same GPU model and count; the usual wiring is the set of
//! pair links most of them share, only when that is clear (no tie, two nodes or more), as for
//! [`super::gpus`].

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::gpus::most_common;
use super::summary::{Node, UNKNOWN_GPU};

/// The most pairs named for one node: a node with every pair degraded says so in its links.
const PAIRS_NAMED: usize = 8;

/// A node whose GPU pairs are linked otherwise than most nodes of its kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct OddInterconnect {
    pub node: String,
    /// "8 × NVIDIA H100 80GB HBM3".
    pub gpus: String,
    /// The links between its GPU pairs, each kind once ("NV18/SYS").
    pub links: String,
    /// What most nodes of its kind show ("NV18").
    pub usual: String,
    pub nodes_with_usual: usize,
    /// Its pairs whose link is not among the usual ones, "GPU3-GPU5 SYS", at most eight.
    pub pairs: Vec<String>,
}

/// A node's wiring, which nodes of one kind are compared on.
struct Wiring {
    /// The kinds of link between its GPU pairs, sorted ("NV18", "SYS").
    links: BTreeSet<String>,
    /// Each GPU pair and its link.
    pairs: Vec<GpuPair>,
}

/// Two GPUs of a node (by index) and the link `nvidia-smi topo -m` shows between them.
struct GpuPair {
    a: u64,
    b: u64,
    link: String,
}

/// The kinds of link between a node's GPU pairs, sorted, and each pair with its link.
fn pair_links(node: &Node) -> Option<Wiring> {
    let topo = node.report.topology.as_ref()?;
    let mut pairs = Vec::new();
    for (i, row) in topo.gpus.iter().enumerate() {
        for (j, other) in topo.gpus.iter().enumerate().skip(i + 1) {
            if let Some(link) = row.gpus.get(j) {
                pairs.push(GpuPair {
                    a: row.index,
                    b: other.index,
                    link: link.clone(),
                });
            }
        }
    }
    (!pairs.is_empty()).then(|| Wiring {
        links: pairs.iter().map(|p| p.link.clone()).collect(),
        pairs,
    })
}

/// Every node wired otherwise than most of its kind, by kind then node.
#[must_use]
pub(crate) fn odd_interconnects(nodes: &[Node]) -> Vec<OddInterconnect> {
    // kind -> node -> wiring
    let mut kinds: BTreeMap<String, BTreeMap<&str, Wiring>> = BTreeMap::new();
    for node in nodes {
        let Some(wiring) = pair_links(node) else {
            continue;
        };
        let gpus = &node.report.gpus;
        let model = gpus
            .first()
            .and_then(|g| g.name.clone())
            .unwrap_or_else(|| UNKNOWN_GPU.to_string());
        let kind = format!("{} × {model}", gpus.len());
        kinds
            .entry(kind)
            .or_default()
            .insert(node.name.as_str(), wiring);
    }
    let mut out = Vec::new();
    for (kind, members) in &kinds {
        let Some((usual, nodes_with_usual)) = most_common(members.values().map(|w| &w.links))
        else {
            continue;
        };
        for (node, Wiring { links, pairs }) in members {
            if links == usual {
                continue;
            }
            out.push(OddInterconnect {
                node: (*node).to_string(),
                gpus: kind.clone(),
                links: joined(links),
                usual: joined(usual),
                nodes_with_usual,
                pairs: pairs
                    .iter()
                    .filter(|p| !usual.contains(&p.link))
                    .take(PAIRS_NAMED)
                    .map(|GpuPair { a, b, link }| format!("GPU{a}-GPU{b} {link}"))
                    .collect(),
            });
        }
    }
    out
}

fn joined(links: &BTreeSet<String>) -> String {
    links.iter().cloned().collect::<Vec<_>>().join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::view::{Gpu, NodeReport, TopoGpu, Topology};

    /// A node of `n` GPUs with NV18 between every pair, then `changes` applied (a, b, link).
    fn node(name: &str, n: u64, changes: &[(usize, usize, &str)]) -> Node {
        let mut rows: Vec<Vec<String>> = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| if i == j { "X" } else { "NV18" }.to_string())
                    .collect()
            })
            .collect();
        for (a, b, link) in changes {
            rows[*a][*b] = (*link).to_string();
            rows[*b][*a] = (*link).to_string();
        }
        let report = NodeReport {
            gpus: (0..n)
                .map(|index| Gpu {
                    index,
                    name: Some("NVIDIA H100 80GB HBM3".into()),
                })
                .collect(),
            topology: Some(Topology {
                gpus: rows
                    .into_iter()
                    .enumerate()
                    .map(|(index, gpus)| TopoGpu {
                        index: index as u64,
                        gpus,
                    })
                    .collect(),
            }),
            ..NodeReport::default()
        };
        Node {
            name: name.to_string(),
            file: format!("{name}.json"),
            report,
        }
    }

    #[test]
    fn a_node_with_a_pair_below_its_peers_is_named_with_the_pair() {
        let nodes = [
            node("a", 8, &[]),
            node("b", 8, &[(3, 5, "SYS"), (0, 1, "NV12")]),
            node("c", 8, &[]),
        ];
        assert_eq!(
            odd_interconnects(&nodes),
            [OddInterconnect {
                node: "b".into(),
                gpus: "8 × NVIDIA H100 80GB HBM3".into(),
                links: "NV12/NV18/SYS".into(),
                usual: "NV18".into(),
                nodes_with_usual: 2,
                pairs: vec!["GPU0-GPU1 NV12".into(), "GPU3-GPU5 SYS".into()],
            }]
        );
    }

    #[test]
    fn ties_lone_nodes_other_kinds_and_nodes_without_a_matrix_are_not_flagged() {
        let tie = [node("a", 4, &[]), node("b", 4, &[(0, 1, "SYS")])];
        assert!(odd_interconnects(&tie).is_empty());
        // Two 8-GPU nodes and one 4-GPU node wired otherwise: different kinds.
        let kinds = [
            node("a", 8, &[]),
            node("b", 8, &[]),
            node("c", 4, &[(0, 1, "SYS")]),
        ];
        assert!(odd_interconnects(&kinds).is_empty());
        let mut bare = node("c", 8, &[]);
        bare.report.topology = None;
        assert!(odd_interconnects(&[node("a", 8, &[]), node("b", 8, &[]), bare]).is_empty());
    }
}
