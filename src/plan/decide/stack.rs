//! The stack half of a decision: the toolkit, cuDNN, the framework build and the environment
//! they go into, each checked against what its source carries. Pure.

// The parent's types and imports, and the sibling parts: this file is one part of one decision.
use super::*;
use crate::manifest::Carried;
use crate::plan::machine::EnvFact;
use crate::plan::target::FrameworkSpec;
use crate::report::EnvKind;

/// The Pythons a new environment may be made with, oldest first: the table's list from 3.9.
pub(super) const PYTHONS: &[&str] = crate::manifest::PYTHONS.split_at(1).1;

/// What the stack's choice depends on: the machine, the tables, the target, the GPUs, and the
/// driver the picks must run on.
pub(super) struct StackAsk<'a> {
    pub machine: &'a Machine,
    pub m: &'a Manifests,
    pub target: &'a Target,
    pub ccs: &'a [String],
    /// What the picks must run on: the named branch, or a driver that stays; `None` under
    /// `--driver auto`, which picks the newest builds and the driver they need.
    pub cap: Option<&'a DriverCap>,
    /// The newest CUDA the plan picks when none is named (a driver that stays, or the named
    /// branch, runs no newer).
    pub ceiling: Option<&'a Version>,
    pub as_of: &'a str,
}

