//! The `Dockerfile` and `.dockerignore`, checked as far as a machine without a container
//! daemon can: every instruction parses, each `COPY` source exists in the build context and is
//! not ignored by it, the build stage builds the release binary that the final stage copies,
//! the final base is a minimal glibc system with a shell (the manifests' pods run a loop), the
//! binary needs no library beyond glibc and libgcc_s, and the image's ENTRYPOINT + CMD run for
//! real on the node fixture with `/host` pointed at its root.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::host_root::{NODE, on_node};
use crate::support::fixture_dir;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One instruction: its keyword (upper case) and the rest, continuation lines joined.
#[derive(Debug)]
struct Instruction {
    keyword: String,
    args: String,
}

/// The instructions of a Dockerfile: comments and blank lines dropped, `\` continuations
/// joined; panics on a line that starts with no known instruction.
fn instructions(text: &str) -> Vec<Instruction> {
    const KNOWN: [&str; 18] = [
        "FROM",
        "RUN",
        "CMD",
        "LABEL",
        "EXPOSE",
        "ENV",
        "ADD",
        "COPY",
        "ENTRYPOINT",
        "VOLUME",
        "USER",
        "WORKDIR",
        "ARG",
        "ONBUILD",
        "STOPSIGNAL",
        "HEALTHCHECK",
        "SHELL",
        "MAINTAINER",
    ];
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if pending.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if let Some(head) = trimmed.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        let full = std::mem::take(&mut pending);
        let (keyword, args) = full.split_once(char::is_whitespace).unwrap_or((&full, ""));
        let keyword = keyword.to_ascii_uppercase();
        assert!(
            KNOWN.contains(&keyword.as_str()),
            "not an instruction: {full}"
        );
        out.push(Instruction {
            keyword,
            args: args.trim().to_string(),
        });
    }
    assert!(pending.is_empty(), "a continuation runs off the end");
    out
}

/// An exec-form array (`["a", "b"]`).
fn exec_form(args: &str) -> Vec<String> {
    serde_json::from_str(args).unwrap_or_else(|e| panic!("not exec form ({e}): {args}"))
}

/// Whether `.dockerignore` leaves `path` (relative to the context) out; its patterns here
/// are plain folder names, which is all this check reads.
fn ignored(patterns: &[String], path: &str) -> bool {
    patterns.iter().any(|p| {
        let p = p.trim_end_matches('/');
        path == p || path.starts_with(&format!("{p}/"))
    })
}

