//! gpu-doctor: finds out why a GPU does not work with an ML framework, and what to install to fix it.
//!
//! The binary (`main.rs`) only wires arguments to [`app`]. Everything that touches the machine goes
//! through [`host::Host`]; [`probe`]s turn what the host shows into facts; [`diagnose`] and
//! [`present`] are pure functions over the [`report::Report`].

pub mod app;
pub mod check;
pub mod cli;
pub mod cli_docs;
pub mod config;
pub mod deep;
pub mod diagnose;
pub mod fill;
pub mod fleet;
pub mod framework;
pub mod guide;
pub mod host;
pub mod manifest;
pub mod outfile;
pub mod parse;
pub mod plan;
pub mod present;
pub mod probe;
pub mod report;
pub mod schema;
pub mod smoke;
pub mod term;
pub mod tui;
pub mod update;
pub mod version;
