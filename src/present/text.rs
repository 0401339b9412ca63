//! The plain-text report for a terminal or a pasted issue: short sections, one fact a line,
//! findings last with their evidence and fix. Every machine string passes [`clean`].

use std::fmt::Write;

use super::paint::Paint;
use crate::report::{Library, ProbeStatus, Report, Severity};
use crate::sanitize::clean;

/// How much the text report says and how wide its lines may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Everything: where each library and toolkit was found, what each framework loads, the
    /// environments without GPU frameworks (`doctor -v`). Without it: the verdict, the GPUs,
    /// the stack by version, the frameworks and the findings, what a person needs first.
    pub detail: bool,
    /// Wrap lines to this many columns, at spaces only (a path is never cut); `None`: no wrap.
    pub width: Option<usize>,
}

impl Layout {
    /// Everything, unwrapped: the report pasted into an issue or saved to a file.
    pub const FULL: Layout = Layout {
        detail: true,
        width: None,
    };
}

/// Renders the whole report, without colour, every detail, unwrapped.
#[must_use]
pub fn render(report: &Report) -> String {
    render_with(report, Paint::plain(), Layout::FULL)
}

/// Renders the report as `layout` says; `paint` colours the finding marks and the section
/// titles.
#[must_use]
pub fn render_with(report: &Report, paint: Paint, layout: Layout) -> String {
    let mut out = String::new();
    let detail = layout.detail;
    header(&mut out, report);
    verdict(&mut out, report);
    gpus(&mut out, report);
    driver(&mut out, report, detail);
    rocm(&mut out, report);
    toolkits(&mut out, report, detail);
    libraries(&mut out, report, detail);
    python(&mut out, report, detail);
    overrides(&mut out, report);
    findings(&mut out, report, paint);
    if !detail {
        out.push_str(
            "\n(gpu-doctor doctor -v: where each library was found, what each framework loads)\n",
        );
    }
    if let Some(width) = layout.width {
        out = wrap(&out, width);
    }
    if paint.is_on() {
        out = paint_headings(&out, paint);
    }
    out
}

/// The report's verdict in one line, as the TUI's Overview says it.
fn verdict(out: &mut String, r: &Report) {
    let errors = r.findings_of(Severity::Error).count();
    let warnings = r.findings_of(Severity::Warning).count();
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let verdict = match (errors, warnings) {
        (0, 0) if r.has_gpu() => "healthy, no problems found".to_string(),
        (0, 0) => "no GPU on this machine".to_string(),
        (e, 0) => format!("{} (see Diagnosis)", plural(e, "error")),
        (0, w) => format!("{} (see Diagnosis)", plural(w, "warning")),
        (e, w) => format!(
            "{}, {} (see Diagnosis)",
            plural(e, "error"),
            plural(w, "warning")
        ),
    };
    let _ = writeln!(out, "verdict: {verdict}");
}

/// `text` with every line longer than `width` broken at spaces. A continuation is indented
/// under the line's text: two more columns for a `- ` item, four for a two-space fact line
/// (so it does not read as the next fact), the same for a paragraph (indented six or more).
/// A word longer than the room left (a path) goes on a line of its own, whole: no space is
/// ever put inside one, so a wrapped path still copies as it was.
#[must_use]
pub(crate) fn wrap(text: &str, width: usize) -> String {
    let width = width.max(20);
    let mut out = String::with_capacity(text.len() + text.len() / 16);
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if line.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let body = line.trim_start_matches(' ');
        let indent = line.len() - body.len();
        let hang = if body.starts_with("- ") {
            indent + 2
        } else if indent >= 6 {
            indent
        } else {
            indent + 4
        };
        out.push_str(&line[..indent]);
        let mut column = indent;
        let mut rest = body;
        let mut first = true;
        while !rest.is_empty() {
            // The spaces before the next word (kept inside a line, dropped at a break).
            let word_at = rest.find(|c| c != ' ').unwrap_or(rest.len());
            let (gap, after) = rest.split_at(word_at);
            let word_end = after.find(' ').unwrap_or(after.len());
            let (word, next) = after.split_at(word_end);
            if word.is_empty() {
                break;
            }
            let len = word.chars().count();
            if !first && column + gap.len() + len > width && column > hang {
                out.push('\n');
                out.push_str(&" ".repeat(hang));
                column = hang;
            } else {
                out.push_str(gap);
                column += gap.len();
            }
            out.push_str(word);
            column += len;
            first = false;
            rest = next;
        }
    }
    out
}

