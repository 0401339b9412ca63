//! The distribution's own words for a driver step: which package names a branch or a module
//! flavour, and the command that installs it, so that a fix never says `ubuntu-drivers` on a
//! machine that is not Ubuntu. Pure: reads `host.os_id` of the report only.
//!
//! Package names, each from the distribution's own packaging or its users' reports:
//! - Ubuntu: `nvidia-driver-<branch>` and `nvidia-driver-<branch>-open`
//!   (NVIDIA/open-gpu-kernel-modules#872: "install a driver like nvidia-driver-570-open").
//! - Fedora (RPM Fusion): `akmod-nvidia`, `akmod-nvidia-open` (NVIDIA/open-gpu-kernel-modules#700,
//!   `rpm -qa` there); the legacy branch `akmod-nvidia-580xx xorg-x11-drv-nvidia-580xx
//!   xorg-x11-drv-nvidia-580xx-cuda` (fady-saied/Nvidia-Fedora-Guide#20), `390xx` likewise
//!   (negativo17/nvidia-driver#60).
//! - Arch: `nvidia-open-dkms` replaces `nvidia-dkms` with R590; Maxwell and Pascal owners move to
//!   the AUR's `nvidia-580xx-dkms` (Arch Linux news, 2025-12: "NVIDIA 590 driver drops Pascal
//!   support; main packages switch to open kernel modules").
//! - NixOS: `hardware.nvidia.open`, and `hardware.nvidia.package =
//!   config.boot.kernelPackages.nvidiaPackages.legacy_580` (NixOS/nixos-hardware#1828, #1843).
//!
//! - The Red Hat family (RHEL, Rocky Linux, AlmaLinux, CentOS Stream, Oracle Linux): NVIDIA's
//!   CUDA repository, by package on EL10 (`nvidia-open`, `cuda-drivers`, `cuda-drivers-580`)
//!   and by `nvidia-driver` module stream on EL8 and EL9: `install.toml`'s `[[rpm_driver]]`
//!   rows, each with its source.
//!
//! - Debian: the driver from its `non-free` component, built by DKMS: `nvidia-driver` with
//!   `nvidia-kernel-dkms` (proprietary) or `nvidia-open-kernel-dkms` (open), the running
//!   kernel's headers and `firmware-misc-nonfree` (linux-surface/linux-surface#1884, Debian 13:
//!   `apt install nvidia-driver firmware-misc-nonfree linux-headers-$(uname -r) dkms`, and
//!   dpkg's "nvidia-driver depends on nvidia-kernel-dkms | nvidia-kernel-550.163.01 |
//!   nvidia-open-kernel-550.163.01"; Debian wiki NvidiaGraphicsDrivers). NVIDIA's CUDA
//!   repository for Debian names the open flavour `nvidia-kernel-open-dkms`
//!   (metal-stack/metal-images#399). Debian's DKMS builds the module as `nvidia-current.ko`.
//!
//! - Talos Linux: no package manager; NVIDIA's modules and user-space come as system extensions
//!   baked into the node's image (siderolabs/extensions `nvidia-gpu/`:
//!   `nonfree-kmod-nvidia-{production,lts}` for the proprietary modules,
//!   `nvidia-open-gpu-kernel-modules-{production,lts}` for the open ones, each with
//!   `nvidia-container-toolkit-{production,lts}`; the `lts` tier is the R580 branch, the
//!   production tier R595 in 2026). cozystack/cozystack#3563: "On Blackwell (GB202) only
//!   `siderolabs/nvidia-open-gpu-kernel-modules-production` works", the modules loaded through
//!   `machine.kernel.modules`.
//! - Gentoo: `x11-drivers/nvidia-drivers`, whose `kernel-open` USE flag picks the flavour (its
//!   ebuild's README: "GTX 50xx (blackwell) and higher require it to be enabled ... Older cards
//!   require it to be disabled"), and a legacy branch is kept by masking the newer ones, as
//!   the ebuild itself advises ("echo '>=x11-drivers/nvidia-drivers-N' >
//!   /etc/portage/package.mask/nvidia-drivers ... then downgrade to a legacy branch";
//!   gentoo/gentoo x11-drivers/nvidia-drivers/nvidia-drivers-570.169.ebuild).
//!
//! Anything else gets words that name the branch and flavour but no package.

use crate::manifest::{InstallTable, RpmDriver};
use crate::report::Report;

/// The driver branch of Debian 13's own `nvidia-driver` (550.163.01-2 in trixie's `non-free`:
/// linux-surface/linux-surface#1884's `apt install nvidia-driver` output).
const DEBIAN_13_BRANCH: u64 = 550;

/// A distribution family whose packaging gpu-doctor knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Distro {
    Ubuntu,
    Fedora,
    Arch,
    Nixos,
    /// Fedora booted from an rpm-ostree deployment (Silverblue, Kinoite): RPM Fusion's
    /// packages, layered with `rpm-ostree`, since `dnf` cannot change the read-only `/usr`.
    FedoraAtomic,
    /// Universal Blue's images (Aurora, Bazzite, Bluefin: os-release `ID=<image>`,
    /// `ID_LIKE="fedora"`, written by each image's build script): the NVIDIA module is built
    /// into the image, so a driver or flavour change is a rebase to another image variant
    /// (ublue-os/aurora#1924, ublue-os/bazzite-dx#150).
    UniversalBlue,
    /// RHEL and its rebuilds: NVIDIA's CUDA repository, not RPM Fusion.
    Rhel,
    /// Debian itself (not Ubuntu, not images that only say `ID_LIKE=debian`).
    Debian,
    /// Talos Linux: drivers are system extensions of the node's image.
    Talos,
    Gentoo,
    Other,
}