impl StackAsk<'_> {
    /// The stack the target names (or, with nothing named and nothing to fix, the newest
    /// stable one for these GPUs): the framework, then the toolkit, cuDNN and NCCL it runs
    /// with, then the environment they go into. What each needs of the driver goes to `needs`.
    pub(super) fn plan(&self, d: &mut Decision<'_>, needs: &mut Vec<Need>) -> Result<(), Refusal> {
        let user_cuda = match &self.target.cuda {
            Some(text) => Some(checked_cuda(self.m, text, self.ccs)?),
            None => None,
        };
        let existing = self.existing_env();
        let python = self.python(existing, d);
        let spec = self.framework_spec(d.via);
        if let Some(kept) = spec.as_ref().and_then(|s| self.working_install(s, d.via)) {
            d.notes.push(kept);
            return Ok(());
        }
        if let Some(spec) = &spec {
            let fw = self.framework(spec, user_cuda.as_ref(), python.clone(), existing, d)?;
            needs.push(Need {
                cuda: fw.cuda.clone(),
                native: false,
                floor: fw.driver_floor.clone(),
                what: fw.label.clone(),
                requested: true,
                serves: d.request(),
            });
            d.framework = Some(fw);
        }
        if d.via != Via::Pip {
            let toolkit = self.toolkit(user_cuda.as_ref(), d)?;
            needs.push(Need {
                cuda: toolkit.clone(),
                native: true,
                floor: None,
                what: format!("the CUDA {toolkit} toolkit"),
                requested: true,
                serves: d.request(),
            });
            d.cudnn = Some(cudnn_plan(
                self.m,
                d.via,
                &toolkit,
                self.ccs,
                self.target,
                d.framework.as_ref(),
            )?);
            d.nccl = true;
            self.drop_uncarried_libraries(&toolkit, d);
            d.toolkit = Some(toolkit);
        } else if self.target.cudnn.is_some()
            && d.framework.as_ref().is_some_and(|f| f.cudnn.is_none())
        {
            d.notes.push(
                "--cudnn: pip wheels bring their own cuDNN, so the plan installs none".to_string(),
            );
        }
        if spec.is_some() || d.via == Via::Conda {
            let (env, new_python) = env_plan(self.machine, self.m, self.target, d, python)?;
            if let Some(np) = &new_python
                && !matches!(np, NewPython::Distro { default: true, .. })
            {
                let os = d.apt.as_ref().map(|a| a.os.as_str());
                d.notes.push(format!("New environment: {}.", np.how(os)));
            }
            d.env = Some(env);
            d.new_python = new_python;
        }
        Ok(())
    }

    /// A framework asked for by name alone that its environment already has, as a GPU build,
    /// on a machine the doctor finds nothing wrong with: kept as it is (upgrading it would
    /// change what works and leave its companions behind). Said in a note, with how to ask
    /// for another release.
    fn working_install(&self, spec: &FrameworkSpec, via: Via) -> Option<String> {
        if via != Via::Pip
            || spec.version.is_some()
            || spec.extra.is_some()
            || !healthy(self.machine)
        {
            return None;
        }
        let (env, _) = default_env(self.machine, self.target)?;
        let fw = self.machine.frameworks.iter().find(|f| {
            f.name == spec.name
                && f.env.trim_end_matches('/') == env.trim_end_matches('/')
                && f.variant.as_deref() == Some("cuda")
        })?;
        let version = fw.version.as_deref().unwrap_or("(version unknown)");
        Some(format!(
            "{} {version} in {env} is a GPU build and the doctor finds nothing wrong: the plan \
             keeps it. To move to another release, name it: `--framework {}==X.Y`.",
            spec.name,
            spec.name.as_str()
        ))
    }

    /// The environment the framework goes into, when it exists already.
    fn existing_env(&self) -> Option<&EnvFact> {
        default_env(self.machine, self.target).and_then(|(path, _)| {
            self.machine
                .python_envs
                .iter()
                .find(|e| e.path.trim_end_matches('/') == path.trim_end_matches('/'))
        })
    }

    /// The Python the framework must install on: `--python`, else the existing environment's;
    /// a new venv gets the target release's `python3` (this machine's when the plan is for its
    /// own system), decided here once and used for every pick and every pip line.
    fn python(&self, existing: Option<&EnvFact>, d: &Decision<'_>) -> Option<String> {
        let env_python = existing.and_then(|e| e.python.clone());
        self.target.python.clone().or(env_python).or_else(|| {
            (d.via != Via::Conda)
                .then(|| interpreter::default_version(self.machine, self.m, d))
                .flatten()
        })
    }

    /// The framework named, or PyTorch for `--via pip` with none named (pip installs a
    /// framework or nothing).
    fn framework_spec(&self, via: Via) -> Option<FrameworkSpec> {
        self.target.framework.clone().or_else(|| {
            (via == Via::Pip).then_some(FrameworkSpec {
                name: FrameworkName::Torch,
                extra: None,
                version: None,
            })
        })
    }

    /// The framework build for these GPUs, this driver and the environment's Python. When no
    /// build installs on that Python, a new environment is made with the newest Python one
    /// does (a note says so); an existing environment or a named `--python` is a refusal that
    /// names the Python that would do.
    fn framework(
        &self,
        spec: &FrameworkSpec,
        user_cuda: Option<&Version>,
        python: Option<String>,
        existing: Option<&EnvFact>,
        d: &mut Decision<'_>,
    ) -> Result<FrameworkPlan, Refusal> {
        let via = d.via;
        let resolve = |python: Option<&str>| {
            frameworks::resolve(
                self.m,
                super::machine_arch(self.machine),
                spec,
                self.ccs,
                user_cuda,
                self.cap,
                python,
                self.target.cudnn,
                via == Via::Pip,
            )
        };
        // A conda environment gets the framework's own default Python unless one is named:
        // check the pip line against that one.
        let python = python.or_else(|| {
            resolve(None)
                .ok()
                .and_then(|fw| fw.python_default)
                .filter(|_| via == Via::Conda)
        });
        let why = match resolve(python.as_deref()) {
            Ok(fw) => return Ok(fw),
            Err(why) => why,
        };
        // Would another Python do? For a new environment: the newest the release's own
        // archive has that does, else the one nearest the release's python3 that does (newer
        // first on a tie): the most like the system's, with the most wheels for the rest of
        // the user's packages. uv brings it.
        let (distro, home) = d.apt.as_ref().map_or((Vec::new(), None), |apt| {
            let mut v: Vec<&str> = self
                .m
                .repos
                .pythons
                .iter()
                .filter(|p| p.os == apt.os)
                .map(|p| p.version.as_str())
                .collect();
            v.sort_by(|a, b| crate::version::compare(b, a));
            let home = self
                .m
                .repos
                .default_python(&apt.os)
                .map(|p| p.version.as_str());
            (v, home)
        });
        let at = |p: &str| PYTHONS.iter().position(|x| *x == p);
        let mut others: Vec<&str> = PYTHONS.to_vec();
        if let Some(home) = home.and_then(at) {
            others.sort_by_key(|p| {
                let i = at(p).unwrap_or(0);
                (i.abs_diff(home), std::cmp::Reverse(i))
            });
        } else {
            others.reverse();
        }
        let fitting = distro
            .iter()
            .chain(others.iter())
            .find_map(|p| resolve(Some(p)).ok().map(|fw| (*p, fw)));
        match (fitting, existing, &self.target.python) {
            (Some((p, fw)), None, None) => {
                d.notes.push(format!(
                    "{why}. So the plan makes the new environment with Python {p}."
                ));
                d.env_python = Some(p.to_string());
                Ok(fw)
            }
            (Some((p, _)), Some(env), _) => Err(Refusal::new(format!(
                "{why}: {} has Python {}. A new environment can have it: \
                 `gpu-doctor plan {} --env DIR --python {p}` with a DIR that does not \
                 exist yet",
                env.path,
                env.python.as_deref().unwrap_or("(unknown)"),
                crate::plan::shell::flags(&Target {
                    env: None,
                    python: None,
                    ..self.target.clone()
                })
            ))),
            (Some((p, _)), None, Some(_)) => {
                Err(Refusal::new(format!("{why} (--python {p} would do)")))
            }
            (None, ..) => Err(Refusal::new(why)),
        }
    }

    /// The CUDA toolkit (apt) or `cuda-version` (conda): `--cuda`, else the one the framework
    /// build needs, else the newest stable one these GPUs run under the ceiling; on apt, as
    /// NVIDIA's repository for the release carries it.
    fn toolkit(&self, user_cuda: Option<&Version>, d: &Decision<'_>) -> Result<Version, Refusal> {
        let (m, ccs, as_of, ceiling) = (self.m, self.ccs, self.as_of, self.ceiling);
        let toolkit = match (user_cuda, &d.framework) {
            (Some(c), _) => c.clone(),
            // A toolkit runs natively only: under a driver that stays, the newest of the
            // build's major that driver runs (the wheels themselves run through minor-version
            // compatibility).
            (None, Some(fw)) if fw.cuda_is_minor => match ceiling {
                Some(c) if &fw.cuda > c && fw.cuda.major() == c.major() => {
                    newest_in_major(m, ccs, as_of, Some(c), c.major())
                        .unwrap_or_else(|| fw.cuda.clone())
                }
                _ => fw.cuda.clone(),
            },
            (None, Some(fw)) => newest_in_major(m, ccs, as_of, ceiling, fw.cuda.major())
                .ok_or_else(|| {
                    Refusal::new(format!(
                        "no CUDA {}.x toolkit in the manifests serves compute capability {}",
                        fw.cuda.major(),
                        ccs.join(", ")
                    ))
                })?,
            (None, None) => {
                choose::newest_stable_cuda(&m.cuda, ccs, as_of, ceiling).ok_or_else(|| {
                    Refusal::new(format!(
                        "no CUDA release in the manifests serves compute capability {}",
                        ccs.join(", ")
                    ))
                })?
            }
        };
        if d.via == Via::Conda && toolkit.major() < 12 {
            return Err(Refusal::new(format!(
                "CUDA {toolkit} on conda means the monolithic cudatoolkit package or NVIDIA's \
                 per-release channel labels; gpu-doctor plans conda environments for CUDA 12.0 \
                 and newer (split packages pinned with cuda-version)"
            )));
        }
        if d.via == Via::Apt {
            carried_toolkit(m, d, ccs, ceiling, toolkit, user_cuda.is_some())
        } else {
            Ok(toolkit)
        }
    }

    /// On apt, NCCL and cuDNN come from NVIDIA's repository too: a library it does not build
    /// for this toolkit gets no step, and a note says why (pip frameworks bring their own).
    fn drop_uncarried_libraries(&self, toolkit: &Version, d: &mut Decision<'_>) {
        if d.via != Via::Apt {
            return;
        }
        let Some(apt) = &d.apt else {
            return;
        };
        let ids: Vec<&str> = apt.repo_ids.iter().map(String::as_str).collect();
        let nccl = format!("-1+cuda{}", toolkit.major_minor());
        if let Carried::No(why) = self.m.repos.lookup(&ids, "libnccl2", Some(&nccl), &[]) {
            d.nccl = false;
            d.notes.push(format!(
                "No NCCL step: NVIDIA's {} repository has no NCCL built for CUDA {toolkit} \
                 ({why}). pip frameworks bring their own NCCL.",
                apt.distro
            ));
        }
        let cudnn = format!("libcudnn9-cuda-{}", toolkit.major());
        if d.cudnn.is_some()
            && let Carried::No(why) = self.m.repos.lookup(&ids, &cudnn, None, &[])
        {
            d.cudnn = None;
            d.notes.push(format!(
                "No cuDNN step: NVIDIA's {} repository has no {cudnn} ({why}).",
                apt.distro
            ));
        }
    }
}

