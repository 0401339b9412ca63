//! The torch an AMD plan installs or keeps: the environment, the ROCm wheel that carries the
//! GPU's target (or its override sibling), and what it replaces.

use crate::diagnose::ids;
use crate::framework::FrameworkName;
use crate::manifest::{Manifests, TargetCarried, TorchWheel};
use crate::report::{EnvKind, Framework, PythonEnv, Report, Subject};
use crate::version::GfxTarget;

use super::{TORCH_FINDINGS, TorchChoice};
use crate::plan::Target;

/// PyTorch for the GPUs: asked for with `--framework torch[==V]`, or a torch here that a
/// finding says cannot run on the GPU (a CUDA or CPU build, or one without the target). A ROCm
/// build that carries the GPU's override sibling is kept: the override is the fix.
pub(super) fn choose_torch(
    report: &Report,
    m: &Manifests,
    target: &Target,
    targets: &[String],
) -> Result<Option<TorchChoice>, String> {
    let broken: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| ids::is_one_of(&TORCH_FINDINGS, &f.id))
        .flat_map(|f| f.subjects.iter())
        .filter_map(Subject::as_framework)
        .filter_map(|(env, name)| (name == "torch").then_some(env))
        .collect();
    let asked = target.framework.as_ref();
    if asked.is_none() && broken.is_empty() {
        return Ok(None);
    }
    let env = torch_env(report, target, &broken);
    let here = report.python_envs.iter().find(|e| e.path == env);
    let gfx = targets.first().map(String::as_str).unwrap_or("");
    let ask = TorchAsk {
        m,
        target,
        here,
        existing: here.and_then(|e| e.frameworks.iter().find(|f| f.name == FrameworkName::Torch)),
        python_version: target
            .python
            .clone()
            .or_else(|| here.and_then(|e| e.python_version.clone())),
        wanted_version: asked.and_then(|f| f.version.clone()),
        gfx,
        group: m.rocm.override_group(gfx).and_then(|g| {
            let sibling = GfxTarget::from_override(&g.value)?.to_string();
            Some(OverrideSibling {
                target: sibling,
                value: g.value.clone(),
                family: g.family.clone(),
            })
        }),
        env,
    };
    if let Some(kept) = ask.kept() {
        return Ok(Some(kept));
    }
    ask.install().map(Some)
}

/// The environment torch goes into: `--env`, else the one a finding names, else the one venv
/// that has torch, else `.venv`.
pub(super) fn torch_env(report: &Report, target: &Target, broken: &[&str]) -> String {
    target
        .env
        .clone()
        .or_else(|| broken.first().map(|e| (*e).to_string()))
        .or_else(|| {
            let torch_envs: Vec<&str> = report
                .python_envs
                .iter()
                .filter(|e| {
                    e.kind == EnvKind::Venv
                        && e.frameworks.iter().any(|f| f.name == FrameworkName::Torch)
                })
                .map(|e| e.path.as_str())
                .collect();
            (torch_envs.len() == 1).then(|| torch_envs[0].to_string())
        })
        .unwrap_or_else(|| ".venv".to_string())
}

/// A target's override sibling: the target ROCm's lists may carry in its place, and the
/// `HSA_OVERRIDE_GFX_VERSION` value (with the family's name) that makes the runtime use it.
pub(super) struct OverrideSibling {
    target: String,
    value: String,
    family: String,
}

impl OverrideSibling {
    /// The override to export, `(value, family)`, as [`TorchChoice`] keeps it.
    fn exported(&self) -> (String, String) {
        (self.value.clone(), self.family.clone())
    }
}

/// What the torch choice depends on, once the environment is known.
pub(super) struct TorchAsk<'a> {
    m: &'a Manifests,
    target: &'a Target,
    env: String,
    here: Option<&'a PythonEnv>,
    /// The torch in that environment now.
    existing: Option<&'a Framework>,
    /// `--python`, else the environment's: the wheel must install on it.
    python_version: Option<String>,
    /// The torch release asked for (`--framework torch==2.5`).
    wanted_version: Option<String>,
    /// The first GPU's gfx target.
    gfx: &'a str,
    group: Option<OverrideSibling>,
}