/// The family of the report's `/etc/os-release` ID.
pub(crate) fn of(report: &Report) -> Distro {
    match report.host.os_id.as_deref().unwrap_or("") {
        "ubuntu" | "pop" | "linuxmint" => Distro::Ubuntu,
        "fedora" | "nobara" | "ultramarine" if report.host.ostree => Distro::FedoraAtomic,
        "fedora" | "nobara" | "ultramarine" => Distro::Fedora,
        "aurora" | "bazzite" | "bluefin" => Distro::UniversalBlue,
        "arch" | "manjaro" | "endeavouros" | "cachyos" | "garuda" => Distro::Arch,
        "nixos" => Distro::Nixos,
        "talos" => Distro::Talos,
        "gentoo" => Distro::Gentoo,
        "rhel" | "rocky" | "almalinux" | "centos" | "ol" | "circle" | "navylinux" => Distro::Rhel,
        // TrueNAS SCALE says Debian in os-release but installs no packages: its driver is a
        // system extension of the release (kernel `...-production+truenas`).
        "debian"
            if !report
                .host
                .kernel_release
                .as_deref()
                .is_some_and(|k| k.contains("truenas")) =>
        {
            Distro::Debian
        }
        _ => Distro::Other,
    }
}

/// Whether the distribution's package database is one the probes read for module packages
/// (dpkg's, pacman's: `probe::module_files::driver_packages`), so that none found means no
/// package holds the module.
pub(crate) fn module_packages_read(report: &Report) -> bool {
    matches!(of(report), Distro::Ubuntu | Distro::Debian | Distro::Arch)
}

/// The EL major release of a Red Hat family machine (`VERSION_ID` "10.0" -> 10).
fn el_release(report: &Report) -> Option<u64> {
    report
        .host
        .os_version
        .as_deref()?
        .split('.')
        .next()?
        .parse()
        .ok()
}

/// NVIDIA's repository and the commands for this EL release, with the release as a number or,
/// unknown, as the shell asks rpm for it.
fn rhel(report: &Report, install: &InstallTable) -> Option<(RpmDriver, String)> {
    let release = el_release(report);
    let row = install.rpm_driver(release)?.clone();
    let release = release.map_or_else(|| "$(rpm -E %rhel)".to_string(), |r| r.to_string());
    let repo = row
        .repo
        .replace("{release}", &release)
        .replace("{arch}", "$(uname -m)");
    Some((row, repo))
}

/// "First `sudo dnf module reset nvidia-driver`, then " where the row has a first step.
fn first(row: &RpmDriver) -> String {
    row.switch_first
        .as_deref()
        .map(|c| format!("`{c}`, then "))
        .unwrap_or_default()
}

/// How to install the last branch `branch` that drives an older GPU, in the distribution's
/// words, replacing the newer driver.
pub(crate) fn legacy_branch(report: &Report, install: &InstallTable, branch: u64) -> String {
    if let (Distro::Rhel, Some((row, _))) = (of(report), rhel(report, install)) {
        return format!(
            "Install NVIDIA's R{branch} driver from its CUDA repository in place of the newer \
             one: {}`{} --allowerasing`{}, then reboot",
            first(&row),
            row.install_branch.replace("{branch}", &branch.to_string()),
            row.hold
                .as_deref()
                .map(|h| format!(", and hold it there with {h}"))
                .unwrap_or_default()
        );
    }
    match of(report) {
        Distro::Ubuntu => ubuntu_legacy_branch(install, branch),
        Distro::Fedora => format!(
            "Replace RPM Fusion's current driver with its R{branch} legacy packages: `sudo dnf \
             remove 'xorg-x11-drv-nvidia*' 'akmod-nvidia*'`, then `sudo dnf install \
             akmod-nvidia-{branch}xx xorg-x11-drv-nvidia-{branch}xx \
             xorg-x11-drv-nvidia-{branch}xx-cuda`, wait for akmods to build the module, and reboot"
        ),
        Distro::Arch => format!(
            "Remove the `nvidia`, `nvidia-open`, `nvidia-dkms` or `nvidia-lts` package and \
             install the R{branch} legacy driver from the AUR: `nvidia-{branch}xx-dkms` (with its \
             `nvidia-{branch}xx-utils`), then reboot"
        ),
        Distro::FedoraAtomic => format!(
            "Replace RPM Fusion's current driver with its R{branch} legacy packages in the \
             deployment (`dnf` cannot change an rpm-ostree system): `sudo rpm-ostree uninstall \
             akmod-nvidia xorg-x11-drv-nvidia xorg-x11-drv-nvidia-cuda --install \
             akmod-nvidia-{branch}xx --install xorg-x11-drv-nvidia-{branch}xx --install \
             xorg-x11-drv-nvidia-{branch}xx-cuda`, then reboot into the new deployment"
        ),
        Distro::UniversalBlue => format!(
            "This image ships its driver, and no package on the machine can replace it: `sudo \
             rpm-ostree rollback` returns to the deployment before the update, and an image \
             variant that still ships the R{branch} driver with the proprietary module is the way \
             to stay on it (`rpm-ostree status` names this image; rebase with `sudo rpm-ostree \
             rebase ostree-image-signed:docker://ghcr.io/ublue-os/<image>:<tag>`), then reboot"
        ),
        Distro::Nixos => format!(
            "Pin the R{branch} legacy driver in configuration.nix: `hardware.nvidia.package = \
             config.boot.kernelPackages.nvidiaPackages.legacy_{branch};` with \
             `hardware.nvidia.open = false;`, then `sudo nixos-rebuild switch` and reboot"
        ),
        Distro::Talos if branch == 580 => "Rebuild the node's image with the R580 (`lts`) \
             extensions in place of the newer ones: `siderolabs/nonfree-kmod-nvidia-lts` with \
             `siderolabs/nvidia-container-toolkit-lts` in the Image Factory schematic (the open \
             modules do not drive this GPU), keep the modules in `machine.kernel.modules`, and \
             upgrade the node to that image"
            .to_string(),
        // Debian's own archive is older than the legacy branch (Debian 13: 550.163.01,
        // linux-surface/linux-surface#1884), and NVIDIA's Debian 13 repository has no R580
        // (NVIDIA/cuda-repo-management#40).
        Distro::Debian if branch >= DEBIAN_13_BRANCH => format!(
            "Install Debian's own driver in place of the newer one: remove the newer \
             `nvidia-*` packages (from NVIDIA's CUDA repository, which has no R{branch} for \
             Debian 13), then `sudo apt install nvidia-driver nvidia-kernel-dkms \
             firmware-misc-nonfree linux-headers-$(uname -r)` from the `non-free` component \
             (Debian 13 ships the {DEBIAN_13_BRANCH} branch, which still drives this GPU; the \
             proprietary module, not `nvidia-open-kernel-dkms`), then reboot"
        ),
        Distro::Gentoo => format!(
            "Keep Gentoo's nvidia-drivers on R{branch}: mask the newer branches (`echo \
             '>=x11-drivers/nvidia-drivers-{}' | sudo tee /etc/portage/package.mask/nvidia-drivers`), \
             `sudo emerge --oneshot x11-drivers/nvidia-drivers` to go back to R{branch} (with \
             USE=-kernel-open), then reboot",
            branch + 1
        ),
        Distro::Rhel | Distro::Debian | Distro::Talos | Distro::Other => format!(
            "Install NVIDIA's R{branch} legacy branch, the last one that drives this GPU, in \
             place of the newer driver (your distribution's R{branch} packages, or NVIDIA's \
             R{branch} `.run` installer; `gpu-doctor plan` writes the steps), then reboot"
        ),
    }
}

