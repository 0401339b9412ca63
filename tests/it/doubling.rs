//! #40: linear by construction, measured. Each test builds one kind of input at two sizes, the
//! second twice the first, runs gpu-doctor on each and compares the CPU time the kernel counted
//! for it (`/proc/PID/stat`, user + system, its waited-for children included; never wall time,
//! which a loaded machine inflates). A run on a tiny input of the same machine is taken off
//! both, so the fixed cost of examining the machine does not hide the growth. Linear work gives
//! about 2x; the bound is [`RATIO`], where quadratic work gives 4x. The larger run's peak
//! resident memory (`VmHWM`, read while it runs) must stay under [`RSS_LIMIT_KB`].
//!
//! Kinds: the `explain` log (several hostile shapes), GPUs from `nvidia-smi` (every face:
//! `doctor --json`, the text report, Prometheus, `check` as JUnit), GPUs on the PCI bus only
//! (the RTX 5090s `driver-too-old-for-gpu` names, AMD devices `amdgpu-not-loaded` names), KFD
//! nodes, conda-meta records, dpkg lists (in `linkmap.rs`, which builds the libraries), and
//! the reports `report merge` reads.
//!
//! Each figure is printed (`cargo test --test it doubling -- --nocapture` shows them).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{Out, copy_tree, fixture_dir, fixture_env};

/// What twice the input may cost at most, as a multiple of the first size's cost: linear is
/// about 2, quadratic 4.
pub const RATIO: f64 = 3.2;
/// The peak resident memory any run may reach.
pub const RSS_LIMIT_KB: i64 = 200 * 1024;

/// One run: its output, CPU seconds and peak resident memory (kB).
pub struct Measured {
    pub out: Out,
    pub cpu: f64,
    pub peak_kb: i64,
}

/// Runs `command` to its end, reading its peak memory while it runs and its CPU time once it
/// has ended but before it is reaped (`waitid` with `WNOWAIT`): `utime + stime + cutime +
/// cstime`, what `wait4` would give for it.
pub fn measure(mut command: Command) -> Measured {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let dir = crate::support::tempdir();
    let (out_path, err_path) = (dir.path().join("out"), dir.path().join("err"));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    let mut peak_kb = 0;
    loop {
        peak_kb = peak_kb.max(crate::support::peak_kb(child.id()).unwrap_or(0));
        let ended = waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG,
        )
        .unwrap();
        if ended.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after = stat.rsplit_once(')').unwrap().1;
    let ticks: u64 = after
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(|t| t.parse::<u64>().unwrap())
        .sum();
    let cpu = ticks as f64 / rustix::param::clock_ticks_per_second() as f64;
    let status = child.wait().unwrap();
    Measured {
        out: Out {
            code: status.code().unwrap_or(-1),
            stdout: std::fs::read_to_string(&out_path).unwrap_or_default(),
            stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        },
        cpu,
        peak_kb,
    }
}

/// The figures of one doubling: CPU seconds of the base, the first and the second size, and
/// the second's peak memory.
#[derive(Debug, Clone, Copy)]
pub struct Doubling {
    pub base: f64,
    pub one: f64,
    pub two: f64,
    pub peak_kb: i64,
}

impl Doubling {
    /// The second size's cost over the first's, the base taken off both; the clock tick
    /// (10 ms) and a little more are allowed for on the first.
    pub fn ratio(&self) -> f64 {
        (self.two - self.base).max(0.0) / ((self.one - self.base).max(0.0) + 0.05)
    }
}

