//! The dynamic section of an ELF shared object: its soname, the sonames it needs, its
//! RPATH/RUNPATH and the symbol versions it needs from each (`.gnu.version_r`). Pure: the caller
//! hands in a reader of byte ranges, so a 1 GB `libtorch_cuda.so` costs a few kilobytes.
//!
//! Only what ld.so itself reads is read: the ELF header, the program headers, the `PT_DYNAMIC`
//! segment, and the strings its entries point at (found through the `PT_LOAD` segments, as the
//! loader does, since section headers may be stripped). Every count and size is bounded.

/// What the loader needs to know about one shared object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dynamic {
    pub soname: Option<String>,
    /// `DT_NEEDED`, in order.
    pub needed: Vec<String>,
    /// `DT_RPATH` (searched before `LD_LIBRARY_PATH`, only when there is no `DT_RUNPATH`).
    pub rpath: Option<String>,
    /// `DT_RUNPATH` (searched after `LD_LIBRARY_PATH`, for this object's own needs only).
    pub runpath: Option<String>,
    /// `DT_VERNEED`: per needed file, the version nodes it needs (`libnvJitLink.so.12`).
    pub verneed: Vec<(String, Vec<String>)>,
    /// 64-bit object (`ELFCLASS64`).
    pub is_64: bool,
    /// `e_machine` (62 x86-64, 183 AArch64).
    pub machine: u16,
}

/// Reads `len` bytes at `offset`; fewer (or none) at the end of the file.
pub type ReadAt<'a> = dyn FnMut(u64, usize) -> Option<Vec<u8>> + 'a;

const MAX_PHDRS: usize = 512;
const MAX_DYN_BYTES: usize = 64 * 1024;
const MAX_STRING: usize = 4096;
const MAX_NEEDED: usize = 256;
const MAX_VERNEED: usize = 256;

const DT_NULL: u64 = 0;
const DT_NEEDED: u64 = 1;
const DT_STRTAB: u64 = 5;
const DT_STRSZ: u64 = 10;
const DT_SONAME: u64 = 14;
const DT_RPATH: u64 = 15;
const DT_RUNPATH: u64 = 29;
const DT_VERNEED: u64 = 0x6fff_fffe;
const DT_VERNEEDNUM: u64 = 0x6fff_ffff;

/// Byte order and word size of one file (shared with [`super::modinfo`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Fmt {
    pub(super) is_64: bool,
    pub(super) le: bool,
}

impl Fmt {
    /// The word size and byte order an ELF header's `e_ident` names (`EI_CLASS`, `EI_DATA`).
    pub(super) fn of(head: &[u8]) -> Fmt {
        Fmt {
            is_64: head.get(4) == Some(&2),
            le: head.get(5) == Some(&1),
        }
    }
    pub(super) fn u16(self, b: &[u8], at: usize) -> Option<u16> {
        let s: [u8; 2] = b.get(at..at + 2)?.try_into().ok()?;
        Some(if self.le {
            u16::from_le_bytes(s)
        } else {
            u16::from_be_bytes(s)
        })
    }
    pub(super) fn u32(self, b: &[u8], at: usize) -> Option<u32> {
        let s: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
        Some(if self.le {
            u32::from_le_bytes(s)
        } else {
            u32::from_be_bytes(s)
        })
    }
    pub(super) fn u64(self, b: &[u8], at: usize) -> Option<u64> {
        let s: [u8; 8] = b.get(at..at + 8)?.try_into().ok()?;
        Some(if self.le {
            u64::from_le_bytes(s)
        } else {
            u64::from_be_bytes(s)
        })
    }
    /// A word: 8 bytes in ELF64, 4 in ELF32.
    pub(super) fn word(self, b: &[u8], at: usize) -> Option<u64> {
        if self.is_64 {
            self.u64(b, at)
        } else {
            self.u32(b, at).map(u64::from)
        }
    }
}

