//! Running gpu-doctor on a fixture machine and reading its JSON report.
//!
//! A fixture is `tests/fixtures/<name>/` with `README.md`, `env` (the process environment, one
//! `KEY=VALUE` a line) and `root/` (the machine's `/`). Each run is one process:
//! `gpu-doctor --root <fixture>/root --timeout 5 doctor --json` with exactly the fixture's environment.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Every fixture machine, each with its own test in `fixtures.rs`.
pub const FIXTURES: [&str; 20] = [
    "amd-rocm",
    "conda-cuda-env",
    "container-no-dev-nvidia",
    "driver-library-mismatch",
    "gpu-no-driver",
    "h200",
    "healthy-driver-toolkit",
    "hgx-driver-not-loaded",
    "jax-pip-cuda-plugin",
    "no-gpu",
    "nouveau-loaded",
    "nvidia-smi-hangs",
    "old-driver-no-compute-cap",
    "overrides-no-gpu",
    "several-toolkits",
    "stub-libcuda-on-path",
    "tensorflow-system-cudnn",
    "torch-cpu-build",
    "torch-cuda-venv",
    "wsl2",
];

/// Folders under `tests/fixtures/` that are not fixture machines: `real/` holds reports of live
/// runs on real machines (the H200 one is what the `h200` fixture must reproduce).
pub const NOT_MACHINES: [&str; 1] = ["real"];

/// Where the tests write their scratch machines: a RAM file system (`/dev/shm`) where one is
/// writable, lets programs run (the stand-in commands are scripts) and has 2 GiB free, else the
/// system's temporary folder; `TMPDIR`, when set, is taken as it is. Some tests write machines of
/// 20,000 sysfs nodes: on this project's VM disks (ext4 mounted with `discard`) creating and
/// deleting 20,000 small folders took 35 s and 90 s, on tmpfs 2 s and 1 s.
pub fn scratch_root() -> &'static Path {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        let ram = Path::new("/dev/shm");
        if std::env::var_os("TMPDIR").is_none() && runs_programs(ram) {
            ram.to_path_buf()
        } else {
            std::env::temp_dir()
        }
    })
}

/// Whether `dir` has room and runs a script written there (tmpfs is often mounted `noexec`).
fn runs_programs(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let room =
        rustix::fs::statvfs(dir).is_ok_and(|s| s.f_bavail.saturating_mul(s.f_frsize) >= 2 << 30);
    let Ok(probe) = tempfile::tempdir_in(dir) else {
        return false;
    };
    let script = probe.path().join("probe");
    room && std::fs::write(&script, "#!/bin/sh\nexit 0\n").is_ok()
        && std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).is_ok()
        && Command::new(&script)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// A scratch folder under [`scratch_root`], removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir_in(scratch_root()).expect("a scratch folder")
}

/// `--timeout` for every run: long enough for the stand-in scripts, short enough for the hang.
/// The scan's file work shares this budget, so a machine loaded far past its cores (several
/// builds at once) cut 2 s scans short and lost their findings; 5 s leaves room for that.
pub const TIMEOUT_SECS: &str = "5";

pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn fixture_dir(name: &str) -> PathBuf {
    fixtures_dir().join(name)
}

/// The fixture's `env` file: `KEY=VALUE` lines (the value is everything after the first `=`);
/// blank lines and `#` comments are skipped.
pub fn fixture_env(name: &str) -> Vec<(String, String)> {
    let path = fixture_dir(name).join("env");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("{}: not KEY=VALUE: {l:?}", path.display()));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// gpu-doctor as a test runs it on a fixture machine: the fixture's environment plus `extra`,
/// `--root` its tree and the fixtures' `--timeout`, then `args`, in `cwd` (else the test's own
/// folder), stdin closed.
pub fn on_fixture<S: AsRef<std::ffi::OsStr>>(
    fixture: &str,
    extra: &[(&str, &str)],
    args: &[S],
    cwd: Option<&Path>,
) -> std::process::Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"));
    command
        .env_clear()
        .envs(fixture_env(fixture))
        .envs(extra.iter().copied())
        .arg("--root")
        .arg(fixture_dir(fixture).join("root"))
        .args(["--timeout", TIMEOUT_SECS])
        .args(args)
        .stdin(Stdio::null());
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    command
        .output()
        .unwrap_or_else(|e| panic!("{fixture}: cannot start gpu-doctor: {e}"))
}

/// What one run of gpu-doctor gave, as text.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for Out {
    fn from(out: std::process::Output) -> Out {
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// What one run gave.
pub struct Run {
    pub report: Value,
    pub elapsed: Duration,
}

/// Runs `doctor --json` on a fixture; asserts JSON on stdout and exit 0, or 1 exactly when the
/// report has an error finding.
pub fn run_fixture(name: &str) -> Run {
    let dir = fixture_dir(name);
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .envs(fixture_env(name))
        .arg("--root")
        .arg(dir.join("root"))
        .args(["--timeout", TIMEOUT_SECS, "doctor", "--json"])
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{name}: cannot start gpu-doctor: {e}"));
    let elapsed = start.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{name}: gpu-doctor exited with {:?}\nstderr:\n{stderr}",
        out.status.code()
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{name}: stdout is not JSON ({e})\nstdout:\n{}\nstderr:\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let has_error = report["findings"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f["severity"] == "error"));
    assert_eq!(
        out.status.code() == Some(1),
        has_error,
        "{name}: doctor exits 1 exactly when its report has an error finding"
    );
    Run { report, elapsed }
}