/// Ubuntu's legacy branch: `nvidia-driver-<branch>`, unless the archive turned that package
/// into a transitional one to a newer branch (R470 to R535 since July 2025, `install.toml`'s
/// `[[ubuntu_transition]]`), where the branch lives on only as `nvidia-driver-<branch>-server`
/// (linuxmint/mintdrivers#111: the plain `nvidia-driver-470` "attempted to depend on/install
/// NVIDIA 535 packages").
fn ubuntu_legacy_branch(install: &InstallTable, branch: u64) -> String {
    match install.ubuntu_transition(branch, "generic") {
        Some(t) if install.ubuntu_transition(branch, "server").is_none() => format!(
            "Install Ubuntu's R{branch} driver in place of the newer one, from its `-server` \
             packages: `sudo apt install nvidia-driver-{branch}-server` (the plain \
             `nvidia-driver-{branch}` is now a transitional package that installs R{}, which \
             does not drive this GPU; remove the newer `nvidia-driver-*` packages), then reboot",
            t.to_branch
        ),
        _ => format!(
            "Install Ubuntu's R{branch} driver in place of the newer one: `sudo apt install \
             nvidia-driver-{branch}` (remove the newer `nvidia-driver-*` packages it does not \
             replace; `ubuntu-drivers list` shows the ones for this GPU), then reboot"
        ),
    }
}

/// How to switch the kernel module to the open flavour (`open`) or to the proprietary one,
/// keeping branch `branch` where it is known.
pub(crate) fn module_flavour(
    report: &Report,
    install: &InstallTable,
    open: bool,
    branch: Option<u64>,
) -> String {
    let b = branch.map_or_else(|| "<branch>".to_string(), |b| b.to_string());
    let flavour = if open { "open" } else { "proprietary" };
    if let (Distro::Rhel, Some((row, _))) = (of(report), rhel(report, install)) {
        let command = if open {
            row.install_open.clone()
        } else {
            branch.map_or_else(
                || row.install_proprietary.clone(),
                |b| row.install_branch.replace("{branch}", &b.to_string()),
            )
        };
        return format!(
            "Switch to the {flavour} kernel modules from NVIDIA's CUDA repository: {}`{command} \
             --allowerasing` (dnf replaces the other flavour's module packages), then reboot",
            first(&row)
        );
    }
    match (of(report), open) {
        (Distro::Ubuntu, true) => format!(
            "Install the open flavour of the driver: `sudo apt install nvidia-driver-{b}-open` \
             (it replaces `nvidia-driver-{b}`), then reboot"
        ),
        (Distro::Ubuntu, false) => format!(
            "Install the proprietary flavour of the driver: `sudo apt install nvidia-driver-{b}` \
             (it replaces `nvidia-driver-{b}-open`), then reboot"
        ),
        (Distro::Fedora, true) => "Switch RPM Fusion's module to the open flavour: `sudo dnf \
             swap akmod-nvidia akmod-nvidia-open`, wait for akmods to build it, then reboot"
            .to_string(),
        (Distro::Fedora, false) => "Switch RPM Fusion's module to the proprietary flavour: `sudo \
             dnf swap akmod-nvidia-open akmod-nvidia`, wait for akmods to build it, then reboot"
            .to_string(),
        (Distro::Arch, true) => "Replace `nvidia-dkms` (or `nvidia`, `nvidia-lts`) with \
             `nvidia-open-dkms` (or `nvidia-open`, `nvidia-lts-open`), then reboot"
            .to_string(),
        (Distro::Arch, false) => "Replace `nvidia-open-dkms` (or `nvidia-open`) with the \
             proprietary module of a branch that still drives this GPU (the AUR's \
             `nvidia-580xx-dkms`), then reboot"
            .to_string(),
        (Distro::FedoraAtomic | Distro::UniversalBlue, _) => ostree_flavour(report, open),
        (Distro::Nixos, _) => format!(
            "Set `hardware.nvidia.open = {open};` in configuration.nix, then `sudo \
             nixos-rebuild switch` and reboot"
        ),
        (Distro::Debian, true) => "Install Debian's open kernel module in place of the \
             proprietary one: `sudo apt install nvidia-open-kernel-dkms` (it replaces \
             `nvidia-kernel-dkms`; DKMS builds it for the running kernel; from NVIDIA's CUDA \
             repository the package is `nvidia-kernel-open-dkms`), then reboot"
            .to_string(),
        (Distro::Debian, false) => "Install Debian's proprietary kernel module in place of the \
             open one: `sudo apt install nvidia-kernel-dkms` (it replaces \
             `nvidia-open-kernel-dkms`), then reboot"
            .to_string(),
        (Distro::Talos, true) => "Rebuild the node's image with the open-module extension in \
             place of the proprietary one: `siderolabs/nvidia-open-gpu-kernel-modules-production` \
             (or `-lts`) instead of `siderolabs/nonfree-kmod-nvidia-production` in the Image \
             Factory schematic, keeping `siderolabs/nvidia-container-toolkit-production`, and \
             upgrade the node to that image; Talos has no package manager and no `.run` installer"
            .to_string(),
        (Distro::Talos, false) => "Rebuild the node's image with the proprietary-module \
             extension in place of the open one: `siderolabs/nonfree-kmod-nvidia-lts` (R580, the \
             last branch for Maxwell, Pascal and Volta) instead of \
             `siderolabs/nvidia-open-gpu-kernel-modules-*`, with \
             `siderolabs/nvidia-container-toolkit-lts`, and upgrade the node to that image"
            .to_string(),
        (Distro::Gentoo, true) => "Build Gentoo's nvidia-drivers with the open kernel modules: \
             `echo 'x11-drivers/nvidia-drivers kernel-open' | sudo tee -a \
             /etc/portage/package.use/nvidia-drivers`, `sudo emerge --oneshot \
             x11-drivers/nvidia-drivers`, then reboot"
            .to_string(),
        (Distro::Gentoo, false) => "Build Gentoo's nvidia-drivers with the proprietary kernel \
             modules (the ebuild: cards before the GTX 16xx need USE=kernel-open disabled): \
             `echo 'x11-drivers/nvidia-drivers -kernel-open' | sudo tee -a \
             /etc/portage/package.use/nvidia-drivers`, `sudo emerge --oneshot \
             x11-drivers/nvidia-drivers`, then reboot"
            .to_string(),
        (Distro::Rhel | Distro::Other, _) => format!(
            "Install the {flavour} flavour of the R{b} kernel module (your distribution's \
             {flavour}-module package, or NVIDIA's `.run` installer with `-m={}`), then reboot",
            if open { "kernel-open" } else { "kernel" }
        ),
    }
}

