//! Throughput spread per GPU model, from the smoke results in the node reports: how far
//! apart GPUs of one model measure, and which fall well below their model's median. Pure.
//!
//! Only GPUs of the same name are compared: an H100 PCIe is not a slow H100 SXM. The median
//! rather than the mean is the reference, so one broken GPU does not drag the bar down for
//! the others. The smoke test measures three rates (`smoke --bench` adds the first two):
//! cuBLASLt bf16 and PTX fp32 TFLOP/s and device-to-device GB/s.

use std::collections::BTreeMap;

use serde::Serialize;

use super::summary::{Node, UNKNOWN_GPU};

/// A GPU below this percentage of its model's median, on any rate, is an outlier. Repeated
/// smoke runs on one H200 agree within about 1% (tests/fixtures/real: 4198, 4221 and 4180
/// GB/s device to device), while what slows a healthy-looking GPU (a power cap, thermal
/// slowdown, clocks stuck low, a degraded link) costs 10% and more.
pub(crate) const OUTLIER_BELOW_PCT: f64 = 90.0;

/// The spread of every GPU model measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Throughput {
    /// [`OUTLIER_BELOW_PCT`].
    pub outlier_below_pct_of_median: f64,
    /// By GPU name.
    pub models: Vec<ModelSpread>,
    /// By node, GPU index, then rate.
    pub outliers: Vec<Outlier>,
}

/// One GPU model's spread; a rate no GPU of the model measured is null.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ModelSpread {
    pub gpu: String,
    /// GPUs of this model with at least one rate measured.
    pub gpus_measured: usize,
    pub cublaslt_bf16_tflops: Option<Spread>,
    pub ptx_fp32_tflops: Option<Spread>,
    pub device_to_device_gbs: Option<Spread>,
}

/// Minimum, median (the mean of the middle two for an even count) and maximum of one rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Spread {
    pub measured: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    /// The GPU with the minimum (the first by node and index on a tie).
    pub slowest: GpuRate,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct GpuRate {
    pub node: String,
    pub index: u64,
    pub value: f64,
    /// Rounded to 0.1; null when the median is 0.
    pub pct_of_median: Option<f64>,
}

/// A GPU below [`OUTLIER_BELOW_PCT`] of its model's median on one rate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Outlier {
    pub node: String,
    pub index: u64,
    pub gpu: String,
    pub metric: Metric,
    pub value: f64,
    pub median: f64,
    pub pct_of_median: f64,
}

/// The rates compared, in the order they are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Metric {
    CublasltBf16Tflops,
    PtxFp32Tflops,
    DeviceToDeviceGbs,
}

impl Metric {
    pub(crate) const ALL: [Metric; 3] = [
        Metric::CublasltBf16Tflops,
        Metric::PtxFp32Tflops,
        Metric::DeviceToDeviceGbs,
    ];

    /// For people: "cuBLASLt bf16".
    #[must_use]
    pub(crate) fn label(self) -> &'static str {
        match self {
            Metric::CublasltBf16Tflops => "cuBLASLt bf16",
            Metric::PtxFp32Tflops => "PTX fp32",
            Metric::DeviceToDeviceGbs => "device-to-device",
        }
    }

    /// "TFLOP/s" or "GB/s".
    #[must_use]
    pub(crate) fn unit(self) -> &'static str {
        match self {
            Metric::CublasltBf16Tflops | Metric::PtxFp32Tflops => "TFLOP/s",
            Metric::DeviceToDeviceGbs => "GB/s",
        }
    }
}

impl ModelSpread {
    /// The spread of one rate.
    #[must_use]
    pub(crate) fn get(&self, metric: Metric) -> Option<&Spread> {
        match metric {
            Metric::CublasltBf16Tflops => self.cublaslt_bf16_tflops.as_ref(),
            Metric::PtxFp32Tflops => self.ptx_fp32_tflops.as_ref(),
            Metric::DeviceToDeviceGbs => self.device_to_device_gbs.as_ref(),
        }
    }
}

/// One GPU's rates.
struct Sample<'a> {
    node: &'a str,
    index: u64,
    rates: [Option<f64>; 3],
}

