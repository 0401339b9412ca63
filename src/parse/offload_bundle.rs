//! The GPU targets a HIP program carries: clang's offload bundles in the ELF section
//! `.hip_fatbin` (llama.cpp's and ollama's `libggml-hip.so`). Pure: the caller hands in a reader
//! of byte ranges, and only the section headers, the section-name table and the first bundle's
//! header are read (a few kilobytes of a file that may hold a gigabyte of GPU code).
//!
//! A bundle starts with `__CLANG_OFFLOAD_BUNDLE__`, an entry count, then per entry its offset,
//! size and id ("hipv4-amdgcn-amd-amdhsa--gfx1100", "hip-amdgcn-amd-amdhsa--gfx906:xnack-",
//! "host-x86_64-unknown-linux-gnu-"); every bundle of one build names the same targets. A
//! compressed bundle (`CCOB`, clang's `--offload-compress`) hides its ids until decompressed:
//! then the targets are unknown, never guessed.

use super::elf::{Fmt, ReadAt};
use crate::version::GfxTarget;

/// What the first offload bundle of a `.hip_fatbin` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HipFatbin {
    /// The gfx targets of its AMD GPU entries (features such as `:xnack-` dropped), sorted.
    Targets(Vec<String>),
    /// A compressed bundle: its targets cannot be read without decompressing it.
    Compressed,
}

const MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
const COMPRESSED_MAGIC: &[u8] = b"CCOB";
const MAX_SECTIONS: usize = 4096;
const MAX_SHSTRTAB: usize = 256 * 1024;
/// How far into the section a bundle may start (alignment padding) and how much of its header
/// is read.
const MAX_HEAD: usize = 64 * 1024;
const MAX_ENTRIES: u64 = 256;
const MAX_ID: u64 = 256;
const SECTION: &[u8] = b".hip_fatbin";

/// The targets of the object's `.hip_fatbin`; `None` when the file is not a 64-bit
/// little-endian ELF object, has no such section or no bundle where it should be.
pub fn hip_fatbin(read: &mut ReadAt<'_>) -> Option<HipFatbin> {
    let head = read(0, 64)?;
    if !super::elf::is_elf(&head) || head.get(4) != Some(&2) || head.get(5) != Some(&1) {
        return None;
    }
    let fmt = Fmt {
        is_64: true,
        le: true,
    };
    let shoff = fmt.u64(&head, 0x28)?;
    let shentsize = usize::from(fmt.u16(&head, 0x3a)?);
    let shnum = usize::from(fmt.u16(&head, 0x3c)?);
    let shstrndx = usize::from(fmt.u16(&head, 0x3e)?);
    if shoff == 0 || shentsize < 64 || shnum == 0 || shnum > MAX_SECTIONS || shstrndx >= shnum {
        return None;
    }
    let table = read(shoff, shentsize.checked_mul(shnum)?)?;
    let section = |i: usize| -> Option<(u32, u64, u64)> {
        let at = i.checked_mul(shentsize)?;
        Some((
            fmt.u32(&table, at)?,
            fmt.u64(&table, at + 24)?,
            fmt.u64(&table, at + 32)?,
        ))
    };
    let (_, str_off, str_size) = section(shstrndx)?;
    let names = read(str_off, usize::try_from(str_size).ok()?.min(MAX_SHSTRTAB))?;
    let (offset, size) = (0..shnum)
        .filter_map(section)
        .find_map(|(name, off, size)| {
            let start = usize::try_from(name).ok()?;
            let rest = names.get(start..)?;
            let end = rest.iter().position(|&b| b == 0)?;
            (rest.get(..end)? == SECTION).then_some((off, size))
        })?;
    let body = read(offset, usize::try_from(size).ok()?.min(MAX_HEAD))?;
    parse_bundle(&body)
}

/// The first bundle in `body` (the start of `.hip_fatbin`, padding allowed before it).
fn parse_bundle(body: &[u8]) -> Option<HipFatbin> {
    let plain = find(body, MAGIC);
    let packed = find(body, COMPRESSED_MAGIC);
    match (plain, packed) {
        (Some(p), Some(c)) if c < p => return Some(HipFatbin::Compressed),
        (None, Some(_)) => return Some(HipFatbin::Compressed),
        (None, None) => return None,
        _ => {}
    }
    let start = plain?;
    let le = |at: usize| -> Option<u64> {
        let s: [u8; 8] = body.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(u64::from_le_bytes(s))
    };
    let mut at = start + MAGIC.len();
    let count = le(at)?.min(MAX_ENTRIES);
    at += 8;
    let mut out: Vec<GfxTarget> = Vec::new();
    for _ in 0..count {
        let id_len = le(at.checked_add(16)?)?;
        if id_len > MAX_ID {
            break;
        }
        let id_start = at.checked_add(24)?;
        let id_end = id_start.checked_add(usize::try_from(id_len).ok()?)?;
        let Some(id) = body.get(id_start..id_end) else {
            break;
        };
        if let Some(t) = target_of(id) {
            out.push(t);
        }
        at = id_end;
    }
    out.sort();
    out.dedup();
    Some(HipFatbin::Targets(
        out.into_iter().map(|t| t.to_string()).collect(),
    ))
}

