//! `gpu-doctor explain`: from the error a user saw to its cause on this machine.
//!
//! The text (a pasted traceback, a whole training log) is decoded and cleaned ([`read`]),
//! every known message of `manifests/errors.toml` is found in it in one pass ([`scan`]), the
//! first fatal one is put first, and each is given the finding on this machine that explains
//! it ([`cause`]), with what its own facts say against the machine ([`cause::notes`],
//! [`oom`]). [`render`] writes the answer for a terminal; the JSON face is the report with
//! [`crate::report::explain::Explain`] filled in.
//!
//! Pure: the report, the table and the bytes in, the answer out. Reading the user's log (and
//! its limits) is `crate::commands::explain`'s; the text is data, never run or evaluated, and
//! every face strips its control characters.
//!
//! Depends on `report`, `manifest` and `guide` (the memory arithmetic of `estimate`).

mod cause;
mod oom;
pub(crate) mod read;
pub(crate) mod render;
mod scan;

use crate::manifest::ErrorTable;
use crate::report::Report;
use crate::report::explain::{Elsewhere, Explain, Signature};

/// `text` is cut to an excerpt above this many bytes.
pub(crate) const TEXT_LIMIT: usize = 64 * 1024;

/// Lines of context kept around each message in an excerpt.
const CONTEXT_LINES: usize = 2;

/// Explains `bytes` (an error text, a log) on the machine `report` describes, with the
/// signatures of `table`, however long that takes: the unit tests' entry (every face searches
/// under a budget, [`explain_until`]). `input_cut` says how the input was shortened before.
#[cfg(test)]
#[must_use]
pub(crate) fn explain(
    report: &Report,
    table: &ErrorTable,
    bytes: &[u8],
    input_cut: Option<String>,
) -> Explain {
    explain_until(report, table, bytes, input_cut, None)
}

/// What `input_cut` says once the search stopped at the budget, after what was cut before.
fn budget_spent(before: Option<String>, searched: usize, all: usize) -> String {
    let searched = format!(
        "the time budget (--timeout) was spent after searching the first {searched} of {all} \
         bytes; the rest was not searched"
    );
    match before {
        Some(before) => format!("{before}; {searched}"),
        None => searched,
    }
}

/// Explains `bytes` (an error text, a log) on the machine `report` describes, with the
/// signatures of `table`, searching the text until `end` (the budget a scan gets): a log too
/// long to search in time is searched from its start up to there, and `input_cut` says how
/// far that was.
#[must_use]
pub(crate) fn explain_until(
    report: &Report,
    table: &ErrorTable,
    bytes: &[u8],
    mut input_cut: Option<String>,
    end: Option<std::time::Instant>,
) -> Explain {
    let cleaned = read::clean(&read::decode(bytes));
    let text = cleaned.text;
    let normal = read::View::new(&text, cleaned.wrap_width);
    let index = scan::Index::new(table);
    let view = normal.text.as_str();
    let lines = LineIndex::new(&text);
    // Each signature with its row (to order signatures found on one line) and its span.
    let mut found: Vec<(Signature, usize, (usize, usize))> = Vec::new();
    let (all_hits, stopped) = index.scan_until(view, end);
    if let Some(at) = stopped {
        input_cut = Some(budget_spent(input_cut, normal.original(at), text.len()));
    }
    for hits in all_hits {
        let Some(row) = index.row(hits.row) else {
            continue;
        };
        let (start, end) = (
            normal.original(hits.first.start),
            normal.original_end(hits.first.end),
        );
        let Some(matched) = text.get(start..end) else {
            continue;
        };
        let captures: cause::Captures = hits
            .first
            .captures
            .iter()
            .filter_map(|&(name, s, e)| Some((name, view.get(s..e)?.to_string())))
            .collect();
        let chosen = cause::choose(report, row, &captures, &text);
        let mut notes = cause::notes(report, &captures);
        if row.family == "oom" {
            let (from, to) = lines.around(start, end, 1);
            notes.extend(oom::notes(report, text.get(from..to).unwrap_or(matched)));
        }
        let signature = Signature {
            id: row.id.clone(),
            matched: matched.to_string(),
            line: u32::try_from(lines.line_of(start) + 1).unwrap_or(u32::MAX),
            count: hits.count,
            family: row.family.clone(),
            printed_by: row.printed_by.clone(),
            fatal: row.fatal,
            not_the_machine: row.not_the_machine,
            meaning: row.meaning.clone(),
            causes: row.causes.clone(),
            cause: chosen.map(|f| f.id.clone()),
            notes,
            decide: row.decide.clone(),
            elsewhere: row
                .elsewhere()
                .map(|(kind, text)| Elsewhere {
                    kind: kind.to_string(),
                    text: text.to_string(),
                })
                .collect(),
            checks: row.checks.clone(),
            fix: row.fix.clone(),
        };
        found.push((signature, hits.row, (start, end)));
    }
    // The first fatal message (by line, the more specific row first on one line) leads;
    // the rest follow in the order of the text.
    found.sort_by_key(|(s, row, _)| (s.line, *row));
    if let Some(first) = found.iter().position(|(s, _, _)| s.fatal)
        && first > 0
    {
        let lead = found.remove(first);
        found.insert(0, lead);
    }
    let spans: Vec<(usize, usize)> = found.iter().map(|(_, _, span)| *span).collect();
    let signatures: Vec<Signature> = found.into_iter().map(|(s, _, _)| s).collect();
    // A lead message that is never the machine's fault keeps its own cause or none: another
    // message's cause on this machine is not offered for it. A fatal lead's own family's
    // messages that are not fatal (NCCL's result code above its "Last error:" line, a generic
    // WARN line) are its context: their guesses are not offered for what the lead names.
    let candidates: Vec<&Signature> = match signatures.first() {
        Some(lead) if lead.not_the_machine => vec![lead],
        Some(lead) if lead.fatal => signatures
            .iter()
            .enumerate()
            .filter(|(i, s)| *i == 0 || s.fatal || s.family != lead.family)
            .map(|(_, s)| s)
            .collect(),
        _ => signatures.iter().collect(),
    };
    let (cause, cause_for) = candidates
        .iter()
        .find_map(|s| Some((s.cause.clone()?, s.id.clone())))
        .map_or((None, None), |(c, f)| (Some(c), Some(f)));
    // A last line is one with or without its newline; an empty text has none.
    let lines_read = lines.count() - usize::from(text.is_empty() || text.ends_with('\n'));
    let (text, text_cut) = excerpt(text, &lines, &spans);
    Explain {
        text,
        text_cut,
        bytes_read: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
        lines_read: u64::try_from(lines_read).unwrap_or(u64::MAX),
        input_cut,
        wrap_width: cleaned.wrap_width.and_then(|w| u32::try_from(w).ok()),
        signatures,
        cause,
        cause_for,
    }
}

