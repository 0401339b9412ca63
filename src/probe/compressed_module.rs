//! A compressed kernel module (`.ko.zst`, `.ko.xz`, `.ko.gz`) read for its `.modinfo`
//! strings: decompressed as a stream, with hard bounds, and scanned as it goes
//! ([`crate::parse::modinfo_scan`]), so that the flavour, version and vermagic of the module
//! are known on the layouts that compress it: DKMS compresses `nvidia.ko` the way the kernel
//! compresses its own modules (`.ko.zst` on Ubuntu 24.04 and later and on Arch, `.ko.xz` on
//! Fedora, RHEL and Debian), akmods and the kmod packages ship `.ko.xz`, and a kernel built
//! with `CONFIG_MODULE_COMPRESS_GZIP` (Gentoo's choice among three) installs `.ko.gz`.
//!
//! Pure Rust decoders, no C library: `ruzstd` (zstd), `lzma-rust2` (xz), `flate2` on
//! `miniz_oxide` (gzip). The input is any [`Read`] (the probe hands in the file through the
//! host, tests hand in bytes). What can go wrong is a fact, never a hang or a panic:
//!
//! - at most [`MAX_COMPRESSED`] bytes of the file are read (a 10 GB file where the module
//!   belongs costs its first bytes: it does not start with the format's magic);
//! - at most [`MAX_DECOMPRESSED`] bytes are decompressed (a bomb, a few kilobytes that expand
//!   to gigabytes, stops there), and the scan stops as soon as `.modinfo` has been read;
//! - a zstd frame may ask for a window of at most [`MAX_WINDOW`], an xz block for as much
//!   dictionary memory (a header cannot make the decoder allocate gigabytes);
//! - a corrupt or cut-short stream is a decoder error, reported as such.
//!
//! Checksums at the end of a stream are not reached when the scan stops early: what is read is
//! the `.modinfo` strings, which a corrupt stream would not yield in shape.
//!
//! The same bounded decoders read the head of a compressed clang offload bundle (`CCOB`, zstd
//! or zlib) through [`read_head`]: only the first bytes of its output are wanted (the bundle's
//! entry ids), so decoding stops there.

use std::io::{self, Read};

use crate::parse::elf::is_elf;
use crate::parse::modinfo_scan::Scan;

/// Decompressed bytes read at most. A real `nvidia.ko` is tens of megabytes; 512 MiB is five
/// times a 100 MB module, and far below what a bomb expands to.
pub(crate) const MAX_DECOMPRESSED: u64 = 512 << 20;
/// Compressed bytes read at most: 256 MiB (compressed modules are a quarter to a half of their
/// size).
pub(crate) const MAX_COMPRESSED: u64 = 256 << 20;
/// The largest zstd window or xz dictionary accepted: 128 MiB, libzstd's own default limit for
/// decoding (`ZSTD_WINDOWLOG_LIMIT_DEFAULT`, 27) and twice the dictionary of `xz -9`. The
/// kernel compresses modules with far less (`xz --lzma2=dict=1MiB`, `zstd` at its default
/// level: 2 MiB).
pub(crate) const MAX_WINDOW: u64 = 128 << 20;

/// One piece of decompressed output at a time.
const CHUNK: usize = 64 * 1024;

/// The compression of a module file, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Zstd,
    Xz,
    Gzip,
    /// A zlib stream (RFC 1950), as LLVM's `compression::zlib` writes it (a compressed offload
    /// bundle's method 0); no module file is compressed so.
    Zlib,
}

impl Format {
    /// The format a module file's name ends in (`.ko.zst`, `.ko.xz`, `.ko.gz`).
    pub(crate) fn of(path: &str) -> Option<Format> {
        [
            (".ko.zst", Format::Zstd),
            (".ko.xz", Format::Xz),
            (".ko.gz", Format::Gzip),
        ]
        .into_iter()
        .find(|(ext, _)| path.ends_with(ext))
        .map(|(_, f)| f)
    }

