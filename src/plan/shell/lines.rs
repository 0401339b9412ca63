//! Commands and checks as lines of shell: what each step runs and the condition that says it
//! is already done.

use super::super::cmd::{Check, Command, Landed, Word};
use super::quote::{line, python_words, shell_quote, word};
use super::refuse::refused;

/// A command as the lines of shell that run it; a refused one ([`refused`]) as the line that
/// stops the plan with the reason.
#[must_use]
pub fn command_lines(command: &Command) -> Vec<String> {
    if let Some(reason) = refused(command) {
        return vec![format!("refused {}", shell_quote(&reason))];
    }
    let sudo = |yes: bool| if yes { "sudo " } else { "" };
    match command {
        Command::Run { argv, sudo: s } => vec![format!("{}{}", sudo(*s), line(argv))],
        Command::WriteFile { path, lines } => {
            let parent = path.rsplit_once('/').map_or("/", |(dir, _)| dir);
            let mut printf = String::from("printf '%s\\n'");
            for l in lines {
                printf.push(' ');
                printf.push_str(&shell_quote(l));
            }
            vec![
                format!("sudo mkdir -p -- {}", word(&Word::path(parent))),
                format!(
                    "{printf} | sudo tee -- {} >/dev/null",
                    word(&Word::path(path.clone()))
                ),
            ]
        }
        Command::AptInstallMatching {
            packages,
            prefix,
            suffix,
        } => {
            let first = packages.first().cloned().unwrap_or_default();
            let pinned: Vec<Word> = packages
                .iter()
                .map(|p| Word::Join(vec![Word::lit(format!("{p}=")), Word::Var("version")]))
                .collect();
            let wanted = match (prefix.is_empty(), suffix.is_empty()) {
                (false, false) => format!("starting with {prefix} and ending with {suffix}"),
                (false, true) => format!("starting with {prefix}"),
                (true, false) => format!("ending with {suffix}"),
                (true, true) => "at all".to_string(),
            };
            vec![
                format!(
                    "version=\"$(newest_version {} {} {})\"",
                    shell_quote(&first),
                    shell_quote(prefix),
                    shell_quote(suffix)
                ),
                format!(
                    "[ -n \"$version\" ] || fail {}",
                    shell_quote(&format!("the apt lists have no {first} version {wanted}"))
                ),
                format!("sudo apt-get install -y {}", line(&pinned)),
            ]
        }
        Command::Pip {
            python,
            args,
            companions,
            ..
        } => {
            let mut all = python_words(python);
            all.extend([Word::lit("-m"), Word::lit("pip")]);
            all.extend(args.iter().cloned());
            let mut text = line(&all);
            if *companions {
                text.push_str(" \"${companions[@]}\"");
            }
            vec![text]
        }
        Command::Companions { python, dists } => {
            let py = line(&python_words(python));
            let names: Vec<String> = dists.iter().map(|d| shell_quote(d)).collect();
            vec![
                "companions=()".to_string(),
                format!(
                    "for dist in {}; do has_dist \"$dist\" '' '' {py} && companions+=(\"$dist\"); done",
                    names.join(" ")
                ),
            ]
        }
        Command::Say(text) => vec![format!("say {}", shell_quote(text))],
        Command::Landed {
            python,
            check,
            message,
        } => {
            let py = line(&python_words(python));
            let test = match check {
                Landed::TorchCuda => format!(
                    "{py} -c {} >/dev/null 2>&1",
                    shell_quote("import sys, torch; sys.exit(0 if torch.version.cuda else 1)")
                ),
                Landed::ExtraWheels { dist, extra } => format!(
                    "has_extra_wheels {} {} {py}",
                    shell_quote(dist),
                    shell_quote(extra)
                ),
            };
            vec![format!("{test} || fail {}", shell_quote(message))]
        }
    }
}

/// A check as a shell condition.
#[must_use]
pub fn check_text(check: &Check) -> String {
    match check {
        Check::DpkgInstalled(p) => format!("has_package {}", shell_quote(p)),
        Check::DpkgVersion {
            package,
            prefix,
            suffix,
        } => format!(
            "has_version {} {} {}",
            shell_quote(package),
            shell_quote(prefix),
            shell_quote(suffix)
        ),
        Check::FileHasLine { path, line } => format!(
            "grep -qsxF -- {} {}",
            shell_quote(line),
            word(&Word::path(path.clone()))
        ),
        Check::FileContains { path, text } => format!(
            "grep -qsF -- {} {}",
            shell_quote(text),
            word(&Word::path(path.clone()))
        ),
        Check::Executable(path) => format!("[ -x {} ]", word(&Word::path(path.clone()))),
        Check::Missing(path) => format!("[ ! -e {} ]", word(&Word::path(path.clone()))),
        // `--test-key` exits 1 when the key is known, so its status is kept out of pipefail.
        Check::MokKeyKnown(path) => format!(
            "{{ sudo mokutil --test-key {} 2>/dev/null || true; }} | grep -q ' is already '",
            word(&Word::path(path.clone()))
        ),
        Check::CommandMissing(name) => {
            format!("! command -v {} >/dev/null 2>&1", shell_quote(name))
        }
        Check::PythonDist {
            python,
            dist,
            prefix,
            local,
        } => format!(
            "has_dist {} {} {} {}",
            shell_quote(dist),
            shell_quote(prefix),
            shell_quote(local.as_deref().unwrap_or("")),
            line(&python_words(python))
        ),
        Check::CondaEnvExists(name) => format!("has_conda_env {}", shell_quote(name)),
        Check::CondaPackage {
            env,
            package,
            version,
        } => format!(
            "has_conda_package {} {} {}",
            shell_quote(env),
            shell_quote(package),
            shell_quote(version)
        ),
        Check::RebootPending => "[ \"$reboot_needed\" = 1 ]".to_string(),
        Check::RunningKernelHeaders => "has_package \"linux-headers-$kernel\"".to_string(),
        Check::Any(list) => group(list, " || "),
        Check::All(list) => group(list, " && "),
    }
}

fn group(list: &[Check], op: &str) -> String {
    match list {
        [] if op == " && " => "true".to_string(),
        [] => "false".to_string(),
        [one] => check_text(one),
        many => format!(
            "{{ {}; }}",
            many.iter().map(check_text).collect::<Vec<_>>().join(op)
        ),
    }
}
