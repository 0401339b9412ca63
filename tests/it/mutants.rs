//! A mutation test over the fixture machines: copies of a few fixtures are broken at random
//! (fixed seed) the way real machines are: files truncated or replaced by random bytes (escape
//! sequences included), by FIFOs, by links out of the root or in loops; `ld.so.conf` including
//! itself; stand-in commands that hang, flood or leave a `setsid` daemon; hostile names;
//! invisible characters (zero-width, bidi, BOM, tags) hidden in files; an `ld.so.cache` whose
//! 200,000 entries all name one long string. Each
//! mutant machine is examined with `doctor --json` (and every third one with the text report),
//! and every run must: exit 0–3, not panic, never wait for a hanging stand-in (its wall time
//! stays under [`HANG_LIMIT`], a margin over `--timeout` that a loaded machine does not cross
//! but a run that waits for a stand-in's 30 s sleep does), spend at most [`CPU_LIMIT`] of its own
//! CPU time (what a busy machine does not inflate), stay under 200 MB of memory, print valid JSON, print no control or invisible characters, never show the canary file that
//! lies outside the root (and that links in the mutant point at), and leave no process behind.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{copy_tree, fixture_dir, fixture_env, mkfifo};

/// Mutant machines per run by default; three at a time (most of a run is waiting for a hanging
/// stand-in). `.ci/run` sets `GPU_DOCTOR_MUTANTS=240`, the long campaign (about a minute on two
/// idle cores).
const MUTANTS: u64 = 60;
const SEED: u64 = 0x6770_752d_646f_6374;

/// `GPU_DOCTOR_MUTANTS` and `GPU_DOCTOR_MUTANT_SEED` run a longer or different campaign.
fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
const TIMEOUT_S: u64 = 1;
/// The wall time a run may take: its `--timeout` for the one command that hangs, the scan's
/// own budget slack, and room for a machine whose cores are shared by several builds (a 0.3 s
/// scan took over 3 s there). The hanging stand-ins sleep 30 and 60 s, so a run that waits for
/// one is still caught.
const HANG_LIMIT: Duration = Duration::from_secs(TIMEOUT_S * 10);
/// The CPU time (user + system) gpu-doctor itself may use: a debug build's scan of a fixture
/// takes a fraction of a second; reading a flooding stand-in for the whole `--timeout` costs
/// at most about one core for that second.
const CPU_LIMIT: Duration = Duration::from_secs(TIMEOUT_S + 2);
const RSS_LIMIT_KB: i64 = 200 * 1024;
const BASES: [&str; 5] = [
    "several-toolkits",
    "torch-cuda-venv",
    "toolkit13-on-driver550",
    "conda-cuda-env",
    "no-gpu",
];
const CANARY: &str = "CANARY-7f3a-outside-the-root";

/// xorshift64*: a fixed sequence from the seed, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % (n.max(1) as u64)).unwrap_or(0)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| (self.next() >> 32) as u8).collect()
    }
}

/// Regular files under `dir`, sorted (so the seed gives the same mutants every time).
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            files(&entry.path(), out);
        } else if kind.is_file() {
            out.push(entry.path());
        }
    }
}

fn replace_with_link(path: &Path, target: &Path) {
    let _ = std::fs::remove_file(path);
    symlink(target, path).unwrap();
}

