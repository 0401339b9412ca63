//! Interpreters behind version managers, found without running a shim: a `python3` on PATH
//! that is a pyenv, asdf or mise shim is a script that execs the version its manager selects,
//! so the selection is read the way the manager reads it, and every other installed version is
//! listed under its root too. Also conda/mamba installs in their usual places and pixi
//! environments.
//!
//! - pyenv: `PYENV_VERSION`, else `.python-version` from the working folder up, else
//!   `$PYENV_ROOT/version`; versions in `$PYENV_ROOT/versions/*` (default `~/.pyenv`).
//! - asdf: `ASDF_PYTHON_VERSION`, else `.tool-versions` from the working folder up, else
//!   `~/.tool-versions`; versions in `$ASDF_DATA_DIR/installs/python/*` (default `~/.asdf`).
//! - mise: `MISE_PYTHON_VERSION`, else `mise.toml` / `.mise.toml` / `.tool-versions` from the
//!   working folder up, else `~/.config/mise/config.toml`; versions in
//!   `$MISE_DATA_DIR/installs/python/*` (default `~/.local/share/mise`). A prefix ("3.11")
//!   selects the newest installed version it starts.
//! - uv: `.python-version` from the working folder up; versions in `$UV_PYTHON_INSTALL_DIR`
//!   (default `~/.local/share/uv/python/cpython-*`).

use std::path::{Path, PathBuf};

use crate::host::Host;

/// An interpreter prefix a manager owns, and how it was found ("pyenv", "pyenv (selected by
/// .python-version)").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Managed {
    pub prefix: PathBuf,
    pub via: String,
}

/// How many folders up from the working folder a version file is looked for.
const MAX_UP: usize = 64;

#[must_use]
pub(crate) fn find(host: &Host) -> Vec<Managed> {
    let home = host.env.path("HOME");
    let cwd = host.env.path("PWD");
    let mut out = Vec::new();
    let under = |var: &str, default: &str| {
        host.env
            .path(var)
            .or_else(|| home.as_ref().map(|h| h.join(default)))
    };
    if let Some(root) = under("PYENV_ROOT", ".pyenv") {
        let selected = host
            .env
            .get("PYENV_VERSION")
            .map(|v| (v.to_string(), "PYENV_VERSION".to_string()))
            .or_else(|| version_file_up(host, cwd.as_deref(), ".python-version"))
            .or_else(|| {
                let file = root.join("version");
                first_word(host, &file).map(|v| (v, file.display().to_string()))
            });
        out.extend(manager(host, "pyenv", &root.join("versions"), selected));
    }
    if let Some(root) = under("ASDF_DATA_DIR", ".asdf") {
        let selected = host
            .env
            .get("ASDF_PYTHON_VERSION")
            .map(|v| (v.to_string(), "ASDF_PYTHON_VERSION".to_string()))
            .or_else(|| tool_versions_up(host, cwd.as_deref()))
            .or_else(|| home.as_ref().and_then(|h| tool_versions(host, h)));
        out.extend(manager(
            host,
            "asdf",
            &root.join("installs/python"),
            selected,
        ));
    }
    if let Some(root) = under("MISE_DATA_DIR", ".local/share/mise") {
        let selected = host
            .env
            .get("MISE_PYTHON_VERSION")
            .map(|v| (v.to_string(), "MISE_PYTHON_VERSION".to_string()))
            .or_else(|| mise_config_up(host, cwd.as_deref()))
            .or_else(|| {
                home.as_ref()
                    .and_then(|h| mise_config(host, &h.join(".config/mise/config.toml")))
            });
        out.extend(manager(
            host,
            "mise",
            &root.join("installs/python"),
            selected,
        ));
    }
    if let Some(root) = under("UV_PYTHON_INSTALL_DIR", ".local/share/uv/python") {
        let selected = version_file_up(host, cwd.as_deref(), ".python-version");
        out.extend(manager(host, "uv", &root, selected));
    }
    out.extend(conda_installs(host, home.as_deref()));
    out.extend(pixi_envs(host, home.as_deref(), cwd.as_deref()));
    out
}

/// The versions installed under `versions`, the selected one marked with what selected it.
fn manager(
    host: &Host,
    name: &str,
    versions: &Path,
    selected: Option<(String, String)>,
) -> Vec<Managed> {
    let mut installed: Vec<(String, PathBuf)> = host
        .fs
        .read_dir(versions)
        .into_iter()
        .filter(|e| host.fs.is_dir(&e.path))
        .map(|e| (e.name, e.path))
        .collect();
    installed.sort_by(|a, b| crate::version::compare(&a.0, &b.0));
    // pyenv allows several ("3.12.1:3.11.7"); the first one answers `python3`.
    let wanted = selected.as_ref().and_then(|(v, _)| {
        let first = v.split(':').next().unwrap_or(v).trim();
        pick(&installed, first)
    });
    installed
        .into_iter()
        .map(|(version, prefix)| {
            let via = match (&wanted, &selected) {
                (Some(w), Some((_, by))) if *w == version => {
                    format!("{name} (selected by {by})")
                }
                _ => name.to_string(),
            };
            Managed { prefix, via }
        })
        .collect()
}

