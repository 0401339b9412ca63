//! `/etc/ld.so.cache`, the soname → file table `ldconfig` writes and ld.so consults after
//! `LD_LIBRARY_PATH` and `DT_RUNPATH`. Both layouts glibc has written: the new
//! `glibc-ld.so.cache1.1` (alone since glibc 2.32, or hidden after the old table before) and the
//! old `ld.so-1.7.0`. Pure; layout from glibc's `sysdeps/generic/dl-cache.h`.

/// One cache entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheEntry {
    /// The soname looked up (`libcudnn.so.9`).
    pub soname: String,
    /// The file it maps to (`/usr/lib/x86_64-linux-gnu/libcudnn.so.9`).
    pub path: String,
    /// `FLAG_*` bits: the low byte is the library type, the high byte the architecture.
    pub flags: i32,
}

/// The architecture bits an x86-64 process accepts (`FLAG_X8664_LIB64`).
pub const FLAG_X8664_LIB64: i32 = 0x0300;
/// The architecture bits an AArch64 process accepts (`FLAG_AARCH64_LIB64`).
pub const FLAG_AARCH64_LIB64: i32 = 0x0a00;
/// The architecture part of the flags.
pub const FLAG_REQUIRED_MASK: i32 = 0xff00;

const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
const NEW_HEADER: usize = 48;
const NEW_ENTRY: usize = 24;
const OLD_HEADER: usize = 16;
const OLD_ENTRY: usize = 12;
/// More entries than any real cache holds means a corrupt count.
const MAX_ENTRIES: usize = 200_000;

/// Which layout a cache file had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    New,
    Old,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn cstr(b: &[u8], at: usize) -> Option<String> {
    let rest = b.get(at..)?;
    let end = rest.iter().take(4096).position(|&c| c == 0)?;
    Some(String::from_utf8_lossy(rest.get(..end)?).into_owned())
}

/// Parses a cache file (little-endian, as on x86-64 and AArch64). `None` when it is neither
/// layout; entries whose strings fall outside the file are skipped.
#[must_use]
pub fn parse(bytes: &[u8]) -> Option<(Format, Vec<CacheEntry>)> {
    if bytes.starts_with(NEW_MAGIC) {
        return Some((Format::New, parse_new(bytes, 0)));
    }
    if !bytes.starts_with(OLD_MAGIC) {
        return None;
    }
    let n = usize::try_from(u32_at(bytes, 12)?).ok()?.min(MAX_ENTRIES);
    let table_end = OLD_HEADER.checked_add(n.checked_mul(OLD_ENTRY)?)?;
    // A new-format table may follow the old one, 8-byte aligned; it is the one glibc reads.
    let aligned = table_end.div_ceil(8) * 8;
    if bytes
        .get(aligned..)
        .is_some_and(|b| b.starts_with(NEW_MAGIC))
    {
        return Some((Format::New, parse_new(bytes, aligned)));
    }
    Some((
        Format::Old,
        entries(bytes, OLD_HEADER, OLD_ENTRY, n, table_end),
    ))
}

/// The new table starting at `start`; its string offsets count from `start`.
fn parse_new(bytes: &[u8], start: usize) -> Vec<CacheEntry> {
    let Some(n) = u32_at(bytes, start + 20).and_then(|n| usize::try_from(n).ok()) else {
        return Vec::new();
    };
    entries(
        bytes,
        start + NEW_HEADER,
        NEW_ENTRY,
        n.min(MAX_ENTRIES),
        start,
    )
}

/// `n` entries of `size` bytes from `first`, each opening with flags, key and value (u32 each;
/// the key and value are offsets of C strings from `strings`), in either format. Stops at the
/// end of the bytes; an entry whose strings cannot be read is left out.
fn entries(bytes: &[u8], first: usize, size: usize, n: usize, strings: usize) -> Vec<CacheEntry> {
    let mut out = Vec::new();
    for i in 0..n {
        let at = first + i * size;
        let (Some(flags), Some(key), Some(value)) = (
            u32_at(bytes, at),
            u32_at(bytes, at + 4),
            u32_at(bytes, at + 8),
        ) else {
            break;
        };
        let string = |off: u32| cstr(bytes, strings.checked_add(usize::try_from(off).ok()?)?);
        if let (Some(soname), Some(path)) = (string(key), string(value)) {
            out.push(CacheEntry {
                soname,
                path,
                flags: i32::from_le_bytes(flags.to_le_bytes()),
            });
        }
    }
    out
}

