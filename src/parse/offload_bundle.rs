//! The GPU targets a HIP program carries: clang's offload bundles in the ELF section
//! `.hip_fatbin` (llama.cpp's and ollama's `libggml-hip.so`). Pure: the caller hands in a reader
//! of byte ranges, and only the section headers, the section-name table and the first bundle's
//! header are read (a few kilobytes of a file that may hold a gigabyte of GPU code).
//!
//! A bundle starts with `__CLANG_OFFLOAD_BUNDLE__`, an entry count, then per entry its offset,
//! size and id ("hipv4-amdgcn-amd-amdhsa--gfx1100", "hip-amdgcn-amd-amdhsa--gfx906:xnack-",
//! "host-x86_64-unknown-linux-gnu-"); every bundle of one build names the same targets.
//!
//! A compressed bundle (`CCOB`, clang's `--offload-compress`) is a header, then one zlib or zstd
//! stream holding such a bundle (clang/lib/Driver/OffloadBundler.cpp, `CompressedOffloadBundle`,
//! llvm/llvm-project @000390203c87; the method numbers are `llvm::compression::Format`'s, zlib 0
//! and zstd 1, llvm/include/llvm/Support/Compression.h), all integers little-endian:
//!
//! | version | after "CCOB", version (u16), method (u16) | header |
//! |---|---|---|
//! | 1 | uncompressed size (u32), truncated MD5 (u64) | 20 bytes |
//! | 2 | total size with the header (u32), uncompressed size (u32), hash (u64) | 24 bytes |
//! | 3 | total size (u64), uncompressed size (u64), hash (u64) | 32 bytes |
//!
//! [`hip_fatbin`] says where that stream lies ([`Ccob`]); the caller decodes its head with
//! bounds (`probe::compressed_module::read_head`) and hands it to [`bundle_targets`]. An
//! unknown version or method leaves the targets unknown, never guessed.

use super::elf::{Fmt, ReadAt};
use crate::version::GfxTarget;

/// What the first offload bundle of a `.hip_fatbin` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HipFatbin {
    /// The gfx targets of its AMD GPU entries (features such as `:xnack-` dropped), sorted.
    Targets(Vec<String>),
    /// A compressed bundle: its targets are read by decoding the stream it points to.
    Compressed(Ccob),
}

/// A compressed offload bundle's header: where its stream lies in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ccob {
    /// The format version (1, 2 or 3).
    pub version: u16,
    /// The stream's compression; `None` for a version or method this parser does not know.
    pub codec: Option<Codec>,
    /// Where the stream starts in the file.
    pub offset: u64,
    /// How long it is at most: the header's total size where it has one (versions 2 and 3),
    /// never past the end of `.hip_fatbin`.
    pub len: u64,
}

/// A compressed bundle's method (`llvm::compression::Format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Zlib,
    Zstd,
}

const MAGIC: &[u8] = b"__CLANG_OFFLOAD_BUNDLE__";
const COMPRESSED_MAGIC: &[u8] = b"CCOB";
const MAX_SECTIONS: usize = 4096;
const MAX_SHSTRTAB: usize = 256 * 1024;
/// How far into the section a bundle may start (alignment padding) and how much of its header
/// is read.
pub const MAX_HEAD: usize = 64 * 1024;
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
    let plain = find(&body, MAGIC);
    let packed = find(&body, COMPRESSED_MAGIC);
    match (plain, packed) {
        (Some(p), Some(c)) if c < p => compressed(&body, c, offset, size),
        (None, Some(c)) => compressed(&body, c, offset, size),
        (Some(p), _) => bundle_targets(body.get(p..)?).map(HipFatbin::Targets),
        (None, None) => None,
    }
}

/// The compressed bundle whose header starts at `at` in `body`, the first bytes of the section
/// that starts at `section` in the file and is `size` bytes long.
fn compressed(body: &[u8], at: usize, section: u64, size: u64) -> Option<HipFatbin> {
    let u16_at = |o: usize| -> Option<u16> {
        let s: [u8; 2] = body.get(at + o..at + o + 2)?.try_into().ok()?;
        Some(u16::from_le_bytes(s))
    };
    let u32_at = |o: usize| -> Option<u64> {
        let s: [u8; 4] = body.get(at + o..at + o + 4)?.try_into().ok()?;
        Some(u64::from(u32::from_le_bytes(s)))
    };
    let u64_at = |o: usize| -> Option<u64> {
        let s: [u8; 8] = body.get(at + o..at + o + 8)?.try_into().ok()?;
        Some(u64::from_le_bytes(s))
    };
    let version = u16_at(4)?;
    let unknown = Ccob {
        version,
        codec: None,
        offset: 0,
        len: 0,
    };
    // The header's length and the total size it gives (header included), by version.
    let (header, total): (u64, Option<u64>) = match version {
        1 => (20, None),
        2 => (24, Some(u32_at(8)?)),
        3 => (32, Some(u64_at(8)?)),
        _ => return Some(HipFatbin::Compressed(unknown)),
    };
    let codec = match u16_at(6)? {
        0 => Codec::Zlib,
        1 => Codec::Zstd,
        _ => return Some(HipFatbin::Compressed(unknown)),
    };
    let start = (at as u64).checked_add(header)?;
    let in_section = size.checked_sub(start)?;
    let len = total
        .and_then(|t| t.checked_sub(header))
        .map_or(in_section, |t| t.min(in_section));
    Some(HipFatbin::Compressed(Ccob {
        version,
        codec: Some(codec),
        offset: section.checked_add(start)?,
        len,
    }))
}

