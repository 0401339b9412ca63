//! Renders a [`Plan`] as a bash script: a header that says what it was made for, helpers, then
//! one block per step that checks whether the step is done, runs it, and reports. Pure.
//!
//! Safety rests on two rules. Every value goes through [`shell_quote`] (single quotes, nothing
//! expands inside) or, in comments, through [`comment_lines`] (no line break can end a comment).
//! And the script resolves every command through PATH (no `/usr/bin/...`), writes machine paths
//! below `$root`, and runs with `set -euo pipefail`, so the first failing command stops it and
//! the exit trap says which step failed, which were done and which were not.

mod lines;
mod prelude;
mod quote;
mod refuse;

use std::fmt::Write as _;

use super::cmd::{Guard, Outcome};
use super::{Plan, Step, Target};
pub use lines::{check_text, command_lines};
use prelude::{HELPERS, PREAMBLE, Uses};
use quote::WIDTH;
pub use quote::{comment_lines, shell_quote};
pub use refuse::refused;
pub(crate) use refuse::step_refusal;

/// How to render: the folder machine paths are written below (`--root`; empty for `/`).
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub root: String,
}

/// The target as it was asked, in the CLI's words.
fn asked(target: &Target) -> String {
    let flags = flags(target);
    if flags.is_empty() {
        "nothing named: fix what the doctor found".to_string()
    } else {
        flags
    }
}

/// The options that name the target (`--via pip --framework torch`), empty for none.
#[must_use]
pub fn flags(target: &Target) -> String {
    let mut parts = Vec::new();
    if let Some(via) = target.via {
        parts.push(format!("--via {}", via.as_str()));
    }
    if let Some(cuda) = &target.cuda {
        parts.push(format!("--cuda {cuda}"));
    }
    match target.driver {
        super::DriverChoice::Branch(b) => parts.push(format!("--driver {b}")),
        super::DriverChoice::Auto => parts.push("--driver auto".to_string()),
        super::DriverChoice::Keep => {}
    }
    if let Some(c) = target.cudnn {
        parts.push(format!("--cudnn {c}"));
    }
    if let Some(fw) = &target.framework {
        let extra = fw
            .extra
            .as_deref()
            .map(|e| format!("[{e}]"))
            .unwrap_or_default();
        let version = fw
            .version
            .as_deref()
            .map(|v| format!("=={v}"))
            .unwrap_or_default();
        parts.push(format!(
            "--framework {}",
            shell_quote(&format!("{}{extra}{version}", fw.name.as_str()))
        ));
    }
    if let Some(p) = &target.python {
        parts.push(format!("--python {p}"));
    }
    if let Some(e) = &target.env {
        parts.push(format!("--env {e}"));
    }
    if let Some(os) = &target.os {
        parts.push(format!("--os {os}"));
    }
    parts.join(" ")
}

fn push_comments(out: &mut String, text: &str, indent: &str) {
    for l in comment_lines(text, indent) {
        out.push_str(&l);
        out.push('\n');
    }
}

