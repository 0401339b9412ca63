//! `library-symbol-missing`: a loaded object needs a symbol that the copy of a CUDA, cuDNN or
//! NCCL library the loader resolves for it does not define (`report.libraries.symbol_gaps`,
//! read from both files' ELF symbol tables by `probe::linkmap`). ld.so refuses the pair when
//! it loads: "libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version
//! libnvJitLink.so.12" (pytorch/pytorch#111469), "libcublas.so.11: undefined symbol:
//! cublasLtGetStatusString, version libcublasLt.so.11", "libtorch_cuda.so: undefined symbol:
//! ncclCommRegister" (pytorch/pytorch#119932).
//!
//! One finding per environment and provider file: one cause (that copy winning the search), one
//! fix. Why it wins comes from the resolution's load of it (`via`: LD_LIBRARY_PATH, the ld.so
//! cache or configuration, an RPATH, or the framework's own search); the fix takes it off the
//! path for the run, or installs the wheel version the framework pins.

use std::path::Path;

use super::FindingBuilder;
use super::ids;
use crate::manifest::Manifests;
use crate::parse::libfamily as family;
use crate::report::{
    Finding, LibraryFamily, LibraryLoad, LosingCopy, OwnerKind, PythonEnv, Report, Severity,
    SymbolGap, framework_subject,
};

pub(super) fn findings(report: &Report, _: &Manifests) -> Vec<Finding> {
    let mut groups: Vec<(&str, &str, Vec<&SymbolGap>)> = Vec::new();
    for gap in &report.libraries.symbol_gaps {
        match groups
            .iter_mut()
            .find(|(e, p, _)| *e == gap.env && *p == gap.provider)
        {
            Some((_, _, gaps)) => gaps.push(gap),
            None => groups.push((&gap.env, &gap.provider, vec![gap])),
        }
    }
    groups
        .into_iter()
        .filter_map(|(env, _, gaps)| {
            let env = report.python_envs.iter().find(|e| e.path == env)?;
            Some(finding(report, env, &gaps))
        })
        .collect()
}

/// Whether a gap names this load's copy in this environment: the shadowing rule leaves such a
/// load to this one, which has the symbol to show.
pub(super) fn covers(report: &Report, env: &str, load: &LibraryLoad) -> bool {
    report
        .libraries
        .symbol_gaps
        .iter()
        .any(|g| g.env == env && Some(g.provider.as_str()) == load.path.as_deref())
}

fn file_name(path: &str) -> &str {
    Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(path)
}

/// The resolution's load of the provider (for why it wins and which copies lose).
fn load_of<'r>(report: &'r Report, gap: &SymbolGap) -> Option<&'r LibraryLoad> {
    report
        .libraries
        .loads
        .iter()
        .filter(|fl| fl.env == gap.env && fl.framework == gap.framework)
        .flat_map(|fl| &fl.libraries)
        .find(|l| l.path.as_deref() == Some(gap.provider.as_str()))
}

/// The copy the needer was shipped with: beside it, else the environment's own wheel.
fn shipped<'r>(env: &PythonEnv, gap: &SymbolGap, load: &'r LibraryLoad) -> Option<&'r LosingCopy> {
    let beside = Path::new(&gap.needer).parent();
    load.others
        .iter()
        .find(|o| Path::new(&o.path).parent() == beside)
        .or_else(|| {
            load.others.iter().find(|o| {
                o.owner.kind == OwnerKind::Pip
                    && env
                        .site_packages
                        .iter()
                        .any(|s| Path::new(&o.path).starts_with(s))
            })
        })
}

/// The words ld.so prints for the first gap.
fn loader_words(gap: &SymbolGap) -> String {
    match &gap.version {
        Some(v) if !gap.version_defined => {
            format!("version `{v}' not found (required by {})", gap.needer)
        }
        Some(v) => format!(
            "{}: undefined symbol: {}, version {v}",
            gap.needer, gap.symbol
        ),
        None => format!("{}: undefined symbol: {}", gap.needer, gap.symbol),
    }
}

