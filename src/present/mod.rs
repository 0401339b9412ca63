//! Faces of the one [`crate::report::Report`]: text for people, JSON for scripts.

pub mod json;
pub mod sanitize;
pub mod text;
