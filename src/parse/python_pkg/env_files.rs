//! Python environment markers: a venv's `pyvenv.cfg` and conda's `~/.conda/environments.txt`.

/// `pyvenv.cfg` of a virtual environment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PyvenvCfg {
    /// The folder of the Python the venv was made from.
    pub home: Option<String>,
    /// `version` (venv) or `version_info` (virtualenv, uv).
    pub version: Option<String>,
    pub include_system_site_packages: Option<bool>,
}

/// Parses `pyvenv.cfg` (`key = value` lines).
pub fn pyvenv_cfg(text: &str) -> PyvenvCfg {
    let mut cfg = PyvenvCfg::default();
    let mut version = None;
    let mut version_info = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        if value.is_empty() {
            continue;
        }
        let key = key.trim();
        if cfg_key_is(key, "home") {
            cfg.home = Some(value.to_string());
        } else if cfg_key_is(key, "version") {
            version = Some(value.to_string());
        } else if cfg_key_is(key, "version-info") {
            version_info = Some(value.to_string());
        } else if cfg_key_is(key, "include-system-site-packages") {
            cfg.include_system_site_packages = if value.eq_ignore_ascii_case("true") {
                Some(true)
            } else if value.eq_ignore_ascii_case("false") {
                Some(false)
            } else {
                None
            };
        }
    }
    cfg.version = version.or(version_info);
    cfg
}

/// `key` equals `expected` (written with `-`), ignoring case and `_` for `-`.
fn cfg_key_is(key: &str, expected: &str) -> bool {
    key.len() == expected.len()
        && key
            .bytes()
            .zip(expected.bytes())
            .all(|(k, e)| k.to_ascii_lowercase() == e || (k == b'_' && e == b'-'))
}

/// `~/.conda/environments.txt`: one environment path per line.
pub fn conda_environments_txt(text: &str) -> Vec<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{garbage, huge, section};

    const META: &str = include_str!("../../../tests/data/h200/meta.txt");

    #[test]
    fn h200_pyvenv_cfg() {
        let python = section(META, "== python list", "== ");
        let cfg_text: String = python
            .lines()
            .filter(|l| l.contains(" = "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(
            pyvenv_cfg(&cfg_text),
            PyvenvCfg {
                home: Some("/usr/bin".into()),
                version: Some("3.12.3".into()),
                include_system_site_packages: Some(false),
            }
        );
        let venv = "home = /usr/local/bin\ninclude-system-site-packages = True\nversion = 3.10.12\n\
                    executable = /usr/local/bin/python3.10\n";
        let cfg = pyvenv_cfg(venv);
        assert_eq!(cfg.version.as_deref(), Some("3.10.12"));
        assert_eq!(cfg.include_system_site_packages, Some(true));
    }

    #[test]
    fn conda_environments() {
        let envs = "/home/me/miniconda3\n\n/home/me/miniconda3/envs/torch\n  # old\n\
                    /opt/conda/envs/tf 2\n";
        assert_eq!(
            conda_environments_txt(envs),
            vec![
                "/home/me/miniconda3",
                "/home/me/miniconda3/envs/torch",
                "/opt/conda/envs/tf 2"
            ]
        );
    }

    #[test]
    fn garbage_truncated_and_huge() {
        let g = garbage();
        assert_eq!(pyvenv_cfg(""), PyvenvCfg::default());
        assert_eq!(pyvenv_cfg(&g), PyvenvCfg::default());
        assert_eq!(pyvenv_cfg("home = /usr/b").home.as_deref(), Some("/usr/b"));
        assert_eq!(
            pyvenv_cfg("include-system-site-packages = tr").include_system_site_packages,
            None
        );
        assert_eq!(conda_environments_txt(""), Vec::<String>::new());
        assert_eq!(
            conda_environments_txt("\n \n# only comments\n"),
            Vec::<String>::new()
        );

        assert!(conda_environments_txt(&huge("\n# c\n")).is_empty());
        let cfg = pyvenv_cfg(&huge("home = /usr/bin\n"));
        assert_eq!(cfg.home.as_deref(), Some("/usr/bin"));
    }
}
