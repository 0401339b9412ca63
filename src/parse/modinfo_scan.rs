//! A kernel module's `.modinfo` strings found in its bytes as they stream past, for a module
//! that can only be read front to back (a `.ko.zst`, `.ko.xz` or `.ko.gz`, decompressed on
//! the fly). Pure: bytes in, `(key, value)` pairs out.
//!
//! Why a scan and not the ELF section reader of [`super::modinfo`]: the section header table
//! that says where `.modinfo` lies is at the END of a module (after `.shstrtab`), so reading it
//! from a stream means holding the whole decompressed module (tens of megabytes for nvidia.ko)
//! or decompressing it twice. The section's contents have a shape of their own instead: a run
//! of NUL-terminated `key=value` strings whose keys are C identifiers (`MODULE_INFO(tag, ...)`
//! in the kernel's `include/linux/module.h`), and modpost writes `vermagic=` into every module's
//! `.modinfo` (the generated `.mod.c`: `MODULE_INFO(vermagic, VERMAGIC_STRING)`). The run that
//! holds `vermagic=` is therefore the section, and the scan stops where that run ends: nothing
//! past `.modinfo` is decompressed.
//!
//! Bounded: one string is kept up to 4 KiB (its last 4 KiB when longer, so that an entry glued
//! to the end of binary bytes before the section is still found), one run up to 256 KiB.

/// The last bytes of one NUL-terminated string kept (a `.modinfo` value is far shorter).
const MAX_TOKEN: usize = 4096;
/// Bytes of one run of entries kept at most (nvidia.ko's `.modinfo` is a few kilobytes).
const MAX_RUN: usize = 256 * 1024;
/// Consecutive empty strings (NUL padding between the input sections the linker joined) a run
/// survives; longer stretches of zeros are not inside `.modinfo`.
const MAX_PADDING: usize = 7;
/// A key is a C identifier of at most this many bytes.
const MAX_KEY: usize = 64;
/// The tags the kernel and its build write into `.modinfo` (`MODULE_*` macros in
/// `include/linux/module.h` and `moduleparam.h`, modpost's generated `.mod.c`; `supported` is
/// SUSE's and Debian's DKMS's). Only used to cut a key out of bytes glued before it.
const TAGS: [&str; 22] = [
    "alias",
    "author",
    "depends",
    "description",
    "file",
    "firmware",
    "import_ns",
    "intree",
    "license",
    "livepatch",
    "name",
    "parm",
    "parmtype",
    "retpoline",
    "scmversion",
    "softdep",
    "srcversion",
    "staging",
    "supported",
    "vermagic",
    "version",
    "weakdep",
];

/// The state of a scan over a module's bytes, fed in pieces of any size.
#[derive(Debug, Default)]
pub struct Scan {
    /// The string being read (its last [`MAX_TOKEN`] bytes).
    token: Vec<u8>,
    /// Bytes were dropped from the front of `token`.
    token_cut: bool,
    /// The entries of the run being read.
    run: Vec<(String, String)>,
    run_bytes: usize,
    run_has_vermagic: bool,
    padding: usize,
    found: Option<Vec<(String, String)>>,
}

