//! gpu-doctor: finds out why a GPU does not work with an ML framework, and what to install to fix it.
//!
//! The binary (`main.rs`) only wires arguments to [`app`]. Everything that touches the machine goes
//! through [`host::Host`]; probes turn what the host shows into facts; diagnosis and presentation
//! are pure functions over the [`report::Report`].

pub mod host;
pub mod manifest;
pub mod parse;
pub mod version;
