//! The system steps of a plan, through NVIDIA's apt repository: nouveau off, the cuda-keyring,
//! the driver, the toolkit with its PATH, cuDNN and NCCL. Package names and paths come from
//! `install.toml` (facts of compat-cuda.md sections 3.2 and 5). Pure.

use crate::manifest::{AptPackage, Manifests};

use super::cmd::{Check, Command, Guard, Word, words};
use super::common::{RepoPackage, apt_install, apt_update};
use super::decide::{Decision, DriverPlan};
use super::machine::Machine;
use super::target::Via;
use super::{Step, StepKind};

/// The file this plan writes for PATH: gpu-doctor's own, so it never
/// overwrites a file someone else keeps in /etc/profile.d.
pub(super) const PROFILE_FILE: &str = "/etc/profile.d/gpu-doctor-cuda.sh";

/// From this branch on, NVIDIA's Ubuntu packages hold a branch with the
/// `nvidia-driver-pinning-<branch>` package ("580 and later conventions", install.toml).
const PINNING_FROM: u64 = 580;

/// The last branch known to have `cuda-drivers-<branch>` / `nvidia-open-<branch>` meta-packages;
/// whether they continue after 580 is a gap in install.toml, so newer branches install the
/// unversioned meta-package held by the pinning package.
const BRANCH_METAS_UNTIL: u64 = 580;

/// A package name from install.toml, or `None` when the id (or a placeholder value) is
/// missing: then the step that needs it is left out rather than given a made-up name.
fn package(m: &Manifests, id: &str, values: &[(&str, &str)]) -> Option<String> {
    m.install.apt_package(id)?.fill(values).ok()
}

/// `a is` / `a and b are`, for skip messages.
fn are(packages: &[String]) -> String {
    match packages {
        [one] => format!("{one} is"),
        many => format!("{} are", many.join(" and ")),
    }
}

fn installed_all(packages: &[String]) -> Check {
    Check::All(
        packages
            .iter()
            .map(|p| Check::DpkgInstalled(p.clone()))
            .collect(),
    )
}

/// The apt steps of a decision, in the order they must run.
#[must_use]
pub(super) fn steps(machine: &Machine, m: &Manifests, d: &Decision<'_>) -> Vec<Step> {
    let mut out = Vec::new();
    let Some(apt) = &d.apt else {
        return out;
    };
    if d.nouveau {
        out.push(nouveau(m));
    }
    let driver = matches!(d.driver, DriverPlan::Install { .. });
    let system_stack = d.via == Via::Apt && d.toolkit.is_some();
    if !driver && !system_stack {
        return out;
    }
    out.push(keyring(m, &apt.repo.url));
    out.push(Step {
        kind: StepKind::AptUpdate,
        title: "Read the package lists, NVIDIA's included".to_string(),
        why: "apt learns what the repository just added offers. Runs every time: refreshing the \
              lists changes nothing installed."
            .to_string(),
        guards: Vec::new(),
        commands: vec![apt_update()],
        needs_root: true,
        reboot: false,
        serves: Vec::new(),
    });
    if let DriverPlan::Install {
        row,
        open,
        replaces,
        why,
        flavour_why,
    } = &d.driver
    {
        out.extend(prerequisites(machine, m, &apt.os));
        out.extend(driver_step(
            machine,
            m,
            row.branch,
            *open,
            replaces.as_deref(),
            &format!("{why}. It uses {}", flavour_why.trim_end_matches('.')),
        ));
    }
    if system_stack && let Some(cuda) = &d.toolkit {
        let major = cuda.major().to_string();
        let minor = cuda.minor().to_string();
        let values = [("major", major.as_str()), ("minor", minor.as_str())];
        out.extend(toolkit(m, &values, &cuda.major_minor()));
        out.extend(profile(m, &values));
        if let Some(cudnn) = &d.cudnn {
            out.extend(cudnn_step(m, &values, cudnn.pin.as_deref()));
        }
        if d.nccl {
            out.extend(nccl(m, &values, &cuda.major_minor()));
        }
    }
    out
}

fn nouveau(m: &Manifests) -> Step {
    let paths = &m.install.paths;
    let first = paths
        .nouveau_blacklist_lines
        .first()
        .cloned()
        .unwrap_or_default();
    Step {
        kind: StepKind::NouveauOff,
        title: "Keep nouveau from loading".to_string(),
        why: format!(
            "nouveau holds the GPU, and the NVIDIA driver cannot load while it does. Blacklisting \
             it in {} and rebuilding the initramfs keeps it away from the next boot \
             (install.toml paths; compat-cuda.md 5.6).",
            paths.nouveau_blacklist_file
        ),
        guards: vec![Guard::skip(
            Check::FileHasLine {
                path: paths.nouveau_blacklist_file.clone(),
                line: first,
            },
            format!("nouveau is blacklisted in {}", paths.nouveau_blacklist_file),
        )],
        commands: vec![
            Command::WriteFile {
                path: paths.nouveau_blacklist_file.clone(),
                lines: paths.nouveau_blacklist_lines.clone(),
            },
            Command::Run {
                argv: words(["update-initramfs", "-u"]),
                sudo: true,
            },
        ],
        needs_root: true,
        reboot: true,
        serves: Vec::new(),
    }
}