/// The installed version a selection names: exactly, as a uv folder
/// (`cpython-3.12.4-linux-x86_64-gnu`), or as a prefix ("3.11" → newest 3.11.x).
fn pick(installed: &[(String, PathBuf)], wanted: &str) -> Option<String> {
    if wanted.is_empty() || wanted == "system" {
        return None;
    }
    let bare = |n: &str| {
        n.strip_prefix("cpython-")
            .map(|r| r.split('-').next().unwrap_or(r).to_string())
            .unwrap_or_else(|| n.to_string())
    };
    installed
        .iter()
        .rev()
        .find(|(n, _)| {
            let b = bare(n);
            n == wanted || b == wanted || b.starts_with(&format!("{wanted}."))
        })
        .map(|(n, _)| n.clone())
}

/// The first word of a small file (pyenv's `version`, `.python-version`).
fn first_word(host: &Host, file: &Path) -> Option<String> {
    let text = host.fs.read_bytes_limited(file, 4096).ok()?;
    String::from_utf8_lossy(&text)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .and_then(|l| l.split_whitespace().next())
        .map(str::to_string)
}

/// The folders from `cwd` up to `/`, nearest first.
fn upward(cwd: Option<&Path>) -> Vec<PathBuf> {
    cwd.map(|c| c.ancestors().take(MAX_UP).map(Path::to_path_buf).collect())
        .unwrap_or_default()
}

fn version_file_up(host: &Host, cwd: Option<&Path>, name: &str) -> Option<(String, String)> {
    upward(cwd).into_iter().find_map(|d| {
        let file = d.join(name);
        first_word(host, &file).map(|v| (v, file.display().to_string()))
    })
}

/// `python 3.11.4` in a `.tool-versions` file.
fn tool_versions(host: &Host, dir: &Path) -> Option<(String, String)> {
    let file = dir.join(".tool-versions");
    let text = host.fs.read_bytes_limited(&file, 64 * 1024).ok()?;
    String::from_utf8_lossy(&text).lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some("python"))
            .then(|| {
                words
                    .next()
                    .map(|v| (v.to_string(), file.display().to_string()))
            })
            .flatten()
    })
}

fn tool_versions_up(host: &Host, cwd: Option<&Path>) -> Option<(String, String)> {
    upward(cwd)
        .into_iter()
        .find_map(|d| tool_versions(host, &d))
}

/// `[tools] python = "3.11"` (or a list, whose first entry wins) in a mise config file.
fn mise_config(host: &Host, file: &Path) -> Option<(String, String)> {
    let text = host.fs.read_bytes_limited(file, 256 * 1024).ok()?;
    let value: toml::Table = toml::from_str(&String::from_utf8_lossy(&text)).ok()?;
    let python = value.get("tools")?.get("python")?;
    let version = match python {
        toml::Value::String(s) => s.clone(),
        toml::Value::Array(a) => a.first()?.as_str()?.to_string(),
        toml::Value::Table(t) => t.get("version")?.as_str()?.to_string(),
        _ => return None,
    };
    Some((version, file.display().to_string()))
}

fn mise_config_up(host: &Host, cwd: Option<&Path>) -> Option<(String, String)> {
    upward(cwd).into_iter().find_map(|d| {
        ["mise.toml", ".mise.toml", ".config/mise.toml"]
            .iter()
            .find_map(|n| mise_config(host, &d.join(n)))
            .or_else(|| tool_versions(host, &d))
    })
}

/// Conda and mamba installs in their default places, with their `envs/*`.
fn conda_installs(host: &Host, home: Option<&Path>) -> Vec<Managed> {
    let mut bases: Vec<PathBuf> = vec![PathBuf::from("/opt/conda")];
    if let Some(h) = home {
        for name in [
            "miniconda3",
            "anaconda3",
            "miniforge3",
            "mambaforge",
            "micromamba",
            ".local/share/mamba",
        ] {
            bases.push(h.join(name));
        }
    }
    let mut out = Vec::new();
    for base in bases {
        if !host.fs.is_dir(base.join("conda-meta")) && !host.fs.is_dir(base.join("envs")) {
            continue;
        }
        if host.fs.is_dir(base.join("conda-meta")) {
            out.push(Managed {
                prefix: base.clone(),
                via: "conda".to_string(),
            });
        }
        out.extend(
            host.fs
                .read_dir(base.join("envs"))
                .into_iter()
                .filter(|e| host.fs.is_dir(e.path.join("conda-meta")))
                .map(|e| Managed {
                    prefix: e.path,
                    via: "conda".to_string(),
                }),
        );
    }
    out
}

