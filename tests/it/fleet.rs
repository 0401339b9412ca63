//! `gpu-doctor report merge` over fleets built from real reports: `doctor --json` of fixture
//! machines and the smoke results of real H200 runs (`tests/fixtures/real/`), edited per node
//! (host name, time, smoke numbers) into 40 nodes with several stacks, sick nodes, a slow
//! GPU, a duplicate, and files that are not reports at all.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::support::{Out, doctor, fixtures_dir};

/// `gpu-doctor report merge ARGS` in `cwd`, with an empty environment.
pub fn merge(cwd: &Path, args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .args(["report", "merge"])
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("gpu-doctor runs");
    Out::from(out)
}

fn merge_json(cwd: &Path, args: &[&str]) -> (Out, Value) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = merge(cwd, &all);
    let value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}\n{}", out.stdout, out.stderr));
    (out, value)
}

/// `doctor --json` of the fixture machines the fleets are made of, run once per test binary.
fn base(name: &str) -> Value {
    static BASES: OnceLock<BTreeMap<&'static str, Value>> = OnceLock::new();
    let bases = BASES.get_or_init(|| {
        [
            "h200",
            "healthy-torch-cu124-driver-550",
            "driver-library-mismatch",
            "torch-cu130-on-driver-550",
        ]
        .into_iter()
        .map(|n| (n, doctor(n)))
        .collect()
    });
    bases[name].clone()
}

/// The `smoke` object of a real run.
fn real_smoke(file: &str) -> Value {
    let path = fixtures_dir().join("real").join(file);
    let text = std::fs::read_to_string(&path).expect("real smoke report");
    let report: Value = serde_json::from_str(&text).expect("JSON");
    report["smoke"].clone()
}

/// A fixture's report as node `host`, made at `at`.
fn node(fixture: &str, host: &str, at: &str) -> Value {
    let mut r = base(fixture);
    r["host"]["hostname"] = json!(host);
    r["generated_at"] = json!(at);
    r
}

/// An H200 node with the real single-GPU bench results, its rates replaced.
fn h200_node(host: &str, bf16: f64, fp32: f64, d2d: f64) -> Value {
    let mut r = node("h200", host, "2026-11-30T10:00:00Z");
    let mut smoke = real_smoke("h200-smoke.json");
    let device = &mut smoke["devices"][0];
    device["throughput"]["cublaslt_bf16_tflops"] = json!(bf16);
    device["throughput"]["ptx_fp32_tflops"] = json!(fp32);
    device["bandwidth"]["device_to_device_gbs"] = json!(d2d);
    r["smoke"] = smoke;
    r
}

fn write(dir: &Path, name: &str, value: &Value) {
    let text = serde_json::to_string_pretty(value).expect("serialise");
    std::fs::write(dir.join(name), text).expect("write a report");
}

/// The rates each H200 node of the big fleet measured (node12 runs the 2-GPU smoke
/// without --bench, so it has device-to-device figures only).
fn rates(i: u32) -> (f64, f64, f64) {
    let bf16 = if i == 36 {
        390.0
    } else {
        780.0 + f64::from(i % 7) * 2.0
    };
    (
        bf16,
        42.0 + f64::from(i % 3) * 0.5,
        4190.0 + f64::from(i % 5) * 5.0,
    )
}

