//! gpu-doctor: finds out why a GPU does not work with an ML framework, and what to install to fix it.
//!
//! The binary (`main.rs`) calls [`commands::main`], which parses the command line ([`cli`]),
//! resolves the settings, runs one subcommand and exits with its [`exit::ExitStatus`]. Everything
//! that touches the machine goes through [`host::Host`]; [`probe`]s turn what the host shows
//! into facts, [`examine`] gathers them into a [`report::Report`], and [`diagnose`] and
//! [`present`] are pure functions over it.

// gpu-doctor is a binary: its library exists for `main.rs` and the integration tests, and its
// documentation is for developers, built with `--document-private-items` (see .ci/run), where
// links between crate-private modules resolve.
#![allow(rustdoc::private_intra_doc_links)]
// Tests build and read their own fixtures and choose their own manifest sets: clippy.toml's
// house rules (only `host/` reads files, only the settings pass picks the set, only the output
// modules print) are for the code a run executes.
#![cfg_attr(test, allow(clippy::disallowed_methods, clippy::disallowed_macros))]

pub(crate) mod check;
pub(crate) mod choice;

pub(crate) mod cli;
pub mod commands;
pub(crate) mod config;
pub mod date;
pub(crate) mod deep;
pub mod diagnose;
pub(crate) mod examine;
pub(crate) mod exit;
pub(crate) mod explain;
pub mod fill;
pub(crate) mod fleet;
pub(crate) mod framework;
pub(crate) mod guide;
pub mod host;
pub mod manifest;
pub(crate) mod outfile;
pub(crate) mod output;
pub mod parse;
pub mod plan;
pub mod present;
pub(crate) mod probe;
pub mod report;
pub(crate) mod sanitize;
pub(crate) mod schema;
pub(crate) mod smoke;
pub(crate) mod term;
pub mod tui;
pub mod update;
pub mod version;
