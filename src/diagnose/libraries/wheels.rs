//! `framework-wheels-conflict`: two frameworks of one environment pinning one CUDA library
//! wheel incompatibly, with the copy JAX would load as evidence and a way out from sourced data.

use super::pins::{same_release, spec_allows, spec_floor, split_pin, three_parts};
use super::torch_upgrade::torch_with_cudnn;
use crate::diagnose::{FindingBuilder, ids};
use crate::framework::FrameworkName;
use crate::manifest::Manifests;
use crate::report::{Finding, Framework, PythonEnv, Report, Severity, framework_subject};
use crate::version::Version;

/// A wheel two frameworks of one environment pin incompatibly.
pub(super) struct Conflict<'a> {
    pub(super) wheel: &'a str,
    pub(super) pins: Vec<(&'a Framework, &'a str)>,
    installed: Option<&'a crate::report::Wheel>,
}

pub(super) fn conflicts(env: &PythonEnv) -> Vec<Conflict<'_>> {
    let mut wheels: Vec<&str> = env
        .frameworks
        .iter()
        .flat_map(|f| f.pins.iter().map(|p| split_pin(p).0))
        .filter(|n| n.starts_with("nvidia-"))
        .collect();
    wheels.sort_unstable();
    wheels.dedup();
    wheels
        .into_iter()
        .filter_map(|wheel| {
            let pins: Vec<(&Framework, &str)> = env
                .frameworks
                .iter()
                .filter_map(|f| {
                    f.pins
                        .iter()
                        .find(|p| split_pin(p).0 == wheel)
                        .map(|p| (f, p.as_str()))
                })
                .collect();
            if pins.len() < 2 {
                return None;
            }
            let installed = env.nvidia_wheels.iter().find(|w| w.name == wheel);
            let installed_v = installed.and_then(|w| Version::parse(&w.version));
            let broken = pins.iter().any(|(_, pin)| {
                installed_v
                    .as_ref()
                    .is_some_and(|v| spec_allows(split_pin(pin).1, v) == Some(false))
            });
            let exact: Vec<Version> = pins
                .iter()
                .filter_map(|(_, p)| split_pin(p).1.strip_prefix("==").and_then(Version::parse))
                .collect();
            let exact_disagree = exact.windows(2).any(|w| !same_release(&w[0], &w[1]));
            (broken || exact_disagree).then_some(Conflict {
                wheel,
                pins,
                installed,
            })
        })
        .collect()
}

/// One finding per environment, listing every wheel its frameworks disagree on: one cause
/// (two frameworks sharing one environment), however many wheels it touches.
pub(super) fn wheels_conflict(
    report: &Report,
    manifests: &Manifests,
    env: &PythonEnv,
) -> Option<Finding> {
    let conflicts = conflicts(env);
    let first = conflicts.first()?;
    let mut names: Vec<&str> = conflicts
        .iter()
        .flat_map(|c| c.pins.iter().map(|(f, _)| f.name.as_str()))
        .collect();
    names.sort_unstable();
    names.dedup();
    let wheels: Vec<&str> = conflicts.iter().map(|c| c.wheel).collect();
    let mut f = FindingBuilder::new(
        &ids::FRAMEWORK_WHEELS_CONFLICT,
        Severity::Error,
        format!(
            "{} in {} need different versions of {}",
            names.join(" and "),
            env.path,
            if wheels.len() == 1 {
                first.wheel.to_string()
            } else {
                format!("{} CUDA library wheels", wheels.len())
            }
        ),
    )
    .detail(
        "Each framework's wheel pins the CUDA libraries it was built with. Frameworks sharing \
         one environment pin them differently, so whichever was installed last decides, and the \
         other loads libraries it was not built for (typically failing to load cuDNN or NCCL).",
    );
    for c in &conflicts {
        for (fw, pin) in &c.pins {
            f = f.evidence(format!(
                "{} {} requires {pin}",
                fw.name,
                fw.version.as_deref().unwrap_or("")
            ));
        }
        f = f.evidence(match c.installed {
            Some(w) => format!("installed: {} {}", w.name, w.version),
            None => format!("{} is not installed", c.wheel),
        });
        if c.wheel.starts_with("nvidia-cudnn") {
            f = jax_loads_cudnn(report, env, c, f);
        }
    }
    for name in &names {
        f = f.subject(framework_subject(&env.path, name));
    }
    let ways: Vec<String> = conflicts
        .iter()
        .filter_map(|c| resolution(manifests, env, c))
        .collect();
    let separate = "give each framework its own environment (`python -m venv` or `conda create`)";
    Some(
        f.fix(if ways.is_empty() {
            "Give each framework its own environment (`python -m venv` or `conda create`), or \
             install versions of the frameworks built against the same CUDA libraries."
                .to_string()
        } else {
            let ways = ways.join("; ");
            let mut first = ways.chars();
            let ways = first
                .next()
                .map(|c| c.to_uppercase().collect::<String>() + first.as_str())
                .unwrap_or_default();
            format!("{ways}; or {separate}.")
        })
        .build(),
    )
}

