//! The loader's soname table: `/etc/ld.so.cache` when it is there and not older than the
//! configuration it was built from, else the `ld.so.conf` folders (what `ldconfig` would put in
//! it), said so in the report.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::super::loader::{LoaderPath, Origin};
use crate::host::Host;
use crate::parse::ld_cache::{self, FLAG_AARCH64_LIB64, FLAG_X8664_LIB64};

/// The biggest cache we read (real ones are well under 1 MiB).
const MAX_CACHE: u64 = 32 << 20;

pub(super) enum Table {
    Cache {
        cache: ld_cache::Cache,
        /// The architecture flags a 64-bit process of this machine accepts.
        arch: i32,
        old_format: bool,
    },
    Conf {
        dirs: Vec<PathBuf>,
        why: &'static str,
    },
}

impl Table {
    pub(super) fn read(host: &Host, loader: &LoaderPath) -> Table {
        let conf = || {
            loader
                .dirs
                .iter()
                .filter(|d| d.origin == Origin::LdSoConf)
                .map(|d| d.path.clone())
                .collect::<Vec<_>>()
        };
        let cache = Path::new("/etc/ld.so.cache");
        let Ok(bytes) = host.fs.read_bytes_limited(cache, MAX_CACHE) else {
            return Table::Conf {
                dirs: conf(),
                why: "ld.so.cache missing",
            };
        };
        let Some(parsed) = ld_cache::parse(bytes) else {
            return Table::Conf {
                dirs: conf(),
                why: "ld.so.cache unreadable",
            };
        };
        let mtime = |p: &Path| -> Option<SystemTime> { host.fs.metadata(p).ok()?.modified().ok() };
        let newest_conf = std::iter::once(PathBuf::from("/etc/ld.so.conf"))
            .chain(
                host.fs
                    .read_dir("/etc/ld.so.conf.d")
                    .into_iter()
                    .map(|e| e.path),
            )
            .filter_map(|p| mtime(&p))
            .max();
        if let (Some(c), Some(conf_time)) = (mtime(cache), newest_conf)
            && c < conf_time
        {
            return Table::Conf {
                dirs: conf(),
                why: "ld.so.cache older than ld.so.conf",
            };
        }
        let arch = if host.fs.is_dir("/lib/aarch64-linux-gnu")
            && !host.fs.is_dir("/lib/x86_64-linux-gnu")
        {
            FLAG_AARCH64_LIB64
        } else {
            FLAG_X8664_LIB64
        };
        if let Some(claimed) = parsed.claimed {
            host.fs.note_cut(
                cache,
                &format!(
                    "read only its first {} of {claimed} entries",
                    parsed.entries().len()
                ),
            );
        }
        let old_format = parsed.format == ld_cache::Format::Old;
        Table::Cache {
            cache: parsed,
            arch,
            old_format,
        }
    }

    pub(super) fn describe(&self) -> String {
        match self {
            Table::Cache { old_format, .. } => {
                if *old_format {
                    "ld.so.cache (old ld.so-1.7.0 format)".to_string()
                } else {
                    "ld.so.cache".to_string()
                }
            }
            Table::Conf { why, .. } => format!("ld.so.conf ({why})"),
        }
    }
}