fn header(plan: &Plan) -> String {
    // Single quotes that keep `${PATH...}` and dpkg-query's `${Status}` literal are the point.
    let mut out = String::from("#!/usr/bin/env bash\n# shellcheck disable=SC2016\n");
    push_comments(
        &mut out,
        &format!(
            "gpu-doctor plan, made by gpu-doctor {} for the machine below. Read it before you run \
             it. Running it again is safe: every step first checks whether it is already done.",
            plan.tool_version
        ),
        " ",
    );
    out.push_str("#\n# Machine\n");
    for l in plan.machine.gpu_lines() {
        push_comments(&mut out, &l, "   ");
    }
    push_comments(
        &mut out,
        &format!("driver: {}", plan.machine.driver_line()),
        "   ",
    );
    push_comments(
        &mut out,
        &format!("system: {}", plan.machine.os_line()),
        "   ",
    );
    out.push_str("#\n# Target\n");
    push_comments(&mut out, &format!("asked: {}", asked(&plan.target)), "   ");
    for l in &plan.summary {
        push_comments(&mut out, l, "   ");
    }
    if !plan.addresses.is_empty() {
        out.push_str("#\n# Findings it fixes\n");
        for f in &plan.addresses {
            push_comments(&mut out, &format!("{}: {}", f.id, f.title), "   ");
        }
    }
    if !plan.leaves.is_empty() {
        out.push_str("#\n# Findings it leaves alone\n");
        for f in &plan.leaves {
            push_comments(&mut out, &format!("{}: {}", f.id, f.title), "   ");
            if let Some(fix) = &f.fix {
                push_comments(&mut out, &format!("fix: {fix}"), "     ");
            }
        }
    }
    out.push_str("#\n# It will not touch\n");
    for l in &plan.untouched {
        push_comments(&mut out, l, "   ");
    }
    if !plan.notes.is_empty() {
        out.push_str("#\n# Notes\n");
        for l in &plan.notes {
            push_comments(&mut out, l, "   ");
        }
    }
    if !plan.options.is_empty() {
        out.push_str("#\n# Options it leaves out (run the command to plan one)\n");
        for l in &plan.options {
            push_comments(&mut out, l, "   ");
        }
    }
    out.push_str("#\n# Steps\n");
    for (n, s) in plan.steps.iter().enumerate() {
        let mut flags = Vec::new();
        if s.needs_root {
            flags.push("root");
        }
        if s.reboot {
            flags.push("reboot");
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", flags.join(", "))
        };
        push_comments(
            &mut out,
            &format!("{:>2}. {}: {}{flags}", n + 1, s.id(), s.title),
            "  ",
        );
    }
    out.push_str("#\n");
    push_comments(
        &mut out,
        "Run it with bash (or gpu-doctor plan --execute). It stops at the first failure and says \
         which steps were done and which were not.",
        " ",
    );
    out
}

fn step_block(out: &mut String, n: usize, step: &Step) {
    let rule = "-".repeat(WIDTH - 2);
    let _ = writeln!(out, "\n# {rule}");
    push_comments(
        out,
        &format!("Step {n}: {} ({})", step.title, step.id()),
        " ",
    );
    push_comments(out, &format!("Why: {}", step.why), " ");
    if !step.serves.is_empty() {
        let serves: Vec<String> = step.serves.iter().map(ToString::to_string).collect();
        push_comments(out, &format!("Serves: {}", serves.join(", ")), " ");
    }
    let _ = writeln!(
        out,
        "step {n} {} {}",
        shell_quote(&step.id()),
        shell_quote(&step.title)
    );
    if let Some(reason) = step_refusal(step) {
        let _ = writeln!(out, "refused {}", shell_quote(&reason));
        return;
    }
    let mut body = String::new();
    for c in &step.commands {
        for l in command_lines(c) {
            let _ = writeln!(body, "  {l}");
        }
    }
    if step.reboot {
        body.push_str("  reboot_needed=1\n");
    }
    body.push_str("  finished\n");
    if step.guards.is_empty() {
        for l in body.lines() {
            let _ = writeln!(out, "{}", l.trim_start());
        }
        return;
    }
    for (i, Guard { check, outcome }) in step.guards.iter().enumerate() {
        let kw = if i == 0 { "if" } else { "elif" };
        let _ = writeln!(out, "{kw} {}; then", check_text(check));
        match outcome {
            Outcome::Skip(reason) => {
                let _ = writeln!(out, "  skipped {}", shell_quote(reason));
            }
            Outcome::Fail(message) => {
                let _ = writeln!(out, "  fail {}", shell_quote(message));
            }
        }
    }
    out.push_str("else\n");
    out.push_str(&body);
    out.push_str("fi\n");
}

