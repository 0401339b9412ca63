//! `/etc/ld.so.cache`, the soname → file table `ldconfig` writes and ld.so consults after
//! `LD_LIBRARY_PATH` and `DT_RUNPATH`. Both layouts glibc has written: the new
//! `glibc-ld.so.cache1.1` (alone since glibc 2.32, or hidden after the old table before) and the
//! old `ld.so-1.7.0`. Pure; layout from glibc's `sysdeps/generic/dl-cache.h`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::BuildHasher;

/// One cache entry: where its two strings lie in the file, and its flags. The strings are not
/// copied: 200,000 entries that all name one 4 KiB string cost 200,000 small entries, not
/// 1.6 GB of copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheEntry {
    soname: Span,
    path: Span,
    /// `FLAG_*` bits: the low byte is the library type, the high byte the architecture.
    pub flags: i32,
}

/// A C string's place in the file: start and length, without its NUL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Span {
    at: u32,
    len: u32,
}

/// A parsed cache: the file's bytes, its entries pointing into them, and an index by soname.
#[derive(Debug, Clone)]
pub struct Cache {
    pub format: Format,
    bytes: Vec<u8>,
    entries: Vec<CacheEntry>,
    /// The first entry of each (soname hash, architecture), in table order.
    first: HashMap<(u64, i32), u32>,
    hasher: std::hash::RandomState,
    /// How many entries the header claimed, when that was more than [`MAX_ENTRIES`] and the
    /// rest was not read.
    pub claimed: Option<u64>,
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
/// The most entries read: a real cache holds a few thousand (a large HPC image some tens of
/// thousands); past this the rest is left out and the report says so (`probes[]`, `reads`).
pub const MAX_ENTRIES: usize = 50_000;
/// The longest string an entry may name (`PATH_MAX`).
const MAX_STRING: usize = 4096;

/// Which layout a cache file had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    New,
    Old,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// Where C strings end, remembered: the stretches already scanned (start → the NUL that ends
/// them), so that entries naming one string, or places inside one, scan it once. Without it
/// 50,000 entries naming one 4 KiB string scanned 200 MB.
#[derive(Default)]
struct Ends(std::collections::BTreeMap<usize, usize>);

impl Ends {
    fn cstr(&mut self, b: &[u8], at: usize) -> Option<Span> {
        let known = self
            .0
            .range(..=at)
            .next_back()
            .filter(|(_, nul)| at <= **nul)
            .map(|(_, nul)| *nul);
        let nul = match known {
            Some(nul) => nul,
            None => {
                let rest = b.get(at..)?;
                let nul = at + rest.iter().take(MAX_STRING).position(|&c| c == 0)?;
                self.0.insert(at, nul);
                nul
            }
        };
        let len = nul - at;
        (len < MAX_STRING).then_some(())?;
        Some(Span {
            at: u32::try_from(at).ok()?,
            len: u32::try_from(len).ok()?,
        })
    }
}

/// Parses a cache file (little-endian, as on x86-64 and AArch64). `None` when it is neither
/// layout; entries whose strings fall outside the file are skipped.
#[must_use]
pub fn parse(bytes: Vec<u8>) -> Option<Cache> {
    if bytes.starts_with(NEW_MAGIC) {
        let (entries, claimed) = parse_new(&bytes, 0);
        return Some(Cache::new(Format::New, bytes, entries, claimed));
    }
    if !bytes.starts_with(OLD_MAGIC) {
        return None;
    }
    let claimed = u64::from(u32_at(&bytes, 12)?);
    let n = usize::try_from(claimed).ok()?.min(MAX_ENTRIES);
    // The old table's real end counts every claimed entry, read or not.
    let table_end = usize::try_from(claimed)
        .ok()
        .and_then(|c| OLD_HEADER.checked_add(c.checked_mul(OLD_ENTRY)?))?;
    // A new-format table may follow the old one, 8-byte aligned; it is the one glibc reads.
    let aligned = table_end.div_ceil(8).checked_mul(8)?;
    if bytes
        .get(aligned..)
        .is_some_and(|b| b.starts_with(NEW_MAGIC))
    {
        let (entries, claimed) = parse_new(&bytes, aligned);
        return Some(Cache::new(Format::New, bytes, entries, claimed));
    }
    let entries = entries(&bytes, OLD_HEADER, OLD_ENTRY, n, table_end);
    let claimed = more_than_read(&bytes, OLD_HEADER, OLD_ENTRY, n, claimed);
    Some(Cache::new(Format::Old, bytes, entries, claimed))
}

/// The new table starting at `start`; its string offsets count from `start`.
fn parse_new(bytes: &[u8], start: usize) -> (Vec<CacheEntry>, Option<u64>) {
    let Some(claimed) = start.checked_add(20).and_then(|at| u32_at(bytes, at)) else {
        return (Vec::new(), None);
    };
    let n = usize::try_from(claimed)
        .unwrap_or(usize::MAX)
        .min(MAX_ENTRIES);
    let first = start + NEW_HEADER;
    (
        entries(bytes, first, NEW_ENTRY, n, start),
        more_than_read(bytes, first, NEW_ENTRY, n, u64::from(claimed)),
    )
}

/// The count the header claims, when the cap stopped the reading while the file holds at
/// least one more entry (a count the file cannot hold is a corrupt header, not a cut).
fn more_than_read(bytes: &[u8], first: usize, size: usize, n: usize, claimed: u64) -> Option<u64> {
    let next_end = n.checked_add(1)?.checked_mul(size)?.checked_add(first)?;
    (claimed > n as u64 && bytes.len() >= next_end).then_some(claimed)
}

/// `n` entries of `size` bytes from `first`, each opening with flags, key and value (u32 each;
/// the key and value are offsets of C strings from `strings`), in either format. Stops at the
/// end of the bytes; an entry whose strings cannot be read is left out.
fn entries(bytes: &[u8], first: usize, size: usize, n: usize, strings: usize) -> Vec<CacheEntry> {
    let mut out = Vec::new();
    let mut ends = Ends::default();
    for i in 0..n {
        let Some(at) = i.checked_mul(size).and_then(|o| o.checked_add(first)) else {
            break;
        };
        let (Some(flags), Some(key), Some(value)) = (
            u32_at(bytes, at),
            u32_at(bytes, at + 4),
            u32_at(bytes, at + 8),
        ) else {
            break;
        };
        let mut string =
            |off: u32| ends.cstr(bytes, strings.checked_add(usize::try_from(off).ok()?)?);
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

impl Cache {
    fn new(
        format: Format,
        bytes: Vec<u8>,
        entries: Vec<CacheEntry>,
        claimed: Option<u64>,
    ) -> Cache {
        let mut cache = Cache {
            format,
            bytes,
            entries,
            first: HashMap::new(),
            hasher: std::hash::RandomState::new(),
            claimed,
        };
        let mut first = HashMap::with_capacity(cache.entries.len());
        // Entries naming one string hash it once.
        let mut hashed: HashMap<Span, u64> = HashMap::new();
        for (i, e) in cache.entries.iter().enumerate() {
            let hash = *hashed
                .entry(e.soname)
                .or_insert_with(|| cache.hash(cache.span(e.soname)));
            let key = (hash, e.flags & FLAG_REQUIRED_MASK);
            first
                .entry(key)
                .or_insert(u32::try_from(i).unwrap_or(u32::MAX));
        }
        cache.first = first;
        cache
    }

    fn hash(&self, bytes: &[u8]) -> u64 {
        self.hasher.hash_one(bytes)
    }

    fn span(&self, s: Span) -> &[u8] {
        let at = usize::try_from(s.at).unwrap_or(usize::MAX);
        let end = at.saturating_add(usize::try_from(s.len).unwrap_or(usize::MAX));
        self.bytes.get(at..end).unwrap_or_default()
    }

    /// The entries read, in table order.
    #[must_use]
    pub fn entries(&self) -> &[CacheEntry] {
        &self.entries
    }

    /// An entry's soname (`libcudnn.so.9`); bytes that are not UTF-8 replaced.
    #[must_use]
    #[cfg(test)]
    pub fn soname(&self, e: &CacheEntry) -> Cow<'_, str> {
        String::from_utf8_lossy(self.span(e.soname))
    }

    /// The file an entry maps to (`/usr/lib/x86_64-linux-gnu/libcudnn.so.9`).
    #[must_use]
    pub fn path(&self, e: &CacheEntry) -> Cow<'_, str> {
        String::from_utf8_lossy(self.span(e.path))
    }

    /// The entry the cache gives for a soname, for a process of `arch` (`FLAG_X8664_LIB64`,
    /// ...): the first one in table order, which is the one ld.so's search settles on.
    #[must_use]
    pub fn lookup(&self, soname: &str, arch: i32) -> Option<&CacheEntry> {
        let wanted = soname.as_bytes();
        let fits = |e: &&CacheEntry| {
            (e.flags & FLAG_REQUIRED_MASK) == arch && self.span(e.soname) == wanted
        };
        let i = self.first.get(&(self.hash(wanted), arch))?;
        let e = self.entries.get(usize::try_from(*i).ok()?)?;
        if fits(&e) {
            return Some(e);
        }
        // Two sonames with one hash: the table's own order decides.
        self.entries.iter().find(fits)
    }
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
        let cache = parse(bytes).unwrap();
        let format = cache.format;
        assert_eq!(format, Format::Old);
        assert_eq!(
            cache
                .lookup("libcudnn.so.8", FLAG_X8664_LIB64)
                .map(|e| cache.path(e).into_owned()),
            Some("/usr/lib/x86_64-linux-gnu/libcudnn.so.8".to_string())
        );
        assert!(cache.lookup("libcudnn.so.8", FLAG_AARCH64_LIB64).is_none());
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
        let cache = parse(out).unwrap();
        let format = cache.format;
        assert_eq!(format, Format::New);
        assert_eq!(
            cache
                .lookup("libnccl.so.2", FLAG_X8664_LIB64)
                .map(|e| cache.path(e).into_owned()),
            Some("/usr/lib/x86_64-linux-gnu/libnccl.so.2".to_string())
        );
    }

