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
pub(crate) const FOUND_VIA: &str = "host-root-scan";

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
pub(crate) fn candidates(host: &Host) -> Vec<PathBuf> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Env;

    fn mkdir(root: &Path, path: &str) {
        std::fs::create_dir_all(root.join(path)).expect("mkdir");
    }

    #[test]
    fn finds_environments_where_installers_put_them_and_only_under_host_root() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        for dir in [
            "opt/miniforge3/conda-meta",
            "opt/miniforge3/envs/train/conda-meta",
            "opt/venv",
            "opt/not-an-env/bin",
            "root/.venv",
            "home/bob/.virtualenvs/web",
            "home/bob/.pyenv/versions/3.11.9",
            "home/carol/anaconda3/conda-meta",
            "home/carol/elsewhere",
            "usr/local/micromamba/conda-meta",
        ] {
            mkdir(root, dir);
        }
        std::fs::write(root.join("opt/venv/pyvenv.cfg"), "version = 3.12.3\n").expect("cfg");
        mkdir(root, "home/carol/.conda");
        std::fs::write(
            root.join("home/carol/.conda/environments.txt"),
            "/home/carol/elsewhere\nrelative/ignored\n",
        )
        .expect("environments.txt");
        let host = Host::host_rooted(root, Env::default(), std::time::Duration::from_secs(1));
        let found: Vec<String> = candidates(&host)
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        for want in [
            "/opt/miniforge3",
            "/opt/miniforge3/envs/train",
            "/opt/venv",
            "/usr/local/micromamba",
            "/root/.venv",
            "/home/bob/.virtualenvs/web",
            "/home/bob/.pyenv/versions/3.11.9",
            "/home/carol/anaconda3",
            "/home/carol/elsewhere",
        ] {
            assert!(found.iter().any(|f| f == want), "{want} not in {found:?}");
        }
        assert!(!found.iter().any(|f| f == "/opt/not-an-env"), "{found:?}");
        let mut sorted = found.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), found.len(), "no repeats: {found:?}");
        // A fixture (--root) and a real run rely on the user's own variables instead.
        let rooted = Host::rooted(root, Env::default(), std::time::Duration::from_secs(1));
        assert!(candidates(&rooted).is_empty());
    }
}
