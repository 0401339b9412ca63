//! `gpu-doctor check`: the machine against requirements, for CI. Exit 0 pass; 1 a requirement
//! is unmet or a finding is at or above `--fail-on`; 2 usage error; 3 the doctor failed.

use super::settings::Settings;
use crate::cli::CheckArgs;
use crate::exit::{CliError, CliResult, ExitStatus};

pub(super) fn run(settings: &Settings, args: &CheckArgs) -> CliResult {
    let fail_on = settings.fail_on(args.fail_on);
    let requirements = args
        .require
        .iter()
        .map(|text| crate::check::expr::parse(text).map_err(|e| CliError::usage(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    let report = super::examined(settings, None)?;
    let env = args.env.as_deref();
    if let Some(env) = env
        && !report
            .python_envs
            .iter()
            .any(|e| e.path.trim_end_matches('/') == env.trim_end_matches('/'))
    {
        return Err(CliError::usage(format!(
            "--env {env}: no Python environment with that prefix was found"
        )));
    }
    let verdict = crate::check::verdict(&report, &requirements, fail_on, env);
    if let Some(path) = &args.output {
        let text = crate::check::render::render(&verdict, args.format);
        crate::outfile::replace(path, &text).map_err(CliError::failure)?;
    }
    crate::output::emit(&crate::check::render::render_with(
        &verdict,
        args.format,
        settings.paint(),
    ))?;
    Ok(ExitStatus::problem_if(!verdict.pass))
}
