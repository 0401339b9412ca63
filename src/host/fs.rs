//! The machine's filesystem seen from a root folder: `/` on a real run, a fixture tree under `--root`.
//!
//! Probes name files by the absolute paths the machine uses (`/usr/local/cuda/version.json`).
//! [`RootFs`] maps them below its root and resolves symbolic links itself, one component at a
//! time, so an absolute link inside a fixture (`usr/local/cuda -> /etc/alternatives/cuda`) lands
//! inside the fixture, and neither `..` nor a link can climb out of it.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{self, Read};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustix::fs::OFlags;

/// How many links one lookup may follow before it is a loop (Linux's own limit is 40).
const MAX_LINKS: usize = 40;

/// Files larger than this are read only up to it: no probe needs more, and `/dev/zero`-like
/// files or a huge log must not eat memory. The limits per kind of file are:
/// 8 MiB for any file a probe reads ([`RootFs::read_bytes`]: version files, `/proc` and `/sys`
/// entries, dist-info `METADATA`/`RECORD`, conda-meta JSON, headers), 1 MiB for the config
/// file, and what `manifest update` and `report merge` set for their own files. A file cut at
/// its limit is named in the report's `probes[]` (`reads`).
pub const DEFAULT_READ_LIMIT: u64 = 8 * 1024 * 1024;

/// How many entries one directory listing returns at most: a folder with a million files
/// (a hostile or broken `site-packages`) costs a bounded time and memory.
pub const MAX_DIR_ENTRIES: usize = 20_000;

/// How many notes about refused or cut files one scan keeps.
const MAX_NOTES: usize = 50;

/// A device node's permission bits, owner and group ([`RootFs::node_attrs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeAttrs {
    /// The permission bits (`0o660`).
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    /// Whether a POSIX ACL is set; `None` when that could not be asked.
    pub acl: Option<bool>,
}

/// A filesystem rooted at a folder. Every path given to it is absolute as seen by the machine.
#[derive(Debug, Clone)]
pub struct RootFs {
    root: PathBuf,
    /// Files refused (not regular) or cut at their size limit, shared by every clone.
    notes: Arc<Mutex<Vec<String>>>,
    /// While a scan runs ([`RootFs::for_scan`]): when its time is spent, and what is known of
    /// the paths looked at so far.
    scan: Option<Arc<Scan>>,
}

/// A scan's file work: a deadline after which no file is read, listed or looked at (the same
/// budget that stops commands), and a memory of the links met, so that 10,000 `PATH` entries
/// through one chain of links resolve the chain once, not 10,000 times.
#[derive(Debug)]
struct Scan {
    end: std::time::Instant,
    /// How many look-ups were refused once the time was spent.
    refused: std::sync::atomic::AtomicUsize,
    /// `lstat` of paths on disk: `None` nothing there, `Some(None)` there and not a link,
    /// `Some(Some(target))` a link.
    links: Mutex<std::collections::HashMap<PathBuf, Option<Option<PathBuf>>>>,
}

/// How many paths one scan remembers the kind of.
const MAX_REMEMBERED: usize = 200_000;

/// Opens a file on this host's disk for reading without ever blocking, and without ever
/// opening anything but a regular file: opening some devices has effects of its own (a
/// watchdog starts counting, a serial line raises its modem lines, a tape rewinds), so the
/// type is checked first with `stat` (no open), only a regular file is opened (`O_NONBLOCK`
/// so that a FIFO swapped in meanwhile cannot hang the open, `O_NOCTTY`), and the open
/// descriptor is checked again with `fstat`: a regular file, and the same one that was
/// checked. Links are followed (a user's `--config` may be one); see [`open_regular_here`]
/// for paths whose links were resolved already.
///
/// # Errors
/// When the file cannot be opened, or is not a regular file (`InvalidInput`).
pub fn open_regular(disk_path: &Path) -> io::Result<std::fs::File> {
    open_checked(disk_path, false)
}

/// [`open_regular`] for a path whose links are resolved already ([`RootFs::real_path`]): a
/// link found at the last component now is a swap, and is refused (`O_NOFOLLOW`, `lstat`).
///
/// # Errors
/// As [`open_regular`].
pub fn open_regular_here(disk_path: &Path) -> io::Result<std::fs::File> {
    open_checked(disk_path, true)
}

fn not_regular(meta: &std::fs::Metadata) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        if meta.is_dir() {
            "is a folder, not a file"
        } else if meta.file_type().is_symlink() {
            "a link where a file was expected"
        } else {
            "not a regular file (a FIFO, device or socket)"
        },
    )
}

