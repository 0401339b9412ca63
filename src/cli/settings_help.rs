//! The `[env: …] [config: …] [default: …]` ends of the help of every flag that is also a
//! setting, written from the settings' own tables ([`crate::config::KEYS`], the default
//! constants) so `--help`, the man pages and the config file cannot disagree.
//!
//! The variables are not read by clap (see `crate::commands::settings` for why); this only
//! says where else a value may come from.

/// A flag that is also a setting: the subcommand path to it, its clap id, its config key (when
/// the file has one) and its default as help shows it.
struct SettingFlag {
    path: &'static [&'static str],
    id: &'static str,
    key: Option<&'static str>,
    default: Option<String>,
}

fn flags() -> Vec<SettingFlag> {
    let seconds = |d: f64| Some(format!("{d}"));
    let flag = |path, id, key, default| SettingFlag {
        path,
        id,
        key,
        default,
    };
    vec![
        flag(
            &[],
            "timeout",
            Some("timeout"),
            seconds(crate::host::DEFAULT_TIMEOUT.as_secs_f64()),
        ),
        flag(&[], "config", None, None),
        flag(&[], "color", Some("color"), Some("auto".to_string())),
        flag(
            &["doctor"],
            "deep_timeout",
            Some("deep_timeout"),
            seconds(crate::deep::DEFAULT_TIMEOUT_SECS),
        ),
        flag(
            &["explain"],
            "deep_timeout",
            Some("deep_timeout"),
            seconds(crate::deep::DEFAULT_TIMEOUT_SECS),
        ),
        flag(
            &["smoke"],
            "deep_timeout",
            Some("deep_timeout"),
            seconds(crate::deep::SMOKE_TIMEOUT_SECS),
        ),
        flag(
            &["check"],
            "fail_on",
            Some("fail_on"),
            Some("error".to_string()),
        ),
        flag(
            &["manifest", "update"],
            "url",
            Some("manifest_url"),
            Some("the project's location".to_string()),
        ),
        flag(
            &["manifest", "update"],
            "pubkey",
            Some("manifest_pubkey"),
            None,
        ),
        flag(
            &["manifest", "verify"],
            "pubkey",
            Some("manifest_pubkey"),
            None,
        ),
    ]
}

/// " [env: V] [config: k] [default: d]" for one flag.
fn suffix(flag: &SettingFlag) -> String {
    let variable = match flag.key {
        Some(key) => crate::config::KEYS
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v),
        None => Some(crate::config::CONFIG_VAR),
    };
    let mut out = String::new();
    if let Some(variable) = variable {
        out.push_str(&format!(" [env: {variable}]"));
    }
    if let Some(key) = flag.key {
        out.push_str(&format!(" [config: {key}]"));
    }
    if let Some(default) = &flag.default {
        out.push_str(&format!(" [default: {default}]"));
    }
    out
}

/// `command` with each setting flag's help ending in where else its value may come from.
/// Edits the arguments in place (`mut_args`), so the order help lists them in is kept.
pub(super) fn add(command: clap::Command) -> clap::Command {
    add_below(command, &flags(), &[])
}

fn add_below(command: clap::Command, flags: &[SettingFlag], path: &[String]) -> clap::Command {
    let command = command.mut_args(|arg| {
        let flag = flags.iter().find(|f| {
            f.id == arg.get_id().as_str()
                && f.path.len() == path.len()
                && f.path.iter().zip(path).all(|(a, b)| a == b)
        });
        match flag {
            Some(flag) => {
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                arg.help(format!("{help}{}", suffix(flag)))
            }
            None => arg,
        }
    });
    command.mut_subcommands(|sub| {
        let mut below = path.to_vec();
        below.push(sub.get_name().to_string());
        add_below(sub, flags, &below)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_of_the_config_file_has_its_flag_and_variable() {
        let flags = flags();
        for (key, variable) in crate::config::KEYS {
            let flag = flags
                .iter()
                .find(|f| f.key == Some(key))
                .unwrap_or_else(|| panic!("no flag documents {key}"));
            assert!(suffix(flag).contains(variable), "{key}: {}", suffix(flag));
        }
        let timeout = flags.iter().find(|f| f.id == "timeout").expect("timeout");
        assert_eq!(
            suffix(timeout),
            " [env: GPU_DOCTOR_TIMEOUT] [config: timeout] [default: 5]"
        );
    }
}