/// A stand-in command that misbehaves, writing its pid and its daemon's to `pids`.
fn hostile_command(path: &Path, pids: &Path, how: usize) {
    let p = pids.display();
    let body = match how {
        0 => format!("echo $$ >> {p}\nexec sleep 30\n"),
        1 => format!(
            "echo $$ >> {p}\nwhile :; do echo 'flood flood flood flood flood flood'; done\n"
        ),
        2 => format!(
            "setsid sh -c 'echo $$ >> {p}; exec sleep 60' </dev/null >/dev/null 2>&1 &\n\
             (sleep 60 & echo $! >> {p}) \n\
             printf '\\033]0;title\\007\\033[2J NVIDIA-SMI 550.54.14 Driver Version: 550.54.14 CUDA Version: 12.4\\n'\n"
        ),
        _ => {
            format!("echo $$ >> {p}\nprintf '\\033[31m\\233 release 12.4, V12.4.131\\n'; exit 0\n")
        }
    };
    let _ = std::fs::remove_file(path);
    std::fs::write(path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Breaks `root` in 1–3 ways.
fn mutate(rng: &mut Rng, root: &Path, canary: &Path, pids: &Path) -> Vec<String> {
    let mut done = Vec::new();
    for _ in 0..=rng.below(3) {
        let mut all = Vec::new();
        files(root, &mut all);
        if all.is_empty() {
            break;
        }
        let file = all[rng.below(all.len())].clone();
        let shown = file.strip_prefix(root).unwrap().display().to_string();
        let executable =
            std::fs::metadata(&file).is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
        let op = rng.below(12);
        done.push(format!("{op} {shown}"));
        match op {
            0 => {
                let len = std::fs::metadata(&file).map_or(0, |m| m.len());
                let cut = rng.below(usize::try_from(len).unwrap_or(0) + 1);
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&file)
                    .unwrap()
                    .set_len(cut as u64)
                    .unwrap();
            }
            1 => {
                let len = rng.below(2048);
                let mut bytes = rng.bytes(len);
                bytes.extend_from_slice(b"\x1b]0;owned\x07\x1b[2J\xc2\x9b31m\n");
                std::fs::write(&file, bytes).unwrap();
            }
            2 => mkfifo(&file),
            3 => replace_with_link(&file, canary),
            4 => {
                // Climbs far above the root, then down to the canary.
                let up = "../".repeat(40);
                let target = PathBuf::from(format!("{up}{}", canary.display()));
                replace_with_link(&file, &target);
            }
            5 => replace_with_link(&file, &file.file_name().map(PathBuf::from).unwrap()),
            6 if executable => hostile_command(&file, pids, rng.below(4)),
            6 | 7 => {
                let etc = root.join("etc");
                std::fs::create_dir_all(&etc).unwrap();
                let _ = std::fs::remove_file(etc.join("ld.so.conf"));
                std::fs::write(
                    etc.join("ld.so.conf"),
                    "include /etc/ld.so.conf\ninclude /etc/ld.so.conf\ninclude /etc/ld.so.conf\n\
                     include /etc/ld.so.conf\ninclude /etc/*.conf\n/usr/local/cuda/lib64\n",
                )
                .unwrap();
            }
            8 => {
                // A hostile name: a toolkit folder and a file whose names hold escapes and
                // bytes that are not UTF-8.
                let name = OsString::from_vec(b"cuda-12.4\x1b[31m\n\xff".to_vec());
                let dir = root.join("usr/local").join(name);
                std::fs::create_dir_all(dir.join("bin")).unwrap();
                std::fs::write(dir.join("version.txt"), "CUDA Version 12.4.131\x1b[2J\n").unwrap();
                hostile_command(&dir.join("bin/nvcc"), pids, 3);
            }
            10 => {
                // Invisible characters and an escape hidden in a file's text (a GPU name, a
                // version, a kernel release): no face may show them raw.
                let text = std::fs::read(&file).unwrap_or_default();
                let mut text = String::from_utf8_lossy(&text).into_owned();
                let at = text
                    .char_indices()
                    .map(|(i, _)| i)
                    .nth(rng.below(text.chars().count() + 1))
                    .unwrap_or(text.len());
                text.insert_str(
                    at,
                    "\u{feff}\u{200b}\u{202e}\u{2066}\u{200e}\u{2060}\u{ad}\u{2028}\u{e0041}\u{1b}[2J",
                );
                std::fs::write(&file, text).unwrap();
            }
            11 => {
                // An ld.so.cache of 200,000 entries all naming one 4,000-byte string (4.8 MB):
                // memory must stay proportional to it.
                let etc = root.join("etc");
                std::fs::create_dir_all(&etc).unwrap();
                let cache = crate::support::one_string_cache(200_000, 4000);
                let _ = std::fs::remove_file(etc.join("ld.so.cache"));
                std::fs::write(etc.join("ld.so.cache"), cache).unwrap();
            }
            _ => {
                // The user's config: a link out of the root, or a FIFO.
                let conf = root.join("home/u/.config/gpu-doctor/config.toml");
                std::fs::create_dir_all(conf.parent().unwrap()).unwrap();
                if rng.below(2) == 0 {
                    replace_with_link(&conf, canary);
                } else {
                    mkfifo(&conf);
                }
            }
        }
    }
    done
}

struct Outcome {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    elapsed: Duration,
    /// gpu-doctor's own user + system time, as last read before it exited.
    cpu: Duration,
    max_rss_kb: i64,
}

/// A running process's own user + system time (`/proc/PID/stat` fields 14 and 15).
fn cpu_time(pid: i32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let hz = rustix::param::clock_ticks_per_second().max(1);
    Some(Duration::from_millis(ticks * 1000 / hz))
}

/// The peak resident memory of a running process (`VmHWM`, kB). `wait4`'s `ru_maxrss` would
/// not do: it keeps the size of the test process that forked the child, from before `exec`.
fn peak_kb(pid: i32) -> Option<i64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs gpu-doctor, watching its peak memory until it exits.
fn run(root: &Path, env: &[(String, String)], args: &[&str]) -> Outcome {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("HOME", "/home/u")
        .arg("--root")
        .arg(root)
        .args(["--timeout", &TIMEOUT_S.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let read = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            buf
        })
    };
    let out = read(Box::new(child.stdout.take().unwrap()));
    let err = read(Box::new(child.stderr.take().unwrap()));
    let pid = i32::try_from(child.id()).unwrap();
    let mut peak = 0;
    let mut cpu = Duration::ZERO;
    let deadline = HANG_LIMIT + Duration::from_secs(20);
    let status = loop {
        peak = peak.max(peak_kb(pid).unwrap_or(0));
        cpu = cpu.max(cpu_time(pid).unwrap_or_default());
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let elapsed = started.elapsed();
    let code = status.code();
    Outcome {
        code,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        elapsed,
        cpu,
        max_rss_kb: peak,
    }
}

/// Whether `pid` is still running (a zombie waiting for init counts as gone).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// A line holding a control character (but tab) or an invisible one: zero-width, bidi marks
/// and controls, the word joiner, the byte-order mark, the soft hyphen, U+2028/U+2029, tags.
fn control_bytes(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let bad = |c: char| {
        (c.is_control() && c != '\t')
            || matches!(c,
                '\u{ad}' | '\u{61c}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}' | '\u{feff}' | '\u{e0000}'..='\u{e007f}')
    };
    text.lines()
        .find(|l| l.chars().any(bad))
        .map(|l| format!("{l:?}"))
}

fn check_one(n: u64, what: &[String], args: &[&str], out: &Outcome, problems: &mut Vec<String>) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut fail = |p: String| problems.push(format!("mutant {n} {what:?} {args:?}: {p}"));
    if !matches!(out.code, Some(0..=3)) {
        fail(format!("exit {:?}; stderr: {stderr}", out.code));
    }
    if stderr.contains("panicked") {
        fail(format!("panic: {stderr}"));
    }
    if out.elapsed > HANG_LIMIT {
        fail(format!("took {:?} (a hang?)", out.elapsed));
    }
    if out.cpu > CPU_LIMIT {
        fail(format!("used {:?} of CPU time", out.cpu));
    }
    if out.max_rss_kb > RSS_LIMIT_KB {
        fail(format!("peak memory {} kB", out.max_rss_kb));
    }
    if stdout.contains(CANARY) || stderr.contains(CANARY) {
        fail("showed the canary from outside the root".to_string());
    }
    if let Some(line) = control_bytes(&out.stdout).or_else(|| control_bytes(&out.stderr)) {
        fail(format!("control characters: {line}"));
    }
    if args.contains(&"--json") && serde_json::from_slice::<serde_json::Value>(&out.stdout).is_err()
    {
        fail(format!(
            "stdout is not JSON: {}",
            stdout.chars().take(300).collect::<String>()
        ));
    }
}

