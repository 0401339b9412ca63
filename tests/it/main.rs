//! Integration tests: gpu-doctor run on fixture machines (`tests/fixtures/<name>/`), one process
//! per fixture, `--root` pointing at the fixture's tree.

// The whole crate is test code: a failed step should stop the test where it failed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// One test binary whose modules share helpers with `pub`: nothing here is reached from outside.
#![allow(unreachable_pub)]
// Tests build and read their own fixtures and choose their own manifest sets: clippy.toml's
// house rules are for the code a run executes.
#![allow(clippy::disallowed_methods, clippy::disallowed_macros)]

mod amd;
mod arm;
mod bounded;
mod build_facts;
mod check;
mod ci_examples;
mod conventions;
mod deep;
mod docker;
mod doubling;
mod explain;
mod findings;
mod fix_target;
mod fixtures;
mod fleet;
mod gpu_ids;
mod graph;
mod guide;
mod hip_code;
mod host_root;
mod hostile;
mod image_require;
mod k8s;
mod layout;
mod leads;
mod library_edges;
mod linkmap;
mod mutants;
mod packaging;
mod peak_memory;
mod plan;
mod plan_sweep;
mod prometheus;
mod real;
mod regressions;
mod schema;
mod shape;
mod slurm;
mod smoke;
mod support;
mod symbols;
mod topology;
mod tui;
mod update;
