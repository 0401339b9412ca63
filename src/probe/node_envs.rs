//! Under `--host-root`: the Python environments a node's users keep in the usual places.
//!
//! On a real run the environments come from the user's own PATH, `VIRTUAL_ENV` and
//! `CONDA_PREFIX`. A DaemonSet's pod has none of the node users' variables, so it looks where
//! installers put environments: conda, Miniforge and Anaconda bases in `/opt` and `/usr/local`
//! with their `envs/`, any `/opt/*` folder that is a venv or conda prefix (`/opt/venv`), and in
//! each home (`/root`, `/home/*`) the conda bases, `~/.conda/environments.txt` and
//! `~/.conda/envs`, `~/.venv`, `~/venv`, virtualenvwrapper's `~/.virtualenvs`, pipenv's
//! `~/.local/share/virtualenvs`, pyenv's `~/.pyenv/versions`, and pip's `--user` site
//! (`~/.local`). Homes the pod may not read (mode 0700 without `CAP_DAC_READ_SEARCH`) are
//! simply absent. Pure reads through the [`Host`]; every listing is bounded.

use std::path::{Path, PathBuf};

use crate::host::Host;
use crate::parse::python_pkg;

/// How [`candidates`] names what it found in `python_envs[].found_via`.
pub const FOUND_VIA: &str = "host-root-scan";

/// At most this many entries of one folder are looked at (`/home` of a shared login node can
/// hold thousands of users; the first ones by name are enough to see drift).
const MAX_ENTRIES: usize = 512;

/// Installer folder names of a conda base.
const CONDA_BASES: [&str; 7] = [
    "conda",
    "miniconda",
    "miniconda3",
    "anaconda3",
    "miniforge3",
    "mambaforge",
    "micromamba",
];

/// Homes' environment folders that hold one environment each.
const HOME_ENVS: [&str; 3] = [".venv", "venv", ".local"];

/// Homes' folders whose subfolders are environments.
const HOME_ENV_PARENTS: [&str; 4] = [
    ".virtualenvs",
    ".local/share/virtualenvs",
    ".pyenv/versions",
    ".conda/envs",
];

/// Environment prefixes worth describing (the caller keeps those with a site folder or a
/// `pyvenv.cfg`), in a stable order, without repeats.
#[must_use]
pub fn candidates(host: &Host) -> Vec<PathBuf> {
    if host.host_root().is_none() {
        return Vec::new();
    }
    let mut out: Vec<PathBuf> = Vec::new();
    for top in ["/opt", "/usr/local"] {
        for base in CONDA_BASES {
            conda_base(host, &Path::new(top).join(base), &mut out);
        }
    }
    for entry in listing(host, Path::new("/opt")) {
        if host.fs.exists(entry.join("pyvenv.cfg")) || host.fs.is_dir(entry.join("conda-meta")) {
            out.push(entry);
        }
    }
    let homes = std::iter::once(PathBuf::from("/root")).chain(listing(host, Path::new("/home")));
    for home in homes {
        for base in CONDA_BASES {
            conda_base(host, &home.join(base), &mut out);
        }
        for name in HOME_ENVS {
            out.push(home.join(name));
        }
        for parent in HOME_ENV_PARENTS {
            out.extend(listing(host, &home.join(parent)));
        }
        if let Some(text) = host.fs.read_opt(home.join(".conda/environments.txt")) {
            out.extend(
                python_pkg::conda_environments_txt(&text)
                    .into_iter()
                    .filter(|p| p.starts_with('/'))
                    .map(PathBuf::from)
                    .take(MAX_ENTRIES),
            );
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|p| host.fs.is_dir(p) && seen.insert(p.clone()));
    out
}

/// A conda base and its `envs/*`.
fn conda_base(host: &Host, base: &Path, out: &mut Vec<PathBuf>) {
    if !host.fs.is_dir(base.join("conda-meta")) {
        return;
    }
    out.push(base.to_path_buf());
    out.extend(listing(host, &base.join("envs")));
}

/// The first [`MAX_ENTRIES`] subfolders of a folder, as machine paths.
fn listing(host: &Host, dir: &Path) -> Vec<PathBuf> {
    host.fs
        .read_dir(dir)
        .into_iter()
        .take(MAX_ENTRIES)
        .map(|e| e.path)
        .filter(|p| host.fs.is_dir(p))
        .collect()
}
