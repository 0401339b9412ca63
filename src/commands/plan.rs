//! `gpu-doctor plan`: options to a [`Target`], the report to a plan, the plan to a script, JSON
//! or a run. Exit 0 written (or run); 1 the target cannot work here (the refusal is on
//! stderr); 2 usage error; 3 could not write, or the run stopped.

use std::path::Path;

use super::settings::Settings;
use crate::cli::PlanArgs;
use crate::exit::{CliError, CliResult, ExitStatus, Said};
use crate::outfile::OutFile;
use crate::plan::execute::{self, Outcome};
use crate::plan::target::{self, Target};

/// The target the options name.
///
/// # Errors
/// The first malformed option value.
fn target(args: &PlanArgs) -> Result<Target, target::UsageError> {
    Ok(Target {
        via: args.via,
        cuda: args.cuda.as_deref().map(target::parse_cuda).transpose()?,
        driver: args
            .driver
            .as_deref()
            .map(target::parse_driver)
            .transpose()?
            .unwrap_or(target::DriverChoice::Keep),
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

pub(super) fn run(settings: &Settings, args: &PlanArgs) -> CliResult {
    let host = &settings.host;
    if args.execute && host.host_root().is_some() {
        return Err(CliError::usage(
            "plan --execute changes the machine it runs on, which under --host-root is this \
             container, not the node: write the plan with -o and run it on the node",
        ));
    }
    let target = target(args).map_err(|e| CliError::usage(e.to_string()))?;
    let report = crate::examine::examine(host, &settings.manifests);
    let manifests = settings.manifests.manifests();
    let plan = crate::plan::plan(&report, manifests, &target).map_err(|refusal| CliError {
        status: ExitStatus::Problem,
        said: vec![Said::Text(refusal.render())],
    })?;
    let text = if args.json {
        crate::plan::json::render(&plan)
    } else {
        crate::plan::shell::render(&plan, &crate::plan::shell::Options::default())
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
        crate::outfile::write_all(&files, args.force).map_err(CliError::failure)?;
        let names: Vec<String> = files.iter().map(|f| f.path.display().to_string()).collect();
        crate::term::note(&format!("wrote {}", names.join(" and ")));
    }
    if !args.execute {
        if args.output.is_none() {
            crate::output::emit(&text)?;
        }
        return Ok(ExitStatus::Success);
    }
    execute_plan(settings, args, &plan)
}

/// Shows the plan, asks, and runs it.
fn execute_plan(settings: &Settings, args: &PlanArgs, plan: &crate::plan::Plan) -> CliResult {
    let host = &settings.host;
    // Under --root the script writes below the root, so a fixture stands in for the machine.
    let options = crate::plan::shell::Options {
        root: if host.is_rooted() {
            host.fs.root().display().to_string()
        } else {
            String::new()
        },
    };
    let script = crate::plan::shell::render(plan, &options);
    if let Some(why) = execute::escapes_root(host, plan) {
        return Err(CliError::failure(format!("not run: {why}")));
    }
    crate::output::emit(&script)?;
    let question = format!(
        "Run these {} steps on this machine now (log: {})?",
        plan.steps.len(),
        args.log.display()
    );
    match execute::confirm(args.yes, &question) {
        None => {
            return Err(CliError::usage(
                "--execute asks before it changes anything, and there is no terminal \
                 to ask on: pass --yes to run without asking. Nothing was changed.",
            ));
        }
        Some(false) => {
            crate::term::note("not run; nothing was changed.");
            return Ok(ExitStatus::Success);
        }
        Some(true) => {}
    }
    match execute::run(host, &script, &args.log) {
        Outcome::Done => {
            crate::term::note(&format!(
                "the plan ran to the end; log: {}",
                args.log.display()
            ));
            Ok(ExitStatus::Success)
        }
        Outcome::Failed(code) => {
            let status = code.map_or_else(|| "a signal".to_string(), |c| c.to_string());
            Err(CliError::failure(format!(
                "the plan stopped (exit status {status}); what was done and what was \
                 not is above and in the log: {}",
                args.log.display()
            )))
        }
        // Only a watcher asks a run to stop between steps; said the same way for safety.
        Outcome::Stopped => Err(CliError::failure(format!(
            "the plan stopped between steps; running it again goes on where it stopped; \
             log: {}",
            args.log.display()
        ))),
        Outcome::Error(e) => Err(CliError::failure(e)),
    }
}