#[test]
fn mutant_machines_never_hang_escape_leak_or_crash() {
    let work = crate::support::tempdir();
    let canary = work.path().join("outside/secret.toml");
    std::fs::create_dir_all(canary.parent().unwrap()).unwrap();
    // Bad TOML and not JSON: were it ever read, its text would show in an error.
    std::fs::write(&canary, format!("{CANARY} = [\n")).unwrap();
    let bases: Vec<(PathBuf, Vec<(String, String)>)> = BASES
        .iter()
        .map(|b| (fixture_dir(b).join("root"), fixture_env(b)))
        .collect();
    let mutants = setting("GPU_DOCTOR_MUTANTS", MUTANTS);
    let seed = setting("GPU_DOCTOR_MUTANT_SEED", SEED);
    let next = std::sync::atomic::AtomicU64::new(0);
    let problems = std::sync::Mutex::new(Vec::<String>::new());
    let started = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                loop {
                    let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if n >= mutants {
                        break;
                    }
                    let mut rng =
                        Rng(seed ^ (n.wrapping_add(1)).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                    let (base, env) = &bases[rng.below(bases.len())];
                    let dir = work.path().join(format!("m{n}"));
                    let root = dir.join("root");
                    copy_tree(base, &root);
                    let pids = dir.join("pids");
                    let what = mutate(&mut rng, &root, &canary, &pids);
                    let mut found = Vec::new();
                    let json = ["doctor", "--json"];
                    check_one(n, &what, &json, &run(&root, env, &json), &mut found);
                    if n.is_multiple_of(3) {
                        let text = ["doctor"];
                        check_one(n, &what, &text, &run(&root, env, &text), &mut found);
                    }
                    let left: Vec<i32> = std::fs::read_to_string(&pids)
                        .unwrap_or_default()
                        .lines()
                        .filter_map(|l| l.trim().parse().ok())
                        .filter(|&p| alive(p))
                        .collect();
                    if !left.is_empty() {
                        found.push(format!(
                            "mutant {n} {what:?}: processes left behind: {left:?}"
                        ));
                        for p in left {
                            // Clean up after a failure.
                            if let Some(p) = rustix::process::Pid::from_raw(p) {
                                let _ =
                                    rustix::process::kill_process(p, rustix::process::Signal::KILL);
                            }
                        }
                    }
                    let _ = std::fs::remove_dir_all(&dir);
                    problems.lock().unwrap().extend(found);
                }
            });
        }
    });
    let problems = problems.into_inner().unwrap();
    assert!(
        problems.is_empty(),
        "{} problems in {mutants} mutants of seed {seed} ({:?}):\n{}",
        problems.len(),
        started.elapsed(),
        problems.join("\n")
    );
}

