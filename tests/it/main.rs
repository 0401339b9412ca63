//! Integration tests: gpu-doctor run on fixture machines (`tests/fixtures/<name>/`), one process
//! per fixture, `--root` pointing at the fixture's tree.

mod check;
mod ci_examples;
mod conventions;
mod deep;
mod findings;
mod fixtures;
mod fleet;
mod guide;
mod k8s;
mod layout;
mod linkmap;
mod plan;
mod prometheus;
mod real;
mod regressions;
mod schema;
mod slurm;
mod smoke;
mod support;
mod tui;
mod update;