/// `open(2)` flags as `OpenOptionsExt::custom_flags` takes them.
pub(crate) fn open_flags(flags: OFlags) -> i32 {
    // The O_ bits all sit below bit 31, so the cast keeps them as they are.
    flags.bits() as i32
}

fn open_checked(disk_path: &Path, no_follow: bool) -> io::Result<std::fs::File> {
    use std::os::unix::fs::MetadataExt;
    let before = if no_follow {
        std::fs::symlink_metadata(disk_path)?
    } else {
        std::fs::metadata(disk_path)?
    };
    if !before.is_file() {
        return Err(not_regular(&before));
    }
    let mut flags = OFlags::NONBLOCK | OFlags::NOCTTY;
    if no_follow {
        flags |= OFlags::NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(open_flags(flags))
        .open(disk_path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    if (meta.dev(), meta.ino()) != (before.dev(), before.ino()) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the file changed while it was being opened",
        ));
    }
    Ok(file)
}

/// Reads at most `limit` bytes of a regular file on this host's disk (see [`open_regular`]).
/// The flag says whether the file was longer and so cut.
///
/// # Errors
/// As [`open_regular`], or a read error.
pub fn read_regular(disk_path: &Path, limit: u64) -> io::Result<(Vec<u8>, bool)> {
    read_open(open_regular(disk_path)?, limit)
}

fn read_open(file: std::fs::File, limit: u64) -> io::Result<(Vec<u8>, bool)> {
    let mut out = Vec::new();
    let mut taken = file.take(limit.saturating_add(1));
    taken.read_to_end(&mut out)?;
    let cut = out.len() as u64 > limit;
    if cut {
        out.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
    }
    Ok((out, cut))
}

/// One entry of a directory listing: its name and its path as the machine sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: String,
    pub path: PathBuf,
}

impl RootFs {
    /// A filesystem rooted at `root` (`/` for the real machine).
    #[must_use]
    pub fn new(root: impl Into<PathBuf>) -> RootFs {
        RootFs {
            root: root.into(),
            notes: Arc::default(),
            scan: None,
        }
    }

    /// This filesystem for one scan that must end by `end`: past it every look-up fails at
    /// once (a missing file, an empty folder), and [`RootFs::notes`] says how many were
    /// refused. Links met are remembered for the scan.
    #[must_use]
    pub fn for_scan(&self, end: std::time::Instant) -> RootFs {
        RootFs {
            scan: Some(Arc::new(Scan {
                end,
                refused: std::sync::atomic::AtomicUsize::new(0),
                links: Mutex::default(),
            })),
            ..self.clone()
        }
    }

    /// When the scan's file work stops (None outside a scan): for a reader that works through
    /// one file for long (a compressed module), which checks it as it goes.
    #[must_use]
    pub fn scan_end(&self) -> Option<std::time::Instant> {
        self.scan.as_ref().map(|scan| scan.end)
    }

    /// Whether the scan's time is spent; counts the look-up refused.
    fn spent(&self) -> bool {
        let Some(scan) = &self.scan else {
            return false;
        };
        if std::time::Instant::now() < scan.end {
            return false;
        }
        scan.refused
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        true
    }

