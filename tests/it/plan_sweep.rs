//! Every fixture machine × a grid of `--via` / `--os` / `--framework` / `--cuda` / `--driver`
//! targets, planned in-process through the library (one `doctor --json` per fixture, then
//! thousands of `plan::plan` calls): no panic; every plan either written or refused with a
//! reason, never by the last-word line check (that would be a planner bug the decision should
//! have caught); every apt, pip and conda line of every written plan carried by its source
//! (repos.toml, pypi.toml for the environment's Python, install.toml's conda rows); every
//! distinct script valid for `bash -n` and clean for shellcheck (batched, comments stripped so
//! scripts that differ only in their header are checked once).
//!
//! By default each fixture is planned for the plain target and four of the others, taken in
//! turn so that every target runs on about 30% of the fixtures (and every fixture on five
//! targets): the same checks over a third of the plans, since the planner's paths are told apart
//! by the target and by the machine's kind, and each kind has several fixtures.
//! `GPU_DOCTOR_SWEEP=targets` plans every target on every fixture (what the default was before
//! issue 29: 67 s on two cores), `GPU_DOCTOR_SWEEP=full` the whole grid below.
//!
//! `cargo test --test it plan_sweep -- --nocapture` prints the figures: plans written and
//! refused, lines checked, lines contradicted.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use gpu_doctor::manifest::embedded;
use gpu_doctor::plan::{self, Target, lines};
use gpu_doctor::report::Report;

use crate::support::{doctor_all, machine_names};

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
        full_grid()
    } else {
        TARGETS.to_vec()
    }
}

/// Every combination of the grid's values (768 targets).
pub fn full_grid() -> Vec<[Option<&'static str>; 5]> {
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
}

/// Targets besides the plain one that each fixture gets by default.
const EACH: usize = 4;

/// The targets fixture number `i` is planned for: with [`targets`]' whole list, all of them;
/// by default the plain one and [`EACH`] others, taken in turn from fixture to fixture.
fn targets_of(i: usize, all: &[[Option<&'static str>; 5]]) -> Vec<[Option<&'static str>; 5]> {
    let sweep = std::env::var("GPU_DOCTOR_SWEEP").unwrap_or_default();
    if sweep == "full" || sweep == "targets" || all.len() <= EACH + 1 {
        return all.to_vec();
    }
    let rest = &all[1..];
    std::iter::once(all[0])
        .chain((0..EACH).map(|k| rest[(i * EACH + k) % rest.len()]))
        .collect()
}

#[test]
fn the_default_sweep_gives_every_target_to_several_fixtures() {
    let all = TARGETS.to_vec();
    let mut uses = vec![0usize; all.len()];
    for i in 0..60 {
        let mine = targets_of(i, &all);
        if std::env::var("GPU_DOCTOR_SWEEP").is_err() {
            assert_eq!(mine.len(), EACH + 1);
        }
        for t in mine {
            let at = all
                .iter()
                .position(|a| *a == t)
                .expect("a target of the list");
            uses[at] += 1;
        }
    }
    assert!(uses.iter().all(|&n| n >= 10), "{uses:?}");
}

pub fn target(
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
                s.id(),
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
    let fixtures = machine_names();
    let targets = targets();
    let (mut written, mut refused, mut checked, mut pairs) = (0usize, 0usize, 0usize, 0usize);
    let mut contradicted: Vec<String> = Vec::new();
    let mut by_manager: BTreeMap<&str, usize> = BTreeMap::new();
    let mut distinct_lines: BTreeSet<String> = BTreeSet::new();
    let mut scripts: BTreeMap<String, String> = BTreeMap::new();
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut appearing: BTreeMap<String, usize> = BTreeMap::new();
    let started = std::time::Instant::now();
    // One `doctor --json` per fixture (shared with the other tests of this binary): the
    // machine's facts, as plan reads them.
    let reports: Vec<(String, Report)> = doctor_all(&fixtures)
        .into_iter()
        .filter_map(|(f, v)| serde_json::from_value(v).ok().map(|r| (f, r)))
        .collect();
    assert!(
        reports.len() > 50,
        "fixtures give reports: {}",
        reports.len()
    );
    for (i, (fixture, report)) in reports.iter().enumerate() {
        for [via, os, framework, cuda, driver] in &targets_of(i, &targets) {
            pairs += 1;
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
                    // The machine a plan leaves still has a finding it addresses: the planner
                    // chose steps that do not do what they are for.
                    assert!(
                        !refusal
                            .reason
                            .starts_with("gpu-doctor diagnosed the machine"),
                        "{fixture} {t:?}: {}",
                        refusal.reason
                    );
                    let key: String = refusal.reason.chars().take(48).collect();
                    *reasons.entry(key).or_default() += 1;
                    continue;
                }
            };
            written += 1;
            healthy_gets_nothing(fixture, report, &t, &p);
            for note in p.notes.iter().filter(|n| n.starts_with("After this plan")) {
                let id: String = note
                    .trim_start_matches("After this plan, gpu-doctor would report ")
                    .chars()
                    .take_while(|c| *c != ':')
                    .collect();
                *appearing.entry(id).or_default() += 1;
            }
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
        "plan sweep: {} fixtures, {pairs} fixture × target pairs of {} targets: {written} plans written, {refused} refused; \
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
    for (id, n) in &appearing {
        eprintln!("  the machine left would report {id}: {n} plans (said in their notes)");
    }
    assert!(contradicted.is_empty(), "{}", contradicted.join("\n"));
    // At least 3 plans written in 14 tried, as with every target on every fixture.
    assert!(
        written * 14 > pairs * 3,
        "the targets write plans: {written} of {pairs}"
    );
    assert!(checked > written, "plans install packages: {checked} lines");

    scripts_pass_bash_and_shellcheck(&scripts);
}

/// First, do no harm: a machine with no error or warning, asked for nothing, gets no step.
fn healthy_gets_nothing(fixture: &str, report: &Report, t: &Target, p: &plan::Plan) {
    let healthy = report.findings.iter().all(|f| {
        !matches!(
            f.severity,
            gpu_doctor::report::Severity::Error | gpu_doctor::report::Severity::Warning
        )
    });
    let nothing_asked = t.framework.is_none()
        && t.cuda.is_none()
        && t.cudnn.is_none()
        && t.via.is_none()
        && t.os.is_none()
        && t.driver == plan::DriverChoice::Keep;
    if healthy && nothing_asked {
        assert!(
            p.steps.is_empty(),
            "{fixture}: a healthy machine got steps: {:?}",
            p.steps.iter().map(plan::Step::id).collect::<Vec<_>>()
        );
    }
}

/// `bash -n` and shellcheck on one script of each shape, shellcheck in two batches.
fn scripts_pass_bash_and_shellcheck(scripts: &BTreeMap<String, String>) {
    let dir = crate::support::tempdir();
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
