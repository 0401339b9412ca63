//! The dynamic symbol table of an ELF shared object, as ld.so binds it: the symbols the object
//! needs from others (each with the file and version node `.gnu.version_r` names for it:
//! `__nvJitLinkAddData_12_1` from `libnvJitLink.so.12` at `libnvJitLink.so.12`) and the symbols
//! it defines (each with its `.gnu.version_d` node). A library whose copy on the search path
//! lacks a symbol another library was linked against fails with "undefined symbol: X, version
//! V" when it loads; comparing the two tables says so before anything runs.
//!
//! Pure: the caller hands in a reader of byte ranges ([`super::elf::ReadAt`]). The tables are
//! found through the section header table, by type (`SHT_DYNSYM`, its string table by
//! `sh_link`, `SHT_GNU_versym`, `SHT_GNU_verneed`, `SHT_GNU_verdef`), so a 500 MB cuBLASLt
//! costs its header, its section table and these few sections, each read up to a cap. A table
//! larger than its cap is read in part (`capped`); one that runs past the end of the file is
//! [`Unread::Cut`].

use std::collections::HashMap;

use super::elf::{Fmt, ReadAt, SectionHeader, is_elf, section_headers};

/// `.dynsym` bytes read at most (ELF64: 24 bytes a symbol, so about 700,000 symbols).
pub const MAX_DYNSYM_BYTES: u64 = 16 << 20;
/// `.dynstr` bytes read at most (a 1 GB `libtorch_cuda.so`'s is a few megabytes).
pub const MAX_DYNSTR_BYTES: u64 = 32 << 20;
/// Bytes of each version section read at most.
const MAX_VERSION_BYTES: u64 = 1 << 20;
/// Version entries followed at most.
const MAX_VERSION_ENTRIES: usize = 4096;
/// `.gnu.hash` bytes read at most (4 bytes a hashed symbol, plus buckets and the Bloom filter).
const MAX_GNU_HASH_BYTES: u64 = 8 << 20;
/// One read at most (the host reads up to 1 MiB at a time).
const CHUNK: usize = 1 << 20;

const SHT_DYNSYM: u32 = 11;
const SHT_GNU_HASH: u32 = 0x6fff_fff6;
const SHT_GNU_VERDEF: u32 = 0x6fff_fffd;
const SHT_GNU_VERNEED: u32 = 0x6fff_fffe;
const SHT_GNU_VERSYM: u32 = 0x6fff_ffff;
const STB_GLOBAL: u8 = 1;
const STB_WEAK: u8 = 2;
const STB_GNU_UNIQUE: u8 = 10;
const STV_HIDDEN: u8 = 2;
const STV_INTERNAL: u8 = 1;
/// A definition without a version index (an object without `.gnu.version`).
const NO_NODE: u16 = u16::MAX;

/// Why an object's symbol tables could not be read; each is a fact about the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// Not an ELF object (or shorter than a header).
    NotElf,
    /// No readable section header table (stripped of it, or cut inside it).
    NoSections,
    /// No `.dynsym` section, or its string table is missing.
    NoDynsym,
    /// A table runs past the end of the file (a cut download, a file still being written).
    Cut,
}

impl Unread {
    /// Words for a report: what was wrong with the file.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotElf => "not an ELF object",
            Self::NoSections => "no readable section header table",
            Self::NoDynsym => "no dynamic symbol table",
            Self::Cut => "a symbol table runs past the end of the file",
        }
    }
}

/// A symbol the object needs from another (an undefined, non-weak global of its `.dynsym`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    pub name: String,
    /// The file its version node belongs to (`vn_file`: `libnvJitLink.so.12`); `None` for an
    /// unversioned need, which any object in the process may satisfy.
    pub file: Option<String>,
    /// The version node (`vna_name`: `libnvJitLink.so.12`, `libcublasLt.so.12`).
    pub version: Option<String>,
}

/// What one object's dynamic symbol table says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Symbols {
    /// Needed symbols, in table order.
    pub needs: Vec<Need>,
    /// How a definition is found: through the object's own `.gnu.hash`, as ld.so finds it, or
    /// (an object linked without one) through an index of every definition built on the first
    /// lookup.
    exports: Exports,
    /// The `.dynstr` bytes the names point into.
    strings: Vec<u8>,
    /// Version index → node name (`.gnu.version_d`).
    nodes: HashMap<u16, String>,
    /// The version nodes `.gnu.version_d` defines, the base node (the soname) included.
    pub version_nodes: Vec<String>,
    /// Whether a table was larger than its cap and read only in part.
    pub capped: bool,
}

/// Where [`Symbols::defines`] looks a name up.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Exports {
    /// The object's `.gnu.hash` over its `.dynsym` entries, kept as read: a lookup hashes the
    /// one name and reads the few entries of its chain. Building an index of every name
    /// instead cost a fifth of a `doctor` run on a machine with torch (libtorch_cpu defines
    /// some 100,000 C++ names, most of which nothing asks for).
    Hashed {
        table: GnuHash,
        fmt: Fmt,
        syms: Vec<u8>,
        versym: Vec<u8>,
    },
    /// Defined, visible symbols in table order: (the name's offset in `strings`, version
    /// index or `NO_NODE`), indexed on the first lookup by [`name_hash`] (hash, offset,
    /// length, version index), sorted, so a lookup is a binary search and the index makes no
    /// string of its own.
    Listed {
        defined: Vec<(u32, u16)>,
        index: std::sync::OnceLock<Vec<(u64, u32, u32, u16)>>,
    },
}

impl Default for Exports {
    fn default() -> Self {
        Self::Listed {
            defined: Vec::new(),
            index: std::sync::OnceLock::new(),
        }
    }
}

