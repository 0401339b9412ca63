//! The GPU architectures of the CUDA code inside a shared object: its `.nv_fatbin` section, one
//! fatbin container per compilation unit, each entry a SASS image (kind 2, runs on GPUs of its
//! compute capability's major with an equal or higher minor) or PTX (kind 1, which the driver
//! compiles for its own GPU or any newer one). A package whose containers carry neither for a
//! GPU fails on it with "no kernel image is available for execution on the device".
//!
//! The layout, as `scripts/gen-extension-arch.py` reads it from the packages' wheels: a
//! container is a 16-byte header (magic `0xBA55ED50`, version u16, header size u16, payload
//! size u64) followed by entries, each a header (kind u16, u16, header size u32, payload size
//! u64, ..., the architecture as a u32 at offset 28: 80 for sm_80) and its payload (compressed
//! or not: only headers are read). Pure: the caller hands in a reader of byte ranges, and every
//! count is bounded: a 400 MB flash-attn module costs its section table and a few thousand
//! small reads.

use super::elf::{Fmt, ReadAt, is_elf, section_headers};

/// Containers followed at most.
const MAX_CONTAINERS: usize = 1 << 16;
/// Entries read at most (all containers together).
const MAX_ENTRIES: usize = 1 << 18;
/// Reads made at most (padding between containers is stepped over 8 bytes at a time).
const MAX_READS: usize = 1 << 19;
/// Section-name bytes read at most.
const MAX_SHSTRTAB: usize = 1 << 16;
const MAGIC: u32 = 0xBA55_ED50;

/// The architectures a shared object's fatbin carries, as numbers (`80` for sm_80, `120`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fatbin {
    /// Architectures with a SASS image, sorted.
    pub sass: Vec<u32>,
    /// Architectures with PTX, sorted.
    pub ptx: Vec<u32>,
    /// Whether a bound stopped the walk before the section's end (the lists may be partial).
    pub capped: bool,
}

/// The fatbin of an ELF object; `None` when it is not an ELF object, has no section table or
/// no `.nv_fatbin` section (no CUDA code, or only code loaded at run time).
pub fn parse(read: &mut ReadAt<'_>) -> Option<Fatbin> {
    let head = read(0, 64)?;
    if !is_elf(&head) || head.len() < 52 {
        return None;
    }
    let fmt = Fmt {
        is_64: head.get(4) == Some(&2),
        le: head.get(5) == Some(&1),
    };
    let sections = section_headers(fmt, read, &head)?;
    let shstrndx = usize::from(fmt.u16(&head, if fmt.is_64 { 62 } else { 50 })?);
    let names = sections.get(shstrndx)?;
    let len = usize::try_from(names.size).ok()?.min(MAX_SHSTRTAB);
    let strings = read(names.offset, len)?;
    let named = |at: u32| -> Option<&[u8]> {
        let rest = strings.get(usize::try_from(at).ok()?..)?;
        rest.get(..rest.iter().position(|&b| b == 0)?)
    };
    let section = sections
        .iter()
        .find(|s| named(s.name) == Some(b".nv_fatbin".as_slice()))?;
    Some(walk(read, section.offset, section.size))
}

fn le_u16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn le_u32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn le_u64(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The containers of a `.nv_fatbin` section at `offset`, `size` bytes long.
fn walk(read: &mut ReadAt<'_>, offset: u64, size: u64) -> Fatbin {
    let mut out = Fatbin::default();
    let end = offset.saturating_add(size);
    let (mut p, mut reads, mut containers, mut entries) = (offset, 0usize, 0usize, 0usize);
    'containers: while p.saturating_add(16) <= end {
        reads += 1;
        if reads > MAX_READS || containers >= MAX_CONTAINERS {
            out.capped = true;
            break;
        }
        let Some(h) = read(p, 16).filter(|h| h.len() == 16) else {
            break;
        };
        if le_u32(&h, 0) != Some(MAGIC) {
            p += 8;
            continue;
        }
        containers += 1;
        let (Some(hsize), Some(fsize)) = (le_u16(&h, 6), le_u64(&h, 8)) else {
            break;
        };
        let mut q = p.saturating_add(u64::from(hsize));
        let cend = q.saturating_add(fsize).min(end);
        while q.saturating_add(32) <= cend {
            reads += 1;
            entries += 1;
            if reads > MAX_READS || entries > MAX_ENTRIES {
                out.capped = true;
                break 'containers;
            }
            let Some(e) = read(q, 32).filter(|e| e.len() == 32) else {
                break 'containers;
            };
            let (Some(kind), Some(ehsize), Some(psize), Some(arch)) =
                (le_u16(&e, 0), le_u32(&e, 4), le_u64(&e, 8), le_u32(&e, 28))
            else {
                break 'containers;
            };
            match kind {
                1 => out.ptx.push(arch),
                2 => out.sass.push(arch),
                _ => {}
            }
            let step = u64::from(ehsize).saturating_add(psize);
            if step == 0 {
                break 'containers;
            }
            q = q.saturating_add(step);
        }
        // The next container starts where this one's payload ends.
        p = p
            .saturating_add(u64::from(hsize))
            .saturating_add(fsize)
            .max(p.saturating_add(16));
    }
    for v in [&mut out.sass, &mut out.ptx] {
        v.sort_unstable();
        v.dedup();
    }
    out
}