#[test]
fn the_dockerfile_builds_the_release_binary_onto_a_small_base() {
    let text = std::fs::read_to_string(repo().join("Dockerfile")).expect("Dockerfile at the root");
    let ignore: Vec<String> = std::fs::read_to_string(repo().join(".dockerignore"))
        .expect(".dockerignore")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    assert!(
        ignored(&ignore, "target/release/gpu-doctor"),
        "target/ must stay out of the context"
    );
    let all = instructions(&text);
    let stages: Vec<&Instruction> = all.iter().filter(|i| i.keyword == "FROM").collect();
    assert_eq!(stages.len(), 2, "a build stage and the image");
    assert!(
        stages[0].args.starts_with("rust:") && stages[0].args.ends_with(" AS build"),
        "{:?}",
        stages[0]
    );
    let base = stages[1].args.as_str();
    assert!(
        base.starts_with("debian:") && base.ends_with("-slim"),
        "a minimal glibc base with /bin/sh: {base}"
    );
    // The two stages share a Debian release, so the binary's glibc is the base's.
    let codename = |image: &str| {
        ["bullseye", "bookworm", "trixie", "forky"]
            .into_iter()
            .find(|c| image.contains(c))
    };
    assert!(codename(base).is_some(), "a named Debian release: {base}");
    assert_eq!(codename(&stages[0].args), codename(base));

    let mut final_stage = false;
    let mut built = false;
    let mut copied_binary = false;
    for i in &all {
        match i.keyword.as_str() {
            "FROM" => final_stage = i.args == base,
            "RUN" if i.args.contains("cargo build --release --locked") => built = true,
            "COPY" if i.args.starts_with("--from=build ") => {
                let words: Vec<&str> = i.args.split_whitespace().collect();
                assert_eq!(words[1], "/src/target/release/gpu-doctor");
                assert_eq!(words[2], "/usr/local/bin/gpu-doctor");
                copied_binary = final_stage;
            }
            "COPY" | "ADD" => {
                assert_eq!(
                    i.keyword, "COPY",
                    "ADD fetches and unpacks; COPY is all we need"
                );
                let words: Vec<&str> = i.args.split_whitespace().collect();
                let (sources, _dest) = words.split_at(words.len() - 1);
                assert!(!sources.is_empty(), "{i:?}");
                for source in sources {
                    assert!(
                        repo().join(source).exists(),
                        "COPY {source}: not in the build context"
                    );
                    assert!(
                        !ignored(&ignore, source.trim_end_matches('/')),
                        "COPY {source}: left out by .dockerignore"
                    );
                }
            }
            _ => {}
        }
    }
    assert!(built, "the build stage runs cargo build --release --locked");
    assert!(copied_binary, "the image copies the built binary");
    // What the release binary embeds is copied (manifests/*.toml, src/).
    for needed in ["Cargo.toml", "Cargo.lock", "src", "manifests"] {
        assert!(
            all.iter().any(|i| i.keyword == "COPY"
                && i.args
                    .split_whitespace()
                    .any(|w| w == needed || w == format!("{needed}/"))),
            "{needed} is not copied into the build stage"
        );
    }
    let user = all.iter().rfind(|i| i.keyword == "USER").expect("USER");
    assert!(
        !user.args.starts_with('0') && !user.args.starts_with("root"),
        "not root by default: {}",
        user.args
    );
}

/// The binary the image carries needs only what every glibc base has (the driver libraries
/// are opened at run time, from the container toolkit's mounts).
#[test]
fn the_binary_links_only_glibc_and_libgcc() {
    let Ok(out) = Command::new("ldd")
        .arg(env!("CARGO_BIN_EXE_gpu-doctor"))
        .output()
    else {
        eprintln!("no ldd here; skipped");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let allowed = [
        "linux-vdso.so",
        "libc.so.6",
        "libm.so.6",
        "libgcc_s.so.1",
        "libpthread.so.0",
        "libdl.so.2",
        "librt.so.1",
        "ld-linux-x86-64.so.2",
        "ld-linux-aarch64.so.1",
    ];
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let name = line.split_whitespace().next().unwrap_or_default();
        let name = Path::new(name)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(name);
        assert!(
            allowed.iter().any(|a| name.starts_with(a)),
            "the image's base may lack {line}"
        );
        assert!(!line.contains("not found"), "{line}");
    }
}

/// `docker run IMAGE` runs ENTRYPOINT + CMD: the node at /host, here the node fixture.
#[test]
fn the_images_entrypoint_and_cmd_run_on_a_node() {
    let text = std::fs::read_to_string(repo().join("Dockerfile")).expect("Dockerfile");
    let all = instructions(&text);
    let last = |k: &str| {
        all.iter()
            .rfind(|i| i.keyword == k)
            .map(|i| exec_form(&i.args))
            .unwrap_or_else(|| panic!("no {k}"))
    };
    let entrypoint = last("ENTRYPOINT");
    assert_eq!(entrypoint, ["/usr/local/bin/gpu-doctor"]);
    let mut cmd = last("CMD");
    let at = cmd
        .iter()
        .position(|w| w == "--host-root")
        .expect("CMD examines the node");
    assert_eq!(cmd[at + 1], "/host");
    cmd.drain(at..at + 2);
    let root = fixture_dir(NODE).join("root");
    let tmp = crate::support::tempdir();
    let out = on_node(&root, &cmd, tmp.path());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("/home/ubuntu/venv")
            && out.stdout.contains("/home/alice/miniconda3/envs/ml"),
        "the node's report: {}",
        out.stdout
    );
}