/// The module flavour switch on an rpm-ostree system: RPM Fusion's packages swapped in the
/// deployment (Fedora atomic), or a rebase to the image variant that ships the other flavour
/// (Universal Blue).
fn ostree_flavour(report: &Report, open: bool) -> String {
    let flavour = if open { "open" } else { "proprietary" };
    match of(report) {
        Distro::FedoraAtomic => {
            let (from, to) = if open {
                ("akmod-nvidia", "akmod-nvidia-open")
            } else {
                ("akmod-nvidia-open", "akmod-nvidia")
            };
            format!(
                "Switch RPM Fusion's module to the {flavour} flavour in the deployment (`dnf` \
                 cannot change an rpm-ostree system): `sudo rpm-ostree uninstall {from} \
                 --install {to}`, then reboot into the new deployment"
            )
        }
        _ => format!(
            "This image ships the {} kernel module, and no package on the machine can replace \
             it: rebase to the variant of the image that ships the {flavour} one ({}; \
             `rpm-ostree status` names this image): `sudo rpm-ostree rebase \
             ostree-image-signed:docker://ghcr.io/ublue-os/<image>:stable`, then reboot (`sudo \
             rpm-ostree rollback` returns to the previous deployment meanwhile)",
            if open { "proprietary" } else { "open" },
            if open {
                "Aurora and Bluefin: the name ending in `-nvidia-open`"
            } else {
                "Aurora and Bluefin: the name without `-open`, `aurora-dx-nvidia` for \
                 `aurora-dx-nvidia-open`"
            }
        ),
    }
}

/// How to install a driver at all, in the distribution's words.
pub(crate) fn install_driver(report: &Report, install: &InstallTable) -> String {
    if let (Distro::Rhel, Some((row, repo))) = (of(report), rhel(report, install)) {
        return format!(
            "Install the driver from NVIDIA's CUDA repository and reboot: `sudo dnf \
             config-manager --add-repo {repo}`, `sudo dnf clean expire-cache`, then {}`{}` \
             (open kernel modules, Turing or newer; `{}` installs the proprietary ones that \
             Maxwell, Pascal and Volta need), or see `gpu-doctor plan`",
            first(&row),
            row.install_open,
            row.install_proprietary
        );
    }
    match of(report) {
        Distro::Ubuntu => "Install the driver and reboot: `sudo ubuntu-drivers install`, or see \
             `gpu-doctor plan`"
            .to_string(),
        Distro::Fedora => "Install the driver and reboot: RPM Fusion's `sudo dnf install \
             akmod-nvidia xorg-x11-drv-nvidia-cuda` (with RPM Fusion's nonfree repository \
             enabled), or see `gpu-doctor plan`"
            .to_string(),
        Distro::FedoraAtomic => "Layer the driver and reboot: RPM Fusion's `sudo rpm-ostree \
             install akmod-nvidia xorg-x11-drv-nvidia-cuda` (with RPM Fusion's nonfree repository \
             enabled; `dnf` cannot change an rpm-ostree system), or see `gpu-doctor plan`"
            .to_string(),
        Distro::UniversalBlue => "Rebase to the image's NVIDIA variant and reboot: `sudo \
             rpm-ostree rebase ostree-image-signed:docker://ghcr.io/ublue-os/<image>-nvidia-open:stable` \
             (the open module, Turing and newer; the `-nvidia` variant where the project builds \
             one for older GPUs; `rpm-ostree status` names this image)"
            .to_string(),
        Distro::Arch => "Install the driver and reboot: `sudo pacman -S nvidia-open-dkms \
             nvidia-utils` (Turing or newer), or see `gpu-doctor plan`"
            .to_string(),
        Distro::Nixos => "Install the driver and reboot: enable it in configuration.nix (`services.xserver.videoDrivers \
             = [ \"nvidia\" ];`, `hardware.nvidia.open`), `sudo nixos-rebuild switch`"
            .to_string(),
        Distro::Debian => "Install Debian's driver (from the `non-free` component) and \
             reboot: `sudo apt install linux-headers-$(uname -r) nvidia-kernel-dkms \
             nvidia-driver firmware-misc-nonfree` (`nvidia-open-kernel-dkms` in place of \
             `nvidia-kernel-dkms` for the open modules), or see `gpu-doctor plan`"
            .to_string(),
        Distro::Talos => "Add NVIDIA's system extensions to the node's image and upgrade \
             the node to it: `siderolabs/nvidia-open-gpu-kernel-modules-production` (Turing or \
             newer; `siderolabs/nonfree-kmod-nvidia-lts` for Maxwell, Pascal and Volta) with \
             `siderolabs/nvidia-container-toolkit-production` in the Image Factory schematic, \
             and the modules in `machine.kernel.modules`"
            .to_string(),
        Distro::Gentoo => "Install the driver and reboot: `sudo emerge x11-drivers/nvidia-drivers` \
             (with USE=kernel-open for Turing and newer, which Blackwell requires), or see \
             `gpu-doctor plan`"
            .to_string(),
        Distro::Rhel | Distro::Other => "Install the driver and reboot: your distribution's \
             NVIDIA packages, or see `gpu-doctor plan`"
            .to_string(),
    }
}

