//! Numbers as people write and read them: parameter counts (`340M`, `7B`) and memory sizes.
//! Pure.

/// Bytes in a GiB (what nvidia-smi's MiB add up to).
pub(crate) const GIB: u64 = 1 << 30;

/// Bytes in a MiB.
pub(crate) const MIB: u64 = 1 << 20;

/// A parameter count as model cards write it: `340M`, `7B`, `1.5B`, `70b`, `125k`, `1T`, or a
/// plain number (`340000000`). Decimals are exact (`1.5B` is 1,500,000,000), so a worked example
/// gives the same bytes on every machine.
///
/// # Errors
/// A message naming what is wrong, for clap to show.
pub(crate) fn parse_params(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let (number, multiplier) = match trimmed.chars().last() {
        Some('k' | 'K') => (&trimmed[..trimmed.len() - 1], 1_000_u64),
        Some('m' | 'M') => (&trimmed[..trimmed.len() - 1], 1_000_000),
        Some('b' | 'B') => (&trimmed[..trimmed.len() - 1], 1_000_000_000),
        Some('t' | 'T') => (&trimmed[..trimmed.len() - 1], 1_000_000_000_000),
        _ => (trimmed, 1),
    };
    let bad = || format!("`{text}` is not a parameter count (examples: 340M, 7B, 1.5B, 70B)");
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty() || !digits(whole) || !digits(fraction) {
        return Err(bad());
    }
    let scale = u32::try_from(fraction.len())
        .ok()
        .and_then(|n| 10_u64.checked_pow(n))
        .filter(|scale| multiplier.is_multiple_of(*scale))
        .ok_or_else(|| format!("`{text}`: more decimals than the unit allows"))?;
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let fraction: u64 = if fraction.is_empty() {
        0
    } else {
        fraction.parse().map_err(|_| bad())?
    };
    let value = whole
        .checked_mul(multiplier)
        .and_then(|w| w.checked_add(fraction * (multiplier / scale)))
        .ok_or_else(|| format!("`{text}` is too large"))?;
    if value == 0 {
        return Err(format!("`{text}`: a model has at least one parameter"));
    }
    Ok(value)
}

/// `340000000` as `340M`, `7000000000` as `7B`, `1500000000` as `1.5B`: the short form used in
/// titles, exact (falls back to the plain number when a short form would round).
#[must_use]
pub(crate) fn short_params(n: u64) -> String {
    for (unit, size) in [
        ("T", 1_000_000_000_000_u64),
        ("B", 1_000_000_000),
        ("M", 1_000_000),
        ("k", 1_000),
    ] {
        if n >= size {
            let whole = n / size;
            let rest = n % size;
            if rest == 0 {
                return format!("{whole}{unit}");
            }
            // Up to three decimals, only when exact.
            for decimals in 1..=3_u32 {
                let step = size / 10_u64.pow(decimals);
                if step > 0 && rest.is_multiple_of(step) {
                    let digits = rest / step;
                    let width = usize::try_from(decimals).unwrap_or(3);
                    return format!("{whole}.{digits:0width$}{unit}");
                }
            }
            return grouped(n);
        }
    }
    grouped(n)
}

/// `340000000` as `340,000,000`.
#[must_use]
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in GiB with two decimals: `5.07 GiB`.
#[must_use]
pub(crate) fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", as_gib(bytes))
}

/// A signed byte count in GiB with two decimals: `-0.54 GiB`.
#[must_use]
pub(crate) fn signed_gib(bytes: i128) -> String {
    #[expect(
        clippy::cast_precision_loss,
        reason = "display only: two decimals of GiB"
    )]
    let value = bytes as f64 / GIB as f64;
    format!("{value:.2} GiB")
}

/// Bytes as a floating GiB count, for display and JSON readers.
#[must_use]
pub(crate) fn as_gib(bytes: u64) -> f64 {
    #[expect(
        clippy::cast_precision_loss,
        reason = "display only: two decimals of GiB"
    )]
    let value = bytes as f64 / GIB as f64;
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_counts_parse_exactly() {
        assert_eq!(parse_params("340M"), Ok(340_000_000));
        assert_eq!(parse_params("7B"), Ok(7_000_000_000));
        assert_eq!(parse_params("7b"), Ok(7_000_000_000));
        assert_eq!(parse_params("1.5B"), Ok(1_500_000_000));
        assert_eq!(parse_params("6.74B"), Ok(6_740_000_000));
        assert_eq!(parse_params(".5B"), Ok(500_000_000));
        assert_eq!(parse_params("125k"), Ok(125_000));
        assert_eq!(parse_params("1T"), Ok(1_000_000_000_000));
        assert_eq!(parse_params(" 110000000 "), Ok(110_000_000));
        for bad in [
            "",
            "B",
            "7 B",
            "seven",
            "1.2.3B",
            "-7B",
            "0",
            "0.0B",
            "1.5",
            "1.0000000001B",
        ] {
            assert!(parse_params(bad).is_err(), "{bad:?}");
        }
        assert!(parse_params("99999999999T").is_err(), "overflow is refused");
    }

    #[test]
    fn short_forms_are_exact() {
        assert_eq!(short_params(340_000_000), "340M");
        assert_eq!(short_params(7_000_000_000), "7B");
        assert_eq!(short_params(1_500_000_000), "1.5B");
        assert_eq!(short_params(6_740_000_000), "6.74B");
        assert_eq!(short_params(6_738_415_616), "6,738,415,616");
        assert_eq!(short_params(999), "999");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }

    #[test]
    fn sizes_print_in_gib() {
        assert_eq!(gib(5_440_000_000), "5.07 GiB");
        assert_eq!(gib(2 * GIB), "2.00 GiB");
        assert_eq!(signed_gib(-i128::from(GIB) / 2), "-0.50 GiB");
    }
}
