//! A table a manifest set holds whose rows are parsed on first use: the built-in `gpu-ids.toml`,
//! `amd-gpu-ids.toml` and `errors.toml` are large or rarely needed, and most runs (a machine
//! with no GPU of that vendor, `doctor` without `explain`) never read their rows. Only the
//! `[meta]` before the rows is read at once, for the set's identity. A set loaded from text
//! ([`super::from_sources`]) gives its tables parsed already, so a broken downloaded file is
//! refused with its line; the built-in text is tested.

use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::Meta;

/// What a table parsed on first use needs to say about itself. (Public for the bound of
/// [`Deferred`]'s methods; the module is not, so nothing outside `manifest` can name it.)
pub trait Rows: DeserializeOwned {
    /// The line that opens the rows (`\n[sources]`): the text before it is the `[meta]` read
    /// at once.
    const ROWS_START: &'static str;

    /// The table with no rows: what a built-in text that does not parse (a build the tests
    /// would have failed) gives, so look-ups find nothing and nothing breaks.
    fn empty(meta: Meta) -> Self;
}

/// A table as a set holds it: its `[meta]` at once, its rows parsed on first use (the
/// built-in file) or given parsed (a set loaded from text). Reads as the table (`Deref`).
#[derive(Debug, Clone)]
pub struct Deferred<T> {
    /// The file's `[meta]`, for the set's identity.
    pub meta: Meta,
    /// The built-in text, parsed by [`Deferred::table`] on first use; `None` once given parsed.
    text: Option<&'static str>,
    parsed: OnceLock<T>,
}

impl<T: Rows> Deferred<T> {
    /// A table parsed already, with its `[meta]`.
    pub(super) fn parsed(meta: Meta, table: T) -> Deferred<T> {
        let parsed = OnceLock::new();
        let _ = parsed.set(table);
        Deferred {
            meta,
            text: None,
            parsed,
        }
    }

    /// The built-in file: only its `[meta]` (the text before [`Rows::ROWS_START`]) is read
    /// now; `None` when that does not parse.
    pub(super) fn lazy(text: &'static str) -> Option<Deferred<T>> {
        #[derive(Deserialize)]
        struct Head {
            meta: Meta,
        }
        let head = text.find(T::ROWS_START).and_then(|end| text.get(..end))?;
        let meta = toml::from_str::<Head>(head).ok()?.meta;
        Some(Deferred {
            meta,
            text: Some(text),
            parsed: OnceLock::new(),
        })
    }

    /// The table, parsed on first call; [`Rows::empty`] when the built-in text does not parse.
    #[must_use]
    pub fn table(&self) -> &T {
        self.parsed.get_or_init(|| {
            self.text
                .and_then(|text| toml::from_str::<T>(text).ok())
                .unwrap_or_else(|| T::empty(self.meta.clone()))
        })
    }
}

impl<T: Rows> std::ops::Deref for Deferred<T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.table()
    }
}

impl<T: Rows + Serialize> Serialize for Deferred<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.table().serialize(serializer)
    }
}
