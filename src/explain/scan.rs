//! Finding every signature of the table in a text in one pass: each pattern's anchor (its
//! longest literal run, four bytes or more) is indexed by its first four bytes, ASCII case
//! folded; the text is walked once, a two-byte bitmap turning most positions away, and only
//! where an anchor's first bytes occur is that anchor compared and its pattern matched around
//! it ([`Pattern::match_at`]). A 10 MB log costs one walk plus the work at real candidates
//! (BENCHMARKS.md, "explain").

use std::collections::HashMap;

use crate::manifest::captured_number;
use crate::manifest::pattern::{Found, Pattern};
use crate::manifest::{ErrorTable, KnownError};

/// What a pattern stands for.
#[derive(Debug, Clone, Copy)]
enum Target {
    Row(usize),
    /// A form of a CUDA error number: the captured number picks the row.
    Code,
    /// A form of an Xid line: the captured number picks the row.
    Xid,
}

/// The table's patterns, parsed and indexed for one search.
pub(crate) struct Index<'t> {
    table: &'t ErrorTable,
    entries: Vec<(Pattern, Target)>,
    /// Anchor grams to the entries whose anchor starts with them.
    grams: HashMap<u32, Vec<usize>>,
    /// A Bloom filter of the grams: [`BLOOM_BITS`] bits, so most positions of a text cost one
    /// shift, one multiply and one bit test.
    bloom: Vec<u64>,
    codes: HashMap<u32, usize>,
    xids: HashMap<u32, usize>,
}

/// Each row's hits beyond this are counted, not kept.
/// How often (in bytes of text) the search looks at the clock.
const CLOCK_EVERY: usize = 64 * 1024;

const KEPT_PER_ROW: usize = 256;

/// Where one row matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    pub row: usize,
    /// The pattern (index into the index's entries) that matched.
    pub entry: usize,
    pub found: Found,
}

/// A row's hits in a text: the first one, and how many there were.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowHits {
    pub row: usize,
    pub first: Found,
    pub count: u32,
}

/// ASCII case folded by table: one load per byte in the scan's loop.
const FOLD: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u8).to_ascii_lowercase();
        i += 1;
    }
    t
};

/// log2 of the Bloom filter's size in bits (2^20 bits, 128 KiB).
const BLOOM_LOG: u32 = 20;
const BLOOM_BITS: usize = 1 << BLOOM_LOG;

/// The folded 4-byte gram at the start of `bytes`, first byte highest (as the scan rolls it).
fn gram(bytes: &[u8]) -> Option<u32> {
    match bytes {
        [a, b, c, d, ..] => Some(
            u32::from(FOLD[usize::from(*a)]) << 24
                | u32::from(FOLD[usize::from(*b)]) << 16
                | u32::from(FOLD[usize::from(*c)]) << 8
                | u32::from(FOLD[usize::from(*d)]),
        ),
        _ => None,
    }
}

/// The gram's bit in the Bloom filter.
fn bloom_bit(gram: u32) -> usize {
    (gram.wrapping_mul(0x9e37_79b1) >> (32 - BLOOM_LOG)) as usize
}

impl<'t> Index<'t> {
    /// Parses and indexes every pattern of `table`; a pattern that does not parse is left out
    /// (a validated table has none).
    #[must_use]
    pub(crate) fn new(table: &'t ErrorTable) -> Index<'t> {
        let mut entries = Vec::new();
        for (i, row) in table.errors.iter().enumerate() {
            for p in &row.patterns {
                if let Ok(mut p) = Pattern::parse(p) {
                    // What users paste has its capitals changed (a logger's upper case, a
                    // title's capitals): every pattern is matched ignoring ASCII case.
                    p.case_insensitive = true;
                    entries.push((p, Target::Row(i)));
                }
            }
        }
        for (formats, target) in [
            (&table.cuda_code_formats, Target::Code),
            (&table.xid_formats, Target::Xid),
        ] {
            for f in formats {
                if let Ok(mut p) = Pattern::parse(f) {
                    p.case_insensitive = true;
                    entries.push((p, target));
                }
            }
        }
        let mut grams: HashMap<u32, Vec<usize>> = HashMap::new();
        let mut bloom = vec![0u64; BLOOM_BITS / 64];
        for (i, (p, _)) in entries.iter().enumerate() {
            if let Some(g) = gram(p.anchor_text().as_bytes()) {
                grams.entry(g).or_default().push(i);
                let k = bloom_bit(g);
                bloom[k / 64] |= 1 << (k % 64);
            }
        }
        let numbers = |pick: fn(&KnownError) -> &[u32]| -> HashMap<u32, usize> {
            table
                .errors
                .iter()
                .enumerate()
                .flat_map(|(i, row)| pick(row).iter().map(move |n| (*n, i)))
                .collect()
        };
        Index {
            table,
            entries,
            grams,
            bloom,
            codes: numbers(|row| &row.cuda_codes),
            xids: numbers(|row| &row.xids),
        }
    }

    /// Every row that matches `text`, in the order of its first match, one message counted
    /// once: where rows overlap, the one earlier in the table (the more specific) keeps it.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn scan(&self, text: &str) -> Vec<RowHits> {
        self.scan_until(text, None).0
    }

