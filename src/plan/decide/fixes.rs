//! The installed frameworks the plan repairs: what each needs of the driver and the GPU, and
//! the reinstall that fixes a build the GPU or driver cannot run. Pure.

// The parent's types and imports, and the sibling parts: this file is one part of one decision.
use super::*;
use crate::diagnose::ids;
use crate::plan::target::FrameworkSpec;
use crate::report::EnvKind;

/// What the frameworks and toolkits already on the machine need of the driver.
pub(super) fn installed_needs(machine: &Machine, m: &Manifests) -> Vec<Need> {
    let mut needs = Vec::new();
    for fw in &machine.frameworks {
        let Some(cuda) = fw.cuda.as_deref().and_then(Version::parse) else {
            continue;
        };
        let floor = (fw.name == FrameworkName::Jax)
            .then(|| {
                m.frameworks
                    .jax(fw.version.as_deref()?, cuda.major())?
                    .driver_min
                    .as_deref()
                    .and_then(Version::parse)
            })
            .flatten();
        needs.push(Need {
            cuda,
            native: false,
            floor,
            what: installed_what(fw),
            requested: false,
            serves: Some(Serves::Finding(&ids::DRIVER_TOO_OLD_FOR_FRAMEWORK)),
        });
    }
    for (path, version) in &machine.toolkits {
        if let Some(v) = version
            .as_deref()
            .and_then(Version::parse)
            .and_then(|v| Version::parse(&v.major_minor()))
        {
            needs.push(Need {
                cuda: v,
                native: true,
                floor: None,
                what: format!("the CUDA toolkit in {path}"),
                requested: false,
                serves: Some(Serves::Finding(&ids::TOOLKIT_NEWER_THAN_DRIVER)),
            });
        }
    }
    needs
}

/// Whether something is wrong that a plan fixes without being told a target.
pub(super) fn has_fix(
    machine: &Machine,
    needs: &[Need],
    m: &Manifests,
    ccs: &[String],
    working: Option<&DriverCap>,
) -> bool {
    let no_driver = machine.working_driver().is_none() && machine.driver_fixed().is_none();
    // Only what the doctor found: a framework that runs through a forward-compatibility
    // libcuda is not "driver too old" there, and the planner must not fix what is not broken.
    let found = machine.has(&ids::DRIVER_TOO_OLD_FOR_FRAMEWORK)
        || machine.has_problem(&ids::TOOLKIT_NEWER_THAN_DRIVER);
    let unmet = found && working.is_some_and(|cap| needs.iter().any(|n| !n.met_by(m, cap)));
    let rebuild = machine
        .frameworks
        .iter()
        .any(|f| f.env_kind != EnvKind::System && torch_rebuild(m, f, ccs).is_some());
    machine.nouveau_loaded
        || no_driver
        || unmet
        || rebuild
        || machine.has(&ids::DRIVER_LIBRARY_MISMATCH)
}

/// Why an installed torch must be replaced by another build of the same version: it is
/// CPU-only, or the manifests say its build has no code for one of these GPUs. The finding id
/// that says so.
pub(super) fn torch_rebuild(
    m: &Manifests,
    fw: &InstalledFramework,
    ccs: &[String],
) -> Option<&'static Kind> {
    if fw.name != FrameworkName::Torch {
        return None;
    }
    if fw.variant.as_deref() == Some("cpu") {
        return Some(&ids::CPU_ONLY_FRAMEWORK_BUILD);
    }
    let version = fw.version.as_deref()?;
    let tag = match version.split_once('+') {
        Some((_, local)) => local.to_string(),
        None => {
            let cuda = Version::parse(fw.cuda.as_deref()?)?;
            format!("cu{}{}", cuda.major(), cuda.minor())
        }
    };
    let build = m.frameworks.torch(version, &tag)?.build;
    ccs.iter()
        .any(|cc| choose::torch_build_covers(build, cc) == Some(false))
        .then_some(&ids::ARCH_NOT_IN_BUILD)
}