/// The file the cache gives for a soname, for a process of `arch` (`FLAG_X8664_LIB64`, ...):
/// the first entry in table order, which is the one ld.so's search settles on.
#[must_use]
pub fn lookup<'a>(entries: &'a [CacheEntry], soname: &str, arch: i32) -> Option<&'a CacheEntry> {
    entries
        .iter()
        .find(|e| e.soname == soname && (e.flags & FLAG_REQUIRED_MASK) == arch)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds an old-format cache, optionally followed by the new one, as ldconfig's "compat"
    /// format did.
    fn old_cache(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut strings = Vec::new();
        let mut table = Vec::new();
        for (k, v) in entries {
            let key = strings.len();
            strings.extend_from_slice(k.as_bytes());
            strings.push(0);
            let val = strings.len();
            strings.extend_from_slice(v.as_bytes());
            strings.push(0);
            table.extend_from_slice(&0x0303i32.to_le_bytes());
            table.extend_from_slice(&u32::try_from(key).unwrap().to_le_bytes());
            table.extend_from_slice(&u32::try_from(val).unwrap().to_le_bytes());
        }
        let mut out = b"ld.so-1.7.0\0".to_vec();
        out.extend_from_slice(&u32::try_from(entries.len()).unwrap().to_le_bytes());
        out.extend(table);
        out.extend(strings);
        out
    }

    #[test]
    fn old_format_entries_are_read() {
        let bytes = old_cache(&[
            ("libcudnn.so.8", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8"),
            ("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6"),
        ]);
        let (format, entries) = parse(&bytes).unwrap();
        assert_eq!(format, Format::Old);
        assert_eq!(
            lookup(&entries, "libcudnn.so.8", FLAG_X8664_LIB64).map(|e| e.path.as_str()),
            Some("/usr/lib/x86_64-linux-gnu/libcudnn.so.8")
        );
        assert!(lookup(&entries, "libcudnn.so.8", FLAG_AARCH64_LIB64).is_none());
    }

    #[test]
    fn new_format_entries_are_read_with_offsets_from_its_header() {
        let strings = b"libnccl.so.2\0/usr/lib/x86_64-linux-gnu/libnccl.so.2\0";
        let mut out = b"glibc-ld.so.cache1.1".to_vec();
        out.extend_from_slice(&1u32.to_le_bytes()); // nlibs
        out.extend_from_slice(&u32::try_from(strings.len()).unwrap().to_le_bytes());
        out.extend_from_slice(&[0u8; 4]); // flags, padding
        out.extend_from_slice(&0u32.to_le_bytes()); // extension offset
        out.extend_from_slice(&[0u8; 12]);
        let base = u32::try_from(out.len() + 24).unwrap();
        out.extend_from_slice(&0x0303i32.to_le_bytes());
        out.extend_from_slice(&base.to_le_bytes());
        out.extend_from_slice(&(base + 13).to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(strings);
        let (format, entries) = parse(&out).unwrap();
        assert_eq!(format, Format::New);
        assert_eq!(
            lookup(&entries, "libnccl.so.2", FLAG_X8664_LIB64).map(|e| e.path.as_str()),
            Some("/usr/lib/x86_64-linux-gnu/libnccl.so.2")
        );
    }

    #[test]
    fn garbage_and_truncation_do_not_panic() {
        assert!(parse(b"").is_none());
        assert!(parse(b"not a cache").is_none());
        let mut bytes = old_cache(&[("libx.so.1", "/x/libx.so.1")]);
        bytes.truncate(20);
        assert_eq!(parse(&bytes).map(|(_, e)| e.len()), Some(0));
        let mut huge = b"glibc-ld.so.cache1.1".to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(parse(&huge).map(|(_, e)| e.len()), Some(0));
    }
}