/// The toolkit as NVIDIA's repository for the target release carries it (repos.toml). A
/// release it lacks is refused when asked for with `--cuda` (with the nearest it has and the
/// other ways to get that CUDA); one the plan chose itself gives way to the newest carried
/// release of the same major that serves these GPUs within `ceiling`.
pub(super) fn carried_toolkit(
    m: &Manifests,
    d: &Decision<'_>,
    ccs: &[String],
    ceiling: Option<&Version>,
    toolkit: Version,
    asked: bool,
) -> Result<Version, Refusal> {
    let Some(apt) = &d.apt else {
        return Ok(toolkit);
    };
    let ids: Vec<&str> = apt.repo_ids.iter().map(String::as_str).collect();
    const PATTERN: &str = "cuda-toolkit-{major}-{minor}";
    let carries = |v: &Version| m.repos.carries_cuda(&ids, PATTERN, &v.major_minor());
    if carries(&toolkit) {
        return Ok(toolkit);
    }
    let mut series: Vec<Version> = m
        .cuda
        .releases
        .iter()
        .filter(|r| r.verified)
        .filter_map(|r| Version::parse(&Version::parse(&r.version)?.major_minor()))
        .collect();
    series.dedup();
    let carried: Vec<&Version> = series.iter().filter(|v| carries(v)).collect();
    let serves = |v: &Version| choose::cuda_refuses_gpus(&m.cuda, v, ccs).is_none();
    if !asked
        && let Some(v) = carried.iter().rev().find(|v| {
            v.major() == toolkit.major()
                && **v < &toolkit
                && serves(v)
                && ceiling.is_none_or(|c| **v <= c)
        })
    {
        return Ok((*v).clone());
    }
    let name = format!("cuda-toolkit-{}-{}", toolkit.major(), toolkit.minor());
    let why = match m.repos.lookup(&ids, &name, None, &[]) {
        Carried::No(why) => why,
        Carried::Yes(_) => String::new(),
    };
    let nearest = carried
        .iter()
        .filter(|v| serves(v))
        .min_by_key(|v| {
            let (a, b) = (
                v.major() * 100 + v.minor(),
                toolkit.major() * 100 + toolkit.minor(),
            );
            a.abs_diff(b)
        })
        .map(|v| {
            let branch = choose::lowest_branch_for(&m.cuda, v).map_or_else(String::new, |b| {
                format!(", which needs driver R{} or newer", b.branch)
            });
            format!(
                " The nearest it carries for these GPUs is cuda-toolkit-{}-{}{branch}.",
                v.major(),
                v.minor()
            )
        })
        .unwrap_or_else(|| " It carries no toolkit these GPUs can use.".to_string());
    let limit = ceiling.map_or_else(String::new, |c| {
        format!(" (the driver that stays runs CUDA up to {c})")
    });
    let conda = if toolkit.major() >= 12 {
        format!(
            " `--via conda --cuda {}` (conda-forge's cuda-version),",
            toolkit.major_minor()
        )
    } else {
        String::new()
    };
    Err(Refusal::new(format!(
        "NVIDIA's {} repository has no {name}{limit}: {why}.{nearest} Other ways to CUDA {}:{conda} \
         `--via pip --framework ...` (the framework's wheels bring their own CUDA libraries), or \
         a release whose repository has it (`--os`).",
        apt.distro,
        toolkit.major_minor()
    )))
}

