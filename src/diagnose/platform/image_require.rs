//! `driver-too-old-for-image`: the container image's own CUDA requirement against the host
//! driver, judged as the NVIDIA Container Toolkit judges it before it starts a container.
//!
//! NVIDIA's CUDA images (and every image built on them: vLLM, tabbyAPI, NGC's) carry
//! `NVIDIA_REQUIRE_CUDA=cuda>=12.8 brand=tesla,driver>=535,driver<536 ...`: the CUDA the host
//! driver must support, or else a non-GeForce GPU on one of the driver branches the image's
//! forward-compatibility package was made for. Images with only `CUDA_VERSION` get
//! `cuda>=MAJOR.MINOR` (`internal/config/image/cuda_image.go`). When no alternative holds,
//! libnvidia-container stops the start: "requirement error: unsatisfied condition: cuda>=12.8,
//! please update your driver to a newer version, or use an earlier cuda container"
//! (`src/cli/dsl.c`). Reports: theroyallab/tabbyAPI#324 (2025-04, driver 550.144.03),
//! TabbyML/tabby#4309 (2025-07, cuda>=12.9 on 570.169; the maintainers moved the image to CUDA
//! 12.4.1, TabbyML/tabby#4314), MauriceNino/dashdot#1226 (2025-07), SyneRBI/PETRIC2#27
//! (2025-11, WSL on 551.78). Inside a container the check has already passed or been skipped
//! (`NVIDIA_DISABLE_REQUIRE`, CDI mode), so the finding says what the host driver lacks.

// The parent's imports and shared helpers: one family of platform findings.
use super::*;
use crate::parse::nvidia_require::{self, Facts, Requirement, Subject};
use crate::version::Version;

/// The requirement the image states: `NVIDIA_REQUIRE_CUDA`, else the legacy `cuda>=X.Y` of its
/// `CUDA_VERSION`, with the variable it came from.
///
/// The legacy rule is applied only where no CUDA build of a framework is installed: NGC's images
/// set `NVIDIA_REQUIRE_CUDA=cuda>=9.0` beside their `CUDA_VERSION` to escape it, so a report
/// that shows `CUDA_VERSION` alone beside a framework more likely lost the variable than comes
/// from a legacy image, and the framework's own CUDA is compared anyway
/// (`driver-too-old-for-framework`).
fn image_requirement(report: &Report) -> Option<(String, Requirement)> {
    if let Some(value) = env(report, "NVIDIA_REQUIRE_CUDA") {
        let parsed = nvidia_require::parse(value).ok()?;
        return Some((format!("NVIDIA_REQUIRE_CUDA={}", short(value)), parsed));
    }
    if !cuda_frameworks(report).is_empty() {
        return None;
    }
    let legacy = Version::parse(env(report, "CUDA_VERSION")?)?;
    let value = format!("cuda>={}", legacy.major_minor());
    let parsed = nvidia_require::parse(&value).ok()?;
    Some((
        format!(
            "CUDA_VERSION={} (no NVIDIA_REQUIRE_CUDA: the Toolkit requires {value})",
            legacy.as_str()
        ),
        parsed,
    ))
}

/// The first alternatives of a long requirement, then how many more: NVIDIA's images list a
/// dozen brands for each of five branches.
fn short(value: &str) -> String {
    let words: Vec<&str> = value.split_whitespace().collect();
    if words.len() <= 3 {
        return words.join(" ");
    }
    format!(
        "{} ... ({} alternatives in all)",
        words[..2].join(" "),
        words.len()
    )
}

/// `NVIDIA_DISABLE_REQUIRE` as Go's `strconv.ParseBool` reads it (what the Toolkit uses).
fn check_disabled(report: &Report) -> bool {
    env(report, "NVIDIA_DISABLE_REQUIRE")
        .is_some_and(|v| matches!(v.trim(), "1" | "t" | "T" | "TRUE" | "true" | "True"))
}