/// How to keep the kernel packages where they are, so that updates do not bring in a kernel
/// an end-of-life driver branch no longer builds on, in the distribution's words: apt's
/// `apt-mark hold` on the kernel's metapackages, dnf's versionlock plugin, pacman's `IgnorePkg`
/// (the package of the running kernel: `linux`, `linux-zen`, `linux-lts`), Gentoo's
/// package.mask, NixOS's `boot.kernelPackages`.
pub(crate) fn hold_kernel(report: &Report) -> String {
    match of(report) {
        Distro::Ubuntu => "`sudo apt-mark hold linux-generic linux-image-generic \
             linux-headers-generic`"
            .to_string(),
        Distro::Debian => "`sudo apt-mark hold linux-image-amd64 linux-headers-amd64`".to_string(),
        Distro::Fedora | Distro::Rhel => "`sudo dnf install python3-dnf-plugin-versionlock`, \
             then `sudo dnf versionlock add kernel kernel-core kernel-modules kernel-devel`"
            .to_string(),
        Distro::Arch => {
            let headers = arch_headers_package(report.host.kernel_release.as_deref().unwrap_or(""));
            let kernel = headers.trim_end_matches("-headers");
            format!("`IgnorePkg = {kernel} {headers}` in /etc/pacman.conf")
        }
        Distro::Nixos => "set `boot.kernelPackages` in configuration.nix to a kernel series \
             the driver builds on, then `sudo nixos-rebuild switch`"
            .to_string(),
        Distro::Gentoo => "mask the newer kernel sources in /etc/portage/package.mask and keep \
             `eselect kernel` on the older ones"
            .to_string(),
        Distro::Talos => "stay on the node's current Talos image".to_string(),
        Distro::FedoraAtomic | Distro::UniversalBlue => "`sudo ostree admin pin 0` (keeps the \
             working deployment, kernel and module together, through later upgrades)"
            .to_string(),
        Distro::Other => "your package manager's hold on the kernel packages".to_string(),
    }
}

/// How to install the running kernel's headers, which DKMS and akmods build the module against.
/// Debian and Ubuntu: `linux-headers-<release>` (DKMS's own message names the package); the Red
/// Hat family and Fedora: `kernel-devel` of the running release (RPM Fusion's howto); Arch: the
/// headers package of each installed kernel (`linux-headers`, `linux-lts-headers`,
/// `linux-zen-headers`; zen-kernel/zen-kernel#305, archlinux/archinstall#2262).
pub(crate) fn kernel_headers(report: &Report) -> String {
    match of(report) {
        Distro::Ubuntu | Distro::Debian => {
            "`sudo apt install linux-headers-$(uname -r)`".to_string()
        }
        Distro::Fedora | Distro::Rhel => "`sudo dnf install kernel-devel-$(uname -r)`".to_string(),
        Distro::FedoraAtomic => "`sudo rpm-ostree install kernel-devel-$(uname -r)`".to_string(),
        Distro::Arch => format!(
            "`sudo pacman -S {}` (the headers package of the running kernel)",
            arch_headers_package(report.host.kernel_release.as_deref().unwrap_or(""))
        ),
        // Gentoo builds against /usr/src/linux, the sources `eselect kernel` picks.
        Distro::Gentoo => "the running kernel's sources under /usr/src/linux (`eselect kernel \
             list`)"
            .to_string(),
        // Talos builds its modules into the node's image; nothing is built on the node.
        // Universal Blue builds its modules into the image, like Talos.
        Distro::Nixos | Distro::Talos | Distro::UniversalBlue | Distro::Other => {
            "your distribution's headers package for the running kernel".to_string()
        }
    }
}

/// Arch's headers package for a kernel release: each kernel package `linux-<flavour>` has
/// `linux-<flavour>-headers`, and the flavour is the release's tail: "6.8.9-arch1-2" is `linux`,
/// "6.2.6-zen1-1-zen" `linux-zen`, "6.6.30-1-lts" `linux-lts`, "7.0.9-1-cachyos"
/// `linux-cachyos`, "6.18.32-1-cachyos-lts" `linux-cachyos-lts`.
fn arch_headers_package(release: &str) -> String {
    let fields: Vec<&str> = release.split('-').collect();
    let flavour = match fields.as_slice() {
        // "<version>-<pkgrel>-<flavour...>"
        [_, rel, rest @ ..] if rel.chars().all(|c| c.is_ascii_digit()) => rest.join("-"),
        // "<version>-<tag><n>-<pkgrel>-<flavour...>" ("zen1", "hardened1"); "arch1" has none.
        [_, _, _, rest @ ..] => rest.join("-"),
        _ => String::new(),
    };
    if flavour.is_empty() {
        "linux-headers".to_string()
    } else {
        format!("linux-{flavour}-headers")
    }
}

/// How to install a driver branch that is still supported, in the distribution's words. Debian's
/// own archive carries one branch per release (550 in Debian 13), so there it is NVIDIA's
/// repository for Debian or the `.run` installer.
pub(crate) fn supported_branch(report: &Report, install: &InstallTable) -> String {
    match of(report) {
        Distro::Debian => "Debian's own packages stay on this branch: take a supported one \
             from NVIDIA's CUDA repository for Debian (its `nvidia-kernel-open-dkms` for the \
             open modules) or NVIDIA's `.run` installer"
            .to_string(),
        _ => install_driver(report, install),
    }
}

/// Whether the distribution's driver packages move with NVIDIA's current branch (RPM Fusion's
/// `akmod-nvidia`, Arch's `nvidia-open-dkms`), so that updating them leaves an ended branch.
pub(crate) fn packages_follow_current_branch(report: &Report) -> bool {
    matches!(
        of(report),
        Distro::Fedora | Distro::FedoraAtomic | Distro::Arch
    )
}