/// Measures `run` at `base`, `n` and `2n` (each run checked by `check`) and asserts that the
/// second costs at most [`RATIO`] times the first and stays under [`RSS_LIMIT_KB`]. A ratio
/// over the bound is measured once more, the lower of the two figures of each size kept: a
/// burst of another process's cache traffic inflates one run, not two.
pub fn doubling(
    what: &str,
    base: usize,
    n: usize,
    run: impl Fn(usize) -> Command,
    check: impl Fn(usize, &Out),
) -> Doubling {
    let once = |size: usize| {
        let m = measure(run(size));
        check(size, &m.out);
        m
    };
    let b = once(base);
    let one = once(n);
    let two = once(2 * n);
    let mut d = Doubling {
        base: b.cpu,
        one: one.cpu,
        two: two.cpu,
        peak_kb: two.peak_kb.max(one.peak_kb),
    };
    if d.ratio() >= RATIO {
        d.base = d.base.min(once(base).cpu);
        d.one = d.one.min(once(n).cpu);
        d.two = d.two.min(once(2 * n).cpu);
    }
    eprintln!(
        "doubling {what}: base {:.2} s, {n}: {:.2} s, {}: {:.2} s of CPU, ratio {:.2}; peak {} kB",
        d.base,
        d.one,
        2 * n,
        d.two,
        d.ratio(),
        d.peak_kb
    );
    assert!(
        d.ratio() < RATIO,
        "{what}: {n} cost {:.2} s, {} cost {:.2} s of CPU (base {:.2} s): ratio {:.2}",
        d.one,
        2 * n,
        d.two,
        d.base,
        d.ratio()
    );
    assert!(
        d.peak_kb < RSS_LIMIT_KB,
        "{what}: peak resident memory {} kB",
        d.peak_kb
    );
    d
}

/// gpu-doctor on `root` with `fixture`'s environment.
pub fn on(fixture: &str, root: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"));
    c.env_clear()
        .envs(fixture_env(fixture))
        .arg("--root")
        .arg(root)
        .args(["--timeout", "60"])
        .args(args);
    c
}

fn exit_0_or_1(n: usize, out: &Out) {
    assert!(
        matches!(out.code, 0 | 1),
        "{n}: exit {}: {}",
        out.code,
        out.stderr
    );
}

// ---- the explain log -------------------------------------------------------------------------

/// `explain --log` of a log of `n` copies of `unit`, cut into `width`-column lines when given
/// (0: as is), on the RTX 5090 machine.
fn explain_log(dir: &Path, unit: &'static str, width: usize) -> impl Fn(usize) -> Command {
    let dir = dir.to_path_buf();
    move |n| {
        let text = unit.repeat(n);
        let text = if width == 0 {
            text
        } else {
            text.as_bytes()
                .chunks(width)
                .map(|c| String::from_utf8_lossy(c).into_owned())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let log = dir.join(format!("{n}.log"));
        std::fs::write(&log, text).unwrap();
        let mut c = on(
            "rtx5090-torch-cu126",
            &fixture_dir("rtx5090-torch-cu126").join("root"),
            &["explain", "--json", "--log"],
        );
        c.arg(log);
        c
    }
}

fn explained(_: usize, out: &Out) {
    assert!(
        matches!(out.code, 0 | 1),
        "exit {}: {}",
        out.code,
        out.stderr
    );
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(r["explain"].is_object(), "{}", out.stdout);
}

#[test]
fn explain_twice_a_log_of_placeholder_runs_after_anchors() {
    let dir = crate::support::tempdir();
    for (what, unit, width) in [
        // The anchor of `libcudnn{...}` / `libnccl{...}` rows, hard-wrapped into one run.
        ("libcudnn.so run", "libcudnn.so.9", 80),
        ("libnccl run", "libnccl", 80),
    ] {
        doubling(
            &format!("explain: {what}"),
            1,
            20_000,
            explain_log(dir.path(), unit, width),
            explained,
        );
    }
}

#[test]
fn explain_twice_a_log_of_matching_lines() {
    let dir = crate::support::tempdir();
    // Lines each of which a row matches (and that name a cause), as a crashing job prints
    // them over and over; and one line with no end, of words the rows start with.
    doubling(
        "explain: matching lines",
        1,
        3_000,
        explain_log(
            dir.path(),
            "[rank3]: RuntimeError: CUDA error: no kernel image is available for execution on the device\n\
             ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n",
            0,
        ),
        explained,
    );
    doubling(
        "explain: one endless line",
        1,
        20_000,
        explain_log(dir.path(), "CUDA error: out of memory ", 0),
        explained,
    );
}

// ---- GPUs from nvidia-smi --------------------------------------------------------------------

/// `nvidia-smi -q -x` and the CSV query of `n` H200s, where the `h200` fixture's stand-in
/// reads them; a third of them with uncorrectable ECC errors (a finding per GPU).
pub fn many_h200s(root: &Path, n: usize) {
    let bin = root.join("usr/local/nvidia/bin");
    let mut xml = format!(
        "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n<driver_version>580.159.04</driver_version>\n\
         <cuda_version>13.0</cuda_version>\n<attached_gpus>{n}</attached_gpus>\n"
    );
    let mut csv = String::new();
    for i in 0..n {
        let bus = format!("{:08X}:{:02X}:{:02X}.0", i >> 16, (i >> 8) & 0xff, i & 0xff);
        xml.push_str(&format!(
            "<gpu id=\"{bus}\"><product_name>NVIDIA H200</product_name>\
             <uuid>GPU-{i:08x}-7074-b467-5b79-c5d039e92c6f</uuid><minor_number>{i}</minor_number>\
             <pci><pci_bus_id>{bus}</pci_bus_id><pci_device_id>0x233510DE</pci_device_id></pci>\
             <persistence_mode>Disabled</persistence_mode>\
             <ecc_errors><volatile><dram_uncorrectable>{}</dram_uncorrectable></volatile></ecc_errors></gpu>\n",
            i % 3
        ));
        csv.push_str(&format!(
            "{i}, NVIDIA H200, GPU-{i:08x}-7074-b467-5b79-c5d039e92c6f, {bus}, 580.159.04, 143771, 9.0\n"
        ));
    }
    xml.push_str("</nvidia_smi_log>\n");
    std::fs::write(bin.join("nvidia-smi.q-x.xml"), xml).unwrap();
    std::fs::write(bin.join("nvidia-smi.query-gpu.csv"), csv).unwrap();
}

fn h200_face(dir: &Path, args: &'static [&'static str]) -> impl Fn(usize) -> Command {
    let dir = dir.to_path_buf();
    move |n| {
        let root = dir.join(format!("m{n}"));
        if !root.exists() {
            copy_tree(&fixture_dir("h200").join("root"), &root);
            many_h200s(&root, n);
        }
        on("h200", &root, args)
    }
}

