//! Faces of the one [`crate::report::Report`]: text for people, JSON for scripts.

pub(crate) mod finding;
pub mod json;
pub mod paint;
pub mod prometheus;

pub mod text;

#[cfg(test)]
pub(crate) mod props;
