//! Every fixture machine × a grid of `--via` / `--os` / `--framework` / `--cuda` / `--driver`
//! targets, planned in-process through the library (one `doctor --json` per fixture, then
//! thousands of `plan::plan` calls): no panic; every plan either written or refused with a
//! reason, never by the last-word line check (that would be a planner bug the decision should
//! have caught); every apt, pip and conda line of every written plan carried by its source
//! (repos.toml, pypi.toml for the environment's Python, install.toml's conda rows); every
//! distinct script valid for `bash -n` and clean for shellcheck (batched, comments stripped so
//! scripts that differ only in their header are checked once).
//!
//! `cargo test --test it plan_sweep -- --nocapture` prints the figures: plans written and
//! refused, lines checked, lines contradicted.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use gpu_doctor::manifest::embedded;
use gpu_doctor::plan::{self, Target, lines};
use gpu_doctor::report::Report;

use crate::support::{fixtures_dir, on_fixture};

/// The targets CI plans on every fixture: each `--via`, each framework family, a `--cuda` per
/// major, each `--os`, and `--driver auto`, alone and in the combinations that take different
/// paths through the planner.
const TARGETS: [[Option<&str>; 5]; 14] = [
    // via, os, framework, cuda, driver
    [None, None, None, None, None],
    [None, None, None, None, Some("auto")],
    [None, None, Some("torch"), None, None],
    [None, None, Some("torch"), None, Some("auto")],
    [None, None, Some("tensorflow==2.15"), None, None],
    [None, None, Some("jax[cuda13]"), None, None],
    [None, None, Some("jax[cuda12]"), None, Some("auto")],
    [None, None, Some("cupy"), None, None],
    [Some("apt"), None, None, Some("12.4"), None],
    [
        Some("apt"),
        Some("ubuntu-24.04"),
        None,
        Some("13.0"),
        Some("auto"),
    ],
    [Some("apt"), Some("ubuntu-22.04"), Some("torch"), None, None],
    [Some("conda"), None, Some("torch==2.5.1"), None, None],
    [
        Some("conda"),
        Some("ubuntu-24.04"),
        Some("jax[cuda12]"),
        Some("12.8"),
        Some("auto"),
    ],
    [
        Some("pip"),
        Some("ubuntu-24.04"),
        Some("tensorflow"),
        None,
        None,
    ],
];

// `GPU_DOCTOR_SWEEP=full`: the whole grid, every combination of these (768 targets a fixture,
// several minutes in a debug build; the figures in README's Plans section come from it).
const VIAS: [Option<&str>; 4] = [None, Some("apt"), Some("conda"), Some("pip")];
const OSES: [Option<&str>; 3] = [None, Some("ubuntu-22.04"), Some("ubuntu-24.04")];
const FRAMEWORKS: [Option<&str>; 8] = [
    None,
    Some("torch"),
    Some("torch==2.5.1"),
    Some("tensorflow"),
    Some("tensorflow==2.15"),
    Some("jax[cuda12]"),
    Some("jax[cuda13]"),
    Some("cupy"),
];
const CUDAS: [Option<&str>; 4] = [None, Some("12.4"), Some("12.8"), Some("13.0")];
const DRIVERS: [Option<&str>; 2] = [None, Some("auto")];

fn targets() -> Vec<[Option<&'static str>; 5]> {
    if std::env::var("GPU_DOCTOR_SWEEP").is_ok_and(|v| v == "full") {
        let mut out = Vec::new();
        for via in VIAS {
            for os in OSES {
                for framework in FRAMEWORKS {
                    for cuda in CUDAS {
                        for driver in DRIVERS {
                            out.push([via, os, framework, cuda, driver]);
                        }
                    }
                }
            }
        }
        out
    } else {
        TARGETS.to_vec()
    }
}

fn report_of(fixture: &str) -> Option<Report> {
    let out = on_fixture(fixture, &[], &["doctor", "--json"], None);
    serde_json::from_slice(&out.stdout).ok()
}

fn target(
    via: Option<&str>,
    os: Option<&str>,
    framework: Option<&str>,
    cuda: Option<&str>,
    driver: Option<&str>,
) -> Target {
    let via = via.map(|v| match v {
        "apt" => plan::Via::Apt,
        "conda" => plan::Via::Conda,
        _ => plan::Via::Pip,
    });
    Target {
        via,
        os: os.map(str::to_string),
        framework: framework.map(|f| plan::target::parse_framework(f).expect("framework")),
        cuda: cuda.map(str::to_string),
        driver: driver.map_or(plan::DriverChoice::Keep, |d| {
            plan::target::parse_driver(d).expect("driver")
        }),
        env: via
            .filter(|v| *v == plan::Via::Conda)
            .map(|_| "ml".to_string()),
        ..Target::default()
    }
}

