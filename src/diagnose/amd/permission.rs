//! `rocm-device-permission`: the user may not open `/dev/kfd` or the render nodes, and the
//! group that would let them.

use crate::diagnose::{FindingBuilder, ids};
use crate::report::Subject;
use crate::report::rocm::DeviceNode;
use crate::report::{Finding, Report, Severity};

use super::rocm_installed;

/// `/dev/kfd` or an AMD GPU's render node is there, but its mode and group do not let this
/// (non-root) user open it read-write: ROCm then reports no GPU ("Unable to open /dev/kfd
/// read-write: Permission denied"; ollama: "permission denied ... /dev/kfd"). The fix AMD and
/// the distributions give is membership in the node's group (`render`, on older udev rules
/// `video`) and a new login.
pub(super) fn device_permission(report: &Report) -> Option<Finding> {
    let stack = report.rocm.as_ref()?;
    let user = stack.user.as_ref()?;
    let ours: Vec<&str> = report
        .amd_gpus()
        .filter_map(|g| g.render_node.as_deref())
        .collect();
    let denied: Vec<&DeviceNode> = stack
        .device_nodes
        .iter()
        .filter(|n| n.accessible == Some(false))
        .filter(|n| n.path == "/dev/kfd" || ours.is_empty() || ours.contains(&n.path.as_str()))
        .collect();
    if denied.is_empty() || (report.amd_gpus().next().is_none() && !rocm_installed(report)) {
        return None;
    }
    let who = user
        .name
        .clone()
        .or_else(|| user.uid.map(|u| format!("uid {u}")))
        .unwrap_or_else(|| "this user".to_string());
    let mut groups: Vec<String> = denied.iter().filter_map(|n| n.group.clone()).collect();
    groups.sort();
    groups.dedup();
    let mut f = FindingBuilder::new(
        &ids::ROCM_DEVICE_PERMISSION,
        Severity::Error,
        format!(
            "{who} may not open {}: ROCm sees no GPU",
            denied
                .iter()
                .map(|n| n.path.as_str())
                .collect::<Vec<_>>()
                .join(" and ")
        ),
    )
    .detail(
        "ROCm opens /dev/kfd and the GPU's /dev/dri/renderD* read-write. Their permissions let \
         only root and members of their group do that, and this user is neither, so every ROCm \
         program (PyTorch, ollama, llama.cpp) finds no GPU or fails with \"Permission denied\".",
    );
    for n in &denied {
        f = f
            .evidence(format!(
                "{}: mode {} owner uid {} group {}",
                n.path,
                n.mode.as_deref().unwrap_or("?"),
                n.uid.map_or_else(|| "?".to_string(), |u| u.to_string()),
                n.group
                    .clone()
                    .or_else(|| n.gid.map(|g| format!("gid {g}")))
                    .unwrap_or_else(|| "?".to_string())
            ))
            .subject(Subject::Device(n.path.clone()));
    }
    f = f.evidence(format!(
        "{who}: groups {}",
        if user.groups.is_empty() {
            "(none)".to_string()
        } else {
            user.groups.join(", ")
        }
    ));
    let pending: Vec<&String> = user
        .pending_groups
        .iter()
        .filter(|g| groups.contains(g))
        .collect();
    for g in &pending {
        f = f.evidence(format!(
            "/etc/group lists {who} in {g}, but this login session does not have it yet"
        ));
    }
    let fix = permission_fix(report, &who, &groups, &pending);
    Some(f.fix(fix).explains(&ids::ROCM_IGPU_VISIBLE).build())
}

/// In a container the user gets the node's group from the runtime; a user already added to it
/// needs only a new login; anyone else joins the groups (`render`, and `video` of older udev
/// rules, besides the nodes' own), as does a service's user.
fn permission_fix(report: &Report, who: &str, groups: &[String], pending: &[&String]) -> String {
    let add = if groups.is_empty() {
        "render,video".to_string()
    } else {
        let mut all = groups.to_vec();
        for g in ["render", "video"] {
            if !all.iter().any(|x| x == g) {
                all.push(g.to_string());
            }
        }
        all.join(",")
    };
    match report.host.container.as_deref() {
        Some(runtime) => format!(
            "Give the container's user the device group: `{runtime} run --group-add video \
             --group-add render ...` (or the host's numeric gid of the node's group, \
             `--group-add $(getent group render | cut -d: -f3)`, when the image has no render \
             group), or run as root."
        ),
        None if !pending.is_empty() => format!(
            "{who} was already added to {}: log out and in again (or run `newgrp {}`) so the \
             session gets the group.",
            pending
                .iter()
                .map(|g| g.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            pending.first().map_or("render", |g| g.as_str())
        ),
        None => format!(
            "Add the user to the device groups and log in again: `sudo usermod -aG {add} \
             $USER`. For a service (ollama, a Jupyter server), add its user instead: `sudo \
             usermod -aG {add} <service-user>` and restart it."
        ),
    }
}
