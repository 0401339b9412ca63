//! The shape of the code that README's "How it works" promises, checked on the sources so it
//! cannot drift: no cycle between top-level modules; only `cli/`, `commands/` and `main.rs` know
//! clap; nothing imports `commands`; exit statuses are chosen only in `commands/`; the leaf
//! modules import nothing of the crate; the layout list names every top-level module. And every
//! shell script the repository keeps passes shellcheck.

use std::collections::{BTreeMap, BTreeSet};

use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/`, as (path relative to `src/`, text without `//` comments).
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&src(), &mut files);
    files.sort();
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("read");
            let code: String = text
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect::<Vec<_>>()
                .join("\n");
            let name = path
                .strip_prefix(src())
                .expect("under src")
                .display()
                .to_string();
            (name, code)
        })
        .collect()
}

fn offenders(allowed: &[&str], needles: &[&str]) -> Vec<String> {
    sources()
        .into_iter()
        .filter(|(name, _)| !allowed.iter().any(|a| name.starts_with(a)))
        .filter(|(_, code)| needles.iter().any(|n| code.contains(n)))
        .map(|(name, _)| name)
        .collect()
}

#[test]
fn only_the_command_line_layer_knows_clap() {
    let found = offenders(
        &["cli/", "commands/", "main.rs"],
        &["clap::", "use clap", "clap_complete", "clap_mangen"],
    );
    assert!(
        found.is_empty(),
        "clap outside cli/ and commands/: {found:?}"
    );
}

#[test]
fn nothing_imports_the_commands_and_only_they_choose_exit_statuses() {
    let found = offenders(
        &["commands/", "main.rs"],
        &["crate::commands", "gpu_doctor::commands"],
    );
    assert!(found.is_empty(), "modules importing commands: {found:?}");
    let found = offenders(&["commands/", "main.rs", "exit.rs"], &["ExitStatus::"]);
    assert!(
        found.is_empty(),
        "exit statuses chosen outside commands/: {found:?}"
    );
}

#[test]
fn readme_layout_names_every_top_level_module() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    let start = readme.find("Layout of `src/`").expect("layout list");
    let end = readme[start..]
        .find("Beside `src/`")
        .expect("end of layout list")
        + start;
    let layout = &readme[start..end];
    for entry in std::fs::read_dir(src()).expect("src") {
        let path = entry.expect("entry").path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let shown = if path.is_dir() {
            format!("`{name}/`")
        } else if name.ends_with(".rs") {
            format!("`{name}`")
        } else {
            continue;
        };
        assert!(
            layout.contains(&shown),
            "README's layout does not name {shown}"
        );
    }
}

/// The top-level module a file under `src/` belongs to (`None` for the crate roots).
fn top_module(name: &str) -> Option<&str> {
    let first = name.split('/').next()?;
    match first {
        "main.rs" | "lib.rs" => None,
        file => Some(file.strip_suffix(".rs").unwrap_or(file)),
    }
}

/// Which top-level modules each top-level module names through `crate::`.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, code) in sources() {
        let Some(from) = top_module(&name) else {
            continue;
        };
        let uses = graph.entry(from.to_string()).or_default();
        for (i, _) in code.match_indices("crate::") {
            let start = i + "crate::".len();
            let to: String = code[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !to.is_empty() && to != from && !code[..i].ends_with("gpu_doctor::") {
                uses.insert(to);
            }
        }
    }
    graph
}

#[test]
fn top_level_modules_import_each_other_without_a_cycle() {
    let graph = module_graph();
    // Depth-first search; a module met again while still on the path closes a cycle.
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| *n == node) {
            let mut cycle: Vec<String> = path[at..].iter().map(|s| s.to_string()).collect();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if !done.insert(node) {
            return None;
        }
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        let cycle = visit(node, &graph, &mut Vec::new(), &mut done);
        assert!(
            cycle.is_none(),
            "import cycle: {}",
            cycle.unwrap_or_default().join(" -> ")
        );
    }
    for leaf in ["exit", "choice", "sanitize", "date"] {
        let uses = graph.get(leaf).cloned().unwrap_or_default();
        assert!(uses.is_empty(), "{leaf} is a leaf but imports {uses:?}");
    }
}

/// The shell scripts kept in the repository: `.ci/run`, `scripts/*.sh`, and the scripts that
/// recorded the real machines under `tests/fixtures/real/`.
fn shell_scripts() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = vec![root.join(".ci/run")];
    let mut dirs = vec![root.join("scripts"), root.join("tests/fixtures/real")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a folder of the repository") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "sh") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_shell_script_passes_shellcheck() {
    let scripts = shell_scripts();
    assert!(
        scripts.len() >= 13,
        "the scripts were not found: {scripts:?}"
    );
    let Ok(out) = std::process::Command::new("shellcheck")
        .args(&scripts)
        .output()
    else {
        assert!(
            std::env::var_os("CI").is_none(),
            "shellcheck is not installed, and CI must run it"
        );
        eprintln!("note: shellcheck is not installed; the shell scripts were not linted");
        return;
    };
    assert!(
        out.status.success(),
        "shellcheck:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