impl Symbols {
    /// Whether a need of `name` at `version` binds here, as glibc's `check_match` decides: an
    /// object without version definitions accepts any version; otherwise the node must be the
    /// one needed (a hidden, non-default node counts for an exact reference). An unversioned
    /// need binds to any definition.
    #[must_use]
    pub fn defines(&self, name: &str, version: Option<&str>) -> bool {
        let name = name.as_bytes();
        // Whether a definition of the name at version index `node` binds the need.
        let binds = |node: u16| match version {
            Some(v) if !self.version_nodes.is_empty() => {
                self.nodes.get(&node).is_some_and(|n| n == v)
            }
            _ => true,
        };
        match &self.exports {
            Exports::Hashed {
                table,
                fmt,
                syms,
                versym,
            } => table.chain(gnu_hash(name)).any(|i| {
                entry(*fmt, syms, versym, i).is_some_and(|e| {
                    e.is_export() && bytes_at(&self.strings, e.name) == Some(name) && binds(e.node)
                })
            }),
            Exports::Listed { defined, index } => {
                let hash = name_hash(name);
                let index = index.get_or_init(|| {
                    let mut index: Vec<(u64, u32, u32, u16)> = defined
                        .iter()
                        .filter_map(|&(at, node)| {
                            let name = bytes_at(&self.strings, at)?;
                            let len = u32::try_from(name.len()).ok()?;
                            Some((name_hash(name), at, len, node))
                        })
                        .collect();
                    index.sort_unstable();
                    index
                });
                let first = index.partition_point(|e| e.0 < hash);
                index
                    .get(first..)
                    .unwrap_or_default()
                    .iter()
                    .take_while(|e| e.0 == hash)
                    .any(|e| slice(&self.strings, e.1, e.2) == name && binds(e.3))
            }
        }
    }

    /// Whether the object defines the version node at all (ld.so refuses to load a needer
    /// of a node the file lacks: "version `V' not found").
    #[must_use]
    pub fn has_version_node(&self, version: &str) -> bool {
        self.version_nodes.is_empty() || self.version_nodes.iter().any(|n| n == version)
    }

    /// How many visible definitions the object has (what a lookup can find); counted by
    /// walking the table, for measurements.
    #[cfg(test)]
    fn defined_count(&self) -> usize {
        match &self.exports {
            Exports::Hashed {
                fmt, syms, versym, ..
            } => (1..syms.len() / entry_size(*fmt))
                .filter(|&i| entry(*fmt, syms, versym, i).is_some_and(|e| e.is_export()))
                .count(),
            Exports::Listed { defined, .. } => defined.len(),
        }
    }
}

/// One `.dynsym` entry, as far as binding goes.
struct Entry {
    /// The name's offset in `.dynstr`.
    name: u32,
    /// `STB_*` (the high nibble of `st_info`).
    bind: u8,
    /// `st_other`: the visibility in its low bits.
    other: u8,
    /// `st_shndx`: 0 for an undefined symbol (a need).
    shndx: u16,
    /// The `.gnu.version` index (hidden bit cleared), `NO_NODE` without one.
    node: u16,
}

impl Entry {
    /// A definition other objects can bind to: defined, global, weak or unique, not hidden,
    /// not local by version (`VER_NDX_LOCAL`).
    fn is_export(&self) -> bool {
        self.shndx != 0
            && matches!(self.bind, STB_GLOBAL | STB_WEAK | STB_GNU_UNIQUE)
            && !matches!(self.other & 3, STV_HIDDEN | STV_INTERNAL)
            && self.node != 0
    }
}

/// Bytes of one `.dynsym` entry: `Elf64_Sym` or `Elf32_Sym`.
fn entry_size(fmt: Fmt) -> usize {
    if fmt.is_64 { 24 } else { 16 }
}

/// Entry `i` of a `.dynsym` (with its `.gnu.version` index); `None` past the bytes read.
fn entry(fmt: Fmt, syms: &[u8], versym: &[u8], i: usize) -> Option<Entry> {
    let at = i.checked_mul(entry_size(fmt))?;
    let sym = syms.get(at..at + entry_size(fmt))?;
    let (name, info, other, shndx) = if fmt.is_64 {
        (fmt.u32(sym, 0)?, sym.get(4)?, sym.get(5)?, fmt.u16(sym, 6)?)
    } else {
        (
            fmt.u32(sym, 0)?,
            sym.get(12)?,
            sym.get(13)?,
            fmt.u16(sym, 14)?,
        )
    };
    Some(Entry {
        name,
        bind: info >> 4,
        other: *other,
        shndx,
        node: fmt.u16(versym, i * 2).map_or(NO_NODE, |v| v & 0x7fff),
    })
}

/// A `.gnu.hash` section (`DT_GNU_HASH`): a Bloom filter, then buckets of symbol indexes,
/// then one hash word a hashed symbol (its low bit ending a chain). The layout and the lookup
/// are glibc's `do_lookup_x` / binutils' `bfd_elf_gnu_hash`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct GnuHash {
    /// The first symbol index the table covers (the undefined ones come before it).
    symoffset: u32,
    /// The Bloom filter's second shift.
    shift: u32,
    /// Bits in one Bloom word: 64 in ELF64, 32 in ELF32.
    word_bits: u32,
    bloom: Vec<u64>,
    buckets: Vec<u32>,
    chains: Vec<u32>,
}

