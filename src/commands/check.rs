//! `gpu-doctor check`: the machine against requirements, for CI. Exit 0 pass; 1 a requirement
//! is unmet or a finding is at or above `--fail-on`; 2 usage error; 3 the doctor failed.

use super::settings::Settings;
use crate::cli::CheckArgs;
use crate::exit::{CliError, CliResult, ExitStatus};

#[expect(
    clippy::disallowed_methods,
    reason = "where this process's own stdout goes (a `>` typed for `>=`), not the examined machine"
)]
pub(super) fn run(settings: &Settings, args: &CheckArgs) -> CliResult {
    if let Some(name) = std::fs::read_link("/proc/self/fd/1")
        .ok()
        .as_deref()
        .and_then(|target| redirected_operator(target, &args.require))
    {
        return Err(CliError::usage(unquoted_message(&name, &args.require)));
    }
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

/// The name of the file stdout goes to when it looks like the rest of an unquoted requirement:
/// `-r torch>=2.4` is, to the shell, `-r torch` with stdout redirected into a file named `=2.4`
/// (`>` then the file name), and `torch` alone is a valid requirement, so nothing else would
/// tell. A file whose name starts with `=`, `>` or `<` is that; so is a bare version (`-r
/// torch>2`: a file `2`) when a requirement has no operator. Terminals and pipes are not files.
fn redirected_operator(target: &std::path::Path, require: &[String]) -> Option<String> {
    if target.starts_with("/dev") || target.starts_with("/proc") {
        return None;
    }
    let name = target.file_name()?.to_str()?;
    let rest = name.trim_start_matches(['=', '>', '<']);
    let operator_led = name.len() > rest.len();
    let bare_version = name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.' || c == '*')
        && require.iter().any(|r| !r.contains(['<', '>', '=', '!']));
    (operator_led || bare_version).then(|| crate::sanitize::clean(name))
}

/// What to tell the user whose stdout went into such a file.
fn unquoted_message(file: &str, require: &[String]) -> String {
    let example = require
        .last()
        .map_or_else(|| "driver>=535".to_string(), |r| format!("{r}>{file}"));
    format!(
        "stdout goes into a file named '{file}': an unquoted '>' in a requirement is the \
         shell's redirection (it created that file and passed only the part before '>'); \
         quote each requirement, e.g. -r '{example}', and remove the file '{file}'"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirection_left_by_an_unquoted_requirement_is_recognised() {
        let bare = ["torch".to_string()];
        let compared = ["torch>=2".to_string()];
        let name = |p: &str, r: &[String]| redirected_operator(std::path::Path::new(p), r);
        assert_eq!(name("/home/u/=535", &bare).as_deref(), Some("=535"));
        assert_eq!(name("/tmp/=2.4", &compared).as_deref(), Some("=2.4"));
        assert_eq!(name("/tmp/535", &bare).as_deref(), Some("535"));
        assert_eq!(name("/tmp/12.4", &bare).as_deref(), Some("12.4"));
        assert_eq!(name("/tmp/12.4", &compared), None, "no part was cut off");
        assert_eq!(name("/tmp/report.txt", &bare), None);
        assert_eq!(
            name("/dev/pts/3", &bare),
            None,
            "a terminal is not a redirection"
        );
        assert_eq!(name("/dev/null", &bare), None);
        assert_eq!(name("pipe:[1234]", &bare), None);
        assert_eq!(name("/tmp/gpu-doctor.xml", &bare), None);
        let message = unquoted_message("=535", &["driver".to_string()]);
        assert!(message.contains("-r 'driver>=535'"), "{message}");
    }
}
