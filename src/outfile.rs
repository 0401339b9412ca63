//! Writing output files (`-o FILE` of `plan`, `doctor`, `smoke`, `report merge`, the TUI's
//! save): never over an existing file unless forced, and never half-written. Each file is written to a temporary file in the same folder, flushed, and then
//! moved into place: without `--force` only while the name is free (so a file that appears
//! meanwhile is not clobbered either) or, with `--force`, renamed over the old one. Side effects: the
//! files named, and their temporary siblings.
//!
//! Only regular files are replaced. gpu-doctor often runs as root, where renaming over
//! `-o /dev/null` would replace the system's device with a file: whatever is not a regular file
//! (a device, a FIFO, a socket, `/dev/stdout`, anything under `/dev` or `/proc`) is opened and
//! written into, as a shell's `>` would; a FIFO nobody reads is given up on after
//! [`FIFO_WAIT`]. A symbolic link to a regular file replaces the file it points to and keeps
//! the link.
//!
//! About permissions `-o` behaves like the shell's `>`: a file the user may not write (by the
//! real user id: a read-only file of one's own) is refused, and a replaced file keeps its
//! permission bits, owner and group (as root, a 0444 file stays 0444 and another user's file
//! stays theirs); where the owner cannot be kept, the file is written in place.

#![allow(
    clippy::disallowed_methods,
    reason = "writes the files the user asked for where they asked (never under --root), looking first at what is there"
)]

use std::ffi::OsString;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::OFlags;
use rustix::io::Errno;

use crate::host::fs::open_flags;

/// How long opening a FIFO waits for a reader before it is an error rather than a hang.
pub(crate) const FIFO_WAIT: Duration = Duration::from_secs(10);

/// How many links one output path may go through before it is a loop.
const MAX_LINKS: usize = 40;

/// A file to write: where, what, and its permission bits.
#[derive(Debug, Clone)]
pub(crate) struct OutFile {
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
pub(crate) fn replace(path: &Path, content: &str) -> Result<(), String> {
    write_all(
        &[OutFile {
            path: path.to_path_buf(),
            content: content.to_string(),
            mode: 0o644,
        }],
        true,
    )
}

/// Writes every file, or none when one already exists and `force` is off. The regular files
/// are all written to their temporaries first and renamed into place only once every one of
/// them was written (a plan's `plan.sh` is not replaced while its `environment.yml` fails);
/// a rename that fails after others were done removes the files those created. Files written
/// into (devices, FIFOs, another user's file) come last.
///
/// # Errors
/// A message naming the file and the problem.
pub(crate) fn write_all(files: &[OutFile], force: bool) -> Result<(), String> {
    let mut targets = Vec::with_capacity(files.len());
    for f in files {
        let target = target_of(&f.path)?;
        if !force && matches!(target, Target::Regular(_)) {
            return Err(format!(
                "{} exists; pass --force to overwrite it",
                shown(&f.path)
            ));
        }
        targets.push(target);
    }
    let mut ready = Vec::new();
    let mut into = Vec::new();
    for (f, target) in files.iter().zip(targets) {
        match target {
            Target::Missing(path) => match prepare(f, &path, false)? {
                Prepared::Temp(temp) => ready.push((f, path, temp, false)),
                Prepared::InPlace => into.push((f, path, true)),
            },
            Target::Regular(path) => {
                may_write(&path)?;
                match prepare(f, &path, true)? {
                    Prepared::Temp(temp) => ready.push((f, path, temp, true)),
                    Prepared::InPlace => into.push((f, path, true)),
                }
            }
            Target::Special(path) => into.push((f, path, false)),
        }
    }
    let mut created: Vec<PathBuf> = Vec::new();
    for (f, path, temp, replace) in ready {
        let persisted = if replace {
            temp.persist(&path).map(|_| ())
        } else {
            temp.persist_noclobber(&path).map(|_| ())
        };
        if let Err(e) = persisted {
            for made in &created {
                let _ = fs::remove_file(made);
            }
            return Err(if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                format!("{} exists; pass --force to overwrite it", shown(&f.path))
            } else {
                format!("cannot write {}: {}", shown(&f.path), e.error)
            });
        }
        if !replace {
            created.push(path);
        }
    }
    for (f, path, in_place) in into {
        if in_place {
            write_in_place(f, &path)?;
        } else {
            write_into(f, &path)?;
        }
    }
    Ok(())
}

/// What an output path names once its links are followed.
#[derive(Debug, PartialEq, Eq)]
enum Target {
    /// Nothing yet: a new regular file at this path.
    Missing(PathBuf),
    /// A regular file at this path (the link's target when the name was a link).
    Regular(PathBuf),
    /// A device, FIFO, socket or a path under `/dev` or `/proc`: written into, never replaced.
    Special(PathBuf),
}

