//! `torch/version.py` and JAX's `version.py` files: module-level `name = 'literal'` lines.

use crate::parse::pyliteral::{Literal, Tokens};
use crate::parse::text::looks_like_version;

/// `torch/version.py`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TorchVersionPy {
    /// `__version__`, e.g. `2.11.0+cu130`.
    pub version: String,
    /// The CUDA version torch was built with (`None` for CPU and ROCm builds).
    pub cuda: Option<String>,
    /// The HIP version of ROCm builds.
    pub hip: Option<String>,
    /// `rocm` (newer torch builds for ROCm).
    pub rocm: Option<String>,
    pub git_version: Option<String>,
}

/// Parses `torch/version.py`; `None` without a `__version__` string.
pub fn torch_version_py(text: &str) -> Option<TorchVersionPy> {
    const NAMES: &[&str] = &["__version__", "cuda", "hip", "rocm", "git_version"];
    let mut out = TorchVersionPy::default();
    let mut version = None;
    for (name, value) in assignments(text, NAMES) {
        let slot = match name {
            "__version__" => &mut version,
            "cuda" => &mut out.cuda,
            "hip" => &mut out.hip,
            "rocm" => &mut out.rocm,
            "git_version" => &mut out.git_version,
            _ => continue,
        };
        *slot = value.into_string();
    }
    out.version = version.filter(|v| !v.trim().is_empty())?;
    Some(out)
}

/// `jax_plugins/xla_cuda13/version.py`, `jaxlib/version.py`, `jax/version.py`: the release
/// version (`_release_version`, set in built wheels), else `__version__` if it is a literal, else
/// the base `_version = "0.11.2"`.
pub fn jax_plugin_version_py(text: &str) -> Option<String> {
    const NAMES: &[&str] = &["_release_version", "__version__", "_version"];
    let mut release = None;
    let mut dunder = None;
    let mut base = None;
    for (name, value) in assignments(text, NAMES) {
        let slot = match name {
            "_release_version" => &mut release,
            "__version__" => &mut dunder,
            "_version" => &mut base,
            _ => continue,
        };
        *slot = value.into_string().filter(|v| looks_like_version(v));
    }
    release.or(dunder).or(base)
}

/// Top-level `name = literal` and `name: annotation = literal` statements, one per line, for
/// the names in `wanted` (other lines are not tokenised).
fn assignments<'a>(
    text: &'a str,
    wanted: &'static [&'static str],
) -> impl Iterator<Item = (&'a str, Literal)> {
    text.lines().filter_map(move |line| {
        let name_end = line
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(line.len());
        let (name, rest) = line.split_at_checked(name_end)?;
        if !wanted.contains(&name) {
            return None;
        }
        let rest = rest.trim_start();
        let value = match rest.strip_prefix(':') {
            Some(annotated) => annotated.split_once('=')?.1,
            None => rest.strip_prefix('=')?,
        };
        if value.starts_with('=') {
            return None; // a comparison, not an assignment
        }
        Some((name, Tokens::new(value).literal()?))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{garbage, huge, section};

    const META: &str = include_str!("../../../tests/data/h200/meta.txt");

    #[test]
    fn h200_torch_version_py() {
        let text = section(META, "== torch/version.py", "== ");
        assert_eq!(
            torch_version_py(&text),
            Some(TorchVersionPy {
                version: "2.11.0+cu130".into(),
                cuda: Some("13.0".into()),
                hip: None,
                rocm: None,
                git_version: Some("70d99e998b4955e0049d13a98d77ae1b14db1f45".into()),
            })
        );
    }

    #[test]
    fn torch_version_py_other_builds() {
        let rocm = "__version__ = '2.5.1+rocm6.2'\ndebug = False\ncuda = None\n\
                    git_version = \"a8d6afb511a69687bbb2b7e88a3cf67917e1697e\"\n\
                    hip = '6.2.41133-dd7f95766'\n";
        let v = torch_version_py(rocm).unwrap();
        assert_eq!(v.version, "2.5.1+rocm6.2");
        assert_eq!(v.cuda, None);
        assert_eq!(v.hip.as_deref(), Some("6.2.41133-dd7f95766"));

        let old = "__version__ = '1.7.1+cu110'\ndebug = False\ncuda = '11.0'\n\
                   git_version = '57bffc3a8e4fee0cce31e1ff1f662ccf7b16db57'\n";
        let v = torch_version_py(old).unwrap();
        assert_eq!(v.cuda.as_deref(), Some("11.0"));
        assert_eq!(v.hip, None);
    }

    #[test]
    fn jax_version_files() {
        let jaxlib = section(META, "== jaxlib/version.py", "== ");
        assert_eq!(jax_plugin_version_py(&jaxlib).as_deref(), Some("0.11.2"));

        let plugin = "from __future__ import annotations\n\nimport datetime\nimport os\n\
                      import pathlib\nimport subprocess\n\n\
                      _version: str = \"0.4.35\"\n\
                      # The following line is overwritten by build scripts in distributions &\n\
                      # releases. Do not modify this manually, or jax/jaxlib build will not work.\n\
                      _release_version: str | None = '0.4.35'\n\
                      _git_hash: str | None = None\n\
                      __version__ = _get_version_string()\n";
        assert_eq!(jax_plugin_version_py(plugin).as_deref(), Some("0.4.35"));
        let dev = "_version: str = \"0.5.0\"\n_release_version: str | None = None\n";
        assert_eq!(jax_plugin_version_py(dev).as_deref(), Some("0.5.0"));
        let legacy = "__version__ = \"0.1.75\"\n";
        assert_eq!(jax_plugin_version_py(legacy).as_deref(), Some("0.1.75"));
    }

    #[test]
    fn garbage_truncated_and_huge() {
        let g = garbage();
        assert_eq!(torch_version_py(""), None);
        assert_eq!(torch_version_py(&g), None);
        assert_eq!(
            torch_version_py("__version__ = '2.1"),
            Some(TorchVersionPy {
                version: "2.1".into(),
                ..TorchVersionPy::default()
            })
        );
        assert_eq!(torch_version_py("__version__ = "), None);
        assert_eq!(torch_version_py("__version__ = get()"), None);
        assert_eq!(jax_plugin_version_py(&g), None);
        assert_eq!(jax_plugin_version_py("_version = \u{1b}[31m"), None);

        let big_py = huge("x = 'y'\n");
        assert_eq!(torch_version_py(&big_py), None);
        assert_eq!(jax_plugin_version_py(&big_py), None);
    }
}