impl Scan {
    /// Takes the next bytes of the module.
    pub fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() && self.found.is_none() {
            match bytes.iter().position(|b| *b == 0) {
                Some(i) => {
                    let (head, rest) = bytes.split_at(i);
                    self.push(head);
                    self.end_token();
                    bytes = rest.get(1..).unwrap_or_default();
                }
                None => {
                    self.push(bytes);
                    bytes = &[];
                }
            }
        }
    }

    /// Whether the `.modinfo` run has been read whole: nothing more needs to be fed.
    #[must_use]
    pub fn is_done(&self) -> bool {
        self.found.is_some()
    }

    /// The `.modinfo` pairs (control characters dropped, values cut at 256 characters), once
    /// the stream has ended; `None` when no run held `vermagic=`.
    #[must_use]
    pub fn finish(mut self) -> Option<Vec<(String, String)>> {
        if self.found.is_none() {
            // A string the stream ended inside is not terminated: not an entry.
            self.close_run();
        }
        self.found
    }

    fn push(&mut self, bytes: &[u8]) {
        self.token.extend_from_slice(bytes);
        if self.token.len() > MAX_TOKEN {
            let cut = self.token.len() - MAX_TOKEN;
            self.token.drain(..cut);
            self.token_cut = true;
        }
    }

    fn end_token(&mut self) {
        let token = std::mem::take(&mut self.token);
        let cut = std::mem::take(&mut self.token_cut);
        if token.is_empty() {
            self.padding += 1;
            if self.padding > MAX_PADDING {
                self.close_run();
            }
            return;
        }
        self.padding = 0;
        match entry(&token, cut) {
            Some((key_at, key, value)) => {
                // Binary bytes before the key: the run cannot have gone on through them, so a
                // new one starts here (the first entry of `.modinfo` after another section).
                if key_at > 0 || cut {
                    self.close_run();
                }
                if self.found.is_some() {
                    return;
                }
                self.run_bytes += token.len() - key_at + 1;
                if self.run_bytes > MAX_RUN {
                    self.drop_run();
                    return;
                }
                self.run_has_vermagic |= key == "vermagic";
                self.run.push((key, value));
            }
            None => self.close_run(),
        }
    }

    /// Ends the run being read: it is `.modinfo` when it holds `vermagic=`.
    fn close_run(&mut self) {
        if self.run_has_vermagic && self.found.is_none() {
            self.found = Some(std::mem::take(&mut self.run));
        }
        self.drop_run();
    }

    fn drop_run(&mut self) {
        self.run.clear();
        self.run_bytes = 0;
        self.run_has_vermagic = false;
        self.padding = 0;
    }
}

/// One `key=value` string: where its key starts in `token`, the key and the value (cleaned).
///
/// A whole string (a NUL before it) is split at its first `=`, its key the identifier before
/// it. A string glued to the binary bytes of what precedes `.modinfo` (no identifier start
/// before its `=`, or its front cut off) may hold `=` bytes of that binary and may have taken a
/// letter or two of it into its key ("kversion"): its key is then the first of the kernel's
/// own tags followed by `=`, the longest where two end there (`srcversion`, not `version`).
fn entry(token: &[u8], cut: bool) -> Option<(usize, String, String)> {
    let eq = token.iter().position(|b| *b == b'=')?;
    let (key_at, key, eq) = match identifier_before(token, eq) {
        Some((0, key)) if !cut => (0, key, eq),
        first => glued_tag(token).or(first.map(|(at, key)| (at, key, eq)))?,
    };
    let value = token.get(eq + 1..)?;
    Some((
        key_at,
        String::from_utf8_lossy(key).into_owned(),
        super::modinfo::clean(&String::from_utf8_lossy(value)),
    ))
}

/// The identifier that ends at `eq` (an `=`): where it starts, and its bytes.
fn identifier_before(token: &[u8], eq: usize) -> Option<(usize, &[u8])> {
    let before = token.get(..eq)?;
    let key_at = before
        .iter()
        .rposition(|b| !(b.is_ascii_alphanumeric() || *b == b'_'))
        .map_or(0, |i| i + 1);
    let key = before.get(key_at..)?;
    (!key.is_empty() && key.len() <= MAX_KEY && !key.first().is_some_and(u8::is_ascii_digit))
        .then_some((key_at, key))
}