    fn name(self) -> &'static str {
        match self {
            Format::Zstd => "zstd",
            Format::Xz => "xz",
            Format::Gzip => "gzip",
            Format::Zlib => "zlib",
        }
    }

    /// The bytes every stream of the format starts with (RFC 8878 frame magic; the xz file
    /// format's stream header; RFC 1952's ID1 ID2; RFC 1950's CMF for DEFLATE with a 32 KiB
    /// window, what zlib's `compress2` writes).
    fn magic(self) -> &'static [u8] {
        match self {
            Format::Zstd => b"\x28\xb5\x2f\xfd",
            Format::Xz => b"\xfd7zXZ\x00",
            Format::Gzip => b"\x1f\x8b",
            Format::Zlib => b"\x78",
        }
    }
}

/// How much may be read and decompressed, and until when.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) compressed: u64,
    pub(crate) decompressed: u64,
    /// The scan's end (`--timeout` and its slack): a big module on a slow disk or a slow
    /// core stops being read then, as every other file read of the scan does.
    pub(crate) until: Option<std::time::Instant>,
}

impl Limits {
    /// The limits a module file is read with.
    pub(crate) const MODULE: Limits = Limits {
        compressed: MAX_COMPRESSED,
        decompressed: MAX_DECOMPRESSED,
        until: None,
    };

    /// These limits, ending at `until` (a scan's end, when there is one).
    pub(crate) fn until(self, until: Option<std::time::Instant>) -> Limits {
        Limits { until, ..self }
    }

    fn out_of_time(self) -> bool {
        self.until
            .is_some_and(|end| std::time::Instant::now() >= end)
    }
}

/// Why a compressed module's `.modinfo` was not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unread {
    Empty,
    BadMagic,
    Corrupt,
    CompressedCap,
    DecompressedCap,
    NotElf,
    NoModinfo,
    OutOfTime,
}

impl Unread {
    /// Words for the report.
    pub(crate) fn describe(self, format: Format, limits: Limits) -> String {
        let name = format.name();
        match self {
            Unread::Empty => "empty file".to_string(),
            Unread::BadMagic => format!("not a {name} stream (no {name} magic)"),
            Unread::Corrupt => format!("corrupt or cut-short {name} stream"),
            Unread::CompressedCap => format!(
                "{name} stream longer than {} MiB, read no further",
                limits.compressed >> 20
            ),
            Unread::DecompressedCap => format!(
                "decompressed {} MiB without finding .modinfo, read no further",
                limits.decompressed >> 20
            ),
            Unread::NotElf => format!("{name} stream does not hold an ELF object"),
            Unread::NoModinfo => "no .modinfo strings (no vermagic=)".to_string(),
            Unread::OutOfTime => {
                format!("the scan's time budget was spent while decompressing the {name} stream")
            }
        }
    }
}

/// The `.modinfo` pairs of the module compressed in `input`.
///
/// # Errors
/// [`Unread`] says what stopped the reading.
pub(crate) fn read_modinfo<R: Read>(
    input: R,
    format: Format,
    limits: Limits,
) -> Result<Vec<(String, String)>, Unread> {
    let mut input = Capped::new(input, limits);
    let head = check_magic(&mut input, format)?;
    let outcome = {
        let source = head.as_slice().chain(&mut input);
        decoder(format, source).and_then(|mut d| scan(&mut *d, limits))
    };
    match outcome {
        Err(_) if input.late => Err(Unread::OutOfTime),
        Err(Unread::Corrupt) if input.hit => Err(Unread::CompressedCap),
        other => other,
    }
}