    /// A new-format cache of `n` entries that all name one long string, as both soname and
    /// path: what made every entry copy it.
    fn one_string_cache(n: usize, len: usize) -> Vec<u8> {
        let mut out = b"glibc-ld.so.cache1.1".to_vec();
        out.extend_from_slice(&u32::try_from(n).unwrap().to_le_bytes());
        out.extend_from_slice(&u32::try_from(len + 1).unwrap().to_le_bytes());
        out.extend_from_slice(&[0u8; 4]);
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&[0u8; 12]);
        let at = u32::try_from(NEW_HEADER + n * NEW_ENTRY).unwrap();
        for _ in 0..n {
            out.extend_from_slice(&0x0303i32.to_le_bytes());
            out.extend_from_slice(&at.to_le_bytes());
            out.extend_from_slice(&at.to_le_bytes());
            out.extend_from_slice(&[0u8; 12]);
        }
        out.push(b'/');
        out.extend(std::iter::repeat_n(b'x', len - 1));
        out.push(0);
        out
    }

    #[test]
    fn entries_share_their_strings_and_are_capped() {
        // 4.8 MB: 200,000 entries naming one 4,000-byte string. Copied per entry it was
        // 1.6 GB; shared, the cache holds the file and 20 bytes per entry read.
        let bytes = one_string_cache(200_000, 4000);
        let file_len = bytes.len();
        let cache = parse(bytes).unwrap();
        assert_eq!(cache.entries().len(), MAX_ENTRIES);
        assert_eq!(cache.claimed, Some(200_000));
        assert!(std::mem::size_of::<CacheEntry>() <= 20);
        assert_eq!(cache.bytes.len(), file_len);
        let long = format!("/{}", "x".repeat(3999));
        let e = cache.lookup(&long, FLAG_X8664_LIB64).unwrap();
        assert_eq!(cache.path(e).len(), 4000);
        assert!(matches!(cache.path(e), Cow::Borrowed(_)));
        // Under the cap nothing is said to be cut.
        let small = parse(one_string_cache(10, 40)).unwrap();
        assert_eq!((small.entries().len(), small.claimed), (10, None));
    }

    #[test]
    fn look_ups_take_the_first_entry_of_the_right_architecture() {
        let mut bytes = old_cache(&[
            ("libz.so.1", "/first/libz.so.1"),
            ("libz.so.1", "/second/libz.so.1"),
        ]);
        // Make the first entry an AArch64 one.
        bytes[16..20].copy_from_slice(&0x0a03i32.to_le_bytes());
        let cache = parse(bytes).unwrap();
        let path = |arch| {
            cache
                .lookup("libz.so.1", arch)
                .map(|e| cache.path(e).into_owned())
        };
        assert_eq!(path(FLAG_X8664_LIB64).as_deref(), Some("/second/libz.so.1"));
        assert_eq!(
            path(FLAG_AARCH64_LIB64).as_deref(),
            Some("/first/libz.so.1")
        );
        assert!(cache.lookup("libnone.so", FLAG_X8664_LIB64).is_none());
    }

    #[test]
    fn garbage_and_truncation_do_not_panic() {
        assert!(parse(Vec::new()).is_none());
        assert!(parse(b"not a cache".to_vec()).is_none());
        let mut bytes = old_cache(&[("libx.so.1", "/x/libx.so.1")]);
        bytes.truncate(20);
        assert_eq!(parse(bytes).map(|c| c.entries().len()), Some(0));
        let mut huge = b"glibc-ld.so.cache1.1".to_vec();
        huge.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(parse(huge).map(|c| c.entries().len()), Some(0));
    }
}
