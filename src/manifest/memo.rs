//! What a table's look-up by GPU name needs, kept per table: each row's name split into words
//! once (not once per row per GPU), and the rows each reported name matched. A machine listing
//! 50,000 GPUs of one model then costs one walk of the table, not 50,000; a hostile listing of
//! 50,000 different names costs one cheap walk each, and the memory of matches stays bounded.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// How many distinct names one table remembers; past it, look-ups are made again each time.
const MAX_NAMES: usize = 4096;

/// Longer names (no real GPU's) are looked up without being remembered.
const MAX_NAME_LEN: usize = 256;

#[derive(Default)]
pub(crate) struct NameMemo {
    words: OnceLock<Vec<Vec<String>>>,
    found: Mutex<HashMap<String, Vec<usize>>>,
}

impl NameMemo {
    /// Each row's words, split on first use.
    pub(crate) fn words(&self, split: impl FnOnce() -> Vec<Vec<String>>) -> &[Vec<String>] {
        self.words.get_or_init(split)
    }

    /// The rows `reported` matched, remembered (up to [`MAX_NAMES`] names).
    pub(crate) fn rows(&self, reported: &str, find: impl FnOnce() -> Vec<usize>) -> Vec<usize> {
        if reported.len() > MAX_NAME_LEN {
            return find();
        }
        if let Ok(found) = self.found.lock()
            && let Some(rows) = found.get(reported)
        {
            return rows.clone();
        }
        let rows = find();
        if let Ok(mut found) = self.found.lock()
            && found.len() < MAX_NAMES
        {
            found.insert(reported.to_string(), rows.clone());
        }
        rows
    }
}

/// A copy starts with an empty memory (what it remembers is derived from the rows).
impl Clone for NameMemo {
    fn clone(&self) -> NameMemo {
        NameMemo::default()
    }
}

impl std::fmt::Debug for NameMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NameMemo")
    }
}