/// The first `want` bytes (or fewer, where the stream ends sooner) of the stream compressed in
/// `input`, decoded within `limits`: the head of a compressed offload bundle. Output decoded
/// before the stream turned out corrupt or cut short (a cap reached) is returned as it is: the
/// caller reads what it can of it.
///
/// # Errors
/// [`Unread`] says what stopped the reading when nothing was decoded.
pub(crate) fn read_head<R: Read>(
    input: R,
    format: Format,
    limits: Limits,
    want: usize,
) -> Result<Vec<u8>, Unread> {
    let mut input = Capped::new(input, limits);
    let head = check_magic(&mut input, format)?;
    let want = usize::try_from(limits.decompressed).map_or(want, |m| m.min(want));
    let mut out: Vec<u8> = Vec::new();
    let failed = {
        let source = head.as_slice().chain(&mut input);
        let mut d = decoder(format, source)?;
        let mut buf = vec![0u8; CHUNK];
        loop {
            let room = want.saturating_sub(out.len()).min(buf.len());
            if room == 0 {
                break None;
            }
            match d.read(buf.get_mut(..room).unwrap_or_default()) {
                Ok(0) => break None,
                Ok(n) => out.extend_from_slice(buf.get(..n).unwrap_or_default()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break Some(Unread::Corrupt),
            }
        }
    };
    match failed {
        Some(_) if out.is_empty() && input.late => Err(Unread::OutOfTime),
        Some(_) if out.is_empty() && input.hit => Err(Unread::CompressedCap),
        Some(e) if out.is_empty() => Err(e),
        _ => Ok(out),
    }
}

/// Reads the format's magic off the front of `input`: the bytes read, to be chained back
/// before the rest.
fn check_magic<R: Read>(input: &mut Capped<R>, format: Format) -> Result<Vec<u8>, Unread> {
    let magic = format.magic();
    let mut head = vec![0u8; magic.len()];
    let got = read_full(input, &mut head).map_err(|_| {
        if input.late {
            Unread::OutOfTime
        } else {
            Unread::Corrupt
        }
    })?;
    if got == 0 {
        return Err(Unread::Empty);
    }
    if head.get(..got) != Some(magic) {
        return Err(Unread::BadMagic);
    }
    Ok(head)
}

/// The format's bounded decoder over `source`.
fn decoder<'a>(format: Format, source: impl Read + 'a) -> Result<Box<dyn Read + 'a>, Unread> {
    match format {
        Format::Zstd => {
            ruzstd::decoding::StreamingDecoder::new_with_max_window_size(source, MAX_WINDOW)
                .map(|d| Box::new(d) as Box<dyn Read + 'a>)
                .map_err(|_| Unread::Corrupt)
        }
        Format::Xz => Ok(Box::new(lzma_rust2::XzReader::new_mem_limit(
            source,
            true,
            u32::try_from(MAX_WINDOW >> 10).unwrap_or(u32::MAX),
        ))),
        Format::Gzip => Ok(Box::new(flate2::read::MultiGzDecoder::new(source))),
        Format::Zlib => Ok(Box::new(flate2::read::ZlibDecoder::new(source))),
    }
}

/// Reads decompressed output into the scan until `.modinfo` is read, the stream ends, the
/// limits' decompressed bytes have come out, or their time is spent.
fn scan(decoder: &mut dyn Read, limits: Limits) -> Result<Vec<(String, String)>, Unread> {
    let max = limits.decompressed;
    let mut buf = vec![0u8; CHUNK];
    let mut scan = Scan::default();
    let mut head: Vec<u8> = Vec::with_capacity(4);
    let mut total: u64 = 0;
    loop {
        let n = match decoder.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(Unread::Corrupt),
        };
        let chunk = buf.get(..n).unwrap_or_default();
        if head.len() < 4 {
            head.extend(chunk.iter().take(4 - head.len()));
            if head.len() == 4 && !is_elf(&head) {
                return Err(Unread::NotElf);
            }
        }
        scan.feed(chunk);
        if scan.is_done() {
            break;
        }
        total = total.saturating_add(n as u64);
        if total >= max {
            return Err(Unread::DecompressedCap);
        }
        if limits.out_of_time() {
            return Err(Unread::OutOfTime);
        }
    }
    if head.len() < 4 {
        return Err(Unread::NotElf);
    }
    scan.finish().ok_or(Unread::NoModinfo)
}

/// Fills `buf` as far as the input goes; the count read.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while let Some(rest) = buf.get_mut(got..).filter(|r| !r.is_empty()) {
        match input.read(rest) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A reader that ends after `left` bytes or at the limits' time, remembering which: the
