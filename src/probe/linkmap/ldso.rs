//! glibc's ld.so, simulated on files: how a needed name becomes a file (`_dl_map_object`).
//!
//! The order, for a name needed by an object: `DT_RPATH` of the requester and of the objects
//! that pulled it in, up to the executable (only while the requester has no `DT_RUNPATH`; the
//! executable's own `DT_RPATH` serves every object without one, `dlopen` included),
//! `LD_LIBRARY_PATH`, the requester's `DT_RUNPATH` (`$ORIGIN`, `$LIB`, `$PLATFORM` substituted),
//! `/etc/ld.so.cache` (or the `ld.so.conf` folders when the cache is missing or older than its
//! configuration), then the default folders. A name already in the process is not looked up
//! again: ld.so matches loaded objects by the name they were loaded by and by `DT_SONAME`; a
//! load by path matches only the same file, so a second copy of one soname can be mapped.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::owner::lexical;
use super::table::Table;
use super::{Ctx, Found, MAX_OBJECTS, Process};
use crate::parse::elf::{self, Dynamic};

impl Ctx<'_> {
    /// A path after its links (inside the root), resolved once per scan.
    pub(super) fn canonical(&self, path: &Path) -> PathBuf {
        if let Some(c) = self.canon.borrow().get(path) {
            return c.clone();
        }
        let c = self
            .host
            .fs
            .canonical(path, true)
            .unwrap_or_else(|_| path.to_path_buf());
        self.canon
            .borrow_mut()
            .insert(path.to_path_buf(), c.clone());
        c
    }

    /// The names in a folder (an unreadable folder has none).
    pub(super) fn names(&self, dir: &Path) -> Rc<HashSet<String>> {
        if let Some(l) = self.listing.borrow().get(dir) {
            return l.clone();
        }
        let names: Rc<HashSet<String>> = Rc::new(
            self.host
                .fs
                .read_dir(dir)
                .into_iter()
                .map(|e| e.name)
                .collect(),
        );
        self.listing
            .borrow_mut()
            .insert(dir.to_path_buf(), names.clone());
        names
    }

    /// Whether `path` exists, through its folder's listing first (a stat only on a hit, for
    /// dangling links).
    pub(super) fn exists(&self, path: &Path) -> bool {
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return false;
        };
        self.names(dir).contains(name) && {
            // A listed link may dangle: its target's folder must list the target.
            let c = self.canonical(path);
            match (c.parent(), c.file_name().and_then(|n| n.to_str())) {
                (Some(d), Some(n)) if c != path => self.names(d).contains(n),
                _ => true,
            }
        }
    }
    /// The dynamic section of a file, read once per scan.
    pub(super) fn dynamic(&self, path: &Path) -> Option<Rc<Dynamic>> {
        let canonical = self.canonical(path);
        if let Some(d) = self.elf.borrow().get(&canonical) {
            return d.clone();
        }
        let parsed = self.host.fs.open_ranged(&canonical).ok().and_then(|f| {
            let mut read = |off: u64, len: usize| f.read_at(off, len);
            elf::parse(&mut read).map(Rc::new)
        });
        self.elf.borrow_mut().insert(canonical, parsed.clone());
        parsed
    }

    /// ld.so's search for `name` needed by object `i` (glibc `_dl_map_object`).
    pub(super) fn search(&self, p: &Process, i: usize, name: &str) -> Found {
        let mut steps: Vec<(PathBuf, &'static str)> = Vec::new();
        let requester = p.objs[i].dynamic.clone();
        let has_runpath = requester.as_ref().is_some_and(|d| d.runpath.is_some());
        if !has_runpath {
            // DT_RPATH of the requester, then of the objects that pulled it in, up to the
            // executable; an object with a DT_RUNPATH contributes none.
            let mut at = Some(i);
            let mut hops = 0;
            while let Some(k) = at {
                hops += 1;
                if hops > MAX_OBJECTS {
                    break;
                }
                let obj = &p.objs[k];
                if let Some(d) = &obj.dynamic
                    && d.runpath.is_none()
                    && let Some(rpath) = &d.rpath
                {
                    steps.extend(self.expand(rpath, &obj.path, "RPATH"));
                }
                at = obj.parent;
            }
            // Then the executable's own DT_RPATH (glibc: "try the DT_RPATH of the executable
            // itself"), unless it has a DT_RUNPATH, which serves only its own needs.
            if let Some((exe, d)) = &p.exe
                && d.runpath.is_none()
                && let Some(rpath) = &d.rpath
            {
                steps.extend(self.expand(rpath, exe, "RPATH of the executable"));
            }
        }
        steps.extend(
            self.ld_library_path
                .iter()
                .map(|d| (d.clone(), "LD_LIBRARY_PATH")),
        );
        if let Some(runpath) = requester.as_ref().and_then(|d| d.runpath.as_ref()) {
            steps.extend(self.expand(runpath, &p.objs[i].path, "RUNPATH"));
        }
        let mut found = Found {
            path: None,
            searched: Vec::new(),
            later: Vec::new(),
        };
        let consider = |found: &mut Found, path: PathBuf, via: &'static str| {
            if !self.exists(&path) || !self.loadable(&path) {
                return;
            }
            if found.path.is_none() {
                found.path = Some((path, via));
            } else {
                found.later.push((path, via));
            }
        };
        for (dir, via) in steps {
            consider(&mut found, lexical(&dir.join(name)), via);
            found.searched.push((dir, via));
        }
        match self.table {
            Table::Cache { cache, arch, .. } => {
                if let Some(e) = cache.lookup(name, *arch) {
                    consider(&mut found, PathBuf::from(&*cache.path(e)), "ld.so.cache");
                }
                found
                    .searched
                    .push((PathBuf::from("/etc/ld.so.cache"), "ld.so.cache"));
            }
            Table::Conf { dirs, .. } => {
                for dir in dirs {
                    consider(&mut found, dir.join(name), "ld.so.conf");
                    found.searched.push((dir.clone(), "ld.so.conf"));
                }
            }
        }
        for dir in self.defaults {
            consider(&mut found, dir.join(name), "default");
            found.searched.push((dir.clone(), "default"));
        }
        found
    }

    /// Whether ld.so would take this file: an ELF object of the wrong class or machine is
    /// skipped; a file we cannot parse (a fixture's stand-in) is taken.
    pub(super) fn loadable(&self, path: &Path) -> bool {
        match self.dynamic(path) {
            Some(d) => d.is_64 && matches!(d.machine, 62 | 183),
            None => true,
        }
    }

    pub(super) fn expand(
        &self,
        value: &str,
        object: &Path,
        via: &'static str,
    ) -> Vec<(PathBuf, &'static str)> {
        let origin = object
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let platform = if self.lib.contains("x86_64") {
            "x86_64"
        } else {
            "aarch64"
        };
        elf::expand_search_path(value, &origin, self.lib, platform)
            .into_iter()
            .filter(|d| d.starts_with('/'))
            .map(|d| (lexical(Path::new(&d)), via))
            .collect()
    }
}
