//! Python environments and the GPU frameworks in them, read from files without importing
//! anything: `torch/version.py`, TensorFlow's `build_info.py`, dist-info folder names and
//! metadata, `jax_plugins/`. Importing torch takes 5 s; reading these takes milliseconds.
//!
//! Environments come from every python on PATH, `VIRTUAL_ENV`, `CONDA_PREFIX`, conda's
//! `~/.conda/environments.txt`, and the system's own site/dist-packages. On a real run each
//! interpreter is also asked (isolated, `-I`, with a deadline) for its version and `sys.path`.
//!
//! One file a subject: this one finds the environments and describes each; `frameworks` reads
//! the frameworks and CUDA wheels of a site folder, `extensions` the packages with compiled
//! code built against torch, `conda` the frameworks conda installed (its `conda-meta` records),
//! `numba` numba's CUDA target and the libNVVM it would load.

mod conda;
mod extensions;
mod frameworks;
mod numba;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use conda::conda_frameworks;
use extensions::scan_extensions;
use frameworks::scan_site;

use crate::host::Host;
use crate::parse::python_pkg;
use crate::report::EnvKind;
use crate::report::{Extension, PythonEnv};

/// What a live interpreter prints for us: nothing is imported beyond `sys` and `json`.
const INTERPRETER_QUERY: &str = "import sys, json; print(json.dumps({'version': sys.version.split()[0], 'prefix': sys.prefix, 'path': sys.path}))";

use super::interp_cache::InterpreterInfo;

#[derive(Debug, Default)]
struct Candidate {
    found_via: Vec<String>,
    interpreter: Option<PathBuf>,
}

#[must_use]
pub(crate) fn probe(host: &Host) -> Vec<PythonEnv> {
    let mut candidates: Vec<_> = candidates(host).into_iter().collect();
    // Numbers in paths by value: pyenv's 3.6 before 3.10, as people count them.
    candidates.sort_by(|a, b| natural_cmp(&a.0.to_string_lossy(), &b.0.to_string_lossy()));
    super::in_parallel(&candidates, |(prefix, cand)| describe(host, prefix, cand))
        .into_iter()
        .flatten()
        .collect()
}

/// `a` against `b` with each run of digits compared as a number ("3.6" < "3.10"), the rest
/// as text; equal numbers with different leading zeros fall back to the text.
fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn runs(s: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let mut digit = None;
        for (i, c) in s.char_indices() {
            let d = c.is_ascii_digit();
            if digit.is_some_and(|was| was != d) {
                out.push((digit == Some(true), &s[start..i]));
                start = i;
            }
            digit = Some(d);
        }
        if start < s.len() {
            out.push((digit == Some(true), &s[start..]));
        }
        out
    }
    let (ra, rb) = (runs(a), runs(b));
    for (x, y) in ra.iter().zip(&rb) {
        let order = match (x, y) {
            ((true, p), (true, q)) => {
                let (p, q) = (p.trim_start_matches('0'), q.trim_start_matches('0'));
                p.len().cmp(&q.len()).then_with(|| p.cmp(q))
            }
            ((_, p), (_, q)) => p.cmp(q),
        };
        if order != std::cmp::Ordering::Equal {
            return order;
        }
    }
    ra.len().cmp(&rb.len()).then_with(|| a.cmp(b))
}