/// Section titles are the lines that start in the first column after a blank line.
fn paint_headings(text: &str, paint: Paint) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut after_blank = false;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches('\n');
        if after_blank && !bare.is_empty() && !bare.starts_with(' ') {
            out.push_str(&paint.heading(bare));
            out.push_str(&line[bare.len()..]);
        } else {
            out.push_str(line);
        }
        after_blank = bare.is_empty();
    }
    out
}

fn opt(value: Option<&str>) -> String {
    value.map_or_else(|| "unknown".to_string(), clean)
}

fn header(out: &mut String, r: &Report) {
    let h = &r.host;
    let os = match (&h.os_pretty_name, &h.os_id) {
        (Some(p), _) => clean(p),
        (None, Some(id)) => format!("{} {}", clean(id), opt(h.os_version.as_deref())),
        (None, None) => "unknown OS".to_string(),
    };
    let _ = write!(out, "gpu-doctor {} | {os}", clean(&r.tool.version));
    if let Some(k) = &h.kernel_release {
        let _ = write!(out, " | kernel {}", clean(k));
    }
    if let Some(a) = &h.arch {
        let _ = write!(out, " | {}", clean(a));
    }
    if h.wsl {
        out.push_str(" | WSL2");
    }
    if let Some(c) = &h.container {
        let _ = write!(out, " | container: {}", clean(c));
    }
    out.push('\n');
    if let Some(root) = &r.tool.root {
        let _ = writeln!(out, "examined: {} (--root)", clean(root));
    }
    let m = &r.manifests;
    if !m.version.is_empty() {
        let origin = if m.origin == "installed" {
            "installed"
        } else {
            "built-in"
        };
        let _ = writeln!(
            out,
            "manifests: {origin} set {} (updated {})",
            clean(&m.version),
            clean(&m.updated)
        );
    }
    if let Some(warning) = &m.warning {
        let _ = writeln!(out, "manifests warning: {}", clean(warning));
    }
}

fn section(out: &mut String, title: &str) {
    let _ = write!(out, "\n{title}\n");
}

fn gpus(out: &mut String, r: &Report) {
    section(out, "GPUs");
    if r.gpus.is_empty() {
        out.push_str("  none found\n");
    }
    for g in &r.gpus {
        let _ = write!(out, "  {}  {}", g.index, opt(g.name.as_deref()));
        if let Some(id) = &g.pci_device_id {
            let _ = write!(out, " [{}]", clean(id));
        }
        if let Some(cc) = &g.compute_capability {
            let _ = write!(out, "  cc {}", clean(cc));
        }
        if let Some(gfx) = &g.gfx_target {
            let _ = write!(out, "  {}", clean(gfx));
            if let Some(family) = &g.architecture {
                let _ = write!(out, " ({})", clean(family));
            }
        }
        if g.integrated == Some(true) {
            out.push_str("  integrated");
        }
        if let Some(m) = g.memory_total_mib {
            let _ = write!(out, "  {m} MiB");
        }
        if let (Some(gen_now), Some(w)) = (g.pcie_gen_current, g.pcie_width_current) {
            let _ = write!(out, "  PCIe gen{gen_now} x{w}");
        }
        if let Some(t) = g.temperature_c {
            let _ = write!(out, "  {t} C");
        }
        if let (Some(p), Some(l)) = (g.power_draw_w, g.power_limit_w) {
            let _ = write!(out, "  {p:.0}/{l:.0} W");
        }
        let _ = write!(out, "  ({})", clean(g.source.as_str()));
        if let Some(i) = g.rocm_index {
            let _ = write!(out, "  ROCm device {i}");
        }
        out.push('\n');
        if g.identified_by != Some(crate::report::IdentifiedBy::Driver) {
            let _ = writeln!(
                out,
                "     identified by: {}",
                clean(&crate::fill::identified_by_words(g))
            );
        }
    }
}