/// The text whole when it is small; else the lines around each span, with the stretches left
/// out marked.
fn excerpt(text: String, lines: &LineIndex, spans: &[(usize, usize)]) -> (String, bool) {
    if text.len() <= TEXT_LIMIT {
        return (text, false);
    }
    let mut ranges: Vec<(usize, usize)> = spans
        .iter()
        .map(|&(s, e)| {
            let first = lines.line_of(s).saturating_sub(CONTEXT_LINES);
            let last = lines.line_of(e.saturating_sub(1)) + CONTEXT_LINES;
            (first, last)
        })
        .collect();
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::new();
    for (first, last) in ranges {
        match merged.last_mut() {
            Some(prev) if first <= prev.1 + 1 => prev.1 = prev.1.max(last),
            _ => merged.push((first, last)),
        }
    }
    let total = lines.count();
    let mut out = String::new();
    let mut next = 0;
    for (first, last) in merged {
        let last = last.min(total.saturating_sub(1));
        if first > next {
            out.push_str(&format!("[... {} lines left out ...]\n", first - next));
        }
        let (from, to) = (lines.start(first), lines.end(last));
        out.push_str(text.get(from..to).unwrap_or(""));
        out.push('\n');
        next = last + 1;
    }
    if next < total {
        out.push_str(&format!("[... {} lines left out ...]\n", total - next));
    }
    (out, true)
}

/// Where each line of a text starts, for line numbers and excerpts.
struct LineIndex {
    /// Byte offset of each line's first byte.
    starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        let mut starts = vec![0];
        // `match_indices` of a char searches with std's memchr.
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex {
            starts,
            len: text.len(),
        }
    }

    fn count(&self) -> usize {
        self.starts.len()
    }

    /// The line (0-based) holding byte `at`.
    fn line_of(&self, at: usize) -> usize {
        self.starts.partition_point(|&s| s <= at).saturating_sub(1)
    }

    fn start(&self, line: usize) -> usize {
        self.starts.get(line).copied().unwrap_or(self.len)
    }

    /// The end of a line, before its newline.
    fn end(&self, line: usize) -> usize {
        self.starts
            .get(line + 1)
            .map_or(self.len, |next| next.saturating_sub(1))
    }

    /// The bytes from `lines` lines before the span to `lines` lines after it.
    fn around(&self, start: usize, end: usize, lines: usize) -> (usize, usize) {
        let first = self.line_of(start).saturating_sub(lines);
        let last = self.line_of(end.saturating_sub(1)) + lines;
        (
            self.start(first),
            self.end(last.min(self.count().saturating_sub(1))),
        )
    }
}

#[cfg(test)]
mod tests;