    /// Every row that matches `text`, in the order of its first match, one message counted
    /// once (where rows overlap, the one earlier in the table keeps it); the search stops at
    /// `end`, looked at every [`CLOCK_EVERY`] bytes. The rows found, and where the search
    /// stopped when it did.
    #[must_use]
    pub(crate) fn scan_until(
        &self,
        text: &str,
        end: Option<std::time::Instant>,
    ) -> (Vec<RowHits>, Option<usize>) {
        let mut stopped = None;
        let bytes = text.as_bytes();
        let mut kept: Vec<Hit> = Vec::new();
        // Hits per row and pattern: a message two patterns of its row both match (a warning
        // and the line after it) is still one message.
        let mut counts: HashMap<(usize, usize), (u32, usize)> = HashMap::new();
        // The gram of the four bytes ending at `i`, rolled one byte at a time.
        let mut rolling: u32 = 0;
        for (i, &byte) in bytes.iter().enumerate() {
            if i % CLOCK_EVERY == 0
                && i > 0
                && end.is_some_and(|end| std::time::Instant::now() >= end)
            {
                stopped = Some(i);
                break;
            }
            rolling = rolling << 8 | u32::from(FOLD[usize::from(byte)]);
            let k = bloom_bit(rolling);
            if i < 3 || self.bloom[k / 64] & (1 << (k % 64)) == 0 {
                continue;
            }
            let Some(candidates) = self.grams.get(&rolling) else {
                continue;
            };
            let i = i - 3;
            for &e in candidates {
                let Some((pattern, target)) = self.entries.get(e) else {
                    continue;
                };
                let Some(found) = pattern.match_at(text, i) else {
                    continue;
                };
                let row = match target {
                    Target::Row(row) => Some(*row),
                    Target::Code => captured_number(text, &found, "code")
                        .and_then(|n| self.codes.get(&n).copied()),
                    Target::Xid => captured_number(text, &found, "xid")
                        .and_then(|n| self.xids.get(&n).copied()),
                };
                let Some(row) = row else { continue };
                let count = counts.entry((row, e)).or_insert((0, 0));
                count.0 = count.0.saturating_add(1);
                if count.1 < KEPT_PER_ROW {
                    count.1 += 1;
                    kept.push(Hit {
                        row,
                        entry: e,
                        found,
                    });
                }
            }
        }
        kept.sort_by_key(|h| (h.found.start, h.row));
        kept.dedup_by(|b, a| a.row == b.row && a.found.start == b.found.start);
        // A hit inside another row's hit, of a row earlier in the table, is that row's message.
        let mut suppressed = vec![false; kept.len()];
        for (i, h) in kept.iter().enumerate() {
            for (j, o) in kept.iter().enumerate().skip(i + 1) {
                if o.found.start >= h.found.end {
                    break;
                }
                if o.row > h.row {
                    suppressed[j] = true;
                } else if o.row < h.row {
                    suppressed[i] = true;
                }
            }
        }
        let mut out: Vec<RowHits> = Vec::new();
        for (hit, suppressed) in kept.into_iter().zip(suppressed) {
            if suppressed {
                if let Some(c) = counts.get_mut(&(hit.row, hit.entry)) {
                    c.0 = c.0.saturating_sub(1);
                }
                continue;
            }
            match out.iter_mut().find(|r| r.row == hit.row) {
                None => out.push(RowHits {
                    row: hit.row,
                    first: hit.found,
                    count: 0,
                }),
                // Another pattern of the row on the same line (`CUDA error 804` and the text
                // after it): one message, matched whole.
                Some(r)
                    if text
                        .get(r.first.start..hit.found.start)
                        .is_some_and(|between| !between.contains('\n')) =>
                {
                    r.first.end = r.first.end.max(hit.found.end);
                    r.first.captures.extend(hit.found.captures);
                }
                Some(_) => {}
            }
        }
        for r in &mut out {
            r.count = counts
                .iter()
                .filter(|((row, _), _)| *row == r.row)
                .map(|(_, c)| c.0)
                .max()
                .unwrap_or(1)
                .max(1);
        }
        (out, stopped)
    }

    /// The row behind a hit.
    #[must_use]
    pub(crate) fn row(&self, row: usize) -> Option<&'t KnownError> {
        self.table.errors.get(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_found_by_the_index_as_by_a_plain_search() {
        let table = crate::manifest::embedded().errors.table();
        let index = Index::new(table);
        for row in &table.errors {
            for example in &row.examples {
                let plain = table.first_match(row, example).map(|f| f.start);
                let hits = index.scan(example);
                let by_index = hits
                    .iter()
                    .find(|h| table.errors[h.row].id == row.id)
                    .map(|h| h.first.start);
                // Either found at the same place, or the message belongs to an earlier, more
                // specific row that overlaps it.
                let claimed = hits.iter().any(|h| {
                    h.row < table.errors.iter().position(|r| r.id == row.id).unwrap()
                        && plain.is_some_and(|p| h.first.start <= p && p < h.first.end)
                });
                assert!(
                    by_index == plain || claimed,
                    "{}: example {example:?}: plain {plain:?}, index {by_index:?}",
                    row.id
                );
            }
        }
    }

    #[test]
    fn overlapping_rows_count_the_message_once_for_the_earlier_row() {
        let table = crate::manifest::embedded().errors.table();
        let index = Index::new(table);
        let text = "ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory\n";
        let hits = index.scan(text);
        let ids: Vec<&str> = hits
            .iter()
            .map(|h| table.errors[h.row].id.as_str())
            .collect();
        assert_eq!(ids, ["loader-cudnn-missing"], "{ids:?}");
    }
}