/// The gfx targets an uncompressed bundle at the start of `bytes` names (its entry ids), sorted;
/// `None` when it does not start with the bundle magic. Entries past the end of `bytes` are not
/// read (a head decoded from a compressed bundle may stop there).
#[must_use]
pub fn bundle_targets(bytes: &[u8]) -> Option<Vec<String>> {
    if !bytes.starts_with(MAGIC) {
        return None;
    }
    let body = bytes;
    let le = |at: usize| -> Option<u64> {
        let s: [u8; 8] = body.get(at..at.checked_add(8)?)?.try_into().ok()?;
        Some(u64::from_le_bytes(s))
    };
    let mut at = MAGIC.len();
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
    Some(out.into_iter().map(|t| t.to_string()).collect())
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

/// A minimal ELF64 object whose `.hip_fatbin` holds `fatbin`, for other modules' tests.
#[cfg(test)]
pub(crate) fn test_elf(fatbin: &[u8]) -> Vec<u8> {
    tests::elf_with_fatbin(fatbin)
}

/// An uncompressed bundle header naming `ids`, for other modules' tests.
#[cfg(test)]
pub(crate) fn test_bundle(ids: &[&str]) -> Vec<u8> {
    tests::bundle(ids)
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
    fn a_compressed_bundle_of_an_unknown_version_or_method_has_unknown_targets() {
        let mut packed = b"CCOB".to_vec();
        packed.extend_from_slice(&[4, 0, 1, 0, 0xff, 0xff, 0xff, 0xff]);
        packed.extend_from_slice(&[0u8; 32]);
        let Some(HipFatbin::Compressed(c)) = run(&elf_with_fatbin(&packed)) else {
            panic!("not read as compressed");
        };
        assert_eq!((c.version, c.codec), (4, None));
        packed[4] = 3;
        packed[6] = 2;
        let Some(HipFatbin::Compressed(c)) = run(&elf_with_fatbin(&packed)) else {
            panic!("not read as compressed");
        };
        assert_eq!((c.version, c.codec), (3, None));
    }

    #[test]
    fn a_compressed_headers_stream_lies_within_its_total_size_and_the_section() {
        // Version 2, zstd, total 24 + 10 bytes, followed by more section bytes than that.
        let mut packed = b"CCOB".to_vec();
        packed.extend_from_slice(&2u16.to_le_bytes());
        packed.extend_from_slice(&1u16.to_le_bytes());
        packed.extend_from_slice(&34u32.to_le_bytes());
        packed.extend_from_slice(&1000u32.to_le_bytes());
        packed.extend_from_slice(&0u64.to_le_bytes());
        packed.extend_from_slice(&[0x28; 40]);
        let f = elf_with_fatbin(&packed);
        let Some(HipFatbin::Compressed(c)) = run(&f) else {
            panic!("not read as compressed");
        };
        assert_eq!((c.version, c.codec, c.len), (2, Some(Codec::Zstd), 10));
        let at = usize::try_from(c.offset).unwrap();
        assert_eq!(&f[at - 24..at - 20], b"CCOB");
        // A total size past the section is cut at the section's end; version 1 has none.
        packed[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        let Some(HipFatbin::Compressed(c)) = run(&elf_with_fatbin(&packed)) else {
            panic!("not read as compressed");
        };
        assert_eq!(c.len, 40);
        packed[4] = 1;
        let Some(HipFatbin::Compressed(c)) = run(&elf_with_fatbin(&packed)) else {
            panic!("not read as compressed");
        };
        assert_eq!(c.len, packed.len() as u64 - 20);
    }

    /// The generator's test vectors (`scripts/gen-hip-fatbin-elf.py`): each version's header
    /// points at its stream, which starts with the method's magic.
    #[test]
    fn the_generated_compressed_bundles_headers_are_read() {
        for v in 1..=3u16 {
            for (name, codec, magic) in [
                ("zlib", Codec::Zlib, &b"\x78"[..]),
                ("zstd", Codec::Zstd, &b"\x28\xb5\x2f\xfd"[..]),
            ] {
                let f = std::fs::read(
                    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join(format!("tests/data/hip-fatbin/ccob-v{v}-{name}.so")),
                )
                .unwrap();
                let Some(HipFatbin::Compressed(c)) = run(&f) else {
                    panic!("v{v} {name}: not read as compressed");
                };
                assert_eq!((c.version, c.codec), (v, Some(codec)));
                let at = usize::try_from(c.offset).unwrap();
                assert!(f[at..].starts_with(magic), "v{v} {name}");
                assert!(c.len > 0 && at + usize::try_from(c.len).unwrap() <= f.len());
            }
        }
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
