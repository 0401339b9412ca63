//! The steps an AMD plan writes: AMD's installer, ROCm, the torch wheel, the override and the
//! check at the end.

use crate::manifest::{Manifests, TorchWheel};

use super::{OVERRIDE_FILE, RocmChoice, TorchChoice};
use crate::plan::cmd::{Check, Command, Guard, Python, Word, words};
use crate::plan::common::{RepoPackage, apt_install};
use crate::plan::{FrameworkName, Step, StepKind};

/// Exports `HSA_OVERRIDE_GFX_VERSION` for every login (a profile.d file): the maintainers' way
/// to run a target through its sibling's code.
pub(super) fn override_step(value: &str, family: &str) -> Step {
    let line = format!("export HSA_OVERRIDE_GFX_VERSION={value}");
    Step {
        serves: Vec::new(),
        kind: StepKind::HsaOverride,
        title: format!("HSA_OVERRIDE_GFX_VERSION={value} for every login"),
        why: format!(
            "The GPU's own target is in no ROCm or PyTorch list, its {family} sibling is: the \
             ROCm runtime loads the sibling's code when HSA_OVERRIDE_GFX_VERSION={value} is set \
             before the program starts (rocm.toml override_group). A service needs it in its own \
             environment (systemd Environment=, docker -e)."
        ),
        guards: vec![Guard::skip(
            Check::FileHasLine {
                path: OVERRIDE_FILE.to_string(),
                line: line.clone(),
            },
            format!("{OVERRIDE_FILE} exports it"),
        )],
        commands: vec![
            Command::WriteFile {
                path: OVERRIDE_FILE.to_string(),
                lines: vec![
                    "# Written by gpu-doctor plan: run this GPU with its sibling's ROCm code."
                        .to_string(),
                    line,
                ],
            },
            Command::Say(
                "Log out and in again (or source the file): new logins have the variable."
                    .to_string(),
            ),
        ],
        needs_root: true,
        reboot: false,
    }
}

/// Fetches and installs AMD's installer package for the release.
pub(super) fn installer_step(choice: &RocmChoice<'_>) -> Step {
    let (i, codename) = (choice.installer, &choice.codename);
    RepoPackage {
        kind: StepKind::AmdgpuInstall,
        title: format!("AMD's installer for ROCm {} ({})", i.rocm, i.deb),
        why: format!(
            "amdgpu-install sets up the repo.radeon.com apt sources of ROCm {} for Ubuntu \
             {codename} and installs ROCm by use case (rocm.toml amdgpu_install: {}).",
            i.rocm, i.source
        ),
        deb: i.deb.clone(),
        folder: i.url_for(codename),
        installed: Check::DpkgVersion {
            package: "amdgpu-install".to_string(),
            prefix: i.version().unwrap_or("").to_string(),
            suffix: String::new(),
        },
        installed_says: format!("amdgpu-install {} is installed", i.version().unwrap_or("")),
        install_with: &["apt-get", "install", "-y"],
        then_update: true,
    }
    .step()
}

/// Installs ROCm with amdgpu-install.
pub(super) fn rocm_step(m: &Manifests, choice: &RocmChoice<'_>) -> Step {
    let rocm = &choice.installer.rocm;
    let mut argv = words(["amdgpu-install", "-y"]);
    argv.push(Word::lit(format!("--usecase={}", choice.usecase)));
    if choice.no_dkms {
        argv.push(Word::lit("--no-dkms"));
    }
    Step {
        serves: Vec::new(),
        kind: StepKind::Rocm,
        title: format!("ROCm {rocm} (amdgpu-install --usecase={})", choice.usecase),
        why: format!(
            "ROCm {rocm}'s official list has this GPU's target (rocm.toml release). {} ({})",
            if choice.no_dkms {
                "--no-dkms keeps the amdgpu driver that works now: only the user-space stack is \
                 installed."
            } else {
                "No working amdgpu driver with /dev/kfd is there, so AMD's amdgpu-dkms kernel \
                 driver comes with it; it takes effect after a reboot."
            },
            m.rocm.install.source
        ),
        guards: vec![Guard::skip(
            Check::FileContains {
                path: "/opt/rocm/.info/version".to_string(),
                text: rocm.clone(),
            },
            format!("/opt/rocm is ROCm {rocm}"),
        )],
        commands: vec![
            apt_install(&m.rocm.install.prerequisites),
            Command::Run { argv, sudo: true },
        ],
        needs_root: true,
        reboot: !choice.no_dkms,
    }
}

