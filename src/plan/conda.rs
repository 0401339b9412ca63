//! Renders a conda plan's environment as `environment.yml`, the file `conda env create -f`
//! reads: the same environment the script's steps build, for people who keep it in a
//! repository. Every value is written as a double-quoted YAML string. Pure.

use std::fmt::Write as _;

use crate::manifest::Manifests;

use super::decide::{Decision, EnvPlan};
use super::machine::Machine;

/// A value as a double-quoted YAML scalar: `\` and `"` escaped, control characters as `\uXXXX`,
/// so no environment name can add keys or list items.
#[must_use]
pub fn yaml_quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `environment.yml` for a conda decision.
#[must_use]
pub fn environment_yml(m: &Manifests, d: &Decision<'_>, machine: &Machine) -> String {
    let Some(EnvPlan::Conda { name, python }) = &d.env else {
        return String::new();
    };
    let mut out = String::new();
    out.push_str("# Made by gpu-doctor plan for this machine:\n");
    for line in machine.gpu_lines() {
        for l in super::shell::comment_lines(&line, "   ") {
            let _ = writeln!(out, "{l}");
        }
    }
    out.push_str(
        "# conda env create -f environment.yml builds the environment the plan's steps build.\n\
         # It cannot install the driver: see the plan for that.\n",
    );
    let _ = writeln!(out, "name: {}", yaml_quote(name));
    out.push_str("channels:\n  - \"conda-forge\"\ndependencies:\n");
    let _ = writeln!(out, "  - {}", yaml_quote(&format!("python={python}")));
    for p in super::python::conda_packages(m, d) {
        let _ = writeln!(out, "  - {}", yaml_quote(&p));
    }
    if let Some(fw) = &d.framework {
        out.push_str("  - \"pip\"\n  - pip:\n");
        if let Some(url) = &fw.index_url {
            let _ = writeln!(out, "      - {}", yaml_quote(&format!("--index-url {url}")));
        }
        let _ = writeln!(out, "      - {}", yaml_quote(&fw.requirement));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_values_cannot_break_out() {
        assert_eq!(yaml_quote("ml"), "\"ml\"");
        assert_eq!(yaml_quote("x\"\n- evil: 1"), "\"x\\\"\\u000a- evil: 1\"");
        assert_eq!(yaml_quote("a\\b"), "\"a\\\\b\"");
    }
}
