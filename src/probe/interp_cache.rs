//! The Python interpreters' answers (version, prefix, `sys.path`), remembered between runs the
//! way uv caches interpreter facts: the question costs 30–90 ms an interpreter (most of it
//! the `.pth` files its `site` runs), and is the longest part of a scan on a GPU machine.
//!
//! An answer is kept in `$XDG_CACHE_HOME/gpu-doctor/python/` (else `~/.cache/gpu-doctor/`),
//! one file per interpreter path, with what it depends on: the interpreter's path, the file it
//! resolves to with its size and modification time, the `pyvenv.cfg` beside it or above it,
//! and every folder of its `sys.path` with that folder's modification time (a `.pth` file
//! added or removed changes it), each `.pth` file's and `sitecustomize.py`'s size and time,
//! and zip entries' size and time. A file that was absent is recorded as absent. Anything
//! different, missing or unreadable means the interpreter is asked again: nothing stale may
//! reach a report. `--no-cache` (or `GPU_DOCTOR_NO_CACHE=1`) asks every time and writes
//! nothing; under `--root` and `--host-root` interpreters are never run, so the cache is never
//! read or written.

#![allow(
    clippy::disallowed_methods,
    reason = "the interpreters' cache lives on the real machine ($XDG_CACHE_HOME) and serves only the real host, never --root"
)]

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Bumped when the question or the key changes: older entries are then ignored.
const FORMAT: u32 = 1;

/// What an interpreter said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct InterpreterInfo {
    pub version: String,
    pub prefix: String,
    pub path: Vec<String>,
}

/// A file's identity for the cache: None when it does not exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    path: PathBuf,
    /// (size, modification time in ns since the epoch); None when absent.
    seen: Option<(u64, u128)>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    format: u32,
    interpreter: PathBuf,
    /// Where the interpreter's path resolves to (symbolic links followed).
    resolved: Option<PathBuf>,
    stamps: Vec<Stamp>,
    info: InterpreterInfo,
}

/// The cache folder for `env` (XDG first), or None when neither variable is set.
#[must_use]
pub(crate) fn default_dir(env: &crate::host::Env) -> Option<PathBuf> {
    let base = env
        .get("XDG_CACHE_HOME")
        .filter(|d| Path::new(d).is_absolute())
        .map(PathBuf::from)
        .or_else(|| {
            env.get("HOME")
                .filter(|h| Path::new(h).is_absolute())
                .map(|h| Path::new(h).join(".cache"))
        })?;
    Some(base.join("gpu-doctor"))
}

/// The answer for `exe`: from `cache` when every file it depends on is as it was, else from
/// `ask` (stored for next time when it answered). No `cache`: just `ask`.
pub(crate) fn ask_cached(
    cache: Option<&Path>,
    exe: &Path,
    ask: impl FnOnce() -> Option<InterpreterInfo>,
) -> Option<InterpreterInfo> {
    let Some(cache) = cache else {
        return ask();
    };
    let file = entry_file(cache, exe);
    if let Some(info) = read_valid(&file, exe) {
        return Some(info);
    }
    let info = ask()?;
    let entry = Entry {
        format: FORMAT,
        interpreter: exe.to_path_buf(),
        resolved: std::fs::canonicalize(exe).ok(),
        stamps: stamps(exe, &info),
        info: info.clone(),
    };
    store(&file, &entry);
    Some(info)
}

fn entry_file(cache: &Path, exe: &Path) -> PathBuf {
    let digest = Sha256::digest(exe.as_os_str().as_encoded_bytes());
    let name: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    cache.join("python").join(format!("{name}.json"))
}

fn read_valid(file: &Path, exe: &Path) -> Option<InterpreterInfo> {
    let text = std::fs::read_to_string(file).ok()?;
    let entry: Entry = serde_json::from_str(&text).ok()?;
    let valid = entry.format == FORMAT
        && entry.interpreter == exe
        && entry.resolved == std::fs::canonicalize(exe).ok()
        && entry.stamps == stamps(exe, &entry.info);
    valid.then_some(entry.info)
}

fn stamp(path: &Path) -> Stamp {
    let seen = std::fs::metadata(path).ok().map(|m| {
        let time = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        (m.len(), time)
    });
    Stamp {
        path: path.to_path_buf(),
        seen,
    }
}

/// Every file the answer depends on, in a fixed order (so two computations compare equal).
fn stamps(exe: &Path, info: &InterpreterInfo) -> Vec<Stamp> {
    let mut out = Vec::new();
    out.push(stamp(exe));
    if let Ok(real) = std::fs::canonicalize(exe) {
        out.push(stamp(&real));
    }
    // `site` looks for pyvenv.cfg beside the interpreter and one folder up.
    if let Some(bin) = exe.parent() {
        out.push(stamp(&bin.join("pyvenv.cfg")));
        if let Some(up) = bin.parent() {
            out.push(stamp(&up.join("pyvenv.cfg")));
        }
    }
    out.push(stamp(&Path::new(&info.prefix).join("pyvenv.cfg")));
    for dir in &info.path {
        let dir = Path::new(dir);
        let here = stamp(dir);
        let is_dir = dir.is_dir();
        out.push(here);
        if !is_dir {
            continue;
        }
        out.push(stamp(&dir.join("sitecustomize.py")));
        let mut pth: Vec<PathBuf> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "pth"))
            .collect();
        pth.sort();
        out.extend(pth.iter().map(|p| stamp(p)));
    }
    out
}