/// decoder then sees a stream cut short (or an error), and the caller knows why. Input that
/// decompresses to nothing (a run of empty blocks) is stopped here, not in [`scan`].
struct Capped<R> {
    inner: R,
    left: u64,
    hit: bool,
    limits: Limits,
    late: bool,
}

impl<R> Capped<R> {
    /// `inner`, read up to `limits.compressed` bytes and until the scan's end.
    fn new(inner: R, limits: Limits) -> Self {
        Capped {
            inner,
            left: limits.compressed,
            hit: false,
            limits,
            late: false,
        }
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.limits.out_of_time() {
            self.late = true;
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the scan's time budget is spent",
            ));
        }
        if self.left == 0 {
            self.hit = true;
            return Ok(0);
        }
        let want = usize::try_from(self.left).map_or(buf.len(), |l| l.min(buf.len()));
        let n = self.inner.read(buf.get_mut(..want).unwrap_or_default())?;
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::modinfo;
    use std::io::Write;

    const LIMITS: Limits = Limits::MODULE;

    fn module(license: &str) -> Vec<u8> {
        let info = format!(
            "version=580.95.05\0license={license}\0srcversion=0123456789ABCDEF012345\0\
             alias=pci:v000010DEd*sv*sd*bc03sc00i00*\0depends=\0name=nvidia\0\
             vermagic=6.14.0-37-generic SMP preempt mod_unload modversions \0"
        );
        // A body of mixed bytes before `.modinfo`, as the code of a real module is.
        let text: Vec<u8> = (0..200_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        modinfo::test_object(&[(".text", &text), (".modinfo", info.as_bytes())])
    }

    fn zstd(bytes: &[u8]) -> Vec<u8> {
        ruzstd::encoding::compress_to_vec(bytes, ruzstd::encoding::CompressionLevel::Fastest)
    }

    fn xz(bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut w =
            lzma_rust2::XzWriter::new(&mut out, lzma_rust2::XzOptions::with_preset(3)).unwrap();
        w.write_all(bytes).unwrap();
        w.finish().unwrap();
        out
    }

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut w = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        w.write_all(bytes).unwrap();
        w.finish().unwrap()
    }

    fn zlib(bytes: &[u8]) -> Vec<u8> {
        let mut w = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        w.write_all(bytes).unwrap();
        w.finish().unwrap()
    }

    fn compress(format: Format, bytes: &[u8]) -> Vec<u8> {
        match format {
            Format::Zstd => zstd(bytes),
            Format::Xz => xz(bytes),
            Format::Gzip => gzip(bytes),
            Format::Zlib => zlib(bytes),
        }
    }

    /// A head is what comes first out of the stream, no more than asked, in every format.
    #[test]
    fn read_head_returns_the_first_bytes_and_no_more() {
        let data: Vec<u8> = (0..300_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for format in [Format::Zstd, Format::Xz, Format::Gzip, Format::Zlib] {
            let packed = compress(format, &data);
            let head = read_head(packed.as_slice(), format, LIMITS, 1000).unwrap();
            assert_eq!(head, data[..1000], "{format:?}");
            // A stream shorter than asked comes out whole.
            let short = compress(format, b"__CLANG_OFFLOAD_BUNDLE__");
            let head = read_head(short.as_slice(), format, LIMITS, 65_536).unwrap();
            assert_eq!(head, b"__CLANG_OFFLOAD_BUNDLE__", "{format:?}");
        }
    }

    /// A bomb stops at the decoded cap; a cut stream gives what decoded before the cut; a
    /// stream of another format or nothing at all is an error.
    #[test]
    fn read_head_is_bounded_and_reports_what_stopped_it() {
        let zeros = vec![0u8; 8 << 20];
        let bomb = compress(Format::Zstd, &zeros);
        let capped = Limits {
            decompressed: 4096,
            ..LIMITS
        };
        let head = read_head(bomb.as_slice(), Format::Zstd, capped, usize::MAX).unwrap();
        assert_eq!(head.len(), 4096);
        let data: Vec<u8> = (0..300_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let packed = compress(Format::Zlib, &data);
        let cut = Limits {
            compressed: packed.len() as u64 / 2,
            ..LIMITS
        };
        let head = read_head(packed.as_slice(), Format::Zlib, cut, usize::MAX).unwrap();
        assert!(
            !head.is_empty() && head.len() < data.len(),
            "{} of {}",
            head.len(),
            data.len()
        );
        assert_eq!(head, data[..head.len()]);
        assert_eq!(
            read_head(packed.as_slice(), Format::Zstd, LIMITS, 10),
            Err(Unread::BadMagic)
        );
        assert_eq!(
            read_head(&b""[..], Format::Zlib, LIMITS, 10),
            Err(Unread::Empty)
        );
        let nothing = Limits {
            compressed: 1,
            ..LIMITS
        };
        assert_eq!(
            read_head(packed.as_slice(), Format::Zlib, nothing, 10),
            Err(Unread::CompressedCap)
        );
    }

    const ALL: [Format; 3] = [Format::Zstd, Format::Xz, Format::Gzip];

    #[test]
    fn each_format_yields_licence_version_and_vermagic() {
        for (format, license) in [
            (Format::Zstd, "NVIDIA"),
            (Format::Xz, "Dual MIT/GPL"),
            (Format::Gzip, "NVIDIA"),
        ] {
            let packed = compress(format, &module(license));
            let pairs = read_modinfo(packed.as_slice(), format, LIMITS).unwrap();
            assert_eq!(
                modinfo::value(&pairs, "license"),
                Some(license),
                "{format:?}"
            );
            assert_eq!(
                modinfo::value(&pairs, "version"),
                Some("580.95.05"),
                "{pairs:?}"
            );
            assert_eq!(
                modinfo::value(&pairs, "vermagic"),
                Some("6.14.0-37-generic SMP preempt mod_unload modversions ")
            );
        }
    }

    #[test]
    fn corrupt_and_cut_short_streams_are_reasons() {
        for format in ALL {
            let packed = compress(format, &module("NVIDIA"));
            // Cut in the middle, before `.modinfo` comes out.
            let cut = &packed[..packed.len() / 3];
            assert_eq!(
                read_modinfo(cut, format, LIMITS),
                Err(Unread::Corrupt),
                "{format:?}"
            );
            // The header kept, the rest overwritten.
            let mut bad = packed.clone();
            for b in bad.iter_mut().skip(24) {
                *b = 0xa5;
            }
            let got = read_modinfo(bad.as_slice(), format, LIMITS);
            assert!(
                matches!(
                    got,
                    Err(Unread::Corrupt | Unread::NoModinfo | Unread::NotElf)
                ),
                "{format:?}: {got:?}"
            );
            // Another format's bytes, an empty file, zeros.
            assert_eq!(read_modinfo(&b""[..], format, LIMITS), Err(Unread::Empty));
            assert_eq!(
                read_modinfo(&[0u8; 64][..], format, LIMITS),
                Err(Unread::BadMagic)
            );
            // A stream of something that is not a module.
            let text = compress(format, b"license=NVIDIA\0vermagic=6.8\0");
            assert_eq!(
                read_modinfo(text.as_slice(), format, LIMITS),
                Err(Unread::NotElf)
            );
        }
    }

    /// A zstd frame (RFC 8878): a raw block holding `head`, then `blocks` RLE blocks of 4 bytes
    /// each, each 128 KiB of `byte` out: 32 KiB in, 1 GiB out for 8192 blocks.
    fn zstd_bomb(head: &[u8], blocks: u32, byte: u8) -> Vec<u8> {
        // Magic; frame header descriptor 0 (a window descriptor follows); window 2^17.
        let mut out = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
        let block = |out: &mut Vec<u8>, last: bool, kind: u32, size: u32| {
            let header = u32::from(last) | (kind << 1) | (size << 3);
            out.extend_from_slice(&header.to_le_bytes()[..3]);
        };
        if !head.is_empty() {
            block(&mut out, false, 0, u32::try_from(head.len()).unwrap());
            out.extend_from_slice(head);
        }
        for i in 0..blocks {
            block(&mut out, i + 1 == blocks, 1, 128 * 1024);
            out.push(byte);
        }
        out
    }

    #[test]
    fn a_bomb_stops_at_the_cap() {
        let small = Limits {
            compressed: MAX_COMPRESSED,
            decompressed: 8 << 20,
            until: None,
        };
        // 1 GiB from 32 KiB. Zeros are no ELF object: the first bytes end it.
        let zeros = zstd_bomb(&[], 8192, 0);
        assert!(zeros.len() < 40 * 1024);
        assert_eq!(
            read_modinfo(zeros.as_slice(), Format::Zstd, small),
            Err(Unread::NotElf)
        );
        // An ELF header, then a gigabyte of `A`: stops at the cap, not at the end.
        let head = module("NVIDIA")[..64].to_vec();
        let bomb = zstd_bomb(&head, 8192, b'A');
        assert_eq!(
            read_modinfo(bomb.as_slice(), Format::Zstd, small),
            Err(Unread::DecompressedCap)
        );
        // The other formats, made by their encoders: 4 MiB from a few kilobytes, a 1 MiB cap.
        let tight = Limits {
            compressed: MAX_COMPRESSED,
            decompressed: 1 << 20,
            until: None,
        };
        let mut elf_then_a = head;
        elf_then_a.resize(4 << 20, b'A');
        for format in [Format::Xz, Format::Gzip] {
            let packed = compress(format, &elf_then_a);
            assert!(packed.len() < 64 * 1024, "{format:?}: {}", packed.len());
            assert_eq!(
                read_modinfo(packed.as_slice(), format, tight),
                Err(Unread::DecompressedCap),
                "{format:?}"
            );
        }
        assert_eq!(
            Unread::DecompressedCap.describe(Format::Xz, tight),
            "decompressed 1 MiB without finding .modinfo, read no further"
        );
    }

    #[test]
    fn the_compressed_cap_is_a_reason_of_its_own() {
        let packed = compress(Format::Gzip, &module("NVIDIA"));
        let tight = Limits {
            compressed: 64,
            decompressed: MAX_DECOMPRESSED,
            until: None,
        };
        assert_eq!(
            read_modinfo(packed.as_slice(), Format::Gzip, tight),
            Err(Unread::CompressedCap)
        );
    }

    #[test]
    fn a_window_larger_than_the_limit_is_refused_before_any_allocation() {
        // Frame header: descriptor 0x00 (window descriptor follows), exponent 31 (2 GiB).
        let huge = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 31 << 3, 0x01, 0x00, 0x00];
        assert_eq!(
            read_modinfo(&huge[..], Format::Zstd, LIMITS),
            Err(Unread::Corrupt)
        );
    }

    /// A scan whose time is spent stops decompressing at once, in each format, and says why.
    #[test]
    fn a_spent_time_budget_stops_the_stream() {
        let bytes = module("Dual MIT/GPL");
        for format in [Format::Zstd, Format::Xz, Format::Gzip] {
            let spent = LIMITS.until(Some(std::time::Instant::now()));
            let got = read_modinfo(&compress(format, &bytes)[..], format, spent);
            assert_eq!(got, Err(Unread::OutOfTime), "{format:?}");
            assert!(
                Unread::OutOfTime
                    .describe(format, spent)
                    .contains("time budget")
            );
            // The same stream with time left is read whole.
            let later = LIMITS.until(Some(
                std::time::Instant::now() + std::time::Duration::from_secs(3600),
            ));
            assert!(
                read_modinfo(&compress(format, &bytes)[..], format, later).is_ok(),
                "{format:?}"
            );
        }
    }

    #[test]
    fn the_format_comes_from_the_name() {
        assert_eq!(Format::of("/x/nvidia.ko.zst"), Some(Format::Zstd));
        assert_eq!(Format::of("/x/nvidia-current.ko.xz"), Some(Format::Xz));
        assert_eq!(Format::of("/x/nvidia.ko.gz"), Some(Format::Gzip));
        assert_eq!(Format::of("/x/nvidia.ko"), None);
        assert_eq!(LIMITS.decompressed, 512 << 20);
        assert_eq!(LIMITS.compressed, 256 << 20);
    }
}
