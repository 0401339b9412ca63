//! Which commands and steps are refused before a line is written (#40): a value that holds a
//! character quoting would have to change, or a name that a program would read as an option.
//! The value is checked, never cleaned into the command.

use super::super::Step;
use super::super::cmd::{Check, Command, Landed, Python, Word};

/// Whether `value` holds a character [`shell_quote`](super::shell_quote) would have to change (NUL, a control
/// character, tab and line break included, or an invisible one): written cleaned, a user name
/// or an environment path would name another user or interpreter.
fn needs_cleaning(value: &str) -> bool {
    value
        .chars()
        .any(|c| c.is_control() || crate::sanitize::is_invisible(c))
}

/// Every value `command` passes to a program, with what it is; and the names that must not
/// read as an option (a word after `--`, a conda environment's name).
fn command_values(command: &Command) -> (Vec<(&'static str, &str)>, Vec<&str>) {
    fn words<'a>(w: &'a Word, out: &mut Vec<(&'static str, &'a str)>) {
        match w {
            Word::Lit(text) => out.push(("the word", text)),
            Word::Path(path) => out.push(("the path", path)),
            Word::Var(_) => {}
            Word::Join(parts) => parts.iter().for_each(|p| words(p, out)),
        }
    }
    fn python<'a>(p: &'a Python, out: &mut Vec<(&'static str, &'a str)>, names: &mut Vec<&'a str>) {
        match p {
            Python::Prefix(prefix) => out.push(("the environment", prefix)),
            Python::CondaEnv(name) => {
                out.push(("the conda environment", name));
                names.push(name);
            }
        }
    }
    let (mut out, mut names): (Vec<(&'static str, &str)>, Vec<&str>) = (Vec::new(), Vec::new());
    match command {
        Command::Run { argv, .. } => {
            argv.iter().for_each(|w| words(w, &mut out));
            let after = argv
                .iter()
                .position(|w| matches!(w, Word::Lit(l) if l == "--"))
                .map_or(argv.len(), |i| i + 1);
            for w in &argv[after..] {
                if let Word::Lit(name) = w {
                    names.push(name.as_str());
                }
            }
            // The value of a naming option (`conda create -n NAME`).
            for pair in argv.windows(2) {
                if let [Word::Lit(option), Word::Lit(name)] = pair
                    && matches!(option.as_str(), "-n" | "--name")
                {
                    names.push(name.as_str());
                }
            }
        }
        Command::WriteFile { path, lines } => {
            out.push(("the path", path));
            out.extend(lines.iter().map(|l| ("the line", l.as_str())));
        }
        Command::AptInstallMatching {
            packages,
            prefix,
            suffix,
        } => {
            out.extend(packages.iter().map(|p| ("the package", p.as_str())));
            out.push(("the version prefix", prefix));
            out.push(("the version suffix", suffix));
        }
        Command::Pip {
            python: p, args, ..
        } => {
            python(p, &mut out, &mut names);
            args.iter().for_each(|w| words(w, &mut out));
        }
        Command::Companions { python: p, dists } => {
            python(p, &mut out, &mut names);
            out.extend(dists.iter().map(|d| ("the distribution", d.as_str())));
        }
        Command::Say(_) => {}
        Command::Landed {
            python: p, check, ..
        } => {
            python(p, &mut out, &mut names);
            if let Landed::ExtraWheels { dist, extra } = check {
                out.push(("the distribution", dist));
                out.push(("the extra", extra));
            }
        }
    }
    (out, names)
}

/// Why `command` is refused, if it is (#40): a value it names holds a character that
/// [`shell_quote`](super::shell_quote) would change, or a name reads as an option. The value is checked, never
/// cleaned into the command.
#[must_use]
pub fn refused(command: &Command) -> Option<String> {
    let (values, names) = command_values(command);
    let shown = |v: &str| crate::sanitize::clean(v);
    if let Some((what, value)) = values.iter().find(|(_, v)| needs_cleaning(v)) {
        return Some(format!(
            "refused: {what} '{}' holds a control or invisible character; gpu-doctor does not \
             write a cleaned value into a command (it would name something else)",
            shown(value)
        ));
    }
    names.iter().find(|n| n.starts_with('-')).map(|name| {
        format!(
            "refused: the name '{}' starts with '-', which the command would read as an option",
            shown(name)
        )
    })
}

/// Why `step` is refused, if it is: a value one of its guards or commands names needs
/// cleaning, or a name reads as an option ([`refused`]). The step's block is then only the
/// line that stops the plan with the reason.
pub(crate) fn step_refusal(step: &Step) -> Option<String> {
    let guard = step.guards.iter().find_map(|g| {
        check_values(&g.check)
            .into_iter()
            .find(|v| needs_cleaning(v))
            .map(|v| {
                format!(
                    "refused: the value '{}' holds a control or invisible character; gpu-doctor \
                     does not write a cleaned value into a command (it would name something else)",
                    crate::sanitize::clean(v)
                )
            })
    });
    let named = step.guards.iter().find_map(|g| {
        guard_names(&g.check)
            .into_iter()
            .find(|n| n.starts_with('-'))
            .map(|name| {
                format!(
                    "refused: the name '{}' starts with '-', which the command would read as an \
                     option",
                    crate::sanitize::clean(name)
                )
            })
    });
    guard
        .or(named)
        .or_else(|| step.commands.iter().find_map(refused))
}

/// The conda environment names a check passes to conda.
fn guard_names(check: &Check) -> Vec<&str> {
    match check {
        Check::CondaEnvExists(name) | Check::CondaPackage { env: name, .. } => vec![name],
        Check::PythonDist {
            python: Python::CondaEnv(name),
            ..
        } => vec![name],
        Check::Any(list) | Check::All(list) => list.iter().flat_map(guard_names).collect(),
        _ => Vec::new(),
    }
}

/// Every value a check passes to a program.
fn check_values(check: &Check) -> Vec<&str> {
    fn python(p: &Python) -> &str {
        match p {
            Python::Prefix(s) | Python::CondaEnv(s) => s,
        }
    }
    match check {
        Check::DpkgInstalled(v)
        | Check::Executable(v)
        | Check::CommandMissing(v)
        | Check::Missing(v)
        | Check::MokKeyKnown(v) => vec![v],
        Check::CondaEnvExists(v) => vec![v],
        Check::DpkgVersion {
            package,
            prefix,
            suffix,
        } => vec![package, prefix, suffix],
        Check::FileHasLine { path, line: text } | Check::FileContains { path, text } => {
            vec![path, text]
        }
        Check::PythonDist {
            python: p,
            dist,
            prefix,
            local,
        } => {
            let mut v = vec![python(p), dist.as_str(), prefix.as_str()];
            v.extend(local.as_deref());
            v
        }
        Check::CondaPackage {
            env,
            package,
            version,
        } => vec![env, package, version],
        Check::RebootPending | Check::RunningKernelHeaders => Vec::new(),
        Check::Any(list) | Check::All(list) => list.iter().flat_map(check_values).collect(),
    }
}
