//! The plain-text report for a terminal or a pasted issue: short sections, one fact a line,
//! findings last with their evidence and fix. Every machine string passes [`clean`].

use std::fmt::Write;

use super::paint::Paint;
use crate::report::{Library, ProbeStatus, Report};
use crate::sanitize::clean;

/// Renders the whole report, without colour.
#[must_use]
pub fn render(report: &Report) -> String {
    render_with(report, Paint::plain())
}

/// Renders the whole report; `paint` colours the finding marks and the section titles.
#[must_use]
pub fn render_with(report: &Report, paint: Paint) -> String {
    let mut out = String::new();
    header(&mut out, report);
    gpus(&mut out, report);
    driver(&mut out, report);
    rocm(&mut out, report);
    toolkits(&mut out, report);
    libraries(&mut out, report);
    python(&mut out, report);
    overrides(&mut out, report);
    findings(&mut out, report, paint);
    if paint.is_on() {
        out = paint_headings(&out, paint);
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
        let _ = write!(out, "  ({})", clean(&g.source));
        if let Some(i) = g.rocm_index {
            let _ = write!(out, "  ROCm device {i}");
        }
        out.push('\n');
        if g.identified_by.as_deref() != Some("driver") {
            let _ = writeln!(
                out,
                "     identified by: {}",
                clean(&crate::fill::identified_by_words(g))
            );
        }
    }
}

fn driver(out: &mut String, r: &Report) {
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
    for lib in r.driver_libraries.iter().filter(|l| l.rank == 0) {
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

fn toolkits(out: &mut String, r: &Report) {
    section(out, "CUDA toolkits");
    if r.toolkits.is_empty() {
        out.push_str("  none found\n");
    }
    for t in &r.toolkits {
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

fn libraries(out: &mut String, r: &Report) {
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

fn python(out: &mut String, r: &Report) {
    section(out, "Python environments");
    if r.python_envs.is_empty() {
        out.push_str("  none found\n");
    }
    for env in &r.python_envs {
        let _ = writeln!(
            out,
            "  {} ({}, Python {})",
            clean(&env.path),
            clean(env.kind.as_str()),
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
            loads(out, r, &env.path, &fw.name);
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
