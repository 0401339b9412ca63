//! Writing output files (`-o FILE` of `plan`, `doctor`, `smoke`, `report merge`, the TUI's
//! save): never over an existing file unless forced, and never half-written. Each file is written to a temporary file in the same folder, flushed, and then
//! moved into place: linked (which fails if the name exists, so a file that appears meanwhile
//! is not clobbered either) or, with `--force`, renamed over the old one. Side effects: the
//! files named, and their temporary siblings.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A file to write: where, what, and its permission bits.
#[derive(Debug, Clone)]
pub struct OutFile {
    pub path: PathBuf,
    pub content: String,
    pub mode: u32,
}

/// Writes `content` to `path`, replacing what was there in one rename: the way a metrics file
/// for node_exporter's textfile collector or a merged fleet report is refreshed on every run.
/// The temporary name starts with `.` and ends in `.tmp`, so the collector (which reads
/// `*.prom`) never sees it.
///
/// # Errors
/// A message naming the file and the problem.
pub fn replace(path: &Path, content: &str) -> Result<(), String> {
    write_all(
        &[OutFile {
            path: path.to_path_buf(),
            content: content.to_string(),
            mode: 0o644,
        }],
        true,
    )
}

/// Writes every file, or none when one already exists and `force` is off.
///
/// # Errors
/// A message naming the file and the problem.
pub fn write_all(files: &[OutFile], force: bool) -> Result<(), String> {
    if !force {
        for f in files {
            if fs::symlink_metadata(&f.path).is_ok() {
                return Err(format!(
                    "{} exists; pass --force to overwrite it",
                    f.path.display()
                ));
            }
        }
    }
    for f in files {
        write_one(f, force)?;
    }
    Ok(())
}

/// A temporary name next to `path`, unique within this process and across processes.
fn temp_name(path: &Path) -> PathBuf {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map_or_else(|| "plan".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}-{n}.tmp", std::process::id()))
}

fn write_one(f: &OutFile, force: bool) -> Result<(), String> {
    let shown = f.path.display();
    if f.path.file_name().is_none() {
        return Err(format!("{shown}: not a file name"));
    }
    let temp = temp_name(&f.path);
    let result = (|| -> std::io::Result<()> {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&temp)?;
        file.write_all(f.content.as_bytes())?;
        file.set_permissions(fs::Permissions::from_mode(f.mode))?;
        file.sync_all()?;
        if force {
            fs::rename(&temp, &f.path)
        } else {
            fs::hard_link(&temp, &f.path)?;
            fs::remove_file(&temp)
        }
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&temp);
        return Err(if e.kind() == std::io::ErrorKind::AlreadyExists {
            format!("{shown} exists; pass --force to overwrite it")
        } else {
            format!("cannot write {shown}: {e}")
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "gpu-doctor-output-test-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|t| t.as_nanos())
                .unwrap_or(0)
        ));
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn never_overwrites_without_force_and_leaves_no_temporaries() {
        let d = dir();
        let path = d.join("plan.sh");
        let file = |content: &str| OutFile {
            path: path.clone(),
            content: content.to_string(),
            mode: 0o755,
        };
        write_all(&[file("one")], false).unwrap();
        let err = write_all(&[file("two")], false).unwrap_err();
        assert!(err.contains("exists; pass --force"), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "one");
        write_all(&[file("three")], true).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "three");
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o755);
        let names: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn one_existing_file_stops_the_whole_set() {
        let d = dir();
        fs::write(d.join("environment.yml"), "keep").unwrap();
        let files = [
            OutFile {
                path: d.join("plan.sh"),
                content: "x".into(),
                mode: 0o755,
            },
            OutFile {
                path: d.join("environment.yml"),
                content: "y".into(),
                mode: 0o644,
            },
        ];
        assert!(write_all(&files, false).is_err());
        assert!(!d.join("plan.sh").exists());
        assert_eq!(
            fs::read_to_string(d.join("environment.yml")).unwrap(),
            "keep"
        );
        fs::remove_dir_all(&d).unwrap();
    }
}