/// [`run_fixture`]'s report, after the checks every report must pass. Each fixture runs once
/// per test binary: a `--root` report depends only on the fixture's files and environment,
/// which no test changes (tests that break a machine copy it first), and the tests that sweep
/// every fixture would otherwise run each of them several times.
pub fn doctor(name: &str) -> Value {
    slot(name)
        .get_or_init(|| {
            let report = run_fixture(name).report;
            check_common(name, &report);
            report
        })
        .clone()
}

type Slot = std::sync::Arc<std::sync::OnceLock<Value>>;

/// The one place a fixture's report is kept; concurrent callers wait for the one run.
fn slot(name: &str) -> Slot {
    static SLOTS: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<String, Slot>>> =
        std::sync::OnceLock::new();
    let mut slots = SLOTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    slots.entry(name.to_string()).or_default().clone()
}

/// Every fixture machine under `tests/fixtures/` (a `root/` and an `env` file), sorted.
pub fn machine_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("root").is_dir() && e.path().join("env").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// [`doctor`] for each of `names`, four at a time, in the order given.
pub fn doctor_all(names: &[String]) -> Vec<(String, Value)> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut out: Vec<(usize, String, Value)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(name) = names.get(i) else { break };
                        mine.push((i, name.clone(), doctor(name)));
                    }
                    mine
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a fixture run"))
            .collect()
    });
    out.sort_by_key(|(i, _, _)| *i);
    out.into_iter().map(|(_, n, v)| (n, v)).collect()
}

/// Facts every fixture report shares: schema version, tool, the root it examined, and NVML
/// never loaded under `--root`.
pub fn check_common(name: &str, r: &Value) {
    assert_eq!(r["schema_version"], 1, "{name}");
    assert_eq!(r["tool"]["name"], "gpu-doctor", "{name}");
    let root = r["tool"]["root"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: tool.root is not a string"));
    assert!(
        Path::new(root).ends_with(Path::new("tests/fixtures").join(name).join("root")),
        "{name}: tool.root = {root}"
    );
    assert_eq!(
        r["driver"]["nvml"]["status"], "skipped",
        "{name}: NVML must not load under --root"
    );
    assert_eq!(r["driver"]["libcuda_cuda_version"], Value::Null, "{name}");
}

/// The finding IDs, sorted.
pub fn finding_ids(r: &Value) -> Vec<String> {
    let mut ids: Vec<String> = array(r, "findings")
        .iter()
        .map(|f| f["id"].as_str().expect("finding id").to_string())
        .collect();
    ids.sort();
    ids
}

/// Asserts the exact set of finding IDs.
pub fn assert_findings(r: &Value, expected: &[&str]) {
    let mut want: Vec<String> = expected.iter().map(|s| (*s).to_string()).collect();
    want.sort();
    assert_eq!(
        finding_ids(r),
        want,
        "findings: {}",
        serde_json::to_string_pretty(&r["findings"]).unwrap_or_default()
    );
}

/// The finding with this ID.
pub fn finding<'a>(r: &'a Value, id: &str) -> &'a Value {
    find(&r["findings"], "id", id)
}

/// The array at a top-level key (or a JSON pointer).
pub fn array<'a>(r: &'a Value, key: &str) -> &'a Vec<Value> {
    let v = if key.starts_with('/') {
        r.pointer(key)
    } else {
        r.get(key)
    };
    v.and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{key} is not an array in the report"))
}

/// The element of an array whose `key` is `value`.
pub fn find<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    list.as_array()
        .and_then(|a| a.iter().find(|e| e[key] == value))
        .unwrap_or_else(|| {
            panic!(
                "no element with {key} = {value:?} in {}",
                serde_json::to_string_pretty(list).unwrap_or_default()
            )
        })
}

/// The string values of `key` across an array.
pub fn strings(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    e[key]
                        .as_str()
                        .map_or_else(|| e[key].to_string(), str::to_string)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A Python environment by its prefix.
pub fn python_env<'a>(r: &'a Value, prefix: &str) -> &'a Value {
    find(&r["python_envs"], "path", prefix)
}

/// A framework of a Python environment.
pub fn framework<'a>(r: &'a Value, prefix: &str, name: &str) -> &'a Value {
    find(&python_env(r, prefix)["frameworks"], "name", name)
}

/// The libcuda / libnvidia-ml entries of one name, in loader rank order.
pub fn driver_libs<'a>(r: &'a Value, name: &str) -> Vec<&'a Value> {
    let mut libs: Vec<&Value> = array(r, "driver_libraries")
        .iter()
        .filter(|l| l["name"] == name)
        .collect();
    libs.sort_by_key(|l| l["rank"].as_u64());
    libs
}