/// The fixes for what is wrong, each in its own scope: a torch build that is CPU-only, lacks
/// code for these GPUs, or needs more than the working driver runs is replaced in its own
/// environment by a build of the same release this driver runs; only what no environment step
/// can fix (no driver, a driver that predates the GPU, a toolkit newer than the driver) is
/// left in `needs` for the driver decision.
pub(super) fn plan_fixes(
    machine: &Machine,
    m: &Manifests,
    target: &Target,
    ccs: &[String],
    working: Option<&DriverCap>,
    d: &mut Decision<'_>,
    needs: &mut Vec<Need>,
) -> Result<(), Refusal> {
    for fw in &machine.frameworks {
        let rebuild = torch_rebuild(m, fw, ccs);
        let what = installed_what(fw);
        // Under --driver auto (or a branch) the driver changes instead.
        let too_old = fw.name == FrameworkName::Torch
            && machine.has(&ids::DRIVER_TOO_OLD_FOR_FRAMEWORK)
            && target.driver == DriverChoice::Keep
            && working.is_some_and(|cap| {
                needs
                    .iter()
                    .any(|n| !n.requested && n.what == what && !n.met_by(m, cap))
            });
        let finding = match rebuild {
            Some(finding) => finding,
            None if too_old => &ids::DRIVER_TOO_OLD_FOR_FRAMEWORK,
            None => continue,
        };
        if fw.env_kind == EnvKind::System {
            d.notes.push(format!(
                "torch {} in the system Python ({}) needs another build; this plan does not \
                 change the system Python: make a virtual environment with `gpu-doctor plan \
                 --via pip --framework torch --env DIR`.",
                fw.version.as_deref().unwrap_or(""),
                fw.env
            ));
            continue;
        }
        let version = fw
            .version
            .as_deref()
            .map(|v| v.split('+').next().unwrap_or(v).to_string());
        let spec = crate::plan::target::FrameworkSpec {
            name: FrameworkName::Torch,
            extra: None,
            version,
        };
        let python = target.python.clone().or_else(|| fw.env_python.clone());
        // The build must run on the driver that is there: the fix stays in the environment.
        let fixed = working.map(|cap| DriverCap {
            fixed: true,
            ..cap.clone()
        });
        let result = rebuild_build(machine, m, ccs, &spec, fixed.as_ref(), python.as_deref()).map(
            |(plan, note)| {
                if let Some(note) = note {
                    d.notes.push(format!("{what}: {note}"));
                }
                plan
            },
        );
        let plan = match result {
            Ok(plan) => plan,
            Err(why) if rebuild.is_none() => {
                // No build of this release runs on the driver: the driver has to change.
                d.notes.push(format!("{what}: {why}"));
                continue;
            }
            Err(why) => return Err(Refusal::new(why)),
        };
        let runs = working.is_none_or(|cap| {
            Need {
                cuda: plan.cuda.clone(),
                native: false,
                floor: None,
                what: String::new(),
                requested: false,
                serves: None,
            }
            .met_by(m, cap)
        });
        if rebuild.is_none() && !runs {
            continue;
        }
        if too_old {
            // This environment no longer needs more than the working driver runs.
            needs.retain(|n| n.what != what);
            d.options.push(format!(
                "{what} can stay as it is with a newer driver instead: `gpu-doctor plan \
                 --driver auto` plans the driver upgrade (and a reboot) rather than another \
                 torch build."
            ));
        }
        // What the new build needs of the driver is a need like any other: the driver step
        // (or a refusal under a driver that stays) follows from it.
        needs.push(Need {
            cuda: plan.cuda.clone(),
            native: false,
            floor: plan.driver_floor.clone(),
            what: plan.label.clone(),
            requested: false,
            serves: Some(Serves::Finding(finding)),
        });
        d.fixes.push(EnvFix {
            env: fw.env.clone(),
            framework: FrameworkPlan {
                replace: true,
                ..plan
            },
            serves: finding,
        });
        push_unique(&mut d.addresses, finding);
    }
    Ok(())
}

/// The torch build that replaces an installed one: the same release on the driver that stays.
/// On aarch64 the installed release may have no CUDA build at all (PyPI's aarch64 torch was
/// CPU-only up to 2.10.0): then the newest release that has one, on the driver that stays if
/// one runs on it, else with the driver it needs, and a note that says why.
fn rebuild_build(
    machine: &Machine,
    m: &Manifests,
    ccs: &[String],
    spec: &FrameworkSpec,
    fixed: Option<&DriverCap>,
    python: Option<&str>,
) -> Result<(FrameworkPlan, Option<String>), String> {
    let arch = super::machine_arch(machine);
    let resolve = |spec: &FrameworkSpec, cap: Option<&DriverCap>| {
        frameworks::resolve(m, arch, spec, ccs, None, cap, python, None, false)
    };
    let first = resolve(spec, fixed);
    let Some(v) = spec
        .version
        .as_deref()
        .filter(|_| arch == "aarch64" && first.is_err())
    else {
        return first.map(|plan| (plan, None));
    };
    let build = m.pypi.aarch64_build("torch", v);
    if build.is_some_and(|b| b.starts_with("cu")) {
        return first.map(|plan| (plan, None));
    }
    let newest = FrameworkSpec {
        version: None,
        ..spec.clone()
    };
    let plan = resolve(&newest, fixed).or_else(|_| resolve(&newest, None))?;
    let note = format!(
        "torch {v} has no CUDA build for aarch64 (its PyPI aarch64 wheel is {}; pypi.toml \
         aarch64_build), so the fix installs {} instead.",
        build.unwrap_or("not recorded"),
        plan.label
    );
    Ok((plan, Some(note)))
}

/// How an installed framework is named in needs and notes.
pub(super) fn installed_what(fw: &InstalledFramework) -> String {
    format!(
        "{} {} in {}",
        fw.name,
        fw.version.as_deref().unwrap_or("(version unknown)"),
        fw.env
    )
}
