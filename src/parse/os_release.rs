//! `/etc/os-release` (and `/usr/lib/os-release`): `KEY=value` lines with shell quoting.

/// The fields of os-release that matter for picking packages.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OsRelease {
    /// `ubuntu`, `debian`, `rhel`, `rocky`, `amzn`, ...
    pub id: Option<String>,
    /// `ID_LIKE`, split on whitespace: `["rhel", "centos", "fedora"]`.
    pub id_like: Vec<String>,
    /// `24.04`, `9.4`, `2023`.
    pub version_id: Option<String>,
    /// `VERSION_CODENAME`, else `UBUNTU_CODENAME`.
    pub version_codename: Option<String>,
    pub pretty_name: Option<String>,
    pub name: Option<String>,
    /// `VERSION`, e.g. `24.04.3 LTS (Noble Numbat)`.
    pub version: Option<String>,
}

/// Parses os-release text. Unknown keys, comments and malformed lines are skipped; a later
/// assignment of a key wins, as it would in a shell.
pub fn parse(text: &str) -> OsRelease {
    let mut os = OsRelease::default();
    let mut ubuntu_codename = None;
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((key, raw)) = line.split_once('=') else {
            continue;
        };
        let value = Some(unquote(raw)).filter(|v| !v.trim().is_empty());
        match key.trim() {
            "ID" => os.id = value,
            "ID_LIKE" => {
                os.id_like = value
                    .map(|v| v.split_whitespace().map(str::to_string).collect())
                    .unwrap_or_default();
            }
            "VERSION_ID" => os.version_id = value,
            "VERSION_CODENAME" => os.version_codename = value,
            "UBUNTU_CODENAME" => ubuntu_codename = value,
            "PRETTY_NAME" => os.pretty_name = value,
            "NAME" => os.name = value,
            "VERSION" => os.version = value,
            _ => {}
        }
    }
    if os.version_codename.is_none() {
        os.version_codename = ubuntu_codename;
    }
    os
}

/// Shell word unquoting as os-release(5) allows it: `'...'` is literal, `"..."` honours
/// `\" \\ \$ \``, unquoted text honours any backslash escape and ends at unquoted whitespace.
/// An unterminated quote keeps what was read.
fn unquote(raw: &str) -> String {
    let mut out = String::new();
    let mut chars = raw.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    out.push(q);
                }
            }
            '"' => {
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' => match chars.next() {
                            Some(e @ ('"' | '\\' | '$' | '`')) => out.push(e),
                            Some('\n') | None => {}
                            Some(other) => {
                                out.push('\\');
                                out.push(other);
                            }
                        },
                        _ => out.push(q),
                    }
                }
            }
            '\\' => {
                if let Some(e) = chars.next() {
                    out.push(e);
                }
            }
            c if c.is_whitespace() => break,
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{body, garbage, huge};

    const OS: &str = include_str!("../../tests/data/h200/os.txt");

    #[test]
    fn h200_ubuntu_noble() {
        // The capture also holds uname and free output: those lines are not KEY=value.
        let os = parse(body(OS));
        assert_eq!(
            os,
            OsRelease {
                id: Some("ubuntu".into()),
                id_like: vec!["debian".into()],
                version_id: Some("24.04".into()),
                version_codename: Some("noble".into()),
                pretty_name: Some("Ubuntu 24.04.3 LTS".into()),
                name: Some("Ubuntu".into()),
                version: Some("24.04.3 LTS (Noble Numbat)".into()),
            }
        );
    }

    #[test]
    fn rhel_family_and_quoting() {
        let rocky = r#"NAME="Rocky Linux"
VERSION="9.4 (Blue Onyx)"
ID="rocky"
ID_LIKE="rhel centos fedora"
VERSION_ID="9.4"
PLATFORM_ID="platform:el9"
PRETTY_NAME="Rocky Linux 9.4 (Blue Onyx)"
ANSI_COLOR="0;32"
"#;
        let os = parse(rocky);
        assert_eq!(os.id.as_deref(), Some("rocky"));
        assert_eq!(os.id_like, vec!["rhel", "centos", "fedora"]);
        assert_eq!(os.version_id.as_deref(), Some("9.4"));
        assert_eq!(os.version_codename, None);

        let tricky = "# a comment\n\
                      \n\
                      NAME='Amazon Linux'\n\
                      PRETTY_NAME=\"Say \\\"hi\\\" \\$HOME \\\\ done\"\n\
                      ID=amzn\n\
                      VERSION_ID=2023\n\
                      ID=am\\ zn\n\
                      UBUNTU_CODENAME=jammy\n\
                      VERSION_CODENAME=\n";
        let os = parse(tricky);
        assert_eq!(os.name.as_deref(), Some("Amazon Linux"));
        assert_eq!(os.pretty_name.as_deref(), Some("Say \"hi\" $HOME \\ done"));
        assert_eq!(os.id.as_deref(), Some("am zn"));
        assert_eq!(os.version_id.as_deref(), Some("2023"));
        // An empty VERSION_CODENAME falls back to UBUNTU_CODENAME.
        assert_eq!(os.version_codename.as_deref(), Some("jammy"));
    }

    #[test]
    fn garbage_truncated_and_huge() {
        assert_eq!(parse(""), OsRelease::default());
        assert_eq!(parse(&garbage()), OsRelease::default());
        // Unterminated quote: keeps what was read.
        assert_eq!(parse("NAME=\"Ubun").name.as_deref(), Some("Ubun"));
        assert_eq!(parse("ID='").id, None);
        let big = parse(&huge("ID=ubuntu\nJUNK LINE\n"));
        assert_eq!(big.id.as_deref(), Some("ubuntu"));
        let one_long_value = format!("PRETTY_NAME=\"{}\"", huge("x"));
        assert_eq!(
            parse(&one_long_value).pretty_name.map(|p| p.len()),
            Some(huge("x").len())
        );
    }
}