fn keyring(m: &Manifests, repo_url: &str) -> Step {
    let k = &m.install.apt_keyring;
    RepoPackage {
        kind: StepKind::CudaKeyring,
        title: "Trust NVIDIA's CUDA repository with the cuda-keyring package".to_string(),
        why: format!(
            "apt must trust {repo_url}. The {} package installs the repository's signing key \
             ({}) as {} together with its sources entry. It replaces the old `apt-key adv \
             --fetch-keys` recipes: apt-key is deprecated and gone after Ubuntu 22.04 \
             (install.toml apt_keyring; compat-cuda.md 5.1).",
            k.package, k.deb_signing_key_full, k.keyring_path
        ),
        deb: k.deb.clone(),
        folder: repo_url.to_string(),
        installed: Check::DpkgInstalled(k.package.clone()),
        installed_says: format!("{} is installed", k.package),
        install_with: &["dpkg", "-i"],
        then_update: false,
    }
    .step()
}

/// Kernel headers and a compiler: DKMS builds the driver's modules with them. The headers are
/// the running kernel's: named when this machine runs the planned Ubuntu release with an Ubuntu
/// kernel, else taken from `uname -r` when the script runs (as NVIDIA's guide writes it), so
/// no plan names the kernel of another distribution.
fn prerequisites(machine: &Machine, m: &Manifests, os: &str) -> Option<Step> {
    let this_system = machine
        .os_id
        .as_deref()
        .zip(machine.os_version.as_deref())
        .is_some_and(|(id, v)| format!("{id}-{v}") == os);
    let kernel = machine
        .kernel_release
        .as_deref()
        .filter(|k| this_system && ubuntu_kernel(k));
    let tools = package(m, "build-essential", &[])?;
    let (title, headers, installed) = match kernel {
        Some(kernel) => {
            let headers = package(m, "linux-headers", &[("kernel", kernel)])?;
            (
                format!("Kernel headers for {kernel} and build tools"),
                Word::lit(headers.clone()),
                Check::DpkgInstalled(headers),
            )
        }
        None => {
            // The pattern is checked with a placeholder kernel; the script fills in its own.
            let pattern = package(m, "linux-headers", &[("kernel", "")])?;
            (
                "Kernel headers for the running kernel and build tools".to_string(),
                Word::Join(vec![Word::lit(pattern), Word::Var("kernel")]),
                Check::RunningKernelHeaders,
            )
        }
    };
    let mut argv = words(["apt-get", "install", "-y"]);
    argv.push(headers);
    argv.push(Word::lit(tools.clone()));
    Some(Step {
        kind: StepKind::DriverPrerequisites,
        title,
        why: "DKMS compiles the driver's kernel modules for the running kernel with these \
              (install.toml; compat-cuda.md 5.2)."
            .to_string(),
        guards: vec![Guard::skip(
            Check::All(vec![installed, Check::DpkgInstalled(tools)]),
            "the headers and build tools are installed",
        )],
        commands: vec![Command::Run { argv, sudo: true }],
        needs_root: true,
        reboot: false,
        serves: Vec::new(),
    })
}