/// Cases of the input campaign per run by default; `GPU_DOCTOR_INPUT_CASES` runs more (and
/// `GPU_DOCTOR_MUTANT_SEED` another sequence).
const INPUT_CASES: u64 = 10;

/// Pieces of hostile text: the anchors explain's rows start with, log prefixes, Markdown and
/// GitHub's active text, invisible and control characters.
const PIECES: [&str; 14] = [
    "libcuda.so",
    "libcudnn",
    "libnccl",
    "CUDA error: ",
    "NVRM: Xid (PCI:0000:01:00): 79, ",
    "**",
    "[rank0]: ",
    "2026-12-07T07:00:00Z ",
    "@org/team https://x.example ",
    "<b>|</b>",
    "\u{202e}\u{200b}\u{feff}\u{e0041}",
    "\u{1b}[2J\u{1b}]0;owned\u{7}",
    "::error::owned%0A",
    "\n",
];

fn hostile_text(rng: &mut Rng, len: usize) -> String {
    let mut text = String::with_capacity(len + 64);
    let repeated = PIECES[rng.below(PIECES.len())];
    while text.len() < len {
        if rng.below(4) == 0 {
            text.push_str(PIECES[rng.below(PIECES.len())]);
        } else {
            text.push_str(repeated);
        }
    }
    text
}

/// One input of the campaign's classes (#40: the explain log, the GPU count, KFD nodes,
/// conda-meta records, report merge's inputs) built under `dir`: the arguments to run and
/// whether it runs on a machine (`--root`) and which one.
fn hostile_input(rng: &mut Rng, dir: &Path) -> Input {
    match rng.below(5) {
        0 => explain_input(rng, dir),
        1 => gpus_input(rng, dir),
        2 => kfd_input(rng, dir),
        3 => conda_input(rng, dir),
        _ => merge_input(rng, dir),
    }
}