/// Whether a GPU's NVML brand is a consumer one (GeForce, TITAN), which no image lists among
/// its forward-compatibility brands; `None` when the GPU has no name.
fn consumer(gpu: &Gpu) -> Option<bool> {
    let name = gpu.name.as_deref()?.to_ascii_lowercase();
    Some(name.contains("geforce") || name.contains("titan"))
}

/// The lowest driver branch whose CUDA is at least `cuda`, and the driver the release shipped
/// with, from `cuda.toml`.
fn driver_for(manifests: &Manifests, cuda: &Version) -> (Option<u64>, Option<String>) {
    let branch = manifests
        .cuda
        .driver_branches
        .iter()
        .filter(|row| row.verified)
        .find(|row| Version::parse(&row.max_cuda).is_some_and(|m| &m >= cuda))
        .map(|row| row.branch);
    let toolkit = manifests
        .cuda
        .min_driver_for(cuda.as_str())
        .and_then(|r| r.toolkit_driver)
        .map(str::to_string);
    (branch, toolkit)
}

/// Whether `requirement` holds for one GPU (or, with none known, for no GPU) at a driver and
/// its CUDA, as libnvidia-container judges each visible GPU.
fn holds_at(
    requirement: &Requirement,
    gpu: Option<&Gpu>,
    cuda: &Version,
    driver: &Version,
) -> bool {
    let arch = gpu
        .and_then(|g| g.compute_capability.as_deref())
        .and_then(Version::parse);
    let consumer = gpu.and_then(consumer);
    let is = move |brand: &str| {
        let consumer_brand = brand.starts_with("geforce") || brand.starts_with("titan");
        consumer_brand == consumer.unwrap_or(false)
    };
    let facts = Facts {
        cuda: Some(cuda),
        driver: Some(driver),
        arch: arch.as_ref(),
        brand_is: consumer.is_some().then_some(&is as &dyn Fn(&str) -> bool),
    };
    requirement.holds(&facts)
}

/// The facts one finding is made of.
struct Unmet<'r> {
    said: String,
    requirement: Requirement,
    driver_text: &'r str,
    driver_source: &'static str,
    driver: Version,
    cuda: Version,
    cuda_source: String,
    compat: Option<(Version, Version)>,
    failing: Vec<&'r Gpu>,
}

/// The image's requirement against the host driver; `None` when it holds (or cannot be judged).
fn unmet<'r>(report: &'r Report, manifests: &Manifests) -> Option<Unmet<'r>> {
    let (said, requirement) = image_requirement(report)?;
    let (driver_text, driver_source) = match report.kernel.nvidia_version.as_deref() {
        Some(m) => (m, "kernel module"),
        None => (report.driver.version.as_deref()?, "driver"),
    };
    let driver = Version::parse(driver_text)?;
    // The host driver's own CUDA, not what nvidia-smi says inside a container whose compat
    // libcuda answers for it (compat-cuda.md R9).
    let (cuda, cuda_source) = match manifests.cuda.max_cuda_for_driver(driver_text) {
        Some(c) => (
            Version::parse(c)?,
            format!("cuda.toml, R{}", driver.major()),
        ),
        None => (
            Version::parse(report.driver.cuda_version.as_deref()?)?,
            "nvidia-smi".to_string(),
        ),
    };
    // A compat libcuda that loads on a GPU it does not serve is `forward-compat-unsupported`'s
    // (error 804), whose fix already says the same.
    let compat = compat_cuda(report, manifests);
    if forward_compat_libcuda(report).is_some() && compat.is_none() {
        return None;
    }
    let gpus = machine_gpus(report);
    let failing: Vec<&Gpu> = gpus
        .iter()
        .copied()
        .filter(|g| !holds_at(&requirement, Some(g), &cuda, &driver))
        .collect();
    let holds = if gpus.is_empty() {
        holds_at(&requirement, None, &cuda, &driver)
    } else {
        failing.is_empty()
    };
    (!holds).then_some(Unmet {
        said,
        requirement,
        driver_text,
        driver_source,
        driver,
        cuda,
        cuda_source,
        compat,
        failing,
    })
}