#[test]
fn every_face_over_twice_the_gpus() {
    let dir = crate::support::tempdir();
    let json = |n: usize, out: &Out| {
        exit_0_or_1(n, out);
        let r: Value = serde_json::from_str(&out.stdout).unwrap();
        assert_eq!(r["gpus"].as_array().unwrap().len(), n);
    };
    doubling(
        "doctor --json over H200s",
        1,
        500,
        h200_face(dir.path(), &["doctor", "--json"]),
        json,
    );
    doubling(
        "doctor (text) over H200s",
        1,
        500,
        h200_face(dir.path(), &["doctor", "-v"]),
        exit_0_or_1,
    );
    doubling(
        "doctor --format prometheus over H200s",
        1,
        500,
        h200_face(dir.path(), &["doctor", "--format", "prometheus"]),
        |n, out| {
            exit_0_or_1(n, out);
            assert!(out.stdout.contains("gpu_doctor_"), "{}", out.stdout);
        },
    );
    doubling(
        "check --format junit over H200s",
        1,
        500,
        h200_face(
            dir.path(),
            &["check", "--fail-on", "never", "--format", "junit"],
        ),
        exit_0_or_1,
    );
}

// ---- GPUs on the PCI bus only ------------------------------------------------------------------

/// `n` copies of the PCI device folder `template` (below `/sys/bus/pci/devices`), each at its
/// own bus address; the template itself removed.
fn pci_copies(root: &Path, template: &str, n: usize) -> Vec<String> {
    let devices = root.join("sys/bus/pci/devices");
    let from = std::fs::canonicalize(devices.join(template)).unwrap();
    let mut addresses = Vec::new();
    for i in 0..n {
        // Bus 0 device 0 would be KFD's location 0, which is a CPU's.
        let address = format!(
            "{:04x}:{:02x}:{:02x}.0",
            0x100 + (i >> 12),
            1 + ((i >> 5) & 0x7f),
            i & 0x1f
        );
        copy_tree(&from, &devices.join(&address));
        addresses.push(address);
    }
    let _ = std::fs::remove_file(devices.join(template));
    let _ = std::fs::remove_dir_all(devices.join(template));
    addresses
}

fn pci_machine(
    dir: &Path,
    fixture: &'static str,
    template: &'static str,
) -> impl Fn(usize) -> Command {
    let dir = dir.to_path_buf();
    move |n| {
        let root = dir.join(format!("m{n}"));
        if !root.exists() {
            copy_tree(&fixture_dir(fixture).join("root"), &root);
            pci_copies(&root, template, n);
        }
        on(fixture, &root, &["doctor", "--json"])
    }
}

