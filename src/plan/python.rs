//! The Python steps of a plan: a conda environment with CUDA from conda-forge, or a virtual
//! environment, and the framework installed with pip the way its project says. Pure.

use crate::manifest::Manifests;

use super::cmd::{Check, Command, Guard, Landed, Python, Word, words};
use super::decide::{Decision, EnvPlan, NewPython, UV_HOME};
use super::frameworks::FrameworkPlan;
use super::{Step, StepKind};

/// The Python steps of a decision.
#[must_use]
pub(super) fn steps(m: &Manifests, d: &Decision<'_>) -> Vec<Step> {
    let mut out = Vec::new();
    match &d.env {
        Some(EnvPlan::Conda { name, python }) => {
            out.push(conda_env(m, name, python));
            if let Some(step) = conda_cuda(m, d, name) {
                out.push(step);
            }
            if let Some(fw) = &d.framework {
                out.push(framework(fw, &Python::CondaEnv(name.clone()), name));
            }
        }
        Some(EnvPlan::Venv { path, python }) => {
            match &d.new_python {
                Some(new) => {
                    out.extend(python_packages(new, path));
                    out.push(match new {
                        NewPython::Uv { version, uv, .. } => uv_venv(path, version, uv),
                        _ => venv(path, python),
                    });
                }
                None => out.push(venv(path, python)),
            }
            if let Some(fw) = &d.framework {
                out.push(framework(fw, &Python::Prefix(path.clone()), path));
            }
        }
        None => {}
    }
    for (n, fix) in d.fixes.iter().enumerate() {
        let mut step = framework(&fix.framework, &Python::Prefix(fix.env.clone()), &fix.env);
        step.kind = StepKind::ReinstallTorch {
            nth: n,
            of: d.fixes.len(),
        };
        out.push(step);
    }
    out
}

fn conda_env(m: &Manifests, name: &str, python: &str) -> Step {
    let channel = conda_channel(m);
    Step {
        kind: StepKind::CondaEnv,
        title: format!("conda environment {name} with Python {python}"),
        why: format!(
            "A conda environment keeps this CUDA stack apart from the system. conda cannot \
             install a driver ({}; install.toml conda).",
            m.install.conda.not_in_conda.join(", ")
        ),
        guards: vec![
            Guard::skip(
                Check::CondaEnvExists(name.to_string()),
                format!("the conda environment {name} exists"),
            ),
            Guard::fail(
                Check::CommandMissing("conda".to_string()),
                "conda is not on PATH: install conda (Miniforge, for example) and run the plan again",
            ),
        ],
        commands: vec![Command::Run {
            argv: vec![
                Word::lit("conda"),
                Word::lit("create"),
                Word::lit("-y"),
                Word::lit("-n"),
                Word::lit(name),
                Word::lit("-c"),
                Word::lit(channel),
                Word::lit(format!("python={python}")),
            ],
            sudo: false,
        }],
        needs_root: false,
        reboot: false,
        serves: Vec::new(),
    }
}

/// conda-forge for CUDA 12 and newer: its split packages pinned by `cuda-version` (from 12.5
/// conda-forge and the nvidia channel are identical; for 12.0 to 12.4 they must not be mixed,
/// so one channel throughout; install.toml conda, conda_channel).
fn conda_channel(m: &Manifests) -> String {
    m.install
        .conda_channels
        .iter()
        .find(|c| c.channel == "conda-forge" && c.cuda_min.is_some())
        .map_or_else(|| "conda-forge".to_string(), |c| c.channel.clone())
}

/// The conda packages of the CUDA stack, each checked against the channel rows for this CUDA.
pub(super) fn conda_packages(m: &Manifests, d: &Decision<'_>) -> Vec<String> {
    let Some(cuda) = &d.toolkit else {
        return Vec::new();
    };
    let cuda = cuda.major_minor();
    let offered: Vec<&str> = m
        .install
        .conda_channels
        .iter()
        .filter(|c| c.channel == "conda-forge" && c.covers(&cuda))
        .flat_map(|c| c.packages.iter().map(String::as_str))
        .collect();
    let mut out = vec![format!("{}={cuda}", m.install.conda.cuda_version_package)];
    for name in ["cuda-toolkit", "cuda-nvcc"] {
        if offered.contains(&name) {
            out.push(name.to_string());
        }
    }
    if offered.contains(&"cudnn")
        && let Some(cudnn) = &d.cudnn
    {
        out.push(match &cudnn.pin {
            Some(line) => {
                let series: Vec<&str> = line.split('.').take(2).collect();
                format!("cudnn={}", series.join("."))
            }
            None => format!("cudnn={}", cudnn.major),
        });
    }
    if d.nccl && offered.contains(&"nccl") {
        out.push("nccl".to_string());
    }
    out
}