fn driver(out: &mut String, r: &Report, detail: bool) {
    section(out, "Driver");
    let d = &r.driver;
    let k = &r.kernel;
    match &d.version {
        Some(v) => {
            let _ = write!(out, "  NVIDIA {}", clean(v));
            if let Some(cuda) = &d.cuda_version {
                let _ = write!(out, ", supports CUDA up to {}", clean(cuda));
            }
            let _ = writeln!(out, "  ({})", opt(d.source.as_deref()));
        }
        None => out.push_str("  no NVIDIA driver answered\n"),
    }
    let module = match (&k.nvidia_version, k.nvidia_open) {
        (Some(v), Some(true)) => format!("nvidia {} (open)", clean(v)),
        (Some(v), _) => format!("nvidia {}", clean(v)),
        (None, _) if k.nvidia_loaded => "nvidia (version unknown)".to_string(),
        (None, _) => "nvidia not loaded".to_string(),
    };
    let mut extra = Vec::new();
    if k.nouveau_loaded {
        extra.push("nouveau loaded");
    }
    if k.amdgpu_loaded {
        extra.push("amdgpu loaded");
    }
    let _ = writeln!(
        out,
        "  kernel module: {module}{}",
        if extra.is_empty() {
            String::new()
        } else {
            format!("; {}", extra.join(", "))
        }
    );
    for (name, outcome) in [("NVML", &d.nvml), ("nvidia-smi", &d.nvidia_smi)] {
        if matches!(outcome.status, ProbeStatus::Failed | ProbeStatus::TimedOut) {
            let _ = writeln!(out, "  {name}: {}", opt(outcome.detail.as_deref()));
        }
    }
    for lib in r
        .driver_libraries
        .iter()
        .filter(|l| l.rank == 0)
        .filter(|_| detail)
    {
        let _ = writeln!(
            out,
            "  {}: {} -> {} [{}, {}]",
            lib.name,
            clean(&lib.path),
            opt(lib.version.as_deref()),
            clean(lib.kind.as_str()),
            clean(&lib.origin)
        );
    }
}

