//! `scripts/slurm-fleet.sh` in a simulated 4-node allocation: a stand-in `srun` runs the
//! task once per node (node01-node04, one after another) and a stand-in `scontrol` lists
//! the nodes. `--bin` is a wrapper that runs the real gpu-doctor on a copy of a fixture
//! machine picked by `SLURMD_NODENAME` (each copy with its node's host name), so the nodes
//! differ: node03 on driver 550 is the odd one out, node04 has a driver/library mismatch.

use std::fmt::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::{fixture_dir, fixture_env};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/slurm-fleet.sh")
}

/// Each node's fixture machine.
const NODES: [(&str, &str); 4] = [
    ("node01", "h200"),
    ("node02", "h200"),
    ("node03", "healthy-torch-cu124-driver-550"),
    ("node04", "driver-library-mismatch"),
];

const FAKE_SRUN: &str = r#"#!/usr/bin/env bash
# Stand-in srun: logs its arguments, skips its options, runs the command once per node.
printf '%s\n' "$*" >>"$FAKE_SLURM_LOG"
while [ "$#" -gt 0 ]; do
  case "$1" in
    --*) shift ;;
    *) break ;;
  esac
done
rc=0
i=0
for node in $FAKE_NODES; do
  SLURMD_NODENAME=$node SLURM_PROCID=$i SLURM_NODEID=$i SLURM_LOCALID=0 "$@"
  r=$?
  [ "$r" -gt "$rc" ] && rc=$r
  i=$((i + 1))
done
exit "$rc"
"#;

const FAKE_SCONTROL: &str = r#"#!/usr/bin/env bash
# Stand-in scontrol: `show hostnames LIST` prints the fake allocation's nodes.
[ "$1" = show ] && [ "$2" = hostnames ] && [ "$3" = "node[01-04]" ] || exit 1
printf '%s\n' $FAKE_NODES
"#;

/// Single-quoted for the shell.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn executable(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write a stand-in");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A simulated cluster: stand-ins on PATH, per-node machine copies and the `--bin` wrapper,
/// all under a folder whose name has a space.
struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
}

impl Cluster {
    fn new() -> Cluster {
        let dir = tempfile::Builder::new()
            .prefix("slurm fleet ")
            .tempdir_in(crate::support::scratch_root())
            .expect("temp dir");
        let fake = dir.path().join("fake bin");
        std::fs::create_dir_all(&fake).expect("dir");
        executable(&fake.join("srun"), FAKE_SRUN);
        executable(&fake.join("scontrol"), FAKE_SCONTROL);
        let mut cases = String::new();
        for (node, fixture) in NODES {
            let root = dir.path().join("machines").join(node);
            std::fs::create_dir_all(root.parent().expect("parent")).expect("dir");
            let copied = Command::new("cp")
                .arg("-a")
                .arg(fixture_dir(fixture).join("root"))
                .arg(&root)
                .status()
                .expect("cp");
            assert!(copied.success());
            // The copies keep their fixtures' hostnames (two of them the same): the script
            // names each report after its Slurm node through GPU_DOCTOR_HOSTNAME.
            let env: Vec<String> = fixture_env(fixture)
                .iter()
                .map(|(k, v)| quote(&format!("{k}={v}")))
                .collect();
            let _ = writeln!(
                cases,
                "  {node}) exec env -i {} SOURCE_DATE_EPOCH=1764583200 GPU_DOCTOR_HOSTNAME=\"$GPU_DOCTOR_HOSTNAME\" \"$real\" --root {} --timeout {} \"$@\" ;;",
                env.join(" "),
                quote(&root.to_string_lossy()),
                crate::support::TIMEOUT_SECS,
            );
        }
        let bin = dir.path().join("gpu doctor wrapper");
        executable(
            &bin,
            &format!(
                "#!/usr/bin/env bash\n\
                 # gpu-doctor as each node of the fake allocation would run it.\n\
                 real={}\n\
                 if [ -n \"${{SLURMD_NODENAME:-}}\" ] && [ \"$SLURMD_NODENAME\" = \"${{FAIL_NODE:-}}\" ]; then\n\
                 \x20 echo \"gpu-doctor: cannot start\" >&2\n\
                 \x20 exit 3\n\
                 fi\n\
                 case \"${{SLURMD_NODENAME:-}}\" in\n\
                 \x20 '') exec \"$real\" \"$@\" ;;\n\
                 {cases}\
                 esac\n\
                 exit 127\n",
                quote(env!("CARGO_BIN_EXE_gpu-doctor"))
            ),
        );
        Cluster { dir, bin }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path().join("srun.log")).unwrap_or_default()
    }

    /// Runs the script in the allocation (`in_allocation`) or outside it.
    fn run(&self, args: &[&str], extra: &[(&str, &str)], in_allocation: bool) -> Run {
        let fake = self.path().join("fake bin");
        let mut cmd = Command::new("bash");
        cmd.arg(script())
            .args(args)
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", fake.display()))
            .env("FAKE_NODES", "node01 node02 node03 node04")
            .env("FAKE_SLURM_LOG", self.path().join("srun.log"))
            .current_dir(self.path())
            .stdin(Stdio::null());
        if in_allocation {
            cmd.env("SLURM_JOB_ID", "4242")
                .env("SLURM_JOB_NODELIST", "node[01-04]")
                .env("SLURM_JOB_NUM_NODES", "4");
        }
        cmd.envs(extra.iter().copied());
        let out = cmd.output().expect("bash runs the script");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// The names in a folder, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn summary(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("JSON")
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .expect("array")
        .iter()
        .map(|e| e[key].as_str().expect("string").to_string())
        .collect()
}