fn conda_cuda(m: &Manifests, d: &Decision<'_>, name: &str) -> Option<Step> {
    let cuda = d.toolkit.as_ref()?.major_minor();
    let packages = conda_packages(m, d);
    let channel = conda_channel(m);
    let mut argv = words(["conda", "install", "-y", "-n"]);
    argv.push(Word::lit(name));
    argv.extend(words(["-c", channel.as_str()]));
    argv.extend(packages.iter().map(|p| Word::lit(p.clone())));
    Some(Step {
        kind: StepKind::CondaCuda,
        title: format!("CUDA {cuda} from {channel} ({})", packages.join(" ")),
        why: format!(
            "{} {cuda} pins every CUDA component to one release and requires a driver for CUDA \
             {}.x (the __cuda virtual package); cudnn and nccl follow the pin. conda-forge's \
             nccl is named by the reference but marked unverified there (install.toml conda, \
             conda_channel; compat-cuda.md 6).",
            m.install.conda.cuda_version_package,
            d.toolkit.as_ref().map_or(0, crate::version::Version::major)
        ),
        guards: vec![Guard::skip(
            Check::CondaPackage {
                env: name.to_string(),
                package: m.install.conda.cuda_version_package.clone(),
                version: cuda.clone(),
            },
            format!("{name} has cuda-version {cuda}"),
        )],
        commands: vec![Command::Run { argv, sudo: false }],
        needs_root: false,
        reboot: false,
        serves: Vec::new(),
    })
}

/// The packages the release leaves out that a new environment needs: `python3-venv` (Ubuntu's
/// `python3` has no ensurepip without it), or another Python of the release's own archive.
/// Skipped once the environment exists or every package is installed.
fn python_packages(new: &NewPython, path: &str) -> Option<Step> {
    let packages = new.packages();
    if packages.is_empty() {
        return None;
    }
    let interpreter = format!("{}/bin/python", path.trim_end_matches('/'));
    let mut argv = words(["apt-get", "install", "-y"]);
    argv.extend(packages.iter().map(|p| Word::lit(p.clone())));
    let why = match new {
        NewPython::Uv { .. } => "uv goes into a virtual environment of its own, made with the \
             release's python3, which needs its venv module (repos.toml [[python]])."
            .to_string(),
        _ => format!(
            "{} of the release's own archive makes the environment; without its venv module \
             `-m venv` stops with 'ensurepip is not available' (repos.toml [[python]]).",
            new.command()
        ),
    };
    Some(Step {
        kind: StepKind::PythonPackages,
        title: format!(
            "The Python packages a new environment needs ({})",
            packages.join(" ")
        ),
        why,
        guards: vec![
            Guard::skip(
                Check::Executable(interpreter),
                format!("{path} has a Python"),
            ),
            Guard::skip(
                Check::All(packages.iter().cloned().map(Check::DpkgInstalled).collect()),
                format!("{} installed", packages.join(" ")),
            ),
        ],
        commands: vec![
            Command::Run {
                argv: words(["apt-get", "update"]),
                sudo: true,
            },
            Command::Run { argv, sudo: true },
        ],
        needs_root: true,
        reboot: false,
        serves: Vec::new(),
    })
}

/// A new environment with a Python the release does not carry: uv, pinned and in its own
/// environment under the user's home, installs a managed Python and makes the environment
/// with pip in it (`--seed`), so the framework step's `python -m pip` works as in a venv.
fn uv_venv(path: &str, version: &str, uv: &str) -> Step {
    let interpreter = format!("{}/bin/python", path.trim_end_matches('/'));
    let home = |tail: &str| {
        Word::Join(vec![
            Word::Var("HOME"),
            Word::lit(format!("{UV_HOME}{tail}")),
        ])
    };
    Step {
        kind: StepKind::Venv,
        title: format!("Python {version} virtual environment {path}, made by uv {uv}"),
        why: format!(
            "The release has no Python {version}: uv {uv} (PyPI, in ~{UV_HOME}) installs a \
             managed Python {version} and makes the environment with it."
        ),
        guards: vec![
            Guard::skip(
                Check::Executable(interpreter),
                format!("{path} has a Python"),
            ),
            Guard::fail(
                Check::CommandMissing("python3".to_string()),
                "python3 is not on PATH: uv is installed with it",
            ),
        ],
        commands: vec![
            Command::Run {
                argv: vec![
                    Word::lit("python3"),
                    Word::lit("-m"),
                    Word::lit("venv"),
                    home(""),
                ],
                sudo: false,
            },
            Command::Run {
                argv: vec![
                    home("/bin/python"),
                    Word::lit("-m"),
                    Word::lit("pip"),
                    Word::lit("install"),
                    Word::lit(format!("uv=={uv}")),
                ],
                sudo: false,
            },
            Command::Run {
                argv: vec![
                    home("/bin/uv"),
                    Word::lit("venv"),
                    Word::lit("--seed"),
                    Word::lit("--python"),
                    Word::lit(version),
                    Word::path(path),
                ],
                sudo: false,
            },
        ],
        needs_root: false,
        reboot: false,
        serves: Vec::new(),
    }
}