impl Unmet<'_> {
    /// Whether the requirement names GeForce or TITAN brands among its alternatives (CUDA 12.1
    /// images did; 12.8 and later do not).
    fn names_consumer(&self) -> bool {
        self.requirement.alternatives.iter().flatten().any(|c| {
            c.subject == Subject::Brand && {
                let v = c.value.to_ascii_lowercase();
                v.starts_with("geforce") || v.starts_with("titan")
            }
        })
    }

    /// Evidence on the requirement's branch alternatives and each GPU none of them holds for.
    fn evidence(&self, mut f: FindingBuilder) -> FindingBuilder {
        let branches = self.requirement.compat_branches();
        let names_consumer = self.names_consumer();
        if !branches.is_empty() {
            let list: Vec<String> = branches.iter().map(u64::to_string).collect();
            let brands = if names_consumer {
                "GPU brands GeForce included"
            } else {
                "GPU brands other than GeForce and TITAN"
            };
            f = f.evidence(format!(
                "alternatives for {brands} on driver branches {}; this host's branch is {}",
                list.join(", "),
                self.driver.major()
            ));
        }
        for gpu in &self.failing {
            let why = if consumer(gpu) == Some(true) && !names_consumer {
                " (a GeForce/TITAN GPU: the image's branch alternatives name other brands)"
            } else {
                ""
            };
            f = f
                .evidence(format!(
                    "{}: no alternative of the requirement holds for it on the {} branch{why}",
                    gpu_label(gpu),
                    self.driver.major()
                ))
                .subject(gpu.subject());
        }
        if let Some((compat_version, compat_cuda)) = &self.compat {
            f = f.evidence(format!(
                "forward-compatibility libcuda {compat_version} loads first (CUDA {})",
                compat_cuda.major_minor()
            ));
        }
        f
    }

    /// Newer branches the image accepts for these GPUs by their brand: an upgrade that needs no
    /// new image even where the branch's own CUDA is older than the image's.
    fn accepted_branches(&self, manifests: &Manifests) -> Vec<String> {
        self.requirement
            .compat_branches()
            .into_iter()
            .filter(|b| *b > self.driver.major())
            .filter(|b| {
                let Some(at) = Version::parse(&format!("{b}.999")) else {
                    return false;
                };
                let Some(b_cuda) = manifests
                    .cuda
                    .max_cuda_for_driver(at.as_str())
                    .and_then(Version::parse)
                else {
                    return false;
                };
                self.failing
                    .iter()
                    .all(|g| holds_at(&self.requirement, Some(g), &b_cuda, &at))
            })
            .map(|b| format!("R{b}"))
            .collect()
    }

    /// The fix: the driver the image's CUDA needs (Windows' under WSL2), an image for the
    /// driver's CUDA, and the branches the image accepts instead.
    fn fix(&self, report: &Report, manifests: &Manifests) -> String {
        let mut fix = Vec::new();
        let cuda = self.cuda.major_minor();
        if let Some(floor) = self.requirement.cuda_floor().and_then(Version::parse) {
            let (branch, toolkit) = driver_for(manifests, &floor);
            let driver_words = match (branch, toolkit) {
                (Some(b), Some(t)) => format!("R{b} or newer (CUDA {floor} shipped with {t})"),
                (Some(b), None) => format!("R{b} or newer"),
                (None, Some(t)) => format!("{t} or newer"),
                (None, None) => format!("one that supports CUDA {floor}"),
            };
            let windows = manifests
                .cuda
                .min_driver_for(floor.as_str())
                .and_then(|r| r.release.driver_windows.clone());
            fix.push(match (report.host.wsl, windows) {
                (true, Some(w)) => format!(
                    "On Windows, upgrade the NVIDIA driver to {w} or newer (CUDA {floor}'s \
                     Windows driver): WSL2 and its containers use the Windows driver, so nothing \
                     is installed in the image or the Linux guest."
                ),
                (true, None) => format!(
                    "On Windows, upgrade the NVIDIA driver to one for CUDA {floor} or newer: WSL2 \
                     and its containers use the Windows driver."
                ),
                (false, _) => format!(
                    "On the host, upgrade the NVIDIA driver to {driver_words}; the container uses \
                     the host's driver, so nothing is installed in the image."
                ),
            });
            fix.push(format!(
                "Or run a tag of the image built for CUDA {cuda} or older, or rebuild it on such \
                 a base (an `nvidia/cuda:{cuda}` tag or older for images built on NVIDIA's)."
            ));
        } else {
            fix.push(
                "On the host, upgrade the NVIDIA driver to one that meets the image's \
                 NVIDIA_REQUIRE_CUDA, or run an image built for the CUDA the driver supports \
                 (`nvidia-smi` shows it)."
                    .to_string(),
            );
        }
        let accepted = self.accepted_branches(manifests);
        if !accepted.is_empty() {
            fix.push(format!(
                "The image also accepts this GPU on the {} branch (its own alternatives, through \
                 the image's cuda-compat package).",
                accepted.join(" or ")
            ));
        }
        fix.join(" ")
    }
}

