//! Which finding on this machine explains a message, and what the message says set against
//! the machine.
//!
//! A signature lists the finding IDs that can cause it, most likely first. Of the findings in
//! the report with one of those IDs, the one chosen is, first, one that names what the message
//! is about (the library, symbol or option it captured as `subject`), or one of the Python
//! environment the traceback's paths run through; then the one listed earliest. A finding
//! about a framework other than the one that printed the message is never chosen: a CPU-only
//! TensorFlow does not explain "Torch not compiled with CUDA enabled".
//!
//! A generic symptom (a row marked `generic`: "No CUDA GPUs are available", "Found no NVIDIA
//! driver", nvidia-smi that cannot reach the driver) is explained by whatever blocks programs
//! from the GPU: when none of its listed causes is on the machine, the machine's blocking
//! finding ([`BLOCKING`]) nearest the GPU in the compatibility graph is offered.

use crate::diagnose::ids::{self, Kind};
use crate::manifest::KnownError;
use crate::report::{Finding, Report, Severity, Subject};

/// Findings that keep every program from the GPU, in the order of the compatibility graph
/// (ARCHITECTURE.md's table, from the GPU outward: the kernel module, the user-space driver, the
/// framework build against the driver, the container and the process's view of the devices,
/// the fabric, then AMD's module, KFD and permissions). `no-gpu`, `driver-compute-libraries-missing`
/// and `fabric-not-completed` have no row of their own in the table and sit beside their
/// neighbours there; `the_blocking_order_is_the_graph_s` keeps the rest in the table's order.
pub(crate) static BLOCKING: &[&Kind] = &[
    &ids::NO_GPU,
    &ids::DRIVER_TOO_OLD_FOR_GPU,
    &ids::DRIVER_TOO_NEW_FOR_GPU,
    &ids::MODULE_FLAVOUR_UNSUPPORTED,
    &ids::NOUVEAU_LOADED,
    &ids::NOVA_CORE_BOUND,
    &ids::NO_DRIVER,
    &ids::DRIVER_LIBRARY_MISMATCH,
    &ids::DRIVER_COMPUTE_LIBRARIES_MISSING,
    &ids::DRIVER_TOO_OLD_FOR_FRAMEWORK,
    &ids::FORWARD_COMPAT_UNSUPPORTED,
    &ids::FORWARD_COMPAT_OLDER_THAN_DRIVER,
    &ids::FORWARD_COMPAT_BRANCH_UNSUPPORTED,
    &ids::CPU_ONLY_FRAMEWORK_BUILD,
    &ids::CUDA_BUILD_ON_AMD_GPU,
    &ids::STUB_LIBCUDA_ON_PATH,
    &ids::CONTAINER_NO_GPU_RUNTIME,
    &ids::CONTAINER_DRIVER_CAPABILITIES,
    &ids::CONTAINER_LOST_GPU_ACCESS,
    &ids::VISIBLE_DEVICES_HIDES_GPUS,
    &ids::WSL_DRIVER_IN_GUEST,
    &ids::FABRIC_MANAGER_NOT_RUNNING,
    &ids::FABRIC_NOT_COMPLETED,
    &ids::AMDGPU_NOT_LOADED,
    &ids::AMDGPU_NOT_BOUND,
    &ids::KFD_MISSING,
    &ids::ROCM_DEVICE_PERMISSION,
    &ids::ROCM_GPU_UNSUPPORTED,
];

/// What a match captured, by fact name, as text.
pub(crate) type Captures = Vec<(&'static str, String)>;

/// The framework that prints messages of a family, as reports name frameworks.
fn framework_of(family: &str) -> Option<&'static str> {
    match family {
        "torch" | "triton" | "vllm" => Some("torch"),
        "tensorflow" => Some("tensorflow"),
        "jax" => Some("jax"),
        "cupy" => Some("cupy"),
        _ => None,
    }
}

/// The frameworks a finding is about, from its `framework:<env>:<name>` subjects, with the
/// environment.
fn frameworks(f: &Finding) -> impl Iterator<Item = (&str, &str)> {
    f.subjects.iter().filter_map(Subject::as_framework)
}

/// Whether the finding's words mention `needle` (case ignored).
fn mentions(f: &Finding, needle: &str) -> bool {
    let needle = needle.to_ascii_lowercase();
    std::iter::once(&f.title)
        .chain(std::iter::once(&f.detail))
        .chain(f.evidence.iter())
        .cloned()
        .chain(f.subjects.iter().map(ToString::to_string))
        .any(|t| t.to_ascii_lowercase().contains(&needle))
}