pub(super) fn venv(path: &str, python: &str) -> Step {
    let interpreter = format!("{}/bin/python", path.trim_end_matches('/'));
    Step {
        kind: StepKind::Venv,
        title: format!("Python virtual environment {path}"),
        why: "The framework's wheels go into a virtual environment, not the system Python \
 \
             (Ubuntu's own Python refuses pip installs outside one)."
            .to_string(),
        guards: vec![
            Guard::skip(
                Check::Executable(interpreter),
                format!("{path} has a Python"),
            ),
            Guard::fail(
                Check::CommandMissing(python.to_string()),
                format!("{python} is not on PATH: install that Python and run the plan again"),
            ),
        ],
        commands: vec![Command::Run {
            argv: vec![
                Word::lit(python),
                Word::lit("-m"),
                Word::lit("venv"),
                Word::path(path),
            ],
            sudo: false,
        }],
        needs_root: false,
        reboot: false,
        serves: Vec::new(),
    }
}

/// The check after pip that the GPU build landed: torch reports a CUDA version; a framework
/// installed with an extra has every wheel the extra adds.
/// CuPy without an extra has nothing to check beyond the install: its `cupy-cudaNNx` wheel
/// is the CUDA build.
fn landed(fw: &FrameworkPlan, python: &Python) -> Option<Command> {
    let (check, what) = match (&fw.extra_dist, fw.name) {
        (Some((dist, extra)), _) => (
            Landed::ExtraWheels {
                dist: dist.clone(),
                extra: extra.clone(),
            },
            format!("the wheels of {dist}[{extra}] are not all installed"),
        ),
        (None, super::FrameworkName::Torch) => (
            Landed::TorchCuda,
            "torch.version.cuda is None: this torch is a CPU-only build".to_string(),
        ),
        (None, _) => return None,
    };
    Some(Command::Landed {
        python: python.clone(),
        check,
        message: format!(
            "pip finished, but the GPU build of {} did not land: {what}. pip may have settled on \
             another release; see its output above.",
            fw.label
        ),
    })
}

/// pip-installs a framework into an environment (replacing another build of it when asked).
fn framework(fw: &FrameworkPlan, python: &Python, where_: &str) -> Step {
    let mut install = words(["install", fw.requirement.as_str()]);
    if let Some(url) = &fw.index_url {
        install.extend(words(["--index-url", url.as_str()]));
    }
    let mut commands = Vec::new();
    let companions = !fw.companions.is_empty();
    if companions {
        commands.push(Command::Companions {
            python: python.clone(),
            dists: fw.companions.clone(),
        });
    }
    if fw.replace {
        commands.push(Command::Pip {
            python: python.clone(),
            args: words(["uninstall", "-y", fw.dist.as_str()]),
            version: fw.python.clone(),
            companions,
        });
    }
    commands.push(Command::Pip {
        python: python.clone(),
        args: install,
        version: fw.python.clone(),
        companions,
    });
    commands.extend(landed(fw, python));
    let replace = if fw.replace {
        " Another build is installed there; pip would take it as satisfying the version, so it \
         is uninstalled first."
    } else {
        ""
    };
    Step {
        kind: StepKind::Framework(fw.name),
        title: format!("{} in {where_}", fw.label),
        why: format!("{}{replace}", fw.why),
        guards: vec![Guard::skip(
            Check::PythonDist {
                python: python.clone(),
                dist: fw.dist.clone(),
                prefix: fw.dist_prefix.clone(),
                local: fw.dist_local.clone(),
            },
            format!("{} is installed there", fw.label),
        )],
        commands,
        needs_root: false,
        reboot: false,
        serves: Vec::new(),
    }
}