/// pixi environments: the project's `.pixi/envs/*` from the working folder up, and pixi
/// global's `~/.pixi/envs/*`.
fn pixi_envs(host: &Host, home: Option<&Path>, cwd: Option<&Path>) -> Vec<Managed> {
    let mut roots: Vec<PathBuf> = upward(cwd)
        .into_iter()
        .map(|d| d.join(".pixi/envs"))
        .filter(|d| host.fs.is_dir(d))
        .take(1)
        .collect();
    if let Some(h) = home {
        roots.push(h.join(".pixi/envs"));
    }
    roots
        .iter()
        .flat_map(|r| host.fs.read_dir(r))
        .filter(|e| host.fs.is_dir(e.path.join("conda-meta")))
        .map(|e| Managed {
            prefix: e.path,
            via: "pixi".to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Env;
    use std::time::Duration;

    fn mkdirs(root: &Path, dirs: &[&str]) {
        for d in dirs {
            std::fs::create_dir_all(root.join(d.trim_start_matches('/'))).unwrap();
        }
    }

    fn write(root: &Path, file: &str, text: &str) {
        let path = root.join(file.trim_start_matches('/'));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn asdf_mise_uv_conda_and_pixi_are_read_from_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        mkdirs(
            root,
            &[
                "/home/u/.asdf/installs/python/3.11.9",
                "/home/u/.asdf/installs/python/3.12.4",
                "/home/u/.local/share/mise/installs/python/3.10.14",
                "/home/u/.local/share/mise/installs/python/3.13.1",
                "/home/u/.local/share/uv/python/cpython-3.12.7-linux-x86_64-gnu",
                "/home/u/miniforge3/conda-meta",
                "/home/u/miniforge3/envs/tf/conda-meta",
                "/home/u/work/app/.pixi/envs/default/conda-meta",
            ],
        );
        write(
            root,
            "/home/u/work/.tool-versions",
            "nodejs 20.1.0\npython 3.11.9\n",
        );
        write(
            root,
            "/home/u/work/app/mise.toml",
            "[tools]\npython = \"3.10\"\n",
        );
        write(root, "/home/u/work/app/.python-version", "3.12\n");
        let host = Host::rooted(
            root,
            Env::from_pairs([("HOME", "/home/u"), ("PWD", "/home/u/work/app")]),
            Duration::from_secs(1),
        );
        let found: Vec<(String, String)> = find(&host)
            .into_iter()
            .map(|m| (m.prefix.display().to_string(), m.via))
            .collect();
        let via = |p: &str| {
            found
                .iter()
                .find(|(prefix, _)| prefix == p)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(
            via("/home/u/.asdf/installs/python/3.11.9"),
            Some("asdf (selected by /home/u/work/.tool-versions)")
        );
        assert_eq!(via("/home/u/.asdf/installs/python/3.12.4"), Some("asdf"));
        assert_eq!(
            via("/home/u/.local/share/mise/installs/python/3.10.14"),
            Some("mise (selected by /home/u/work/app/mise.toml)")
        );
        assert_eq!(
            via("/home/u/.local/share/uv/python/cpython-3.12.7-linux-x86_64-gnu"),
            Some("uv (selected by /home/u/work/app/.python-version)")
        );
        assert_eq!(via("/home/u/miniforge3"), Some("conda"));
        assert_eq!(via("/home/u/miniforge3/envs/tf"), Some("conda"));
        assert_eq!(via("/home/u/work/app/.pixi/envs/default"), Some("pixi"));
    }

    fn v(list: &[&str]) -> Vec<(String, PathBuf)> {
        list.iter()
            .map(|n| ((*n).to_string(), PathBuf::from(format!("/v/{n}"))))
            .collect()
    }

    #[test]
    fn a_selection_picks_exactly_by_prefix_or_by_uv_folder() {
        let installed = v(&["3.10.14", "3.11.2", "3.11.9", "3.12.4"]);
        assert_eq!(pick(&installed, "3.11.2").as_deref(), Some("3.11.2"));
        assert_eq!(pick(&installed, "3.11").as_deref(), Some("3.11.9"));
        assert_eq!(pick(&installed, "3.1"), None);
        assert_eq!(pick(&installed, "system"), None);
        let uv = v(&["cpython-3.12.4-linux-x86_64-gnu"]);
        assert_eq!(
            pick(&uv, "3.12").as_deref(),
            Some("cpython-3.12.4-linux-x86_64-gnu")
        );
    }
}
