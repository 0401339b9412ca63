//! The rows each screen lists, built from the report in one place so that the update function
//! (which needs to know how many rows there are to move the selection) and the views (which
//! draw them) can never disagree. Every machine string passes [`clean`] here, once, before any
//! view sees it: a file name with an escape sequence must not drive the user's terminal.

use crate::report::{Finding, Framework, Library, Report};
use crate::sanitize::clean;

use super::state::{Derived, State, Tab};

/// Case-insensitive match of a filter against a row's words; an empty filter keeps everything.
#[must_use]
pub fn matches(filter: &str, words: &[&str]) -> bool {
    let filter = filter.trim().to_lowercase();
    filter.is_empty() || words.iter().any(|w| w.to_lowercase().contains(&filter))
}

/// Optional text, or a word that says it is not known (absent is not zero).
#[must_use]
pub fn or_unknown(value: Option<&str>) -> String {
    value.map_or_else(|| "unknown".to_string(), clean)
}

/// Where a library copy stands in the dynamic loader's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadState {
    /// The copy the loader picks for its name.
    Loads,
    /// On the loader path but behind another copy of the same name.
    Shadowed,
    /// Not on the loader path: only a program that knows its folder (a wheel's RUNPATH) finds it.
    OffPath,
    /// A toolkit: not loaded by name, listed for completeness.
    Toolkit,
}

impl LoadState {
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            LoadState::Loads => "loads",
            LoadState::Shadowed => "shadowed",
            LoadState::OffPath => "by RUNPATH",
            LoadState::Toolkit => "installed",
        }
    }
}

/// One row of the Drivers & CUDA screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibRow {
    /// "libcuda", "toolkit", "cuDNN", ...
    pub family: String,
    /// Position in loader order, for copies on the loader path.
    pub rank: Option<u32>,
    pub version: String,
    pub state: LoadState,
    /// Why the loader looks there, or how a toolkit was found.
    pub origin: String,
    pub path: String,
    /// Extra facts for the detail pane, one per line.
    pub details: Vec<String>,
}

/// Libraries and toolkits, each family in the loader's order: the copy that loads first, then
/// the copies it shadows, then copies only found through a RUNPATH.
#[must_use]
pub fn lib_rows(report: &Report) -> Vec<LibRow> {
    let mut rows = lib_rows_scanned(report);
    rows.extend(load_rows(report));
    rows
}

/// Per framework, the copy of each CUDA library its process would map (ld.so order).
fn load_rows(report: &Report) -> Vec<LibRow> {
    let mut rows = Vec::new();
    for fl in &report.libraries.loads {
        for l in &fl.libraries {
            let mut details = vec![
                format!(
                    "{} in {} needs {}",
                    clean(&fl.framework),
                    clean(&fl.env),
                    clean(&l.soname)
                ),
                format!("needed by: {}", clean(&l.needed_by)),
            ];
            if let Some(o) = &l.owner {
                details.push(format!(
                    "owner: {} {} {} (from {})",
                    clean(o.kind.as_str()),
                    or_unknown(o.package.as_deref()),
                    o.version.as_deref().map(clean).unwrap_or_default(),
                    clean(&o.source)
                ));
            }
            if l.path.is_none() {
                details.push(format!("searched: {}", clean(&l.searched.join(", "))));
            }
            for o in &l.others {
                details.push(format!(
                    "loses: {} {} ({})",
                    clean(&o.path),
                    or_unknown(o.version.as_deref()),
                    clean(&o.why)
                ));
            }
            rows.push(LibRow {
                family: crate::parse::libfamily::display(&l.family).to_string(),
                rank: None,
                version: match &l.path {
                    Some(_) => or_unknown(l.version.as_deref()),
                    None => "not found".to_string(),
                },
                state: if l.path.is_some() {
                    LoadState::Loads
                } else {
                    LoadState::OffPath
                },
                origin: format!("{} {}", clean(&fl.framework), or_unknown(l.via.as_deref())),
                path: l.path.as_deref().map_or_else(|| clean(&l.soname), clean),
                details,
            });
        }
    }
    rows
}

