//! Who the user is, as Linux files say: `/proc/self/status` (`Uid:`, `Gid:`, `Groups:`),
//! `/etc/passwd` and `/etc/group`. Whether the user may open `/dev/kfd` and the render nodes
//! (the `render` and `video` groups) is decided from these.

/// The ids of `/proc/<pid>/status`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessIds {
    /// The real uid (the first of `Uid:`).
    pub uid: Option<u32>,
    /// The real gid (the first of `Gid:`).
    pub gid: Option<u32>,
    /// Supplementary groups (`Groups:`).
    pub groups: Vec<u32>,
}

/// Parses `/proc/<pid>/status`.
#[must_use]
pub fn process_ids(text: &str) -> ProcessIds {
    let mut out = ProcessIds::default();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let numbers = || {
            rest.split_whitespace()
                .filter_map(|n| n.parse::<u32>().ok())
        };
        match key {
            "Uid" => out.uid = numbers().next(),
            "Gid" => out.gid = numbers().next(),
            "Groups" => out.groups = numbers().collect(),
            _ => {}
        }
    }
    out
}

/// `(name, id)` of each `name:x:id:...` line of `/etc/group` or `/etc/passwd` (the id is the
/// third field in both).
#[must_use]
pub fn id_names(text: &str) -> Vec<(String, u32)> {
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?.trim();
            let id = fields.nth(1)?.trim().parse().ok()?;
            (!name.is_empty()).then(|| (name.to_string(), id))
        })
        .collect()
}

/// The members `/etc/group` lists for a group (its fourth field).
#[must_use]
pub fn group_members(text: &str, group: &str) -> Vec<String> {
    text.lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&group)).then(|| {
                fields
                    .get(3)
                    .map(|m| {
                        m.split(',')
                            .map(str::trim)
                            .filter(|m| !m.is_empty())
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default()
            })
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_gives_uid_gid_and_supplementary_groups() {
        let ids = process_ids(
            "Name:\tpython3\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nGroups:\t4 24 27 30 46 100 118 1000 \n",
        );
        assert_eq!(ids.uid, Some(1000));
        assert_eq!(ids.gid, Some(1000));
        assert_eq!(ids.groups, [4, 24, 27, 30, 46, 100, 118, 1000]);
        assert_eq!(process_ids("Groups:\t\n").groups, Vec::<u32>::new());
    }

    #[test]
    fn group_lines_give_names_ids_and_members() {
        let group = "root:x:0:\nvideo:x:44:alice\n# comment\nrender:x:109:\nbroken\n";
        assert_eq!(
            id_names(group),
            [
                ("root".to_string(), 0),
                ("video".to_string(), 44),
                ("render".to_string(), 109)
            ]
        );
        assert_eq!(group_members(group, "video"), ["alice"]);
        assert!(group_members(group, "render").is_empty());
    }
}
