//! A kernel module's `.modinfo` section: the `key=value` strings `modinfo` prints (`license`,
//! `version`, `alias`, ...). Pure: the caller hands in a reader of byte ranges, as for
//! [`super::elf::parse`], so a 100 MB `nvidia.ko` costs the ELF header, its section header table
//! and two small sections.
//!
//! A module is a relocatable object (`ET_REL`): it has no program headers, so the section is
//! found the way `modinfo` finds it, by name through the section-name string table. Every count
//! and size is bounded; a section that runs past the end of the file yields what is there.

use super::elf::{Fmt, ReadAt, is_elf, section_headers};

/// Bytes of the section-name table read at most.
const MAX_SHSTRTAB: usize = 256 * 1024;
/// Bytes of `.modinfo` read at most (nvidia.ko's is a few kilobytes).
const MAX_MODINFO: usize = 256 * 1024;
/// One value's length at most; longer ones are cut.
const MAX_VALUE: usize = 256;

/// Why a module's `.modinfo` could not be read; each is a fact about the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unread {
    /// The file does not start with the ELF magic (or is shorter than a header).
    NotElf,
    /// The section header table is missing, empty or cut short.
    NoSections,
    /// No section is named `.modinfo`.
    NoModinfo,
}

impl Unread {
    /// Words for a report: what was wrong with the file.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotElf => "not an ELF object",
            Self::NoSections => "no readable section header table",
            Self::NoModinfo => "no .modinfo section",
        }
    }
}

/// The `.modinfo` strings as `(key, value)` pairs, in file order; control characters dropped
/// and values cut at 256 characters.
///
/// # Errors
/// [`Unread`] when the file is not an ELF object, its section table cannot be read, or it has
/// no `.modinfo` section.
pub fn parse(read: &mut ReadAt<'_>) -> Result<Vec<(String, String)>, Unread> {
    let head = read(0, 64).ok_or(Unread::NotElf)?;
    if !is_elf(&head) || head.len() < 52 {
        return Err(Unread::NotElf);
    }
    let fmt = Fmt::of(&head);
    let sections = section_headers(fmt, read, &head).ok_or(Unread::NoSections)?;
    let strndx = if fmt.is_64 {
        fmt.u16(&head, 62)
    } else {
        fmt.u16(&head, 50)
    };
    let names = strndx
        .and_then(|i| sections.get(usize::from(i)))
        .and_then(|s| read(s.offset, bounded(s.size, MAX_SHSTRTAB)))
        .ok_or(Unread::NoSections)?;
    let modinfo = sections
        .iter()
        .find(|s| name_at(&names, s.name) == Some(b".modinfo".as_slice()))
        .ok_or(Unread::NoModinfo)?;
    let bytes = if modinfo.size == 0 {
        Vec::new()
    } else {
        read(modinfo.offset, bounded(modinfo.size, MAX_MODINFO)).unwrap_or_default()
    };
    Ok(bytes
        .split(|b| *b == 0)
        .filter_map(|entry| {
            let text = String::from_utf8_lossy(entry);
            let (key, value) = text.split_once('=')?;
            Some((clean(key), clean(value)))
        })
        .collect())
}

/// A key or value as the report keeps it: control characters dropped, cut at 256 characters.
pub(crate) fn clean(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control())
        .take(MAX_VALUE)
        .collect()
}

/// The first value of `key` among `pairs`.
#[must_use]
pub fn value<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn bounded(size: u64, max: usize) -> usize {
    usize::try_from(size).map_or(max, |s| s.min(max))
}

/// The NUL-terminated name at `at` in the section-name table.
fn name_at(names: &[u8], at: u32) -> Option<&[u8]> {
    let rest = names.get(usize::try_from(at).ok()?..)?;
    let end = rest.iter().position(|b| *b == 0)?;
    rest.get(..end)
}

