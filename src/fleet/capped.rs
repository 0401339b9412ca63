//! Lists of a node's report read up to a cap: the rest of a list is parsed past, not kept. A
//! report's JSON can describe far more than it costs on disk (`{}` is a GPU, three bytes, that
//! takes a hundred in memory), so a merge is bounded by what it keeps, not only by file size.
//! Pure deserialisation; how many entries were passed over is counted per thread, for
//! [`super::load`] to say.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserialize, Deserializer, IgnoredAny, SeqAccess, Visitor};

/// The most GPUs (and smoke devices) kept of one report: what gpu-doctor itself reports at most
/// (`host::gpu::MAX_DEVICES`).
pub(crate) const GPUS: usize = 1024;
/// The most entries kept of any other list of one report (findings, environments, toolkits,
/// library copies, an environment's frameworks).
pub(crate) const OTHER: usize = 4096;

thread_local! {
    static PASSED_OVER: Cell<u64> = const { Cell::new(0) };
}

/// Entries passed over on this thread since the last call (and resets the count).
pub(crate) fn take_passed_over() -> u64 {
    PASSED_OVER.with(|c| c.replace(0))
}

struct Capped<T, const N: usize>(PhantomData<T>);

impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for Capped<T, N> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut out = Vec::new();
        while out.len() < N {
            match seq.next_element()? {
                Some(x) => out.push(x),
                None => return Ok(out),
            }
        }
        let mut over = 0u64;
        while seq.next_element::<IgnoredAny>()?.is_some() {
            over += 1;
        }
        PASSED_OVER.with(|c| c.set(c.get().saturating_add(over)));
        Ok(out)
    }
}

/// At most [`GPUS`] entries of a list.
pub(crate) fn gpus<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    d.deserialize_seq(Capped::<T, GPUS>(PhantomData))
}

/// At most [`OTHER`] entries of a list.
pub(crate) fn other<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    d.deserialize_seq(Capped::<T, OTHER>(PhantomData))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize)]
    struct Gpus {
        #[serde(deserialize_with = "gpus")]
        gpus: Vec<serde_json::Value>,
    }

    #[test]
    fn entries_past_the_cap_are_parsed_and_counted_not_kept() {
        let _ = take_passed_over();
        let text = format!("{{\"gpus\": [{}]}}", vec!["{}"; GPUS + 5].join(","));
        let g: Gpus = serde_json::from_str(&text).unwrap();
        assert_eq!(g.gpus.len(), GPUS);
        assert_eq!(take_passed_over(), 5);
        assert_eq!(take_passed_over(), 0);
        // Entries past the cap are still checked as JSON, and a list is still a list.
        assert!(serde_json::from_str::<Gpus>(&text.replace("{}]", "{]")).is_err());
        assert!(serde_json::from_str::<Gpus>("{\"gpus\": 7}").is_err());
    }
}
