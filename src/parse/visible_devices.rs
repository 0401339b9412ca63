//! `CUDA_VISIBLE_DEVICES` entries read as the CUDA runtime reads them, before any GPU is looked
//! at. Pure: which GPU an entry then selects is the diagnosis' business (it knows the GPUs).

/// One comma-separated entry of `CUDA_VISIBLE_DEVICES`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// `GPU-<uuid>` or a prefix of one, lower-cased (CUDA compares UUIDs without case).
    GpuUuid(String),
    /// `MIG-<uuid>`: a MIG instance.
    Mig,
    /// A leading run of digits (CUDA reads it like `strtoul` and ignores what follows).
    Index(usize),
    /// A leading `-`: a negative index, which selects nothing.
    Negative,
    /// Neither an index nor a UUID.
    Garbage,
}

/// The entries of a value, in order, each trimmed. An empty value (which hides every GPU) has
/// none.
#[must_use]
pub fn entries(value: &str) -> Vec<(&str, Entry)> {
    if value.trim().is_empty() {
        return Vec::new();
    }
    value
        .split(',')
        .map(str::trim)
        .map(|raw| (raw, entry(raw)))
        .collect()
}

/// Reads one entry.
#[must_use]
pub fn entry(raw: &str) -> Entry {
    let lower = raw.to_ascii_lowercase();
    if lower.starts_with("mig-") {
        return Entry::Mig;
    }
    if lower.starts_with("gpu-") {
        return Entry::GpuUuid(lower);
    }
    if raw.starts_with('-') {
        return Entry::Negative;
    }
    let digits: String = raw.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().map_or(Entry::Garbage, Entry::Index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_as_cuda_reads_them() {
        assert_eq!(entries(""), []);
        assert_eq!(entries("  "), []);
        assert_eq!(
            entries("0, 2x ,GPU-ABC,MIG-1,-1,foo"),
            [
                ("0", Entry::Index(0)),
                ("2x", Entry::Index(2)),
                ("GPU-ABC", Entry::GpuUuid("gpu-abc".into())),
                ("MIG-1", Entry::Mig),
                ("-1", Entry::Negative),
                ("foo", Entry::Garbage),
            ]
        );
        // More digits than an index can hold is no index.
        assert_eq!(entry("99999999999999999999999"), Entry::Garbage);
    }
}