impl TorchAsk<'_> {
    /// A ROCm build here that carries the target, or its override sibling, stays when it is
    /// the version asked for (or none is).
    fn kept(&self) -> Option<TorchChoice> {
        let f = self
            .existing
            .filter(|f| f.variant.as_deref() == Some("rocm"))?;
        let wanted = self.wanted_version.as_deref().is_none_or(|v| {
            f.version
                .as_deref()
                .is_some_and(|have| same_release(have, v))
        });
        if !wanted {
            return None;
        }
        let carries = |t: &str| {
            f.gfx_targets.iter().any(|x| x == t)
                || (f.gfx_targets.is_empty()
                    && f.version.as_deref().is_some_and(|v| {
                        matches!(self.m.rocm.torch_carries(v, t), TargetCarried::Yes(_))
                    }))
        };
        let override_value = if carries(self.gfx) {
            None
        } else {
            let sibling = self.group.as_ref().filter(|g| carries(&g.target))?;
            Some(sibling.exported())
        };
        Some(TorchChoice {
            env: self.env.clone(),
            python: String::new(),
            wheel: None,
            replaces: None,
            cuda_wheels: Vec::new(),
            override_value,
        })
    }

    /// The wheel to install, replacing the torch here (and the `nvidia-*` wheels a CUDA build
    /// brought); a release asked for whose wheels do not carry the target is refused, naming
    /// the newest that does.
    fn install(self) -> Result<TorchChoice, String> {
        let (wheel, override_value) = self.wheel()?;
        if let Some(v) = &self.wanted_version
            && !same_release(&wheel.release, v)
        {
            return Err(format!(
                "torch {v}'s ROCm wheels do not carry {} (rocm.toml torch_targets); torch {} is \
                 the newest release whose wheels do",
                self.gfx,
                wheel.release.trim_end_matches(".*")
            ));
        }
        let existing = self.existing;
        Ok(TorchChoice {
            env: self.env,
            python: self
                .target
                .python
                .as_ref()
                .map_or_else(|| "python3".to_string(), |p| format!("python{p}")),
            wheel: Some(wheel),
            replaces: existing.map(|f| f.version.clone().unwrap_or_else(|| "torch".to_string())),
            cuda_wheels: self
                .here
                .filter(|_| existing.is_some_and(|f| f.variant.as_deref() == Some("cuda")))
                .map(|e| e.nvidia_wheels.iter().map(|w| w.name.clone()).collect())
                .unwrap_or_default(),
            override_value,
        })
    }

    /// Least change: the release that is there, in its ROCm build, when that carries the
    /// target; else the newest release that does; else the same through the override sibling
    /// (with the override to export).
    fn wheel(&self) -> Result<(TorchWheel, Option<(String, String)>), String> {
        let m = self.m;
        let same_release_here = self.existing.and_then(|f| f.version.clone());
        let wheel_for = |t: &str| {
            m.rocm.torch_wheel(
                &m.frameworks,
                self.wanted_version
                    .as_deref()
                    .or(same_release_here.as_deref()),
                t,
                self.python_version.as_deref(),
            )
        };
        if let Some(w) = wheel_for(self.gfx) {
            return Ok((w, None));
        }
        if let Some((w, sibling)) = self
            .group
            .as_ref()
            .and_then(|g| Some((wheel_for(&g.target)?, g)))
        {
            return Ok((w, Some(sibling.exported())));
        }
        Err(self.no_wheel())
    }

    /// Why no wheel carries the target: the maintainers' word when no override can help, and
    /// the newer Python that would get one when only this Python lacks it.
    fn no_wheel(&self) -> String {
        let (m, gfx) = (self.m, self.gfx);
        let why = m
            .rocm
            .no_override(gfx)
            .map(|n| {
                format!(
                    "; HSA_OVERRIDE_GFX_VERSION is no way round it: {}",
                    n.reason
                )
            })
            .unwrap_or_default();
        let python = match self.python_version.as_deref() {
            Some(p) if m.rocm.torch_wheel(&m.frameworks, None, gfx, None).is_some() => {
                format!(
                    " for Python {p}; a newer Python can take one (--python 3.12 --env \
                     .venv-rocm makes a new environment)"
                )
            }
            _ => String::new(),
        };
        format!("no PyTorch ROCm wheel in rocm.toml carries {gfx}{python}{why}")
    }
}

/// Whether two torch versions are the same release as far as the shorter says (`2.5` and
/// `2.5.1+rocm6.2`; `2.11.*` and `2.11`).
pub(super) fn same_release(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<String> {
        v.split('+')
            .next()
            .unwrap_or(v)
            .trim_end_matches(".*")
            .split('.')
            .map(str::to_string)
            .collect()
    };
    let (a, b) = (parts(a), parts(b));
    a.iter().zip(&b).all(|(x, y)| x == y)
}