/// A `--cuda` value checked against the manifests and the GPUs.
pub(super) fn checked_cuda(m: &Manifests, text: &str, ccs: &[String]) -> Result<Version, Refusal> {
    let parsed = Version::parse(text).ok_or_else(|| Refusal::new(format!("--cuda {text}")))?;
    let minor = Version::parse(&parsed.major_minor())
        .ok_or_else(|| Refusal::new(format!("--cuda {text}")))?;
    let Some(release) = m.cuda.release(&minor.major_minor()).filter(|r| {
        Version::parse(&r.version).is_some_and(|v| v.major_minor() == minor.major_minor())
    }) else {
        let series: Vec<String> = m
            .cuda
            .releases
            .iter()
            .filter_map(|r| Version::parse(&r.version).map(|v| v.major_minor()))
            .fold(Vec::new(), |mut acc, s| {
                if !acc.contains(&s) {
                    acc.push(s);
                }
                acc
            });
        return Err(Refusal::new(format!(
            "CUDA {text} is not a CUDA release (the manifests list {})",
            series.join(", ")
        )));
    };
    if !release.verified {
        return Err(Refusal::new(format!(
            "CUDA {} is in the manifests only as an unverified row (its driver is not known), \
             so no plan can be made for it",
            release.version
        )));
    }
    if let Some(why) = choose::cuda_refuses_gpus(&m.cuda, &minor, ccs) {
        return Err(Refusal::new(format!(
            "CUDA {minor} cannot work here: {why}"
        )));
    }
    Ok(minor)
}