/// The first `tag=` of [`TAGS`] in a glued string: where the tag starts, the tag, its `=`.
fn glued_tag(token: &[u8]) -> Option<(usize, &'static [u8], usize)> {
    token
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'=')
        .find_map(|(eq, _)| {
            let (_, ident) = identifier_before(token, eq)?;
            let tag = TAGS
                .iter()
                .filter(|t| ident.ends_with(t.as_bytes()))
                .max_by_key(|t| t.len())?;
            Some((eq - tag.len(), tag.as_bytes(), eq))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::modinfo;

    const INFO: &[u8] = b"version=580.159.03\0supported=external\0license=NVIDIA\0\
        alias=pci:v000010DEd*sv*sd*bc03sc02i00*\0depends=\0name=nvidia\0\
        vermagic=6.8.0-31-generic SMP preempt mod_unload modversions \0";

    /// The pairs of `.modinfo` in `bytes`, fed whole.
    fn scan(bytes: &[u8]) -> Option<Vec<(String, String)>> {
        let mut s = Scan::default();
        s.feed(bytes);
        s.finish()
    }

    fn pairs(p: &[(String, String)]) -> Vec<(&str, &str)> {
        p.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    #[test]
    fn the_scan_finds_what_the_section_reader_finds() {
        let obj = modinfo::test_object(&[
            (".text", b"\x90\x90\x3d\x41\x42=\x01"),
            (".rodata", b"format=%s\0\0\xff\xfe"),
            (".modinfo", INFO),
            (".data", b"\x01\x02name=x\0"),
        ]);
        let mut read = |off: u64, len: usize| {
            let off = usize::try_from(off).ok()?;
            obj.get(off..(off + len).min(obj.len())).map(<[u8]>::to_vec)
        };
        let by_section = modinfo::parse(&mut read).unwrap();
        let by_scan = scan(&obj).unwrap();
        assert_eq!(by_scan, by_section);
        assert_eq!(modinfo::value(&by_scan, "license"), Some("NVIDIA"));
    }

    #[test]
    fn any_split_of_the_stream_gives_the_same_pairs() {
        let mut bytes = vec![0x90u8; 9000];
        bytes.extend_from_slice(INFO);
        bytes.extend_from_slice(&[0x13, 0x37, 0x00, 0xff]);
        let whole = scan(&bytes).unwrap();
        assert_eq!(whole.len(), 7);
        for size in [1, 2, 3, 7, 64, 4096, 5000] {
            let mut s = Scan::default();
            for chunk in bytes.chunks(size) {
                s.feed(chunk);
            }
            assert!(s.is_done(), "{size}");
            assert_eq!(s.finish().unwrap(), whole, "{size}");
        }
    }

    #[test]
    fn an_entry_glued_to_binary_bytes_or_padded_still_counts() {
        let mut bytes =
            b"\x7fELF\x02\x01\xc3=\x0fkversion=580.1\0license=Dual MIT/GPL\0\0\0\0".to_vec();
        bytes.extend_from_slice(b"vermagic=6.14.0 SMP\0");
        let found = scan(&bytes).unwrap();
        assert_eq!(
            pairs(&found),
            [
                ("version", "580.1"),
                ("license", "Dual MIT/GPL"),
                ("vermagic", "6.14.0 SMP")
            ]
        );
    }

    #[test]
    fn no_vermagic_no_modinfo_and_nothing_unbounded() {
        assert_eq!(scan(b"license=NVIDIA\0version=1\0"), None);
        assert_eq!(scan(b""), None);
        // Cut inside the last string: the unterminated one does not count.
        assert_eq!(scan(b"license=NVIDIA\0vermagic=6.8"), None);
        // Zeros between two runs end the first.
        let mut far = b"license=NVIDIA\0".to_vec();
        far.extend_from_slice(&[0; 64]);
        far.extend_from_slice(b"vermagic=6.8\0");
        assert_eq!(pairs(&scan(&far).unwrap()), [("vermagic", "6.8")]);
        // A huge string with no NUL keeps only its tail.
        let mut s = Scan::default();
        for _ in 0..1000 {
            s.feed(&[b'a'; 1024]);
        }
        assert!(s.token.len() <= MAX_TOKEN);
        // Control characters are dropped from values.
        let v = scan(b"license=NV\x1b[31mIDIA\0vermagic=x\0").unwrap();
        assert_eq!(modinfo::value(&v, "license"), Some("NV[31mIDIA"));
    }
}
