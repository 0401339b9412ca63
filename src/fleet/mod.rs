//! `gpu-doctor report merge`: many nodes' reports (`doctor --json`, `smoke --json`) into one
//! fleet summary. [`load`] reads the files and checks their schema version; [`summary`] groups
//! the nodes by stack and finds the odd ones out and the nodes that need attention;
//! [`spread`] compares smoke throughput per GPU model; [`interconnect`] the GPU wiring; [`render`] prints it. Only [`load`]
//! touches the filesystem, and only to read; `crate::commands::report` says what was skipped
//! and writes the output.

pub(crate) mod capped;
pub(crate) mod gpus;
pub(crate) mod header;
pub(crate) mod hostlist;
pub(crate) mod interconnect;
pub(crate) mod load;
pub(crate) mod render;
pub(crate) mod spread;
pub(crate) mod summary;
pub(crate) mod view;
