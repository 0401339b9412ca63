//! The toolkit's nvcc against its host compiler. Finding: `host-compiler-too-new-for-nvcc`.
//!
//! nvcc compiles host code with GCC (or clang), and each CUDA release's `crt/host_config.h`
//! stops a GCC newer than it knows: "#error -- unsupported GNU version! gcc versions later than
//! 14 are not supported!". Distributions move their default GCC faster than CUDA (Fedora 42's
//! and Arch's GCC 15 against CUDA 12.8's limit of 14), so building an extension (flash-attn,
//! apex, vLLM from source, any `CUDAExtension`) fails before a line of it compiles. The limit
//! is the toolkit's own header where it was read, else `cuda.toml`'s `[[host_compiler]]`
//! (generated from NVIDIA's nvcc wheels, `scripts/gen-host-compiler.py`).

use super::{FindingBuilder, env_var, ids};
use crate::manifest::Manifests;
use crate::report::Subject;
use crate::report::{Finding, HostCompiler, Report, Severity, Toolkit};
use crate::version::Version;

pub(super) fn findings(report: &Report, manifests: &Manifests) -> Vec<Finding> {
    too_new(report, manifests).into_iter().collect()
}

/// The toolkit an extension build would use, if it has nvcc: the one marked so, else the only
/// toolkit with nvcc.
fn building_toolkit(report: &Report) -> Option<&Toolkit> {
    let with_nvcc: Vec<&Toolkit> = report
        .toolkits
        .iter()
        .filter(|t| t.nvcc.is_some())
        .collect();
    with_nvcc
        .iter()
        .find(|t| t.builds_extensions)
        .or_else(|| (with_nvcc.len() == 1).then(|| &with_nvcc[0]))
        .copied()
}

/// Whether nvcc's own check is turned off for every run (`NVCC_APPEND_FLAGS` or
/// `NVCC_PREPEND_FLAGS` holding `-allow-unsupported-compiler`).
fn check_turned_off(report: &Report) -> bool {
    ["NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS"]
        .iter()
        .filter_map(|v| env_var(report, v))
        .any(|flags| flags.contains("-allow-unsupported-compiler"))
}

fn too_new(report: &Report, manifests: &Manifests) -> Option<Finding> {
    let compiler: &HostCompiler = report.host_compiler.as_ref()?;
    if compiler.kind != "gcc" || check_turned_off(report) {
        return None;
    }
    let major = Version::parse(&compiler.version)?.major();
    let toolkit = building_toolkit(report)?;
    let toolkit_version = toolkit
        .nvcc_version
        .as_deref()
        .or(toolkit.version.as_deref())?;
    let (max, from) = match toolkit.gcc_max {
        Some(max) => (
            u64::from(max),
            format!("{}'s crt/host_config.h", toolkit.path),
        ),
        None => {
            let row = manifests.cuda.host_compiler(toolkit_version)?;
            (
                u64::from(row.gcc_max),
                format!("cuda.toml, read from CUDA {}'s crt/host_config.h", row.read),
            )
        }
    };
    if major <= max {
        return None;
    }
    let cuda = Version::parse(toolkit_version)?.major_minor();
    let newer = manifests
        .cuda
        .host_compilers
        .iter()
        .find(|row| u64::from(row.gcc_max) >= major)
        .map(|row| row.cuda.clone());
    let mut fix = format!(
        "Point nvcc at GCC {max} or older: install it beside the default one ({}), then \
         `export NVCC_CCBIN=/usr/bin/g++-{max}` for nvcc itself, `export CC=gcc-{max} \
         CXX=g++-{max}` for PyTorch extension builds (flash-attn, apex, `pip install` of a \
         CUDAExtension), or `-DCMAKE_CUDA_HOST_COMPILER=/usr/bin/g++-{max}` for CMake.",
        install_words(report, max)
    );
    if let Some(newer) = newer {
        fix.push_str(&format!(
            " Or use CUDA {newer} or newer, whose nvcc accepts GCC {major}."
        ));
    }
    fix.push_str(
        " nvcc's `-allow-unsupported-compiler` (in NVCC_APPEND_FLAGS) only skips the check, at \
         the risk of failed or wrong builds.",
    );
    Some(
        FindingBuilder::new(
            &ids::HOST_COMPILER_TOO_NEW_FOR_NVCC,
            Severity::Warning,
            format!(
                "nvcc of CUDA {cuda} refuses GCC {}: it accepts GCC {max} and older",
                compiler.version
            ),
        )
        .detail(format!(
            "nvcc hands host code to GCC, and CUDA {cuda}'s crt/host_config.h stops any GCC newer \
             than {max}: every compile fails with \"#error -- unsupported GNU version! gcc \
             versions later than {max} are not supported!\". Building a CUDA extension (flash-attn, \
             apex, xformers or vLLM from source, any torch CUDAExtension) fails there. Programs \
             already built are not affected."
        ))
        .evidence(format!(
            "host compiler: {} (GCC {}, named by {})",
            compiler.path, compiler.version, compiler.via
        ))
        .evidence(format!(
            "toolkit: {} (nvcc {toolkit_version}), newest GCC {max} ({from})",
            toolkit.path
        ))
        .subject(Subject::Toolkit(toolkit.path.clone()))
        .fix(fix)
        .build(),
    )
}