fn lib_rows_scanned(report: &Report) -> Vec<LibRow> {
    let mut rows = Vec::new();
    for name in ["libcuda", "libnvidia-ml"] {
        let mut libs: Vec<_> = report
            .driver_libraries
            .iter()
            .filter(|l| l.name == name)
            .collect();
        libs.sort_by_key(|l| l.rank);
        for lib in libs {
            let mut details = vec![format!("kind: {}", clean(lib.kind.as_str()))];
            if let Some(resolved) = &lib.resolved {
                details.push(format!("resolves to: {}", clean(resolved)));
            }
            rows.push(LibRow {
                family: name.to_string(),
                rank: Some(lib.rank),
                version: or_unknown(lib.version.as_deref()),
                state: if lib.rank == 0 {
                    LoadState::Loads
                } else {
                    LoadState::Shadowed
                },
                origin: clean(&lib.origin),
                path: clean(&lib.path),
                details,
            });
        }
    }
    for t in &report.toolkits {
        let mut details = vec![format!(
            "version from: {}",
            or_unknown(t.version_source.as_deref())
        )];
        if let Some(nvcc) = &t.nvcc {
            details.push(format!("nvcc: {}", clean(nvcc)));
        }
        rows.push(LibRow {
            family: "toolkit".to_string(),
            rank: None,
            version: or_unknown(t.version.as_deref()),
            state: LoadState::Toolkit,
            origin: clean(&t.found_via.join(", ")),
            path: clean(&t.path),
            details,
        });
    }
    let l = &report.libraries;
    let families: [(&str, &Vec<Library>); 5] = [
        ("cuDNN", &l.cudnn),
        ("NCCL", &l.nccl),
        ("cuBLAS", &l.cublas),
        ("cudart", &l.cudart),
        ("TensorRT", &l.tensorrt),
    ];
    for (family, libs) in families {
        let mut sorted: Vec<&Library> = libs.iter().collect();
        sorted.sort_by_key(|lib| (lib.loader_rank.is_none(), lib.loader_rank, lib.path.clone()));
        let mut seen_majors: Vec<String> = Vec::new();
        for lib in sorted {
            // Copies of different majors have different sonames (libcudnn.so.8, .so.9) and do
            // not shadow each other; copies of one major do.
            let major = lib
                .version
                .as_deref()
                .and_then(|v| v.split('.').next())
                .unwrap_or("?")
                .to_string();
            let state = if lib.loader_rank.is_none() || !lib.on_loader_path {
                LoadState::OffPath
            } else if seen_majors.contains(&major) {
                LoadState::Shadowed
            } else {
                seen_majors.push(major);
                LoadState::Loads
            };
            let mut details = vec![format!(
                "installed by: {}; version from: {}",
                clean(&lib.origin),
                or_unknown(lib.version_source.as_deref())
            )];
            if state == LoadState::OffPath {
                details.push(
                    "not on the loader path: only a program whose RUNPATH names its folder \
                     (the wheel's own framework) loads it"
                        .to_string(),
                );
            }
            rows.push(LibRow {
                family: family.to_string(),
                rank: lib.loader_rank,
                version: or_unknown(lib.version.as_deref()),
                state,
                origin: lib
                    .loader_origin
                    .as_deref()
                    .map_or_else(|| clean(&lib.origin), clean),
                path: clean(&lib.path),
                details,
            });
        }
    }
    rows
}