/// One `PT_LOAD` segment: where its virtual addresses live in the file.
struct Load {
    vaddr: u64,
    offset: u64,
    filesz: u64,
}

fn to_offset(loads: &[Load], vaddr: u64) -> Option<u64> {
    loads
        .iter()
        .find(|l| vaddr >= l.vaddr && vaddr - l.vaddr < l.filesz)
        .map(|l| l.offset + (vaddr - l.vaddr))
}

/// Whether the bytes start like an ELF file (cheap test before [`parse`]).
#[must_use]
pub fn is_elf(head: &[u8]) -> bool {
    head.starts_with(b"\x7fELF")
}

/// Parses the dynamic section; `None` for anything that is not a well-formed dynamic ELF object.
pub fn parse(read: &mut ReadAt<'_>) -> Option<Dynamic> {
    let head = read(0, 64)?;
    if !is_elf(&head) {
        return None;
    }
    head.get(5)?;
    let fmt = Fmt::of(&head);
    let machine = fmt.u16(&head, 18)?;
    let Segments { loads, dynamic } = segments(fmt, read, &head)?;
    let (dyn_off, dyn_size) = dynamic?;
    let dyn_size = usize::try_from(dyn_size).ok()?.min(MAX_DYN_BYTES);
    let bytes = read(dyn_off, dyn_size)?;
    let entry = if fmt.is_64 { 16 } else { 8 };
    let half = entry / 2;
    let mut entries = Vec::new();
    let (mut strtab, mut strsz, mut verneed, mut verneednum) = (None, u64::MAX, None, 0u64);
    for i in 0..bytes.len() / entry {
        let tag = fmt.word(&bytes, i * entry)?;
        let val = fmt.word(&bytes, i * entry + half)?;
        match tag {
            DT_NULL => break,
            DT_STRTAB => strtab = Some(val),
            DT_STRSZ => strsz = val,
            DT_VERNEED => verneed = Some(val),
            DT_VERNEEDNUM => verneednum = val,
            DT_NEEDED | DT_SONAME | DT_RPATH | DT_RUNPATH => entries.push((tag, val)),
            _ => {}
        }
    }
    let strtab = to_offset(&loads, strtab?)?;
    let strings = Strings {
        at: strtab,
        size: strsz,
    };
    let mut out = Dynamic {
        is_64: fmt.is_64,
        machine,
        ..Dynamic::default()
    };
    for (tag, val) in entries {
        let Some(s) = strings.get(read, val) else {
            continue;
        };
        match tag {
            DT_NEEDED if out.needed.len() < MAX_NEEDED => out.needed.push(s),
            DT_SONAME => out.soname = Some(s),
            DT_RPATH => out.rpath = Some(s),
            DT_RUNPATH => out.runpath = Some(s),
            _ => {}
        }
    }
    if let Some(at) = verneed.and_then(|v| to_offset(&loads, v)) {
        out.verneed = read_verneed(fmt, read, at, verneednum, strings);
    }
    Some(out)
}

/// The program headers' `PT_LOAD` segments (to turn addresses into file offsets) and the
/// `PT_DYNAMIC` segment's offset and size, read from the table the ELF header points at.
fn segments(fmt: Fmt, read: &mut ReadAt<'_>, head: &[u8]) -> Option<Segments> {
    let (phoff, phentsize, phnum) = if fmt.is_64 {
        (fmt.u64(head, 32)?, fmt.u16(head, 54)?, fmt.u16(head, 56)?)
    } else {
        (
            u64::from(fmt.u32(head, 28)?),
            fmt.u16(head, 42)?,
            fmt.u16(head, 44)?,
        )
    };
    let (phentsize, phnum) = (usize::from(phentsize), usize::from(phnum).min(MAX_PHDRS));
    if phentsize < if fmt.is_64 { 56 } else { 32 } {
        return None;
    }
    let phdrs = read(phoff, phentsize * phnum)?;
    let mut loads = Vec::new();
    let mut dynamic = None;
    for i in 0..phnum {
        let at = i * phentsize;
        let p_type = fmt.u32(&phdrs, at)?;
        let (offset, vaddr, filesz) = if fmt.is_64 {
            (
                fmt.u64(&phdrs, at + 8)?,
                fmt.u64(&phdrs, at + 16)?,
                fmt.u64(&phdrs, at + 32)?,
            )
        } else {
            (
                u64::from(fmt.u32(&phdrs, at + 4)?),
                u64::from(fmt.u32(&phdrs, at + 8)?),
                u64::from(fmt.u32(&phdrs, at + 16)?),
            )
        };
        match p_type {
            1 => loads.push(Load {
                vaddr,
                offset,
                filesz,
            }),
            2 => dynamic = Some((offset, filesz)),
            _ => {}
        }
    }
    Some(Segments { loads, dynamic })
}

