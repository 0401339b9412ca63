//! Ordered version numbers for the things `semver` rejects: NVIDIA driver versions
//! (`550.144.03`, with a leading zero), CUDA's two-part `12.4`, compute capabilities (`9.0`).
//!
//! The original text is kept so a report shows exactly what the machine said.

use std::cmp::Ordering;
use std::fmt;

/// A dotted numeric version compared component by component, missing parts counting as zero
/// (`12.4 == 12.4.0`, `12.10 > 12.9`, `550.144.03 > 550.54.14`).
///
/// Trailing text that is not a number (`2.11.0+cu130`, `9.19.0.56`, `1.2rc1`) is cut off for
/// ordering but kept in [`Version::as_str`].
#[derive(Debug, Clone, Eq)]
pub struct Version {
    text: String,
    parts: Vec<u64>,
}

impl Version {
    /// Parses the leading dotted numbers of `text`. `None` when it does not start with a digit.
    #[must_use]
    pub fn parse(text: &str) -> Option<Version> {
        let trimmed = text.trim();
        let trimmed = trimmed.strip_prefix(['v', 'V']).unwrap_or(trimmed);
        let mut parts = Vec::new();
        for piece in trimmed.split('.') {
            let digits: String = piece.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() {
                break;
            }
            // More than 18 digits cannot be a real version component; refuse rather than overflow.
            let number = digits.parse::<u64>().ok()?;
            parts.push(number);
            if digits.len() != piece.len() || parts.len() == 8 {
                break;
            }
        }
        if parts.is_empty() {
            return None;
        }
        Some(Version {
            text: text.trim().to_string(),
            parts,
        })
    }

    /// The text this version was parsed from, trimmed.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The first component (`580` of `580.159.04`, `12` of `12.4`).
    #[must_use]
    pub fn major(&self) -> u64 {
        self.parts.first().copied().unwrap_or(0)
    }

    /// The second component, zero when absent.
    #[must_use]
    pub fn minor(&self) -> u64 {
        self.parts.get(1).copied().unwrap_or(0)
    }

    /// `major.minor` as text, the form CUDA versions are compared in (`13.0` of `13.0.88`).
    #[must_use]
    pub fn major_minor(&self) -> String {
        format!("{}.{}", self.major(), self.minor())
    }

    /// Builds the `13.0` form from the integer the CUDA driver API and NVML return (`13000`).
    #[must_use]
    pub fn from_cuda_int(value: i64) -> Option<Version> {
        if value <= 0 {
            return None;
        }
        let text = format!("{}.{}", value / 1000, (value % 1000) / 10);
        Version::parse(&text)
    }
}

impl PartialEq for Version {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> Ordering {
        let len = self.parts.len().max(other.parts.len());
        for i in 0..len {
            let a = self.parts.get(i).copied().unwrap_or(0);
            let b = other.parts.get(i).copied().unwrap_or(0);
            match a.cmp(&b) {
                Ordering::Equal => {}
                unequal => return unequal,
            }
        }
        Ordering::Equal
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Compares two version texts; texts that do not parse sort first.
#[must_use]
pub fn compare(a: &str, b: &str) -> Ordering {
    match (Version::parse(a), Version::parse(b)) {
        (Some(a), Some(b)) => a.cmp(&b),
        (Some(_), None) => Ordering::Greater,
        (None, Some(_)) => Ordering::Less,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).expect(s)
    }

    #[test]
    fn driver_versions_order_numerically_despite_leading_zeros() {
        assert!(v("550.144.03") > v("550.54.14"));
        assert!(v("580.159.04") > v("580.95.05"));
        assert_eq!(v("580.159.04").major(), 580);
    }

    #[test]
    fn cuda_versions_compare_with_missing_parts_as_zero() {
        assert_eq!(v("12.4"), v("12.4.0"));
        assert!(v("12.10") > v("12.9"));
        assert_eq!(v("13.0.88").major_minor(), "13.0");
    }

    #[test]
    fn suffixes_are_kept_as_text_but_ignored_for_order() {
        let torch = v("2.11.0+cu130");
        assert_eq!(torch.as_str(), "2.11.0+cu130");
        assert_eq!(torch, v("2.11.0"));
        assert_eq!(v("v13.0").major(), 13);
    }

    #[test]
    fn integer_cuda_versions_from_the_driver_api() {
        assert_eq!(Version::from_cuda_int(13000).unwrap().as_str(), "13.0");
        assert_eq!(Version::from_cuda_int(12040).unwrap().as_str(), "12.4");
        assert!(Version::from_cuda_int(0).is_none());
    }

    #[test]
    fn garbage_is_not_a_version() {
        for bad in [
            "",
            "N/A",
            "abc",
            ".1",
            "\u{1b}[31m",
            "99999999999999999999999",
        ] {
            assert!(Version::parse(bad).is_none(), "{bad:?}");
        }
        assert_eq!(compare("N/A", "1.0"), Ordering::Less);
    }
}