/// The AMD stack: the amdgpu module, ROCm installs, KFD, the device nodes ROCm opens and who
/// may open them.
fn rocm(out: &mut String, r: &Report) {
    let Some(s) = &r.rocm else {
        return;
    };
    section(out, "AMD ROCm");
    let module = match (s.amdgpu.loaded, s.amdgpu.kind.as_deref(), &s.amdgpu.version) {
        (false, _, _) => "amdgpu not loaded".to_string(),
        (true, Some("dkms"), Some(v)) => format!("amdgpu-dkms {}", clean(v)),
        (true, _, _) => "amdgpu (the kernel's own)".to_string(),
    };
    let _ = writeln!(
        out,
        "  kernel module: {module}; KFD: {}",
        if s.kfd_topology {
            format!("{} GPU node(s)", s.kfd_nodes.len())
        } else {
            "no topology".to_string()
        }
    );
    if s.installs.is_empty() {
        out.push_str("  ROCm: none installed under /opt\n");
    }
    for i in &s.installs {
        let default = s.default_install.as_deref() == Some(i.path.as_str());
        let _ = write!(
            out,
            "  ROCm {}  {}{}",
            opt(i.version.as_deref()),
            clean(&i.path),
            if default { " (/opt/rocm)" } else { "" }
        );
        if let Some(h) = &i.hip_version {
            let _ = write!(out, "  HIP {}", clean(h));
        }
        if !i.rocblas_targets.is_empty() {
            let _ = write!(out, "  rocBLAS: {}", clean(&i.rocblas_targets.join(" ")));
        }
        if !i.hipblaslt_targets.is_empty() {
            let _ = write!(
                out,
                "  hipBLASLt: {}",
                clean(&i.hipblaslt_targets.join(" "))
            );
        }
        out.push('\n');
    }
    for b in &s.bundled {
        let _ = write!(
            out,
            "  {}'s own ROCm  {}",
            clean(&b.program),
            clean(&b.path)
        );
        if !b.rocblas_targets.is_empty() {
            let _ = write!(out, "  rocBLAS: {}", clean(&b.rocblas_targets.join(" ")));
        }
        if !b.hipblaslt_targets.is_empty() {
            let _ = write!(
                out,
                "  hipBLASLt: {}",
                clean(&b.hipblaslt_targets.join(" "))
            );
        }
        out.push('\n');
    }
    for n in &s.device_nodes {
        let access = match n.accessible {
            Some(true) => "can open",
            Some(false) => "CANNOT open",
            None => "access unknown",
        };
        let _ = writeln!(
            out,
            "  {}  {} {}  ({access})",
            clean(&n.path),
            opt(n.mode.as_deref()),
            n.group
                .as_deref()
                .map(clean)
                .or_else(|| n.gid.map(|g| format!("gid {g}")))
                .unwrap_or_else(|| "?".to_string())
        );
    }
    if let Some(u) = &s.user {
        let _ = writeln!(
            out,
            "  user {}: groups {}",
            opt(u.name.as_deref()),
            clean(&u.groups.join(", "))
        );
    }
}

fn toolkits(out: &mut String, r: &Report, detail: bool) {
    section(out, "CUDA toolkits");
    if r.toolkits.is_empty() {
        out.push_str("  none found\n");
    }
    for t in r.toolkits.iter().filter(|_| !detail) {
        let _ = write!(out, "  {}  {}", opt(t.version.as_deref()), clean(&t.path));
        if t.builds_extensions {
            out.push_str("  [extension builds]");
        }
        out.push('\n');
    }
    for t in r.toolkits.iter().filter(|_| detail) {
        let _ = write!(
            out,
            "  {}  {}  (version from {}; found via {})",
            opt(t.version.as_deref()),
            clean(&t.path),
            opt(t.version_source.as_deref()),
            clean(&t.found_via.join(", "))
        );
        if let Some(v) = &t.nvcc_version {
            let _ = write!(out, "  nvcc V{}", clean(v));
        }
        if t.builds_extensions {
            out.push_str("  [extension builds]");
        }
        out.push('\n');
    }
}

fn libraries(out: &mut String, r: &Report, detail: bool) {
    section(out, "Libraries");
    let l = &r.libraries;
    let families: [(&str, &Vec<Library>); 5] = [
        ("cuDNN", &l.cudnn),
        ("NCCL", &l.nccl),
        ("cuBLAS", &l.cublas),
        ("cudart", &l.cudart),
        ("TensorRT", &l.tensorrt),
    ];
    let mut any = false;
    for (name, libs) in families {
        if !detail && !libs.is_empty() {
            // One line a family: each copy's version and where it comes from; paths with -v.
            any = true;
            let copies: Vec<String> = libs
                .iter()
                .map(|lib| {
                    format!(
                        "{} ({}{})",
                        opt(lib.version.as_deref()),
                        clean(&lib.origin),
                        if lib.on_loader_path {
                            ", on loader path"
                        } else {
                            ""
                        }
                    )
                })
                .collect();
            let _ = writeln!(out, "  {name:<8} {}", copies.join(", "));
            continue;
        }
        for lib in libs {
            any = true;
            let _ = writeln!(
                out,
                "  {name:<8} {:<12} {} ({}{})",
                opt(lib.version.as_deref()),
                clean(&lib.path),
                clean(&lib.origin),
                if lib.on_loader_path {
                    ", on loader path"
                } else {
                    ""
                }
            );
        }
    }
    if !any {
        out.push_str("  none found\n");
    }
}

