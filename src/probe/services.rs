//! GPU services from files first: is the fabric manager (or the persistence daemon) installed
//! (a systemd unit, the daemon's binary, a dpkg record) and is it running (its process in
//! `/proc`, else `systemctl is-active` when one is on PATH, run with the host's deadline).
//! Each answer keeps the evidence it came from, so a finding can say "not installed" rather
//! than "not running" when that is what the files show.

use crate::host::Host;
use crate::report::Service;

/// One service: its unit name, the names its daemon runs under, and the dpkg package prefix
/// that ships it (Ubuntu's `nvidia-fabricmanager-<branch>`; the persistence daemon comes with
/// `nvidia-compute-utils-<branch>` there and as `nvidia-persistenced` from NVIDIA's repository).
struct Known {
    unit: &'static str,
    daemons: &'static [&'static str],
    packages: &'static [&'static str],
}

const KNOWN: [Known; 2] = [
    Known {
        unit: "nvidia-fabricmanager",
        daemons: &["nv-fabricmanager", "nvidia-fabricmanager"],
        packages: &["nvidia-fabricmanager", "cuda-drivers-fabricmanager"],
    },
    Known {
        unit: "nvidia-persistenced",
        daemons: &["nvidia-persistenced"],
        packages: &["nvidia-persistenced", "nvidia-compute-utils"],
    },
];

const UNIT_DIRS: [&str; 4] = [
    "/etc/systemd/system",
    "/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/run/systemd/system",
];

const BIN_DIRS: [&str; 4] = ["/usr/bin", "/usr/sbin", "/bin", "/sbin"];

const DPKG_STATUS: &str = "/var/lib/dpkg/status";

/// Installed dpkg packages as (name, version), from `/var/lib/dpkg/status`.
#[must_use]
pub(crate) fn dpkg_installed(status: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for stanza in status.split("\n\n") {
        let field = |key: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(key).map(|v| v.trim().to_string()))
        };
        let installed = field("Status:").is_some_and(|s| s.ends_with(" installed"));
        if let (true, Some(name)) = (installed, field("Package:")) {
            out.push((name, field("Version:").unwrap_or_default()));
        }
    }
    out
}

/// Installed pacman packages as (name, version-release): pacman keeps one folder per package in
/// `/var/lib/pacman/local`, named `<name>-<version>-<release>`.
#[must_use]
pub(crate) fn pacman_installed(host: &Host) -> Vec<(String, String)> {
    host.fs
        .read_dir("/var/lib/pacman/local")
        .into_iter()
        .filter_map(|e| {
            let mut parts = e.name.rsplitn(3, '-');
            let release = parts.next()?;
            let version = parts.next()?;
            let name = parts.next()?;
            Some((name.to_string(), format!("{version}-{release}")))
        })
        .collect()
}

/// Whether a dpkg package name is `prefix` or `prefix-<branch>`.
fn package_matches(name: &str, prefix: &str) -> bool {
    name == prefix
        || name
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|b| !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()))
}

