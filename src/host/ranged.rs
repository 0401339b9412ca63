//! Reading pieces of a large file (an ELF header, a dynamic section) without reading the
//! whole file: one open per file, then positioned reads, each bounded by its caller.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::fs::RootFs;

/// An open regular file below the root, read by offset.
#[derive(Debug)]
pub struct RangedFile {
    file: File,
    len: u64,
}

/// The most one positioned read returns.
const MAX_RANGE: usize = 1 << 20;

impl RootFs {
    /// Opens a regular file for positioned reads (links followed inside the root).
    ///
    /// Opened like every other read ([`super::fs::open_regular`]): without blocking, so a FIFO
    /// or device where a library should be is refused rather than waited on.
    pub fn open_ranged(&self, path: &Path) -> io::Result<RangedFile> {
        let file = super::fs::open_regular_here(&self.real_path(path)?)?;
        let len = file.metadata()?.len();
        Ok(RangedFile { file, len })
    }
}

impl RangedFile {
    /// Up to `len` bytes (at most 1 MiB) at `offset`; fewer at the end of the file, `None`
    /// past it or on an error.
    #[must_use]
    pub fn read_at(&self, offset: u64, len: usize) -> Option<Vec<u8>> {
        if offset >= self.len {
            return None;
        }
        let want = usize::try_from((self.len - offset).min(len.min(MAX_RANGE) as u64)).ok()?;
        let mut buf = vec![0u8; want];
        let mut got = 0;
        while got < want {
            match self.file.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        buf.truncate(got);
        Some(buf)
    }

    /// The file read front to back (a compressed module, through its decompressor); the
    /// reader bounds nothing, its caller does.
    #[must_use]
    pub fn stream(&self) -> RangedStream<'_> {
        RangedStream { file: self, pos: 0 }
    }

    /// The file's size in bytes.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty (a fixture stand-in, not a library).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A [`RangedFile`] as a [`Read`]: positioned reads from the start, each at most 1 MiB.
#[derive(Debug)]
pub struct RangedStream<'a> {
    file: &'a RangedFile,
    pos: u64,
}

impl Read for RangedStream<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.file.len.saturating_sub(self.pos);
        let want = usize::try_from(left)
            .unwrap_or(usize::MAX)
            .min(buf.len())
            .min(MAX_RANGE);
        let Some(dst) = buf.get_mut(..want).filter(|d| !d.is_empty()) else {
            return Ok(0);
        };
        let n = self.file.file.read_at(dst, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}
