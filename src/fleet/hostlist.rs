//! Node lists written short, the way Slurm writes them (`gpu[01-36,38]`), for the text and
//! Markdown faces; the JSON keeps every name. Pure.

use std::collections::BTreeMap;
use std::fmt::Write;

/// Digit runs longer than this are not read as numbers (they would overflow, and no cluster
/// numbers its nodes past a billion billion).
const MAX_DIGITS: usize = 18;

/// `names` compressed into ranges: names that differ only in a trailing number share a
/// prefix and a bracket of ranges; zero-padded numbers keep their width. At most `limit`
/// comma-separated pieces are shown, then `(+N more)` counting the nodes left out.
#[must_use]
pub(crate) fn compress(names: &[String], limit: usize) -> String {
    // prefix -> (width, 0 when unpadded) -> numbers; and names without a trailing number.
    let mut numbered: BTreeMap<&str, BTreeMap<usize, Vec<u64>>> = BTreeMap::new();
    let mut plain: Vec<&str> = Vec::new();
    let split: Vec<(&str, &str)> = names.iter().map(|n| split_number(n)).collect();
    // Widths used by zero-padded numbers, per prefix: an unpadded `10` then joins `01`-`09`.
    let mut padded: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (prefix, digits) in &split {
        if digits.len() > 1 && digits.starts_with('0') {
            padded.entry(prefix).or_default().push(digits.len());
        }
    }
    for ((prefix, digits), name) in split.iter().zip(names) {
        let Ok(number) = digits.parse::<u64>() else {
            plain.push(name);
            continue;
        };
        let width = if padded
            .get(prefix)
            .is_some_and(|w| w.contains(&digits.len()))
        {
            digits.len()
        } else {
            0
        };
        numbered
            .entry(prefix)
            .or_default()
            .entry(width)
            .or_default()
            .push(number);
    }
    let mut pieces: Vec<(String, usize)> = Vec::new();
    for (prefix, widths) in numbered {
        for (width, mut numbers) in widths {
            numbers.sort_unstable();
            numbers.dedup();
            let count = numbers.len();
            let ranges = ranges(&numbers, width);
            if count == 1 {
                pieces.push((format!("{prefix}{ranges}"), 1));
            } else {
                pieces.push((format!("{prefix}[{ranges}]"), count));
            }
        }
    }
    plain.sort_unstable();
    plain.dedup();
    pieces.extend(plain.into_iter().map(|n| (n.to_string(), 1)));
    pieces.sort();
    let shown: Vec<&str> = pieces.iter().take(limit).map(|(p, _)| p.as_str()).collect();
    let hidden: usize = pieces.iter().skip(limit).map(|(_, n)| n).sum();
    let mut text = shown.join(",");
    if hidden > 0 {
        let _ = write!(text, " (+{hidden} more)");
    }
    text
}

/// `node017` -> (`node`, `017`); a name without trailing digits, or with too many, has none.
fn split_number(name: &str) -> (&str, &str) {
    let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > MAX_DIGITS {
        return (name, "");
    }
    name.split_at(name.len() - digits)
}

/// `1,2,3,5` -> `1-3,5`, each number `width` digits wide (0: as it is).
fn ranges(numbers: &[u64], width: usize) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let start = numbers[i];
        let mut end = start;
        while i + 1 < numbers.len() && numbers[i + 1] == end + 1 {
            i += 1;
            end = numbers[i];
        }
        if start == end {
            out.push(format!("{start:0width$}"));
        } else {
            out.push(format!("{start:0width$}-{end:0width$}"));
        }
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn padded_numbers_keep_their_width_and_ranges_merge() {
        let many: Vec<String> = (1..=40)
            .filter(|n| *n != 37)
            .map(|n| format!("gpu{n:02}"))
            .collect();
        assert_eq!(compress(&many, 10), "gpu[01-36,38-40]");
        assert_eq!(
            compress(&names(&["node9", "node10", "node11"]), 10),
            "node[9-11]"
        );
        assert_eq!(compress(&names(&["n1"]), 10), "n1");
        assert_eq!(
            compress(&names(&["login", "a2", "a3", "a5"]), 10),
            "a[2-3,5],login"
        );
    }

    #[test]
    fn long_lists_are_cut_with_a_count() {
        let list = names(&["a1", "a2", "b7", "c", "d", "e"]);
        assert_eq!(compress(&list, 2), "a[1-2],b7 (+3 more)");
        assert_eq!(compress(&[], 3), "");
    }

    #[test]
    fn odd_names_stay_whole() {
        let huge = format!("x{}", "9".repeat(40));
        assert_eq!(compress(&names(&[&huge]), 3), huge);
        assert_eq!(compress(&names(&["é1", "é2"]), 3), "é[1-2]");
    }
}