/// The path as shown in messages: control characters from a hostile name are escaped.
fn shown(path: &Path) -> String {
    crate::sanitize::clean(&path.display().to_string())
}

/// Follows `path`'s links (the last component's chain; the folders are taken as they are) and
/// says what is at the end.
fn target_of(path: &Path) -> Result<Target, String> {
    if path.file_name().is_none() {
        return Err(format!("{}: not a file name", shown(path)));
    }
    // `/dev/stdout` links to `/proc/self/fd/1`, whose "link" is the open descriptor: a
    // terminal, a pipe, or a file the shell opened (maybe for appending). Writing into it is
    // the only thing that keeps those meanings. A plain file under `/dev` (a RAM file system,
    // `/dev/shm`) is written like any other.
    if path.starts_with("/proc") || (path.starts_with("/dev") && !plain_file_or_none(path)) {
        return match fs::metadata(path) {
            Ok(m) if m.is_dir() => Err(format!("{} is a folder", shown(path))),
            Ok(_) => Ok(Target::Special(path.to_path_buf())),
            Err(e) => Err(format!("cannot write {}: {e}", shown(path))),
        };
    }
    let mut current = path.to_path_buf();
    for _ in 0..=MAX_LINKS {
        let meta = match fs::symlink_metadata(&current) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return if current == path {
                    Ok(Target::Missing(current))
                } else {
                    Err(format!(
                        "{} is a link to {}, which does not exist; not replacing the link",
                        shown(path),
                        shown(&current)
                    ))
                };
            }
            Err(e) => return Err(format!("cannot write {}: {e}", shown(path))),
        };
        let kind = meta.file_type();
        if kind.is_symlink() {
            let link = fs::read_link(&current)
                .map_err(|e| format!("cannot read the link {}: {e}", shown(&current)))?;
            current = match current.parent() {
                Some(parent) if link.is_relative() => parent.join(link),
                _ => link,
            };
            if current.starts_with("/dev") || current.starts_with("/proc") {
                return target_of(&current);
            }
            continue;
        }
        if kind.is_dir() {
            return Err(format!("{} is a folder", shown(path)));
        }
        return Ok(if kind.is_file() {
            Target::Regular(current)
        } else {
            Target::Special(current)
        });
    }
    Err(format!(
        "too many levels of symbolic links in {}",
        shown(path)
    ))
}

/// Whether `path` is a regular file, or nothing in an existing folder: what `-o /dev/shm/x`
/// names, unlike `/dev/stdout` (a link) or `/dev/null` (a device).
fn plain_file_or_none(path: &Path) -> bool {
    match fs::symlink_metadata(path) {
        Ok(m) => m.is_file(),
        Err(e) => {
            e.kind() == std::io::ErrorKind::NotFound && path.parent().is_some_and(Path::is_dir)
        }
    }
}

/// Writes into an existing file that is not replaced: a device, FIFO, or socket. Opening is
/// non-blocking so a FIFO without a reader cannot hang the run; it is retried until
/// [`FIFO_WAIT`] has passed.
fn write_into(f: &OutFile, path: &Path) -> Result<(), String> {
    let started = Instant::now();
    let file = loop {
        match OpenOptions::new()
            .write(true)
            .custom_flags(open_flags(OFlags::NONBLOCK | OFlags::NOCTTY))
            .open(path)
        {
            Ok(file) => break file,
            // ENXIO: a FIFO with no reader yet.
            Err(e)
                if e.raw_os_error() == Some(Errno::NXIO.raw_os_error())
                    && started.elapsed() < FIFO_WAIT =>
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) if e.raw_os_error() == Some(Errno::NXIO.raw_os_error()) => {
                return Err(format!(
                    "cannot write {}: nothing reads it (waited {} s)",
                    shown(path),
                    FIFO_WAIT.as_secs()
                ));
            }
            Err(e) => return Err(format!("cannot write {}: {e}", shown(path))),
        }
    };
    set_blocking(&file);
    let mut file = file;
    file.write_all(f.content.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| format!("cannot write {}: {e}", shown(path)))
}

/// Clears `O_NONBLOCK` so writes wait for a slow reader instead of failing with `EAGAIN`.
fn set_blocking(file: &fs::File) {
    use rustix::fs::{OFlags, fcntl_getfl, fcntl_setfl};
    if let Ok(flags) = fcntl_getfl(file) {
        let _ = fcntl_setfl(file, flags - OFlags::NONBLOCK);
    }
}

/// Refuses a file the user may not write, as the shell's `>` would: `access(W_OK)` asks with
/// the real user id (a read-only file of one's own is refused; root may write any file).
fn may_write(path: &Path) -> Result<(), String> {
    rustix::fs::access(path, rustix::fs::Access::WRITE_OK)
        .map_err(|e| format!("cannot write {}: {}", shown(path), std::io::Error::from(e)))
}

