//! `cdi-spec-version-unsupported`: a CDI spec of a version the installed container engine's CDI
//! library does not read.

// The parent's imports and shared helpers: one family of platform findings.
use super::*;
use crate::report::{CdiSpec, ContainerEngine};
use crate::version::Version;

// ---------------------------------------------------------------------------------------------
// cdi-spec-version-unsupported

/// A spec names its version (`cdiVersion: 0.7.0`) and an engine reads it with the CDI library
/// it was built with, which refuses a version it does not know ("invalid version") and a field
/// it does not know (a strict parse: `json: unknown field "additionalGids"`). The whole spec is
/// then dropped, and every device it lists is "unresolvable" (NVIDIA/nvidia-container-toolkit#1860
/// and #1940: toolkit 1.19.1 writes a 0.7.0 spec, which Podman 4.9.3's library v0.6.2 does not
/// read; the maintainers: 1.19.1 needs "a podman version that supports v0.7.0 of the CDI spec").
/// Which library each release builds with is `install.toml`'s `[[cdi_engine]]`
/// (`scripts/gen-cdi-engines.py`, from the engines' go.mod files). Only the one direction
/// fails: every library reads the older versions it knows, so an engine newer than the spec is
/// fine, and an engine release newer than the table is not judged. On the host only (inside a
/// container the engine is the host's).
pub(super) fn cdi_spec_version_unsupported(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    host_nvidia_specs(report)
        .filter_map(|spec| unsupported(report, manifests, spec))
        .collect()
}

/// An engine package's upstream release: its version without a packaging epoch (`5:` of
/// Docker's `5:28.2.2-1~debian.12~bookworm`) and without what follows the dotted numbers
/// (`+ds1-1ubuntu0.2`).
fn upstream(version: &str) -> &str {
    let v = match version.split_once(':') {
        Some((epoch, rest)) if !epoch.is_empty() && epoch.bytes().all(|b| b.is_ascii_digit()) => {
            rest
        }
        _ => version,
    };
    let end = v
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(v.len());
    v[..end].trim_end_matches('.')
}

/// The engine's printed name.
fn engine_name(engine: &str) -> &str {
    match engine {
        "podman" => "Podman",
        "docker" => "Docker Engine",
        other => other,
    }
}

fn unsupported(report: &Report, manifests: &Manifests, spec: &CdiSpec) -> Option<Finding> {
    let wanted = Version::parse(spec.cdi_version.as_deref()?)?;
    let refusing: Vec<(&ContainerEngine, &crate::manifest::CdiEngine)> = report
        .host
        .container_engines
        .iter()
        .filter_map(|e| {
            let row = manifests
                .install
                .cdi_engine(&e.engine, upstream(&e.version))?;
            (Version::parse(&row.spec_max)? < wanted).then_some((e, row))
        })
        .collect();
    let (first, _) = *refusing.first()?;
    let names: Vec<String> = refusing
        .iter()
        .map(|(e, _)| format!("{} {}", engine_name(&e.engine), upstream(&e.version)))
        .collect();
    let title = format!(
        "The CDI spec {} is version {}, which {} cannot read",
        spec.path,
        wanted.as_str(),
        names.join(" and ")
    );
    let mut f = FindingBuilder::new(&ids::CDI_SPEC_VERSION_UNSUPPORTED, Severity::Error, title)
        .detail(
            "A container engine reads CDI specs with the Container Device Interface library it \
             was built with, and that library refuses a spec of a version it does not know \
             (\"invalid version\") or with a field it does not know (\"unknown field\"). The \
             whole spec is dropped, so every device in it is \"unresolvable\" and no container \
             that asks for the GPU starts, though `nvidia-ctk cdi list` still lists the \
             devices. The NVIDIA Container Toolkit writes the lowest version its spec's fields \
             need; a newer toolkit can need a newer version than the engine reads.",
        )
        .evidence(format!("{}: cdiVersion {}", spec.path, wanted.as_str()));
    for (e, row) in &refusing {
        f = f.evidence(format!(
            "{} {} ({}): CDI library v{}, which reads spec versions up to {} ({})",
            e.package,
            e.version,
            engine_name(&e.engine),
            row.cdi_library,
            row.spec_max,
            row.source
        ));
    }
    // The release from which on every release read reads the spec's version (a backport,
    // Docker 25.0.17's newer library, does not make "or later" true of 26.0).
    let mut rows: Vec<(Version, &crate::manifest::CdiEngine)> = manifests
        .install
        .cdi_engines
        .iter()
        .filter(|r| r.engine == first.engine)
        .filter_map(|r| Version::parse(&r.first).map(|v| (v, r)))
        .collect();
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let upgrade = rows
        .iter()
        .rev()
        .take_while(|(_, r)| Version::parse(&r.spec_max).is_some_and(|m| m >= wanted))
        .last()
        .map(|(v, _)| v.clone());
    let name = engine_name(&first.engine);
    let to = upgrade.map_or_else(
        || format!("a {name} release that reads CDI spec {}", wanted.as_str()),
        |v| format!("{name} {} or later", v.as_str()),
    );
    f = f.fix_on_host(format!(
        "Upgrade to {to} (its CDI library reads spec {}), from the distribution's newer \
         release or the engine's own packages. Until then, keep the NVIDIA Container Toolkit at \
         the release before the one that wrote this spec (its spec is of a version the engine \
         reads) and generate the spec again with it: `sudo nvidia-ctk cdi generate \
         --output={}`.",
        wanted.as_str(),
        spec.path
    ));
    Some(
        f.subject(Subject::Container(Some(first.engine.clone())))
            .build(),
    )
}