/// The finding of `report` that explains `row` matched with `captures` in `text`, if any.
#[must_use]
pub(crate) fn choose<'r>(
    report: &'r Report,
    row: &KnownError,
    captures: &Captures,
    text: &str,
) -> Option<&'r Finding> {
    let printed_by = framework_of(&row.family);
    let subject = captures
        .iter()
        .find(|(name, _)| *name == "subject")
        .map(|(_, v)| v.as_str())
        .filter(|s| s.len() >= 3);
    // The row's own causes, most likely first; for a generic symptom without one of them on the
    // machine, its blocking findings in the graph's order.
    let listed = |f: &Finding| row.causes.iter().position(|c| *c == f.id);
    let blocking = |f: &Finding| {
        (f.severity == Severity::Error)
            .then(|| BLOCKING.iter().position(|k| k.id == f.id))
            .flatten()
    };
    best(report, printed_by, subject, text, listed).or_else(|| {
        row.generic
            .then(|| best(report, printed_by, subject, text, blocking))
            .flatten()
    })
}

/// The finding `rank` ranks (lower first) that fits the message best: not about another
/// framework than `printed_by`; naming the message's subject, or of the Python environment the
/// text's paths run through, before the others.
fn best<'r>(
    report: &'r Report,
    printed_by: Option<&str>,
    subject: Option<&str>,
    text: &str,
    rank: impl Fn(&Finding) -> Option<usize>,
) -> Option<&'r Finding> {
    report
        .findings
        .iter()
        .filter_map(|f| {
            let rank = rank(f)?;
            let about: Vec<(&str, &str)> = frameworks(f).collect();
            if let Some(fw) = printed_by
                && !about.is_empty()
                && !about.iter().any(|(_, name)| *name == fw)
            {
                return None;
            }
            let mut score = 0;
            if subject.is_some_and(|s| mentions(f, s)) {
                score += 2;
            }
            if about
                .iter()
                .any(|(env, _)| env.len() > 1 && text.contains(&format!("{env}/")))
            {
                score += 1;
            }
            Some((std::cmp::Reverse(score), rank, f))
        })
        .min_by_key(|(score, rank, _)| (*score, *rank))
        .map(|(_, _, f)| f)
}