/// The whole script.
#[must_use]
pub fn render(plan: &Plan, options: &Options) -> String {
    let mut out = header(plan);
    out.push('\n');
    out.push_str(PREAMBLE);
    let _ = writeln!(
        out,
        "\n# Machine paths are written below this folder; empty means this machine's own /.\n\
         # shellcheck disable=SC2034 # (not every plan writes a file)\nroot={}",
        shell_quote(&options.root)
    );
    let ids: Vec<String> = plan.steps.iter().map(|s| shell_quote(&s.id())).collect();
    let _ = writeln!(out, "steps=({})", ids.join(" "));
    let mut uses = Uses::default();
    for s in &plan.steps {
        if step_refusal(s).is_some() {
            uses.0.insert("refused");
            continue;
        }
        s.guards.iter().for_each(|g| uses.check(&g.check));
        s.commands.iter().for_each(|c| uses.command(c));
    }
    for (name, text) in HELPERS {
        if uses.0.contains(name) {
            out.push('\n');
            out.push_str(text);
        }
    }
    if !plan.notes.is_empty() {
        out.push('\n');
        for note in &plan.notes {
            let _ = writeln!(out, "say {}", shell_quote(&format!("Note: {note}")));
        }
    }
    for (n, s) in plan.steps.iter().enumerate() {
        step_block(&mut out, n + 1, s);
    }
    out.push_str(
        "\nprintf '\\ngpu-doctor plan: all %s steps done.\\n' \"${#steps[@]}\"\n\
         if [ \"$reboot_needed\" = 1 ]; then\n  \
         say 'Reboot to finish (sudo reboot), then check with: gpu-doctor doctor && gpu-doctor smoke'\n\
         fi\n",
    );
    // Every value went through `shell_quote` or `comment_lines`; this last pass holds for
    // whatever a future step writes without them: no control character but line breaks and
    // tabs reaches the script (the plan JSON and text faces print it too).
    let mut script = String::with_capacity(out.len());
    for c in out.chars() {
        match c {
            '\n' | '\t' => script.push(c),
            c if c.is_control() => script.push('?'),
            c if crate::sanitize::is_invisible(c) => {
                script.push_str(&format!("<U+{:04X}>", u32::from(c)));
            }
            c => script.push(c),
        }
    }
    script
}

#[cfg(test)]
mod tests {
    use super::super::cmd::{Command, Python, Word};
    use super::quote::word;
    use super::*;

    /// Every control character (Cc), every invisible / format character gpu-doctor knows
    /// (`sanitize::is_invisible`: Cf and the other invisible ones), the line and paragraph
    /// separators.
    fn hostile_chars() -> Vec<char> {
        (0u32..=0x10_ffff)
            .filter_map(char::from_u32)
            .filter(|c| c.is_control() || crate::sanitize::is_invisible(*c))
            .collect()
    }

    /// #40: a user name, an environment path, a conda environment's name or an interpreter's
    /// prefix holding any such character is never written cleaned into a command: the
    /// command becomes the line that refuses it, which names the value cleaned, for people.
    #[test]
    fn values_that_would_need_cleaning_refuse_the_command() {
        let chars = hostile_chars();
        assert!(chars.len() > 200, "{}", chars.len());
        for c in chars {
            let commands = [
                Command::Run {
                    argv: vec![
                        Word::lit("usermod"),
                        Word::lit("-a"),
                        Word::lit("-G"),
                        Word::lit("render,video"),
                        Word::lit("--"),
                        Word::lit(format!("bd{c}4")),
                    ],
                    sudo: true,
                },
                Command::Run {
                    argv: vec![
                        Word::lit("python3"),
                        Word::lit("-m"),
                        Word::lit("venv"),
                        Word::path(format!("/home/u/ml{c}env")),
                    ],
                    sudo: false,
                },
                Command::Pip {
                    python: Python::Prefix(format!("/opt/venv{c}")),
                    args: vec![Word::lit("install"), Word::lit("torch")],
                    version: None,
                    companions: false,
                },
                Command::Pip {
                    python: Python::CondaEnv(format!("ml{c}")),
                    args: vec![Word::lit("install"), Word::lit("torch")],
                    version: None,
                    companions: false,
                },
                Command::WriteFile {
                    path: "/etc/profile.d/gpu-doctor-cuda.sh".to_string(),
                    lines: vec![format!("export PATH=/usr/local/cuda{c}/bin:$PATH")],
                },
            ];
            for command in &commands {
                let lines = command_lines(command);
                assert_eq!(lines.len(), 1, "{c:?}: {lines:?}");
                assert!(
                    lines[0].starts_with("refused 'refused: "),
                    "{c:?}: {lines:?}"
                );
                assert!(!lines[0].contains(c), "{c:?} shown raw: {lines:?}");
            }
        }
    }

