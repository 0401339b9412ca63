//! gpu-doctor: finds out why a GPU does not work with an ML framework, and what to install to fix it.
//!
//! The binary (`main.rs`) parses the command line ([`cli`]) and hands it to [`commands`], which
//! resolves the settings, runs one subcommand and returns an [`exit::ExitStatus`]. Everything
//! that touches the machine goes through [`host::Host`]; [`probe`]s turn what the host shows
//! into facts, [`examine`] gathers them into a [`report::Report`], and [`diagnose`] and
//! [`present`] are pure functions over it.

pub mod check;
pub mod choice;
pub mod cli;
pub mod commands;
pub mod config;
pub mod deep;
pub mod diagnose;
pub mod examine;
pub mod exit;
pub mod fill;
pub mod fleet;
pub mod framework;
pub mod guide;
pub mod host;
pub mod manifest;
pub mod outfile;
pub mod output;
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