    fn out_of_time() -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            "the scan's time budget is spent; not read",
        )
    }

    /// What is at `disk` (not following a last link): nothing, a link (its target), or
    /// something else; remembered for the scan.
    fn link_at(&self, disk: &Path) -> io::Result<Option<PathBuf>> {
        if let Some(scan) = &self.scan
            && let Ok(links) = scan.links.lock()
            && let Some(known) = links.get(disk)
        {
            return known
                .clone()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound));
        }
        let found = match std::fs::symlink_metadata(disk) {
            Ok(meta) if meta.file_type().is_symlink() => Some(Some(std::fs::read_link(disk)?)),
            Ok(_) => Some(None),
            // Whatever stops `lstat` (missing, a file used as a folder, no permission): the
            // rest of the path stays unresolved, as it did.
            Err(_) => None,
        };
        if let Some(scan) = &self.scan
            && let Ok(mut links) = scan.links.lock()
            && links.len() < MAX_REMEMBERED
        {
            links.insert(disk.to_path_buf(), found.clone());
        }
        found.ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }

    /// Files refused or cut so far, in the order met (at most 50).
    #[must_use]
    pub fn notes(&self) -> Vec<String> {
        let mut notes = self.notes.lock().map(|n| n.clone()).unwrap_or_default();
        if let Some(scan) = &self.scan {
            let refused = scan.refused.load(std::sync::atomic::Ordering::Relaxed);
            if refused > 0 {
                notes.push(format!(
                    "the scan's time budget was spent: file work stopped, {refused} look-up(s) of \
                     files and folders not made"
                ));
            }
        }
        notes
    }

    /// Notes that a limit cut what was read of `path` (named in `probes[]`, `reads`).
    pub fn note_cut(&self, path: &Path, what: &str) {
        self.note(path, what);
    }

    fn note(&self, path: &Path, what: &str) {
        if let Ok(mut notes) = self.notes.lock()
            && notes.len() < MAX_NOTES
        {
            let line = format!("{}: {what}", path.display());
            if !notes.contains(&line) {
                notes.push(line);
            }
        }
    }

    /// Whether this is the machine's own `/` rather than a fixture tree.
    #[must_use]
    pub fn is_real_root(&self) -> bool {
        self.root == Path::new("/")
    }

    /// The folder that stands for `/`.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where a machine path lives on this host's disk, without following any link.
    fn on_disk(&self, virtual_path: &Path) -> PathBuf {
        let mut out = self.root.clone();
        for component in virtual_path.components() {
            if let Component::Normal(name) = component {
                out.push(name);
            }
        }
        out
    }

    /// Resolves every link in `path` (the last one too when `follow_last`) and returns the
    /// machine path it names. Missing components are kept as they are, so the result of a
    /// path that does not exist is still a path (that then fails to open).
    pub fn canonical(&self, path: &Path, follow_last: bool) -> io::Result<PathBuf> {
        if self.spent() {
            return Err(Self::out_of_time());
        }
        let mut done: Vec<OsString> = Vec::new();
        let mut links = 0usize;
        let mut pending: VecDeque<OsString> = names(path).collect();
        while let Some(name) = pending.pop_front() {
            if name == ".." {
                done.pop();
                continue;
            }
            if name == "." {
                continue;
            }
            done.push(name);
            let is_last = pending.is_empty();
            if is_last && !follow_last {
                break;
            }
            let disk: PathBuf = done.iter().fold(self.root.clone(), |p, n| p.join(n));
            let target = match self.link_at(&disk) {
                Ok(Some(target)) => target,
                Ok(None) => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    // Nothing there: keep the rest of the path unresolved.
                    done.extend(pending.drain(..).filter(|n| n != "." && n != ".."));
                    break;
                }
                Err(e) => return Err(e),
            };
            links += 1;
            if links > MAX_LINKS {
                return Err(io::Error::other(format!(
                    "too many levels of symbolic links in {}",
                    path.display()
                )));
            }
            done.pop();
            if target.is_absolute() {
                done.clear();
            }
            let mut parts: Vec<OsString> = names(&target).collect();
            while let Some(part) = parts.pop() {
                pending.push_front(part);
            }
        }
        let mut out = PathBuf::from("/");
        for name in done {
            out.push(name);
        }
        Ok(out)
    }

    /// The file on this host's disk that `path` names after resolving links inside the root.
    pub fn real_path(&self, path: &Path) -> io::Result<PathBuf> {
        Ok(self.on_disk(&self.canonical(path, true)?))
    }

    /// Reads at most [`DEFAULT_READ_LIMIT`] bytes of a file.
    pub fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.read_bytes_limited(path, DEFAULT_READ_LIMIT)
    }

    /// Reads at most `limit` bytes of a regular file; anything else (a FIFO, a device) is an
    /// error rather than a hang, and is noted like a file cut at its limit.
    pub fn read_bytes_limited(&self, path: &Path, limit: u64) -> io::Result<Vec<u8>> {
        match open_regular_here(&self.real_path(path)?).and_then(|f| read_open(f, limit)) {
            Ok((bytes, cut)) => {
                if cut {
                    self.note(path, &format!("read only its first {limit} bytes"));
                }
                Ok(bytes)
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                self.note(path, &format!("not read: {e}"));
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// Reads the last `limit` bytes of a regular file (a log, whose newest lines matter): a
    /// file no longer than `limit` whole, a longer one from its length minus `limit`, and noted
    /// as cut. Opened like every other read, so a FIFO or device is refused, not waited on.
    fn read_tail_limited(&self, path: &Path, limit: u64) -> io::Result<(Vec<u8>, bool)> {
        use std::io::{Seek, SeekFrom};
        let result = open_regular_here(&self.real_path(path)?).and_then(|mut f| {
            let len = f.metadata()?.len();
            let start = len.saturating_sub(limit);
            if start > 0 {
                f.seek(SeekFrom::Start(start))?;
            }
            // Bounded even if the file grows while it is read.
            read_open(f, limit).map(|(bytes, _)| (bytes, start > 0))
        });
        match result {
            Ok((bytes, cut)) => {
                if cut {
                    self.note(path, &format!("read only its last {limit} bytes"));
                }
                Ok((bytes, cut))
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
                self.note(path, &format!("not read: {e}"));
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    /// The last whole lines of a text file within its last `limit` bytes (invalid UTF-8
    /// replaced; a line cut by the start of the window left out), or `None` when it cannot be
    /// read for any reason.
    #[must_use]
    pub fn read_tail_opt(&self, path: impl AsRef<Path>, limit: u64) -> Option<String> {
        let path = path.as_ref();
        let (bytes, cut) = self.read_tail_limited(path, limit).ok()?;
        let bytes = if cut {
            bytes
                .iter()
                .position(|b| *b == b'\n')
                .map_or(&bytes[..0], |i| &bytes[i + 1..])
        } else {
            &bytes[..]
        };
        Some(String::from_utf8_lossy(bytes).into_owned())
    }

    /// Reads a text file (invalid UTF-8 replaced), at most [`DEFAULT_READ_LIMIT`] bytes.
    pub fn read_to_string(&self, path: &Path) -> io::Result<String> {
        Ok(String::from_utf8_lossy(&self.read_bytes(path)?).into_owned())
    }

    /// Reads a small text file, or `None` when it cannot be read for any reason.
    #[must_use]
    pub fn read_opt(&self, path: impl AsRef<Path>) -> Option<String> {
        self.read_to_string(path.as_ref()).ok()
    }

    /// The entries of a directory, sorted by name. Unreadable or missing directories are empty.
    #[must_use]
    pub fn read_dir(&self, path: impl AsRef<Path>) -> Vec<DirEntry> {
        self.read_dir_matching(path, |_| true)
    }

    /// The entries of a directory whose names `keep` accepts, sorted by name: the whole
    /// listing is looked through (until the scan's budget is spent), and only the kept
    /// entries count toward [`MAX_DIR_ENTRIES`]. A big machine's `/var/lib/dpkg/info` has
    /// more than that many files, of which a probe wants the few `.list` files of one family:
    /// taking the first entries the kernel returns would drop an arbitrary part of them. A
    /// listing cut short (the cap, or the budget) is noted in `probes[]`.
    #[must_use]
    pub fn read_dir_matching(
        &self,
        path: impl AsRef<Path>,
        keep: impl Fn(&str) -> bool,
    ) -> Vec<DirEntry> {
        let path = path.as_ref();
        if self.spent() {
            return Vec::new();
        }
        let Ok(real) = self.real_path(path) else {
            return Vec::new();
        };
        let Ok(iter) = std::fs::read_dir(real) else {
            return Vec::new();
        };
        let mut out: Vec<DirEntry> = Vec::new();
        let mut cut = false;
        for (i, entry) in iter.enumerate() {
            // The budget is looked at now and then: a listing of millions stays bounded.
            if out.len() == MAX_DIR_ENTRIES || (i % 4096 == 4095 && self.spent()) {
                cut = true;
                break;
            }
            let Ok(entry) = entry else { continue };
            // A name that is not UTF-8 is kept: its path has the real bytes, its name shows
            // them escaped.
            let raw = entry.file_name();
            if !raw.to_str().is_none_or(&keep) {
                continue;
            }
            out.push(DirEntry {
                path: path.join(&raw),
                name: raw.to_str().map_or_else(
                    || {
                        use std::os::unix::ffi::OsStrExt;
                        super::env::escape_bytes(raw.as_bytes())
                    },
                    str::to_string,
                ),
            });
        }
        if cut {
            self.note(
                path,
                &format!("listing cut at {MAX_DIR_ENTRIES} entries or at the time budget"),
            );
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Metadata after following links inside the root.
    pub fn metadata(&self, path: &Path) -> io::Result<std::fs::Metadata> {
        std::fs::metadata(self.real_path(path)?)
    }

    /// Metadata of the path itself: a link is reported as a link.
    pub fn symlink_metadata(&self, path: &Path) -> io::Result<std::fs::Metadata> {
        std::fs::symlink_metadata(self.on_disk(&self.canonical(path, false)?))
    }

    /// Whether anything exists at `path` (following links).
    #[must_use]
    pub fn exists(&self, path: impl AsRef<Path>) -> bool {
        self.metadata(path.as_ref()).is_ok()
    }

    /// Whether `path` is a directory (following links).
    #[must_use]
    pub fn is_dir(&self, path: impl AsRef<Path>) -> bool {
        self.metadata(path.as_ref()).is_ok_and(|m| m.is_dir())
    }

    /// Whether `path` is a regular file with an execute bit (following links).
    #[must_use]
    pub fn is_executable(&self, path: impl AsRef<Path>) -> bool {
        self.metadata(path.as_ref())
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }

    /// Permission bits, owner, group and whether a POSIX ACL is set, of a device node such as
    /// `/dev/kfd`: what `stat` and `ls -l` show. A real character device is read with `stat`.
    /// A fixture's stand-in (a plain file: git keeps no modes, owners or groups) takes them from
    /// the root's `/dev/.stat`, one `PATH MODE UID GID [acl]` line per node as `stat -c '%n %a
    /// %u %g'` prints them; `None` when neither says.
    #[must_use]
    pub fn node_attrs(&self, path: &Path) -> Option<NodeAttrs> {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let meta = self.metadata(path).ok()?;
        if meta.file_type().is_char_device() {
            let acl = self.real_path(path).ok().and_then(|real| {
                match rustix::fs::getxattr_query(&real, "system.posix_acl_access") {
                    Ok(_) => Some(true),
                    Err(e) if e == rustix::io::Errno::NODATA || e == rustix::io::Errno::NOTSUP => {
                        Some(false)
                    }
                    Err(_) => None,
                }
            });
            return Some(NodeAttrs {
                mode: meta.mode() & 0o7777,
                uid: meta.uid(),
                gid: meta.gid(),
                acl,
            });
        }
        let table = self.read_opt("/dev/.stat")?;
        let wanted = path.to_str()?;
        table.lines().find_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                [name, mode, uid, gid, rest @ ..] if *name == wanted => Some(NodeAttrs {
                    mode: u32::from_str_radix(mode, 8).ok().filter(|m| *m <= 0o7777)?,
                    uid: uid.parse().ok()?,
                    gid: gid.parse().ok()?,
                    acl: Some(rest.first() == Some(&"acl")),
                }),
                _ => None,
            }
        })
    }

    /// The target of a link as written in it, or `None` when `path` is not a link.
    #[must_use]
    pub fn read_link(&self, path: impl AsRef<Path>) -> Option<PathBuf> {
        let disk = self.on_disk(&self.canonical(path.as_ref(), false).ok()?);
        std::fs::read_link(disk).ok()
    }
}

/// The names a path walks through, `..` kept (resolved against links as they are met) and the
/// root and `.` left out: what [`RootFs::canonical`] resolves one by one.
fn names(path: &Path) -> impl Iterator<Item = OsString> + '_ {
    path.components().filter_map(|c| match c {
        Component::Normal(n) => Some(n.to_os_string()),
        Component::ParentDir => Some(OsString::from("..")),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn tree() -> (tempfile::TempDir, RootFs) {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("etc/alternatives")).unwrap();
        std::fs::create_dir_all(r.join("usr/local/cuda-13.0/bin")).unwrap();
        std::fs::write(
            r.join("usr/local/cuda-13.0/version.txt"),
            "CUDA Version 13.0.88",
        )
        .unwrap();
        symlink("/usr/local/cuda-13.0", r.join("etc/alternatives/cuda")).unwrap();
        symlink("/etc/alternatives/cuda", r.join("usr/local/cuda")).unwrap();
        symlink("../../../../../../etc", r.join("usr/local/escape")).unwrap();
        symlink("loop2", r.join("loop1")).unwrap();
        symlink("loop1", r.join("loop2")).unwrap();
        let fs = RootFs::new(r);
        (dir, fs)
    }

    #[test]
    fn absolute_links_resolve_inside_the_root() {
        let (_dir, fs) = tree();
        let p = Path::new("/usr/local/cuda/version.txt");
        assert_eq!(
            fs.canonical(p, true).unwrap(),
            Path::new("/usr/local/cuda-13.0/version.txt")
        );
        assert_eq!(fs.read_to_string(p).unwrap(), "CUDA Version 13.0.88");
        assert_eq!(
            fs.read_link("/usr/local/cuda").unwrap(),
            Path::new("/etc/alternatives/cuda")
        );
    }

    #[test]
    fn dot_dot_cannot_leave_the_root() {
        let (dir, fs) = tree();
        let outside = fs
            .canonical(Path::new("/../../../etc/passwd"), true)
            .unwrap();
        assert_eq!(outside, Path::new("/etc/passwd"));
        assert!(fs.read_to_string(Path::new("/../../etc/passwd")).is_err());
        // A relative link climbing past the top stops at the root's own /etc.
        let escaped = fs.real_path(Path::new("/usr/local/escape")).unwrap();
        assert_eq!(escaped, dir.path().join("etc"));
    }

    #[test]
    fn link_loops_are_an_error_not_a_hang() {
        let (_dir, fs) = tree();
        assert!(fs.canonical(Path::new("/loop1"), true).is_err());
        assert!(!fs.exists("/loop1"));
    }

    #[test]
    fn a_tail_read_keeps_the_last_whole_lines_and_refuses_fifos() {
        let (dir, fs) = tree();
        std::fs::write(dir.path().join("etc/log"), "first line\nsecond\nthird\n").unwrap();
        // Whole when it fits: the first line too.
        assert_eq!(
            fs.read_tail_opt("/etc/log", 100).unwrap(),
            "first line\nsecond\nthird\n"
        );
        // Cut: the window starts inside "second", which is left out.
        assert_eq!(fs.read_tail_opt("/etc/log", 10).unwrap(), "third\n");
        assert!(
            fs.notes()
                .iter()
                .any(|n| n == "/etc/log: read only its last 10 bytes"),
            "{:?}",
            fs.notes()
        );
        let fifo = dir.path().join("etc/pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert!(fs.read_tail_opt("/etc/pipe", 10).is_none());
        // Rooted: a link out of the root is not followed out.
        assert!(fs.read_tail_opt("/usr/local/escape/passwd", 10).is_none());
    }

    #[test]
    fn fifos_and_devices_are_refused_not_waited_for_and_long_files_cut() {
        let (dir, fs) = tree();
        let fifo = dir.path().join("etc/pipe");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let started = std::time::Instant::now();
        assert!(fs.read_opt("/etc/pipe").is_none());
        // A FIFO nobody writes would block forever; the ceiling is for that, not a benchmark.
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        std::fs::write(dir.path().join("etc/long"), "0123456789").unwrap();
        assert_eq!(
            fs.read_bytes_limited(Path::new("/etc/long"), 4).unwrap(),
            b"0123"
        );
        let notes = fs.notes();
        assert!(
            notes.iter().any(|n| n.starts_with("/etc/pipe: not read")),
            "{notes:?}"
        );
        assert!(
            notes.iter().any(|n| n.starts_with("/etc/long: read only")),
            "{notes:?}"
        );
        // The real machine's devices too.
        let real = RootFs::new("/");
        assert!(real.read_bytes(Path::new("/dev/zero")).is_err());
    }

    #[test]
    fn a_filtered_listing_looks_through_every_entry_and_a_capped_one_says_so() {
        // A big machine's /var/lib/dpkg/info: more files than one listing keeps, with the
        // few lists a probe wants somewhere among them.
        let dir = tempfile::tempdir().unwrap();
        let info = dir.path().join("var/lib/dpkg/info");
        std::fs::create_dir_all(&info).unwrap();
        for i in 0..MAX_DIR_ENTRIES + 500 {
            std::fs::write(info.join(format!("pkg{i}.md5sums")), "").unwrap();
        }
        std::fs::write(info.join("libcudnn9-cuda-12:amd64.list"), "").unwrap();
        let fs = RootFs::new(dir.path());
        let lists: Vec<String> = fs
            .read_dir_matching("/var/lib/dpkg/info", |n| n.ends_with(".list"))
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(lists, ["libcudnn9-cuda-12:amd64.list"]);
        assert!(fs.notes().is_empty(), "{:?}", fs.notes());
        assert_eq!(fs.read_dir("/var/lib/dpkg/info").len(), MAX_DIR_ENTRIES);
        assert!(
            fs.notes().iter().any(|n| n.contains("listing cut")),
            "{:?}",
            fs.notes()
        );
    }

    #[test]
    fn listing_is_sorted_and_missing_dirs_are_empty() {
        let (_dir, fs) = tree();
        let names: Vec<String> = fs
            .read_dir("/usr/local")
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(names, ["cuda", "cuda-13.0", "escape"]);
        assert!(fs.read_dir("/nope").is_empty());
        assert!(fs.is_dir("/usr/local/cuda"));
    }
}