/// Whether code of these architectures runs on a GPU of compute capability `major.minor`: a
/// SASS image of the same major and an equal or lower minor, or PTX of an equal or lower
/// architecture (compiled by the driver). Architecture-specific images (sm_90a) count as their
/// number, so a doubt leans to "runs".
#[must_use]
pub fn runs_on(sass: &[u32], ptx: &[u32], major: u32, minor: u32) -> bool {
    let gpu = major * 10 + minor;
    sass.iter().any(|a| a / 10 == major && a % 10 <= minor) || ptx.iter().any(|a| *a <= gpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A container of the given (kind, arch) entries, each with an 8-byte payload.
    fn container(entries: &[(u16, u32)]) -> Vec<u8> {
        let mut body = Vec::new();
        for (kind, arch) in entries {
            let mut e = vec![0u8; 64];
            e[0..2].copy_from_slice(&kind.to_le_bytes());
            e[4..8].copy_from_slice(&64u32.to_le_bytes());
            e[8..16].copy_from_slice(&8u64.to_le_bytes());
            e[28..32].copy_from_slice(&arch.to_le_bytes());
            body.extend_from_slice(&e);
            body.extend_from_slice(&[0xAB; 8]);
        }
        let mut c = Vec::new();
        c.extend_from_slice(&MAGIC.to_le_bytes());
        c.extend_from_slice(&1u16.to_le_bytes());
        c.extend_from_slice(&16u16.to_le_bytes());
        c.extend_from_slice(&(body.len() as u64).to_le_bytes());
        c.extend_from_slice(&body);
        c
    }

    fn reader(bytes: &[u8]) -> impl FnMut(u64, usize) -> Option<Vec<u8>> + '_ {
        move |off, len| {
            let off = usize::try_from(off).ok()?;
            (off < bytes.len()).then(|| bytes[off..(off + len).min(bytes.len())].to_vec())
        }
    }

    #[test]
    fn containers_give_their_sass_and_ptx_architectures() {
        let mut section = container(&[(2, 80), (2, 90)]);
        section.extend_from_slice(&[0; 8]); // padding between containers
        section.extend(container(&[(2, 80), (1, 90)]));
        let mut read = reader(&section);
        let f = walk(&mut read, 0, section.len() as u64);
        assert_eq!(f.sass, [80, 90]);
        assert_eq!(f.ptx, [90]);
        assert!(!f.capped);
    }

    #[test]
    fn what_runs_where() {
        // flash-attn 2's sm_80 and sm_90 SASS without PTX: Ampere and Ada run it (8.6, 8.9
        // on sm_80's image), a Blackwell RTX 5090 (12.0) does not, nor a Turing T4 (7.5).
        assert!(runs_on(&[80, 90], &[], 8, 9));
        assert!(!runs_on(&[80, 90], &[], 12, 0));
        assert!(!runs_on(&[80, 90], &[], 7, 5));
        // PTX of 9.0 is compiled for 12.0.
        assert!(runs_on(&[80], &[90], 12, 0));
        assert!(!runs_on(&[], &[90], 8, 9));
    }

    #[test]
    fn hostile_sections_end_the_walk() {
        // A container whose entries claim a zero step, one that runs past the section, and
        // bytes that are no container: each ends without a loop or a panic.
        let mut zero = container(&[(2, 80)]);
        zero[16 + 4..16 + 8].copy_from_slice(&0u32.to_le_bytes());
        zero[16 + 8..16 + 16].copy_from_slice(&0u64.to_le_bytes());
        let mut read = reader(&zero);
        assert_eq!(walk(&mut read, 0, zero.len() as u64).sass, [80]);
        let mut long = container(&[(2, 75)]);
        long[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        let mut read = reader(&long);
        assert_eq!(walk(&mut read, 0, u64::MAX).sass, [75]);
        let junk = vec![0x5a; 4096];
        let mut read = reader(&junk);
        assert_eq!(walk(&mut read, 0, junk.len() as u64), Fatbin::default());
        // A section far larger than the reads allowed is capped, not walked to its end.
        let mut read = |_: u64, len: usize| Some(vec![0u8; len]);
        assert!(walk(&mut read, 0, u64::MAX).capped);
    }
}
