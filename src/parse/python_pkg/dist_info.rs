//! Installed distributions: `*.dist-info` / `*.egg-info` folder names and the `METADATA` file
//! with the `Requires-Dist` pins (torch pins the exact cuDNN and NCCL wheels it was built with).

/// PEP 503 name normalisation: lowercase, runs of `-`, `_`, `.` become one `-`.
pub fn normalize_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_separator_run = false;
    for c in name.trim().chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_separator_run {
                out.push('-');
            }
            in_separator_run = true;
        } else {
            out.extend(c.to_lowercase());
            in_separator_run = false;
        }
    }
    out
}

/// `torch-2.11.0.dist-info` → `("torch", "2.11.0")`; also `.egg-info` folders, including
/// `foo-1.0-py3.8.egg-info` (the Python tag is dropped). The name is normalised
/// ([`normalize_name`]); the version is kept as written.
pub fn dist_info_name(dir_name: &str) -> Option<(String, String)> {
    let dir_name = dir_name.trim_end_matches('/');
    let stem = dir_name
        .strip_suffix(".dist-info")
        .or_else(|| dir_name.strip_suffix(".egg-info"))?;
    // Normalised names have no '-', but hand-made folders can: the version is the first
    // '-'-separated part that starts with a digit.
    let mut parts = stem.split('-');
    let first = parts.next().filter(|p| !p.is_empty())?;
    let mut name_len = first.len();
    for part in parts {
        if part.starts_with(|c: char| c.is_ascii_digit()) {
            let name = stem.get(..name_len)?;
            return Some((normalize_name(name), part.to_string()));
        }
        name_len += 1 + part.len();
    }
    None
}

/// A `Requires-Dist` line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Requirement {
    /// Normalised ([`normalize_name`]).
    pub name: String,
    /// `cuda-toolkit[cublas,cudart]` → `["cublas", "cudart"]`.
    pub extras: Vec<String>,
    /// The version specifier as written, without spaces or the old-style parentheses:
    /// `==9.19.0.56`, `<14,>=13.0.3`; empty when any version will do.
    pub spec: String,
    /// The environment marker after `;`: `platform_system == "Linux"`.
    pub marker: Option<String>,
}

/// The headers of a `METADATA` (or `PKG-INFO`) file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PkgMetadata {
    /// As written in the file (not normalised).
    pub name: Option<String>,
    pub version: Option<String>,
    pub requires_dist: Vec<Requirement>,
}

/// Parses the RFC 822 headers of a `METADATA` file, up to the first blank line (the
/// description that follows is not read).
pub fn metadata(text: &str) -> PkgMetadata {
    let mut meta = PkgMetadata::default();
    let mut headers: Vec<(&str, String)> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            // A continuation of the previous header.
            if let Some((_, value)) = headers.last_mut() {
                value.push(' ');
                value.push_str(line.trim());
            }
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            headers.push((key.trim(), value.trim().to_string()));
        }
    }
    for (key, value) in headers {
        if key.eq_ignore_ascii_case("Name") {
            meta.name = Some(value).filter(|v| !v.is_empty());
        } else if key.eq_ignore_ascii_case("Version") {
            meta.version = Some(value).filter(|v| !v.is_empty());
        } else if key.eq_ignore_ascii_case("Requires-Dist") {
            meta.requires_dist.extend(requirement(&value));
        }
    }
    meta
}