/// The spread over every node's smoke results (nodes in name order).
#[must_use]
pub(crate) fn throughput(nodes: &[Node]) -> Throughput {
    let mut by_model: BTreeMap<String, Vec<Sample<'_>>> = BTreeMap::new();
    for node in nodes {
        let Some(smoke) = &node.report.smoke else {
            continue;
        };
        for d in &smoke.devices {
            // A negative rate is not a measurement; JSON has no NaN or infinity.
            let ok = |v: Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0);
            let rates = [
                ok(d.throughput.as_ref().and_then(|t| t.cublaslt_bf16_tflops)),
                ok(d.throughput.as_ref().and_then(|t| t.ptx_fp32_tflops)),
                ok(d.bandwidth.as_ref().and_then(|b| b.device_to_device_gbs)),
            ];
            if rates.iter().all(Option::is_none) {
                continue;
            }
            let name = d
                .name
                .clone()
                .or_else(|| {
                    node.report
                        .gpus
                        .iter()
                        .find(|g| g.index == d.index)
                        .and_then(|g| g.name.clone())
                })
                .unwrap_or_else(|| UNKNOWN_GPU.to_string());
            by_model.entry(name).or_default().push(Sample {
                node: &node.name,
                index: d.index,
                rates,
            });
        }
    }
    let mut models = Vec::new();
    let mut outliers = Vec::new();
    for (gpu, mut samples) in by_model {
        samples.sort_by(|a, b| (a.node, a.index).cmp(&(b.node, b.index)));
        let mut spreads: [Option<Spread>; 3] = [None, None, None];
        for (slot, metric) in Metric::ALL.iter().enumerate() {
            let Some(spread) = spread_of(&samples, slot) else {
                continue;
            };
            for s in &samples {
                let Some(value) = s.rates[slot] else { continue };
                if let Some(pct) = pct(value, spread.median)
                    && pct < OUTLIER_BELOW_PCT
                {
                    outliers.push(Outlier {
                        node: s.node.to_string(),
                        index: s.index,
                        gpu: gpu.clone(),
                        metric: *metric,
                        value,
                        median: spread.median,
                        pct_of_median: pct,
                    });
                }
            }
            spreads[slot] = Some(spread);
        }
        let [bf16, fp32, d2d] = spreads;
        models.push(ModelSpread {
            gpu,
            gpus_measured: samples.len(),
            cublaslt_bf16_tflops: bf16,
            ptx_fp32_tflops: fp32,
            device_to_device_gbs: d2d,
        });
    }
    outliers.sort_by(|a, b| (&a.node, a.index, a.metric).cmp(&(&b.node, b.index, b.metric)));
    Throughput {
        outlier_below_pct_of_median: OUTLIER_BELOW_PCT,
        models,
        outliers,
    }
}

/// The spread of rate `slot` over samples sorted by node and index.
fn spread_of(samples: &[Sample<'_>], slot: usize) -> Option<Spread> {
    let mut values: Vec<(f64, &Sample<'_>)> = samples
        .iter()
        .filter_map(|s| s.rates[slot].map(|v| (v, s)))
        .collect();
    // Stable: equal values keep node and index order.
    values.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (min, slowest) = *values.first()?;
    let max = values.last().map_or(min, |v| v.0);
    let mid = values.len() / 2;
    let median = if values.len() % 2 == 1 {
        values[mid].0
    } else {
        f64::midpoint(values[mid - 1].0, values[mid].0)
    };
    Some(Spread {
        measured: values.len(),
        min,
        median,
        max,
        slowest: GpuRate {
            node: slowest.node.to_string(),
            index: slowest.index,
            value: min,
            pct_of_median: pct(min, median),
        },
    })
}

/// `value` as a percentage of `median`, rounded to 0.1.
fn pct(value: f64, median: f64) -> Option<f64> {
    (median > 0.0).then(|| (value / median * 1000.0).round() / 10.0)
}

#[cfg(test)]
mod tests {
    use super::super::view::{self, NodeReport};
    use super::*;

    fn node(name: &str, rates: &[(Option<f64>, f64)]) -> Node {
        let devices = rates
            .iter()
            .enumerate()
            .map(|(i, (bf16, d2d))| view::Device {
                index: i as u64,
                name: Some("NVIDIA H200".into()),
                passed: Some(true),
                throughput: bf16.map(|b| view::Throughput {
                    cublaslt_bf16_tflops: Some(b),
                    ptx_fp32_tflops: None,
                }),
                bandwidth: Some(view::Bandwidth {
                    device_to_device_gbs: Some(*d2d),
                }),
                ..view::Device::default()
            })
            .collect();
        Node {
            name: name.into(),
            file: format!("{name}.json"),
            report: NodeReport {
                smoke: Some(view::Smoke {
                    status: Some("passed".into()),
                    devices,
                    ..view::Smoke::default()
                }),
                ..NodeReport::default()
            },
        }
    }

    #[test]
    fn min_median_max_and_the_slow_gpu() {
        let nodes = vec![
            node("a", &[(Some(790.0), 4200.0), (Some(800.0), 4190.0)]),
            node("b", &[(Some(400.0), 4210.0), (None, 4180.0)]),
        ];
        let t = throughput(&nodes);
        assert_eq!(t.models.len(), 1);
        let m = &t.models[0];
        assert_eq!(m.gpus_measured, 4);
        let bf16 = m.cublaslt_bf16_tflops.as_ref().unwrap();
        assert_eq!(
            (bf16.measured, bf16.min, bf16.median, bf16.max),
            (3, 400.0, 790.0, 800.0)
        );
        assert_eq!(bf16.slowest.node, "b");
        assert_eq!(bf16.slowest.pct_of_median, Some(50.6));
        let d2d = m.device_to_device_gbs.as_ref().unwrap();
        assert_eq!(d2d.median, 4195.0);
        assert!(m.ptx_fp32_tflops.is_none());
        assert_eq!(t.outliers.len(), 1);
        assert_eq!((t.outliers[0].node.as_str(), t.outliers[0].index), ("b", 0));
        assert_eq!(t.outliers[0].metric, Metric::CublasltBf16Tflops);
    }

    #[test]
    fn nothing_measured_is_no_model_and_a_zero_median_no_percentage() {
        assert!(throughput(&[]).models.is_empty());
        let t = throughput(&[node("a", &[(Some(0.0), 0.0)])]);
        assert_eq!(
            t.models[0]
                .device_to_device_gbs
                .as_ref()
                .unwrap()
                .slowest
                .pct_of_median,
            None
        );
        assert!(t.outliers.is_empty());
    }
}