fn finding(report: &Report, env: &PythonEnv, gaps: &[&SymbolGap]) -> Finding {
    let first = gaps[0];
    let load = load_of(report, first);
    let via = load.and_then(|l| l.via.as_deref()).unwrap_or("the search");
    let title = if gaps.len() == 1 {
        format!(
            "{} needs {} from {}, which the copy loaded from {} ({}) does not define",
            file_name(&first.needer),
            first.symbol,
            first.soname,
            Path::new(&first.provider)
                .parent()
                .map_or_else(String::new, |d| d.display().to_string()),
            via
        )
    } else {
        format!(
            "{} libraries in {} need symbols that {} ({}, through {}) does not define",
            gaps.len(),
            env.path,
            first.provider,
            first.soname,
            via
        )
    };
    let mut frameworks: Vec<&str> = gaps.iter().map(|g| g.framework.as_str()).collect();
    frameworks.sort_unstable();
    frameworks.dedup();
    let mut f =
        FindingBuilder::new(&ids::LIBRARY_SYMBOL_MISSING, Severity::Error, title).detail(format!(
            "The loader binds each symbol a library needs to the copy of the providing library it \
             found first; this copy lacks what the needing library was linked against, so loading \
             {} fails with \"{}\". The two files come from different releases.",
            frameworks.join(" and "),
            loader_words(first)
        ));
    for fw in &frameworks {
        f = f.subject(framework_subject(&env.path, fw));
    }
    let mut shipped_copy: Option<&LosingCopy> = None;
    for gap in gaps {
        f = f.evidence(format!(
            "{} needs {}{} from {}: {} of the {} symbols it takes from there are missing in {}",
            gap.needer,
            gap.symbol,
            gap.version
                .as_deref()
                .map_or_else(String::new, |v| format!(" (version {v})")),
            gap.soname,
            gap.missing,
            gap.compared,
            gap.provider
        ));
        if let Some(l) = load_of(report, gap)
            && shipped_copy.is_none()
        {
            shipped_copy = shipped(env, gap, l);
        }
    }
    if let Some(l) = load {
        let owner = l
            .owner
            .as_ref()
            .and_then(|o| o.package.clone())
            .map_or_else(String::new, |p| format!(", {p}"));
        f = f.evidence(format!(
            "the loader maps {} ({}{owner}) for {}, found through {via}",
            first.provider,
            l.version.as_deref().unwrap_or("version unknown"),
            first.soname
        ));
        if !l.searched.is_empty() {
            f = f.evidence(format!("searched: {}", l.searched.join(", ")));
        }
    }
    if let Some(s) = shipped_copy {
        f = f.evidence(format!(
            "the copy shipped with it: {} ({}): {}",
            s.path,
            s.version.as_deref().unwrap_or("version unknown"),
            s.why
        ));
    }
    if gaps
        .iter()
        .any(|g| family::of(&g.soname) == Some(LibraryFamily::Cudnn))
    {
        f = f.explains(&ids::CUDNN_VERSION_MISMATCH);
    }
    f.fix(fix(report, env, first, via, shipped_copy)).build()
}

