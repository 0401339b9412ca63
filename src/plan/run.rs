//! The `plan` subcommand's face: options to a [`Target`], the report to a [`super::Plan`], the
//! plan to a script, JSON or a run. Exit codes: 0 written (or run), 1 refused, 2 usage error,
//! 3 could not write or the run stopped.

use std::path::Path;

use crate::app::exit;
use crate::cli::PlanArgs;
use crate::host::Host;

use super::execute::{self, Outcome};
use super::target::{self, Target, UsageError};
use crate::outfile::{self as output, OutFile};

/// The target the options name.
///
/// # Errors
/// The first malformed option value.
pub fn target(args: &PlanArgs) -> Result<Target, UsageError> {
    Ok(Target {
        via: args.via,
        cuda: args.cuda.as_deref().map(target::parse_cuda).transpose()?,
        driver: args
            .driver
            .as_deref()
            .map(target::parse_driver)
            .transpose()?
            .unwrap_or(target::DriverChoice::Auto),
        cudnn: args.cudnn.as_deref().map(target::parse_cudnn).transpose()?,
        framework: args
            .framework
            .as_deref()
            .map(target::parse_framework)
            .transpose()?,
        python: args
            .python
            .as_deref()
            .map(target::parse_python)
            .transpose()?,
        env: args.env.clone(),
        os: args.os.clone(),
    })
}

/// Runs `gpu-doctor plan`.
#[must_use]
pub fn run(host: &Host, args: &PlanArgs) -> u8 {
    let target = match target(args) {
        Ok(t) => t,
        Err(e) => {
            crate::term::error(&e.to_string());
            return exit::USAGE;
        }
    };
    let manifests = crate::manifest::embedded();
    let report = crate::app::examine(host);
    let plan = match super::plan(&report, manifests, &target) {
        Ok(p) => p,
        Err(refusal) => {
            eprint!("{}", refusal.render());
            return exit::PROBLEM;
        }
    };
    let text = if args.json {
        super::json::render(&plan)
    } else {
        super::shell::render(&plan, &super::shell::Options::default())
    };
    if let Some(path) = &args.output {
        let mut files = vec![OutFile {
            path: path.clone(),
            content: text.clone(),
            mode: if args.json { 0o644 } else { 0o755 },
        }];
        let folder = path.parent().unwrap_or_else(|| Path::new(""));
        files.extend(plan.files.iter().map(|f| OutFile {
            path: folder.join(&f.name),
            content: f.content.clone(),
            mode: 0o644,
        }));
        if let Err(e) = output::write_all(&files, args.force) {
            crate::term::error(&e);
            return exit::FAILED;
        }
        let names: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
        crate::term::note(&format!("wrote {}", names.join(" and ")));
    }
    if !args.execute {
        return if args.output.is_some() {
            exit::OK
        } else {
            emit(&text)
        };
    }
    execute_plan(host, args, &plan)
}

/// Shows the plan, asks, and runs it.
fn execute_plan(host: &Host, args: &PlanArgs, plan: &super::Plan) -> u8 {
    // Under --root the script writes below the root, so a fixture stands in for the machine.
    let options = super::shell::Options {
        root: if host.is_rooted() {
            host.fs.root().display().to_string()
        } else {
            String::new()
        },
    };
    let script = super::shell::render(plan, &options);
    if let Some(why) = escapes_root(host, plan) {
        crate::term::error(&format!("not run: {why}"));
        return exit::FAILED;
    }
    if emit(&script) != exit::OK {
        return exit::FAILED;
    }
    let question = format!(
        "Run these {} steps on this machine now (log: {})?",
        plan.steps.len(),
        args.log.display()
    );
    match execute::confirm(args.yes, &question) {
        None => {
            crate::term::error(
                "--execute asks before it changes anything, and there is no terminal \
                 to ask on: pass --yes to run without asking. Nothing was changed.",
            );
            return exit::USAGE;
        }
        Some(false) => {
            crate::term::note("not run; nothing was changed.");
            return exit::OK;
        }
        Some(true) => {}
    }
    match execute::run(host, &script, &args.log) {
        Outcome::Done => {
            crate::term::note(&format!(
                "the plan ran to the end; log: {}",
                args.log.display()
            ));
            exit::OK
        }
        Outcome::Failed(code) => {
            let status = code.map_or_else(|| "a signal".to_string(), |c| c.to_string());
            crate::term::error(&format!(
                "the plan stopped (exit status {status}); what was done and what was \
                 not is above and in the log: {}",
                args.log.display()
            ));
            exit::FAILED
        }
        Outcome::Error(e) => {
            crate::term::error(&e);
            exit::FAILED
        }
    }
}

/// Under `--root`, a program the plan runs by its path (an environment's Python) must stay
/// inside the root: the kernel follows an absolute link such as `bin/python3 -> /usr/bin/python3`
/// to this machine's own file, which would turn a fixture run into a real one. The reason when
/// one leaves (or cannot be followed).
fn escapes_root(host: &Host, plan: &super::Plan) -> Option<String> {
    if !host.is_rooted() {
        return None;
    }
    let root = host.fs.root();
    let interpreters = plan.steps.iter().flat_map(|s| {
        let from_checks = s.guards.iter().filter_map(|g| match &g.check {
            super::Check::PythonDist {
                python: super::Python::Prefix(p),
                ..
            } => Some(p.clone()),
            _ => None,
        });
        let from_commands = s.commands.iter().filter_map(|c| match c {
            super::Command::Pip {
                python: super::Python::Prefix(p),
                ..
            } => Some(p.clone()),
            _ => None,
        });
        from_checks.chain(from_commands).collect::<Vec<_>>()
    });
    for prefix in interpreters {
        let relative = format!("{}/bin/python", prefix.trim_matches('/'));
        let path = root.join(relative);
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        match std::fs::canonicalize(&path) {
            Ok(real) if real.starts_with(root) => {}
            Ok(real) => {
                return Some(format!(
                    "{} leads outside --root to {}",
                    path.display(),
                    real.display()
                ));
            }
            Err(e) => return Some(format!("{} cannot be followed: {e}", path.display())),
        }
    }
    None
}

/// Writes to stdout; a closed pipe is success.
fn emit(text: &str) -> u8 {
    crate::app::emit_text(text)
}