fn gpus_and_finding(id: &'static str) -> impl Fn(usize, &Out) {
    move |n, out| {
        exit_0_or_1(n, out);
        let r: Value = serde_json::from_str(&out.stdout).unwrap();
        // The copies and the fixture's other GPUs.
        let gpus = r["gpus"].as_array().unwrap().len();
        assert!(gpus >= n, "{gpus} GPUs of {n}: {}", out.stderr);
        assert!(out.stdout.contains(id), "{id} missing");
    }
}

#[test]
fn driver_too_old_for_twice_the_rtx_5090s() {
    let dir = crate::support::tempdir();
    doubling(
        "doctor --json over RTX 5090s under driver 535",
        1,
        500,
        pci_machine(dir.path(), "driver-535-on-rtx5090", "0000:17:00.0"),
        gpus_and_finding("driver-too-old-for-gpu"),
    );
}

#[test]
fn amdgpu_not_loaded_over_twice_the_amd_devices() {
    let dir = crate::support::tempdir();
    doubling(
        "doctor --json over MI210s without amdgpu",
        1,
        500,
        pci_machine(dir.path(), "amdgpu-not-loaded-mi210", "0000:1b:00.0"),
        gpus_and_finding("amdgpu-not-loaded"),
    );
}

// ---- KFD nodes -----------------------------------------------------------------------------------

/// The ROCm machine with `n` GPUs: a PCI device and a KFD node for each.
fn kfd_machine(dir: &Path) -> impl Fn(usize) -> Command {
    let dir = dir.to_path_buf();
    move |n| {
        let root = dir.join(format!("m{n}"));
        if !root.exists() {
            copy_tree(&fixture_dir("amd-rocm").join("root"), &root);
            let addresses = pci_copies(&root, "0000:00:05.0", n);
            let nodes = root.join("sys/class/kfd/kfd/topology/nodes");
            let template = std::fs::read_to_string(nodes.join("1/properties")).unwrap();
            std::fs::remove_dir_all(nodes.join("1")).unwrap();
            for (i, address) in addresses.iter().enumerate() {
                let bus = u32::from_str_radix(&address[5..7], 16).unwrap();
                let dev = u32::from_str_radix(&address[8..10], 16).unwrap();
                let domain = u32::from_str_radix(&address[..4], 16).unwrap();
                let text = template
                    .replace(
                        "location_id 40",
                        &format!("location_id {}", bus << 8 | dev << 3),
                    )
                    .replace("domain 0", &format!("domain {domain}"))
                    .replace(
                        "drm_render_minor 128",
                        &format!("drm_render_minor {}", 128 + i),
                    )
                    .replace("unique_id 0", &format!("unique_id {}", i + 1));
                let node = nodes.join((i + 1).to_string());
                std::fs::create_dir_all(&node).unwrap();
                std::fs::write(node.join("properties"), text).unwrap();
            }
        }
        on("amd-rocm", &root, &["doctor", "--json"])
    }
}

#[test]
fn twice_the_kfd_nodes() {
    let dir = crate::support::tempdir();
    doubling(
        "doctor --json over AMD GPUs with KFD nodes",
        1,
        500,
        kfd_machine(dir.path()),
        |n, out| {
            exit_0_or_1(n, out);
            let r: Value = serde_json::from_str(&out.stdout).unwrap();
            assert_eq!(r["gpus"].as_array().unwrap().len(), n, "{}", out.stderr);
            let nodes = r["rocm"]["kfd_nodes"].as_array().map_or(0, Vec::len);
            assert!(nodes >= n, "{nodes} KFD nodes read of {n}");
        },
    );
}

// ---- conda-meta records -----------------------------------------------------------------------

