//! The compatibility graph of ARCHITECTURE.md, walked: every edge direction listed there has a
//! registered finding, a table that exists (with the section it names), and fixture machines
//! that produce that finding.

use std::path::Path;

use crate::support::{doctor, doctor_all, finding_ids, fixtures_dir};

/// One row of the edge table.
#[derive(Debug)]
struct Edge {
    line: String,
    kind: String,
    finding: String,
    table: Vec<String>,
    fixtures: Vec<String>,
}

/// The backticked words of a cell, in order.
fn ticked(cell: &str) -> Vec<String> {
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The rows between the `graph:begin` and `graph:end` markers, past the header.
fn edges(doc: &str) -> Vec<Edge> {
    let start = doc
        .find("<!-- graph:begin -->")
        .expect("graph:begin marker");
    let end = doc.find("<!-- graph:end -->").expect("graph:end marker");
    doc[start..end]
        .lines()
        .filter(|l| l.starts_with('|') && !l.starts_with("|---") && !l.starts_with("| edge"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            // "", edge, direction, kind, finding, table, fixtures, ""
            Edge {
                line: l.to_string(),
                kind: cells.get(3).copied().unwrap_or("").to_string(),
                finding: ticked(cells.get(4).copied().unwrap_or(""))
                    .into_iter()
                    .next()
                    .unwrap_or_default(),
                table: ticked(cells.get(5).copied().unwrap_or("")),
                fixtures: ticked(cells.get(6).copied().unwrap_or("")),
            }
        })
        .collect()
}

/// The body of `fn name` in a test file: from its signature to the next line that is a lone
/// closing brace.
fn fn_body<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let start = text.find(&format!("fn {name}("))?;
    let end = text[start..]
        .find("\n}\n")
        .map_or(text.len(), |e| start + e);
    Some(&text[start..end])
}

/// What is wrong with one edge, apart from its fixture machines' findings (which need runs).
fn static_problems(edge: &Edge, root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let at = &edge.line;
    if !["range", "presence"].contains(&edge.kind.as_str()) {
        out.push(format!(
            "kind {:?} is neither range nor presence: {at}",
            edge.kind
        ));
    }
    if gpu_doctor::diagnose::ids::kind(&edge.finding).is_none() {
        out.push(format!(
            "finding {:?} is not registered: {at}",
            edge.finding
        ));
    }
    match edge.table.first() {
        None => out.push(format!("no table: {at}")),
        Some(path) => match std::fs::read_to_string(root.join(path)) {
            Err(_) => out.push(format!("table {path} does not exist: {at}")),
            Ok(text) => {
                if let Some(section) = edge.table.get(1)
                    && !text.contains(section.as_str())
                {
                    out.push(format!("table {path} has no {section}: {at}"));
                }
                if path.starts_with("manifests/") && !text.contains("source") {
                    out.push(format!("table {path} names no source: {at}"));
                }
                if edge.kind == "range"
                    && !path.starts_with("manifests/")
                    && !path.starts_with("src/")
                {
                    out.push(format!("a range edge needs a manifest or rule file: {at}"));
                }
            }
        },
    }
    if edge.fixtures.is_empty() {
        out.push(format!("no fixture machine: {at}"));
    }
    for fx in &edge.fixtures {
        if let Some((file, name)) = fx.split_once("::") {
            let text = std::fs::read_to_string(root.join(file)).unwrap_or_default();
            match fn_body(&text, name) {
                None => out.push(format!("no test {fx}: {at}")),
                Some(body) if !body.contains(&format!("\"{}\"", edge.finding)) => {
                    out.push(format!("{fx} does not check {}: {at}", edge.finding));
                }
                Some(_) => {}
            }
        } else if !fixtures_dir().join(fx).join("root").is_dir() {
            out.push(format!("no fixture machine {fx}: {at}"));
        }
    }
    out
}

fn architecture() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join("ARCHITECTURE.md")).expect("ARCHITECTURE.md")
}