fn python(out: &mut String, r: &Report, detail: bool) {
    section(out, "Python environments");
    if r.python_envs.is_empty() {
        out.push_str("  none found\n");
    }
    let without = r
        .python_envs
        .iter()
        .filter(|e| e.frameworks.is_empty())
        .count();
    for env in &r.python_envs {
        if !detail && env.frameworks.is_empty() {
            continue;
        }
        let _ = writeln!(
            out,
            "  {} ({}, Python {})",
            clean(&env.path),
            clean(&env.kind_label()),
            opt(env.python_version.as_deref())
        );
        if env.frameworks.is_empty() {
            out.push_str("    no GPU frameworks\n");
        }
        for fw in &env.frameworks {
            let build = match (&fw.cuda, &fw.rocm, fw.variant.as_deref()) {
                (Some(c), _, _) => format!("CUDA {}", clean(c)),
                (None, Some(h), _) => format!("ROCm {}", clean(h)),
                (None, None, Some("cpu")) => "CPU only".to_string(),
                _ => "build unknown".to_string(),
            };
            let _ = write!(
                out,
                "    {} {}  {build}",
                clean(&fw.name),
                opt(fw.version.as_deref())
            );
            if let Some(c) = &fw.cudnn {
                let _ = write!(out, ", cuDNN {}", clean(c));
            }
            if !fw.gfx_targets.is_empty() {
                let _ = write!(out, ", gfx: {}", clean(&fw.gfx_targets.join(" ")));
            }
            // JAX's jaxlib and plugins carry their own versions, and the build facts.
            for c in &fw.components {
                let _ = write!(out, "; {} {}", clean(&c.name), clean(&c.version));
            }
            out.push('\n');
            if detail {
                loads(out, r, &env.path, &fw.name);
            }
        }
    }
    if !detail && without > 0 {
        let envs = if without == 1 {
            "environment"
        } else {
            "environments"
        };
        if without == r.python_envs.len() {
            let _ = writeln!(
                out,
                "  {without} {envs} found, no GPU framework in any (-v lists them)"
            );
        } else {
            let _ = writeln!(
                out,
                "  and {without} {envs} without GPU frameworks (-v lists them)"
            );
        }
    }
}

/// What a framework's process would map, one line per soname, like `ldd` without running it.
fn loads(out: &mut String, r: &Report, env: &str, framework: &str) {
    let Some(fl) = r
        .libraries
        .loads
        .iter()
        .find(|l| l.env == env && l.framework == framework)
    else {
        return;
    };
    if fl.libraries.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "      loads ({}):",
        if fl.basis == "elf" {
            "ld.so order, from its modules' dynamic sections"
        } else {
            "ld.so order, modelled: its modules are not readable ELF files"
        }
    );
    for l in &fl.libraries {
        match &l.path {
            Some(path) => {
                let owner = l.owner.as_ref().map_or_else(String::new, |o| {
                    let mut s = o.kind.to_string();
                    if let Some(p) = &o.package {
                        s.push(' ');
                        s.push_str(p);
                    }
                    s
                });
                let _ = writeln!(
                    out,
                    "        {:<34} => {} ({}{}, via {})",
                    clean(&l.soname),
                    clean(path),
                    opt(l.version.as_deref()),
                    if owner.is_empty() {
                        String::new()
                    } else {
                        format!(", {}", clean(&owner))
                    },
                    opt(l.via.as_deref())
                );
            }
            None => {
                let _ = writeln!(
                    out,
                    "        {:<34} => not found ({} folders searched)",
                    clean(&l.soname),
                    l.searched.len()
                );
            }
        }
    }
}

fn overrides(out: &mut String, r: &Report) {
    if r.overrides.is_empty() {
        return;
    }
    section(out, "Overrides");
    for o in &r.overrides {
        let _ = writeln!(
            out,
            "  {} = {} (from {})",
            o.field,
            clean(&o.value),
            o.variable
        );
    }
}