/// The copy of cuDNN a JAX in this environment will load, as evidence: JAX's CUDA plugin
/// (0.6.2 on) loads the `nvidia/cudnn` wheel's library by path, whichever framework's pins
/// brought it; XLA then refuses a minor older than the one it was built with.
fn jax_loads_cudnn<'a>(
    report: &Report,
    env: &PythonEnv,
    c: &Conflict<'a>,
    f: FindingBuilder,
) -> FindingBuilder {
    let Some((jax, pin)) = c.pins.iter().find(|(fw, _)| fw.name == FrameworkName::Jax) else {
        return f;
    };
    let Some(installed) = c.installed else {
        return f;
    };
    let (Some(have), Some(floor)) = (
        Version::parse(&installed.version),
        spec_floor(split_pin(pin).1),
    ) else {
        return f;
    };
    let loaded = report
        .libraries
        .loads
        .iter()
        .filter(|l| l.env == env.path && l.framework == jax.name)
        .flat_map(|l| &l.libraries)
        .find(|l| l.soname.starts_with("libcudnn.so."))
        .and_then(|l| l.path.clone());
    let mut f = f;
    if let Some(path) = loaded {
        f = f.evidence(format!(
            "jax {} would load {path} ({} {})",
            jax.version.as_deref().unwrap_or(""),
            installed.name,
            installed.version
        ));
    }
    let older = Version::parse(&have.major_minor()) < Version::parse(&floor.major_minor());
    if older {
        f = f.evidence(format!(
            "XLA refuses it: \"Loaded runtime CuDNN library: {} but source was compiled with: {}. CuDNN library needs to have matching major version and equal or higher minor version.\"",
            three_parts(&have),
            three_parts(&floor)
        ));
    }
    f
}

/// A way out that keeps both frameworks, from sourced data only: a version of the wheel that
/// one framework pins exactly and every other pin allows; else a newer torch release (for the
/// environment's Python, from frameworks.toml) whose build pins a version the others allow.
fn resolution(manifests: &Manifests, env: &PythonEnv, c: &Conflict<'_>) -> Option<String> {
    let allowed_by_all = |v: &Version, skip: Option<&str>| {
        c.pins
            .iter()
            .filter(|(fw, _)| Some(fw.name.as_str()) != skip)
            .all(|(_, pin)| spec_allows(split_pin(pin).1, v) == Some(true))
    };
    let exact: Vec<(&Framework, Version)> = c
        .pins
        .iter()
        .filter_map(|(fw, p)| {
            let v = split_pin(p).1.strip_prefix("==").and_then(Version::parse)?;
            Some((*fw, v))
        })
        .collect();
    if let Some((fw, v)) = exact.iter().find(|(_, v)| allowed_by_all(v, None)) {
        return Some(format!(
            "install the {} that {} pins, which every framework here allows: `pip install \"{}=={v}\"`",
            c.wheel, fw.name, c.wheel
        ));
    }
    // torch pins exactly; a newer torch may pin a version the others allow.
    let (torch, _) = exact
        .iter()
        .find(|(fw, _)| fw.name == FrameworkName::Torch)?;
    let wheel_major: u64 = c
        .wheel
        .rsplit_once("-cu")
        .and_then(|(_, m)| m.parse().ok())?;
    let up = torch_with_cudnn(manifests, env, torch, wheel_major, |v| {
        allowed_by_all(v, Some("torch"))
    })?;
    Some(format!(
        "upgrade torch to {} built for CUDA {} (its wheel pins {}=={}, which the others allow; `pip install \"torch=={}.*\" --index-url {}`)",
        up.release, up.cuda, c.wheel, up.cudnn, up.release, up.index
    ))
}
