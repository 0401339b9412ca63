//! Every package line a plan writes, checked against what its source really carries: apt
//! packages against the repositories of `repos.toml`, pip requirements against `pypi.toml` for
//! the environment's Python (and PyTorch's variants against `frameworks.toml`), conda packages
//! against the conda-forge rows of `install.toml`. [`super::plan`] refuses a plan with a line
//! that contradicts them rather than write a script that fails (or "succeeds" with the wrong
//! build) half-way; the plan sweep test counts the lines. Pure.

use crate::manifest::{Carried, Manifests};

use super::cmd::{Command, Word};
use super::{Plan, Step};

/// Where a line installs from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manager {
    Apt,
    Pip,
    Conda,
}

/// One package of one install command, and what the tables say of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The step's id.
    pub step: String,
    pub manager: Manager,
    /// The package as the script names it (`cuda-toolkit-12-6`, `libnccl2=*-1+cuda12.6`,
    /// `jax[cuda13]==0.8.1 (Python 3.11)`, `cuda-version=12.4`).
    pub text: String,
    /// `Ok(where it comes from)` or `Err(why it cannot install)`.
    pub verdict: Result<String, String>,
}

/// The package lines of a plan, each checked.
#[must_use]
pub fn check(plan: &Plan, m: &Manifests) -> Vec<Line> {
    let repos: Vec<&str> = plan.apt_repos.iter().map(String::as_str).collect();
    let releases: Vec<String> = m
        .cuda
        .releases
        .iter()
        .filter_map(|r| crate::version::Version::parse(&r.version).map(|v| v.major_minor()))
        .collect();
    let arch = plan.machine.arch.as_deref().unwrap_or("x86_64");
    let mut out = Vec::new();
    for step in &plan.steps {
        for command in &step.commands {
            lines_of(step, command, m, (&repos, arch), &releases, &mut out);
        }
    }
    out
}

/// `sources`: the repositories the apt lines come from and the machine architecture the pip
/// wheels are for.
fn lines_of(
    step: &Step,
    command: &Command,
    m: &Manifests,
    (repos, arch): (&[&str], &str),
    releases: &[String],
    out: &mut Vec<Line>,
) {
    let mut push = |manager, text: String, verdict| {
        out.push(Line {
            step: step.id().into_owned(),
            manager,
            text,
            verdict,
        });
    };
    let apt =
        |name: &str, version: Option<&str>| match m.repos.lookup(repos, name, version, releases) {
            Carried::Yes(repo) => Ok(repo),
            Carried::No(why) => Err(why),
        };
    match command {
        Command::Run { argv, .. } => {
            let lits: Vec<Option<String>> = argv.iter().map(word_text).collect();
            match lits.as_slice() {
                [Some(a), Some(b), rest @ ..] if a == "apt-get" && b == "install" => {
                    for word in rest.iter().flatten().filter(|w| !w.starts_with('-')) {
                        push(Manager::Apt, word.clone(), apt(word, None));
                    }
                }
                // `…/bin/python -m pip install uv==…`: a tool a step installs outside the
                // environment (its Python is the release's python3, any uv wheel is py3).
                [_, Some(flag), Some(module), Some(verb), rest @ ..]
                    if flag == "-m" && module == "pip" && verb == "install" =>
                {
                    for req in rest.iter().flatten().filter(|w| !w.starts_with('-')) {
                        push(Manager::Pip, req.clone(), pip(m, arch, req, None, None));
                    }
                }
                [Some(a), Some(b), rest @ ..]
                    if a == "conda" && (b == "install" || b == "create") =>
                {
                    let packages = conda_packages(rest);
                    let cuda = packages
                        .iter()
                        .find_map(|p| {
                            p.strip_prefix(&format!("{}=", m.install.conda.cuda_version_package))
                        })
                        .map(str::to_string);
                    for p in packages {
                        let verdict = conda(m, &p, cuda.as_deref());
                        push(Manager::Conda, p, verdict);
                    }
                }
                _ => {}
            }
        }
        Command::AptInstallMatching {
            packages,
            prefix,
            suffix,
        } => {
            for p in packages {
                let version = (!suffix.is_empty()).then_some(suffix.as_str());
                let text = format!("{p}={prefix}*{suffix}");
                push(Manager::Apt, text, apt(p, version));
            }
        }
        Command::Companions { dists, .. } => {
            for dist in dists {
                push(
                    Manager::Pip,
                    format!("{dist} (where installed)"),
                    pip(m, arch, dist, None, None),
                );
            }
        }
        Command::Pip { args, version, .. } => {
            let words: Vec<String> = args.iter().filter_map(word_text).collect();
            if words.first().map(String::as_str) != Some("install") {
                return;
            }
            let index = words
                .iter()
                .position(|w| w == "--index-url")
                .and_then(|i| words.get(i + 1))
                .cloned();
            for req in words.iter().skip(1).filter(|w| !w.starts_with('-')) {
                if Some(req) == index.as_ref() {
                    continue;
                }
                let text = match version {
                    Some(py) => format!("{req} (Python {py})"),
                    None => req.clone(),
                };
                push(
                    Manager::Pip,
                    text,
                    pip(m, arch, req, version.as_deref(), index.as_deref()),
                );
            }
        }
        _ => {}
    }
}