/// What a case runs: what it is, the fixture whose machine it examines (none for `report
/// merge`), and the arguments.
type Input = (String, Option<&'static str>, Vec<String>);

/// A scratch copy of `fixture`'s tree at `dir/root`.
fn machine(dir: &Path, fixture: &str) -> PathBuf {
    let root = dir.join("root");
    copy_tree(&fixture_dir(fixture).join("root"), &root);
    root
}

/// A log of hostile text for `explain`, hard-wrapped or not.
fn explain_input(rng: &mut Rng, dir: &Path) -> Input {
    let _ = machine(dir, "rtx5090-torch-cu126");
    let len = 1 + rng.below(400_000);
    let mut text = hostile_text(rng, len);
    let width = [0, 40, 80, 120][rng.below(4)];
    if width > 0 {
        let chars: Vec<char> = text.chars().collect();
        text = chars
            .chunks(width)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join("\n");
    }
    let log = dir.join("train.log");
    std::fs::write(&log, text).unwrap();
    let what = format!("explain log of {len} bytes, wrapped at {width}");
    let args = vec![
        "explain".to_string(),
        "--json".to_string(),
        "--log".to_string(),
        log.display().to_string(),
    ];
    (what, Some("rtx5090-torch-cu126"), args)
}

/// Up to 3,000 H200s, half of them under a hostile name, in one of four faces.
fn gpus_input(rng: &mut Rng, dir: &Path) -> Input {
    let root = machine(dir, "h200");
    let n = 1 + rng.below(3_000);
    crate::doubling::many_h200s(&root, n);
    let name = hostile_text(rng, 40).replace('\n', " ");
    for file in ["nvidia-smi.q-x.xml", "nvidia-smi.query-gpu.csv"] {
        let path = root.join("usr/local/nvidia/bin").join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let escaped = if file.ends_with(".xml") {
            name.replace('&', "&amp;").replace('<', "&lt;")
        } else {
            name.replace(',', " ")
        };
        std::fs::write(&path, text.replacen("NVIDIA H200", &escaped, n / 2 + 1)).unwrap();
    }
    let face: &[&str] = match rng.below(4) {
        0 => &["doctor", "--json"],
        1 => &["doctor", "--format", "prometheus"],
        2 => &["check", "--format", "github"],
        _ => &["check", "--format", "junit"],
    };
    let args = face.iter().map(ToString::to_string).collect();
    (format!("{n} H200s named {name:?}"), Some("h200"), args)
}

/// Up to 2,000 KFD nodes, some of garbage, some at impossible locations.
fn kfd_input(rng: &mut Rng, dir: &Path) -> Input {
    let root = machine(dir, "amd-rocm");
    let nodes = root.join("sys/class/kfd/kfd/topology/nodes");
    let template = std::fs::read_to_string(nodes.join("1/properties")).unwrap();
    let n = 1 + rng.below(2_000);
    for i in 2..n + 2 {
        let node = nodes.join(i.to_string());
        std::fs::create_dir_all(&node).unwrap();
        let text = match rng.below(4) {
            0 => String::from_utf8_lossy(&rng.bytes(200)).into_owned(),
            1 => template.replace("location_id 40", "location_id 18446744073709551615"),
            _ => template.replace(
                "location_id 40",
                &format!("location_id {}", rng.below(0x1_0000)),
            ),
        };
        std::fs::write(node.join("properties"), text).unwrap();
    }
    let args = vec!["doctor".to_string(), "--json".to_string()];
    (format!("{n} KFD nodes"), Some("amd-rocm"), args)
}

/// Up to 1,500 conda-meta records of the kinds read: garbage, long file lists, hostile names.
fn conda_input(rng: &mut Rng, dir: &Path) -> Input {
    let root = machine(dir, "conda-cuda-env");
    let meta = root.join("home/alice/miniconda3/envs/ml/conda-meta");
    let n = 1 + rng.below(1_500);
    for i in 0..n {
        let name = [
            "pytorch",
            "cupy",
            "cudatoolkit",
            "cuda-version",
            "libcublas",
        ][rng.below(5)];
        let body = match rng.below(3) {
            0 => String::from_utf8_lossy(&rng.bytes(300)).into_owned(),
            1 => format!(
                "{{\"name\": \"{name}\", \"files\": [{}]}}",
                vec!["\"lib/libcuda.so.1\""; 200].join(",")
            ),
            _ => format!(
                "{{\"name\": {:?}, \"depends\": [\"cuda-version >=12\"]}}",
                hostile_text(rng, 30)
            ),
        };
        std::fs::write(meta.join(format!("{name}-{i}.0-0.json")), body).unwrap();
    }
    let args = vec!["doctor".to_string(), "--json".to_string()];
    (
        format!("{n} conda-meta records"),
        Some("conda-cuda-env"),
        args,
    )
}

/// Up to 300 reports for `report merge`: garbage, wrong types, thousands of GPUs, hostile names.
fn merge_input(rng: &mut Rng, dir: &Path) -> Input {
    let fleet = dir.join("fleet");
    std::fs::create_dir_all(&fleet).unwrap();
    let n = 1 + rng.below(300);
    for i in 0..n {
        let host = hostile_text(rng, 20);
        let gpus = vec!["{\"name\": \"NVIDIA H200\"}"; rng.below(3_000)].join(",");
        let body = match rng.below(4) {
            0 => String::from_utf8_lossy(&rng.bytes(500)).into_owned(),
            1 => format!(
                "{{\"schema_version\": 1, \"tool\": {{\"version\": [1]}}, \"gpus\": [{gpus}]}}"
            ),
            _ => format!(
                "{{\"schema_version\": 1, \"host\": {{\"hostname\": {host:?}}}, \"gpus\": [{gpus}], \
                 \"findings\": [{{\"id\": {host:?}, \"severity\": \"error\", \"title\": {host:?}}}]}}"
            ),
        };
        std::fs::write(fleet.join(format!("n{i}.json")), body).unwrap();
    }
    let format = ["text", "json", "markdown"][rng.below(3)];
    let args = vec![
        "report".to_string(),
        "merge".to_string(),
        "--format".to_string(),
        format.to_string(),
        fleet.display().to_string(),
    ];
    (
        format!("report merge --format {format} of {n} reports"),
        None,
        args,
    )
}

/// The campaign's classes (#40) as the project's own fuzz test: fixed seed, a few cases in
/// `cargo test`, `GPU_DOCTOR_INPUT_CASES` for more. Every run must keep the same promises as
/// the mutant machines': exit 0-3, no panic, no hang, bounded CPU time and memory, no control
/// or invisible character in what it prints.
#[test]
fn hostile_inputs_of_every_face_never_hang_leak_or_crash() {
    let work = crate::support::tempdir();
    let cases = setting("GPU_DOCTOR_INPUT_CASES", INPUT_CASES);
    let seed = setting("GPU_DOCTOR_MUTANT_SEED", SEED);
    let mut problems = Vec::new();
    for n in 0..cases {
        let mut rng = Rng(seed ^ (n.wrapping_add(7)).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let dir = work.path().join(format!("i{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        let (what, fixture, args) = hostile_input(&mut rng, &dir);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = match fixture {
            Some(fixture) => run(&dir.join("root"), &fixture_env(fixture), &args),
            None => run_bare(&args),
        };
        check_one(n, &[what], &args, &out, &mut problems);
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(
        problems.is_empty(),
        "{} problems in {cases} inputs of seed {seed}:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// [`run`] for a face that examines no machine (`report merge`).
fn run_bare(args: &[&str]) -> Outcome {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"));
    command
        .env_clear()
        .args(["--timeout", &TIMEOUT_S.to_string()])
        .args(args)
        .stdin(Stdio::null());
    let started = Instant::now();
    let m = crate::doubling::measure(command);
    Outcome {
        code: Some(m.out.code),
        stdout: m.out.stdout.into_bytes(),
        stderr: m.out.stderr.into_bytes(),
        elapsed: started.elapsed(),
        cpu: Duration::from_secs_f64(m.cpu),
        max_rss_kb: m.peak_kb,
    }
}
