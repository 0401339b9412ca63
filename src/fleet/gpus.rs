//! Nodes that show fewer GPUs of a model than their peers: a GPU that fell off the bus, was
//! masked, or lost its driver shows up in one node's report only as a shorter list, which no
//! single-node rule can call wrong (an 8-GPU node and a 7-GPU node look equally healthy
//! alone). Across the fleet the usual count of each model is plain to see. Pure.
//!
//! The usual count is the one most nodes that have the model share, and only when that is
//! clear: a tie (two 8-GPU and two 4-GPU machines of one model) names no usual count, since
//! the fleet may simply have two kinds of machine. Counting by the driver's GPU list means a
//! Kubernetes pod that was given one GPU reports one, like its peers, and is not flagged.

use std::collections::BTreeMap;

use serde::Serialize;

use super::summary::{Node, UNKNOWN_GPU};

/// A node with fewer GPUs of one model than most of the nodes that have that model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct FewerGpus {
    pub node: String,
    pub gpu: String,
    /// How many of this model the node's driver shows.
    pub count: usize,
    /// How many most nodes with this model show.
    pub usual: usize,
    /// How many nodes show the usual count.
    pub nodes_with_usual: usize,
}

/// Every node below its model's usual count, sorted by model then node.
#[must_use]
pub(crate) fn fewer_gpus(nodes: &[Node]) -> Vec<FewerGpus> {
    // model -> node -> count
    let mut per_model: BTreeMap<String, BTreeMap<&str, usize>> = BTreeMap::new();
    for node in nodes {
        for gpu in &node.report.gpus {
            let model = gpu.name.clone().unwrap_or_else(|| UNKNOWN_GPU.to_string());
            *per_model
                .entry(model)
                .or_default()
                .entry(node.name.as_str())
                .or_default() += 1;
        }
    }
    let mut out = Vec::new();
    for (model, counts) in &per_model {
        let Some((usual, nodes_with_usual)) = most_common(counts.values().copied()) else {
            continue;
        };
        for (node, count) in counts {
            if *count < usual {
                out.push(FewerGpus {
                    node: (*node).to_string(),
                    gpu: model.clone(),
                    count: *count,
                    usual,
                    nodes_with_usual,
                });
            }
        }
    }
    out
}

/// The value most nodes share and how many share it, when that is clear: no tie for the most,
/// and two nodes or more. The usual GPU count here, the usual wiring in [`super::interconnect`].
pub(super) fn most_common<K: Ord + Copy>(
    values: impl IntoIterator<Item = K>,
) -> Option<(K, usize)> {
    let mut how_many: BTreeMap<K, usize> = BTreeMap::new();
    for value in values {
        *how_many.entry(value).or_default() += 1;
    }
    let (&usual, &nodes) = how_many.iter().max_by_key(|(_, n)| **n)?;
    let tied = how_many.values().filter(|n| **n == nodes).count() > 1;
    (!tied && nodes >= 2).then_some((usual, nodes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::view::{Gpu, NodeReport};

    fn node(name: &str, gpus: &[(&str, usize)]) -> Node {
        let mut report = NodeReport::default();
        for (model, n) in gpus {
            for _ in 0..*n {
                report.gpus.push(Gpu {
                    index: report.gpus.len() as u64,
                    name: Some((*model).to_string()),
                });
            }
        }
        Node {
            name: name.to_string(),
            file: format!("{name}.json"),
            report,
        }
    }

    #[test]
    fn a_node_that_lost_a_gpu_is_named_with_the_usual_count() {
        let nodes = [
            node("a", &[("H200", 8)]),
            node("b", &[("H200", 8)]),
            node("c", &[("H200", 7)]),
            node("d", &[("H200", 8)]),
        ];
        assert_eq!(
            fewer_gpus(&nodes),
            [FewerGpus {
                node: "c".into(),
                gpu: "H200".into(),
                count: 7,
                usual: 8,
                nodes_with_usual: 3,
            }]
        );
    }

    #[test]
    fn ties_single_nodes_and_more_than_usual_are_not_flagged() {
        let two_kinds = [
            node("a", &[("A100", 8)]),
            node("b", &[("A100", 8)]),
            node("c", &[("A100", 4)]),
            node("d", &[("A100", 4)]),
        ];
        assert!(
            fewer_gpus(&two_kinds).is_empty(),
            "a tie names no usual count"
        );
        assert!(fewer_gpus(&[node("a", &[("L4", 1)]), node("b", &[("L4", 2)])]).is_empty());
        let more = [
            node("a", &[("H200", 8)]),
            node("b", &[("H200", 8)]),
            node("c", &[("H200", 9)]),
        ];
        assert!(
            fewer_gpus(&more).is_empty(),
            "more GPUs than usual is not a loss"
        );
    }

    #[test]
    fn each_model_has_its_own_usual_count() {
        let nodes = [
            node("a", &[("H200", 8)]),
            node("b", &[("H200", 8)]),
            node("c", &[("L4", 2)]),
            node("d", &[("L4", 2)]),
            node("e", &[("L4", 1)]),
        ];
        let fewer = fewer_gpus(&nodes);
        assert_eq!(fewer.len(), 1, "{fewer:?}");
        assert_eq!((fewer[0].node.as_str(), fewer[0].usual), ("e", 2));
    }
}