#[test]
fn every_node_reports_and_the_merge_names_the_odd_and_the_sick() {
    let cluster = Cluster::new();
    let bin = cluster.bin.to_string_lossy().into_owned();
    // --allow-missing-gpus reaches each merge (an unknown option there would exit 2 and
    // write no summary); node04 is still sick, so the run still fails.
    let run = cluster.run(&["--bin", &bin, "--allow-missing-gpus"], &[], true);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let out = cluster.path().join("gpu-doctor-fleet-4242");
    assert_eq!(
        listing(&out),
        [
            "node01.json",
            "node02.json",
            "node03.json",
            "node04.json",
            "summary.json",
            "summary.md"
        ]
    );
    let log = cluster.log();
    assert!(
        log.starts_with("--nodes=4 --ntasks=4 --ntasks-per-node=1 --kill-on-bad-exit=0 bash -c"),
        "{log}"
    );
    assert!(log.trim_end().ends_with("doctor --json"), "{log}");
    let f = summary(&out);
    assert_eq!(f["counts"]["nodes"], 4);
    assert_eq!(
        names(&f["nodes"], "name"),
        ["node01", "node02", "node03", "node04"]
    );
    assert_eq!(
        f["groups"][0]["nodes"],
        serde_json::json!(["node01", "node02"])
    );
    assert_eq!(names(&f["odd_ones_out"], "node"), ["node03", "node04"]);
    assert_eq!(names(&f["attention"], "node"), ["node04"]);
    assert_eq!(
        names(&f["attention"][0]["errors"], "id"),
        ["driver-library-mismatch"]
    );
    assert_eq!(f["nodes"][0]["generated_at"], "2025-12-01T10:00:00Z");
    assert!(
        run.stdout
            .starts_with("Fleet: 4 nodes, 3 stacks, 2 odd ones out, 1 needs attention\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("  stack 1: 2 nodes: node[01-02]\n"),
        "{}",
        run.stdout
    );
    let md = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    assert!(md.starts_with("# gpu-doctor fleet summary\n"), "{md}");
    assert!(
        md.contains("| node04 | error finding | driver-library-mismatch:"),
        "{md}"
    );
    assert!(!run.stderr.contains("wrote no report"), "{}", run.stderr);
}

#[test]
fn a_node_without_a_report_is_named_and_fails_the_run() {
    let cluster = Cluster::new();
    let bin = cluster.bin.to_string_lossy().into_owned();
    let out = cluster.path().join("out dir").join("fleet reports");
    // node04's report from an earlier run must not stand in for the one it fails to write.
    std::fs::create_dir_all(&out).expect("dir");
    std::fs::copy(
        crate::support::fixtures_dir().join("real/h200-doctor.json"),
        out.join("node04.json"),
    )
    .expect("stale report");
    let out_arg = out.to_string_lossy().into_owned();
    let run = cluster.run(
        &["--bin", &bin, "--out", &out_arg],
        &[("FAIL_NODE", "node04")],
        true,
    );
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        listing(&out),
        [
            "node01.json",
            "node02.json",
            "node03.json",
            "summary.json",
            "summary.md"
        ]
    );
    assert!(
        run.stderr.contains("slurm-fleet.sh: node04: "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("slurm-fleet.sh: 1 of 4 nodes wrote no report: node04\n"),
        "{}",
        run.stderr
    );
    // The three that reported are healthy: the missing node alone makes the exit 1.
    let f = summary(&out);
    assert_eq!(f["counts"]["nodes"], 3);
    assert_eq!(f["healthy"], true);
    assert!(run.stdout.contains("all healthy"), "{}", run.stdout);
}

#[test]
fn smoke_reports_are_kept_when_gpu_doctor_exits_non_zero() {
    let cluster = Cluster::new();
    let bin = cluster.bin.to_string_lossy().into_owned();
    let run = cluster.run(
        &["--bin", &bin, "--bench", "--srun-opt", "--overlap"],
        &[],
        true,
    );
    // Under --root the smoke test cannot run (exit 3), but each node still wrote its report.
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(
        cluster.log().contains("--overlap bash -c"),
        "{}",
        cluster.log()
    );
    assert!(
        cluster.log().trim_end().ends_with("smoke --json --bench"),
        "{}",
        cluster.log()
    );
    let f = summary(&cluster.path().join("gpu-doctor-fleet-4242"));
    assert_eq!(f["counts"]["nodes"], 4);
    assert_eq!(
        names(&f["attention"], "smoke_status"),
        [
            "could_not_run",
            "could_not_run",
            "could_not_run",
            "could_not_run"
        ]
    );
    assert!(run.stderr.contains("srun exited 3"), "{}", run.stderr);
}

#[test]
fn the_script_refuses_outside_an_allocation_and_explains_itself() {
    let cluster = Cluster::new();
    let run = cluster.run(&[], &[], false);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("slurm-fleet.sh: not inside a Slurm allocation (SLURM_JOB_ID is not set)"),
        "{}",
        run.stderr
    );
    assert_eq!(cluster.log(), "", "srun must not run");
    let help = cluster.run(&["--help"], &[], false);
    assert_eq!(help.code, 0);
    assert!(
        help.stdout.starts_with("Usage: slurm-fleet.sh"),
        "{}",
        help.stdout
    );
    assert!(help.stdout.contains("Exit codes:"), "{}", help.stdout);
    assert!(
        help.stdout.contains("--allow-missing-gpus"),
        "{}",
        help.stdout
    );
    let bad = cluster.run(&["--frobnicate"], &[], true);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("unknown argument: --frobnicate"),
        "{}",
        bad.stderr
    );
}