fn findings(out: &mut String, r: &Report, paint: Paint) {
    section(out, "Diagnosis");
    if r.findings.is_empty() {
        out.push_str("  No problems found.\n");
        return;
    }
    for f in &r.findings {
        super::finding::write(out, f, paint);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_breaks_at_spaces_and_never_inside_a_path() {
        let path = "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublasLt.so.13.1.0.3";
        let text = format!(
            "Libraries\n  cuBLAS   13.1.0.3     {path} (toolkit, on loader path)\n      - a piece of evidence that goes on and on past the edge of the screen\n"
        );
        let wrapped = wrap(&text, 40);
        for line in wrapped.lines() {
            assert!(
                line.chars().count() <= 40 || line.trim() == path,
                "too long: {line:?}\n{wrapped}"
            );
        }
        assert!(wrapped.lines().any(|l| l.trim() == path), "{wrapped}");
        // Joining the pieces gives the words back, in order, none changed.
        let words = |t: &str| t.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(words(&wrapped), words(&text));
        assert!(wrapped.ends_with('\n'), "{wrapped:?}");
        assert!(!wrapped.lines().any(|l| l.ends_with(' ')), "{wrapped}");
        // A continuation hangs under its item: an evidence line's text, a fact's (+4).
        assert!(
            wrapped.contains("\n        past") || wrapped.contains("\n        "),
            "{wrapped}"
        );
        assert_eq!(wrap("short\n\nlines\n", 40), "short\n\nlines\n");
    }

    #[test]
    fn the_default_text_is_short_and_the_detail_is_behind_v() {
        let mut report = Report::default();
        report.python_envs = (6..14)
            .map(|minor| crate::report::PythonEnv {
                path: format!("/root/.pyenv/versions/3.{minor}.1"),
                kind: crate::report::EnvKind::System,
                found_via: vec!["pyenv".to_string()],
                python_version: Some(format!("3.{minor}")),
                ..crate::report::PythonEnv::default()
            })
            .collect();
        let short = render_with(
            &report,
            Paint::plain(),
            Layout {
                detail: false,
                width: Some(80),
            },
        );
        assert!(short.contains("verdict: no GPU on this machine"), "{short}");
        assert!(
            short.contains("8 environments found, no GPU framework in any (-v lists them)"),
            "{short}"
        );
        assert!(!short.contains("/root/.pyenv/versions/3.6.1"), "{short}");
        assert!(short.lines().all(|l| l.chars().count() <= 80), "{short}");
        let full = render(&report);
        assert!(
            full.contains("/root/.pyenv/versions/3.6.1 (pyenv, Python 3.6)"),
            "{full}"
        );
    }

    /// The report of the real H200 (tests/fixtures/real/h200-doctor.json: torch, JAX and
    /// TensorFlow in one venv) as a person reads it at 80 columns, and with -v.
    #[test]
    fn the_h200_report_at_80_columns() {
        let report: Report =
            serde_json::from_str(include_str!("../../tests/fixtures/real/h200-doctor.json"))
                .unwrap();
        let short = render_with(
            &report,
            Paint::plain(),
            Layout {
                detail: false,
                width: Some(80),
            },
        );
        let full = render(&report);
        // The whole report ran to 81 lines, most of them 150-200-character library lists.
        assert!(short.lines().count() <= 45, "{short}");
        assert!(full.lines().count() > short.lines().count() + 20, "{full}");
        assert!(!short.contains("loads (ld.so order"), "{short}");
        assert!(full.contains("loads (ld.so order"), "{full}");
        for line in short.lines() {
            let unbreakable = line.split_whitespace().any(|w| w.chars().count() > 60);
            assert!(line.chars().count() <= 80 || unbreakable, "{line:?}");
        }
        insta::assert_snapshot!("h200_doctor_text_80", short);
    }
}
