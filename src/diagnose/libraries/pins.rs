//! Reading the wheel pins frameworks declare (`nvidia-cudnn-cu12==9.1.0.70`): the name and spec
//! apart, a spec's floor, whether a version meets it. Shared by every question in this folder
//! and by `ext_packages`.

use crate::version::Version;

/// `nvidia-cudnn-cu12==9.1.0.70` → (`nvidia-cudnn-cu12`, `==9.1.0.70`).
pub(super) fn split_pin(pin: &str) -> (&str, &str) {
    match pin.find(['<', '>', '=', '!', '~']) {
        Some(i) => (&pin[..i], &pin[i..]),
        None => (pin, ""),
    }
}

/// The lowest version a spec allows (`==9.1.0.70`, `>=9.12`, `<10.0,>=9.12.0.46`).
pub(super) fn spec_floor(spec: &str) -> Option<Version> {
    spec.split(',').find_map(|c| {
        let c = c.trim();
        c.strip_prefix("==")
            .or_else(|| c.strip_prefix(">="))
            .or_else(|| c.strip_prefix("~="))
            .and_then(Version::parse)
    })
}

/// Whether `version` meets every clause of a PEP 440 spec; `None` when a clause is not
/// understood (then nothing is claimed).
pub(in crate::diagnose) fn spec_allows(spec: &str, version: &Version) -> Option<bool> {
    let mut ok = true;
    for clause in spec.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let (op, rest) = ["==", ">=", "<=", "!=", "~=", ">", "<"]
            .iter()
            .find_map(|op| clause.strip_prefix(op).map(|r| (*op, r)))?;
        if rest.contains('*') {
            return None;
        }
        let want = Version::parse(rest)?;
        ok &= match op {
            "==" => same_release(version, &want),
            ">=" | "~=" => version >= &want,
            "<=" => version <= &want,
            "!=" => !same_release(version, &want),
            ">" => version > &want,
            _ => version < &want,
        };
    }
    Some(ok)
}

/// Equal at the precision both give: `9.1.0` is the release `9.1.0.70`.
pub(super) fn same_release(a: &Version, b: &Version) -> bool {
    let parts = |v: &Version| v.as_str().split('.').count();
    let n = parts(a).min(parts(b)).min(3);
    let cut = |v: &Version| v.as_str().split('.').take(n).collect::<Vec<_>>().join(".");
    Version::parse(&cut(a)) == Version::parse(&cut(b))
}

/// `9.1.0.70` → `9.1.0`, `9.8` → `9.8.0`: how XLA prints a cuDNN version.
pub(super) fn three_parts(v: &Version) -> String {
    let mut parts: Vec<&str> = v.as_str().split('.').take(3).collect();
    while parts.len() < 3 {
        parts.push("0");
    }
    parts.join(".")
}