/// Every known service. `daemons` is the GPU daemons seen in `/proc` (null when `/proc` could
/// not be listed); `in_container` turns process and systemctl answers off, since both would
/// speak of the container, not of the host that runs the service.
#[must_use]
pub(crate) fn probe(
    host: &Host,
    daemons: Option<&Vec<String>>,
    in_container: bool,
) -> Vec<Service> {
    let dpkg = host.fs.read_opt(DPKG_STATUS).map(|t| dpkg_installed(&t));
    let looked = dpkg.is_some() || UNIT_DIRS.iter().any(|d| host.fs.is_dir(d));
    let systemctl = if in_container {
        None
    } else {
        host.which("systemctl")
    };
    KNOWN
        .iter()
        .map(|k| {
            let mut evidence = Vec::new();
            let unit_file = format!("{}.service", k.unit);
            let units = UNIT_DIRS.iter().map(|d| format!("{d}/{unit_file}"));
            evidence.extend(present(host, units).map(|p| format!("unit: {p}")));
            let binaries = BIN_DIRS
                .iter()
                .flat_map(|d| k.daemons.iter().map(move |n| format!("{d}/{n}")));
            evidence.extend(present(host, binaries).map(|p| format!("binary: {p}")));
            if let Some(pkgs) = &dpkg {
                evidence.extend(
                    pkgs.iter()
                        .filter(|(n, _)| k.packages.iter().any(|p| package_matches(n, p)))
                        .map(|(n, v)| format!("dpkg: {n} {v}")),
                );
            }
            let installed = if evidence.is_empty() {
                if looked {
                    evidence.push(format!(
                        "not installed: no {unit_file} in {}, no {} binary{}",
                        UNIT_DIRS.join(", "),
                        k.daemons.join("/"),
                        if dpkg.is_some() {
                            format!(", no {}* package in {DPKG_STATUS}", k.packages[0])
                        } else {
                            String::new()
                        }
                    ));
                    Some(false)
                } else {
                    None
                }
            } else {
                Some(true)
            };
            let running = daemons.filter(|_| !in_container).and_then(|d| {
                d.iter()
                    .find(|p| k.daemons.contains(&p.as_str()))
                    .map(|p| format!("process: {p} in /proc"))
            });
            let active = if let Some(line) = running {
                evidence.push(line);
                Some(true)
            } else if let Some(answer) = systemctl
                .as_deref()
                .and_then(|s| is_active(host, s, &unit_file))
            {
                evidence.push(format!("systemctl is-active {}: {}", k.unit, answer.1));
                Some(answer.0)
            } else if in_container {
                None
            } else if daemons.is_some() {
                evidence.push(format!("process: no {} in /proc", k.daemons[0]));
                Some(false)
            } else {
                None
            };
            // Why an installed fabric manager is not running is in its journal (its start
            // script's checks write there); asked only then, and never for a container's view.
            let journal = match (&systemctl, installed, active) {
                (Some(_), Some(true), Some(false)) if k.unit == "nvidia-fabricmanager" => {
                    journal_errors(host, &unit_file)
                }
                _ => Vec::new(),
            };
            Service {
                name: k.unit.to_string(),
                installed,
                active,
                evidence,
                journal,
            }
        })
        .collect()
}

/// The paths that exist, each file once: `/lib` and `/bin` are links to `/usr` on merged-/usr
/// systems, so the same unit or binary shows under two names.
fn present(host: &Host, paths: impl Iterator<Item = String>) -> impl Iterator<Item = String> {
    let mut seen = std::collections::BTreeSet::new();
    paths
        .filter(|p| host.fs.exists(p))
        .filter(move |p| {
            let real = host
                .fs
                .canonical(std::path::Path::new(p), true)
                .unwrap_or_else(|_| std::path::PathBuf::from(p));
            seen.insert(real)
        })
        .collect::<Vec<_>>()
        .into_iter()
}

/// The last error lines of `journalctl -u <unit>` (its newest 200 lines, message text only),
/// run through the host's command runner with its deadline; empty when there is no journalctl,
/// it fails or times out.
fn journal_errors(host: &Host, unit: &str) -> Vec<String> {
    let Some(journalctl) = host.which("journalctl") else {
        return Vec::new();
    };
    match host.run(
        &journalctl,
        &["-u", unit, "-n", "200", "--no-pager", "-q", "-o", "cat"],
    ) {
        Ok(out) if !out.timed_out && out.success() => {
            super::kernel::fabric_manager_errors(&out.stdout)
        }
        _ => Vec::new(),
    }
}

/// `systemctl is-active <unit>`: "active" is running; "inactive", "failed" and the unknown-unit
/// answers are not. None when systemctl gave nothing usable (no systemd as PID 1, a timeout).
fn is_active(host: &Host, systemctl: &std::path::Path, unit: &str) -> Option<(bool, String)> {
    let out = host.run(systemctl, &["is-active", unit]).ok()?;
    if out.timed_out {
        return None;
    }
    let word = out.stdout.lines().next().unwrap_or("").trim().to_string();
    match word.as_str() {
        "active" | "reloading" | "activating" => Some((true, word)),
        "inactive" | "failed" | "deactivating" | "unknown" => Some((false, word)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dpkg_records_that_are_installed_only() {
        let status = "Package: nvidia-fabricmanager-550\nStatus: install ok installed\n\
                      Version: 550.54.15-1\n\nPackage: nvidia-fabricmanager-535\n\
                      Status: deinstall ok config-files\nVersion: 535.1-1\n";
        assert_eq!(
            dpkg_installed(status),
            [(
                "nvidia-fabricmanager-550".to_string(),
                "550.54.15-1".to_string()
            )]
        );
        assert!(package_matches(
            "nvidia-fabricmanager-550",
            "nvidia-fabricmanager"
        ));
        assert!(!package_matches(
            "nvidia-fabricmanager-dev-550",
            "nvidia-fabricmanager"
        ));
    }
}
