//! The `render`/`video` group step for a user who lacks one.

use crate::manifest::Manifests;
use crate::report::Report;

use crate::plan::cmd::{Command, Word};
use crate::plan::{Step, StepKind};

/// Adds the user to the device groups when the report says they lack one.
pub(super) fn groups_step(report: &Report, m: &Manifests) -> Option<Step> {
    if report.host.container.is_some() {
        return None;
    }
    let user = report.rocm.as_ref()?.user.as_ref()?;
    let name = user.name.clone()?;
    if user.uid == Some(0) {
        return None;
    }
    let missing: Vec<&String> = m
        .rocm
        .install
        .groups
        .iter()
        .filter(|g| !user.groups.contains(g))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let groups = m.rocm.install.groups.join(",");
    Some(Step {
        serves: Vec::new(),
        kind: StepKind::Groups,
        title: format!("Add {name} to the {groups} groups"),
        why: format!(
            "ROCm opens /dev/kfd and /dev/dri/renderD* read-write; their group is render (video \
             on older udev rules), and {name} is not in {} ({}).",
            missing
                .iter()
                .map(|g| g.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            m.rocm.install.source
        ),
        guards: Vec::new(),
        commands: vec![
            Command::Run {
                argv: vec![
                    Word::lit("usermod"),
                    Word::lit("-a"),
                    Word::lit("-G"),
                    Word::lit(groups),
                    // The name is never an option, whatever it starts with (#40).
                    Word::lit("--"),
                    Word::lit(name),
                ],
                sudo: true,
            },
            Command::Say(
                "Log out and in again (or reboot): the groups apply to new logins.".to_string(),
            ),
        ],
        needs_root: true,
        reboot: false,
    })
}
