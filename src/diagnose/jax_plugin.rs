//! JAX's CUDA plugin wheels against jaxlib's exact release. Finding:
//! `jax-plugin-version-mismatch`.
//!
//! Since jaxlib 0.4.2x the CUDA build ships as two wheels released under jaxlib's version:
//! `jax-cudaNN-plugin` (the GPU kernels jaxlib registers) and `jax-cudaNN-pjrt` (the PJRT plugin
//! XLA runs on), the first pinning the second at its own version. "We only support exact matches
//! between the plugin and jaxlib version, and bad things can happen if we try and load
//! mismatched versions" (jax-ml/jax commit c7ed1bd3a8, 2025-02). From jaxlib 0.5.3 jaxlib
//! refuses a plugin of another release with a RuntimeWarning and runs without its kernels
//! ("No FFI handler registered for cusolver_potrf_ffi", ma-gilles/recovar#64); before, nothing
//! checked and the plugin failed to start ("Mismatched PJRT plugin PJRT API version",
//! jax-ml/jax#22416) or crashed the process (jax-ml/jax#24901). pip lets this happen: the
//! `jax[cuda12]` extra allows a plugin anywhere from jaxlib's release to jax's, and a later
//! `pip install` that moves jaxlib (or the plugin) alone breaks the pair. What each jaxlib
//! release does is frameworks.toml's `jax_plugin_check`, read from jax's tags by
//! `scripts/gen-jax-plugin-check.py`.

use super::FindingBuilder;
use super::ids;
use crate::framework::FrameworkName;
use crate::manifest::JaxPluginCheck;
use crate::manifest::Manifests;
use crate::report::{
    Component, Finding, Framework, PythonEnv, Report, Severity, framework_subject,
};

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    report
        .python_envs
        .iter()
        .flat_map(|env| {
            env.frameworks
                .iter()
                .filter(|f| f.name == FrameworkName::Jax)
                .filter_map(move |fw| mismatch(env, fw, manifests))
        })
        .collect()
}

/// The numeric release prefix jaxlib compares (`check_plugin_version`'s `[0-9]+(?:\.[0-9]+)*`
/// matched at the start): `0.9.0.1` → [0, 9, 0, 1], `0.5.3rc1` and `0.4.20+cuda12` → their
/// numbers before the first other character.
fn numeric_release(text: &str) -> Option<Vec<u64>> {
    let mut parts = Vec::new();
    for piece in text.trim().split('.') {
        let digits: String = piece.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            break;
        }
        parts.push(digits.parse().ok()?);
        if digits.len() != piece.len() {
            break;
        }
    }
    (!parts.is_empty()).then_some(parts)
}