#[test]
fn twice_the_conda_meta_records() {
    let dir = crate::support::tempdir();
    let dir = dir.path().to_path_buf();
    doubling(
        "doctor --json over conda-meta records",
        1,
        1_000,
        move |n| {
            let root = dir.join(format!("m{n}"));
            if !root.exists() {
                copy_tree(&fixture_dir("conda-cuda-env").join("root"), &root);
                let meta = root.join("home/alice/miniconda3/envs/ml/conda-meta");
                let name = "pytorch-2.3.1-py3.11_cuda12.1_cudnn8.9.2_0.json";
                // Each record lists 300 files, as a real pytorch record lists thousands.
                let files: Vec<String> = (0..300)
                    .map(|j| format!("\"lib/python3.11/site-packages/torch/part{j}.py\""))
                    .collect();
                let record = std::fs::read_to_string(meta.join(name)).unwrap().replacen(
                    '{',
                    &format!("{{\"files\": [{}],", files.join(", ")),
                    1,
                );
                for i in 0..n {
                    // Records of the kinds read whole (pytorch, cupy), each another release.
                    let (kind, version) = if i % 2 == 0 {
                        ("pytorch", format!("2.3.{}", i + 2))
                    } else {
                        ("cupy", format!("13.{i}.0"))
                    };
                    std::fs::write(
                        meta.join(format!("{kind}-{version}-py3.11_cuda12.1_0.json")),
                        record
                            .replace("\"pytorch\"", &format!("\"{kind}\""))
                            .replace("2.3.1", &version),
                    )
                    .unwrap();
                }
            }
            on("conda-cuda-env", &root, &["doctor", "--json"])
        },
        exit_0_or_1,
    );
}

// ---- report merge ----------------------------------------------------------------------------------

#[test]
fn report_merge_over_twice_the_reports() {
    let dir = crate::support::tempdir();
    // One real report (the H200 machine's), written again for each node under its own name.
    let out = on(
        "h200",
        &fixture_dir("h200").join("root"),
        &["doctor", "--json"],
    )
    .output()
    .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let dir = dir.path().to_path_buf();
    for (face, args) in [
        ("--json", &["--json"][..]),
        ("--format markdown", &["--format", "markdown"][..]),
    ] {
        let dir = dir.clone();
        let report = report.clone();
        doubling(
            &format!("report merge {face}"),
            1,
            200,
            move |n| {
                let fleet = dir.join(format!("fleet{n}"));
                if !fleet.exists() {
                    std::fs::create_dir_all(&fleet).unwrap();
                    for i in 0..n {
                        let mut r = report.clone();
                        r["host"]["hostname"] = Value::from(format!("node{i:05}"));
                        std::fs::write(
                            fleet.join(format!("node{i:05}.json")),
                            serde_json::to_vec(&r).unwrap(),
                        )
                        .unwrap();
                    }
                }
                let mut c = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"));
                c.env_clear()
                    .args(["report", "merge"])
                    .args(args)
                    .arg(&fleet);
                c
            },
            exit_0_or_1,
        );
    }
}

// ---- dpkg lists ----------------------------------------------------------------------------------

/// The TensorFlow machine of `linkmap.rs` (its libraries built with `cc`) with `n` dpkg lists
/// whose names hint at CUDA, each naming 100 library paths: the owner of the system cuDNN is
/// looked up in all of them, each searched while it is read (only the answers are kept; the
/// byte cap on lists read is the one limit, and `probes[]` says when it is hit).
#[test]
fn twice_the_dpkg_lists() {
    use crate::linkmap::{load, tf_framework, tf_machine};
    let m = tf_machine();
    tf_framework(&m, "libcudart.so.12");
    let info = "/var/lib/dpkg/info";
    m.write(
        &format!("{info}/libcudnn8:amd64.list"),
        "/.\n/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu/libcudnn.so.8\n",
    );
    let lines: String = (0..100)
        .map(|j| format!("/usr/lib/x86_64-linux-gnu/libcublas-extra-{j}.so.12\n"))
        .collect();
    let made = std::cell::Cell::new(0);
    let env = m.env.clone();
    let root = m.root();
    doubling(
        "doctor --json over dpkg lists",
        1,
        1_000,
        |n| {
            let list = |i: usize| format!("{info}/libcublas12-extra-{i:05}:amd64.list");
            for i in made.get()..n {
                m.write(&list(i), &lines.replace("extra-", &format!("x{i}-")));
            }
            for i in n..made.get() {
                std::fs::remove_file(m.path(&list(i))).unwrap();
            }
            made.set(n);
            let mut c = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"));
            c.env_clear()
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .arg("--root")
                .arg(&root)
                .args(["--timeout", "60", "doctor", "--json"]);
            c
        },
        |n, out| {
            exit_0_or_1(n, out);
            let r: Value = serde_json::from_str(&out.stdout).unwrap();
            let cudnn = load(&r, "tensorflow", "libcudnn.so.8");
            assert_eq!(cudnn["owner"]["package"], "libcudnn8", "{n}: {cudnn}");
        },
    );
}

// ---- every rule over N GPUs --------------------------------------------------------------------