/// 40 nodes in `dir`: node01-node37 on the H200 stack (node36 with a slow GPU, node37 with a
/// failed memory check, node12 with two GPUs, node03 with fields from a newer gpu-doctor,
/// node05 with an older report too), node38 on driver 550 (healthy, odd), node39 with torch
/// too new for its driver (error), node40 with a driver/library mismatch (error); plus seven
/// files that are not reports, a text file, a hidden report and a subfolder.
fn big_fleet(dir: &Path) {
    std::fs::create_dir_all(dir).expect("fleet folder");
    for i in 1..=37 {
        let host = format!("node{i:02}");
        let (bf16, fp32, d2d) = rates(i);
        let mut r = h200_node(&host, bf16, fp32, d2d);
        match i {
            3 => {
                r["added_by_a_newer_gpu_doctor"] = json!({"x": [1, 2]});
                r["host"]["rack"] = json!("r7");
            }
            12 => {
                r["smoke"] = real_smoke("x2-smoke.json");
                let mut second = r["gpus"][0].clone();
                second["index"] = json!(1);
                r["gpus"].as_array_mut().expect("gpus").push(second);
            }
            37 => {
                r["smoke"]["status"] = json!("failed");
                let device = &mut r["smoke"]["devices"][0];
                device["passed"] = json!(false);
                device["memory"]["passed"] = json!(false);
                device["memory"]["errors"] = json!(12);
            }
            _ => {}
        }
        write(dir, &format!("{host}.json"), &r);
    }
    let mut old = node("h200", "node05", "2026-11-01T10:00:00Z");
    old["driver"]["version"] = json!("570.86.10");
    write(dir, "node05-old.json", &old);
    write(
        dir,
        "node38.json",
        &node(
            "healthy-torch-cu124-driver-550",
            "node38",
            "2026-11-30T10:00:00Z",
        ),
    );
    write(
        dir,
        "node39.json",
        &node(
            "torch-cu130-on-driver-550",
            "node39",
            "2026-11-30T10:00:00Z",
        ),
    );
    write(
        dir,
        "node40.json",
        &node("driver-library-mismatch", "node40", "2026-11-30T10:00:00Z"),
    );

    let full = serde_json::to_string_pretty(&base("h200")).expect("serialise");
    // Cut just inside the `driver` object, so the parser's complaint does not move with the
    // report's size: a copy that stopped mid-transfer.
    let cut = full.find("\"driver\": {").expect("driver") + "\"driver\": {".len();
    std::fs::write(dir.join("truncated.json"), &full[..cut]).expect("write");
    std::fs::write(dir.join("notjson.json"), "this is not JSON\n").expect("write");
    std::fs::write(dir.join("array.json"), r#"[{"schema_version": 1}]"#).expect("write");
    let mut wrong = node("h200", "wrongtypes", "2026-11-30T10:00:00Z");
    wrong["gpus"] = json!("eight");
    write(dir, "wrongtypes.json", &wrong);
    write(
        dir,
        "future.json",
        &json!({"schema_version": 2, "tool": {"name": "gpu-doctor", "version": "2.3.0"},
                "host": {"hostname": "future"}}),
    );
    write(dir, "zero.json", &json!({"schema_version": 0}));
    write(dir, "noversion.json", &json!({"host": {"hostname": "x"}}));
    std::fs::write(dir.join("notes.txt"), "not read\n").expect("write");
    write(
        dir,
        ".node99.json",
        &node("h200", "node99", "2026-11-30T10:00:00Z"),
    );
    std::fs::create_dir_all(dir.join("old")).expect("subfolder");
    write(
        &dir.join("old"),
        "node41.json",
        &node("h200", "node41", "2026-11-30T10:00:00Z"),
    );
}

fn strs(list: &Value, key: &str) -> Vec<String> {
    list.as_array()
        .expect("array")
        .iter()
        .map(|e| e[key].as_str().expect("string").to_string())
        .collect()
}

fn texts(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("array")
        .iter()
        .map(|e| e.as_str().expect("string").to_string())
        .collect()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        f64::midpoint(values[mid - 1], values[mid])
    }
}