/// The newest stable CUDA of one major for these GPUs.
pub(super) fn newest_in_major(
    m: &Manifests,
    ccs: &[String],
    as_of: &str,
    ceiling: Option<&Version>,
    major: u64,
) -> Option<Version> {
    let top = format!("{major}.999");
    let cap = match ceiling {
        Some(c) if c.major() == major => c.clone(),
        Some(c) if c.major() < major => return None,
        _ => Version::parse(&top)?,
    };
    choose::newest_stable_cuda(&m.cuda, ccs, as_of, Some(&cap))
        .filter(|v| v.major() == major)
        .filter(|v| ceiling.is_some() || choose::auto_branch(&m.cuda, v, ccs, as_of).is_ok())
}

/// cuDNN: the major asked for (or the framework's, or 9), pinned to the last release line that
/// still serves these GPUs and this CUDA when newer ones dropped them.
pub(super) fn cudnn_plan(
    m: &Manifests,
    via: Via,
    cuda: &Version,
    ccs: &[String],
    target: &Target,
    framework: Option<&FrameworkPlan>,
) -> Result<CudnnPlan, Refusal> {
    let major = target
        .cudnn
        .or_else(|| framework.and_then(|f| f.cudnn))
        .unwrap_or(9);
    if via == Via::Apt && major != 9 {
        return Err(Refusal::new(format!(
            "apt plans install cuDNN 9 (libcudnn9-cuda-{}); cuDNN {major} packages need an exact \
             version and CUDA pin that the manifests do not record",
            cuda.major()
        )));
    }
    if m.cudnn.soname(major).is_none() {
        return Err(Refusal::new(format!(
            "cuDNN {major} is not a cuDNN major the manifests know"
        )));
    }
    Ok(CudnnPlan {
        major,
        pin: choose::cudnn_pin(&m.cudnn, major, cuda, ccs),
    })
}

/// The environment a framework (or a conda CUDA stack) goes into: `--env`, else the one that
/// already holds the framework, else `./.venv` (pip) or a name after the stack (conda).
pub(super) fn env_plan(
    machine: &Machine,
    m: &Manifests,
    target: &Target,
    d: &Decision<'_>,
    python: Option<String>,
) -> Result<(EnvPlan, Option<NewPython>), Refusal> {
    // Without a framework, the newest Python the newest PyTorch supports, so one fits later.
    let python = d
        .env_python
        .clone()
        .or(python)
        .or_else(|| d.framework.as_ref().and_then(|f| f.python_default.clone()))
        .or_else(|| {
            m.frameworks
                .torch
                .iter()
                .rev()
                .find_map(|r| r.python_max.clone())
        });
    match d.via {
        Via::Conda => {
            let name = target.env.clone().unwrap_or_else(|| match &d.framework {
                Some(fw) => fw.name.as_str().to_string(),
                None => d
                    .toolkit
                    .as_ref()
                    .map_or_else(|| "cuda".to_string(), |t| format!("cuda-{t}")),
            });
            let python = python.ok_or_else(|| {
                Refusal::new(
                    "no Python version to create the conda environment with: pass --python",
                )
            })?;
            Ok((EnvPlan::Conda { name, python }, None))
        }
        Via::Apt | Via::Pip => {
            let path =
                default_env(machine, target).map_or_else(|| ".venv".to_string(), |(path, _)| path);
            if let Some(env) = interpreter::existing(machine, &path) {
                // The environment's own interpreter runs everything; this names it only.
                let python = env.python.as_deref().and_then(Version::parse).map_or_else(
                    || "python3".to_string(),
                    |p| format!("python{}", p.major_minor()),
                );
                return Ok((EnvPlan::Venv { path, python }, None));
            }
            let asked = target.python.as_ref().or(d.env_python.as_ref());
            let new = interpreter::new_python(machine, m, d, asked.map(String::as_str))?;
            let python = new.command();
            Ok((EnvPlan::Venv { path, python }, Some(new)))
        }
    }
}

/// `--env`, else the one virtual or conda environment that already holds the framework.
pub(super) fn default_env(machine: &Machine, target: &Target) -> Option<(String, String)> {
    if let Some(env) = &target.env {
        return Some((env.clone(), String::new()));
    }
    let name = target.framework.as_ref()?.name;
    let mut envs: Vec<&InstalledFramework> = machine
        .frameworks
        .iter()
        .filter(|f| f.name == name && f.env_kind == EnvKind::Venv)
        .collect();
    envs.dedup_by(|a, b| a.env == b.env);
    match envs.as_slice() {
        [one] => Some((one.env.clone(), one.env_kind.to_string())),
        _ => None,
    }
}