impl GnuHash {
    /// The table, or `None` where it is malformed (no buckets, a Bloom size that is not a power
    /// of two, which glibc masks by, or a section shorter than its header says).
    fn parse(fmt: Fmt, bytes: &[u8]) -> Option<Self> {
        let nbuckets = usize::try_from(fmt.u32(bytes, 0)?).ok()?;
        let symoffset = fmt.u32(bytes, 4)?;
        let bloom_size = usize::try_from(fmt.u32(bytes, 8)?).ok()?;
        let shift = fmt.u32(bytes, 12)?;
        if nbuckets == 0 || !bloom_size.is_power_of_two() {
            return None;
        }
        let word = if fmt.is_64 { 8 } else { 4 };
        let buckets_at = bloom_size.checked_mul(word)?.checked_add(16)?;
        let chains_at = nbuckets.checked_mul(4)?.checked_add(buckets_at)?;
        if chains_at > bytes.len() {
            return None;
        }
        let bloom = (0..bloom_size)
            .map(|k| fmt.word(bytes, 16 + k * word))
            .collect::<Option<Vec<u64>>>()?;
        let words = |from: usize, count: usize| -> Vec<u32> {
            (0..count)
                .map_while(|k| fmt.u32(bytes, from + k * 4))
                .collect()
        };
        Some(Self {
            symoffset,
            shift,
            word_bits: if fmt.is_64 { 64 } else { 32 },
            bloom,
            buckets: words(buckets_at, nbuckets),
            chains: words(chains_at, (bytes.len() - chains_at) / 4),
        })
    }

    /// The symbol indexes whose hash is `hash` (the Bloom filter first, then the chain of the
    /// hash's bucket); the names are the caller's to compare.
    fn chain(&self, hash: u32) -> impl Iterator<Item = usize> + '_ {
        let bits = self.word_bits;
        let word = self
            .bloom
            .get((hash / bits) as usize & (self.bloom.len() - 1))
            .copied()
            .unwrap_or(0);
        let mask = (1u64 << (hash % bits)) | (1u64 << (hash.wrapping_shr(self.shift) % bits));
        let start = if word & mask == mask {
            self.buckets
                .get(hash as usize % self.buckets.len())
                .copied()
                .filter(|&i| i >= self.symoffset)
        } else {
            None
        };
        let symoffset = self.symoffset;
        let mut next = start;
        std::iter::from_fn(move || {
            loop {
                let i = next?;
                let h = *self.chains.get((i - symoffset) as usize)?;
                next = if h & 1 == 1 { None } else { i.checked_add(1) };
                if h | 1 == hash | 1 {
                    return Some(i as usize);
                }
            }
        })
    }
}

/// The GNU hash of a name (`dl_new_hash`: h × 33 + c from 5381).
fn gnu_hash(name: &[u8]) -> u32 {
    name.iter().fold(5381u32, |h, &c| {
        h.wrapping_mul(33).wrapping_add(u32::from(c))
    })
}

/// Reads the dynamic symbol table and its version sections.
///
/// # Errors
/// [`Unread`] when the file is not an ELF object, has no readable section table or no
/// `.dynsym`, or a table runs past the end of the file.
#[expect(
    clippy::too_many_lines,
    reason = "one pass over the tables in the order they depend on each other; the steps share the buffers read"
)]
pub fn parse(read: &mut ReadAt<'_>) -> Result<Symbols, Unread> {
    let head = read(0, 64).ok_or(Unread::NotElf)?;
    if !is_elf(&head) || head.len() < 52 {
        return Err(Unread::NotElf);
    }
    let fmt = Fmt::of(&head);
    let sections = section_headers(fmt, read, &head).ok_or(Unread::NoSections)?;
    let dynsym = *sections
        .iter()
        .find(|s| s.kind == SHT_DYNSYM)
        .ok_or(Unread::NoDynsym)?;
    let strtab = *usize::try_from(dynsym.link)
        .ok()
        .and_then(|i| sections.get(i))
        .ok_or(Unread::NoDynsym)?;
    let mut capped = false;
    let syms = read_section(read, dynsym, MAX_DYNSYM_BYTES, &mut capped)?;
    let strings = read_section(read, strtab, MAX_DYNSTR_BYTES, &mut capped)?;
    let by_kind = |kind: u32| sections.iter().find(|s| s.kind == kind).copied();
    let versym = match by_kind(SHT_GNU_VERSYM) {
        Some(s) => read_section(read, s, MAX_DYNSYM_BYTES / 12, &mut capped)?,
        None => Vec::new(),
    };
    let string_of = |sections: &[SectionHeader], link: u32, read: &mut ReadAt<'_>| {
        // Version sections name their strings through their own sh_link (the .dynstr).
        if link == dynsym.link {
            None
        } else {
            usize::try_from(link)
                .ok()
                .and_then(|i| sections.get(i))
                .and_then(|s| read_section(read, *s, MAX_VERSION_BYTES, &mut false).ok())
        }
    };
    let mut needed_nodes: HashMap<u16, (String, String)> = HashMap::new();
    if let Some(s) = by_kind(SHT_GNU_VERNEED) {
        let bytes = read_section(read, s, MAX_VERSION_BYTES, &mut capped)?;
        let own = string_of(&sections, s.link, read);
        let names = own.as_deref().unwrap_or(&strings);
        needed_nodes = verneed(fmt, &bytes, s.info, names);
    }
    let mut defined_nodes: HashMap<u16, String> = HashMap::new();
    if let Some(s) = by_kind(SHT_GNU_VERDEF) {
        let bytes = read_section(read, s, MAX_VERSION_BYTES, &mut capped)?;
        let own = string_of(&sections, s.link, read);
        let names = own.as_deref().unwrap_or(&strings);
        defined_nodes = verdef(fmt, &bytes, s.info, names);
    }
    let mut nodes: Vec<(u16, String)> =
        defined_nodes.iter().map(|(k, v)| (*k, v.clone())).collect();
    nodes.sort();
    let version_nodes = nodes.into_iter().map(|(_, v)| v).collect();
    // A `.gnu.hash` over this `.dynsym` (its sh_link), read whole: a cut one is not used.
    let hashed = match sections.iter().find(|s| {
        s.kind == SHT_GNU_HASH
            && sections
                .get(s.link as usize)
                .is_some_and(|d| d.offset == dynsym.offset)
    }) {
        Some(s) if s.size <= MAX_GNU_HASH_BYTES => {
            read_section(read, *s, MAX_GNU_HASH_BYTES, &mut false)
                .ok()
                .and_then(|bytes| GnuHash::parse(fmt, &bytes))
        }
        _ => None,
    };
    let mut needs = Vec::new();
    let mut defined: Vec<(u32, u16)> = Vec::new();
    // Entry 0 is the null symbol.
    for i in 1..syms.len() / entry_size(fmt) {
        let Some(e) = entry(fmt, &syms, &versym, i) else {
            break;
        };
        // An unnamed symbol, or a name past the table: nothing to bind.
        if strings
            .get(usize::try_from(e.name).unwrap_or(usize::MAX))
            .is_none_or(|b| *b == 0)
        {
            continue;
        }
        if e.shndx == 0 {
            if e.bind != STB_GLOBAL {
                // A weak reference may stay unresolved; a local one is not a need.
                continue;
            }
            let Some(name) = string_at(&strings, e.name) else {
                continue;
            };
            let (file, version) = match needed_nodes.get(&e.node) {
                Some((f, v)) => (Some(f.clone()), Some(v.clone())),
                None => (None, None),
            };
            needs.push(Need {
                name: name.to_string(),
                file,
                version,
            });
        } else if hashed.is_none() && e.is_export() {
            defined.push((e.name, e.node));
        }
    }
    let exports = match hashed {
        Some(table) => Exports::Hashed {
            table,
            fmt,
            syms,
            versym,
        },
        None => Exports::Listed {
            defined,
            index: std::sync::OnceLock::new(),
        },
    };
    Ok(Symbols {
        needs,
        exports,
        strings,
        nodes: defined_nodes,
        version_nodes,
        capped,
    })
}