/// How to update the driver's packages to the newest release of the installed branch, in the
/// distribution's words.
pub(crate) fn update_driver(report: &Report) -> String {
    match of(report) {
        Distro::Ubuntu | Distro::Debian => "`sudo apt update && sudo apt full-upgrade`".to_string(),
        Distro::Fedora | Distro::Rhel => "`sudo dnf upgrade --refresh`".to_string(),
        Distro::Arch => "`sudo pacman -Syu`".to_string(),
        Distro::FedoraAtomic | Distro::UniversalBlue => "`sudo rpm-ostree upgrade`".to_string(),
        Distro::Nixos => "`sudo nixos-rebuild switch --upgrade`".to_string(),
        Distro::Talos => "the node's image with newer NVIDIA system extensions".to_string(),
        Distro::Gentoo => {
            "`sudo emerge --sync && sudo emerge --update x11-drivers/nvidia-drivers`".to_string()
        }
        Distro::Other => "your distribution's package manager".to_string(),
    }
}

/// How to bring an rpm-ostree deployment's kernel module and driver libraries back to one
/// release: the booted deployment carries both, so a reboot boots the same pair again. A
/// Universal Blue image that shipped them apart is fixed in its build (ublue-os/bazzite#2668,
/// ublue-os/main#891: "ensure kmod-nvidia version matches nvidia-driver"), and the previous
/// deployment is the way back meanwhile; on Fedora atomic the layered RPM Fusion packages are
/// updated together with the base.
pub(crate) fn deployment_mismatch(report: &Report, module: &str, libraries: &str) -> String {
    let what = format!(
        "The booted deployment carries the {module} kernel module and the {libraries} driver \
         libraries, so a reboot into it loads the same pair again."
    );
    match of(report) {
        Distro::UniversalBlue => format!(
            "{what} The image shipped them apart: `sudo rpm-ostree rollback` and reboot into \
             the previous deployment, whose module and libraries agree (`rpm-ostree status` \
             lists it), then `sudo rpm-ostree upgrade` once the image's maintainers publish a \
             fixed image; no package on the machine can replace the image's driver."
        ),
        _ => format!(
            "{what} `sudo rpm-ostree rollback` and reboot into the previous deployment, or \
             `sudo rpm-ostree upgrade` so that the layered driver packages and their module \
             are of one release, then reboot."
        ),
    }
}

/// How to rebuild the initramfs, so that a change under `/etc/modprobe.d` reaches early boot,
/// in the distribution's words: EnvyControl's own `_rebuild_initramfs` (`update-initramfs -u -k
/// all` on Debian and Ubuntu, `dracut --force --regenerate-all` on the Red Hat family and SUSE)
/// and Arch's `mkinitcpio -P` (every preset; the Arch wiki's mkinitcpio page).
pub(crate) fn rebuild_initramfs(report: &Report) -> String {
    match of(report) {
        Distro::Ubuntu | Distro::Debian => "`sudo update-initramfs -u -k all`".to_string(),
        Distro::Fedora | Distro::Rhel => "`sudo dracut --force --regenerate-all`".to_string(),
        Distro::Arch => "`sudo mkinitcpio -P`".to_string(),
        Distro::FedoraAtomic
        | Distro::UniversalBlue
        | Distro::Nixos
        | Distro::Talos
        | Distro::Gentoo
        | Distro::Other => "your distribution's initramfs rebuild".to_string(),
    }
}

/// How to add `param` to the kernel command line for every boot, in the distribution's words:
/// GRUB's `/etc/default/grub` where the distribution regenerates its configuration with a
/// command of its own (Debian's `update-grub`, Arch's `grub-mkconfig`), `grubby` on Fedora and
/// RHEL, `rpm-ostree kargs` on an rpm-ostree deployment, `boot.kernelParams` on NixOS.
pub(crate) fn add_kernel_parameter(report: &Report, param: &str) -> String {
    match of(report) {
        Distro::Ubuntu | Distro::Debian => format!(
            "add `{param}` to `GRUB_CMDLINE_LINUX_DEFAULT` in `/etc/default/grub`, run \
             `sudo update-grub` and reboot"
        ),
        Distro::Fedora | Distro::Rhel => {
            format!("`sudo grubby --update-kernel=ALL --args=\"{param}\"` and reboot")
        }
        Distro::FedoraAtomic | Distro::UniversalBlue => {
            format!("`sudo rpm-ostree kargs --append={param}` and reboot")
        }
        Distro::Arch => format!(
            "add `{param}` to your boot loader's kernel command line (GRUB: \
             `GRUB_CMDLINE_LINUX_DEFAULT` in `/etc/default/grub`, then \
             `sudo grub-mkconfig -o /boot/grub/grub.cfg`) and reboot"
        ),
        Distro::Nixos => format!(
            "add `boot.kernelParams = [ \"{param}\" ];` to `configuration.nix`, run \
             `sudo nixos-rebuild boot` and reboot"
        ),
        Distro::Talos | Distro::Gentoo | Distro::Other => {
            format!("add `{param}` to the kernel command line of your boot loader and reboot")
        }
    }
}

/// How to update the kernel together with its headers (the build tree DKMS and akmods build
/// against), in the distribution's words: the kernel's headers come from the same source
/// package, so updating both brings a fixed build tree (CachyOS/linux-cachyos#809).
pub(crate) fn update_kernel(report: &Report) -> String {
    match of(report) {
        Distro::Ubuntu | Distro::Debian => "`sudo apt update && sudo apt full-upgrade`, which \
             updates the kernel's image and headers packages together"
            .to_string(),
        Distro::Fedora | Distro::Rhel => {
            "`sudo dnf upgrade --refresh kernel kernel-core kernel-devel`".to_string()
        }
        Distro::FedoraAtomic | Distro::UniversalBlue => "`sudo rpm-ostree upgrade`".to_string(),
        Distro::Arch => {
            let headers = arch_headers_package(report.host.kernel_release.as_deref().unwrap_or(""));
            let kernel = headers.trim_end_matches("-headers");
            format!("`sudo pacman -Syu`, which updates `{kernel}` and `{headers}` together")
        }
        Distro::Nixos => "`sudo nixos-rebuild switch --upgrade`".to_string(),
        Distro::Gentoo => "the kernel sources `eselect kernel` picks, updated with `sudo emerge \
             --update @world`"
            .to_string(),
        Distro::Talos => "the node's image, upgraded to a newer Talos release".to_string(),
        Distro::Other => "your distribution's kernel and kernel-headers packages".to_string(),
    }
}