#[test]
fn every_edge_has_a_rule_a_sourced_table_and_fixture_machines_that_show_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let edges = edges(&architecture());
    assert!(
        edges.len() >= 40,
        "the edge table lost rows: {}",
        edges.len()
    );
    let mut problems: Vec<String> = edges
        .iter()
        .flat_map(|e| static_problems(e, root))
        .collect();
    let machines: Vec<String> = edges
        .iter()
        .flat_map(|e| e.fixtures.iter())
        .filter(|f| !f.contains("::") && fixtures_dir().join(f).join("root").is_dir())
        .cloned()
        .collect();
    doctor_all(&machines);
    for edge in &edges {
        for fx in edge.fixtures.iter().filter(|f| machines.contains(f)) {
            let ids = finding_ids(&doctor(fx));
            if !ids.contains(&edge.finding) {
                problems.push(format!(
                    "{fx} does not produce {} (it produces {ids:?})",
                    edge.finding
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The new edges of issue 36 are in the table, each with the fixtures modelled on its reports.
#[test]
fn the_module_and_container_edges_are_listed() {
    let edges = edges(&architecture());
    for (finding, fixture) in [
        ("driver-too-new-for-gpu", "driver-595-on-pascal-nixos"),
        ("module-flavour-unsupported", "open-module-on-tesla-p4"),
        (
            "module-flavour-unsupported",
            "proprietary-module-on-rtx5090",
        ),
        (
            "container-lost-gpu-access",
            "container-lost-gpu-mixed-host-one-given",
        ),
        (
            "extension-cuda-mismatch",
            "onnxruntime-gpu-cu11-in-torch-cu121",
        ),
        (
            "jax-plugin-version-mismatch",
            "jax-plugin-092-on-jaxlib-0901",
        ),
        ("triton-gpu-too-old", "triton-p100-torch-compile"),
        (
            "triton-ptxas-too-old-for-gpu",
            "rtx5090-torch-nightly-cu128-triton-320",
        ),
        (
            "triton-ptxas-too-old-for-gpu",
            "dgx-spark-gb10-pytorch-triton-350",
        ),
        ("cudnn-gpu-unsupported", "cudnn-917-on-v100-torch-210"),
        (
            "cuda-library-too-old",
            "jax-cusparse-120-on-ld-library-path",
        ),
        ("driver-too-old-for-image", "image-cuda121-a100-driver520"),
        (
            "driver-too-old-for-image",
            "image-cuda128-wsl-docker-driver551",
        ),
        ("host-compiler-too-new-for-nvcc", "nvcc132-gcc16-fedora44"),
    ] {
        assert!(
            edges
                .iter()
                .any(|e| e.finding == finding && e.fixtures.iter().any(|f| f == fixture)),
            "{finding} with {fixture} is not in ARCHITECTURE.md's graph"
        );
    }
}

/// The walker itself: a row with an unregistered finding, a missing table section and a
/// fixture that does not exist is refused on each count.
#[test]
fn the_walker_refuses_a_row_without_rule_table_or_fixture() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = "<!-- graph:begin -->\n| edge | direction | kind | finding | table | fixtures |\n|---|\n\
               | A needs B | too new | range | `no-such-finding` | `manifests/cuda.toml` `[[no_such_section]]` | `no-such-machine` |\n\
               | A needs C | too old | range | `no-driver` | `manifests/missing.toml` | |\n\
               | A needs D | too old | range | `no-driver` | `manifests/cuda.toml` | `tests/it/graph.rs::no_such_test` |\n\
               <!-- graph:end -->";
    let rows = edges(doc);
    assert_eq!(rows.len(), 3);
    let first = static_problems(&rows[0], root);
    assert!(
        first.iter().any(|p| p.contains("not registered")),
        "{first:?}"
    );
    assert!(
        first
            .iter()
            .any(|p| p.contains("has no [[no_such_section]]")),
        "{first:?}"
    );
    assert!(
        first
            .iter()
            .any(|p| p.contains("no fixture machine no-such-machine")),
        "{first:?}"
    );
    let second = static_problems(&rows[1], root);
    assert!(
        second.iter().any(|p| p.contains("does not exist")),
        "{second:?}"
    );
    assert!(
        second
            .iter()
            .any(|p| p == &format!("no fixture machine: {}", rows[1].line)),
        "{second:?}"
    );
    let third = static_problems(&rows[2], root);
    assert!(
        third
            .iter()
            .any(|p| p.contains("no test tests/it/graph.rs::no_such_test")),
        "{third:?}"
    );
}

/// manifests/extension-arch.toml is what scripts/gen-extension-arch.py makes of the facts it read
/// from flash-attention's release tags (vendored in scripts/extension-arch-data/), offline.
#[test]
fn the_extension_arch_generator_reproduces_the_checked_in_table() {
    crate::support::generator_reproduces_its_table("gen-extension-arch.py");
}

/// manifests/cuda.toml's `[[host_compiler]]` block is what scripts/gen-host-compiler.py makes of
/// the GCC checks it read from NVIDIA's nvcc wheels (vendored in scripts/host-compiler-data/).
#[test]
fn the_host_compiler_generator_reproduces_the_checked_in_block() {
    crate::support::generator_reproduces_its_table("gen-host-compiler.py");
}

/// manifests/cuda.toml's `[[forward_compat_host]]` block is what scripts/gen-forward-compat-host.py
/// makes of NVIDIA's image requirements, ComputeCanada's table and the tested refusals it read
/// (vendored in scripts/forward-compat-data/).
#[test]
fn the_forward_compat_host_generator_reproduces_the_checked_in_block() {
    crate::support::generator_reproduces_its_table("gen-forward-compat-host.py");
}

/// install.toml's `[[cdi_engine]]` block is what scripts/gen-cdi-engines.py makes of the engines'
/// go.mod files and the CDI library's versions (vendored in scripts/cdi-engines-data/).
#[test]
fn the_cdi_engine_generator_reproduces_the_checked_in_block() {
    crate::support::generator_reproduces_its_table("gen-cdi-engines.py");
}

/// The sweep the issue is judged by, over every fixture with `expected-findings.txt`: the root
/// finding (the report's first: root causes, most severe first) is one the fixture's README
/// names as the maintainers' cause, and a healthy fixture (an empty file) has no error or
/// warning. `cargo test --test it graph::root -- --nocapture` prints the figure.
#[test]
fn root_findings_name_the_maintainers_cause_on_every_fixture() {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("expected-findings.txt").is_file())
        .filter_map(|p| p.file_name()?.to_str().map(str::to_string))
        .collect();
    names.sort();
    let mut misses = Vec::new();
    let mut known_misses = Vec::new();
    for (name, report) in doctor_all(&names) {
        let text =
            std::fs::read_to_string(fixtures_dir().join(&name).join("expected-findings.txt"))
                .expect("readable");
        let expected: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        let findings = report["findings"].as_array().cloned().unwrap_or_default();
        let ok = if expected.is_empty() {
            !findings
                .iter()
                .any(|f| matches!(f["severity"].as_str(), Some("error" | "warning")))
        } else {
            findings
                .first()
                .and_then(|f| f["id"].as_str())
                .is_some_and(|id| expected.contains(&id))
        };
        // A held-out fixture whose miss needs a fact no probe reads yet says so in
        // `known-miss.txt`: it counts as a miss in the figure but does not fail the test, and
        // the day it passes the file must go.
        // A machine whose cause no file shows (expected-findings.txt empty beside a
        // `known-miss.txt`) must stay quiet, blaming nothing else: quiet, it is a known miss;
        // with an error or warning, a plain one.
        let known = std::fs::read_to_string(fixtures_dir().join(&name).join("known-miss.txt")).ok();
        let ok = ok && !(expected.is_empty() && known.is_some());
        let quiet = !findings
            .iter()
            .any(|f| matches!(f["severity"].as_str(), Some("error" | "warning")));
        let known = known.filter(|_| !expected.is_empty() || quiet);
        match (ok, known) {
            (false, Some(why)) => known_misses.push(format!("{name}: {}", why.trim())),
            (false, None) => misses.push(format!("{name}: {:?}", finding_ids(&report))),
            (true, Some(_)) => misses.push(format!("{name} passes: remove its known-miss.txt")),
            (true, None) => {}
        }
    }
    eprintln!(
        "{} of {} fixtures: the root finding is the maintainers' cause (healthy: no error or warning)",
        names.len() - misses.len() - known_misses.len(),
        names.len()
    );
    for k in &known_misses {
        eprintln!("known miss: {k}");
    }
    assert!(misses.is_empty(), "{}", misses.join("\n"));
}

/// frameworks.toml's `[[onnxruntime_cuda]]` block is what scripts/gen-onnxruntime-cuda.py makes
/// of the provider facts it read from the onnxruntime-gpu wheels on PyPI (vendored in
/// scripts/onnxruntime-data/).
#[test]
fn the_onnxruntime_cuda_generator_reproduces_the_checked_in_block() {
    crate::support::generator_reproduces_its_table("gen-onnxruntime-cuda.py");
}

/// frameworks.toml's `[[triton_ptxas]]` block is what scripts/gen-triton-ptxas.py makes of the
/// ptxas facts it read from the Triton wheels on PyPI (vendored in scripts/triton-data/).
#[test]
fn the_triton_ptxas_generator_reproduces_the_checked_in_block() {
    crate::support::generator_reproduces_its_table("gen-triton-ptxas.py");
}

/// frameworks.toml's `[[numba_cuda]]` block is what scripts/gen-numba-cuda.py makes of the facts
/// it read from numba's and numba-cuda's tags (vendored in scripts/numba-data/).
#[test]
fn the_numba_cuda_generator_reproduces_the_checked_in_block() {
    crate::support::generator_reproduces_its_table("gen-numba-cuda.py");
}

/// frameworks.toml's `[[nccl_arch]]` is what scripts/gen-nccl-arch.py makes of the facts it read
/// from the NCCL pip wheels' fatbins (vendored in scripts/nccl-arch-data/wheels.json).
#[test]
fn nccl_arch_table_reproduces_from_its_generator() {
    crate::support::generator_reproduces_its_table("gen-nccl-arch.py");
}
