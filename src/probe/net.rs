//! Network interfaces, read from `/sys/class/net`: which ones exist, whether they are up, and
//! whether a device backs them. NCCL chooses among them when `NCCL_SOCKET_IFNAME` is unset.

use crate::host::Host;
use crate::report::NetInterface;

const CLASS_NET: &str = "/sys/class/net";

/// Every interface, sorted by name; `None` when `/sys/class/net` is not there to list (absent
/// is not "no interfaces": a fixture or a non-Linux root simply does not say).
#[must_use]
pub(crate) fn interfaces(host: &Host) -> Option<Vec<NetInterface>> {
    let fs = &host.fs;
    if !fs.is_dir(CLASS_NET) {
        return None;
    }
    let read = |path: &std::path::Path| {
        fs.read_opt(path)
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
    };
    Some(
        fs.read_dir(CLASS_NET)
            .into_iter()
            .map(|entry| NetInterface {
                operstate: read(&entry.path.join("operstate")),
                link_type: read(&entry.path.join("type")).map(|t| link_type(&t)),
                // The `device` link exists only for interfaces a bus device provides; `lstat`
                // is enough, and works for fixtures that hold a plain folder there.
                has_device: fs.symlink_metadata(&entry.path.join("device")).is_ok(),
                name: entry.name,
            })
            .collect(),
    )
}

/// The name of an ARPHRD link type (`include/uapi/linux/if_arp.h`): 1 Ethernet, 32 InfiniBand
/// (IP over IB), 772 loopback; other numbers are kept as `arphrd-N`.
fn link_type(number: &str) -> String {
    match number {
        "1" => "ethernet".to_string(),
        "32" => "infiniband".to_string(),
        "772" => "loopback".to_string(),
        other => format!("arphrd-{other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{Env, Host};
    use std::time::Duration;

    fn host(root: &std::path::Path) -> Host {
        Host::rooted(
            root,
            Env::from_pairs(Vec::<(String, String)>::new()),
            Duration::from_secs(1),
        )
    }

    #[test]
    fn reads_state_type_and_device_of_each_interface() {
        let dir = tempfile::tempdir().unwrap();
        let net = dir.path().join("sys/class/net");
        for (name, state, kind, device) in [
            ("lo", "unknown", "772", false),
            ("eth0", "up", "1", true),
            ("ib0", "up", "32", true),
            ("docker0", "down", "1", false),
        ] {
            std::fs::create_dir_all(net.join(name)).unwrap();
            std::fs::write(net.join(name).join("operstate"), format!("{state}\n")).unwrap();
            std::fs::write(net.join(name).join("type"), format!("{kind}\n")).unwrap();
            if device {
                std::fs::create_dir_all(dir.path().join("sys/devices/nic")).unwrap();
                std::os::unix::fs::symlink("../../../devices/nic", net.join(name).join("device"))
                    .unwrap();
            }
        }
        let found = interfaces(&host(dir.path())).unwrap();
        let names: Vec<&str> = found.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["docker0", "eth0", "ib0", "lo"]);
        assert_eq!(
            found[2],
            NetInterface {
                name: "ib0".into(),
                operstate: Some("up".into()),
                link_type: Some("infiniband".into()),
                has_device: true,
            }
        );
        assert!(!found[0].has_device);
        assert_eq!(found[3].link_type.as_deref(), Some("loopback"));
    }

    #[test]
    fn no_sysfs_is_unknown_not_empty() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(interfaces(&host(dir.path())), None);
        std::fs::create_dir_all(dir.path().join("sys/class/net")).unwrap();
        assert_eq!(interfaces(&host(dir.path())), Some(Vec::new()));
    }
}