/// A word's text when it is a literal (a `$kernel` headers package gets a stand-in kernel, so
/// its pattern is what is checked).
fn word_text(word: &Word) -> Option<String> {
    match word {
        Word::Lit(text) => Some(text.clone()),
        Word::Join(parts) => parts
            .iter()
            .map(|p| match p {
                Word::Lit(t) => Some(t.clone()),
                Word::Var("kernel") => Some("0.0.0-0-generic".to_string()),
                _ => None,
            })
            .collect(),
        _ => None,
    }
}

/// The package words of a conda command: after the options (`-y`, `-n NAME`, `-c CHANNEL`).
fn conda_packages(words: &[Option<String>]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for w in words.iter().flatten() {
        if skip {
            skip = false;
            continue;
        }
        match w.as_str() {
            "-n" | "-c" | "--name" | "--channel" => skip = true,
            w if w.starts_with('-') => {}
            w => out.push(w.to_string()),
        }
    }
    out
}

/// A conda package against install.toml's conda-forge rows for the pinned CUDA.
fn conda(m: &Manifests, package: &str, cuda: Option<&str>) -> Result<String, String> {
    let name = package.split(['=', '<', '>']).next().unwrap_or(package);
    if name == "python" || name == m.install.conda.cuda_version_package {
        return Ok("conda-forge".to_string());
    }
    let offered = m.install.conda_channels.iter().any(|c| {
        c.channel == "conda-forge"
            && cuda.is_none_or(|cuda| c.covers(cuda))
            && c.packages.iter().any(|p| p == name)
    });
    if offered {
        Ok("conda-forge".to_string())
    } else {
        Err(format!(
            "install.toml lists no conda-forge {name}{}",
            cuda.map(|c| format!(" for CUDA {c}")).unwrap_or_default()
        ))
    }
}

/// A pip requirement (`name[extra]==version`) against pypi.toml, for this Python when known;
/// a PyTorch variant (`+cu126`, the index URL's tag) against frameworks.toml.
fn pip(
    m: &Manifests,
    arch: &str,
    requirement: &str,
    python: Option<&str>,
    index: Option<&str>,
) -> Result<String, String> {
    let (head, version) = match requirement.split_once("==") {
        Some((h, v)) => (h, Some(v)),
        None => (requirement, None),
    };
    let (name, extra) = match head.split_once('[') {
        Some((n, rest)) => (n, Some(rest.trim_end_matches(']'))),
        None => (head, None),
    };
    let (public, local) =
        match version.map(|v| v.split_once('+').map_or((v, None), |(p, l)| (p, Some(l)))) {
            Some((p, l)) => (Some(p.trim_end_matches(".*")), l),
            None => (None, None),
        };
    if name == "torch" {
        let variant = local.map(str::to_string).or_else(|| {
            index.and_then(|u| {
                u.trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .map(str::to_string)
            })
        });
        if let Some(variant) = &variant {
            let release = public.and_then(|v| m.frameworks.torch_release(v));
            if let Some(release) = release
                && !release.builds.iter().any(|b| &b.variant == variant)
            {
                return Err(format!(
                    "torch {} has no {variant} build (frameworks.toml)",
                    release.version
                ));
            }
            // On aarch64 only the build PyPI's aarch64 wheels are is known to exist there.
            if arch == "aarch64"
                && let Some(public) = public
                && m.pypi.knows("torch")
            {
                let build = m.pypi.aarch64_build("torch", public);
                if build != Some(variant.as_str()) {
                    return Err(format!(
                        "torch {public} has no {variant} build for aarch64 in the manifests (its \
                         PyPI aarch64 wheel is {}; pypi.toml aarch64_build)",
                        build.unwrap_or("not recorded")
                    ));
                }
            }
        }
    }
    // TensorFlow's [and-cuda] on aarch64: PyPI's aarch64 wheels must be a CUDA build.
    if arch == "aarch64"
        && name == "tensorflow"
        && extra == Some("and-cuda")
        && let Some(public) = public
        && m.pypi.knows("tensorflow")
    {
        let build = m.pypi.aarch64_build("tensorflow", public);
        if !build.is_some_and(|b| b.starts_with("cu")) {
            return Err(format!(
                "tensorflow {public}'s PyPI aarch64 wheels are {} (pypi.toml aarch64_build): no \
                 CUDA build",
                build.unwrap_or("not recorded")
            ));
        }
    }
    if !m.pypi.knows(name) {
        return Ok("PyPI (not in pypi.toml)".to_string());
    }
    match python {
        Some(py) => super::frameworks::land(m, arch, name, public, extra, py)
            .map(|_| format!("PyPI, Python {py}")),
        None => {
            let any = m.pypi.releases(name).any(|r| {
                public.is_none_or(|v| r.version == v || r.version.starts_with(&format!("{v}.")))
                    && extra.is_none_or(|e| r.has_extra(e) != Some(false))
            });
            if any {
                Ok("PyPI".to_string())
            } else {
                Err(format!("PyPI has no {requirement} (pypi.toml)"))
            }
        }
    }
}