/// `name[extra,...] spec ; marker` (PEP 508, without URL forms being taken apart).
fn requirement(text: &str) -> Option<Requirement> {
    let (req, marker) = match text.split_once(';') {
        Some((req, marker)) => (req, Some(marker.trim()).filter(|m| !m.is_empty())),
        None => (text, None),
    };
    let req = req.trim();
    let name_end = req
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(req.len());
    let (name, rest) = req.split_at_checked(name_end)?;
    if name.is_empty() {
        return None;
    }
    let mut rest = rest.trim_start();
    let mut extras = Vec::new();
    if let Some(inner) = rest.strip_prefix('[') {
        let (list, after) = inner.split_once(']').unwrap_or((inner, ""));
        extras = list
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect();
        rest = after.trim_start();
    }
    let spec = rest
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(rest);
    let spec = if spec.trim_start().starts_with('@') {
        spec.trim().to_string() // a URL: spaces are part of it
    } else {
        spec.split_whitespace().collect()
    };
    Some(Requirement {
        name: normalize_name(name),
        extras,
        spec,
        marker: marker.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{garbage, huge, section};

    const META: &str = include_str!("../../../tests/data/h200/meta.txt");

    #[test]
    fn h200_dist_info_names() {
        let names = section(META, "== dist-info", "== ");
        let parsed: Vec<(String, String)> = names.lines().filter_map(dist_info_name).collect();
        assert_eq!(parsed.len(), names.lines().count());
        let get = |n: &str| {
            parsed
                .iter()
                .find(|(name, _)| name == n)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("torch"), Some("2.11.0"));
        assert_eq!(get("nvidia-cudnn-cu13"), Some("9.19.0.56"));
        assert_eq!(get("jax-cuda13-plugin"), Some("0.11.2"));
        assert_eq!(get("python-dateutil"), Some("2.9.0.post0"));
        assert_eq!(get("torch-geometric"), Some("2.8.0.post1"));
        assert_eq!(get("nvidia-nccl-cu13"), Some("2.28.9"));

        let system = section(META, "== system dist-packages", "== ");
        let eggs: Vec<_> = system.lines().filter_map(dist_info_name).collect();
        assert_eq!(
            eggs,
            vec![
                ("pip".to_string(), "24.0".to_string()),
                ("setuptools".to_string(), "68.1.2".to_string()),
                ("wheel".to_string(), "0.42.0".to_string()),
            ]
        );
    }

    #[test]
    fn dist_info_edge_cases() {
        assert_eq!(
            dist_info_name("tensorflow-2.15.0.egg-info"),
            Some(("tensorflow".into(), "2.15.0".into()))
        );
        assert_eq!(
            dist_info_name("foo-1.0-py3.8.egg-info"),
            Some(("foo".into(), "1.0".into()))
        );
        assert_eq!(
            dist_info_name("Typing.Extensions-4.0.dist-info/"),
            Some(("typing-extensions".into(), "4.0".into()))
        );
        assert_eq!(
            dist_info_name("old-style-name-1.2.3.dist-info"),
            Some(("old-style-name".into(), "1.2.3".into()))
        );
        assert_eq!(dist_info_name("foo.egg-info"), None);
        assert_eq!(dist_info_name("-1.0.dist-info"), None);
        assert_eq!(dist_info_name("torch"), None);
        assert_eq!(dist_info_name("torch-2.11.0.dist"), None);
        assert_eq!(normalize_name("Foo__Bar..baz-_Qux"), "foo-bar-baz-qux");
    }

    #[test]
    fn h200_torch_metadata() {
        let text = section(META, "== torch METADATA", "== ");
        let meta = metadata(&text);
        assert_eq!(meta.name.as_deref(), Some("torch"));
        assert_eq!(meta.version.as_deref(), Some("2.11.0"));
        assert_eq!(meta.requires_dist.len(), 17);
        let find = |n: &str| meta.requires_dist.iter().find(|r| r.name == n).unwrap();

        let toolkit = find("cuda-toolkit");
        assert_eq!(toolkit.spec, "==13.0.2");
        assert_eq!(toolkit.extras.len(), 11);
        assert_eq!(toolkit.extras[0], "cublas");
        assert_eq!(
            toolkit.marker.as_deref(),
            Some("platform_system == \"Linux\"")
        );

        assert_eq!(find("nvidia-cudnn-cu13").spec, "==9.19.0.56");
        assert_eq!(find("nvidia-nccl-cu13").spec, "==2.28.9");
        assert_eq!(find("cuda-bindings").spec, "<14,>=13.0.3");
        assert_eq!(find("typing-extensions").spec, ">=4.10.0");
        let filelock = find("filelock");
        assert_eq!(filelock.spec, "");
        assert_eq!(filelock.marker, None);
        assert_eq!(
            find("optree").marker.as_deref(),
            Some("extra == \"optree\"")
        );
    }

    #[test]
    fn metadata_forms() {
        let text = "Metadata-Version: 2.1\n\
                    Name: nvidia-cudnn-cu12\n\
                    Version: 8.9.2.26\n\
                    Summary: cuDNN runtime libraries\n\
                    License: NVIDIA Proprietary Software\n\
                    \x20       spanning lines\n\
                    Requires-Dist: nvidia-cublas-cu12\n\
                    Requires-Dist: requests (>=2.0, <3)\n\
                    Requires-Dist: pkg @ https://example.com/pkg-1.0.tar.gz ; python_version >= \"3.8\"\n\
                    \n\
                    Requires-Dist: not-a-header-this-is-the-description\n";
        let meta = metadata(text);
        assert_eq!(meta.name.as_deref(), Some("nvidia-cudnn-cu12"));
        assert_eq!(meta.version.as_deref(), Some("8.9.2.26"));
        assert_eq!(
            meta.requires_dist,
            vec![
                Requirement {
                    name: "nvidia-cublas-cu12".into(),
                    ..Requirement::default()
                },
                Requirement {
                    name: "requests".into(),
                    spec: ">=2.0,<3".into(),
                    ..Requirement::default()
                },
                Requirement {
                    name: "pkg".into(),
                    spec: "@ https://example.com/pkg-1.0.tar.gz".into(),
                    marker: Some("python_version >= \"3.8\"".into()),
                    ..Requirement::default()
                },
            ]
        );
    }

    #[test]
    fn garbage_and_truncated() {
        let g = garbage();
        assert_eq!(dist_info_name(""), None);
        assert_eq!(dist_info_name(&g), None);
        assert_eq!(dist_info_name("torch-2.11.0.dist-inf"), None);
        assert_eq!(metadata(""), PkgMetadata::default());
        assert_eq!(metadata(&g), PkgMetadata::default());
        assert_eq!(metadata("Requires-Dist: [x]==1"), PkgMetadata::default());
        let cut = metadata("Name: torch\nVersion: 2.11.0\nRequires-Dist: nvidia-nccl-cu13==2.2");
        assert_eq!(cut.requires_dist[0].spec, "==2.2");
    }

    #[test]
    fn huge_input() {
        assert_eq!(dist_info_name(&(huge("a-") + ".dist-info")), None);
        let meta = metadata(&huge("Requires-Dist: nvidia-nccl-cu13==2.28.9\n"));
        assert!(meta.requires_dist.len() > 50_000);
        assert!(meta.requires_dist.iter().all(|r| r.spec == "==2.28.9"));
    }
}