/// The permission bits, owner and group of a file about to be replaced, which the new file
/// keeps (the shell's `>` writes into the old file, so it keeps them too).
struct Kept {
    mode: u32,
    uid: u32,
    gid: u32,
}

fn kept(path: &Path) -> Option<Kept> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(path).ok()?;
    Some(Kept {
        mode: meta.mode() & 0o7777,
        uid: meta.uid(),
        gid: meta.gid(),
    })
}

/// Gives the new file the old one's owner and group; false when that is not allowed (only
/// root may give a file away).
fn same_owner(file: &fs::File, old: &Kept) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = file.metadata() else {
        return false;
    };
    if (meta.uid(), meta.gid()) == (old.uid, old.gid) {
        return true;
    }
    if old.uid == u32::MAX || old.gid == u32::MAX {
        return false;
    }
    rustix::fs::fchown(
        file,
        Some(rustix::fs::Uid::from_raw(old.uid)),
        Some(rustix::fs::Gid::from_raw(old.gid)),
    )
    .is_ok()
}

/// Writes into the old file itself, truncating it, as `>` does: for a file whose owner the
/// replacement could not keep (another user's file one may write, as a user who is not root).
fn write_in_place(f: &OutFile, path: &Path) -> Result<(), String> {
    let shown = shown(&f.path);
    let mut file = OpenOptions::new()
        .write(true)
        .truncate(true)
        .custom_flags(open_flags(
            OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY,
        ))
        .open(path)
        .map_err(|e| format!("cannot write {shown}: {e}"))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(format!("cannot write {shown}: not a regular file any more"));
    }
    file.write_all(f.content.as_bytes())
        .and_then(|()| file.flush())
        .map_err(|e| format!("cannot write {shown}: {e}"))
}

/// A regular file's content ready to be moved into place, or the old file to be written into.
enum Prepared {
    Temp(tempfile::NamedTempFile),
    /// Its owner could not be kept, or its folder may not be written: `>` writes into it.
    InPlace,
}

