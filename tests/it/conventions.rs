//! The command-line conventions users of ripgrep, uv and cargo expect: completions each shell
//! accepts and completes with, man pages `man` renders, the config file's precedence
//! (flag > env > file > default), `--color` / `NO_COLOR`, `-q` / `-v`, and a closed pipe
//! treated as success.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::{copy_tree, fixture_dir, fixture_env};

const BIN: &str = env!("CARGO_BIN_EXE_gpu-doctor");

/// `several-toolkits` has exactly one finding, a warning (`multiple-toolkits`): `check` passes
/// with `--fail-on error` and fails with `--fail-on warning`, which makes precedence visible.
const WARNING_ONLY: &str = "several-toolkits";

/// gpu-doctor on a fixture with its environment plus `extra`, and `args` after `--root`.
fn on_fixture(name: &str, extra: &[(&str, &str)], args: &[&str]) -> Output {
    let root = fixture_dir(name).join("root");
    Command::new(BIN)
        .env_clear()
        .envs(fixture_env(name))
        .envs(extra.iter().copied())
        .arg("--root")
        .arg(&root)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("gpu-doctor runs")
}

fn plain(args: &[&str]) -> Output {
    Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("gpu-doctor runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited")
}

/// A shell's path when it is installed. In CI (`CI` set) every shell the tests name must be
/// there: `.ci/run` installs them, and a missing one would quietly skip its check.
fn shell(name: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name} is not installed; .ci/run installs it"
        );
        eprintln!("note: {name} is not installed; its completion check is skipped");
    }
    found
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path
}

// ---------------------------------------------------------------------------------------------
// completions