/// A compute capability from what a message calls an architecture: `sm_120`, `sm_90a`,
/// `compute_89`, `sm120`, `8.6`; `None` for anything else (`gfx1031`).
fn capability(arch: &str) -> Option<String> {
    let a = arch.trim().to_ascii_lowercase();
    if let Some((major, minor)) = a.split_once('.')
        && !major.is_empty()
        && major.bytes().all(|b| b.is_ascii_digit())
        && minor.len() == 1
        && minor.bytes().all(|b| b.is_ascii_digit())
    {
        return Some(format!("{major}.{minor}"));
    }
    let digits = a
        .strip_prefix("sm_")
        .or_else(|| a.strip_prefix("sm"))
        .or_else(|| a.strip_prefix("compute_"))?;
    let digits: String = digits.chars().take_while(char::is_ascii_digit).collect();
    if !(2..=3).contains(&digits.len()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some(format!("{major}.{minor}"))
}

/// A CUDA version from `12080` (the driver API's number) or `12.8`.
fn cuda_version(text: &str) -> Option<String> {
    let t = text.trim();
    if t.contains('.') {
        let mut parts = t.split('.');
        let major = parts.next()?;
        let minor = parts.next()?;
        return Some(format!("{major}.{minor}"));
    }
    let n: u32 = t.parse().ok()?;
    (n >= 1000).then(|| format!("{}.{}", n / 1000, (n % 1000) / 10))
}

/// What the message's facts say against this machine's: a GPU architecture, the CUDA version
/// of a driver, a driver version.
#[must_use]
pub(crate) fn notes(report: &Report, captures: &Captures) -> Vec<String> {
    let mut out = Vec::new();
    for (name, value) in captures {
        match *name {
            "arch" => {
                let Some(cc) = capability(value) else {
                    continue;
                };
                let known: Vec<(String, &str)> = report
                    .gpus
                    .iter()
                    .filter_map(|g| {
                        Some((
                            format!("GPU {} ({})", g.index, g.name.as_deref().unwrap_or("?")),
                            g.compute_capability.as_deref()?,
                        ))
                    })
                    .collect();
                if known.is_empty() {
                    continue;
                }
                match known.iter().find(|(_, c)| *c == cc) {
                    Some((gpu, _)) => out.push(format!(
                        "The message is about compute capability {cc} ({value}): {gpu} on this machine."
                    )),
                    None => out.push(format!(
                        "The message is about compute capability {cc} ({value}), but this machine's GPUs are {}: it was printed on another machine.",
                        known
                            .iter()
                            .map(|(gpu, c)| format!("{gpu} {c}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                }
            }
            "cuda" => {
                let (Some(said), Some(here)) =
                    (cuda_version(value), report.driver.cuda_version.as_deref())
                else {
                    continue;
                };
                if cuda_version(here).as_deref() == Some(said.as_str()) {
                    out.push(format!(
                        "The driver in the message supports CUDA {said}, as this machine's does."
                    ));
                } else {
                    out.push(format!(
                        "The driver in the message supports CUDA {said}; this machine's supports CUDA {here}: the message came from another machine or container, or from before the driver changed."
                    ));
                }
            }
            "needs_cuda" => {
                let (Some(need), Some(here)) =
                    (cuda_version(value), report.driver.cuda_version.as_deref())
                else {
                    continue;
                };
                let older = crate::version::compare(here, &need) == std::cmp::Ordering::Less;
                out.push(if older {
                    format!(
                        "The message requires CUDA {need}; this machine's driver supports CUDA {here}: this driver is older than what is asked of it, so update the driver to a branch for CUDA {need} or use a build or image for CUDA {here}."
                    )
                } else {
                    format!(
                        "The message requires CUDA {need}; this machine's driver supports CUDA {here}, which is enough: the message came from another machine or driver."
                    )
                });
            }
            "driver" => {
                let here: Vec<&str> = [
                    report.driver.version.as_deref(),
                    report.kernel.nvidia_version.as_deref(),
                ]
                .into_iter()
                .flatten()
                .collect();
                if here.is_empty() {
                    continue;
                }
                if here.iter().any(|v| v.starts_with(value.as_str())) {
                    out.push(format!("Driver {value} in the message is this machine's."));
                } else {
                    out.push(format!(
                        "The message names driver {value}; this machine has {}.",
                        here.join(" / ")
                    ));
                }
            }
            _ => {}
        }
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blocking_order_is_the_graph_s() {
        // The finding column of ARCHITECTURE.md's graph table, in its order, first appearance.
        let architecture = include_str!("../../ARCHITECTURE.md");
        let mut graph: Vec<&str> = Vec::new();
        for line in architecture.lines().filter(|l| l.starts_with("| ")) {
            let Some(cell) = line.split('|').nth(4) else {
                continue;
            };
            let id = cell.trim().trim_matches('`');
            if !id.is_empty() && !graph.contains(&id) {
                graph.push(id);
            }
        }
        assert!(graph.len() > 20, "{graph:?}");
        let in_graph: Vec<&str> = BLOCKING
            .iter()
            .map(|k| k.id)
            .filter(|id| graph.contains(id))
            .collect();
        let mut by_graph = in_graph.clone();
        by_graph.sort_by_key(|id| graph.iter().position(|g| g == id));
        assert_eq!(in_graph, by_graph);
        // Only the two the table has no row for are placed by hand (fabric-not-completed has
        // had one since a container's GPU fabric became an edge).
        let outside: Vec<&str> = BLOCKING
            .iter()
            .map(|k| k.id)
            .filter(|id| !graph.contains(id))
            .collect();
        assert_eq!(outside, ["no-gpu", "driver-compute-libraries-missing"]);
    }

    #[test]
    fn architectures_and_versions_read_as_the_report_writes_them() {
        assert_eq!(capability("sm_120").as_deref(), Some("12.0"));
        assert_eq!(capability("sm_90a").as_deref(), Some("9.0"));
        assert_eq!(capability("compute_89").as_deref(), Some("8.9"));
        assert_eq!(capability("8.6").as_deref(), Some("8.6"));
        assert_eq!(capability("gfx1031"), None);
        assert_eq!(cuda_version("12080").as_deref(), Some("12.8"));
        assert_eq!(cuda_version("12040").as_deref(), Some("12.4"));
        assert_eq!(cuda_version("12.2").as_deref(), Some("12.2"));
        assert_eq!(cuda_version("13.0.1").as_deref(), Some("13.0"));
    }
}