/// Environment prefixes keyed by their canonical path, with how each was found.
fn candidates(host: &Host) -> BTreeMap<PathBuf, Candidate> {
    let mut out: BTreeMap<PathBuf, Candidate> = BTreeMap::new();
    let mut add = |prefix: PathBuf, via: &str, interpreter: Option<PathBuf>| {
        let canonical = host.fs.canonical(&prefix, true).unwrap_or(prefix);
        // A conda install found by conda's own files already says how.
        if via == "conda" && out.contains_key(&canonical) {
            return;
        }
        let cand = out.entry(canonical).or_default();
        if !cand.found_via.iter().any(|v| v == via) {
            cand.found_via.push(via.to_string());
        }
        if cand.interpreter.is_none() {
            cand.interpreter = interpreter;
        }
    };
    for name in ["python3", "python"] {
        for exe in host.which_all(name) {
            // The folder holding the interpreter, after links, names the environment; the
            // interpreter itself is usually a link out of a venv and must not be followed.
            let Some(bin) = exe.parent() else { continue };
            let bin = host
                .fs
                .canonical(bin, true)
                .unwrap_or_else(|_| bin.to_path_buf());
            if let Some(prefix) = bin.parent() {
                add(prefix.to_path_buf(), "PATH", Some(exe.clone()));
            }
        }
    }
    for (var, via) in [
        ("VIRTUAL_ENV", "VIRTUAL_ENV"),
        ("CONDA_PREFIX", "CONDA_PREFIX"),
    ] {
        if let Some(prefix) = host.env.path(var) {
            add(prefix, via, None);
        }
    }
    for prefix in conda_environments(host) {
        add(prefix, "conda-environments", None);
    }
    for prefix in super::node_envs::candidates(host) {
        add(prefix, super::node_envs::FOUND_VIA, None);
    }
    // Shims (pyenv, asdf, mise) on PATH name no environment; their managers' roots do.
    for m in super::python_managers::find(host) {
        add(m.prefix, &m.via, None);
    }
    if !site_dirs(host, Path::new("/usr")).is_empty() {
        add(PathBuf::from("/usr"), "system", None);
    }
    out.retain(|prefix, _| {
        !site_dirs(host, prefix).is_empty() || host.fs.exists(prefix.join("pyvenv.cfg"))
    });
    // A Python built into /usr/local (the official `python:3.X` images) owns
    // /usr/local/lib/python3.X/site-packages; /usr, added only for its folders, would report the
    // same packages a second time.
    let usr = Path::new("/usr");
    let local = Path::new("/usr/local");
    if out.contains_key(local)
        && out.get(usr).is_some_and(|c| c.found_via == ["system"])
        && site_dirs(host, usr)
            .iter()
            .all(|d| site_dirs(host, local).contains(d))
    {
        out.remove(usr);
    }
    out
}

/// Environments conda knows: `~/.conda/environments.txt`, and `envs/*` of the base install
/// that `CONDA_PREFIX` or `CONDA_EXE` points into.
fn conda_environments(host: &Host) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(home) = host.env.path("HOME")
        && let Some(text) = host.fs.read_opt(home.join(".conda/environments.txt"))
    {
        out.extend(
            python_pkg::conda_environments_txt(&text)
                .into_iter()
                .filter(|p| p.starts_with('/'))
                .map(PathBuf::from),
        );
    }
    let base = host
        .env
        .path("CONDA_EXE")
        .and_then(|exe| exe.parent().and_then(Path::parent).map(Path::to_path_buf))
        .or_else(|| host.env.path("CONDA_PREFIX"));
    if let Some(base) = base {
        out.extend(
            host.fs
                .read_dir(base.join("envs"))
                .into_iter()
                .map(|e| e.path),
        );
    }
    out
}

