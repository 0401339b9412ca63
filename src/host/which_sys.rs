//! PATH look-ups through the `which` crate, over the rooted filesystem: `which` asks this
//! adapter for metadata and listings, and the adapter answers from below the host's root.

use std::borrow::Cow;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};

use super::fs::RootFs;

struct RootSys<'a>(&'a RootFs);

struct Meta {
    symlink: bool,
    file: bool,
}

struct Entry {
    name: OsString,
    path: PathBuf,
}

impl which::sys::SysMetadata for Meta {
    fn is_symlink(&self) -> bool {
        self.symlink
    }
    fn is_file(&self) -> bool {
        self.file
    }
}

impl which::sys::SysReadDirEntry for Entry {
    fn file_name(&self) -> OsString {
        self.name.clone()
    }
    fn path(&self) -> PathBuf {
        self.path.clone()
    }
}

impl which::sys::Sys for RootSys<'_> {
    type ReadDirEntry = Entry;
    type Metadata = Meta;

    fn is_windows(&self) -> bool {
        false
    }
    fn current_dir(&self) -> io::Result<PathBuf> {
        Ok(PathBuf::from("/"))
    }
    fn home_dir(&self) -> Option<PathBuf> {
        None
    }
    fn env_split_paths(&self, paths: &OsStr) -> Vec<PathBuf> {
        std::env::split_paths(paths).collect()
    }
    fn env_path(&self) -> Option<OsString> {
        None
    }
    fn env_path_ext(&self) -> Option<OsString> {
        None
    }
    fn env_windows_path_ext(&self) -> Cow<'static, [String]> {
        Cow::Borrowed(&[])
    }
    fn metadata(&self, path: &Path) -> io::Result<Meta> {
        let m = self.0.metadata(path)?;
        Ok(Meta {
            symlink: false,
            file: m.is_file(),
        })
    }
    fn symlink_metadata(&self, path: &Path) -> io::Result<Meta> {
        let m = self.0.symlink_metadata(path)?;
        Ok(Meta {
            symlink: m.file_type().is_symlink(),
            file: m.is_file(),
        })
    }
    fn read_dir(&self, path: &Path) -> io::Result<Box<dyn Iterator<Item = io::Result<Entry>>>> {
        let entries: Vec<io::Result<Entry>> = self
            .0
            .read_dir(path)
            .into_iter()
            .map(|e| {
                Ok(Entry {
                    name: OsString::from(e.name),
                    path: e.path,
                })
            })
            .collect();
        Ok(Box::new(entries.into_iter()))
    }
    fn is_valid_executable(&self, path: &Path) -> io::Result<bool> {
        Ok(self.0.is_executable(path))
    }
}

/// Every executable `name` in the `path` folders (machine paths), in order, without duplicates.
pub(super) fn find_all(fs: &RootFs, name: &str, path: &[PathBuf]) -> Vec<PathBuf> {
    let Ok(list) = std::env::join_paths(path) else {
        return Vec::new();
    };
    let found = which::WhichConfig::new_with_sys(RootSys(fs))
        .system_cwd(false)
        .binary_name(OsString::from(name))
        .custom_path_list(list)
        .all_results();
    let mut out: Vec<PathBuf> = Vec::new();
    if let Ok(iter) = found {
        for p in iter {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn finds_executables_inside_the_root_only() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("usr/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("nvidia-smi"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            bin.join("nvidia-smi"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::fs::write(bin.join("nvcc"), "not executable").unwrap();
        let fs = RootFs::new(dir.path());
        let path = [PathBuf::from("/nope"), PathBuf::from("/usr/bin")];
        assert_eq!(
            find_all(&fs, "nvidia-smi", &path),
            [PathBuf::from("/usr/bin/nvidia-smi")]
        );
        assert!(find_all(&fs, "nvcc", &path).is_empty());
        // /bin/sh exists on the real machine but not in this root.
        assert!(find_all(&fs, "sh", &[PathBuf::from("/bin")]).is_empty());
    }
}