/// A minimal relocatable ELF64 little-endian object with the given sections (name, bytes),
/// laid out as: header, section data, section-name table, section header table. The same
/// layout `scripts/gen-module-elf.py` writes for fixture modules.
#[cfg(test)]
pub(crate) fn test_object(sections: &[(&str, &[u8])]) -> Vec<u8> {
    let mut names = vec![0u8];
    let mut data = Vec::new();
    let mut headers: Vec<(u32, u64, u64)> = vec![(0, 0, 0)];
    for (name, bytes) in sections {
        let name_off = u32::try_from(names.len()).unwrap();
        names.extend_from_slice(name.as_bytes());
        names.push(0);
        headers.push((name_off, 64 + data.len() as u64, bytes.len() as u64));
        data.extend_from_slice(bytes);
    }
    let shstr_name = u32::try_from(names.len()).unwrap();
    names.extend_from_slice(b".shstrtab\0");
    headers.push((shstr_name, 64 + data.len() as u64, names.len() as u64));
    data.extend_from_slice(&names);
    let shoff = 64 + data.len() as u64;
    let mut out = Vec::new();
    out.extend_from_slice(b"\x7fELF\x02\x01\x01\0");
    out.extend_from_slice(&[0; 8]);
    out.extend_from_slice(&1u16.to_le_bytes()); // ET_REL
    out.extend_from_slice(&62u16.to_le_bytes()); // x86-64
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&[0; 16]); // entry, phoff
    out.extend_from_slice(&shoff.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // flags
    out.extend_from_slice(&64u16.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // phentsize, phnum
    out.extend_from_slice(&64u16.to_le_bytes());
    out.extend_from_slice(&u16::try_from(headers.len()).unwrap().to_le_bytes());
    out.extend_from_slice(&u16::try_from(headers.len() - 1).unwrap().to_le_bytes());
    out.extend_from_slice(&data);
    for (i, (name, offset, size)) in headers.iter().enumerate() {
        out.extend_from_slice(&name.to_le_bytes());
        out.extend_from_slice(&u32::from(i > 0).to_le_bytes()); // SHT_PROGBITS
        out.extend_from_slice(&[0; 16]); // flags, addr
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&[0; 24]); // link, info, align, entsize
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_from(bytes: &[u8]) -> impl FnMut(u64, usize) -> Option<Vec<u8>> + '_ {
        move |off, len| {
            let off = usize::try_from(off).ok()?;
            (off < bytes.len()).then(|| bytes[off..(off + len).min(bytes.len())].to_vec())
        }
    }

    #[test]
    fn licence_and_version_are_read_from_the_modinfo_section() {
        let obj = test_object(&[
            (".text", b"\x90\x90"),
            (
                ".modinfo",
                b"version=580.159.03\0license=NVIDIA\0alias=pci:v000010DEd*sv*sd*bc03sc02i00*\0",
            ),
        ]);
        let pairs = parse(&mut read_from(&obj)).unwrap();
        assert_eq!(value(&pairs, "license"), Some("NVIDIA"));
        assert_eq!(value(&pairs, "version"), Some("580.159.03"));
        assert_eq!(pairs.len(), 3);
    }

    #[test]
    fn what_is_not_a_module_is_a_reason_not_a_panic() {
        assert_eq!(parse(&mut read_from(b"")), Err(Unread::NotElf));
        assert_eq!(
            parse(&mut read_from(b"license=NVIDIA\0")),
            Err(Unread::NotElf)
        );
        let obj = test_object(&[(".text", b"\x90")]);
        assert_eq!(parse(&mut read_from(&obj)), Err(Unread::NoModinfo));
        // Cut inside the section header table.
        let cut = &obj[..obj.len() - 70];
        assert!(parse(&mut read_from(cut)).is_err());
        // A header that points its table far past the end.
        let mut far = obj.clone();
        far[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(parse(&mut read_from(&far)), Err(Unread::NoSections));
    }

    #[test]
    fn control_characters_in_values_are_dropped() {
        let obj = test_object(&[(".modinfo", b"license=Dual\x1b[31m MIT/GPL\0")]);
        let pairs = parse(&mut read_from(&obj)).unwrap();
        assert_eq!(value(&pairs, "license"), Some("Dual[31m MIT/GPL"));
    }
}