/// The site/dist-packages folders of a prefix, covering Debian's and Fedora's layouts.
fn site_dirs(host: &Host, prefix: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut roots = vec![prefix.join("lib"), prefix.join("lib64")];
    // Debian's /usr/bin/python3 reads /usr/local/lib/python3.X/dist-packages (pip's installs)
    // and never /usr/local/lib/python3.X/site-packages, which belongs to a python built into
    // /usr/local; Fedora's reads /usr/local/lib/python3.X/site-packages, and its pip puts a
    // wheel with compiled code (torch) in /usr/local/lib64/python3.X/site-packages ("installed
    // to /usr/local/lib(64)/python3.10/site-packages/ ... since Fedora 27", Fedora Linux 36
    // release notes; YanWenKun/ComfyUI-Docker#126 shows a torch there).
    let debian = prefix == Path::new("/usr") && host.fs.is_dir("/usr/lib/python3/dist-packages");
    if prefix == Path::new("/usr") {
        roots.push(PathBuf::from("/usr/local/lib"));
        roots.push(PathBuf::from("/usr/local/lib64"));
    } else {
        roots.push(prefix.join("local/lib"));
        roots.push(prefix.join("local/lib64"));
    }
    for root in roots {
        let local = root == Path::new("/usr/local/lib") || root == Path::new("/usr/local/lib64");
        for entry in host.fs.read_dir(&root) {
            if !entry.name.starts_with("python3") {
                continue;
            }
            for leaf in ["site-packages", "dist-packages"] {
                if debian && local && leaf == "site-packages" {
                    continue;
                }
                let dir = entry.path.join(leaf);
                if host.fs.is_dir(&dir) {
                    let canonical = host.fs.canonical(&dir, true).unwrap_or(dir);
                    if !out.contains(&canonical) {
                        out.push(canonical);
                    }
                }
            }
        }
    }
    out
}

/// The user site folders (`$HOME/.local/lib/python3.X/site-packages`) of the Python versions a
/// prefix holds (its `lib/python3.X` folders, or the version the interpreter gave).
fn user_site_dirs(host: &Host, prefix: &Path, version: Option<&str>) -> Vec<PathBuf> {
    let Some(home) = host.env.path("HOME") else {
        return Vec::new();
    };
    let mut versions: Vec<String> = host
        .fs
        .read_dir(prefix.join("lib"))
        .into_iter()
        .filter_map(|e| e.name.strip_prefix("python").map(str::to_string))
        .filter(|v| v.starts_with("3.") && v[2..].chars().all(|c| c.is_ascii_digit()))
        .collect();
    if let Some(v) = version {
        let short: Vec<&str> = v.split('.').take(2).collect();
        if short.len() == 2 {
            versions.push(short.join("."));
        }
    }
    versions.sort();
    versions.dedup();
    versions
        .into_iter()
        .map(|v| home.join(format!(".local/lib/python{v}/site-packages")))
        .filter(|d| host.fs.is_dir(d))
        .map(|d| host.fs.canonical(&d, true).unwrap_or(d))
        .collect()
}

/// How a candidate is found when its interpreter is one a user runs directly (see [`describe`]).
const ASKED_VIA: [&str; 5] = [
    "PATH",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "conda-environments",
    "system",
];