    #[test]
    fn names_that_read_as_options_refuse_the_command_and_plain_ones_do_not() {
        let usermod = |name: &str| Command::Run {
            argv: vec![
                Word::lit("usermod"),
                Word::lit("-a"),
                Word::lit("-G"),
                Word::lit("render"),
                Word::lit("--"),
                Word::lit(name),
            ],
            sudo: true,
        };
        assert_eq!(
            command_lines(&usermod("bd4")),
            vec!["sudo usermod -a -G render -- bd4".to_string()]
        );
        assert!(
            command_lines(&usermod("-o"))
                .concat()
                .starts_with("refused ")
        );
        let conda = |name: &str| Command::Run {
            argv: vec![
                Word::lit("conda"),
                Word::lit("create"),
                Word::lit("-y"),
                Word::lit("-n"),
                Word::lit(name),
            ],
            sudo: false,
        };
        assert!(
            command_lines(&conda("-rf"))
                .concat()
                .starts_with("refused ")
        );
        assert_eq!(
            command_lines(&conda("ml")),
            vec!["conda create -y -n ml".to_string()]
        );
        // Quoting alone still serves values that need no cleaning.
        assert_eq!(
            command_lines(&conda("it's $HOME")),
            vec!["conda create -y -n 'it'\\''s $HOME'".to_string()]
        );
    }

    #[test]
    fn quoting_keeps_plain_words_and_neutralises_the_rest() {
        assert_eq!(shell_quote("cuda-toolkit-12-4"), "cuda-toolkit-12-4");
        assert_eq!(
            shell_quote("libnccl2=2.21.5-1+cuda12.4"),
            "libnccl2=2.21.5-1+cuda12.4"
        );
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("x; rm -rf /"), "'x; rm -rf /'");
        assert_eq!(shell_quote("$(touch /tmp/pwned)"), "'$(touch /tmp/pwned)'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("a\nb"), "'a\nb'");
        assert_eq!(shell_quote("`id`"), "'`id`'");
        assert_eq!(shell_quote("~root"), "'~root'");
        assert_eq!(shell_quote("=x"), "'=x'");
        assert_eq!(shell_quote("a\0b"), "'ab'");
        // Escape sequences cannot reach a terminal through the script.
        assert_eq!(shell_quote("a\u{1b}[2J\u{9b}b\r"), "'a?[2J?b?'");
    }

    /// Bash itself reads each quoted value back as exactly one argument, unchanged.
    #[test]
    fn bash_reads_hostile_values_back_unchanged() {
        let hostile = [
            "x; rm -rf /",
            "$(touch /tmp/gpu-doctor-pwned)",
            "`touch /tmp/gpu-doctor-pwned`",
            "quote ' and \" and \\",
            "new\nline",
            "${HOME}",
            "*",
            "-rf",
            " spaced ",
            "",
            "tab\there",
            "!event",
        ];
        let mut script = String::from("printf '%s\\0'");
        for h in hostile {
            script.push(' ');
            script.push_str(&shell_quote(h));
        }
        let out = std::process::Command::new("bash")
            .args(["-c", &script])
            .output()
            .expect("bash");
        let got: Vec<String> = out
            .stdout
            .split(|b| *b == 0)
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect();
        assert_eq!(&got[..hostile.len()], hostile);
    }

    #[test]
    fn comments_cannot_be_ended_by_a_value() {
        let lines = comment_lines("GPU: evil\nrm -rf /\r$(id)", " ");
        assert!(lines.iter().all(|l| l.starts_with('#')), "{lines:?}");
        assert!(
            lines.iter().any(|l| l.contains("# rm -rf /?$(id)")),
            "{lines:?}"
        );
    }

    #[test]
    fn paths_go_below_root_and_relative_ones_cannot_be_options() {
        assert_eq!(word(&Word::path("/etc/x.conf")), "\"$root\"/etc/x.conf");
        assert_eq!(word(&Word::path("-rf")), "./-rf");
        assert_eq!(word(&Word::path("my env")), "'./my env'");
    }
}