fn dotted(parts: &[u64]) -> String {
    parts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// The Python package jaxlib imports for a plugin wheel (`jax-cuda12-plugin` →
/// `jax_cuda12_plugin`), as its warning names it.
fn module_name(dist: &str) -> String {
    dist.replace('-', "_")
}

/// Whether a component is one of JAX's CUDA plugin wheels (plugin or PJRT). The ROCm plugins
/// are AMD's builds, which jax's `rocm` extra accepts at any `{jax}.*` version, so their pairing
/// with jaxlib is not judged here.
fn is_plugin(c: &Component) -> bool {
    c.name.starts_with("jax-cuda") && (c.name.ends_with("-plugin") || c.name.ends_with("-pjrt"))
}

fn mismatch(env: &PythonEnv, fw: &Framework, manifests: &Manifests) -> Option<Finding> {
    let jaxlib = fw.components.iter().find(|c| c.name == "jaxlib")?;
    let lib = numeric_release(&jaxlib.version)?;
    let off: Vec<(&Component, Vec<u64>)> = fw
        .components
        .iter()
        .filter(|c| is_plugin(c))
        .filter_map(|c| Some((c, numeric_release(&c.version)?)))
        .filter(|(_, v)| *v != lib)
        .collect();
    if off.is_empty() {
        return None;
    }
    let lib_text = dotted(&lib);
    let row = manifests.frameworks.jax_plugin_check(&lib_text);
    let newer = off.iter().all(|(_, v)| *v > lib);
    let older = off.iter().all(|(_, v)| *v < lib);
    let names: Vec<String> = off
        .iter()
        .map(|(c, _)| format!("{} {}", c.name, c.version))
        .collect();
    let relation = if newer {
        "newer than"
    } else if older {
        "older than"
    } else {
        "of another release than"
    };
    let title = format!(
        "{} {} {relation} jaxlib {}: JAX does not run its CUDA plugin",
        names.join(", "),
        if off.len() == 1 { "is" } else { "are" },
        jaxlib.version
    );
    let mut f = FindingBuilder::new(&ids::JAX_PLUGIN_VERSION_MISMATCH, Severity::Error, title)
        .detail(detail(&off, &lib_text, row))
        .evidence(format!("jaxlib {} in {}", jaxlib.version, env.path))
        .subject(framework_subject(&env.path, FrameworkName::Jax.as_str()));
    for (c, _) in &off {
        f = f.evidence(format!(
            "{} {} (jaxlib's release is {lib_text})",
            c.name, c.version
        ));
    }
    if let Some(row) = row {
        f = f.evidence(format!(
            "jaxlib {lib_text}: {} ({})",
            if row.compare.as_deref() == Some("release") {
                "refuses a plugin whose release is not its own"
            } else {
                "does not check the plugin's version"
            },
            row.source
        ));
    }
    // The wheels to put back at jaxlib's release: every plugin wheel the environment has, so
    // the plugin and its PJRT wheel stay a pair.
    let mut wheels: Vec<String> = fw
        .components
        .iter()
        .filter(|c| is_plugin(c))
        .map(|c| format!("\"{}=={lib_text}\"", c.name))
        .collect();
    wheels.dedup();
    let extra = cuda_major(&off);
    Some(
        f.fix(format!(
            "Install the plugin wheels of jaxlib's release, keeping jaxlib {lib_text}: `pip install {}`; or move jax, jaxlib and the plugins together in one step (`pip install -U \"jax[{extra}]\"`), and pin all of them where a lock file or another package pins one.",
            wheels.join(" ")
        ))
        .build(),
    )
}

/// The CUDA major of the plugin wheels (`jax-cuda13-pjrt` → "cuda13").
fn cuda_major(off: &[(&Component, Vec<u64>)]) -> String {
    off.iter()
        .find_map(|(c, _)| {
            let rest = c.name.strip_prefix("jax-cuda")?;
            let major: String = rest.chars().take_while(char::is_ascii_digit).collect();
            (!major.is_empty()).then(|| format!("cuda{major}"))
        })
        .unwrap_or_else(|| "cuda12".to_string())
}

/// What this jaxlib release does with the plugin, from its tag.
fn detail(off: &[(&Component, Vec<u64>)], lib: &str, row: Option<&JaxPluginCheck>) -> String {
    let plugin = off.iter().find(|(c, _)| c.name.ends_with("-plugin"));
    let pjrt_only = plugin.is_none();
    match (row, plugin) {
        (Some(row), Some((c, _))) if row.compare.as_deref() == Some("release") => {
            let warning = row.message.as_deref().map_or_else(String::new, |m| {
                format!(
                    ": \"{}\"",
                    m.replace("{plugin_name}", &module_name(&c.name))
                        .replace("{plugin_version}", &c.version)
                        .replace("{jaxlib_version}", lib)
                )
            });
            format!(
                "jaxlib {lib} only uses a CUDA plugin of its own release and refuses this one with a RuntimeWarning{warning} JAX then runs without the plugin's GPU kernels: linear algebra, FFT, random numbers and custom calls fail (\"No FFI handler registered for cusolver_potrf_ffi\") or JAX falls back to the CPU, and a PJRT plugin of another release can crash the process."
            )
        }
        (Some(row), _) if pjrt_only && row.pjrt_pin.as_deref() == Some("==") => format!(
            "The PJRT wheel is not of jaxlib {lib}'s release, although the plugin requires it at exactly its own version (pip's metadata is broken here, usually by a later install of one wheel alone). jaxlib does not check the PJRT plugin: one of another release fails to start (\"Unable to initialize backend 'cuda': INVALID_ARGUMENT: Mismatched PJRT plugin PJRT API version\") or crashes the process at the first array (\"Segmentation fault\")."
        ),
        _ => format!(
            "jaxlib {lib} does not check the plugin's version and loads a plugin of another release as it is: it fails to start (\"Unable to initialize backend 'cuda': INVALID_ARGUMENT: Mismatched PJRT plugin PJRT API version\", jax-ml/jax#22416) or crashes the process at the first array (\"Segmentation fault\", jax-ml/jax#24901). JAX's maintainers support only a plugin of exactly jaxlib's release."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::test_support::jax_env;

    fn env(jax: &str, jaxlib: &str, plugins: &[(&str, &str)]) -> PythonEnv {
        jax_env("3.12.3", jax, jaxlib, plugins)
    }

    fn run(e: PythonEnv) -> Vec<Finding> {
        let r = Report {
            python_envs: vec![e],
            ..Report::default()
        };
        findings(&r, crate::manifest::embedded())
    }

    #[test]
    fn numeric_release_mirrors_jaxlibs_regex() {
        assert_eq!(numeric_release("0.9.0.1"), Some(vec![0, 9, 0, 1]));
        assert_eq!(numeric_release("0.5.3rc1"), Some(vec![0, 5, 3]));
        assert_eq!(
            numeric_release("0.4.20+cuda12.cudnn89"),
            Some(vec![0, 4, 20])
        );
        assert_eq!(numeric_release("dev"), None);
    }

    /// ma-gilles/recovar#64 (2026-03): jax and jaxlib 0.9.0.1 with jax-cuda12-plugin 0.9.2.
    #[test]
    fn a_newer_plugin_is_refused_by_jaxlib_with_its_own_words() {
        let f = run(env(
            "0.9.0.1",
            "0.9.0.1",
            &[("jax-cuda12-plugin", "0.9.2"), ("jax-cuda12-pjrt", "0.9.2")],
        ));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].id, "jax-plugin-version-mismatch");
        assert_eq!(f[0].severity, Severity::Error);
        assert!(
            f[0].title.contains("newer than jaxlib 0.9.0.1"),
            "{}",
            f[0].title
        );
        assert!(
            f[0].detail.contains(
                "JAX plugin jax_cuda12_plugin version 0.9.2 is installed, but it is not compatible with the installed jaxlib version 0.9.0.1, so it will not be used."
            ),
            "{}",
            f[0].detail
        );
        let fix = f[0].fix.as_deref().unwrap_or_default();
        assert!(
            fix.contains(
                "`pip install \"jax-cuda12-plugin==0.9.0.1\" \"jax-cuda12-pjrt==0.9.0.1\"`"
            ),
            "{fix}"
        );
    }

    /// jax-ml/jax#24901: plugins 0.4.35 with an older jax/jaxlib (0.4.31): no check then.
    #[test]
    fn before_jaxlib_053_the_detail_names_the_crash() {
        let f = run(env(
            "0.4.31",
            "0.4.31",
            &[
                ("jax-cuda12-plugin", "0.4.35"),
                ("jax-cuda12-pjrt", "0.4.35"),
            ],
        ));
        assert_eq!(f.len(), 1);
        assert!(f[0].detail.contains("does not check"), "{}", f[0].detail);
        assert!(
            f[0].detail.contains("Segmentation fault"),
            "{}",
            f[0].detail
        );
    }

    #[test]
    fn an_older_plugin_or_a_lone_pjrt_is_a_mismatch_too() {
        let f = run(env(
            "0.6.2",
            "0.6.2",
            &[("jax-cuda12-plugin", "0.6.0"), ("jax-cuda12-pjrt", "0.6.0")],
        ));
        assert!(
            f[0].title.contains("older than jaxlib 0.6.2"),
            "{}",
            f[0].title
        );
        let f = run(env(
            "0.7.2",
            "0.7.2",
            &[("jax-cuda13-plugin", "0.7.2"), ("jax-cuda13-pjrt", "0.7.1")],
        ));
        assert_eq!(f.len(), 1);
        assert!(
            f[0].title.starts_with("jax-cuda13-pjrt 0.7.1 is"),
            "{}",
            f[0].title
        );
        assert!(
            f[0].detail.contains("exactly its own version"),
            "{}",
            f[0].detail
        );
        assert!(
            f[0].fix
                .as_deref()
                .unwrap_or_default()
                .contains("jax[cuda13]")
        );
    }

    #[test]
    fn plugins_of_jaxlibs_release_are_clean() {
        assert!(
            run(env(
                "0.11.0",
                "0.11.0",
                &[
                    ("jax-cuda13-plugin", "0.11.0"),
                    ("jax-cuda13-pjrt", "0.11.0")
                ]
            ))
            .is_empty()
        );
        // jax itself may be newer than jaxlib (down to its minimum): not this finding's business.
        assert!(
            run(env(
                "0.9.2",
                "0.9.1",
                &[("jax-cuda12-plugin", "0.9.1"), ("jax-cuda12-pjrt", "0.9.1")]
            ))
            .is_empty()
        );
        // No plugin at all (a CPU jaxlib, or an old `+cuda` jaxlib): nothing to compare.
        assert!(run(env("0.4.20", "0.4.20+cuda12.cudnn89", &[])).is_empty());
    }
}