fn describe(host: &Host, prefix: &Path, cand: &Candidate) -> Option<PythonEnv> {
    let pyvenv = host
        .fs
        .read_opt(prefix.join("pyvenv.cfg"))
        .map(|t| python_pkg::pyvenv_cfg(&t));
    let kind = if pyvenv.is_some() {
        EnvKind::Venv
    } else if host.fs.is_dir(prefix.join("conda-meta")) {
        EnvKind::Conda
    } else {
        EnvKind::System
    };
    let interpreter = cand.interpreter.clone().or_else(|| {
        ["bin/python3", "bin/python"]
            .iter()
            .map(|b| prefix.join(b))
            .find(|p| host.fs.is_executable(p))
    });
    // Interpreters a user reaches directly (PATH, an activated env, conda's list, the system
    // one) are asked for their sys.path. Versions found under a manager's root (pyenv, asdf,
    // mise, uv, pixi; the selected one too) are read from their standard CPython layout
    // instead: a machine can hold a dozen, and starting each would cost the scan ~100 ms on
    // two cores (measured here with nine pyenv versions: 0.15 s for the scan against 0.04 s).
    let reached_directly = cand
        .found_via
        .iter()
        .any(|v| ASKED_VIA.contains(&v.as_str()));
    let live = interpreter
        .as_deref()
        .filter(|_| host.runs_found_programs() && reached_directly)
        .and_then(|exe| ask_interpreter(host, exe));
    let mut sites = site_dirs(host, prefix);
    if let Some(info) = &live {
        // sys.path may add folders our layout rules do not know (a .pth, a distro quirk).
        for p in &info.path {
            let p = PathBuf::from(p);
            if (p.ends_with("site-packages") || p.ends_with("dist-packages"))
                && host.fs.is_dir(&p)
                && !sites.contains(&p)
                && Path::new(&info.prefix) == prefix
            {
                sites.push(p);
            }
        }
    }
    let python_version = live
        .as_ref()
        .map(|i| i.version.clone())
        .or_else(|| pyvenv.as_ref().and_then(|c| c.version.clone()))
        .or_else(|| version_from_site_dir(&sites));
    // `pip install --user` puts packages in the user's site folder, which a system or conda
    // interpreter puts before its own site-packages (PEP 370; the `-I` query above leaves it
    // out): Dao-AILab/flash-attention#1644's torch and flash-attn live in
    // ~/.local/lib/python3.10/site-packages. A venv does not read it.
    if kind != EnvKind::Venv {
        for dir in user_site_dirs(host, prefix, python_version.as_deref()) {
            if !sites.contains(&dir) {
                sites.insert(0, dir);
            }
        }
    }
    let mut frameworks = Vec::new();
    let mut wheels = Vec::new();
    let mut extensions = Vec::new();
    for site in &sites {
        scan_site(host, site, &mut frameworks, &mut wheels);
        extensions.extend(scan_extensions(host, site));
    }
    extensions.sort_by(|a: &Extension, b| (&a.name, &a.source).cmp(&(&b.name, &b.source)));
    if kind == EnvKind::Conda {
        conda_frameworks(host, prefix, &mut frameworks);
    }
    frameworks.sort_by(|a, b| (&a.name, &a.source).cmp(&(&b.name, &b.source)));
    wheels.sort_by(|a, b| a.name.cmp(&b.name));
    wheels.dedup_by(|a, b| a.name == b.name);
    Some(PythonEnv {
        path: prefix.display().to_string(),
        kind,
        python_version,
        interpreter: interpreter.map(|p| p.display().to_string()),
        site_packages: sites.iter().map(|p| p.display().to_string()).collect(),
        found_via: cand.found_via.clone(),
        frameworks,
        nvidia_wheels: wheels,
        // Filled by `probe::rocm_wheels`, which reads ROCm builds' own files.
        rocm_wheels: Vec::new(),
        numba: numba::probe(host, prefix, &sites),
        extensions,
    })
}

fn ask_interpreter(host: &Host, exe: &Path) -> Option<InterpreterInfo> {
    super::interp_cache::ask_cached(host.interpreter_cache.as_deref(), exe, || {
        let out = host.run(exe, &["-I", "-c", INTERPRETER_QUERY]).ok()?;
        if !out.success() {
            return None;
        }
        serde_json::from_str(out.stdout.trim()).ok()
    })
}

/// `lib/python3.12/site-packages` → "3.12".
fn version_from_site_dir(sites: &[PathBuf]) -> Option<String> {
    sites.iter().find_map(|s| {
        let name = s.parent()?.file_name()?.to_str()?;
        let v = name.strip_prefix("python")?;
        (v.contains('.') && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
            .then(|| v.to_string())
    })
}

#[cfg(test)]
mod order_tests {
    #[test]
    fn paths_are_ordered_by_the_numbers_in_them() {
        let mut paths = vec![
            "/root/.pyenv/versions/3.10.13",
            "/root/.pyenv/versions/3.6.15",
            "/usr",
            "/root/.pyenv/versions/3.9.18",
            "/root/.pyenv/versions/3.13.0",
            "/opt/env2",
            "/opt/env10",
            "/opt/env",
        ];
        paths.sort_by(|a, b| super::natural_cmp(a, b));
        assert_eq!(
            paths,
            [
                "/opt/env",
                "/opt/env2",
                "/opt/env10",
                "/root/.pyenv/versions/3.6.15",
                "/root/.pyenv/versions/3.9.18",
                "/root/.pyenv/versions/3.10.13",
                "/root/.pyenv/versions/3.13.0",
                "/usr",
            ]
        );
    }
}
