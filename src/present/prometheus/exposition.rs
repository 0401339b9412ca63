//! The Prometheus text exposition format (version 0.0.4) as gpu-doctor writes it: gauge
//! families with their `# HELP` and `# TYPE` lines, samples with escaped label values, and
//! values spelled as Prometheus parses them. Knows nothing of gpu-doctor's metrics: the
//! catalogue in [`super`] decides what is written.
//!
//! Depends on nothing in the crate.

use std::collections::HashMap;
use std::fmt::Write;

/// The text being written, one family at a time.
#[derive(Default)]
pub(super) struct Exposition {
    pub(super) text: String,
}

impl Exposition {
    /// Writes a finished family: its `# HELP` and `# TYPE` lines and its samples, or nothing
    /// when it has no sample.
    pub(super) fn push<const N: usize>(&mut self, family: Family<N>) {
        if family.samples.is_empty() {
            return;
        }
        let _ = writeln!(
            self.text,
            "# HELP {} {}",
            family.name,
            escape_help(family.help)
        );
        let _ = writeln!(self.text, "# TYPE {} gauge", family.name);
        for (values, value) in &family.samples {
            self.text.push_str(family.name);
            if N > 0 {
                self.text.push('{');
                for (i, (label, v)) in family.labels.iter().zip(values).enumerate() {
                    if i > 0 {
                        self.text.push(',');
                    }
                    let _ = write!(self.text, "{label}=\"{}\"", escape_label_value(v));
                }
                self.text.push('}');
            }
            let _ = writeln!(self.text, " {}", format_value(*value));
        }
    }
}

/// One metric family: a gauge whose samples all carry the labels `labels`.
pub(super) struct Family<const N: usize> {
    name: &'static str,
    help: &'static str,
    labels: [&'static str; N],
    samples: Vec<([String; N], f64)>,
    /// Where each label-value tuple is in `samples`: finding a series costs the same whatever
    /// the family's size (a search of `samples` made 50,000 GPUs a two-minute render).
    index: HashMap<[String; N], usize>,
}

impl<const N: usize> Family<N> {
    pub(super) fn new(
        name: &'static str,
        help: &'static str,
        labels: [&'static str; N],
    ) -> Family<N> {
        Family {
            name,
            help,
            labels,
            samples: Vec::new(),
            index: HashMap::new(),
        }
    }

    /// Adds a sample; a second one with the same label values is dropped, so the series is
    /// written once (the report's lists come in their own priority order: the first wins).
    pub(super) fn set(&mut self, values: [&str; N], value: f64) {
        let values = values.map(str::to_string);
        if !self.index.contains_key(&values) {
            self.index.insert(values.clone(), self.samples.len());
            self.samples.push((values, value));
        }
    }

    /// Adds `value` to the sample with these label values, making it if needed: counts.
    pub(super) fn add(&mut self, values: [&str; N], value: f64) {
        let values = values.map(str::to_string);
        match self.index.get(&values) {
            Some(&at) => self.samples[at].1 += value,
            None => {
                self.index.insert(values.clone(), self.samples.len());
                self.samples.push((values, value));
            }
        }
    }

    /// [`Family::set`] when the report knows the number.
    pub(super) fn set_some(&mut self, values: [&str; N], value: Option<f64>) {
        if let Some(value) = value {
            self.set(values, value);
        }
    }
}

/// A sample value as the format spells it: Go's `ParseFloat` reads Rust's shortest round-trip
/// decimal, but not Rust's `inf`.
pub(super) fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_string()
    } else {
        format!("{v}")
    }
}

/// A label value between its quotes: `\`, `"` and newline escaped as the format defines; other
/// control characters (a carriage return would split the line for some readers) and
/// bidirectional overrides become `?`.
pub(super) fn escape_label_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(crate::sanitize::MAX_SHOWN * 4));
    for (shown, c) in text.chars().enumerate() {
        if shown == crate::sanitize::MAX_SHOWN {
            let left = text.chars().count() - shown;
            out.push_str(&format!(
                "{}{left} more characters]",
                crate::sanitize::CUT_MARK
            ));
            break;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push(' '),
            c if c.is_control() => out.push('?'),
            c if crate::sanitize::is_invisible(c) => {
                out.push_str(&format!("<U+{:04X}>", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out
}

/// `# HELP` text: only `\` and newline are escaped there (a quote is plain text).
pub(super) fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_spelled_as_go_parses_them() {
        assert_eq!(format_value(1.0), "1");
        assert_eq!(format_value(0.12), "0.12");
        assert_eq!(format_value(f64::NAN), "NaN");
        assert_eq!(format_value(f64::INFINITY), "+Inf");
        assert_eq!(format_value(f64::NEG_INFINITY), "-Inf");
        assert_eq!(format_value(150_754_820_096.0), "150754820096");
    }
}