pub(super) fn driver_too_old_for_image(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let unmet = unmet(report, manifests)?;
    let floor = unmet.requirement.cuda_floor().and_then(Version::parse);
    let disabled = check_disabled(report);
    let runtime = report.host.container.as_deref();
    // Nothing of the image's CUDA runs when the driver's (or a working compat package's) major
    // is older; within the major, minor-version compatibility runs most of it, so where the
    // Toolkit's check was skipped on purpose (or never made: podman's CDI) it is a warning.
    let effective = match &unmet.compat {
        Some((_, c)) if c > &unmet.cuda => c,
        _ => &unmet.cuda,
    };
    let major_short = floor
        .as_ref()
        .is_some_and(|f| f.major() > effective.major());
    // A working compat libcuda (a data-center GPU) already gives the image its CUDA: only the
    // runtime's check is left to fail.
    let compat_serves = unmet
        .compat
        .as_ref()
        .zip(floor.as_ref())
        .is_some_and(|((_, c), f)| c >= f);
    let severity = if major_short || !(disabled || compat_serves || runtime == Some("podman")) {
        Severity::Error
    } else {
        Severity::Warning
    };
    let wanted = floor
        .as_ref()
        .map_or_else(|| "a newer CUDA".to_string(), |f| format!("CUDA {f}"));
    let where_ = runtime.map_or_else(
        || "This image".to_string(),
        |r| format!("This {r} container's image"),
    );
    let mut f = FindingBuilder::new(
        &ids::DRIVER_TOO_OLD_FOR_IMAGE,
        severity,
        format!(
            "{where_} needs {wanted} and the host driver {} supports CUDA {}",
            unmet.driver_text,
            unmet.cuda.major_minor()
        ),
    )
    .detail(
        "The image states the CUDA it needs in NVIDIA_REQUIRE_CUDA, and the NVIDIA Container \
         Toolkit checks it against the host driver before it starts the container: when it is \
         not met, the start fails with \"nvidia-container-cli: requirement error: unsatisfied \
         condition: cuda>=X.Y, please update your driver to a newer version, or use an earlier \
         cuda container\". A container gets the host's driver, so nothing inside the image \
         changes this: the host driver must support the image's CUDA, or the image must be one \
         built for an older CUDA. The image's other alternatives accept named driver branches \
         for named GPU brands: forward compatibility through the image's cuda-compat package on \
         data-center GPUs and, in some images, minor-version compatibility.",
    )
    .evidence(unmet.said.clone())
    .evidence(format!(
        "host driver: {} ({}), CUDA {} ({})",
        unmet.driver_text,
        unmet.driver_source,
        unmet.cuda.major_minor(),
        unmet.cuda_source
    ));
    f = unmet.evidence(f);
    if disabled {
        f = f.evidence(
            "NVIDIA_DISABLE_REQUIRE is set: the Toolkit skipped this check, so the container \
             started",
        );
    }
    Some(
        f.subject(crate::report::Subject::Driver(None))
            .fix(unmet.fix(report, manifests))
            .explains(&ids::TOOLKIT_NEWER_THAN_DRIVER)
            .build(),
    )
}