#[test]
fn a_fleet_of_40_is_grouped_and_its_problems_named() {
    let tmp = crate::support::tempdir();
    big_fleet(&tmp.path().join("fleet"));
    let (out, f) = merge_json(tmp.path(), &["fleet"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(f["fleet_schema_version"], 1);
    assert_eq!(f["healthy"], false);
    assert_eq!(
        f["counts"],
        json!({"nodes": 40, "groups": 4, "odd_ones_out": 3, "attention": 3, "fewer_gpus": 0,
               "interconnect": 0,
               "duplicates": 1, "skipped": 7})
    );
    fleet_stacks(&f);
    fleet_odd_ones_out(&f);
    fleet_attention(&f);
    fleet_throughput(&f);
    fleet_duplicates(&f, &out);
    fleet_skipped(&f, &out);
}

/// (1) The stacks: 37 H200 nodes, then three of one node each.
fn fleet_stacks(f: &Value) {
    let groups = f["groups"].as_array().expect("groups");
    let first = &groups[0];
    let h200: Vec<String> = (1..=37).map(|i| format!("node{i:02}")).collect();
    assert_eq!(texts(&first["nodes"]), h200);
    assert_eq!(first["stack"]["driver"], "580.159.04");
    assert_eq!(first["stack"]["driver_cuda"], "13.0");
    assert_eq!(first["stack"]["toolkits"], json!(["13.0.88"]));
    assert_eq!(first["stack"]["cudnn"], json!(["9.14.0", "9.19.0"]));
    assert_eq!(first["stack"]["nccl"], json!(["2.28.3", "2.28.9"]));
    assert_eq!(
        first["stack"]["frameworks"],
        json!([
            {"env": "/opt/torch/.venv", "name": "cupy", "version": "14.2.0", "cuda": "13"},
            {"env": "/opt/torch/.venv", "name": "jax", "version": "0.11.2", "cuda": "13"},
            {"env": "/opt/torch/.venv", "name": "torch", "version": "2.11.0+cu130", "cuda": "13.0"},
        ])
    );
    assert_eq!(
        first["gpu_models"],
        json!([{"name": "NVIDIA H200", "count": 38}])
    );
    assert_eq!(
        f["majority"],
        json!({"group": 1, "nodes": 37, "tied": false})
    );
    // The healthy odd one comes before the sick ones among groups of one node.
    assert_eq!(groups[1]["nodes"], json!(["node38"]));
    assert_eq!(
        groups[1]["gpu_models"],
        json!([{"name": "NVIDIA L4", "count": 1}])
    );
}

/// (2) The odd ones out, field by field against the majority.
fn fleet_odd_ones_out(f: &Value) {
    let odd = &f["odd_ones_out"];
    assert_eq!(strs(odd, "node"), ["node38", "node39", "node40"]);
    let node38 = &odd[0]["differences"];
    let by_field: BTreeMap<String, &Value> = node38
        .as_array()
        .expect("differences")
        .iter()
        .map(|d| (d["field"].as_str().expect("field").to_string(), d))
        .collect();
    assert_eq!(
        *by_field["driver"],
        json!({"field": "driver", "node": "550.54.15", "majority": "580.159.04"})
    );
    assert_eq!(by_field["driver_cuda"]["node"], "12.4");
    assert_eq!(by_field["cudnn"]["node"], "9.1.0");
    assert_eq!(by_field["toolkits"]["node"], Value::Null);
    assert_eq!(
        *by_field["framework:/home/ubuntu/venv:torch"],
        json!({"field": "framework:/home/ubuntu/venv:torch",
               "node": "2.5.1+cu124 (CUDA 12.4)", "majority": null})
    );
    assert_eq!(
        by_field["framework:/opt/torch/.venv:torch"]["majority"],
        "2.11.0+cu130 (CUDA 13.0)"
    );
}

/// (3) Nodes that need attention, and why.
fn fleet_attention(f: &Value) {
    let attention = &f["attention"];
    assert_eq!(strs(attention, "node"), ["node37", "node39", "node40"]);
    assert_eq!(attention[0]["smoke_status"], "failed");
    assert_eq!(
        attention[0]["failed_gpus"],
        json!([{"index": 0, "name": "NVIDIA H200", "reason": "memory check found 12 errors"}])
    );
    assert_eq!(
        strs(&attention[1]["errors"], "id"),
        ["driver-too-old-for-framework"]
    );
    assert_eq!(attention[1]["smoke_status"], Value::Null);
    assert_eq!(
        strs(&attention[2]["errors"], "id"),
        ["driver-library-mismatch"]
    );
    let healthy: Vec<&str> = f["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter(|n| n["healthy"] == false)
        .map(|n| n["name"].as_str().expect("name"))
        .collect();
    assert_eq!(healthy, ["node37", "node39", "node40"]);
}

/// (4) The spread per GPU model, against numbers computed here.
fn fleet_throughput(f: &Value) {
    let t = &f["throughput"];
    assert_eq!(t["outlier_below_pct_of_median"], 90.0);
    assert_eq!(t["models"].as_array().expect("models").len(), 1);
    let m = &t["models"][0];
    assert_eq!(m["gpu"], "NVIDIA H200");
    assert_eq!(m["gpus_measured"], 38);
    let bf16: Vec<f64> = (1..=37).filter(|i| *i != 12).map(|i| rates(i).0).collect();
    let spread = &m["cublaslt_bf16_tflops"];
    assert_eq!(spread["measured"], 36);
    assert_eq!(spread["min"], 390.0);
    assert_eq!(spread["max"], 792.0);
    let bf16_median = median(bf16);
    assert_eq!(spread["median"], bf16_median);
    assert_eq!(spread["slowest"]["node"], "node36");
    assert_eq!(spread["slowest"]["index"], 0);
    let pct = (390.0 / bf16_median * 1000.0_f64).round() / 10.0;
    assert_eq!(spread["slowest"]["pct_of_median"], pct);
    let mut d2d: Vec<f64> = (1..=37).filter(|i| *i != 12).map(|i| rates(i).2).collect();
    d2d.extend([4221.21412158252, 4180.195655347775]);
    let d2d_spread = &m["device_to_device_gbs"];
    assert_eq!(d2d_spread["measured"], 38);
    assert_eq!(d2d_spread["median"], median(d2d));
    assert_eq!(d2d_spread["max"], 4221.21412158252);
    assert_eq!(d2d_spread["slowest"]["node"], "node12");
    assert_eq!(d2d_spread["slowest"]["index"], 1);
    assert_eq!(m["ptx_fp32_tflops"]["measured"], 36);
    assert_eq!(
        t["outliers"],
        json!([{"node": "node36", "index": 0, "gpu": "NVIDIA H200",
                "metric": "cublaslt_bf16_tflops", "value": 390.0,
                "median": bf16_median, "pct_of_median": pct}])
    );
}

/// The duplicate: the newer node05 report wins over the older one on another driver.
fn fleet_duplicates(f: &Value, out: &Out) {
    assert_eq!(
        f["duplicates"],
        json!([{"node": "node05", "kept": "fleet/node05.json",
                "kept_generated_at": "2026-11-30T10:00:00Z",
                "dropped": "fleet/node05-old.json",
                "dropped_generated_at": "2026-11-01T10:00:00Z",
                "reason": "older (2026-11-01T10:00:00Z; kept 2026-11-30T10:00:00Z)"}])
    );
    assert!(
        out.stderr.contains(
            "node05: two reports; using fleet/node05.json, dropped fleet/node05-old.json"
        ),
        "{}",
        out.stderr
    );
}

/// Files skipped, each with its reason; the hidden file and the subfolder are not read.
fn fleet_skipped(f: &Value, out: &Out) {
    let skipped = f["skipped"].as_array().expect("skipped");
    let kinds: Vec<(&str, &str)> = skipped
        .iter()
        .map(|s| {
            (
                s["file"].as_str().expect("file"),
                s["kind"].as_str().expect("kind"),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("fleet/array.json", "not_a_report"),
            ("fleet/future.json", "newer_schema"),
            ("fleet/notjson.json", "corrupt"),
            ("fleet/noversion.json", "not_a_report"),
            ("fleet/truncated.json", "corrupt"),
            ("fleet/wrongtypes.json", "corrupt"),
            ("fleet/zero.json", "not_a_report"),
        ]
    );
    let reason = |file: &str| {
        skipped
            .iter()
            .find(|s| s["file"] == file)
            .and_then(|s| s["reason"].as_str())
            .expect("reason")
            .to_string()
    };
    assert_eq!(
        reason("fleet/array.json"),
        "not a gpu-doctor report (a JSON array, not an object)"
    );
    assert_eq!(
        reason("fleet/noversion.json"),
        "not a gpu-doctor report (no schema_version)"
    );
    assert_eq!(
        reason("fleet/zero.json"),
        "not a gpu-doctor report (schema_version 0)"
    );
    assert!(reason("fleet/truncated.json").starts_with("not valid JSON: EOF while parsing"));
    assert!(reason("fleet/notjson.json").starts_with("not valid JSON: expected ident at line 1"));
    let wrong = reason("fleet/wrongtypes.json");
    assert!(
        wrong.starts_with(
            "not a valid report: invalid type: string \"eight\", expected a sequence at line"
        ),
        "{wrong}"
    );
    let refusal = format!(
        "gpu-doctor: refusing fleet/future.json: report schema 2, written by gpu-doctor 2.3.0; \
         this gpu-doctor ({}) reads schema 1: upgrade gpu-doctor to merge it",
        env!("CARGO_PKG_VERSION")
    );
    assert!(out.stderr.contains(&refusal), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("warning: skipping fleet/truncated.json: not valid JSON"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("gpu-doctor: fleet/old: a subfolder, not read"),
        "{}",
        out.stderr
    );
    let names = texts(&json!(strs(&f["nodes"], "name")));
    assert!(
        !names
            .iter()
            .any(|n| n == "node99" || n == "node41" || n == "future")
    );
    assert_eq!(f["nodes"][2]["file"], "fleet/node03.json");
}

#[test]
fn the_same_reports_give_the_same_bytes_in_any_order() {
    let tmp = crate::support::tempdir();
    big_fleet(&tmp.path().join("fleet"));
    let by_dir = merge(tmp.path(), &["--json", "fleet"]);
    let again = merge(tmp.path(), &["--json", "fleet"]);
    assert_eq!(by_dir.stdout, again.stdout);
    let mut files: Vec<String> = std::fs::read_dir(tmp.path().join("fleet"))
        .expect("list")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
        .map(|n| format!("fleet/{n}"))
        .collect();
    files.sort();
    files.reverse();
    // The node03 report named twice, as a file and through its folder, is still one node.
    files.push("fleet".to_string());
    let mut args = vec!["--json"];
    args.extend(files.iter().map(String::as_str));
    let by_files = merge(tmp.path(), &args);
    assert_eq!(by_dir.code, by_files.code);
    assert_eq!(by_dir.stdout, by_files.stdout);
    let text = merge(tmp.path(), &["fleet"]);
    let text_again = merge(tmp.path(), &["fleet"]);
    assert_eq!(text.stdout, text_again.stdout);
}

/// Replaces this gpu-doctor's version, which refusals name, and the positions in parser
/// errors, which move whenever the fixture reports grow, so the snapshots survive both.
fn unversioned(text: &str) -> String {
    let text = text.replace(
        &format!("this gpu-doctor ({})", env!("CARGO_PKG_VERSION")),
        "this gpu-doctor ([VERSION])",
    );
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(" at line ") {
        out.push_str(&rest[..at]);
        let after = &rest[at + " at line ".len()..];
        let line_digits = after.bytes().take_while(u8::is_ascii_digit).count();
        let tail = &after[line_digits..];
        match tail.strip_prefix(" column ") {
            Some(col) if line_digits > 0 => {
                let col_digits = col.bytes().take_while(u8::is_ascii_digit).count();
                out.push_str(" at line [L] column [C]");
                rest = &col[col_digits..];
            }
            _ => {
                out.push_str(" at line ");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn text_and_markdown_of_the_fleet() {
    let tmp = crate::support::tempdir();
    big_fleet(&tmp.path().join("fleet"));
    let text = merge(tmp.path(), &["fleet"]);
    assert_eq!(text.code, 1);
    assert!(
        text.stdout.contains("  stack 1: 37 nodes: node[01-37]\n"),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("    driver 550.54.15 (most: 580.159.04)"),
        "{}",
        text.stdout
    );
    insta::assert_snapshot!("fleet_text", unversioned(&text.stdout));

    let md = merge(tmp.path(), &["--format", "markdown", "fleet"]);
    assert_eq!(md.code, 1);
    assert_tables(&md.stdout);
    for heading in [
        "# gpu-doctor fleet summary",
        "## Stacks",
        "## Odd ones out",
        "## Needs attention",
        "## Throughput by GPU model",
        "### Outliers",
        "## Duplicate reports",
        "## Skipped files",
    ] {
        assert!(
            md.stdout.lines().any(|l| l == heading),
            "no {heading}:\n{}",
            md.stdout
        );
    }
    insta::assert_snapshot!("fleet_markdown", unversioned(&md.stdout));
}

/// Cells of a Markdown table row: split on `|` not escaped by `\`.
fn cells(line: &str) -> usize {
    let mut count: usize = 0;
    let mut escaped = false;
    for c in line.chars() {
        match c {
            '\\' if !escaped => escaped = true,
            '|' if !escaped => count += 1,
            _ => escaped = false,
        }
        if c != '\\' {
            escaped = false;
        }
    }
    count.saturating_sub(1)
}

/// Every table: a header, a `|---|` line of as many cells, and rows of as many cells.
#[track_caller]
fn assert_tables(markdown: &str) {
    let lines: Vec<&str> = markdown.lines().collect();
    let mut tables = 0;
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].starts_with('|') {
            i += 1;
            continue;
        }
        tables += 1;
        let width = cells(lines[i]);
        assert!(width >= 2, "{}", lines[i]);
        assert_eq!(
            lines[i + 1],
            format!("|{}", "---|".repeat(width)),
            "{markdown}"
        );
        i += 2;
        while i < lines.len() && lines[i].starts_with('|') {
            assert!(lines[i].ends_with(" |"), "{}", lines[i]);
            assert_eq!(cells(lines[i]), width, "row: {}\n{markdown}", lines[i]);
            i += 1;
        }
        assert!(
            i == lines.len() || lines[i].is_empty(),
            "a table must end with a blank line: {:?}",
            lines.get(i)
        );
    }
    assert!(tables >= 2, "{markdown}");
}

#[test]
fn hostile_host_names_are_cleaned_and_cannot_break_a_table() {
    let tmp = crate::support::tempdir();
    let dir = tmp.path().join("fleet");
    std::fs::create_dir_all(&dir).expect("dir");
    let hostile = [
        "evil\u{1b}[31mred\u{1b}[0m",
        "pipe|host",
        "line\nbreak",
        "bidi\u{202e}txt",
    ];
    for (i, host) in hostile.iter().enumerate() {
        let mut r = node("h200", host, "2026-11-30T10:00:00Z");
        if i == 1 {
            r["driver"]["version"] = json!("550.54.15|<b>x</b>");
            r["findings"] = json!([{"id": "made-up", "severity": "error",
                "title": "a | title\u{7} with `code`", "detail": "", "evidence": [],
                "fix": null, "explains": [], "subjects": []}]);
        }
        write(&dir, &format!("n{i}.json"), &r);
    }
    std::fs::write(dir.join("bad\u{1b}]0;x\u{7}.json"), "{").expect("write");
    let text = merge(tmp.path(), &["fleet"]);
    assert_eq!(text.code, 1, "{}", text.stderr);
    for out in [&text.stdout, &text.stderr] {
        assert!(!out.contains('\u{1b}'), "{out}");
        assert!(!out.contains('\u{7}'), "{out}");
        assert!(!out.contains('\u{202e}'), "{out}");
    }
    assert!(text.stdout.contains("line?break"), "{}", text.stdout);
    assert!(text.stdout.contains("evil?[31mred?[0m"), "{}", text.stdout);

    let md = merge(tmp.path(), &["--format", "markdown", "fleet"]);
    assert!(!md.stdout.contains('\u{1b}'));
    assert_tables(&md.stdout);
    assert!(md.stdout.contains("pipe\\|host"), "{}", md.stdout);
    assert!(
        md.stdout.contains("550.54.15\\|\\<b\\>x\\</b\\>"),
        "{}",
        md.stdout
    );
    assert!(
        md.stdout.contains("a \\| title? with \\`code\\`"),
        "{}",
        md.stdout
    );

    // JSON keeps the names as the reports hold them, escaped by JSON itself.
    let (_, f) = merge_json(tmp.path(), &["fleet"]);
    assert!(
        strs(&f["nodes"], "name").contains(&"pipe|host".to_string()),
        "{f}"
    );
}

#[test]
fn exit_codes_say_healthy_attention_or_nothing_read() {
    let tmp = crate::support::tempdir();
    let healthy = tmp.path().join("healthy");
    std::fs::create_dir_all(&healthy).expect("dir");
    for i in 1..=3 {
        let host = format!("gpu{i}");
        write(
            &healthy,
            &format!("{host}.json"),
            &h200_node(&host, 790.0, 42.9, 4200.0),
        );
    }
    // A report from `doctor` without a time (made under --root) is read too.
    write(&healthy, "gpu4.json", &base("h200"));
    let ok = merge(tmp.path(), &["healthy"]);
    assert_eq!(ok.code, 0, "{}\n{}", ok.stdout, ok.stderr);
    assert!(ok.stdout.contains("All 4 nodes healthy"), "{}", ok.stdout);
    assert!(
        ok.stdout
            .starts_with("Fleet: 4 nodes, 1 stack, all healthy\n"),
        "{}",
        ok.stdout
    );
    assert!(ok.stdout.contains("vm"), "{}", ok.stdout);
    assert_eq!(ok.stderr, "");

    // Drift alone does not fail.
    let drift = tmp.path().join("drift");
    std::fs::create_dir_all(&drift).expect("dir");
    write(&drift, "a.json", &h200_node("a", 790.0, 42.9, 4200.0));
    write(&drift, "b.json", &h200_node("b", 790.0, 42.9, 4200.0));
    write(
        &drift,
        "c.json",
        &node(
            "healthy-torch-cu124-driver-550",
            "c",
            "2026-11-30T10:00:00Z",
        ),
    );
    write(&drift, "slow.json", &h200_node("slow", 400.0, 20.0, 2000.0));
    let (out, f) = merge_json(tmp.path(), &["drift"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(f["counts"]["odd_ones_out"], 1);
    assert_eq!(
        f["throughput"]["outliers"]
            .as_array()
            .expect("outliers")
            .len(),
        3
    );

    // Nothing readable: exit 3, and the summary still lists why.
    let broken = tmp.path().join("broken");
    std::fs::create_dir_all(&broken).expect("dir");
    std::fs::write(broken.join("a.json"), "{").expect("write");
    let (out, f) = merge_json(tmp.path(), &["broken", "missing.json"]);
    assert_eq!(out.code, 3);
    assert!(
        out.stderr.contains("gpu-doctor: no report could be read"),
        "{}",
        out.stderr
    );
    assert_eq!(strs(&f["skipped"], "kind"), ["corrupt", "unreadable"]);
    assert!(
        f["skipped"][1]["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("cannot read: No such file")),
        "{f}"
    );
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    assert_eq!(merge(tmp.path(), &["empty"]).code, 3);

    // No paths at all is a usage error.
    assert_eq!(merge(tmp.path(), &[]).code, 2);
}

#[test]
fn output_goes_to_a_file_and_big_files_are_refused_unread() {
    let tmp = crate::support::tempdir();
    let dir = tmp.path().join("fleet");
    std::fs::create_dir_all(&dir).expect("dir");
    write(&dir, "a.json", &h200_node("a", 790.0, 42.9, 4200.0));
    // Sparse: 65 MiB on paper, nothing on disk.
    let huge = std::fs::File::create(dir.join("huge.json")).expect("create");
    huge.set_len(65 * 1024 * 1024).expect("set_len");
    let out = merge(tmp.path(), &["--json", "-o", "summary.json", "fleet"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "");
    let written = std::fs::read_to_string(tmp.path().join("summary.json")).expect("summary");
    let f: Value = serde_json::from_str(&written).expect("JSON");
    assert_eq!(f["counts"]["nodes"], 1);
    assert_eq!(f["skipped"][0]["kind"], "too_large");
    assert_eq!(
        f["skipped"][0]["reason"],
        "larger than 16 MiB; a node's report is far smaller"
    );
    // The summary written into the folder is passed over the next time.
    std::fs::rename(tmp.path().join("summary.json"), dir.join("summary.json")).expect("mv");
    let (_, again) = merge_json(tmp.path(), &["fleet"]);
    assert_eq!(again["counts"]["nodes"], 1);
    assert_eq!(again["counts"]["skipped"], 1);
    let (_, named) = merge_json(tmp.path(), &["fleet/summary.json", "fleet/a.json"]);
    assert_eq!(named["skipped"][0]["kind"], "not_a_report");
}

/// The healthy H200 node `host` whose driver shows `count` GPUs.
fn hgx(host: &str, count: usize) -> Value {
    let mut r = node("h200", host, "2026-11-30T10:00:00Z");
    let first = r["gpus"][0].clone();
    let gpus: Vec<Value> = (0..count)
        .map(|i| {
            let mut g = first.clone();
            g["index"] = json!(i);
            g
        })
        .collect();
    r["gpus"] = json!(gpus);
    r
}

/// An 8-GPU node whose driver shows 7 looks healthy alone; next to its peers it is named, and
/// fails the run unless --allow-missing-gpus.
#[test]
fn a_node_that_shows_fewer_gpus_than_its_peers_is_named() {
    let dir = crate::support::tempdir();
    for (host, count) in [("hgx1", 8), ("hgx2", 8), ("hgx3", 7), ("hgx4", 8)] {
        write(dir.path(), &format!("{host}.json"), &hgx(host, count));
    }
    let (out, f) = merge_json(dir.path(), &["."]);
    assert_eq!(out.code, 1, "a lost GPU fails: {}", out.stderr);
    assert_eq!(f["healthy"], true, "no node is sick by its own report");
    assert_eq!(f["counts"]["fewer_gpus"], 1);
    assert_eq!(
        f["fewer_gpus"],
        json!([{"node": "hgx3", "gpu": "NVIDIA H200", "count": 7, "usual": 8, "nodes_with_usual": 3}])
    );
    let text = merge(dir.path(), &["."]).stdout;
    assert!(
        text.contains(
            "Fewer GPUs than their peers (1)\n  hgx3: 7 × NVIDIA H200 (usual: 8, on 3 nodes)"
        ),
        "{text}"
    );
    let markdown = merge(dir.path(), &[".", "--format", "markdown"]).stdout;
    assert!(
        markdown.contains("| hgx3 | NVIDIA H200 | 7 | 8 | 3 |"),
        "{markdown}"
    );
    assert_tables(&markdown);
}

/// The issue's case: 40 eight-GPU nodes, one of which shows 7. The run fails and names the
/// node (on stderr and in every face); `--allow-missing-gpus` keeps the names and exits 0.
/// A tie between two counts is two kinds of machine, not a lost GPU, and fails nothing.
#[test]
fn forty_nodes_with_one_at_seven_of_eight_gpus_fail_unless_allowed() {
    let tmp = crate::support::tempdir();
    let dir = tmp.path().join("fleet");
    std::fs::create_dir_all(&dir).expect("dir");
    for i in 1..=40 {
        let host = format!("gpu{i:02}");
        let count = if i == 23 { 7 } else { 8 };
        write(&dir, &format!("{host}.json"), &hgx(&host, count));
    }
    let text = merge(tmp.path(), &["fleet"]);
    assert_eq!(text.code, 1, "{}\n{}", text.stdout, text.stderr);
    assert!(
        text.stderr.contains("gpu23 (7 of 8 × NVIDIA H200)")
            && text.stderr.contains("--allow-missing-gpus"),
        "{}",
        text.stderr
    );
    assert!(
        text.stdout.starts_with(
            "Fleet: 40 nodes, 1 stack, all healthy, 1 node with fewer GPUs than its peers\n"
        ),
        "{}",
        text.stdout
    );
    let (out, f) = merge_json(tmp.path(), &["fleet", "--allow-missing-gpus"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stderr, "");
    assert_eq!(strs(&f["fewer_gpus"], "node"), ["gpu23"]);
    assert_eq!(f["fewer_gpus"][0]["usual"], 8);
    assert_eq!(f["fewer_gpus"][0]["nodes_with_usual"], 39);

    // Twenty 8-GPU and twenty 4-GPU machines of one model: no usual count, nothing fails.
    let tied = tmp.path().join("tied");
    std::fs::create_dir_all(&tied).expect("dir");
    for i in 1..=40 {
        let host = format!("gpu{i:02}");
        write(
            &tied,
            &format!("{host}.json"),
            &hgx(&host, if i % 2 == 0 { 8 } else { 4 }),
        );
    }
    let out = merge(tmp.path(), &["tied"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

/// Four HGX H100 nodes (the hgx-h100-eight-nics-nccl-unset fixture's report, with the matrix of
/// sgl-project/sglang#30401), one of which shows GPU2 and GPU6 on PCIe across the sockets
/// instead of NVLink: alone it looks sound; next to its peers it is named with the pair. It is
/// informational: the exit code is the peers'.
#[test]
fn a_node_whose_gpu_pair_lost_its_nvlink_is_named_next_to_its_peers() {
    let base = doctor("hgx-h100-eight-nics-nccl-unset");
    let dir = crate::support::tempdir();
    for host in ["hgx1", "hgx2", "hgx3", "hgx4"] {
        let mut r = base.clone();
        r["host"]["hostname"] = json!(host);
        if host == "hgx3" {
            r["topology"]["gpus"][2]["gpus"][6] = json!("SYS");
            r["topology"]["gpus"][6]["gpus"][2] = json!("SYS");
        }
        write(dir.path(), &format!("{host}.json"), &r);
    }
    let (out, f) = merge_json(dir.path(), &["."]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(f["counts"]["interconnect"], 1);
    assert_eq!(
        f["interconnect"],
        json!([{"node": "hgx3", "gpus": "8 × NVIDIA H100 80GB HBM3", "links": "NV18/SYS",
                "usual": "NV18", "nodes_with_usual": 3, "pairs": ["GPU2-GPU6 SYS"]}])
    );
    let text = merge(dir.path(), &["."]).stdout;
    assert!(
        text.contains(
            "GPUs wired otherwise than their peers (1)\n  hgx3: 8 × NVIDIA H100 80GB HBM3, links \
             NV18/SYS (usual: NV18, on 3 nodes): GPU2-GPU6 SYS"
        ),
        "{text}"
    );
    let markdown = merge(dir.path(), &[".", "--format", "markdown"]).stdout;
    assert!(
        markdown
            .contains("| hgx3 | 8 × NVIDIA H100 80GB HBM3 | NV18/SYS | NV18 | 3 | GPU2-GPU6 SYS |"),
        "{markdown}"
    );
    assert_tables(&markdown);
}