/// Whether a kernel release is one of Ubuntu's (`6.8.0-48-generic`, `5.15.0-1063-aws`):
/// `X.Y.Z-N-flavour`. A Fedora (`6.8.9-300.fc40.x86_64`) or WSL kernel is not.
fn ubuntu_kernel(release: &str) -> bool {
    let mut parts = release.splitn(3, '-');
    let (Some(version), Some(abi), Some(flavour)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    version.split('.').count() == 3
        && version
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && !abi.is_empty()
        && abi.bytes().all(|b| b.is_ascii_digit())
        && !flavour.is_empty()
        && flavour
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The driver packages for a branch and flavour: the pinning package first from 580 on, then
/// the branch's meta-package (or the unversioned one the pin holds, after 580).
pub(super) fn driver_packages(m: &Manifests, branch: u64, open: bool) -> Option<Vec<String>> {
    let b = branch.to_string();
    let values = [("branch", b.as_str())];
    let mut out = Vec::new();
    if branch >= PINNING_FROM {
        out.push(package(m, "nvidia-driver-pinning", &values)?);
    }
    let id = match (open, branch <= BRANCH_METAS_UNTIL) {
        (true, true) => "nvidia-open-branch",
        (true, false) => "nvidia-open",
        (false, true) => "cuda-drivers-branch",
        (false, false) => "cuda-drivers",
    };
    let flavour = if open { "open" } else { "proprietary" };
    // The flavour row must list the package: install.toml is the authority on which is which.
    if !m
        .install
        .driver_flavor(flavour)
        .is_some_and(|f| f.packages.iter().any(|p| p == id))
    {
        return None;
    }
    out.push(package(m, id, &values)?);
    Some(out)
}

/// Ubuntu-archive driver packages of the working branch: mixing them with NVIDIA's repository
/// causes "Driver/library version mismatch" (compat-cuda.md 5.4).
fn ubuntu_archive_drivers(m: &Manifests, machine: &Machine) -> Vec<String> {
    let Some(branch) = machine.working_driver().map(|v| v.major().to_string()) else {
        return Vec::new();
    };
    [
        "ubuntu-nvidia-driver",
        "ubuntu-nvidia-driver-open",
        "ubuntu-nvidia-driver-server",
        "ubuntu-nvidia-driver-server-open",
    ]
    .iter()
    .filter_map(|id| package(m, id, &[("branch", branch.as_str())]))
    .collect()
}

fn driver_step(
    machine: &Machine,
    m: &Manifests,
    branch: u64,
    open: bool,
    replaces: Option<&str>,
    why: &str,
) -> Option<Step> {
    let packages = driver_packages(m, branch, open)?;
    // The flavour row must exist: install.toml is the authority on which is which.
    m.install
        .driver_flavor(if open { "open" } else { "proprietary" })?;
    let pin = match (branch >= PINNING_FROM, branch > BRANCH_METAS_UNTIL) {
        (true, true) => format!(
            " The pinning package keeps apt on R{branch}; install it before the driver. \
             Per-branch meta-packages are known only up to R{BRANCH_METAS_UNTIL}, so the plain \
             meta-package is installed and the pin holds it on R{branch} (install.toml \
             nvidia-driver-pinning and its gaps)."
        ),
        (true, false) => format!(
            " The pinning package keeps apt on R{branch}; install it before the driver \
             (install.toml nvidia-driver-pinning)."
        ),
        _ => String::new(),
    };
    let replacing = replaces.map_or_else(String::new, |r| format!(" It replaces {r}."));
    let mut guards = vec![Guard::skip(
        installed_all(&packages),
        format!("{} installed", are(&packages)),
    )];
    let archive = ubuntu_archive_drivers(m, machine);
    if !archive.is_empty() {
        guards.push(Guard::fail(
            Check::Any(archive.iter().cloned().map(Check::DpkgInstalled).collect()),
            format!(
                "the working driver comes from Ubuntu's archive ({}); installing NVIDIA's \
                 packages next to it causes 'Driver/library version mismatch'. Remove it with \
                 sudo apt-get purge <package> (or upgrade it with ubuntu-drivers), then run this \
                 plan again.",
                archive.join(", ")
            ),
        ));
    }
    Some(Step {
        kind: StepKind::Driver,
        title: format!("NVIDIA driver R{branch} ({})", packages.join(", ")),
        why: format!(
            "R{branch} runs what this plan installs: {why}.{pin}{replacing} \
             The new driver loads after a reboot (cuda.toml driver_branch; install.toml \
             driver_flavor)."
        ),
        guards,
        commands: packages
            .iter()
            .map(|p| apt_install(std::slice::from_ref(p)))
            .collect(),
        needs_root: true,
        reboot: true,
        serves: Vec::new(),
    })
}

fn toolkit(m: &Manifests, values: &[(&str, &str)], cuda: &str) -> Option<Step> {
    let row: &AptPackage = m.install.apt_package("cuda-toolkit-minor")?;
    let name = row.fill(values).ok()?;
    let root = crate::manifest::fill(&m.install.paths.toolkit_root, values).unwrap_or_default();
    // A toolkit of this release installed another way (NVIDIA's runfile, a tarball, an image
    // that copied it) is the same release in the same folder: apt would only write over it.
    let mut present = vec![Check::DpkgInstalled(name.clone())];
    if !root.is_empty() {
        present.push(Check::Executable(format!("{root}/bin/nvcc")));
    }
    Some(Step {
        kind: StepKind::CudaToolkit,
        title: format!("CUDA toolkit {cuda} ({name})"),
        why: format!(
            "{} It goes to {root} (install.toml cuda-toolkit-minor, paths).",
            row.meaning,
        ),
        guards: vec![Guard::skip(
            Check::Any(present),
            format!("{name} is installed, or CUDA {cuda} already is in {root}"),
        )],
        commands: vec![apt_install(&[name])],
        needs_root: true,
        reboot: false,
        serves: Vec::new(),
    })
}

/// PATH for login shells, in NVIDIA's "environment setup" form; no LD_LIBRARY_PATH (see why).
fn profile(m: &Manifests, values: &[(&str, &str)]) -> Option<Step> {
    let paths = &m.install.paths;
    let bin = crate::manifest::fill(&paths.toolkit_bin, values).ok()?;
    let lib = crate::manifest::fill(&paths.toolkit_lib, values).ok()?;
    let path_line = format!("export PATH={bin}${{PATH:+:${{PATH}}}}");
    Some(Step {
        kind: StepKind::CudaEnvironment,
        title: format!("Put {bin} on PATH for every login shell"),
        why: format!(
            "nvcc and the CUDA tools live in {bin}. NVIDIA's environment setup also puts {lib} on \
             LD_LIBRARY_PATH, which runfile installs need; the deb packages register their \
             libraries with the loader themselves (/etc/ld.so.conf.d/000_cuda.conf and \
             987_cuda-13.conf on the real H200 machine), and a toolkit on LD_LIBRARY_PATH \
             would shadow the libraries every pip wheel brings (library-path-shadowing), so \
             the plan sets PATH only. The file is gpu-doctor's own: {PROFILE_FILE} \
             (compat-cuda.md 5.5)."
        ),
        guards: vec![Guard::skip(
            Check::FileHasLine {
                path: PROFILE_FILE.to_string(),
                line: path_line.clone(),
            },
            format!("{PROFILE_FILE} sets PATH"),
        )],
        commands: vec![Command::WriteFile {
            path: PROFILE_FILE.to_string(),
            lines: vec![
                "# Written by gpu-doctor plan: the CUDA toolkit for login shells.".to_string(),
                path_line,
            ],
        }],
        needs_root: true,
        reboot: false,
        serves: Vec::new(),
    })
}

fn cudnn_step(m: &Manifests, values: &[(&str, &str)], pin: Option<&str>) -> Option<Step> {
    let runtime = package(m, "libcudnn9-cuda", values)?;
    let dev = package(m, "libcudnn9-dev-cuda", values)?;
    let packages = vec![runtime.clone(), dev];
    let (guard, command, pinned) = match pin {
        Some(line) => (
            Check::DpkgVersion {
                package: runtime.clone(),
                prefix: format!("{line}."),
                suffix: String::new(),
            },
            Command::AptInstallMatching {
                packages: packages.clone(),
                prefix: format!("{line}."),
                suffix: String::new(),
            },
            format!(
                " Newer cuDNN releases dropped these GPUs or this CUDA, so it stays on {line} \
                 (cudnn.toml)."
            ),
        ),
        None => (
            installed_all(&packages),
            apt_install(&packages),
            String::new(),
        ),
    };
    Some(Step {
        kind: StepKind::Cudnn,
        title: format!("cuDNN 9 ({})", packages.join(", ")),
        why: format!(
            "cuDNN for programs built against the system toolkit; pip frameworks bring their own \
             (install.toml libcudnn9-cuda, libcudnn9-dev-cuda; compat-cuda.md 3.2).{pinned}"
        ),
        guards: vec![Guard::skip(guard, format!("{runtime} is installed"))],
        commands: vec![command],
        needs_root: true,
        reboot: false,
        serves: Vec::new(),
    })
}

/// NCCL built for the toolkit's CUDA minor: the plain `libnccl2` would take the newest build,
/// made for the newest CUDA, which this driver may not run.
fn nccl(m: &Manifests, values: &[(&str, &str)], cuda: &str) -> Option<Step> {
    let runtime = m.install.apt_package("libnccl2")?;
    let dev = m.install.apt_package("libnccl-dev")?;
    let (runtime_name, version_pattern) = runtime.name_and_version_pattern();
    let (dev_name, _) = dev.name_and_version_pattern();
    let mut with_version: Vec<(&str, &str)> = values.to_vec();
    with_version.push(("version", ""));
    let suffix = crate::manifest::fill(version_pattern?, &with_version).ok()?;
    Some(Step {
        kind: StepKind::Nccl,
        title: format!("NCCL for CUDA {cuda} ({runtime_name}, {dev_name})"),
        why: format!(
            "NCCL for multi-GPU programs built against the system toolkit. NVIDIA's repository \
             has a build per CUDA minor (versions ending in {suffix}); the newest of those is \
             taken (install.toml libnccl2, libnccl-dev; compat-cuda.md 3.2)."
        ),
        guards: vec![Guard::skip(
            Check::DpkgVersion {
                package: runtime_name.to_string(),
                prefix: String::new(),
                suffix: suffix.clone(),
            },
            format!("{runtime_name} for CUDA {cuda} is installed"),
        )],
        commands: vec![Command::AptInstallMatching {
            packages: vec![runtime_name.to_string(), dev_name.to_string()],
            prefix: String::new(),
            suffix,
        }],
        needs_root: true,
        reboot: false,
        serves: Vec::new(),
    })
}