/// A plan's shape: its steps with the kinds of their guards and commands, and its via. Plans of
/// one shape render to the same shell code around different quoted values (package names,
/// versions, paths), which shellcheck judges alike; quoting itself is tested in `plan::shell`
/// and by `hostile_names_cannot_inject_commands`. So one script of each shape is linted.
fn shape(p: &plan::Plan) -> String {
    let kind = |d: String| {
        d.split(['(', ' ', '{'])
            .next()
            .unwrap_or_default()
            .to_string()
    };
    p.steps
        .iter()
        .map(|s| {
            let guards: Vec<String> = s
                .guards
                .iter()
                .map(|g| kind(format!("{:?}", g.check)))
                .collect();
            let commands: Vec<String> = s.commands.iter().map(|c| kind(format!("{c:?}"))).collect();
            format!(
                "{}[{}|{}|{}]",
                s.id,
                guards.join(","),
                commands.join(","),
                s.reboot
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
        + &format!(" notes={}", !p.notes.is_empty())
}

#[test]
fn every_fixture_and_target_plans_lines_that_exist() {
    let m = embedded();
    let mut fixtures: Vec<String> = std::fs::read_dir(fixtures_dir())
        .expect("fixtures")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("root").is_dir() && e.path().join("env").is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    fixtures.sort();
    let targets = targets();
    let (mut written, mut refused, mut checked) = (0usize, 0usize, 0usize);
    let mut contradicted: Vec<String> = Vec::new();
    let mut by_manager: BTreeMap<&str, usize> = BTreeMap::new();
    let mut distinct_lines: BTreeSet<String> = BTreeSet::new();
    let mut scripts: BTreeMap<String, String> = BTreeMap::new();
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let started = std::time::Instant::now();
    // One `doctor --json` per fixture, four at a time: the machine's facts, as plan reads them.
    let reports: Vec<(String, Report)> = std::thread::scope(|scope| {
        let chunks: Vec<_> = fixtures
            .chunks(fixtures.len().div_ceil(4))
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .filter_map(|f| report_of(f).map(|r| (f.clone(), r)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        chunks
            .into_iter()
            .flat_map(|h| h.join().expect("doctor runs"))
            .collect()
    });
    assert!(
        reports.len() > 50,
        "fixtures give reports: {}",
        reports.len()
    );
    for (fixture, report) in &reports {
        for [via, os, framework, cuda, driver] in &targets {
            let t = target(*via, *os, *framework, *cuda, *driver);
            let p = match plan::plan(report, m, &t) {
                Ok(p) => p,
                Err(refusal) => {
                    refused += 1;
                    assert!(
                        !refusal.reason.starts_with("the plan would install"),
                        "{fixture} {t:?}: the last-word check refused: {}",
                        refusal.reason
                    );
                    let key: String = refusal.reason.chars().take(48).collect();
                    *reasons.entry(key).or_default() += 1;
                    continue;
                }
            };
            written += 1;
            for line in lines::check(&p, m) {
                checked += 1;
                let manager = match line.manager {
                    lines::Manager::Apt => "apt",
                    lines::Manager::Pip => "pip",
                    lines::Manager::Conda => "conda",
                };
                *by_manager.entry(manager).or_default() += 1;
                distinct_lines.insert(format!("{manager} {}", line.text));
                if let Err(why) = line.verdict {
                    contradicted.push(format!("{fixture} {t:?}: {} ({why})", line.text));
                }
            }
            let script = plan::shell::render(&p, &Default::default());
            scripts.entry(shape(&p)).or_insert(script);
        }
    }
    eprintln!(
        "plan sweep: {} fixtures, {} targets each: {written} plans written, {refused} refused; \
         {checked} package lines checked ({} distinct; {by_manager:?}), {} contradicted; {} \
         script shapes; planned in {:.1} s",
        fixtures.len(),
        targets.len(),
        distinct_lines.len(),
        contradicted.len(),
        scripts.len(),
        started.elapsed().as_secs_f64()
    );
    for (reason, n) in &reasons {
        eprintln!("  refused {n:>5}: {reason}...");
    }
    assert!(contradicted.is_empty(), "{}", contradicted.join("\n"));
    assert!(
        written > fixtures.len() * 3,
        "the targets write plans: {written}"
    );
    assert!(checked > written, "plans install packages: {checked} lines");

    // bash -n and shellcheck on one script of each shape, shellcheck in one batch.
    let dir = tempfile::tempdir().expect("temp dir");
    let paths: Vec<std::path::PathBuf> = scripts
        .values()
        .enumerate()
        .map(|(i, s)| {
            let path = dir.path().join(format!("plan-{i}.sh"));
            std::fs::write(&path, s).expect("write");
            path
        })
        .collect();
    for path in &paths {
        let out = Command::new("bash")
            .arg("-n")
            .arg(path)
            .output()
            .expect("bash");
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if Command::new("shellcheck").arg("--version").output().is_ok() {
        // Two batches side by side: CI has two cores.
        let outs: Vec<std::process::Output> = std::thread::scope(|scope| {
            let handles: Vec<_> = paths
                .chunks(paths.len().div_ceil(2).max(1))
                .map(|chunk| {
                    scope.spawn(move || {
                        Command::new("shellcheck")
                            .args(chunk)
                            .output()
                            .expect("shellcheck")
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("shellcheck runs"))
                .collect()
        });
        for out in outs {
            assert!(
                out.status.success(),
                "shellcheck:\n{}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
}