fn completions(shell_name: &str) -> String {
    let out = plain(&["completions", shell_name]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn bash_completion_parses_and_completes_subcommands_and_values() {
    let Some(bash) = shell("bash") else { return };
    let dir = crate::support::tempdir();
    let script = write(dir.path(), "gpu-doctor.bash", &completions("bash"));
    let check = Command::new(&bash)
        .arg("-n")
        .arg(&script)
        .output()
        .expect("bash");
    assert!(check.status.success(), "bash -n: {}", stderr(&check));
    // Ask the completion function what it offers, as bash does on Tab.
    let complete = |words: &str, current: usize| {
        let program = format!(
            "source {}; COMP_WORDS=({words}); COMP_CWORD={current}; \
             _gpu__doctor gpu-doctor \"${{COMP_WORDS[{current}]}}\" \"${{COMP_WORDS[{}]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display(),
            current - 1
        );
        let out = Command::new(&bash)
            .args(["-c", &program])
            .output()
            .expect("bash");
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let offered = complete("gpu-doctor rep", 1);
    assert_eq!(offered.trim(), "report", "{offered}");
    let offered = complete("gpu-doctor doctor --format ''", 3);
    let mut formats: Vec<&str> = offered.split_whitespace().collect();
    formats.sort_unstable();
    assert_eq!(formats, ["json", "prometheus", "text"], "{offered}");
}

#[test]
fn zsh_completion_parses() {
    let Some(zsh) = shell("zsh") else { return };
    let dir = crate::support::tempdir();
    let text = completions("zsh");
    assert!(text.starts_with("#compdef gpu-doctor"), "{text:.60}");
    let script = write(dir.path(), "_gpu-doctor", &text);
    let check = Command::new(zsh)
        .arg("-n")
        .arg(&script)
        .output()
        .expect("zsh");
    assert!(check.status.success(), "zsh -n: {}", stderr(&check));
}

#[test]
fn fish_completion_parses_and_completes() {
    let Some(fish) = shell("fish") else { return };
    let dir = crate::support::tempdir();
    let script = write(dir.path(), "gpu-doctor.fish", &completions("fish"));
    let check = Command::new(&fish)
        .arg("--no-execute")
        .arg(&script)
        .output()
        .expect("fish");
    assert!(check.status.success(), "fish -n: {}", stderr(&check));
    let out = Command::new(&fish)
        .env("HOME", dir.path())
        .args([
            "--no-config",
            "-c",
            &format!(
                "source {}; complete -C 'gpu-doctor check --fail-on '",
                script.display()
            ),
        ])
        .output()
        .expect("fish");
    let mut offered: Vec<String> = stdout(&out)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect();
    offered.sort();
    assert_eq!(offered, ["error", "never", "warning"], "{}", stderr(&out));
}

#[test]
fn completions_refuse_an_unknown_shell_as_a_usage_error() {
    let out = plain(&["completions", "tcsh"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("possible values"), "{}", stderr(&out));
}

// ---------------------------------------------------------------------------------------------
// man pages

#[test]
fn man_pages_are_written_per_command_and_render_without_warnings() {
    let dir = crate::support::tempdir();
    let out = plain(&["man", "--out", dir.path().to_str().expect("utf-8")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    for page in [
        "gpu-doctor.1",
        "gpu-doctor-doctor.1",
        "gpu-doctor-check.1",
        "gpu-doctor-report-merge.1",
        "gpu-doctor-completions.1",
        "gpu-doctor-explain.1",
    ] {
        assert!(names.iter().any(|n| n == page), "{page} in {names:?}");
    }
    assert!(
        !names.iter().any(|n| n.starts_with('.')),
        "no temporaries left: {names:?}"
    );
    let Some(groff) = shell("groff") else { return };
    for name in &names {
        // -ww: every warning; -z: no output, only the diagnostics.
        let lint = Command::new(&groff)
            .args(["-k", "-man", "-ww", "-z", "-Tutf8"])
            .arg(dir.path().join(name))
            .output()
            .expect("groff");
        assert!(
            lint.status.success() && lint.stderr.is_empty(),
            "{name}: {}",
            stderr(&lint)
        );
    }
    let text = Command::new(&groff)
        .args(["-k", "-man", "-Tutf8", "-P-c", "-rLL=200n", "-rHY=0"])
        .arg(dir.path().join("gpu-doctor-check.1"))
        .output()
        .expect("groff");
    let page = stdout(&text).replace("\u{2010}", "-");
    assert!(page.contains("--fail-on"), "{page}");
    assert!(page.contains("GPU_DOCTOR_FAIL_ON"), "{page}");
}

#[test]
fn gen_man_script_writes_the_pages_with_a_given_binary() {
    let dir = crate::support::tempdir();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen-man.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(dir.path())
        .env("GPU_DOCTOR", BIN)
        .output()
        .expect("gen-man.sh");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let page = std::fs::read_to_string(dir.path().join("gpu-doctor-smoke.1")).expect("page");
    assert!(page.contains(".TH GPU-DOCTOR-SMOKE 1"), "{page:.300}");
}

// ---------------------------------------------------------------------------------------------
// config precedence: flag > env > file > default

#[test]
fn fail_on_comes_from_the_flag_then_the_variable_then_the_file_then_the_default() {
    let dir = crate::support::tempdir();
    let warning = write(dir.path(), "warning.toml", "fail_on = \"warning\"\n");
    let config = warning.to_str().expect("utf-8");
    let check = |extra: &[(&str, &str)], args: &[&str]| {
        let mut all = vec!["check"];
        all.extend_from_slice(args);
        code(&on_fixture(WARNING_ONLY, extra, &all))
    };
    assert_eq!(check(&[], &[]), 0, "default: only errors fail");
    assert_eq!(check(&[], &["--config", config]), 1, "file: warnings fail");
    assert_eq!(
        check(&[("GPU_DOCTOR_CONFIG", config)], &[]),
        1,
        "the file named by GPU_DOCTOR_CONFIG"
    );
    assert_eq!(
        check(&[("GPU_DOCTOR_FAIL_ON", "never")], &["--config", config]),
        0,
        "the variable beats the file"
    );
    assert_eq!(
        check(
            &[("GPU_DOCTOR_FAIL_ON", "never")],
            &["--config", config, "--fail-on", "warning"]
        ),
        1,
        "the flag beats the variable"
    );
    assert_eq!(
        check(&[], &["--config", config, "--fail-on", "error"]),
        0,
        "the flag beats the file"
    );
}

#[test]
fn the_default_config_file_is_found_through_xdg_config_home_inside_the_root() {
    // Under --root the user's folders are those of the examined tree, like every other path:
    // several-toolkits' HOME is /home/lab.
    let root = crate::support::tempdir();
    copy_tree(&fixture_dir(WARNING_ONLY).join("root"), root.path());
    let config_dir = root.path().join("home/lab/.config/gpu-doctor");
    std::fs::create_dir_all(&config_dir).expect("mkdir");
    write(
        &config_dir,
        "config.toml",
        "fail_on = \"warning\"\ntimeout = 3\n",
    );
    let run = |extra: &[(&str, &str)], args: &[&str]| {
        Command::new(BIN)
            .env_clear()
            .envs(fixture_env(WARNING_ONLY))
            .envs(extra.iter().copied())
            .arg("--root")
            .arg(root.path())
            .args(args)
            .output()
            .expect("runs")
    };
    let out = run(&[], &["-v", "check"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("/home/lab/.config/gpu-doctor/config.toml"),
        "{said}"
    );
    assert!(said.contains("each command may run 3 s"), "{said}");
    // XDG_CONFIG_HOME moves the folder: nothing there, so the default applies again.
    let out = run(&[("XDG_CONFIG_HOME", "/etc/xdg")], &["check"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

#[test]
fn timeout_comes_from_the_flag_then_the_variable_then_the_file_then_the_default() {
    let dir = crate::support::tempdir();
    let config = write(dir.path(), "c.toml", "timeout = 4\n");
    let config = config.to_str().expect("utf-8");
    let said = |extra: &[(&str, &str)], args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["-v", "doctor", "--json"]);
        let out = on_fixture(WARNING_ONLY, extra, &all);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stderr(&out)
            .lines()
            .find(|l| l.contains("each command may run"))
            .map(str::to_string)
            .unwrap_or_default()
    };
    assert!(said(&[], &[]).ends_with("run 5 s"), "default");
    assert!(
        said(&[], &["--config", config]).ends_with("run 4 s"),
        "file"
    );
    assert!(
        said(&[("GPU_DOCTOR_TIMEOUT", "6")], &["--config", config]).ends_with("run 6 s"),
        "variable"
    );
    assert!(
        said(
            &[("GPU_DOCTOR_TIMEOUT", "6")],
            &["--config", config, "--timeout", "2.5"]
        )
        .ends_with("run 2.5 s"),
        "flag"
    );
}

#[test]
fn bad_settings_are_usage_errors_that_name_where_they_came_from() {
    let dir = crate::support::tempdir();
    let bad = write(dir.path(), "bad.toml", "fail_on = \"loudly\"\n");
    let out = on_fixture(
        WARNING_ONLY,
        &[],
        &["--config", bad.to_str().expect("utf-8"), "check"],
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains(&format!(
            "config file {}: `fail_on` must be one of error, warning, never",
            bad.display()
        )),
        "{}",
        stderr(&out)
    );
    let out = on_fixture(WARNING_ONLY, &[("GPU_DOCTOR_TIMEOUT", "soon")], &["doctor"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("GPU_DOCTOR_TIMEOUT=\"soon\": not a number of seconds"),
        "{}",
        stderr(&out)
    );
    let out = on_fixture(
        WARNING_ONLY,
        &[],
        &["--config", "/nonexistent.toml", "doctor"],
    );
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("cannot read the config file /nonexistent.toml"),
        "{}",
        stderr(&out)
    );
    // A broken config does not stop what needs no settings.
    let out = Command::new(BIN)
        .env_clear()
        .env("GPU_DOCTOR_CONFIG", bad.as_os_str())
        .args(["completions", "bash"])
        .output()
        .expect("runs");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

// ---------------------------------------------------------------------------------------------
// colour

const ESC: &str = "\u{1b}[";

#[test]
fn colour_follows_the_flag_then_no_color_then_the_config() {
    let dir = crate::support::tempdir();
    let always = write(dir.path(), "always.toml", "color = \"always\"\n");
    let always = always.to_str().expect("utf-8");
    let coloured = |extra: &[(&str, &str)], args: &[&str]| {
        let mut all = args.to_vec();
        all.push("doctor");
        let out = on_fixture(WARNING_ONLY, extra, &all);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out).contains(ESC)
    };
    assert!(!coloured(&[], &[]), "auto, and stdout is a pipe");
    assert!(coloured(&[], &["--color", "always"]));
    assert!(coloured(&[], &["--color=always"]));
    assert!(
        !coloured(&[("NO_COLOR", "1")], &["--config", always]),
        "NO_COLOR beats the file"
    );
    assert!(
        coloured(&[("NO_COLOR", "1")], &["--color", "always"]),
        "the flag beats NO_COLOR"
    );
    assert!(coloured(&[], &["--config", always]), "the file");
    assert!(coloured(&[("CLICOLOR_FORCE", "1")], &[]), "CLICOLOR_FORCE");
    assert!(!coloured(&[("CLICOLOR_FORCE", "1")], &["--color", "never"]));
    let out = on_fixture(WARNING_ONLY, &[], &["--color", "always", "doctor"]);
    let text = stdout(&out);
    assert!(
        text.contains("\u{1b}[33m[warning]\u{1b}[0m multiple-toolkits"),
        "the warning's mark is yellow: {text}"
    );
}

#[test]
fn machine_formats_never_carry_colour() {
    for args in [
        ["--color", "always", "doctor", "--json"],
        ["--color", "always", "doctor", "--format=prometheus"],
    ] {
        let out = on_fixture(WARNING_ONLY, &[], &args);
        assert!(!stdout(&out).contains(ESC), "{args:?}");
        assert!(!stdout(&out).is_empty(), "{args:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// -q / -v

#[test]
fn verbose_levels_say_what_was_read_and_run_and_quiet_keeps_only_errors() {
    let normal = on_fixture(WARNING_ONLY, &[], &["doctor", "--json"]);
    assert_eq!(stderr(&normal), "", "a normal run says nothing on stderr");
    let v = on_fixture(WARNING_ONLY, &[], &["-v", "doctor", "--json"]);
    let said = stderr(&v);
    assert!(said.contains("gpu-doctor: no config file"), "{said}");
    assert!(
        said.contains("gpu-doctor: manifests: embedded set"),
        "{said}"
    );
    assert!(said.contains("gpu-doctor: probe toolkits: "), "{said}");
    assert!(
        !said.contains("gpu-doctor: ran "),
        "-v does not list commands: {said}"
    );
    let without_timings = |out: &Output| {
        let mut report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        report["probes"] = serde_json::Value::Null;
        report
    };
    assert_eq!(
        without_timings(&v),
        without_timings(&normal),
        "-v changes stderr only"
    );
    let vv = on_fixture(WARNING_ONLY, &[], &["-vv", "doctor", "--json"]);
    let said = stderr(&vv);
    assert!(
        said.lines()
            .any(|l| l.starts_with("gpu-doctor: ran ") && l.contains("nvidia-smi")),
        "-vv lists each command: {said}"
    );

    let dir = crate::support::tempdir();
    let plan = dir.path().join("plan.sh");
    let plan = plan.to_str().expect("utf-8");
    let out = on_fixture(WARNING_ONLY, &[], &["plan", "-o", plan]);
    assert!(
        stderr(&out).contains("gpu-doctor: wrote "),
        "{}",
        stderr(&out)
    );
    let again = dir.path().join("again.sh");
    let out = on_fixture(
        WARNING_ONLY,
        &[],
        &["-q", "plan", "-o", again.to_str().expect("utf-8")],
    );
    assert_eq!(code(&out), 0);
    assert_eq!(stderr(&out), "", "-q drops notes");
    assert!(again.exists());
    let out = on_fixture(WARNING_ONLY, &[], &["-q", "plan", "-o", plan]);
    assert_eq!(code(&out), 3);
    assert!(
        stderr(&out).contains("exists; pass --force"),
        "-q keeps errors"
    );
    let out = plain(&["-q", "-v", "schema"]);
    assert_eq!(code(&out), 2, "-q and -v together is a usage error");
}

// ---------------------------------------------------------------------------------------------
// broken pipe

/// Starts gpu-doctor with stdout a pipe whose reading end is closed at once, so its first
/// write fails with EPIPE, as under `gpu-doctor ... | head -0`.
fn into_closed_pipe(args: &[&str], fixture: Option<&str>) -> Output {
    let mut command = Command::new(BIN);
    command.env_clear();
    if let Some(name) = fixture {
        command
            .envs(fixture_env(name))
            .arg("--root")
            .arg(fixture_dir(name).join("root"));
    }
    let mut child = command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    child.wait_with_output().expect("wait")
}

#[test]
fn a_closed_pipe_is_success_with_nothing_on_stderr() {
    for (args, fixture) in [
        (vec!["doctor"], Some(WARNING_ONLY)),
        (vec!["doctor", "--json"], Some(WARNING_ONLY)),
        (vec!["doctor", "--format", "prometheus"], Some(WARNING_ONLY)),
        (vec!["check", "--format", "junit"], Some(WARNING_ONLY)),
        (vec!["schema"], None),
        (vec!["completions", "zsh"], None),
    ] {
        let out = into_closed_pipe(&args, fixture);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert_eq!(stderr(&out), "", "{args:?}");
    }
}

#[test]
fn a_full_disk_is_not_mistaken_for_a_closed_pipe() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return;
    };
    let out = Command::new(BIN)
        .env_clear()
        .arg("schema")
        .stdout(full)
        .output()
        .expect("runs");
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cannot write the report"),
        "{}",
        stderr(&out)
    );
}