/// How to boot a kernel newer than the running one, for hardware the running one predates, in
/// the distribution's words. An Ubuntu LTS keeps its first kernel series unless the hardware
/// enablement (HWE) kernel is installed, so a full upgrade alone brings no newer amdgpu: its
/// metapackage is `linux-generic-hwe-<LTS>` (Ubuntu wiki Kernel/LTSEnablementStack and
/// Canonical's kernel docs "HWE kernels": `sudo apt install --install-recommends
/// linux-generic-hwe-24.04`). Elsewhere the distribution's kernel update is the newer kernel.
pub(crate) fn newer_kernel(report: &Report) -> String {
    let lts = report.host.os_version.as_deref().filter(|v| {
        v.split_once('.').is_some_and(|(year, month)| {
            month == "04" && year.parse::<u32>().is_ok_and(|y| y % 2 == 0)
        })
    });
    match (of(report), lts) {
        (Distro::Ubuntu, Some(lts)) if report.host.os_id.as_deref() == Some("ubuntu") => format!(
            "`sudo apt install --install-recommends linux-generic-hwe-{lts}` (Ubuntu's hardware \
             enablement kernel for this LTS), then reboot into it"
        ),
        _ => format!("{}, then reboot into the new kernel", update_kernel(report)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn install() -> &'static InstallTable {
        &crate::manifest::embedded().install
    }

    fn on(id: &str) -> Report {
        let mut r = Report::default();
        r.host.os_id = Some(id.to_string());
        r
    }

    #[test]
    fn only_ubuntu_is_told_ubuntu_drivers_and_apt() {
        for id in [
            "fedora",
            "arch",
            "nixos",
            "opensuse-tumbleweed",
            "rhel",
            "gentoo",
        ] {
            let r = on(id);
            for text in [
                legacy_branch(&r, install(), 580),
                module_flavour(&r, install(), true, Some(580)),
                module_flavour(&r, install(), false, Some(580)),
                install_driver(&r, install()),
            ] {
                assert!(!text.contains("ubuntu-drivers"), "{id}: {text}");
                assert!(!text.contains("apt install"), "{id}: {text}");
            }
        }
        assert!(install_driver(&on("ubuntu"), install()).contains("ubuntu-drivers"));
    }

    /// Each text is a sentence on several source lines; a line continued without `\\` would
    /// put a run of spaces into it, inside the very command the user copies.
    #[test]
    fn every_distribution_s_words_are_one_clean_line() {
        let ids = [
            ("ubuntu", ""),
            ("fedora", ""),
            ("arch", ""),
            ("nixos", ""),
            ("debian", ""),
            ("opensuse-tumbleweed", ""),
            ("gentoo", ""),
            ("talos", ""),
            ("rocky", "10.0"),
            ("almalinux", "9.6"),
        ];
        for (id, version) in ids {
            let r = el(id, version);
            for text in [
                legacy_branch(&r, install(), 580),
                module_flavour(&r, install(), true, Some(580)),
                module_flavour(&r, install(), false, Some(580)),
                install_driver(&r, install()),
                kernel_headers(&r),
                update_driver(&r),
                update_kernel(&r),
                supported_branch(&r, install()),
                rebuild_initramfs(&r),
                deployment_mismatch(&r, "570.144", "570.153.02"),
            ] {
                assert!(!text.contains("  "), "{id}: {text}");
                assert!(!text.contains('\n'), "{id}: {text}");
            }
        }
    }

    #[test]
    fn arch_headers_follow_the_kernel_package() {
        for (release, package) in [
            ("6.8.9-arch1-2", "linux-headers"),
            ("6.2.6-zen1-1-zen", "linux-zen-headers"),
            ("6.9.1-hardened1-1-hardened", "linux-hardened-headers"),
            ("6.6.30-1-lts", "linux-lts-headers"),
            ("7.0.9-1-cachyos", "linux-cachyos-headers"),
            ("6.18.32-1-cachyos-lts", "linux-cachyos-lts-headers"),
            ("", "linux-headers"),
        ] {
            assert_eq!(arch_headers_package(release), package, "{release}");
        }
    }

    /// Ubuntu made `nvidia-driver-470` a transitional package to R535 (install.toml's
    /// `[[ubuntu_transition]]`), which does not drive Kepler: the legacy words name the 470
    /// `-server` packages; R580, not transitional, keeps its own name.
    #[test]
    fn ubuntu_s_transitional_legacy_branch_is_named_by_its_server_packages() {
        let ubuntu = on("ubuntu");
        let kepler = legacy_branch(&ubuntu, install(), 470);
        assert!(
            kepler.contains("sudo apt install nvidia-driver-470-server"),
            "{kepler}"
        );
        assert!(kepler.contains("R535"), "{kepler}");
        let pascal = legacy_branch(&ubuntu, install(), 580);
        assert!(
            pascal.contains("sudo apt install nvidia-driver-580`"),
            "{pascal}"
        );
    }

    #[test]
    fn gentoo_is_told_portage_s_use_flag_and_mask() {
        let r = on("gentoo");
        let proprietary = module_flavour(&r, install(), false, Some(580));
        assert!(proprietary.contains("x11-drivers/nvidia-drivers -kernel-open"));
        assert!(proprietary.contains("emerge --oneshot"));
        let open = module_flavour(&r, install(), true, Some(580));
        assert!(open.contains("x11-drivers/nvidia-drivers kernel-open"));
        let legacy = legacy_branch(&r, install(), 580);
        assert!(
            legacy.contains("'>=x11-drivers/nvidia-drivers-581'"),
            "{legacy}"
        );
        for text in [proprietary, open, legacy, install_driver(&r, install())] {
            assert!(!text.contains("apt") && !text.contains(".run"), "{text}");
            assert!(!text.contains("  "), "{text}");
        }
        assert!(!module_packages_read(&r));
        assert!(module_packages_read(&on("ubuntu")));
    }

    #[test]
    fn the_legacy_branch_is_named_in_each_distribution_words() {
        assert!(legacy_branch(&on("ubuntu"), install(), 580).contains("nvidia-driver-580"));
        assert!(legacy_branch(&on("fedora"), install(), 580).contains("akmod-nvidia-580xx"));
        assert!(legacy_branch(&on("arch"), install(), 580).contains("nvidia-580xx-dkms"));
        assert!(legacy_branch(&on("nixos"), install(), 580).contains("nvidiaPackages.legacy_580"));
        assert!(legacy_branch(&on("debian"), install(), 470).contains("R470"));
    }

    fn el(id: &str, version: &str) -> Report {
        let mut r = on(id);
        r.host.os_version = Some(version.to_string());
        r
    }

    /// An rpm-ostree system is never told `dnf`: plain Fedora atomic layers RPM Fusion's
    /// packages with `rpm-ostree`, a Universal Blue image is rebased to another variant
    /// (ublue-os/aurora#1924); a Fedora not booted from ostree keeps dnf's words.
    #[test]
    fn image_based_fedora_is_told_rpm_ostree_not_dnf() {
        let mut silverblue = on("fedora");
        silverblue.host.ostree = true;
        let aurora = on("aurora");
        for r in [&silverblue, &aurora] {
            for text in [
                legacy_branch(r, install(), 580),
                module_flavour(r, install(), true, Some(580)),
                module_flavour(r, install(), false, Some(580)),
                install_driver(r, install()),
                update_driver(r),
                hold_kernel(r),
                kernel_headers(r),
            ] {
                assert!(!text.contains("dnf "), "{text}");
                assert!(!text.contains(".run"), "{text}");
                assert!(!text.contains("  "), "{text}");
            }
        }
        assert!(
            module_flavour(&silverblue, install(), false, Some(580))
                .contains("rpm-ostree uninstall akmod-nvidia-open --install akmod-nvidia`")
        );
        let rebase = module_flavour(&aurora, install(), false, Some(580));
        assert!(rebase.contains("rpm-ostree rebase"), "{rebase}");
        assert!(
            rebase.contains("`aurora-dx-nvidia` for `aurora-dx-nvidia-open`"),
            "{rebase}"
        );
        assert!(install_driver(&on("fedora"), install()).contains("sudo dnf install akmod-nvidia"));
        assert!(legacy_branch(&silverblue, install(), 580).contains("akmod-nvidia-580xx"));
    }

    #[test]
    fn the_red_hat_family_is_told_nvidia_s_dnf_repository_by_release() {
        let rocky10 = el("rocky", "10.0");
        let text = install_driver(&rocky10, install());
        assert!(text.contains("cuda-rhel10.repo"), "{text}");
        assert!(text.contains("sudo dnf install nvidia-open"), "{text}");
        assert!(!text.contains("dnf module"), "{text}");
        let alma9 = el("almalinux", "9.6");
        let text = install_driver(&alma9, install());
        assert!(text.contains("cuda-rhel9.repo"), "{text}");
        assert!(text.contains("nvidia-driver:open-dkms"), "{text}");
        let text = module_flavour(&alma9, install(), true, Some(580));
        assert!(text.contains("dnf module reset nvidia-driver"), "{text}");
        assert!(legacy_branch(&rocky10, install(), 580).contains("cuda-drivers-580"));
        assert!(legacy_branch(&alma9, install(), 580).contains("nvidia-driver:580-dkms"));
        // Release unknown: the newest row, the release asked of rpm.
        let text = install_driver(&on("rhel"), install());
        assert!(text.contains("rhel$(rpm -E %rhel)"), "{text}");
        // Fedora stays RPM Fusion's.
        assert!(install_driver(&on("fedora"), install()).contains("akmod-nvidia"));
    }

    #[test]
    fn debian_is_told_its_own_packages_never_ubuntu_s() {
        let debian = on("debian");
        for text in [
            install_driver(&debian, install()),
            module_flavour(&debian, install(), true, Some(550)),
            module_flavour(&debian, install(), false, Some(550)),
        ] {
            assert!(!text.contains("ubuntu-drivers"), "{text}");
            assert!(!text.contains("nvidia-driver-550"), "{text}");
        }
        assert!(install_driver(&debian, install()).contains("nvidia-kernel-dkms"));
        assert!(module_flavour(&debian, install(), true, None).contains("nvidia-open-kernel-dkms"));
        // TrueNAS SCALE's os-release says Debian; apt is not how its driver comes.
        let mut truenas = on("debian");
        truenas.host.kernel_release = Some("6.12.105-production+truenas".into());
        assert!(!module_flavour(&truenas, install(), false, Some(580)).contains("apt"));
    }

    #[test]
    fn debian_s_legacy_words_are_its_own_older_driver_when_it_drives_the_gpu() {
        let text = legacy_branch(&on("debian"), install(), 580);
        assert!(
            text.contains("sudo apt install nvidia-driver nvidia-kernel-dkms"),
            "{text}"
        );
        assert!(text.contains("550 branch"), "{text}");
        assert!(!text.contains(".run"), "{text}");
        // Kepler's R470 is older than Debian 13's own branch: no claim that it drives the GPU.
        assert!(!legacy_branch(&on("debian"), install(), 470).contains("nvidia-kernel-dkms"));
    }

    #[test]
    fn talos_is_told_system_extensions_never_packages_or_the_run_installer() {
        let talos = on("talos");
        for text in [
            install_driver(&talos, install()),
            module_flavour(&talos, install(), true, Some(595)),
            module_flavour(&talos, install(), false, Some(595)),
            legacy_branch(&talos, install(), 580),
        ] {
            assert!(text.contains("siderolabs/"), "{text}");
            assert!(!text.contains("apt install"), "{text}");
            assert!(!text.contains("-m=kernel"), "{text}");
        }
        assert!(
            module_flavour(&talos, install(), true, Some(595))
                .contains("nvidia-open-gpu-kernel-modules-production")
        );
        assert!(legacy_branch(&talos, install(), 580).contains("nonfree-kmod-nvidia-lts"));
    }
}