/// pip-installs the ROCm wheel, replacing the build that cannot run on the GPU.
pub(super) fn torch_step(m: &Manifests, t: &TorchChoice, wheel: &TorchWheel) -> Step {
    let python = Python::Prefix(t.env.clone());
    let url = m.frameworks.torch_index_url(&wheel.variant);
    let requirement = format!("torch=={}", wheel.release);
    let mut commands = Vec::new();
    if t.replaces.is_some() {
        let mut args = words(["uninstall", "-y", "torch"]);
        args.extend(t.cuda_wheels.iter().map(Word::lit));
        commands.push(Command::Pip {
            python: python.clone(),
            args,
            version: None,
            companions: false,
        });
    }
    commands.push(Command::Pip {
        python: python.clone(),
        args: words(["install", requirement.as_str(), "--index-url", url.as_str()]),
        version: None,
        companions: false,
    });
    let prefix = wheel.release.trim_end_matches('*').to_string();
    let prefix = if prefix.ends_with('.') {
        prefix
    } else {
        format!("{prefix}.")
    };
    Step {
        serves: Vec::new(),
        kind: StepKind::Framework(FrameworkName::Torch),
        title: format!(
            "PyTorch {} ({}) in {}",
            wheel.release.trim_end_matches(".*"),
            wheel.variant,
            t.env
        ),
        why: format!(
            "PyTorch's {} index serves ROCm builds whose wheels carry {} (rocm.toml \
             torch_targets; frameworks.toml). --index-url, not --extra-index-url: beside PyPI pip \
             may take the CUDA wheel.{}",
            wheel.variant,
            match &t.override_value {
                Some((_, family)) => format!("this GPU's {family} sibling target"),
                None => "this GPU's target".to_string(),
            },
            t.replaces
                .as_deref()
                .map(|r| format!(
                    " torch {r} is there and cannot run on the GPU: it is uninstalled first."
                ))
                .unwrap_or_default()
        ),
        guards: vec![Guard::skip(
            Check::PythonDist {
                python,
                dist: "torch".to_string(),
                prefix,
                local: Some(wheel.variant.clone()),
            },
            format!(
                "torch {} from {} is installed",
                wheel.release, wheel.variant
            ),
        )],
        commands,
        needs_root: false,
        reboot: false,
    }
}

/// Checks the result: gpu-doctor's doctor, `rocminfo` (ROCm's own view of the GPU agents)
/// and, with a planned torch, whether it sees the GPU. `gpu-doctor smoke` is NVIDIA's (it
/// says so on AMD machines), so it is not run here.
pub(super) fn verify_step(rocminfo: bool, torch: Option<&TorchChoice>) -> Step {
    let mut commands = vec![Command::Run {
        argv: words(["gpu-doctor", "doctor"]),
        sudo: false,
    }];
    if rocminfo {
        commands.push(Command::Run {
            argv: vec![Word::path("/opt/rocm/bin/rocminfo")],
            sudo: false,
        });
    }
    if let Some(t) = torch {
        commands.push(Command::Run {
            argv: vec![
                Word::Join(vec![
                    Word::path(t.env.trim_end_matches('/')),
                    Word::lit("/bin/python"),
                ]),
                Word::lit("-c"),
                Word::lit(
                    "import torch; assert torch.cuda.is_available(), 'torch sees no GPU'; \
                     print(torch.version.hip, torch.cuda.get_device_name(0))",
                ),
            ],
            sudo: false,
        });
    }
    Step {
        serves: Vec::new(),
        kind: StepKind::Verify,
        title: if rocminfo {
            "Check the result with gpu-doctor and rocminfo"
        } else {
            "Check the result with gpu-doctor"
        }
        .to_string(),
        why: "gpu-doctor doctor re-examines the machine; rocminfo lists the GPU agents the ROCm \
              runtime sees (each with its gfx target); a planned torch must see the GPU."
            .to_string(),
        guards: vec![
            Guard::skip(
                Check::RebootPending,
                "reboot (and log in again) first; then run: gpu-doctor doctor && \
                 /opt/rocm/bin/rocminfo",
            ),
            Guard::skip(
                Check::CommandMissing("gpu-doctor".to_string()),
                "gpu-doctor is not on PATH; run gpu-doctor doctor and /opt/rocm/bin/rocminfo \
                 yourself",
            ),
        ],
        commands,
        needs_root: false,
        reboot: false,
    }
}