/// What [`segments`] finds.
struct Segments {
    loads: Vec<Load>,
    /// `PT_DYNAMIC`'s file offset and size.
    dynamic: Option<(u64, u64)>,
}

/// The dynamic string table: its file offset and size.
#[derive(Clone, Copy)]
struct Strings {
    at: u64,
    size: u64,
}

impl Strings {
    fn get(self, read: &mut ReadAt<'_>, off: u64) -> Option<String> {
        if off >= self.size {
            return None;
        }
        let bytes = read(self.at.checked_add(off)?, MAX_STRING)?;
        let end = bytes.iter().position(|&b| b == 0)?;
        Some(String::from_utf8_lossy(bytes.get(..end)?).into_owned())
    }
}

/// Walks the `Elf_Verneed` list: `vn_cnt` (u16) `vn_file` (u32) `vn_aux` (u32) `vn_next` (u32),
/// each followed through `Elf_Vernaux` entries `vna_name` (u32 at 8) and `vna_next` (u32 at 12).
/// The layout is the same in ELF32 and ELF64.
fn read_verneed(
    fmt: Fmt,
    read: &mut ReadAt<'_>,
    mut at: u64,
    count: u64,
    strings: Strings,
) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for _ in 0..count.min(MAX_VERNEED as u64) {
        let Some(vn) = read(at, 16) else { break };
        let (Some(cnt), Some(file), Some(aux), Some(next)) = (
            fmt.u16(&vn, 2),
            fmt.u32(&vn, 4),
            fmt.u32(&vn, 8),
            fmt.u32(&vn, 12),
        ) else {
            break;
        };
        let mut versions = Vec::new();
        let mut a = at + u64::from(aux);
        for _ in 0..cnt.min(64) {
            let Some(vna) = read(a, 16) else { break };
            let (Some(name), Some(next)) = (fmt.u32(&vna, 8), fmt.u32(&vna, 12)) else {
                break;
            };
            if let Some(n) = strings.get(read, u64::from(name)) {
                versions.push(n);
            }
            if next == 0 {
                break;
            }
            a += u64::from(next);
        }
        if let Some(f) = strings.get(read, u64::from(file)) {
            out.push((f, versions));
        }
        if next == 0 {
            break;
        }
        at += u64::from(next);
    }
    out
}

/// One entry of the section header table: what [`super::dynsym`] finds its tables by (their
/// type) and [`super::modinfo`] its section (its name).
#[derive(Debug, Clone, Copy)]
pub(super) struct SectionHeader {
    /// `sh_name`: the offset of its name in the section-name string table (`e_shstrndx`).
    pub(super) name: u32,
    /// `sh_type` (`SHT_DYNSYM` 11, `SHT_GNU_versym` 0x6fffffff, ...).
    pub(super) kind: u32,
    pub(super) offset: u64,
    pub(super) size: u64,
    /// `sh_link`: the string table of a symbol or version section.
    pub(super) link: u32,
    /// `sh_info`: the entry count of a version section.
    pub(super) info: u32,
}

/// Section headers read at most (a large shared object has a few dozen, a module a few
/// hundred).
const MAX_SECTION_HEADERS: usize = 8192;