/// A section's bytes up to `cap` (setting `capped` when it is larger), in reads of at most
/// 1 MiB. [`Unread::Cut`] when the file ends first.
fn read_section(
    read: &mut ReadAt<'_>,
    s: SectionHeader,
    cap: u64,
    capped: &mut bool,
) -> Result<Vec<u8>, Unread> {
    if s.size > cap {
        *capped = true;
    }
    let want = usize::try_from(s.size.min(cap)).map_err(|_| Unread::Cut)?;
    let mut out = Vec::with_capacity(want);
    while out.len() < want {
        let at = s.offset.checked_add(out.len() as u64).ok_or(Unread::Cut)?;
        match read(at, (want - out.len()).min(CHUNK)) {
            Some(bytes) if !bytes.is_empty() => out.extend_from_slice(&bytes),
            _ => return Err(Unread::Cut),
        }
    }
    Ok(out)
}

/// `len` bytes at `at` (empty past the table).
fn slice(table: &[u8], at: u32, len: u32) -> &[u8] {
    let (at, len) = (at as usize, len as usize);
    table.get(at..at.saturating_add(len)).unwrap_or_default()
}

/// The NUL-terminated string at `at`; `None` past the table (or cut by its cap).
fn string_at(table: &[u8], at: u32) -> Option<&str> {
    std::str::from_utf8(bytes_at(table, at)?).ok()
}

/// The bytes of the NUL-terminated string at `at`, without its NUL; `None` past the table.
fn bytes_at(table: &[u8], at: u32) -> Option<&[u8]> {
    let rest = table.get(usize::try_from(at).ok()?..)?;
    std::ffi::CStr::from_bytes_until_nul(rest)
        .ok()
        .map(std::ffi::CStr::to_bytes)
}

/// A symbol name's 64-bit hash (FxHash's step over eight bytes at a time): the sort key of
/// `Exports::Listed`'s `defined`. Names with the same hash are told apart by their bytes.
fn name_hash(name: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(K);
    let mut chunks = name.chunks_exact(8);
    let mut h = (&mut chunks).fold(0u64, |h, c| {
        step(h, u64::from_le_bytes(c.try_into().unwrap_or_default()))
    });
    let mut tail = [0u8; 8];
    for (t, b) in tail.iter_mut().zip(chunks.remainder()) {
        *t = *b;
    }
    h = step(h, u64::from_le_bytes(tail));
    step(h, name.len() as u64)
}

/// `Elf_Verneed` entries (`vn_cnt` u16 at 2, `vn_file` u32 at 4, `vn_aux` u32 at 8, `vn_next`
/// u32 at 12), each with its `Elf_Vernaux` list (`vna_other` u16 at 6, `vna_name` u32 at 8,
/// `vna_next` u32 at 12): the version index a symbol's `.gnu.version` entry holds → (file,
/// node). The layout is the same in ELF32 and ELF64.
fn verneed(fmt: Fmt, bytes: &[u8], count: u32, names: &[u8]) -> HashMap<u16, (String, String)> {
    let mut out = HashMap::new();
    let mut at = 0usize;
    let mut seen = 0usize;
    for _ in 0..count.min(MAX_VERSION_ENTRIES as u32) {
        if at >= bytes.len() {
            break;
        }
        let (Some(cnt), Some(file), Some(aux), Some(next)) = (
            fmt.u16(bytes, at + 2),
            fmt.u32(bytes, at + 4),
            fmt.u32(bytes, at + 8),
            fmt.u32(bytes, at + 12),
        ) else {
            break;
        };
        let file = string_at(names, file).unwrap_or_default().to_string();
        let mut a = at.saturating_add(aux as usize);
        for _ in 0..cnt {
            seen += 1;
            if a >= bytes.len() {
                break;
            }
            let (Some(other), Some(name), Some(next_aux)) = (
                fmt.u16(bytes, a + 6),
                fmt.u32(bytes, a + 8),
                fmt.u32(bytes, a + 12),
            ) else {
                break;
            };
            if let Some(n) = string_at(names, name) {
                out.insert(other, (file.clone(), n.to_string()));
            }
            if next_aux == 0 || seen > MAX_VERSION_ENTRIES {
                break;
            }
            a = a.saturating_add(next_aux as usize);
        }
        if next == 0 || seen > MAX_VERSION_ENTRIES {
            break;
        }
        at = at.saturating_add(next as usize);
    }
    out
}