/// Take the winning copy off the path for the run (LD_LIBRARY_PATH), or put the shipped copy's
/// folder first (a system folder of the ld.so cache); when the winner is a wheel of the
/// environment, install the version the framework pins.
fn fix(
    report: &Report,
    env: &PythonEnv,
    gap: &SymbolGap,
    via: &str,
    shipped: Option<&LosingCopy>,
) -> String {
    let provider_dir = Path::new(&gap.provider)
        .parent()
        .map_or_else(String::new, |d| d.display().to_string());
    let shipped_dir = shipped
        .and_then(|s| Path::new(&s.path).parent())
        .map(|d| d.display().to_string());
    let python = env
        .interpreter
        .clone()
        .unwrap_or_else(|| format!("{}/bin/python", env.path));
    let align = align(env, gap, shipped).map(|(req, pinned)| {
        if pinned {
            format!(
                "`{python} -m pip install '{req}'` (the version {} pins)",
                gap.framework
            )
        } else {
            format!("`{python} -m pip install '{req}'` (the copy it was built with)")
        }
    });
    // A copy outside the environment (a toolkit, the system) is not pip's to change.
    let provider_in_env = env
        .site_packages
        .iter()
        .any(|s| Path::new(&gap.provider).starts_with(s));
    match via {
        "LD_LIBRARY_PATH" => {
            let rest: Vec<String> = report
                .environment
                .iter()
                .find(|v| v.name == "LD_LIBRARY_PATH")
                .map(|v| {
                    v.value
                        .split(':')
                        .filter(|d| {
                            !d.is_empty()
                                && d.trim_end_matches('/') != provider_dir.trim_end_matches('/')
                        })
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let run = if rest.is_empty() {
                "`env -u LD_LIBRARY_PATH python ...`".to_string()
            } else {
                format!("`LD_LIBRARY_PATH={} python ...`", rest.join(":"))
            };
            format!(
                "Run without {provider_dir} on LD_LIBRARY_PATH: {run}; then drop it from where LD_LIBRARY_PATH is set (~/.bashrc, module files, conda activate scripts).{}",
                align
                    .filter(|_| provider_in_env)
                    .map_or_else(String::new, |a| format!(
                        " To keep it there, make the copies agree instead: {a}."
                    ))
            )
        }
        "RUNPATH" | "preload" => match align {
            Some(a) => format!("Install the matching copy into {}: {a}.", env.path),
            None => format!(
                "Reinstall {} with its own CUDA wheels so the copies agree: `{python} -m pip install --force-reinstall {}`.",
                gap.framework, gap.framework
            ),
        },
        _ => {
            let first = shipped_dir.map_or_else(
                || "the folder of the copy it was built with".to_string(),
                |d| {
                    format!(
                        "`LD_LIBRARY_PATH={d}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}} python ...`"
                    )
                },
            );
            format!(
                "{provider_dir} wins through {via}: put the matching copy first for the run, {first}, or update the package that installed {}{}.",
                gap.provider,
                align.map_or_else(String::new, |a| format!("; or {a}"))
            )
        }
    }
}

/// The pip requirement that aligns the provider with the needer, and whether the framework
/// pins it: the framework's own pin of the wheel that ships the copy it was built with, else
/// that copy's wheel at its version.
fn align(env: &PythonEnv, gap: &SymbolGap, shipped: Option<&LosingCopy>) -> Option<(String, bool)> {
    let fw = env.frameworks.iter().find(|f| f.name == gap.framework);
    let package = shipped
        .filter(|s| s.owner.kind == OwnerKind::Pip)
        .and_then(|s| s.owner.package.clone())
        .or_else(|| {
            // The provider is itself the environment's wheel (another release than pinned).
            env.nvidia_wheels
                .iter()
                .find(|w| {
                    w.lib_dir
                        .as_deref()
                        .is_some_and(|d| Path::new(&gap.provider).starts_with(d))
                })
                .map(|w| w.name.clone())
        })?;
    let norm = |s: &str| s.to_ascii_lowercase().replace('_', "-");
    if let Some(pin) = fw.and_then(|f| {
        f.pins.iter().find(|p| {
            let name = p
                .split(['<', '>', '=', '!', '~', ' ', ';'])
                .next()
                .unwrap_or("");
            norm(name) == norm(&package)
        })
    }) {
        let req: String = pin
            .split(';')
            .next()
            .unwrap_or(pin)
            .chars()
            .filter(|c| !matches!(c, ' ' | '(' | ')'))
            .collect();
        return Some((req, true));
    }
    let version = shipped.and_then(|s| s.version.clone().or_else(|| s.owner.version.clone()))?;
    Some((format!("{package}=={version}"), false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{EnvVar, Framework, FrameworkLoads, LibraryOwner};

    fn report(via: &str) -> Report {
        let site = "/venv/lib/python3.10/site-packages";
        let mut r = Report {
            python_envs: vec![PythonEnv {
                path: "/venv".into(),
                interpreter: Some("/venv/bin/python".into()),
                site_packages: vec![site.into()],
                frameworks: vec![Framework {
                    name: "torch".into(),
                    pins: vec![
                        "nvidia-nvjitlink-cu12==12.4.127; platform_system == \"Linux\"".into(),
                    ],
                    ..Framework::default()
                }],
                ..PythonEnv::default()
            }],
            environment: vec![EnvVar {
                name: "LD_LIBRARY_PATH".into(),
                value: "/usr/local/cuda-12.1/lib64:/opt/other".into(),
            }],
            ..Report::default()
        };
        let needer = format!("{site}/nvidia/cusparse/lib/libcusparse.so.12");
        r.libraries.loads = vec![FrameworkLoads {
            env: "/venv".into(),
            framework: "torch".into(),
            basis: "elf".into(),
            libraries: vec![LibraryLoad {
                family: "nvjitlink".into(),
                soname: "libnvJitLink.so.12".into(),
                needed_by: needer.clone(),
                by: "needed".into(),
                path: Some("/usr/local/cuda-12.1/lib64/libnvJitLink.so.12".into()),
                via: Some(via.into()),
                version: Some("12.1.105".into()),
                others: vec![LosingCopy {
                    path: format!("{site}/nvidia/nvjitlink/lib/libnvJitLink.so.12"),
                    version: Some("12.4.127".into()),
                    owner: LibraryOwner {
                        kind: OwnerKind::Pip,
                        package: Some("nvidia-nvjitlink-cu12".into()),
                        ..LibraryOwner::default()
                    },
                    why: "found later in the search (RUNPATH, after LD_LIBRARY_PATH)".into(),
                }],
                ..LibraryLoad::default()
            }],
        }];
        r.libraries.symbol_gaps = vec![SymbolGap {
            env: "/venv".into(),
            framework: "torch".into(),
            needer,
            soname: "libnvJitLink.so.12".into(),
            provider: "/usr/local/cuda-12.1/lib64/libnvJitLink.so.12".into(),
            symbol: "__nvJitLinkAddData_12_4".into(),
            version: Some("libnvJitLink.so.12".into()),
            version_defined: true,
            missing: 3,
            compared: 9,
        }];
        r
    }

    #[test]
    fn a_gap_is_an_error_naming_the_symbol_the_winner_and_the_copy_it_shipped_with() {
        let r = report("LD_LIBRARY_PATH");
        let f = &findings(&r, crate::manifest::embedded())[0];
        assert_eq!(f.id, "library-symbol-missing");
        assert_eq!(f.severity, Severity::Error);
        assert!(f.title.contains("__nvJitLinkAddData_12_4"), "{}", f.title);
        let evidence = f.evidence.join("\n");
        assert!(evidence.contains("3 of the 9"), "{evidence}");
        assert!(
            evidence.contains("found through LD_LIBRARY_PATH"),
            "{evidence}"
        );
        assert!(
            evidence.contains("nvidia/nvjitlink/lib/libnvJitLink.so.12 (12.4.127)"),
            "{evidence}"
        );
        let fix = f.fix.as_deref().unwrap();
        assert!(
            fix.contains("`LD_LIBRARY_PATH=/opt/other python ...`"),
            "{fix}"
        );
        // The winner is a toolkit's: pip cannot change it, so no pip line.
        assert!(!fix.contains("pip install"), "{fix}");
        assert!(
            f.detail
                .contains("undefined symbol: __nvJitLinkAddData_12_4, version libnvJitLink.so.12")
        );
    }

    #[test]
    fn a_wheel_of_another_release_is_fixed_by_the_pinned_version() {
        let r = report("RUNPATH");
        let f = &findings(&r, crate::manifest::embedded())[0];
        let fix = f.fix.as_deref().unwrap();
        assert!(fix.starts_with("Install the matching copy"), "{fix}");
        assert!(
            fix.contains("/venv/bin/python -m pip install 'nvidia-nvjitlink-cu12==12.4.127'"),
            "{fix}"
        );
    }

    #[test]
    fn no_gap_no_finding_and_the_shadowing_rule_keeps_what_is_not_covered() {
        let mut r = report("LD_LIBRARY_PATH");
        let load = r.libraries.loads[0].libraries[0].clone();
        assert!(covers(&r, "/venv", &load));
        assert!(!covers(&r, "/other", &load));
        r.libraries.symbol_gaps.clear();
        assert!(findings(&r, crate::manifest::embedded()).is_empty());
        assert!(!covers(&r, "/venv", &load));
    }
}