fn store(file: &Path, entry: &Entry) {
    let Some(dir) = file.parent() else {
        return;
    };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let Ok(json) = serde_json::to_string(entry) else {
        return;
    };
    // Written beside and renamed: a reader sees the old entry or the new one, never half.
    if let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) {
        use std::io::Write;
        if tmp.write_all(json.as_bytes()).is_ok() {
            let _ = tmp.persist(file);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::fs;

    use super::*;

    fn info(site: &Path) -> InterpreterInfo {
        InterpreterInfo {
            version: "3.12.3".to_string(),
            prefix: site.parent().unwrap_or(site).display().to_string(),
            path: vec![
                site.display().to_string(),
                "/nonexistent/python312.zip".to_string(),
            ],
        }
    }

    /// A tree with `bin/python3` and a site folder; returns (root, exe, site).
    fn tree() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let root = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let bin = root.path().join("env/bin");
        let site = root.path().join("env/lib/python3.12/site-packages");
        fs::create_dir_all(&bin).unwrap_or_else(|e| panic!("{e}"));
        fs::create_dir_all(&site).unwrap_or_else(|e| panic!("{e}"));
        let exe = bin.join("python3");
        fs::write(&exe, "#!/bin/sh\necho one\n").unwrap_or_else(|e| panic!("{e}"));
        (root, exe, site)
    }

    /// Sets a file's modification time `secs` after the epoch (so a change within one clock
    /// tick is still seen).
    fn set_mtime(path: &Path, secs: u64) {
        let f = fs::File::options()
            .write(true)
            .open(path)
            .unwrap_or_else(|e| panic!("{e}"));
        f.set_modified(UNIX_EPOCH + std::time::Duration::from_secs(secs))
            .unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn an_unchanged_interpreter_is_asked_once_and_a_changed_one_again() {
        let (root, exe, site) = tree();
        let cache = root.path().join("cache");
        let asked = Cell::new(0);
        let ask = || {
            asked.set(asked.get() + 1);
            Some(info(&site))
        };
        assert_eq!(ask_cached(Some(&cache), &exe, ask), Some(info(&site)));
        assert_eq!(ask_cached(Some(&cache), &exe, ask), Some(info(&site)));
        assert_eq!(asked.get(), 1, "the second run used the cache");

        // A new interpreter build in the same place: asked again.
        fs::write(&exe, "#!/bin/sh\necho two, longer\n").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ask_cached(Some(&cache), &exe, ask), Some(info(&site)));
        assert_eq!(asked.get(), 2, "a changed interpreter is asked again");
        assert_eq!(ask_cached(Some(&cache), &exe, ask), Some(info(&site)));
        assert_eq!(asked.get(), 2);

        // Same size, another modification time: asked again.
        set_mtime(&exe, 1_000_000);
        let _ = ask_cached(Some(&cache), &exe, ask);
        assert_eq!(asked.get(), 3);

        // A .pth file added to a sys.path folder, then changed in place: asked again each time.
        let pth = site.join("extra.pth");
        fs::write(&pth, "/opt/extra\n").unwrap_or_else(|e| panic!("{e}"));
        let _ = ask_cached(Some(&cache), &exe, ask);
        assert_eq!(asked.get(), 4, "a new .pth file");
        fs::write(&pth, "/opt/other\n").unwrap_or_else(|e| panic!("{e}"));
        set_mtime(&pth, 2_000_000);
        let _ = ask_cached(Some(&cache), &exe, ask);
        assert_eq!(asked.get(), 5, "a changed .pth file");

        // A pyvenv.cfg appearing beside the interpreter's folder: asked again.
        fs::write(root.path().join("env/pyvenv.cfg"), "home = /usr/bin\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let _ = ask_cached(Some(&cache), &exe, ask);
        assert_eq!(asked.get(), 6, "a new pyvenv.cfg");
        let _ = ask_cached(Some(&cache), &exe, ask);
        assert_eq!(asked.get(), 6);
    }

    #[test]
    fn no_cache_folder_asks_every_time_and_a_failed_answer_is_not_kept() {
        let (root, exe, site) = tree();
        let asked = Cell::new(0);
        let ask = || {
            asked.set(asked.get() + 1);
            Some(info(&site))
        };
        let _ = ask_cached(None, &exe, ask);
        let _ = ask_cached(None, &exe, ask);
        assert_eq!(asked.get(), 2);
        let cache = root.path().join("cache");
        assert_eq!(ask_cached(Some(&cache), &exe, || None), None);
        assert!(!entry_file(&cache, &exe).exists());
        // A damaged entry is asked again, not trusted.
        let _ = ask_cached(Some(&cache), &exe, ask);
        fs::write(entry_file(&cache, &exe), "{not json").unwrap_or_else(|e| panic!("{e}"));
        let _ = ask_cached(Some(&cache), &exe, ask);
        assert_eq!(asked.get(), 4);
    }

    #[test]
    fn the_folder_is_xdg_first_then_home() {
        let env =
            crate::host::Env::from_pairs([("XDG_CACHE_HOME", "/x/cache"), ("HOME", "/home/u")]);
        assert_eq!(
            default_dir(&env),
            Some(PathBuf::from("/x/cache/gpu-doctor"))
        );
        let env = crate::host::Env::from_pairs([("XDG_CACHE_HOME", "rel"), ("HOME", "/home/u")]);
        assert_eq!(
            default_dir(&env),
            Some(PathBuf::from("/home/u/.cache/gpu-doctor"))
        );
        assert_eq!(
            default_dir(&crate::host::Env::from_pairs([("A", "b")])),
            None
        );
    }
}