/// The fixture's nvidia-smi captures with each GPU repeated until there are `n`: every copy
/// keeps its GPU's facts (and so the findings it raises) under a bus id and UUID of its own.
fn repeat_captured_gpus(bin: &Path, n: usize) {
    let xml_path = bin.join("nvidia-smi.q-x.xml");
    let xml = std::fs::read_to_string(&xml_path).unwrap();
    let first = xml.find("<gpu id=").unwrap();
    let last = xml.rfind("</gpu>").unwrap() + "</gpu>".len();
    let blocks: Vec<(String, String)> = xml[first..last]
        .split_inclusive("</gpu>")
        .map(|b| b.trim_start().to_string())
        .filter(|b| b.starts_with("<gpu id="))
        .map(|b| {
            let id = b["<gpu id=\"".len()..]
                .split('"')
                .next()
                .unwrap()
                .to_string();
            (id, b)
        })
        .collect();
    let csv_path = bin.join("nvidia-smi.query-gpu.csv");
    let csv = std::fs::read_to_string(&csv_path).unwrap_or_default();
    let (mut gpus, mut rows) = (String::new(), String::new());
    for i in 0..n {
        let (id, block) = &blocks[i % blocks.len()];
        let bus = format!(
            "{:08X}:{:02X}:{:02X}.0",
            0x100 + (i >> 13),
            (i >> 5) & 0xff,
            i & 0x1f
        );
        gpus.push_str(
            &block
                .replace(id.as_str(), &bus)
                .replace("<uuid>GPU-", &format!("<uuid>GPU-{i:05x}")),
        );
        gpus.push('\n');
        if let Some(row) = csv.lines().find(|l| l.contains(id.as_str())) {
            let rest = row.split_once(',').map_or(row, |(_, r)| r);
            rows.push_str(&format!(
                "{i},{}\n",
                rest.replace(id.as_str(), &bus)
                    .replace(" GPU-", &format!(" GPU-{i:05x}"))
            ));
        }
    }
    let head = xml[..first].replace(
        &format!("<attached_gpus>{}</attached_gpus>", blocks.len()),
        &format!("<attached_gpus>{n}</attached_gpus>"),
    );
    std::fs::write(&xml_path, format!("{head}{gpus}{}", &xml[last..])).unwrap();
    if !csv.is_empty() {
        std::fs::write(&csv_path, rows).unwrap();
    }
}

/// Fixture machines whose GPUs raise findings of their own (ECC errors, throttling, a slow
/// link, persistence off, an architecture missing from the build, mixed models, no fabric
/// manager, a data-center-only compat package, an unchecked arch list, flash-attn's minimum):
/// with their GPUs repeated, each machine's work grows with the GPU count, not its square.
#[test]
fn every_rule_over_twice_the_gpus() {
    let dir = crate::support::tempdir();
    for fixture in [
        "ecc-uncorrectable-a100",
        "thermal-throttle-rtx3090",
        "pcie-x8-busy",
        "a100-persistence-off",
        "rtx5090-torch-cu126",
        "mixed-a100-v100",
        "hgx-fabric-manager-not-installed",
        "forward-compat-on-geforce",
        "k80-torch-131-unchecked",
        "flash-attn-on-turing-t4",
    ] {
        let expected: Vec<String> =
            std::fs::read_to_string(fixture_dir(fixture).join("expected-findings.txt"))
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
                .map(str::to_string)
                .collect();
        let dir = dir.path().join(fixture);
        doubling(
            &format!("doctor --json over {fixture}'s GPUs"),
            1,
            250,
            |n| {
                let root = dir.join(format!("m{n}"));
                if !root.exists() {
                    copy_tree(&fixture_dir(fixture).join("root"), &root);
                    if n > 1 {
                        repeat_captured_gpus(&root.join("usr/bin"), n);
                    }
                }
                on(fixture, &root, &["doctor", "--json"])
            },
            |n, out| {
                exit_0_or_1(n, out);
                let r: Value = serde_json::from_str(&out.stdout).unwrap();
                if n > 1 {
                    assert_eq!(r["gpus"].as_array().unwrap().len(), n, "{fixture}");
                }
                for id in &expected {
                    assert!(
                        out.stdout.contains(&format!("\"id\": \"{id}\"")),
                        "{fixture}: {id} missing at {n}"
                    );
                }
            },
        );
    }
}