/// `Elf_Verdef` entries (`vd_ndx` u16 at 4, `vd_cnt` u16 at 6, `vd_aux` u32 at 12, `vd_next`
/// u32 at 16), each named by its first `Elf_Verdaux` (`vda_name` u32 at 0): version index →
/// node name. The base entry (index 1) is the file's own name.
fn verdef(fmt: Fmt, bytes: &[u8], count: u32, names: &[u8]) -> HashMap<u16, String> {
    let mut out = HashMap::new();
    let mut at = 0usize;
    for _ in 0..count.min(MAX_VERSION_ENTRIES as u32) {
        if at >= bytes.len() {
            break;
        }
        let (Some(ndx), Some(aux), Some(next)) = (
            fmt.u16(bytes, at + 4),
            fmt.u32(bytes, at + 12),
            fmt.u32(bytes, at + 16),
        ) else {
            break;
        };
        let first = at.saturating_add(aux as usize);
        if let Some(n) = (first < bytes.len())
            .then(|| fmt.u32(bytes, first))
            .flatten()
            .and_then(|name| string_at(names, name))
        {
            out.insert(ndx & 0x7fff, n.to_string());
        }
        if next == 0 {
            break;
        }
        at = at.saturating_add(next as usize);
    }
    out
}

/// A minimal ELF64 little-endian shared object with a `.dynsym` of the given needs (name,
/// optional (file, node)) and definitions (name, optional node), its `.dynstr`, the version
/// sections when a version is named, and a `.gnu.hash` over the definitions (its last
/// section); the layout `scripts/gen-symbol-elf.py` writes, which has no `.gnu.hash`.
#[cfg(test)]
#[expect(
    clippy::too_many_lines,
    reason = "a test object written section by section, as the generator script does"
)]
pub(crate) fn test_object(
    soname: &str,
    needs: &[(&str, Option<(&str, &str)>)],
    defines: &[(&str, Option<&str>)],
) -> Vec<u8> {
    // strings
    let mut strs = vec![0u8];
    let mut add = |s: &str| -> u32 {
        let at = u32::try_from(strs.len()).unwrap();
        strs.extend_from_slice(s.as_bytes());
        strs.push(0);
        at
    };
    let soname_at = add(soname);
    // version indexes: 1 base, then defined nodes, then needed nodes
    let mut def_nodes: Vec<&str> = Vec::new();
    for (_, v) in defines {
        if let Some(v) = v
            && !def_nodes.contains(v)
        {
            def_nodes.push(v);
        }
    }
    let mut need_nodes: Vec<(&str, &str)> = Vec::new();
    for (_, fv) in needs {
        if let Some(fv) = fv
            && !need_nodes.contains(fv)
        {
            need_nodes.push(*fv);
        }
    }
    let versioned = !def_nodes.is_empty() || !need_nodes.is_empty();
    let mut syms: Vec<u8> = vec![0; 24];
    let mut versym: Vec<u8> = vec![0, 0];
    let put = |name: u32, shndx: u16, ver: u16, syms: &mut Vec<u8>, versym: &mut Vec<u8>| {
        syms.extend_from_slice(&name.to_le_bytes());
        syms.push(0x12); // GLOBAL FUNC
        syms.push(0);
        syms.extend_from_slice(&shndx.to_le_bytes());
        syms.extend_from_slice(&[0; 16]);
        versym.extend_from_slice(&ver.to_le_bytes());
    };
    let def_base = 2u16;
    let need_base = def_base + u16::try_from(def_nodes.len()).unwrap();
    let names: Vec<u32> = needs.iter().map(|(n, _)| add(n)).collect();
    let dnames: Vec<u32> = defines.iter().map(|(n, _)| add(n)).collect();
    let def_name_at: Vec<u32> = def_nodes.iter().map(|n| add(n)).collect();
    let mut files: Vec<&str> = Vec::new();
    for (f, _) in &need_nodes {
        if !files.contains(f) {
            files.push(f);
        }
    }
    let file_at: Vec<u32> = files.iter().map(|f| add(f)).collect();
    let node_at: Vec<u32> = need_nodes.iter().map(|(_, v)| add(v)).collect();
    for ((_, fv), name) in needs.iter().zip(&names) {
        let ver = fv
            .and_then(|fv| need_nodes.iter().position(|x| *x == fv))
            .map_or(1, |i| need_base + u16::try_from(i).unwrap());
        put(*name, 0, ver, &mut syms, &mut versym);
    }
    // The definitions in bucket order, as a linker lays them out for `.gnu.hash`.
    let nbuckets = u32::try_from(defines.len() / 4 + 1).unwrap();
    let hashes: Vec<u32> = defines
        .iter()
        .map(|(n, _)| gnu_hash(n.as_bytes()))
        .collect();
    let mut order: Vec<usize> = (0..defines.len()).collect();
    order.sort_by_key(|&k| hashes[k] % nbuckets);
    for &k in &order {
        let ver = defines[k]
            .1
            .and_then(|v| def_nodes.iter().position(|x| *x == v))
            .map_or(1, |i| def_base + u16::try_from(i).unwrap());
        put(dnames[k], 7, ver, &mut syms, &mut versym);
    }
    let symoffset = u32::try_from(1 + needs.len()).unwrap();
    let (bloom_size, shift) = (2u32, 6u32);
    let mut bloom = [0u64; 2];
    let mut buckets = vec![0u32; nbuckets as usize];
    let mut chains: Vec<u32> = Vec::new();
    for (pos, &k) in order.iter().enumerate() {
        let h = hashes[k];
        bloom[(h / 64 % bloom_size) as usize] |= (1 << (h % 64)) | (1 << ((h >> shift) % 64));
        let bucket = (h % nbuckets) as usize;
        if buckets[bucket] == 0 {
            buckets[bucket] = symoffset + u32::try_from(pos).unwrap();
        }
        let last = order
            .get(pos + 1)
            .is_none_or(|&next| hashes[next] % nbuckets != h % nbuckets);
        chains.push(if last { h | 1 } else { h & !1 });
    }
    let mut gnu_hash_bytes: Vec<u8> = Vec::new();
    for w in [nbuckets, symoffset, bloom_size, shift] {
        gnu_hash_bytes.extend_from_slice(&w.to_le_bytes());
    }
    for w in bloom {
        gnu_hash_bytes.extend_from_slice(&w.to_le_bytes());
    }
    for w in buckets.iter().chain(&chains) {
        gnu_hash_bytes.extend_from_slice(&w.to_le_bytes());
    }
    // verdef: base + each node
    let mut verdef: Vec<u8> = Vec::new();
    let defs: Vec<(u16, u16, u32)> = std::iter::once((1u16, 1u16, soname_at))
        .chain(
            def_name_at
                .iter()
                .enumerate()
                .map(|(i, n)| (def_base + u16::try_from(i).unwrap(), 0, *n)),
        )
        .collect();
    for (k, (ndx, flags, name)) in defs.iter().enumerate() {
        let last = k + 1 == defs.len();
        verdef.extend_from_slice(&1u16.to_le_bytes());
        verdef.extend_from_slice(&flags.to_le_bytes());
        verdef.extend_from_slice(&ndx.to_le_bytes());
        verdef.extend_from_slice(&1u16.to_le_bytes());
        verdef.extend_from_slice(&0u32.to_le_bytes());
        verdef.extend_from_slice(&20u32.to_le_bytes());
        verdef.extend_from_slice(&(if last { 0u32 } else { 28 }).to_le_bytes());
        verdef.extend_from_slice(&name.to_le_bytes());
        verdef.extend_from_slice(&0u32.to_le_bytes());
    }
    let mut verneed: Vec<u8> = Vec::new();
    for (fi, (f, fat)) in files.iter().zip(&file_at).enumerate() {
        let nodes: Vec<usize> = (0..need_nodes.len())
            .filter(|i| need_nodes[*i].0 == *f)
            .collect();
        let last = fi + 1 == files.len();
        let cnt = u16::try_from(nodes.len()).unwrap();
        verneed.extend_from_slice(&1u16.to_le_bytes());
        verneed.extend_from_slice(&cnt.to_le_bytes());
        verneed.extend_from_slice(&fat.to_le_bytes());
        verneed.extend_from_slice(&16u32.to_le_bytes());
        let next = if last { 0 } else { 16 + 16 * u32::from(cnt) };
        verneed.extend_from_slice(&next.to_le_bytes());
        for (k, i) in nodes.iter().enumerate() {
            verneed.extend_from_slice(&0u32.to_le_bytes());
            verneed.extend_from_slice(&0u16.to_le_bytes());
            verneed.extend_from_slice(&(need_base + u16::try_from(*i).unwrap()).to_le_bytes());
            verneed.extend_from_slice(&node_at[*i].to_le_bytes());
            let n = if k + 1 == nodes.len() { 0u32 } else { 16 };
            verneed.extend_from_slice(&n.to_le_bytes());
        }
    }
    // layout: header, dynsym, dynstr, versym, verdef, verneed, section table
    let mut data: Vec<u8> = Vec::new();
    let mut headers: Vec<(u32, u64, u64, u32, u32)> = vec![(0, 0, 0, 0, 0)];
    let mut section = |kind: u32, bytes: &[u8], link: u32, info: u32, data: &mut Vec<u8>| {
        while !data.len().is_multiple_of(8) {
            data.push(0);
        }
        headers.push((kind, 64 + data.len() as u64, bytes.len() as u64, link, info));
        data.extend_from_slice(bytes);
    };
    section(SHT_DYNSYM, &syms, 2, 1, &mut data);
    section(3, &strs, 0, 0, &mut data);
    if versioned {
        section(SHT_GNU_VERSYM, &versym, 1, 0, &mut data);
        section(
            SHT_GNU_VERDEF,
            &verdef,
            2,
            u32::try_from(defs.len()).unwrap(),
            &mut data,
        );
        if !files.is_empty() {
            section(
                SHT_GNU_VERNEED,
                &verneed,
                2,
                u32::try_from(files.len()).unwrap(),
                &mut data,
            );
        }
    }
    section(SHT_GNU_HASH, &gnu_hash_bytes, 1, 0, &mut data);
    while !data.len().is_multiple_of(8) {
        data.push(0);
    }
    let shoff = 64 + data.len() as u64;
    let mut out = Vec::new();
    out.extend_from_slice(b"\x7fELF\x02\x01\x01\0");
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&3u16.to_le_bytes()); // ET_DYN
    out.extend_from_slice(&62u16.to_le_bytes());
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&[0; 16]); // entry, phoff
    out.extend_from_slice(&shoff.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&64u16.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&64u16.to_le_bytes());
    out.extend_from_slice(&u16::try_from(headers.len()).unwrap().to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&data);
    for (kind, offset, size, link, info) in &headers {
        out.extend_from_slice(&0u32.to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&[0; 16]);
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&link.to_le_bytes());
        out.extend_from_slice(&info.to_le_bytes());
        out.extend_from_slice(&[0; 16]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(bytes: &[u8]) -> impl FnMut(u64, usize) -> Option<Vec<u8>> + '_ {
        move |off, len| {
            let off = usize::try_from(off).ok()?;
            (off < bytes.len()).then(|| bytes[off..(off + len).min(bytes.len())].to_vec())
        }
    }

    fn cusparse() -> Vec<u8> {
        test_object(
            "libcusparse.so.12",
            &[
                (
                    "__nvJitLinkAddData_12_1",
                    Some(("libnvJitLink.so.12", "libnvJitLink.so.12")),
                ),
                ("memcpy", Some(("libc.so.6", "GLIBC_2.14"))),
                ("ncclCommRegister", None),
            ],
            &[("cusparseCreate", Some("libcusparse.so.12"))],
        )
    }

    #[test]
    fn needs_carry_their_file_and_version_node() {
        let s = parse(&mut reader(&cusparse())).unwrap();
        assert_eq!(
            s.needs[0],
            Need {
                name: "__nvJitLinkAddData_12_1".into(),
                file: Some("libnvJitLink.so.12".into()),
                version: Some("libnvJitLink.so.12".into()),
            }
        );
        assert_eq!(s.needs[1].file.as_deref(), Some("libc.so.6"));
        assert_eq!(s.needs[2].file, None);
        assert!(s.defines("cusparseCreate", Some("libcusparse.so.12")));
        assert!(s.defines("cusparseCreate", None));
        assert!(!s.defines("cusparseCreate", Some("libcusparse.so.11")));
        assert!(!s.defines("__nvJitLinkAddData_12_1", None));
        assert_eq!(s.version_nodes, ["libcusparse.so.12", "libcusparse.so.12"]);
        assert!(!s.capped);
    }

    /// Every one of thousands of C++ names that share long prefixes (as libtorch_cpu's do) is
    /// found, at its own version only, and a name one byte off is not: the lookup goes by
    /// hash, then by the bytes.
    #[test]
    fn each_of_many_names_with_one_prefix_is_found_and_no_other() {
        let names: Vec<String> = (0..3000)
            .map(|i| format!("_ZN2at6native12_GLOBAL__N_118some_long_kernel_name{i}Ev"))
            .collect();
        let defines: Vec<(&str, Option<&str>)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), Some(if i % 2 == 0 { "V_A" } else { "V_B" })))
            .collect();
        let s = parse(&mut reader(&test_object("libx.so", &[], &defines))).unwrap();
        for (i, n) in names.iter().enumerate() {
            let (own, other) = if i % 2 == 0 {
                ("V_A", "V_B")
            } else {
                ("V_B", "V_A")
            };
            assert!(s.defines(n, Some(own)), "{n}");
            assert!(s.defines(n, None), "{n}");
            assert!(!s.defines(n, Some(other)), "{n}");
            assert!(!s.defines(&format!("{n}x"), None));
            assert!(!s.defines(&n[..n.len() - 1], None));
        }
        assert_eq!(name_hash(b"abc"), name_hash(b"abc"));
        assert_ne!(
            name_hash(b"abc"),
            name_hash(b"abc\0"),
            "the length is hashed"
        );
    }

    /// The object with its `.gnu.hash` section retyped `SHT_PROGBITS`: an object linked with
    /// `--hash-style=sysv`, whose definitions are found through [`Exports::Listed`].
    fn without_gnu_hash(obj: &[u8]) -> Vec<u8> {
        let mut out = obj.to_vec();
        let shoff = usize::try_from(u64::from_le_bytes(obj[40..48].try_into().unwrap())).unwrap();
        let count = usize::from(u16::from_le_bytes(obj[60..62].try_into().unwrap()));
        for k in 0..count {
            let kind = shoff + k * 64 + 4;
            if out[kind..kind + 4] == SHT_GNU_HASH.to_le_bytes() {
                out[kind..kind + 4].copy_from_slice(&1u32.to_le_bytes());
            }
        }
        out
    }

    /// Both ways of finding a definition give the same answers on an object whose names share
    /// long prefixes and two version nodes: its `.gnu.hash` chains, and the index of every name.
    #[test]
    fn the_gnu_hash_table_and_the_full_index_agree() {
        let names: Vec<String> = (0..500).map(|i| format!("_ZN3c104impl{i}Ev")).collect();
        let defines: Vec<(&str, Option<&str>)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), Some(if i % 3 == 0 { "V_A" } else { "V_B" })))
            .collect();
        let obj = test_object("libc10.so", &[("memcpy", None)], &defines);
        let hashed = parse(&mut reader(&obj)).unwrap();
        let listed = parse(&mut reader(&without_gnu_hash(&obj))).unwrap();
        assert!(matches!(hashed.exports, Exports::Hashed { .. }));
        assert!(matches!(listed.exports, Exports::Listed { .. }));
        assert_eq!(hashed.defined_count(), 500);
        assert_eq!(listed.defined_count(), 500);
        assert_eq!(hashed.needs, listed.needs);
        for n in names
            .iter()
            .map(String::as_str)
            .chain(["memcpy", "", "_ZN3c104impl"])
        {
            for v in [None, Some("V_A"), Some("V_B"), Some("libc10.so")] {
                assert_eq!(hashed.defines(n, v), listed.defines(n, v), "{n} {v:?}");
            }
        }
        assert!(hashed.defines("_ZN3c104impl3Ev", Some("V_A")));
        assert!(!hashed.defines("_ZN3c104impl3Ev", Some("V_B")));
        assert!(
            !hashed.defines("memcpy", None),
            "a need is not a definition"
        );
    }

    /// A `.gnu.hash` that glibc would not use (a Bloom filter whose size is not a power of
    /// two) is not used here either: every name is still found, through the full index.
    #[test]
    fn a_malformed_gnu_hash_falls_back_to_the_full_index() {
        let obj = test_object("libx.so", &[], &[("a", None), ("b", None)]);
        let mut bad = obj.clone();
        let shoff = usize::try_from(u64::from_le_bytes(obj[40..48].try_into().unwrap())).unwrap();
        let count = usize::from(u16::from_le_bytes(obj[60..62].try_into().unwrap()));
        let hash = shoff + (count - 1) * 64;
        let at = usize::try_from(u64::from_le_bytes(
            obj[hash + 24..hash + 32].try_into().unwrap(),
        ))
        .unwrap();
        bad[at + 8..at + 12].copy_from_slice(&3u32.to_le_bytes());
        let s = parse(&mut reader(&bad)).unwrap();
        assert!(matches!(s.exports, Exports::Listed { .. }));
        assert!(s.defines("a", None) && s.defines("b", None) && !s.defines("c", None));
    }

    /// Against a real linker's output: the C library this test runs on (found in
    /// `/proc/self/maps`), its `.gnu.hash` against the index of all its definitions, for
    /// every definition at its own version node and for names one byte off.
    #[test]
    fn the_running_c_librarys_gnu_hash_finds_every_definition() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let Some(path) = maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .find(|p| p.contains("/libc.so") || p.contains("/libc-"))
        else {
            // Not glibc (musl links statically): nothing to compare.
            return;
        };
        let bytes = std::fs::read(path).unwrap();
        let hashed = parse(&mut reader(&bytes)).unwrap();
        let listed = parse(&mut reader(&without_gnu_hash(&bytes))).unwrap();
        assert!(matches!(hashed.exports, Exports::Hashed { .. }), "{path}");
        let Exports::Listed { defined, .. } = &listed.exports else {
            panic!("{path}: still hashed");
        };
        assert!(
            defined.len() > 1000,
            "{path}: {} definitions",
            defined.len()
        );
        for &(at, node) in defined {
            let name = string_at(&listed.strings, at).unwrap();
            let version = listed.nodes.get(&node).map(String::as_str);
            assert!(hashed.defines(name, version), "{name} {version:?}");
            assert!(hashed.defines(name, None), "{name}");
            let off = format!("{name}_");
            assert_eq!(
                hashed.defines(&off, None),
                listed.defines(&off, None),
                "{off}"
            );
        }
    }

    #[test]
    fn an_object_without_version_definitions_accepts_any_version() {
        let nccl = test_object("libnccl.so.2", &[], &[("ncclCommInitRank", None)]);
        let s = parse(&mut reader(&nccl)).unwrap();
        assert!(s.version_nodes.is_empty());
        assert!(s.defines("ncclCommInitRank", Some("anything")));
        assert!(!s.defines("ncclCommRegister", None));
        assert!(s.has_version_node("anything"));
    }

    #[test]
    fn what_cannot_be_read_is_a_reason_not_a_panic() {
        assert_eq!(parse(&mut reader(b"")), Err(Unread::NotElf));
        assert_eq!(parse(&mut reader(b"#!/bin/sh\n")), Err(Unread::NotElf));
        let obj = cusparse();
        // Cut inside the section header table.
        assert_eq!(
            parse(&mut reader(&obj[..obj.len() - 10])),
            Err(Unread::NoSections)
        );
        // Cut inside .dynsym, with the section table kept (a table pointing past the end).
        let mut cut = obj.clone();
        let shoff = u64::from_le_bytes(cut[40..48].try_into().unwrap()) as usize;
        // .dynsym is section 1: make it run far past the end.
        cut[shoff + 64 + 32..shoff + 64 + 40].copy_from_slice(&(1u64 << 20).to_le_bytes());
        assert_eq!(parse(&mut reader(&cut)), Err(Unread::Cut));
        // No .dynsym at all.
        let module = super::super::modinfo::test_object(&[(".text", b"\x90")]);
        assert_eq!(parse(&mut reader(&module)), Err(Unread::NoDynsym));
        // Every byte after the header garbled: never a panic.
        let mut junk = obj;
        for b in junk.iter_mut().skip(64) {
            *b = 0xff;
        }
        let _ = parse(&mut reader(&junk));
    }

    /// A measurement, not a check: `GPU_DOCTOR_DYNSYM=/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1
    /// cargo test --release --lib parse::dynsym -- --ignored --nocapture` prints what `parse`
    /// reads from a real library and how long it takes.
    #[test]
    #[ignore = "measures the real library GPU_DOCTOR_DYNSYM names"]
    fn measure_a_real_library() {
        use std::os::unix::fs::FileExt;
        let Ok(path) = std::env::var("GPU_DOCTOR_DYNSYM") else {
            return;
        };
        let file = std::fs::File::open(&path).unwrap();
        let mut bytes_read = 0usize;
        let mut read = |off: u64, len: usize| -> Option<Vec<u8>> {
            let mut b = vec![0; len.min(CHUNK)];
            let n = file.read_at(&mut b, off).ok()?;
            b.truncate(n);
            bytes_read += n;
            (n > 0).then_some(b)
        };
        let start = std::time::Instant::now();
        let s = parse(&mut read).unwrap();
        let took = start.elapsed();
        eprintln!(
            "{path}: {} needs, {} defined, {} version nodes, capped {}, .gnu.hash {}; {bytes_read} bytes read in {took:?}",
            s.needs.len(),
            s.defined_count(),
            s.version_nodes.len(),
            s.capped,
            matches!(s.exports, Exports::Hashed { .. })
        );
    }

    #[test]
    fn a_table_larger_than_its_cap_is_read_in_part() {
        let obj = cusparse();
        // A reader that serves a 10 GB file of zeros past the object: the size field of
        // .dynstr claims 1 GB.
        let mut big = obj.clone();
        let shoff = u64::from_le_bytes(big[40..48].try_into().unwrap()) as usize;
        let at = shoff + 2 * 64 + 32;
        big[at..at + 8].copy_from_slice(&(1u64 << 30).to_le_bytes());
        let mut served = 0usize;
        let mut read = |off: u64, len: usize| -> Option<Vec<u8>> {
            served += len;
            let off = usize::try_from(off).ok()?;
            if off >= 10usize << 30 {
                return None;
            }
            let mut out = vec![0u8; len];
            if off < big.len() {
                let end = (off + len).min(big.len());
                out[..end - off].copy_from_slice(&big[off..end]);
            }
            Some(out)
        };
        let s = parse(&mut read).unwrap();
        assert!(s.capped);
        assert_eq!(s.needs[0].name, "__nvJitLinkAddData_12_1");
        assert!(served <= (MAX_DYNSTR_BYTES + MAX_DYNSYM_BYTES) as usize + (4 << 20));
    }
}
