//! How a version someone has (`2.11.0+cu130`, `12.4.1`, `9.10.2.21`) finds the manifest row
//! that speaks for it (`2.11`, `12.4.0`, `9.10.2`).
//!
//! Ordering comes from [`crate::version::Version`]; what it does not offer is looking at a
//! version's components one by one, which "is this row a prefix of that version" needs.

use std::cmp::Ordering;

/// The numeric components of a strictly dotted version (`"550.54.14"` -> `[550, 54, 14]`).
///
/// `None` for anything else, including empty components and suffixes: manifest text must be
/// exact, so the validator uses this to reject `12.4abc` that a lenient parse would accept.
pub(super) fn strict_parts(text: &str) -> Option<Vec<u64>> {
    text.split('.')
        .map(|piece| {
            if piece.is_empty() || !piece.bytes().all(|b| b.is_ascii_digit()) {
                None
            } else {
                piece.parse().ok()
            }
        })
        .collect()
}

/// The leading numeric components of a version a machine reported, ignoring any suffix
/// (`"2.11.0+cu130"` -> `[2, 11, 0]`). Empty when it does not start with a number.
fn leading_parts(text: &str) -> Vec<u64> {
    let mut parts = Vec::new();
    for piece in text.trim().split('.') {
        let digits = piece.bytes().take_while(u8::is_ascii_digit).count();
        match piece[..digits].parse() {
            Ok(number) => parts.push(number),
            Err(_) => break,
        }
        if digits != piece.len() {
            break;
        }
    }
    parts
}

/// Whether the row version `series` names a series `query` belongs to: `2.11` covers `2.11.0`
/// and `2.11.0+cu130`, `13.4` covers `13.4.1`, `12.4.0` covers `12.4.0` only.
pub(super) fn covers(series: &str, query: &str) -> bool {
    let series = leading_parts(series);
    let query = leading_parts(query);
    !series.is_empty() && query.starts_with(&series)
}

/// Whether `query` falls in the inclusive range `first..=last`, where `last` is read as a
/// series: `last = "0.5"` takes every `0.5.x`, `last = "9.10.2"` takes `9.10.2.21`.
/// A missing `first` means "from the beginning".
pub(super) fn within(first: Option<&str>, last: &str, query: &str) -> bool {
    let query_parts = leading_parts(query);
    let last_parts = leading_parts(last);
    if query_parts.is_empty() || last_parts.is_empty() {
        return false;
    }
    let after_first = first.is_none_or(|first| compare(first, query) != Ordering::Greater);
    let cut = query_parts.len().min(last_parts.len());
    after_first && compare_parts(&query_parts[..cut], &last_parts) != Ordering::Greater
}

/// Whether two versions share their first `depth` components (`2.16.1` and `2.16.2` at 2).
pub(super) fn same_series(a: &str, b: &str, depth: usize) -> bool {
    let a = leading_parts(a);
    let b = leading_parts(b);
    a.len() >= depth && b.len() >= depth && a[..depth] == b[..depth]
}

/// Orders two version texts with the crate's [`crate::version::Version`]; text that does not
/// parse sorts first.
pub(super) fn compare(a: &str, b: &str) -> Ordering {
    crate::version::compare(a, b)
}

/// The first component of a version a machine reported: a driver's branch (`580` of
/// `580.159.04`), a CUDA major.
pub(super) fn leading_major(text: &str) -> Option<u64> {
    leading_parts(text).first().copied()
}

fn compare_parts(a: &[u64], b: &[u64]) -> Ordering {
    let len = a.len().max(b.len());
    (0..len)
        .map(|i| {
            let x = a.get(i).copied().unwrap_or(0);
            let y = b.get(i).copied().unwrap_or(0);
            x.cmp(&y)
        })
        .find(|ordering| ordering.is_ne())
        .unwrap_or(Ordering::Equal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_parts_reject_anything_but_dotted_numbers() {
        assert_eq!(strict_parts("550.54.14"), Some(vec![550, 54, 14]));
        assert_eq!(strict_parts("9.10.2.21"), Some(vec![9, 10, 2, 21]));
        for bad in ["", "12.", ".4", "12.4abc", "12..4", "r580", "2.11.0+cu130"] {
            assert_eq!(strict_parts(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_series_covers_its_releases_component_by_component() {
        assert!(covers("2.11", "2.11.0+cu130"));
        assert!(covers("13.4", "13.4.1"));
        assert!(covers("12.4.0", "12.4.0"));
        assert!(!covers("2.1", "2.10.0"), "2.1 is not a prefix of 2.10");
        assert!(!covers("12.4.0", "12.4.1"));
        assert!(
            !covers("12.4.0", "12.4"),
            "a shorter query is not inside a longer row"
        );
    }

    #[test]
    fn ranges_read_their_upper_end_as_a_series() {
        assert!(within(Some("0.4.31"), "0.5", "0.5.3"));
        assert!(within(Some("0.4.31"), "0.5", "0.4.31"));
        assert!(!within(Some("0.4.31"), "0.5", "0.6.0"));
        assert!(!within(Some("0.4.31"), "0.5", "0.4.30"));
        assert!(within(Some("9.5.0"), "9.5.1", "9.5.1"));
        assert!(within(None, "9.10.2", "9.10.2.21"));
        assert!(!within(None, "9.10.2", "9.10.3"));
        assert!(!within(None, "0.4.19", "junk"));
    }

    #[test]
    fn series_compare_the_leading_components_only() {
        assert!(same_series("2.16.1", "2.16.2", 2));
        assert!(!same_series("2.16.1", "2.1", 2));
        assert!(!same_series("2", "2.0", 2));
    }

    #[test]
    fn ordering_is_numeric_per_component() {
        assert_eq!(compare("550.144.03", "550.54.14"), Ordering::Greater);
        assert_eq!(compare("12.10", "12.4"), Ordering::Greater);
        assert_eq!(compare("12.4", "12.4.0"), Ordering::Equal);
    }
}