/// The gfx target of an entry id for an AMD GPU ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-").
fn target_of(id: &[u8]) -> Option<GfxTarget> {
    let id = std::str::from_utf8(id).ok()?;
    let (_, rest) = id.split_once("amdgcn-amd-amdhsa-")?;
    let name = rest.trim_start_matches('-');
    GfxTarget::parse(name.split(':').next()?)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 object with a `.shstrtab` and a `.hip_fatbin` holding `fatbin`.
    pub(crate) fn elf_with_fatbin(fatbin: &[u8]) -> Vec<u8> {
        let names = b"\0.shstrtab\0.hip_fatbin\0";
        let mut f = vec![0u8; 64];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[6] = 1;
        let names_off = f.len() as u64;
        f.extend_from_slice(names);
        while !f.len().is_multiple_of(8) {
            f.push(0);
        }
        let fat_off = f.len() as u64;
        f.extend_from_slice(fatbin);
        while !f.len().is_multiple_of(8) {
            f.push(0);
        }
        let shoff = f.len() as u64;
        let sh = |name: u32, off: u64, size: u64| {
            let mut e = vec![0u8; 64];
            e[..4].copy_from_slice(&name.to_le_bytes());
            e[24..32].copy_from_slice(&off.to_le_bytes());
            e[32..40].copy_from_slice(&size.to_le_bytes());
            e
        };
        let table = [
            sh(0, 0, 0),
            sh(1, names_off, names.len() as u64),
            sh(11, fat_off, fatbin.len() as u64),
        ]
        .concat();
        f.extend_from_slice(&table);
        f[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
        f[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        f[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        f[0x3e..0x40].copy_from_slice(&1u16.to_le_bytes());
        f
    }

    pub(crate) fn bundle(ids: &[&str]) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&(ids.len() as u64).to_le_bytes());
        for id in ids {
            b.extend_from_slice(&0u64.to_le_bytes());
            b.extend_from_slice(&0u64.to_le_bytes());
            b.extend_from_slice(&(id.len() as u64).to_le_bytes());
            b.extend_from_slice(id.as_bytes());
        }
        b
    }

    fn run(file: &[u8]) -> Option<HipFatbin> {
        let mut read = |off: u64, len: usize| -> Option<Vec<u8>> {
            let off = usize::try_from(off).ok()?;
            let end = off.checked_add(len)?.min(file.len());
            file.get(off..end).map(<[u8]>::to_vec)
        };
        hip_fatbin(&mut read)
    }

    #[test]
    fn the_bundle_entry_ids_give_the_targets() {
        let f = elf_with_fatbin(&bundle(&[
            "host-x86_64-unknown-linux-gnu-",
            "hipv4-amdgcn-amd-amdhsa--gfx1151",
            "hipv4-amdgcn-amd-amdhsa--gfx1100",
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack-",
            "hip-amdgcn-amd-amdhsa--gfx90a:xnack+",
        ]));
        assert_eq!(
            run(&f),
            Some(HipFatbin::Targets(vec![
                "gfx90a".into(),
                "gfx1100".into(),
                "gfx1151".into()
            ]))
        );
    }

    #[test]
    fn a_compressed_bundle_has_unknown_targets() {
        let mut packed = b"CCOB".to_vec();
        packed.extend_from_slice(&[3, 0, 1, 0, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(run(&elf_with_fatbin(&packed)), Some(HipFatbin::Compressed));
    }

    #[test]
    fn hostile_headers_give_nothing_or_what_is_there() {
        // Not ELF, a truncated header, a section table past the end, no .hip_fatbin.
        assert_eq!(run(b"not an elf"), None);
        assert_eq!(run(b"\x7fELF\x02\x01"), None);
        let mut f = elf_with_fatbin(&bundle(&["hipv4-amdgcn-amd-amdhsa--gfx1100"]));
        let n = f.len();
        f[0x28..0x30].copy_from_slice(&(u64::MAX - 8).to_le_bytes());
        assert_eq!(run(&f), None);
        let mut g = elf_with_fatbin(b"no bundle here");
        assert_eq!(run(&g), None);
        // An entry count of 2^64-1 and an id length past the end stop at what is there.
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&[0u8; 16]);
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(run(&elf_with_fatbin(&b)), Some(HipFatbin::Targets(vec![])));
        // A section count over the cap, and a name offset past the name table.
        g[0x3c..0x3e].copy_from_slice(&u16::MAX.to_le_bytes());
        assert_eq!(run(&g), None);
        let _ = n;
    }
}