/// Writes `f` to a temporary sibling of `path` (`.NAME.XXXXXX.tmp`, made by [`tempfile`] with
/// mode 0600 until the content is in), with the old file's mode, owner and group when it
/// `replace`s one, flushed to disk; [`write_all`] renames it into place. The temporary file is
/// removed when it is dropped unrenamed.
fn prepare(f: &OutFile, path: &Path, replace: bool) -> Result<Prepared, String> {
    let shown = shown(&f.path);
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut prefix = OsString::from(".");
    prefix.push(path.file_name().unwrap_or_else(|| "plan".as_ref()));
    prefix.push(".");
    let old = if replace { kept(path) } else { None };
    let result = (|| -> std::io::Result<Prepared> {
        let mut temp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".tmp")
            .permissions(fs::Permissions::from_mode(0o600))
            .tempfile_in(dir)?;
        temp.write_all(f.content.as_bytes())?;
        if let Some(old) = &old
            && !same_owner(temp.as_file(), old)
        {
            return Ok(Prepared::InPlace);
        }
        let mode = old.as_ref().map_or(f.mode, |old| old.mode);
        temp.as_file()
            .set_permissions(fs::Permissions::from_mode(mode))?;
        temp.as_file().sync_all()?;
        Ok(Prepared::Temp(temp))
    })();
    match result {
        Ok(prepared) => Ok(prepared),
        // A folder one may not write, holding a file one may: `>` writes into the file.
        Err(e) if replace && e.kind() == std::io::ErrorKind::PermissionDenied => {
            Ok(Prepared::InPlace)
        }
        Err(e) => Err(format!("cannot write {shown}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        tempfile::Builder::new()
            .prefix("gpu-doctor-output-test-")
            .tempdir()
            .unwrap()
            .keep()
    }

    /// #40: `plan -o plan.sh` of a conda plan also writes `environment.yml`; `plan.sh` was
    /// replaced before `environment.yml` failed. Now neither is, and no temporary is left.
    #[test]
    fn a_pair_is_written_whole_or_not_at_all() {
        let d = dir();
        let plan = d.join("plan.sh");
        fs::write(&plan, "old plan").unwrap();
        let files = [
            OutFile {
                path: plan.clone(),
                content: "new plan".to_string(),
                mode: 0o755,
            },
            OutFile {
                // Its folder does not exist: its temporary cannot be made.
                path: d.join("gone/environment.yml"),
                content: "name: ml".to_string(),
                mode: 0o644,
            },
        ];
        let err = write_all(&files, true).unwrap_err();
        assert!(err.contains("environment.yml"), "{err}");
        assert_eq!(fs::read_to_string(&plan).unwrap(), "old plan");
        let names: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("plan.sh")]);
        // Both written once both can be.
        fs::create_dir(d.join("gone")).unwrap();
        write_all(&files, true).unwrap();
        assert_eq!(fs::read_to_string(&plan).unwrap(), "new plan");
        assert_eq!(
            fs::read_to_string(d.join("gone/environment.yml")).unwrap(),
            "name: ml"
        );
        fs::remove_dir_all(&d).unwrap();
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
    fn a_replaced_file_keeps_its_mode_and_owner() {
        use std::os::unix::fs::MetadataExt;
        let d = dir();
        let path = d.join("report.json");
        fs::write(&path, "old").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o440)).unwrap();
        let as_root = rustix::process::geteuid().is_root();
        if as_root {
            std::os::unix::fs::chown(&path, Some(4321), Some(4322)).unwrap();
        }
        let file = OutFile {
            path: path.clone(),
            content: "new".into(),
            mode: 0o644,
        };
        let result = write_all(&[file], true);
        if as_root {
            result.unwrap();
            let meta = fs::metadata(&path).unwrap();
            assert_eq!(fs::read_to_string(&path).unwrap(), "new");
            assert_eq!(meta.mode() & 0o777, 0o440);
            assert_eq!((meta.uid(), meta.gid()), (4321, 4322));
        } else {
            // Read-only to its own user: refused, as `>` refuses it.
            let err = result.unwrap_err();
            assert!(err.contains("cannot write"), "{err}");
            assert_eq!(fs::read_to_string(&path).unwrap_or_default(), "old");
        }
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

    #[test]
    fn a_link_to_a_regular_file_replaces_the_target_and_keeps_the_link() {
        let d = dir();
        fs::write(d.join("real.prom"), "old").unwrap();
        std::os::unix::fs::symlink("real.prom", d.join("link.prom")).unwrap();
        let file = OutFile {
            path: d.join("link.prom"),
            content: "new".into(),
            mode: 0o644,
        };
        assert!(write_all(std::slice::from_ref(&file), false).is_err());
        write_all(&[file], true).unwrap();
        assert!(
            fs::symlink_metadata(d.join("link.prom"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(d.join("real.prom")).unwrap(), "new");
        // A dangling link is not turned into a file.
        std::os::unix::fs::symlink("missing", d.join("dangling")).unwrap();
        assert!(replace(&d.join("dangling"), "x").is_err());
        assert!(
            fs::symlink_metadata(d.join("dangling"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn devices_are_written_into_never_replaced() {
        let before = fs::symlink_metadata("/dev/null").unwrap();
        write_all(
            &[OutFile {
                path: PathBuf::from("/dev/null"),
                content: "discarded".into(),
                mode: 0o644,
            }],
            false,
        )
        .unwrap();
        replace(Path::new("/dev/null"), "again").unwrap();
        let after = fs::symlink_metadata("/dev/null").unwrap();
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        assert!(after.file_type().is_char_device());
        assert_eq!(before.ino(), after.ino());
        // A link to a device (as /dev/stdout is, through /proc) is written through.
        let d = dir();
        std::os::unix::fs::symlink("/dev/null", d.join("sink")).unwrap();
        replace(&d.join("sink"), "x").unwrap();
        assert!(
            fs::symlink_metadata(d.join("sink"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        fs::remove_dir_all(&d).unwrap();
    }

    /// `-o /dev/shm/plan.sh` once failed with "No such file or directory": every path under
    /// `/dev` was taken for a device to write into.
    #[test]
    fn a_plain_file_under_dev_is_written_and_replaced_like_any_other() {
        let Ok(d) = tempfile::tempdir_in("/dev/shm") else {
            return; // no RAM file system here
        };
        let path = d.path().join("plan.sh");
        let one = |content: &str, force| {
            write_all(
                &[OutFile {
                    path: path.clone(),
                    content: content.into(),
                    mode: 0o644,
                }],
                force,
            )
        };
        one("first", false).unwrap();
        assert!(one("second", false).is_err(), "kept without force");
        one("third", true).unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "third");
        assert_eq!(
            fs::read_dir(d.path()).unwrap().count(),
            1,
            "no temporaries left"
        );
    }

    #[test]
    fn a_fifo_is_written_into_when_read_and_never_replaced() {
        let d = dir();
        let fifo = d.join("pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
        };
        replace(&fifo, "through the pipe").unwrap();
        assert_eq!(reader.join().unwrap(), "through the pipe");
        use std::os::unix::fs::FileTypeExt;
        assert!(fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
        fs::remove_dir_all(&d).unwrap();
    }
}
