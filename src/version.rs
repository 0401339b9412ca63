//! Ordered version numbers for the things `semver` rejects: NVIDIA driver versions
//! (`550.144.03`, with a leading zero), CUDA's two-part `12.4`, compute capabilities (`9.0`).
//!
//! The original text is kept so a report shows exactly what the machine said. AMD's gfx
//! targets (`gfx1100`), which three facts of a machine spell differently, are [`GfxTarget`].
//! Python packages' versions are PEP 440's ([`package_version`]), compared as pip compares
//! them: the other of the two version types.

use std::cmp::Ordering;
use std::fmt;

/// A Python package version as pip reads it (PEP 440): `2.4`, `2.4.0rc1`, `2.4.0.dev20240601`,
/// `2.9.0.post0`, `2.11.0+cu130`.
#[must_use]
pub(crate) fn package_version(text: &str) -> Option<pep440_rs::Version> {
    text.trim().parse().ok()
}

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

/// An AMD GPU's ISA target, `gfx` then the major in decimal and the minor and stepping as one
/// hex digit each (`gfx1100`, `gfx90a`, `gfx942`). The machine spells it three ways: the KFD
/// node's `gfx_target_version` (`110000`, `90010`), `HSA_OVERRIDE_GFX_VERSION` (`11.0.0`,
/// `9.0.10`) and the name itself (library file names, rocminfo). One value for all three keeps
/// "is this the same target" a comparison, as rocm_agent_enumerator and ollama compute it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GfxTarget {
    pub major: u8,
    pub minor: u8,
    pub stepping: u8,
}

impl GfxTarget {
    /// `gfx1100`, `gfx90a`, `gfx942`; a feature suffix (`gfx90a:xnack-`) is ignored. The
    /// major is every digit but the last two characters, which are one hex digit each.
    #[must_use]
    pub fn parse(text: &str) -> Option<GfxTarget> {
        let name = text.trim().split(':').next()?.strip_prefix("gfx")?;
        if !(3..=4).contains(&name.len()) || !name.is_ascii() {
            return None;
        }
        let (major, rest) = name.split_at(name.len() - 2);
        if major.starts_with('0') {
            return None;
        }
        let hex = |i: usize| rest.get(i..=i).and_then(|d| u8::from_str_radix(d, 16).ok());
        Some(GfxTarget {
            major: major.parse().ok().filter(|m| *m > 0)?,
            minor: hex(0)?,
            stepping: hex(1)?,
        })
    }

    /// From a KFD node's `gfx_target_version` (`major * 10000 + minor * 100 + stepping`, in
    /// decimal). `None` for 0 (a CPU node) and values whose minor or stepping is above 0xf.
    #[must_use]
    pub fn from_kfd(version: u64) -> Option<GfxTarget> {
        let (major, minor, stepping) = (version / 10000, (version / 100) % 100, version % 100);
        (version != 0 && major > 0 && major < 100 && minor <= 0xf && stepping <= 0xf).then(|| {
            GfxTarget {
                major: u8::try_from(major).unwrap_or(0),
                minor: u8::try_from(minor).unwrap_or(0),
                stepping: u8::try_from(stepping).unwrap_or(0),
            }
        })
    }

    /// From `HSA_OVERRIDE_GFX_VERSION`: exactly three dot-separated decimal numbers, the
    /// major at most 63 and the others at most 255 (rocm_agent_enumerator's bounds), each of
    /// the last two printable as one hex digit. `None` for anything else: the runtime ignores
    /// or rejects such a value.
    #[must_use]
    pub fn from_override(text: &str) -> Option<GfxTarget> {
        let parts: Vec<&str> = text.trim().split('.').collect();
        let [major, minor, stepping] = parts.as_slice() else {
            return None;
        };
        let number = |p: &str| -> Option<u8> {
            (!p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
                .then(|| p.parse().ok())
                .flatten()
        };
        let (major, minor, stepping) = (number(major)?, number(minor)?, number(stepping)?);
        (major > 0 && major <= 63 && minor <= 0xf && stepping <= 0xf).then_some(GfxTarget {
            major,
            minor,
            stepping,
        })
    }

    /// The override value that names this target (`11.0.0` for gfx1100).
    #[must_use]
    #[cfg(test)]
    pub fn override_value(self) -> String {
        format!("{}.{}.{}", self.major, self.minor, self.stepping)
    }
}

impl fmt::Display for GfxTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "gfx{}{:x}{:x}", self.major, self.minor, self.stepping)
    }
}

#[cfg(test)]
mod gfx_tests {
    use super::GfxTarget;

    #[test]
    fn the_three_spellings_of_a_target_agree() {
        for (name, kfd, over) in [
            ("gfx1100", 110_000, "11.0.0"),
            ("gfx90a", 90_010, "9.0.10"),
            ("gfx942", 90_402, "9.4.2"),
            ("gfx1030", 100_300, "10.3.0"),
            ("gfx1151", 110_501, "11.5.1"),
            ("gfx803", 80_003, "8.0.3"),
        ] {
            let t = GfxTarget::parse(name).expect(name);
            assert_eq!(t.to_string(), name);
            assert_eq!(GfxTarget::from_kfd(kfd), Some(t), "{kfd}");
            assert_eq!(GfxTarget::from_override(over), Some(t), "{over}");
            assert_eq!(GfxTarget::from_override(&t.override_value()), Some(t));
        }
    }

    #[test]
    fn malformed_values_are_refused() {
        assert_eq!(GfxTarget::from_kfd(0), None, "a CPU node");
        for bad in [
            "11.0", "11.0.0.0", "gfx1100", "10.3.O", "", "11.0.16", "64.0.0", "0.0.0", " 1 1.0.0",
        ] {
            assert_eq!(GfxTarget::from_override(bad), None, "{bad:?}");
        }
        for bad in ["gfx", "gfx1", "1100", "gfx11000", "gfxé00", "gfx0100"] {
            assert_eq!(GfxTarget::parse(bad), None, "{bad:?}");
        }
        assert_eq!(
            GfxTarget::parse("gfx90a:sramecc+:xnack-").map(|t| t.to_string()),
            Some("gfx90a".to_string())
        );
    }
}

/// Whether a Python version lies in `min..=max` (an absent `max` is open), compared as
/// `major.minor` (3.12.3 is a 3.12).
#[must_use]
pub fn python_fits(python: &str, min: &str, max: Option<&str>) -> bool {
    let Some(p) = Version::parse(python).and_then(|p| Version::parse(&p.major_minor())) else {
        return true;
    };
    Version::parse(min).is_none_or(|min| p >= min)
        && max.and_then(Version::parse).is_none_or(|max| p <= max)
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