/// The section header table the ELF header points at (`e_shoff`, `e_shentsize`, `e_shnum`);
/// `None` when there is none (stripped of it, or cut short). A count kept in section 0
/// (`SHN_XINDEX` style, 65,280 sections or more) is read as no table: shared objects have a few
/// dozen.
pub(super) fn section_headers(
    fmt: Fmt,
    read: &mut ReadAt<'_>,
    head: &[u8],
) -> Option<Vec<SectionHeader>> {
    let (shoff, entsize, count) = if fmt.is_64 {
        (fmt.u64(head, 40)?, fmt.u16(head, 58)?, fmt.u16(head, 60)?)
    } else {
        (
            u64::from(fmt.u32(head, 32)?),
            fmt.u16(head, 46)?,
            fmt.u16(head, 48)?,
        )
    };
    let entsize = usize::from(entsize);
    if shoff == 0 || count == 0 || entsize < if fmt.is_64 { 64 } else { 40 } {
        return None;
    }
    let count = usize::from(count).min(MAX_SECTION_HEADERS);
    let table = read(shoff, count.checked_mul(entsize)?)?;
    if table.len() < count * entsize {
        return None;
    }
    table
        .chunks_exact(entsize)
        .map(|h| {
            Some(if fmt.is_64 {
                SectionHeader {
                    name: fmt.u32(h, 0)?,
                    kind: fmt.u32(h, 4)?,
                    offset: fmt.u64(h, 24)?,
                    size: fmt.u64(h, 32)?,
                    link: fmt.u32(h, 40)?,
                    info: fmt.u32(h, 44)?,
                }
            } else {
                SectionHeader {
                    name: fmt.u32(h, 0)?,
                    kind: fmt.u32(h, 4)?,
                    offset: u64::from(fmt.u32(h, 16)?),
                    size: u64::from(fmt.u32(h, 20)?),
                    link: fmt.u32(h, 24)?,
                    info: fmt.u32(h, 28)?,
                }
            })
        })
        .collect()
}

/// Splits a `DT_RPATH`/`DT_RUNPATH` value into folders, `$ORIGIN`, `$LIB` and `$PLATFORM`
/// substituted as ld.so does (`${ORIGIN}` spelled either way). Empty entries are dropped.
#[must_use]
pub fn expand_search_path(value: &str, origin: &str, lib: &str, platform: &str) -> Vec<String> {
    value
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| {
            d.replace("${ORIGIN}", origin)
                .replace("$ORIGIN", origin)
                .replace("${LIB}", lib)
                .replace("$LIB", lib)
                .replace("${PLATFORM}", platform)
                .replace("$PLATFORM", platform)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(bytes: &[u8]) -> impl FnMut(u64, usize) -> Option<Vec<u8>> + '_ {
        move |off, len| {
            let off = usize::try_from(off).ok()?;
            let end = off.saturating_add(len).min(bytes.len());
            bytes.get(off..end).map(<[u8]>::to_vec)
        }
    }

    #[test]
    fn not_elf_and_truncated_files_are_none() {
        assert_eq!(parse(&mut reader(b"")), None);
        assert_eq!(parse(&mut reader(b"#!/bin/sh\n")), None);
        assert_eq!(parse(&mut reader(b"\x7fELF\x02\x01\x01")), None);
        let mut junk = b"\x7fELF\x02\x01\x01".to_vec();
        junk.resize(200, 0xff);
        assert_eq!(parse(&mut reader(&junk)), None);
    }

    #[test]
    fn origin_lib_and_platform_are_substituted() {
        assert_eq!(
            expand_search_path(
                "$ORIGIN/../../nvidia/cudnn/lib::${ORIGIN}/x:/opt/$LIB/$PLATFORM",
                "/s/torch/lib",
                "lib64",
                "x86_64"
            ),
            [
                "/s/torch/lib/../../nvidia/cudnn/lib",
                "/s/torch/lib/x",
                "/opt/lib64/x86_64"
            ]
        );
    }
}