/// The items of an array of strings (a finding's `evidence`, `explains`).
pub fn texts(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Asserts that `actual` has everything `expected` has: the same scalars, arrays of the same
/// length matched element by element, and every key of an expected object (keys the report
/// gained since are allowed: the schema's policy is that additions keep the version).
#[track_caller]
pub fn assert_subset(actual: &Value, expected: &Value) {
    if let Err(e) = subset(actual, expected, "") {
        panic!(
            "{e}\nactual:\n{}\nexpected:\n{}",
            serde_json::to_string_pretty(actual).unwrap_or_default(),
            serde_json::to_string_pretty(expected).unwrap_or_default()
        );
    }
}

fn subset(actual: &Value, expected: &Value, path: &str) -> Result<(), String> {
    match expected {
        Value::Object(map) => {
            let Some(obj) = actual.as_object() else {
                return Err(format!("{path}: expected an object, got {actual}"));
            };
            for (k, v) in map {
                let a = obj.get(k).ok_or_else(|| format!("{path}/{k}: missing"))?;
                subset(a, v, &format!("{path}/{k}"))?;
            }
            Ok(())
        }
        Value::Array(items) => {
            let Some(list) = actual.as_array() else {
                return Err(format!("{path}: expected an array, got {actual}"));
            };
            if list.len() != items.len() {
                return Err(format!(
                    "{path}: {} elements, expected {}",
                    list.len(),
                    items.len()
                ));
            }
            for (i, (a, e)) in list.iter().zip(items).enumerate() {
                subset(a, e, &format!("{path}/{i}"))?;
            }
            Ok(())
        }
        _ if actual == expected => Ok(()),
        _ => Err(format!("{path}: {actual} != {expected}")),
    }
}

/// Finding severities present in the report.
pub fn severities(r: &Value) -> Vec<String> {
    strings(&r["findings"], "severity")
}

/// Copies a fixture tree into a scratch folder, links as links (a fixture's links are facts).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let kind = entry.file_type().unwrap();
        let dest = to.join(entry.file_name());
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path()).unwrap(), &dest).unwrap();
        } else if kind.is_dir() {
            copy_tree(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// Puts a FIFO at `path` (replacing a file there): a reader that opens it blocking would hang.
pub fn mkfifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

/// Runs gpu-doctor to its end: its output, and the CPU seconds it and the commands it waited
/// for used. The ended child is left unreaped (`waitid` with `WNOWAIT`) while its
/// `/proc/PID/stat` is read: `utime + stime + cutime + cstime`, what `wait4` would give.
pub fn run_measured(mut command: Command) -> (Out, f64) {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let dir = tempdir();
    let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = command
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    waitid(
        WaitId::Pid(pid),
        WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
    )
    .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command's closing parenthesis start at the state (field 3); the CPU
    // times are fields 14 to 17.
    let after = stat.rsplit_once(')').unwrap().1;
    let ticks: u64 = after
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|t| t.parse::<u64>().unwrap())
        .sum();
    let seconds = ticks as f64 / rustix::param::clock_ticks_per_second() as f64;
    let status = child.wait().unwrap();
    let out = Out {
        code: status.code().unwrap_or(-1),
        stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    };
    (out, seconds)
}

/// A new-format `ld.so.cache` of `n` entries that all name one string of `len` bytes.
pub fn one_string_cache(n: usize, len: usize) -> Vec<u8> {
    let mut out = b"glibc-ld.so.cache1.1".to_vec();
    out.extend_from_slice(&u32::try_from(n).unwrap().to_le_bytes());
    out.extend_from_slice(&u32::try_from(len + 1).unwrap().to_le_bytes());
    out.extend_from_slice(&[0u8; 20]);
    let at = u32::try_from(48 + n * 24).unwrap();
    for _ in 0..n {
        out.extend_from_slice(&0x0303i32.to_le_bytes());
        out.extend_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&[0u8; 12]);
    }
    out.push(b'/');
    out.extend(std::iter::repeat_n(b'x', len - 1));
    out.push(0);
    out
}

/// Runs `scripts/<script> --check`: a generator reproduces its checked-in table from the
/// vendored answers it read, offline. Skipped (with a note) where python3 is not installed.
pub fn generator_reproduces_its_table(script: &str) {
    let root = env!("CARGO_MANIFEST_DIR");
    let Ok(out) = Command::new("python3")
        .arg(format!("{root}/scripts/{script}"))
        .arg("--check")
        .output()
    else {
        eprintln!("python3 is not installed: generator check skipped");
        return;
    };
    assert!(
        out.status.success(),
        "scripts/{script} --check failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The peak resident memory of a running process (`VmHWM`, kB).
pub fn peak_kb(pid: u32) -> Option<i64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs gpu-doctor, watching its peak memory: (stdout, peak kB).
pub fn run_watched(mut command: Command) -> (String, i64) {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut s).unwrap();
        s
    });
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        peak = peak.max(peak_kb(child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(5));
    }
    (reader.join().unwrap(), peak)
}
