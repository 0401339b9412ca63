//! `gpu-doctor report merge`: many nodes' reports (`doctor --json`, `smoke --json`) into one
//! fleet summary. [`load`] reads the files and checks their schema version; [`summary`] groups
//! the nodes by stack and finds the odd ones out and the nodes that need attention;
//! [`spread`] compares smoke throughput per GPU model; [`render`] prints it. Only [`load`]
//! touches the filesystem, and only to read; `crate::commands::report` says what was skipped
//! and writes the output.

pub mod gpus;
pub mod hostlist;
pub mod load;
pub mod render;
pub mod spread;
pub mod summary;
pub mod view;