/// The rows of the Drivers & CUDA screen that pass its filter.
#[must_use]
pub fn visible_lib_rows(state: &State) -> Vec<LibRow> {
    let filter = &state.cursors[Tab::Drivers.index()].filter;
    state
        .report
        .as_ref()
        .map(|r| {
            lib_rows(r)
                .into_iter()
                .filter(|row| {
                    matches(
                        filter,
                        &[
                            &row.family,
                            &row.version,
                            &row.path,
                            &row.origin,
                            row.state.label(),
                        ],
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One row of the Frameworks screen: a framework build in an environment, or an environment
/// with none.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameworkRow<'a> {
    pub env: &'a str,
    pub env_kind: String,
    pub framework: Option<&'a Framework>,
    /// `check`'s verdict: can it use this machine's GPU.
    pub usable: Option<bool>,
    pub message: String,
}

/// Every framework in every environment, environments in report order.
#[must_use]
pub fn framework_rows<'a>(report: &'a Report, derived: &Derived) -> Vec<FrameworkRow<'a>> {
    let mut rows = Vec::new();
    for env in &report.python_envs {
        if env.frameworks.is_empty() {
            rows.push(FrameworkRow {
                env: &env.path,
                env_kind: env.kind_label(),
                framework: None,
                usable: None,
                message: "no GPU frameworks installed".to_string(),
            });
        }
        for fw in &env.frameworks {
            let verdict = derived.framework(&env.path, &fw.name);
            rows.push(FrameworkRow {
                env: &env.path,
                env_kind: env.kind_label(),
                framework: Some(fw),
                usable: verdict.map(|v| v.usable),
                message: verdict.map_or_else(String::new, |v| clean(&v.message)),
            });
        }
    }
    rows
}

/// The Frameworks rows that pass the screen's filter.
#[must_use]
pub fn visible_framework_rows(state: &State) -> Vec<FrameworkRow<'_>> {
    let filter = &state.cursors[Tab::Frameworks.index()].filter;
    state
        .report
        .as_ref()
        .map(|r| {
            framework_rows(r, &state.derived)
                .into_iter()
                .filter(|row| {
                    let name = row.framework.map_or("", |f| f.name.as_str());
                    let version = row
                        .framework
                        .and_then(|f| f.version.as_deref())
                        .unwrap_or("");
                    matches(filter, &[row.env, name, version, &row.message])
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The findings that pass the Diagnosis filter (id, title, severity, subjects).
#[must_use]
pub fn visible_findings(state: &State) -> Vec<&Finding> {
    let filter = &state.cursors[Tab::Diagnosis.index()].filter;
    state
        .report
        .as_ref()
        .map(|r| {
            r.findings
                .iter()
                .filter(|f| {
                    let subjects: Vec<String> =
                        f.subjects.iter().map(ToString::to_string).collect();
                    let mut words = vec![f.id.as_str(), f.title.as_str(), f.severity.as_str()];
                    words.extend(subjects.iter().map(String::as_str));
                    matches(filter, &words)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The GPUs that pass the GPUs screen filter (index, name, bus id, cc).
#[must_use]
pub fn visible_gpus(state: &State) -> Vec<usize> {
    let filter = &state.cursors[Tab::Gpus.index()].filter;
    state
        .report
        .as_ref()
        .map(|r| {
            r.gpus
                .iter()
                .enumerate()
                .filter(|(_, g)| {
                    let index = g.index.to_string();
                    matches(
                        filter,
                        &[
                            &index,
                            g.name.as_deref().unwrap_or(""),
                            g.pci_bus_id.as_deref().unwrap_or(""),
                            g.compute_capability.as_deref().unwrap_or(""),
                        ],
                    )
                })
                .map(|(i, _)| i)
                .collect()
        })
        .unwrap_or_default()
}

/// How many findings the Overview lists.
pub const OVERVIEW_FINDINGS: usize = 5;

/// How many rows the current screen's list has, after its filter.
#[must_use]
pub fn list_len(state: &State, tab: Tab) -> usize {
    match tab {
        Tab::Overview => state
            .report
            .as_ref()
            .map_or(0, |r| r.findings.len().min(OVERVIEW_FINDINGS)),
        Tab::Gpus => visible_gpus(state).len(),
        Tab::Drivers => visible_lib_rows(state).len(),
        Tab::Frameworks => visible_framework_rows(state).len(),
        Tab::Diagnosis => visible_findings(state).len(),
        Tab::Plan => super::state::PlanField::ALL.len(),
        Tab::Smoke => match &state.smoke {
            super::state::Smoke::Done(rows) => rows.len(),
            _ => 0,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{DriverLibrary, Libraries};

    fn lib(path: &str, version: &str, rank: Option<u32>) -> Library {
        Library {
            version: Some(version.to_string()),
            path: path.to_string(),
            origin: "system".to_string(),
            version_source: None,
            on_loader_path: rank.is_some(),
            loader_origin: rank.map(|_| "LD_LIBRARY_PATH".to_string()),
            loader_rank: rank,
        }
    }

    #[test]
    fn loader_order_marks_the_copy_that_loads_and_the_ones_it_shadows() {
        let report = Report {
            driver_libraries: vec![
                DriverLibrary {
                    name: "libcuda".into(),
                    path: "/b/libcuda.so.1".into(),
                    rank: 1,
                    ..DriverLibrary::default()
                },
                DriverLibrary {
                    name: "libcuda".into(),
                    path: "/a/libcuda.so.1".into(),
                    rank: 0,
                    ..DriverLibrary::default()
                },
            ],
            libraries: Libraries {
                cudnn: vec![
                    lib("/wheel/libcudnn.so.9", "9.19.0", None),
                    lib("/late/libcudnn.so.9", "9.1.0", Some(3)),
                    lib("/early/libcudnn.so.9", "9.14.0", Some(0)),
                    lib("/early/libcudnn.so.8", "8.9.7", Some(1)),
                ],
                ..Libraries::default()
            },
            ..Report::default()
        };
        let rows = lib_rows(&report);
        let summary: Vec<(&str, &str)> = rows
            .iter()
            .map(|r| (r.path.as_str(), r.state.label()))
            .collect();
        assert_eq!(
            summary,
            [
                ("/a/libcuda.so.1", "loads"),
                ("/b/libcuda.so.1", "shadowed"),
                ("/early/libcudnn.so.9", "loads"),
                ("/early/libcudnn.so.8", "loads"),
                ("/late/libcudnn.so.9", "shadowed"),
                ("/wheel/libcudnn.so.9", "by RUNPATH"),
            ]
        );
    }

    #[test]
    fn filters_ignore_case_and_empty_keeps_all() {
        assert!(matches("", &["x"]));
        assert!(matches("CUDA", &["libcuda"]));
        assert!(!matches("nccl", &["libcuda", "cuDNN"]));
    }

    #[test]
    fn machine_strings_are_cleaned_before_drawing() {
        let report = Report {
            toolkits: vec![crate::report::Toolkit {
                path: "/opt/\u{1b}[31mcuda".into(),
                ..crate::report::Toolkit::default()
            }],
            ..Report::default()
        };
        assert_eq!(lib_rows(&report)[0].path, "/opt/?[31mcuda");
    }
}