/// How to install GCC `major` beside the default, in the distribution's words where its
/// package names are known (Ubuntu and Debian ship `gcc-N`/`g++-N` side by side).
fn install_words(report: &Report, major: u64) -> String {
    match report.host.os_id.as_deref().unwrap_or("") {
        "ubuntu" | "debian" | "pop" | "linuxmint" => {
            format!("`sudo apt install gcc-{major} g++-{major}`")
        }
        _ => format!("the distribution's GCC {major} package"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::test_support::{has_evidence, ids, one};
    use crate::report::EnvVar;

    fn machine(toolkit_version: &str, gcc_max: Option<u32>, gcc: &str) -> Report {
        let mut r = Report::default();
        r.host.os_id = Some("ubuntu".into());
        r.toolkits = vec![Toolkit {
            path: "/usr/local/cuda-12.4".into(),
            version: Some(toolkit_version.into()),
            nvcc: Some("/usr/local/cuda-12.4/bin/nvcc".into()),
            nvcc_version: Some(toolkit_version.into()),
            builds_extensions: true,
            gcc_max,
            ..Toolkit::default()
        }];
        r.host_compiler = Some(HostCompiler {
            path: "/usr/bin/gcc".into(),
            kind: "gcc".into(),
            version: gcc.into(),
            via: "PATH".into(),
            version_source: "--version".into(),
        });
        r
    }

    fn run(r: &Report) -> Vec<Finding> {
        findings(r, crate::manifest::embedded())
    }

    #[test]
    fn a_gcc_newer_than_the_header_allows_is_a_warning_naming_the_gcc_to_use() {
        let found = run(&machine("12.4.131", Some(13), "14.2.0"));
        let f = one(&found, "host-compiler-too-new-for-nvcc");
        assert_eq!(f.severity, Severity::Warning);
        assert!(has_evidence(f, "crt/host_config.h"), "{f:#?}");
        let fix = f.fix.as_deref().unwrap_or_default();
        assert!(fix.contains("sudo apt install gcc-13 g++-13"), "{fix}");
        assert!(fix.contains("NVCC_CCBIN=/usr/bin/g++-13"), "{fix}");
        assert!(fix.contains("CUDA 12.8 or newer"), "{fix}");
    }

    #[test]
    fn without_the_header_the_table_gives_the_limit() {
        let found = run(&machine("12.1.105", None, "13.3.0"));
        let f = one(&found, "host-compiler-too-new-for-nvcc");
        assert!(has_evidence(f, "cuda.toml"), "{f:#?}");
        assert!(f.title.contains("GCC 12 and older"), "{}", f.title);
        // A release the table does not read is left alone.
        assert!(run(&machine("10.2.89", None, "13.3.0")).is_empty());
    }

    #[test]
    fn an_accepted_gcc_clang_or_a_turned_off_check_says_nothing() {
        assert!(run(&machine("12.8.93", Some(14), "14.2.0")).is_empty());
        let mut clang = machine("12.4.131", Some(13), "19.1.7");
        if let Some(c) = clang.host_compiler.as_mut() {
            c.kind = "clang".into();
        }
        assert!(run(&clang).is_empty());
        let mut off = machine("12.4.131", Some(13), "14.2.0");
        off.environment = vec![EnvVar {
            name: "NVCC_APPEND_FLAGS".into(),
            value: "-allow-unsupported-compiler".into(),
        }];
        assert!(run(&off).is_empty());
        let mut none = machine("12.4.131", Some(13), "14.2.0");
        none.host_compiler = None;
        assert!(ids(&run(&none)).is_empty());
    }
}
