//! `gpu-doctor plan` on fixture machines: the written plans (insta snapshots, each one checked
//! by `bash -n` and, when it is installed, `shellcheck`), refusals, usage errors, `-o`, and
//! `--execute` run inside a copy of a fixture with stand-in commands that record their calls.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::{Out, fixture_dir, fixture_env};

impl Out {
    /// Exit code, stderr and stdout in one block, as the snapshots keep them.
    fn block(&self) -> String {
        format!(
            "exit: {}\n--- stderr\n{}--- stdout\n{}",
            self.code, self.stderr, self.stdout
        )
    }
}

/// Runs gpu-doctor with exactly this environment.
fn gpu_doctor(root: &Path, env: &[(String, String)], args: &[&str], cwd: &Path) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_gpu-doctor"))
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .arg("--root")
        .arg(root)
        .args(["--timeout", crate::support::TIMEOUT_SECS, "plan"])
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("gpu-doctor runs");
    Out::from(out)
}

/// `plan ARGS` on a fixture, with extra environment variables.
fn plan_on(fixture: &str, args: &[&str], extra: &[(&str, &str)]) -> Out {
    let mut env = fixture_env(fixture);
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string())),
    );
    gpu_doctor(
        &fixture_dir(fixture).join("root"),
        &env,
        args,
        &fixture_dir(fixture),
    )
}

fn shellcheck_available() -> bool {
    Command::new("shellcheck")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `bash -n`, and `shellcheck` when it is on PATH (`.ci/run` installs it).
#[track_caller]
fn lint(name: &str, script: &str) {
    let dir = crate::support::tempdir();
    let path = dir.path().join(format!("{name}.sh"));
    std::fs::write(&path, script).expect("write the script");
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .expect("bash");
    assert!(
        syntax.status.success(),
        "{name}: bash -n: {}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    if shellcheck_available() {
        let check = Command::new("shellcheck")
            .arg(&path)
            .output()
            .expect("shellcheck");
        assert!(
            check.status.success(),
            "{name}: shellcheck:\n{}",
            String::from_utf8_lossy(&check.stdout)
        );
    }
}

/// A plan that must be written: exit 0, a script that lints, and its snapshot.
#[track_caller]
fn snapshot_plan(name: &str, fixture: &str, args: &[&str], extra: &[(&str, &str)]) -> String {
    let out = plan_on(fixture, args, extra);
    assert_eq!(out.code, 0, "{name}: {}", out.stderr);
    lint(name, &out.stdout);
    insta::assert_snapshot!(name, out.block());
    out.stdout
}

// --- Plans for what the doctor found (no target named) -----------------------------------------

/// Pascal under nouveau: blacklist nouveau, then R580 with the proprietary modules (Pascal has
/// no open modules and no branch after R580), and a reboot before verifying.
#[test]
fn fix_nouveau_on_pascal() {
    let script = snapshot_plan("fix_nouveau_on_pascal", "nouveau-loaded", &[], &[]);
    assert!(script.contains("sudo apt-get install -y cuda-drivers-580"));
    assert!(!script.contains("nvidia-open"));
    assert!(
        script
            .lines()
            .all(|l| l.trim_start().starts_with('#') || !l.contains("apt-key")),
        "apt-key is only ever named in a comment"
    );
}

/// A CPU-only torch in a venv: the same version's CUDA build for the working driver (560 runs
/// CUDA 12.6 natively, so cu124), after uninstalling the CPU build pip would keep.
#[test]
fn fix_cpu_only_torch() {
    let script = snapshot_plan("fix_cpu_only_torch", "torch-cpu-build", &[], &[]);
    assert!(script.contains(
        "-m pip install torch==2.5.1+cu124 --index-url https://download.pytorch.org/whl/cu124"
    ));
}

/// torch cu130 on a P100: no sm_60 code in that build, so the cu126 build of the same release.
#[test]
fn fix_arch_missing_on_p100() {
    let script = snapshot_plan("fix_arch_missing_on_p100", "p100-torch-cu130", &[], &[]);
    assert!(
        script.contains("torch==2.11.0+cu126 --index-url https://download.pytorch.org/whl/cu126")
    );
}

/// torch cu130 on driver 550: the finding is inside one venv, so the fix is too: the same
/// release's cu126 build, which driver 550 runs, replaces it there; no driver step, no reboot.
/// The driver upgrade that would keep cu130 is named as an option, and `--driver auto` plans
/// it: R580 (LTS), with the proprietary modules the working driver uses.
#[test]
fn fix_driver_too_old_for_torch() {
    let script = snapshot_plan(
        "fix_driver_too_old_for_torch",
        "torch-cu130-on-driver-550",
        &[],
        &[],
    );
    assert!(script.contains("install torch==2.11.0+cu126 --index-url"));
    assert!(!script.contains("apt-get") && !script.contains("reboot_needed=1"));
    assert!(script.contains("# Serves: driver-too-old-for-framework"));
    assert!(script.contains("`gpu-doctor plan --driver auto` plans the driver upgrade"));
    let auto = plan_on("torch-cu130-on-driver-550", &["--driver", "auto"], &[]);
    assert_eq!(auto.code, 0, "{}", auto.stderr);
    lint("fix_driver_too_old_for_torch_auto", &auto.stdout);
    assert!(
        auto.stdout
            .contains("sudo apt-get install -y cuda-drivers-580")
    );
    assert!(
        !auto.stdout.contains("pip install"),
        "the venv stays as it is"
    );
}

/// Driver/library mismatch: nothing to install, a reboot.
#[test]
fn fix_library_mismatch_by_reboot() {
    let script = snapshot_plan(
        "fix_library_mismatch_by_reboot",
        "driver-library-mismatch",
        &[],
        &[],
    );
    assert!(!script.contains("apt-get"));
}

/// Nothing wrong on an RTX 4090 with driver 550: the newest stable stack that driver runs,
/// CUDA 12.4 with cuDNN and NCCL for it, and the driver stays; CUDA 13.2 on R595 is the option
/// it names, which `--driver auto` plans (Production Branch; the plain meta-package held by the
/// pin, the working driver's proprietary modules, cuDNN and NCCL for CUDA 13).
#[test]
fn newest_stable_stack_on_ada() {
    // Healthy and nothing named: nothing planned, and the way to ask said.
    let plain = plan_on("healthy-driver-toolkit", &[], &[]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    assert!(
        !plain.stdout.lines().any(|l| l.starts_with("step ")),
        "{}",
        plain.stdout
    );
    assert!(plain.stdout.contains("--framework"), "{}", plain.stdout);
    let script = snapshot_plan(
        "newest_stable_stack_on_ada",
        "healthy-driver-toolkit",
        &["--via", "apt", "--cuda", "12.4"],
        &[],
    );
    assert!(script.contains("sudo apt-get install -y cuda-toolkit-12-4"));
    assert!(!script.contains("cuda-drivers") && !script.contains("nvidia-driver-pinning"));
    assert!(script.contains("CUDA 13.2 needs driver R595 or newer"));
    let auto = plan_on("healthy-driver-toolkit", &["--driver", "auto"], &[]);
    assert_eq!(auto.code, 0, "{}", auto.stderr);
    lint("newest_stable_stack_auto", &auto.stdout);
    for package in [
        "sudo apt-get install -y nvidia-driver-pinning-595",
        "sudo apt-get install -y cuda-drivers\n",
        "cuda-toolkit-13-2",
        "libcudnn9-cuda-13",
    ] {
        assert!(auto.stdout.contains(package), "{package}");
    }
}

// --- Plans for a named target ------------------------------------------------------------------

/// apt, CUDA 12.4, on the machine whose driver (550) already runs it: no driver step; NCCL for
/// exactly CUDA 12.4.
#[test]
fn apt_cuda_12_4_keeps_the_driver() {
    let script = snapshot_plan(
        "apt_cuda_12_4_keeps_the_driver",
        "healthy-driver-toolkit",
        &["--via", "apt", "--cuda", "12.4"],
        &[],
    );
    assert!(!script.contains("cuda-drivers") && !script.contains("nvidia-open"));
    assert!(script.contains("newest_version libnccl2 '' -1+cuda12.4"));
}

/// apt, CUDA 12.4, on Pascal under nouveau: nouveau off, R580 proprietary, and cuDNN held on
/// 9.10.2 (newer releases dropped Pascal).
#[test]
fn apt_cuda_12_4_on_pascal() {
    let script = snapshot_plan(
        "apt_cuda_12_4_on_pascal",
        "nouveau-loaded",
        &["--cuda", "12.4"],
        &[],
    );
    assert!(script.contains("newest_version libcudnn9-cuda-12 9.10.2. ''"));
}

/// conda with torch 2.5.1 on a GPU without a driver (its compute capability stated by the
/// override): the apt driver steps come first, Secure Boot is on, then the environment.
#[test]
fn conda_torch_without_a_driver() {
    let script = snapshot_plan(
        "conda_torch_without_a_driver",
        "gpu-no-driver",
        &[
            "--via",
            "conda",
            "--framework",
            "torch==2.5.1",
            "--python",
            "3.11",
            "--env",
            "ml",
        ],
        &[("GPU_DOCTOR_GPU_CC", "8.9")],
    );
    assert!(script.contains("conda cannot install a kernel driver"));
    assert!(
        script.contains("sudo apt-get install -y nvidia-open-580"),
        "no driver yet: open modules"
    );
    assert!(script.contains("Secure Boot is on"));
    assert!(script.contains(
        "conda install -y -n ml -c conda-forge cuda-version=12.4 cuda-toolkit cuda-nvcc cudnn=9 nccl"
    ));
}

/// pip, torch 2.5.1, into the venv that already has torch: cu121 for driver 535 (CUDA 12.2).
#[test]
fn pip_torch_for_driver_535() {
    let script = snapshot_plan(
        "pip_torch_for_driver_535",
        "torch-cuda-venv",
        &["--framework", "torch==2.5.1"],
        &[],
    );
    assert!(script.contains("--index-url https://download.pytorch.org/whl/cu121"));
}

/// pip, TensorFlow 2.17 with [and-cuda]: driver 535 runs its CUDA 12.3 through minor-version
/// compatibility and is above TensorFlow's 525.60.13, so it stays.
#[test]
fn pip_tensorflow_2_17() {
    let script = snapshot_plan(
        "pip_tensorflow_2_17",
        "tensorflow-system-cudnn",
        &["--via", "pip", "--framework", "tensorflow==2.17"],
        &[],
    );
    assert!(script.contains("'tensorflow[and-cuda]==2.17.*'"));
}

/// pip, jax[cuda13] on driver 550 with `--driver auto`: CUDA 13 needs R580. (Without
/// `--driver`, the same request is refused with this command: see `refusals`.)
#[test]
fn pip_jax_cuda13_upgrades_the_driver() {
    let script = snapshot_plan(
        "pip_jax_cuda13_upgrades_the_driver",
        "jax-pip-cuda-plugin",
        &["--framework", "jax[cuda13]", "--driver", "auto"],
        &[],
    );
    assert!(script.contains("jax[cuda13]") && script.contains("cuda-drivers-580"));
    assert!(
        script.contains("has_extra_wheels jax cuda13"),
        "the plugin must land"
    );
}

/// pip, CuPy in the H200 container: cupy-cuda13x for the host's R580 in a new environment, no
/// driver step (the driver is the host's). The environment that has CuPy already keeps it.
#[test]
fn pip_cupy_in_a_container() {
    let kept = plan_on("h200", &["--framework", "cupy"], &[]);
    assert_eq!(kept.code, 0, "{}", kept.block());
    assert!(kept.stdout.contains("steps=()"), "{}", kept.stdout);
    assert!(kept.stdout.contains("the plan keeps it"), "{}", kept.stdout);
    let script = snapshot_plan(
        "pip_cupy_in_a_container",
        "h200",
        &["--framework", "cupy", "--env", "/srv/cupy"],
        &[],
    );
    assert!(script.contains("'cupy-cuda13x[ctk]'"));
    assert_eq!(
        apt_installs(&script),
        ["sudo apt-get install -y python3-venv"]
    );
}

/// WSL keeps the Windows driver: the newest torch whose build that driver runs.
#[test]
fn pip_torch_on_wsl() {
    let script = snapshot_plan("pip_torch_on_wsl", "wsl2", &["--framework", "torch"], &[]);
    assert!(script.contains("cu126"));
    assert_eq!(
        apt_installs(&script),
        ["sudo apt-get install -y python3-venv"]
    );
}

/// `--driver 570` with nothing else named: the newest CUDA R570 runs natively (12.8), and a
/// note that R570 is past its end of life.
#[test]
fn apt_named_driver_570() {
    let script = snapshot_plan(
        "apt_named_driver_570",
        "healthy-driver-toolkit",
        &["--driver", "570"],
        &[],
    );
    assert!(script.contains("sudo apt-get install -y cuda-drivers-570"));
    assert!(
        !script.contains("nvidia-driver-pinning"),
        "pinning starts with R580"
    );
    assert!(script.contains("cuda-toolkit-12-8") && script.contains("past its end of life"));
}

/// A Kepler K80 on R470 and Ubuntu 20.04 (no apt plan for it): torch's cu118 wheels run on
/// R470 through minor-version compatibility, and the system Python 3.8 takes torch 2.4.
#[test]
fn pip_torch_on_kepler() {
    let script = snapshot_plan(
        "pip_torch_on_kepler",
        "old-driver-no-compute-cap",
        &["--via", "pip", "--framework", "torch"],
        &[],
    );
    assert!(script.contains("'torch==2.4.*' --index-url https://download.pytorch.org/whl/cu118"));
}

/// `--json`: the same plan as data, with a schema version and the shell text of each step.
#[test]
fn json_plan() {
    let out = plan_on("torch-cpu-build", &["--json"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plan: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(plan["schema_version"], 1);
    let ids: Vec<&str> = plan["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids, ["reinstall-torch", "verify"]);
    assert_eq!(plan["addresses"][0]["id"], "cpu-only-framework-build");
    insta::assert_snapshot!("json_plan", out.stdout);
}

// --- AMD GPUs: ROCm plans ------------------------------------------------------------------------

/// A CUDA torch in ComfyUI's venv on an RX 6750 XT (gfx1031): the same release's ROCm build
/// (rocm5.6, which carries the RDNA 2 sibling gfx1030) after uninstalling the CUDA build and its
/// nvidia wheels, and HSA_OVERRIDE_GFX_VERSION=10.3.0 for every login. No system ROCm: the
/// wheel brings its own runtime.
#[test]
fn amd_cuda_torch_becomes_rocm_with_override() {
    let script = snapshot_plan(
        "amd_cuda_torch_becomes_rocm_with_override",
        "amd-cuda-torch-comfyui",
        &[],
        &[],
    );
    assert!(script.contains("-m pip uninstall -y torch nvidia-cublas-cu12 nvidia-cudnn-cu12"));
    assert!(script.contains(
        "-m pip install torch==2.1.1 --index-url https://download.pytorch.org/whl/rocm5.6"
    ));
    assert!(script.contains("'export HSA_OVERRIDE_GFX_VERSION=10.3.0'"));
    assert!(!script.contains("amdgpu-install"), "torch alone fixes it");
}

/// ROCm 6.2 on an RX 9070 XT (gfx1201, first listed in 6.4.1): the newest amdgpu-install for
/// noble whose release lists gfx1201, with --no-dkms because amdgpu and /dev/kfd work.
#[test]
fn amd_rocm_upgrade_for_rdna4() {
    let script = snapshot_plan(
        "amd_rocm_upgrade_for_rdna4",
        "amd-rx9070xt-rocm62",
        &[],
        &[],
    );
    assert!(script.contains(
        "https://repo.radeon.com/amdgpu-install/7.1.1/ubuntu/noble/amdgpu-install_7.1.1.70101-1_all.deb"
    ));
    assert!(script.contains("sudo amdgpu-install -y --usecase=graphics,rocm --no-dkms"));
    assert!(!script.contains("--extra-index-url"));
}

/// A user outside render: usermod, nothing else (the ROCm there lists the GPU).
#[test]
fn amd_render_group() {
    let out = plan_on("amd-render-group-missing", &["--json"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plan: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let ids: Vec<&str> = plan["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids, ["groups", "verify"]);
    assert_eq!(plan["addresses"][0]["id"], "rocm-device-permission");
    assert!(
        out.stdout.contains("usermod -a -G render,video -- bd4"),
        "{}",
        out.stdout
    );
}

/// torch 2.5.1+rocm6.2 on an RX 6700 XT (gfx1031): the build carries gfx1030, so it stays and
/// the override is the whole fix. A nightly without gfx900 on a Vega 56: torch 2.7, the last
/// release whose wheels carry gfx900 (rocm6.3).
#[test]
fn amd_least_change_for_torch() {
    let out = plan_on("amd-rx6700xt-no-gfx1031", &["--json"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let plan: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    let ids: Vec<&str> = plan["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    assert_eq!(ids, ["hsa-override", "verify"]);
    assert_eq!(plan["addresses"][0]["id"], "arch-not-in-build");

    let out = plan_on("amd-vega56-nightly-no-gfx900", &[], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    lint("amd_vega56", &out.stdout);
    assert!(out.stdout.contains(
        "-m pip install 'torch==2.7.*' --index-url https://download.pytorch.org/whl/rocm6.3"
    ));
    assert!(!out.stdout.contains("HSA_OVERRIDE_GFX_VERSION"));
}

/// Healthy AMD machines: nothing to change, the torch there kept; a named older torch goes into
/// a new venv from its ROCm index.
#[test]
fn amd_healthy_and_named() {
    for fixture in [
        "amd-rocm",
        "amd-rx7900xtx-workstation",
        "amd-igpu-dgpu-masked",
    ] {
        let out = plan_on(fixture, &[], &[]);
        assert_eq!(out.code, 0, "{fixture}: {}", out.stderr);
        lint(fixture, &out.stdout);
        assert!(
            out.stdout.contains("steps=()") && out.stdout.contains("Nothing to fix"),
            "{fixture}: {}",
            out.stdout
        );
        assert!(!out.stdout.contains("# Findings it fixes"), "{fixture}");
    }
    let script = snapshot_plan(
        "amd_named_torch_in_new_venv",
        "amd-rx7900xtx-workstation",
        &[
            "--framework",
            "torch==2.4",
            "--env",
            "/srv/new",
            "--python",
            "3.11",
        ],
        &[],
    );
    assert!(script.contains("python3.11 -m venv"));
    assert!(script.contains(
        "-m pip install 'torch==2.4.*' --index-url https://download.pytorch.org/whl/rocm6.1"
    ));
}

// --- Refusals and usage errors -----------------------------------------------------------------

/// Targets that cannot work are refused with exit 1, the reason and the machine facts.
#[test]
fn refusals() {
    let cases: [(&str, &str, &[&str]); 20] = [
        (
            "jax_cuda12_into_python_3_8",
            "jax-cudnn86-torch-cudnn85",
            &["--framework", "jax[cuda12]"],
        ),
        (
            "tensorflow_2_15_into_python_3_12",
            "torch-cpu-build",
            &[
                "--framework",
                "tensorflow==2.15",
                "--env",
                "/home/bob/proj/.venv",
            ],
        ),
        (
            "cuda_12_4_on_ubuntu_24_04",
            "torch-cpu-build",
            &["--via", "apt", "--cuda", "12.4"],
        ),
        (
            "jax_cuda13_keeps_driver_550",
            "jax-pip-cuda-plugin",
            &["--framework", "jax[cuda13]"],
        ),
        ("cuda_13_on_pascal", "nouveau-loaded", &["--cuda", "13.0"]),
        (
            "tensorflow_with_cudnn_9",
            "nouveau-loaded",
            &["--framework", "tensorflow==2.17", "--cudnn", "9"],
        ),
        ("unknown_os", "nouveau-loaded", &["--os", "debian-12"]),
        (
            "no_cuda_12_7",
            "healthy-driver-toolkit",
            &["--cuda", "12.7"],
        ),
        (
            "driver_590_on_pascal",
            "nouveau-loaded",
            &["--driver", "590"],
        ),
        (
            "driver_downgrade",
            "healthy-driver-toolkit",
            &["--driver", "535"],
        ),
        ("no_nvidia_gpu", "no-gpu", &[]),
        ("amd_gcn1_no_rocm", "amd-pitcairn-unsupported", &[]),
        ("amd_780m_gfx1103", "amd-780m-override-11", &[]),
        (
            "amd_780m_torch",
            "amd-780m-override-11",
            &["--framework", "torch"],
        ),
        ("amd_wsl", "amd-wsl-torch-own-hsa", &[]),
        (
            "amd_cuda_option",
            "amd-rx7900xtx-workstation",
            &["--cuda", "12.4"],
        ),
        (
            "amd_conda",
            "amd-rx7900xtx-workstation",
            &["--via", "conda"],
        ),
        (
            "amd_jax",
            "amd-rx7900xtx-workstation",
            &["--framework", "jax"],
        ),
        ("amd_python37", "amd-torch-cpu-build", &[]),
        ("unknown_compute_capability", "no-driver-unknown-block", &[]),
    ];
    let mut all = String::new();
    for (name, fixture, args) in cases {
        let out = plan_on(fixture, args, &[]);
        assert_eq!(out.code, 1, "{name}: {}", out.block());
        assert!(out.stdout.is_empty(), "{name}: a refusal writes no plan");
        assert!(
            out.stderr.starts_with("gpu-doctor plan: refused: "),
            "{name}"
        );
        all.push_str(&format!(
            "== {name}: {fixture} {}\n{}",
            args.join(" "),
            out.block()
        ));
    }
    insta::assert_snapshot!("refusals", all);
}

/// Malformed values are usage errors (exit 2) before anything is examined.
#[test]
fn usage_errors() {
    for args in [
        &["--framework", "torch==2.5.1; rm -rf /"][..],
        &["--framework", "numpy"],
        &["--cuda", "twelve"],
        &["--driver", "570; reboot"],
        &["--python", "$(id)"],
        &["--via", "brew"],
        &["--yes"],
        &["--json", "--execute"],
    ] {
        let out = plan_on("nouveau-loaded", args, &[]);
        assert_eq!(out.code, 2, "{args:?}: {}", out.block());
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

// --- Writing a plan ------------------------------------------------------------------------------

/// `-o` writes atomically, never over an existing file without `--force`, and a conda plan's
/// environment.yml goes next to the script.
#[test]
fn output_files_are_never_overwritten_without_force() {
    let dir = crate::support::tempdir();
    let target = dir.path().join("plan.sh");
    let target_text = target.display().to_string();
    let args = [
        "--via",
        "conda",
        "--framework",
        "torch==2.5.1",
        "--env",
        "ml",
        "-o",
        target_text.as_str(),
    ];
    let first = plan_on("torch-cuda-venv", &args, &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stdout.is_empty(), "with -o nothing goes to stdout");
    let script = std::fs::read_to_string(&target).expect("plan.sh");
    lint("output", &script);
    let yml = std::fs::read_to_string(dir.path().join("environment.yml")).expect("environment.yml");
    assert!(
        yml.contains("name: \"ml\"") && yml.contains("\"torch==2.5.1+cu121\""),
        "{yml}"
    );

    std::fs::write(&target, "mine").expect("overwrite by hand");
    let second = plan_on("torch-cuda-venv", &args, &[]);
    assert_eq!(second.code, 3, "{}", second.block());
    assert!(
        second.stderr.contains("exists; pass --force"),
        "{}",
        second.stderr
    );
    assert_eq!(std::fs::read_to_string(&target).expect("plan.sh"), "mine");

    let mut forced = args.to_vec();
    forced.push("--force");
    let third = plan_on("torch-cuda-venv", &forced, &[]);
    assert_eq!(third.code, 0, "{}", third.stderr);
    assert_eq!(std::fs::read_to_string(&target).expect("plan.sh"), script);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .collect();
    assert_eq!(names.len(), 2, "no temporary files left: {names:?}");
}

// --- Running a plan inside a fixture copy with stand-in commands --------------------------------

/// Logs the call (`name [arg] [arg]`) to $STUB_LOG.
const LOG: &str = r#"{ printf '%s' "${0##*/}"; for a in "$@"; do printf ' [%s]' "$a"; done; printf '\n'; } >>"$STUB_LOG""#;

/// Stand-ins for the commands plans run. Each records its call; package tools keep what was
/// installed in $STUB_STATE/packages so a second run finds it; `$STUB_FAIL` names a package
/// whose install fails.
fn stubs() -> Vec<(&'static str, String)> {
    let with_log = |body: &str| format!("#!/bin/sh\n{LOG}\n{body}\n");
    vec![
        // `-n` (never prompt) is what a run from the TUI passes.
        (
            "sudo",
            with_log("[ \"${1:-}\" = -n ] && shift; exec \"$@\""),
        ),
        (
            "apt-get",
            with_log(
                r#"for a in "$@"; do
  if [ -n "${STUB_FAIL:-}" ] && [ "$a" = "$STUB_FAIL" ]; then
    echo "E: Unable to locate package $a" >&2; exit 100
  fi
done
if [ "$1" = install ]; then
  shift
  for a in "$@"; do
    case "$a" in -*) ;; *=*) echo "${a%%=*} ${a#*=}" >>"$STUB_STATE/packages" ;; *) echo "$a 1.0-1" >>"$STUB_STATE/packages" ;; esac
  done
fi"#,
            ),
        ),
        (
            "apt-cache",
            with_log(
                r#"[ "$1" = madison ] && [ -f "$STUB_STATE/madison-$2" ] && cat "$STUB_STATE/madison-$2"
exit 0"#,
            ),
        ),
        (
            "dpkg",
            with_log(
                r#"[ "$1" = -i ] && echo "cuda-keyring 1.1-1" >>"$STUB_STATE/packages"; exit 0"#,
            ),
        ),
        (
            "dpkg-query",
            with_log(
                r#"format=$2; package=$3
line=$(grep -s "^$package " "$STUB_STATE/packages" | tail -n 1) || exit 1
[ -n "$line" ] || exit 1
case "$format" in
  *Status*) printf 'install ok installed' ;;
  *Version*) printf '%s' "${line#* }" ;;
esac"#,
            ),
        ),
        ("wget", with_log(r#"[ "$1" = -qO ] && : >"$2"; exit 0"#)),
        ("update-initramfs", with_log("exit 0")),
        // --import queues the key for the next boot; --test-key then says so (mokutil 0.7).
        (
            "mokutil",
            with_log(
                r#"case "$1" in
  --test-key) if grep -sqxF -- "$2" "$STUB_STATE/mok-new"; then echo "$2 is already in the enrollment request"; exit 1; fi
    echo "$2 is not enrolled"; exit 0 ;;
  --import) printf '%s\n' "$2" >>"$STUB_STATE/mok-new" ;;
esac"#,
            ),
        ),
        ("amdgpu-install", with_log("exit 0")),
        ("usermod", with_log("exit 0")),
        ("gpu-doctor", with_log("exit 0")),
        (
            "conda",
            with_log(
                r#"case "$1" in
  list) grep -sqxF -- "$3" "$STUB_STATE/conda-envs" ;;
  create) printf '%s\n' "$4" >>"$STUB_STATE/conda-envs" ;;
  run) case "$*" in *torch.version.cuda*|*'requires(dist)'*) exit "${STUB_LANDED:-0}" ;; esac
       case " $* " in *" -c "*) exit 1 ;; esac ;;
esac"#,
            ),
        ),
        (
            "python3",
            with_log(
                r#"if [ "$1" = -m ] && [ "$2" = venv ]; then
  mkdir -p -- "$3/bin"
  printf '#!/bin/sh\n%s\n%s\n' "$STUB_VENV_PYTHON" "$STUB_VENV_CHECKS" >"$3/bin/python"
  chmod +x "$3/bin/python"
fi"#,
            ),
        ),
    ]
}

/// A copy of a fixture machine with the stand-ins first on PATH and the few real tools the
/// script uses last; everything lives in a temp dir.
struct Sandbox {
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

/// Copies a tree, keeping links; an absolute link is re-pointed inside the copy, as `--root`
/// reads it, so nothing run from the copy can reach this machine's files.
fn copy_tree(from: &Path, to: &Path, root: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixture") {
        let entry = entry.expect("entry");
        let kind = entry.file_type().expect("file type");
        let dest = to.join(entry.file_name());
        if kind.is_symlink() {
            let target = std::fs::read_link(entry.path()).expect("link");
            let target = if target.is_absolute() {
                root.join(target.strip_prefix("/").expect("absolute"))
            } else {
                target
            };
            std::os::unix::fs::symlink(target, &dest).expect("symlink");
        } else if kind.is_dir() {
            copy_tree(&entry.path(), &dest, root);
        } else {
            std::fs::copy(entry.path(), &dest).expect("copy");
        }
    }
}

fn write_exec(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("write stub");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

impl Sandbox {
    fn new(fixture: &str) -> Sandbox {
        let dir = crate::support::tempdir();
        let root = dir.path().join("root");
        copy_tree(&fixture_dir(fixture).join("root"), &root, &root);
        let stubs = root.join("opt/stubs/bin");
        let tools = root.join("opt/tools/bin");
        std::fs::create_dir_all(&stubs).expect("stubs");
        std::fs::create_dir_all(&tools).expect("tools");
        std::fs::create_dir_all(dir.path().join("state")).expect("state");
        std::fs::create_dir_all(dir.path().join("tmp")).expect("tmp");
        for (name, text) in stubs_list() {
            write_exec(&stubs.join(name), &text);
        }
        for tool in [
            "mkdir", "tee", "grep", "rm", "mktemp", "awk", "cat", "tail", "chmod",
        ] {
            let real = which::which(tool).unwrap_or_else(|e| panic!("{tool}: {e}"));
            std::os::unix::fs::symlink(real, tools.join(tool)).expect("tool link");
        }
        let mut env: Vec<(String, String)> = fixture_env(fixture)
            .into_iter()
            .filter(|(k, _)| k != "PATH")
            .collect();
        let fixture_path = fixture_env(fixture)
            .into_iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v)
            .unwrap_or_default();
        let path = |p: &str| dir.path().join(p).display().to_string();
        env.extend([
            (
                "PATH".to_string(),
                format!("/opt/stubs/bin:{fixture_path}:/opt/tools/bin"),
            ),
            ("STUB_LOG".to_string(), path("calls.log")),
            ("STUB_STATE".to_string(), path("state")),
            ("TMPDIR".to_string(), path("tmp")),
            (
                "STUB_VENV_PYTHON".to_string(),
                LOG.replace("${0##*/}", "venv-python"),
            ),
            // The venv's python: the plan's checks that a GPU build landed pass (or fail, with
            // STUB_LANDED=1); any other `-c` (the has_dist guard) finds nothing installed.
            (
                "STUB_VENV_CHECKS".to_string(),
                r#"case "$1" in -c) case "$2" in *torch.version.cuda*|*'requires(dist)'*) exit "${STUB_LANDED:-0}" ;; esac; exit 1 ;; esac"#
                    .to_string(),
            ),
        ]);
        Sandbox { dir, env }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    fn with(mut self, key: &str, value: &str) -> Sandbox {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// `plan ARGS --execute --yes --log <sandbox>/plan.log`.
    fn execute(&self, args: &[&str]) -> Out {
        let log = self.dir.path().join("plan.log").display().to_string();
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--execute", "--yes", "--log", log.as_str()]);
        gpu_doctor(&self.root(), &self.env, &all, self.dir.path())
    }

    /// The recorded calls, with the sandbox's own path shown as `<sandbox>`.
    fn calls(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("calls.log")).unwrap_or_default();
        text.replace(&self.dir.path().display().to_string(), "<sandbox>")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("plan.log")).unwrap_or_default()
    }

    fn state(&self, name: &str, text: &str) {
        std::fs::write(self.dir.path().join("state").join(name), text).expect("state");
    }
}

fn stubs_list() -> Vec<(&'static str, String)> {
    stubs()
}

/// The calls that change something, in order: checks such as dpkg-query are left out; a
/// command run as root shows twice, as `sudo [cmd]` and then as the stand-in `cmd` it runs
/// (`mkdir` and `tee` are real tools, so only their sudo line shows).
fn changes(calls: &str) -> Vec<String> {
    calls
        .lines()
        .filter(|l| {
            !l.starts_with("dpkg-query ")
                && !l.starts_with("apt-cache ")
                && !l.starts_with("conda [list]")
                && !l.contains(" [-c] ")
        })
        .map(|l| {
            // The keyring lands in mktemp's folder, which differs every run.
            let mut out = l.to_string();
            let marker = "<sandbox>/tmp/";
            if let Some(start) = out.find(marker) {
                let rest = start + marker.len();
                let end = out[rest..].find('/').map_or(out.len(), |i| rest + i);
                out.replace_range(start..end, "<tmp>");
            }
            out
        })
        .collect()
}

/// The nouveau fixture's whole plan, run: every change in order, through sudo where it needs
/// root, the blacklist written inside the copy, a reboot asked for, and the verify step left
/// for after it.
#[test]
fn execute_runs_every_step_in_order() {
    let sandbox = Sandbox::new("nouveau-loaded");
    let out = sandbox.execute(&[]);
    assert_eq!(out.code, 0, "{}", out.block());
    let calls = sandbox.calls();
    assert_eq!(
        changes(&calls),
        [
            "sudo [mkdir] [-p] [--] [<sandbox>/root/etc/modprobe.d]",
            "sudo [tee] [--] [<sandbox>/root/etc/modprobe.d/blacklist-nouveau.conf]",
            "sudo [update-initramfs] [-u]",
            "update-initramfs [-u]",
            "wget [-qO] [<tmp>/cuda-keyring_1.1-1_all.deb] [https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/cuda-keyring_1.1-1_all.deb]",
            "sudo [dpkg] [-i] [<tmp>/cuda-keyring_1.1-1_all.deb]",
            "dpkg [-i] [<tmp>/cuda-keyring_1.1-1_all.deb]",
            "sudo [apt-get] [update]",
            "apt-get [update]",
            "sudo [apt-get] [install] [-y] [linux-headers-5.15.0-119-generic] [build-essential]",
            "apt-get [install] [-y] [linux-headers-5.15.0-119-generic] [build-essential]",
            "sudo [apt-get] [install] [-y] [nvidia-driver-pinning-580]",
            "apt-get [install] [-y] [nvidia-driver-pinning-580]",
            "sudo [apt-get] [install] [-y] [cuda-drivers-580]",
            "apt-get [install] [-y] [cuda-drivers-580]",
        ]
        .map(String::from),
        "{calls}"
    );
    let blacklist =
        std::fs::read_to_string(sandbox.root().join("etc/modprobe.d/blacklist-nouveau.conf"))
            .expect("blacklist written inside the copy");
    assert_eq!(blacklist, "blacklist nouveau\noptions nouveau modeset=0\n");
    assert!(
        !calls.contains("gpu-doctor"),
        "verify waits for the reboot\n{calls}"
    );
    assert!(out.stdout.contains("Reboot to finish"), "{}", out.stdout);
    assert!(
        out.stderr.contains("the plan ran to the end"),
        "{}",
        out.stderr
    );
    let log = sandbox.log();
    assert!(
        log.contains("==> [5/6] driver:") && log.contains("gpu-doctor plan: all 6 steps done."),
        "{log}"
    );

    // A second run (as after the reboot) finds everything done: apt-get update is skipped too
    // (everything it served is installed), and now the check runs.
    let again = sandbox.execute(&[]);
    assert_eq!(again.code, 0, "{}", again.block());
    let second: Vec<String> = changes(&sandbox.calls())
        .into_iter()
        .skip(changes(&calls).len())
        .collect();
    assert_eq!(
        second,
        ["gpu-doctor [doctor]", "gpu-doctor [smoke]"],
        "{}",
        again.stdout
    );
    let skipped = again
        .stdout
        .lines()
        .filter(|l| l.starts_with("    skipped: "))
        .count();
    assert_eq!(skipped, 5, "{}", again.stdout);
}

/// Stopped in each step in turn (the install that step makes fails), then run again: the
/// second run finishes, skipping every step the stopped one had finished, and runs the rest.
#[test]
fn execute_resumes_where_a_stopped_run_left_off() {
    let steps = [
        "nouveau-off",
        "cuda-keyring",
        "apt-update",
        "driver-prerequisites",
        "driver",
    ];
    for (at, package) in [
        (3, "linux-headers-5.15.0-119-generic"),
        (4, "nvidia-driver-pinning-580"),
        (4, "cuda-drivers-580"),
    ] {
        let stopped = Sandbox::new("nouveau-loaded").with("STUB_FAIL", package);
        let out = stopped.execute(&[]);
        assert_eq!(out.code, 3, "{package}: {}", out.block());
        let done = steps[..at].join(" ");
        assert!(
            out.stdout.contains(&format!("Done: {done}\n")),
            "{package}: {}",
            out.stdout
        );
        // The same sandbox, the failure gone: the run resumes.
        let again = Sandbox {
            dir: stopped.dir,
            env: stopped
                .env
                .into_iter()
                .filter(|(k, _)| k != "STUB_FAIL")
                .collect(),
        };
        let out = again.execute(&[]);
        assert_eq!(out.code, 0, "{package}: {}", out.block());
        for (i, id) in steps.iter().enumerate() {
            let shown = out
                .stdout
                .split("==> [")
                .find(|s| s.contains(&format!("] {id}:")))
                .unwrap_or_default();
            let skipped = shown.contains("    skipped: ");
            // apt-update is skipped only once everything it serves is installed.
            if i < at && *id != "apt-update" {
                assert!(skipped, "{package}: {id} was done before\n{}", out.stdout);
            } else if i > at {
                assert!(
                    shown.contains("    done"),
                    "{package}: {id}\n{}",
                    out.stdout
                );
            }
        }
    }
}

/// The H200's toolkit came from NVIDIA's runfile (no dpkg record): the newest stable stack is
/// that same CUDA 13.0, and the plan leaves the folder as it is instead of writing apt's copy
/// over it (the real H200 plans this toolkit, 2026-12-02).
#[test]
fn execute_keeps_a_runfile_toolkit_of_the_same_release() {
    let sandbox = Sandbox::new("h200");
    sandbox.state(
        "madison-libnccl2",
        " libnccl2 | 2.28.9-1+cuda13.0 | https://x Packages\n",
    );
    let out = sandbox.execute(&["--via", "apt", "--cuda", "13.0"]);
    assert_eq!(out.code, 0, "{}", out.block());
    let calls = changes(&sandbox.calls());
    assert!(
        !calls.iter().any(|c| c.contains("cuda-toolkit-13-0")),
        "{calls:#?}"
    );
    assert!(
        out.stdout
            .contains("skipped: cuda-toolkit-13-0 is installed, or CUDA 13.0 already is in /usr/local/cuda-13.0"),
        "{}",
        out.stdout
    );
}

/// A failing install stops the plan there: exit 3, the failed step named, what was done and
/// what was not, nothing run after it, and the same in the log.
#[test]
fn execute_stops_at_the_first_failure() {
    let sandbox = Sandbox::new("nouveau-loaded").with("STUB_FAIL", "cuda-drivers-580");
    let out = sandbox.execute(&[]);
    assert_eq!(out.code, 3, "{}", out.block());
    let calls = sandbox.calls();
    assert!(
        calls
            .trim_end()
            .ends_with("apt-get [install] [-y] [cuda-drivers-580]"),
        "nothing after the failure:\n{calls}"
    );
    for text in [
        "E: Unable to locate package cuda-drivers-580",
        "gpu-doctor plan: FAILED in step driver (exit status 100).",
        "Done: nouveau-off cuda-keyring apt-update driver-prerequisites",
        "Not done: driver verify",
    ] {
        assert!(out.stdout.contains(text), "{text}\n{}", out.stdout);
        assert!(sandbox.log().contains(text), "log: {text}");
    }
    assert!(
        out.stderr.contains("the plan stopped (exit status 100)"),
        "{}",
        out.stderr
    );
    // The log's last word is for a person, not Rust's debug form.
    let log = sandbox.log();
    assert!(
        log.contains("plan --execute: stopped with exit status 100") && !log.contains("Failed("),
        "{log}"
    );
}

/// NCCL and cuDNN versions are looked up with apt-cache madison and pinned.
#[test]
fn execute_pins_nccl_to_the_cuda_minor() {
    let sandbox = Sandbox::new("healthy-driver-toolkit");
    sandbox.state(
        "madison-libnccl2",
        " libnccl2 | 2.28.9-1+cuda13.0 | https://x Packages\n libnccl2 | 2.21.5-1+cuda12.4 | https://x Packages\n libnccl2 | 2.20.5-1+cuda12.4 | https://x Packages\n",
    );
    let out = sandbox.execute(&["--via", "apt", "--cuda", "12.4"]);
    assert_eq!(out.code, 0, "{}", out.block());
    let calls = changes(&sandbox.calls());
    assert!(
        calls.contains(
            &"apt-get [install] [-y] [libnccl2=2.21.5-1+cuda12.4] [libnccl-dev=2.21.5-1+cuda12.4]"
                .to_string()
        ),
        "{calls:#?}"
    );
    assert!(
        calls.contains(&"gpu-doctor [doctor]".to_string()),
        "{calls:#?}"
    );
    let profile = std::fs::read_to_string(sandbox.root().join("etc/profile.d/gpu-doctor-cuda.sh"))
        .expect("profile");
    assert!(
        profile.contains("export PATH=/usr/local/cuda-12.4/bin${PATH:+:${PATH}}"),
        "{profile}"
    );
}

/// Without a terminal, --execute runs nothing unless --yes says so.
#[test]
fn execute_without_a_terminal_needs_yes() {
    let sandbox = Sandbox::new("nouveau-loaded");
    let out = gpu_doctor(
        &sandbox.root(),
        &sandbox.env,
        &["--execute"],
        sandbox.dir.path(),
    );
    assert_eq!(out.code, 2, "{}", out.block());
    assert!(out.stderr.contains("pass --yes"), "{}", out.stderr);
    assert!(sandbox.calls().is_empty());
    assert!(!sandbox.root().join("etc/modprobe.d").exists());
}

/// An environment's Python that leads outside --root is never run.
#[test]
fn execute_refuses_an_interpreter_outside_the_root() {
    let sandbox = Sandbox::new("torch-cpu-build");
    let python = sandbox.root().join("home/bob/proj/.venv/bin/python3");
    std::fs::remove_file(&python).expect("remove");
    std::os::unix::fs::symlink("/nonexistent/gpu-doctor-test/python3", &python).expect("link");
    let out = sandbox.execute(&[]);
    assert_eq!(out.code, 3, "{}", out.block());
    assert!(out.stderr.contains("not run:"), "{}", out.stderr);
    assert!(sandbox.calls().is_empty());
}

/// Hostile environment names and paths stay one argument: the plan lints, runs, hands the
/// exact text to conda or python, and nothing they contain is executed.
#[test]
fn hostile_names_cannot_inject_commands() {
    let probe = crate::support::tempdir();
    let pwned = probe.path().join("pwned");
    let p = pwned.display();
    let hostile = [
        "x; rm -rf /".to_string(),
        format!("$(touch {p})"),
        format!("`touch {p}`"),
        format!("it's \"quoted\" $HOME; touch {p}"),
        format!("new\nline; touch {p}"),
        format!("-rf ${{IFS}}|| touch {p}"),
    ];
    let benign_lines = {
        let sandbox = Sandbox::new("torch-cuda-venv");
        let out_file = sandbox.dir.path().join("plan.sh").display().to_string();
        let args = [
            "--via",
            "conda",
            "--framework",
            "torch==2.5.1",
            "--env",
            "ml",
            "-o",
            out_file.as_str(),
        ];
        let saved = gpu_doctor(&sandbox.root(), &sandbox.env, &args, sandbox.dir.path());
        assert_eq!(saved.code, 0, "{}", saved.block());
        std::fs::read_to_string(sandbox.dir.path().join("environment.yml"))
            .expect("yml")
            .lines()
            .count()
    };
    for name in &hostile {
        // A line break would have to be cleaned, and a conda name starting with '-' reads as
        // an option: those steps are refused (#40), the rest stay one argument.
        let conda_refused = name.contains('\n') || name.starts_with('-');
        let pip_refused = name.contains('\n');
        if conda_refused {
            env_name_refuses_the_step(name, "conda", &pwned);
        } else {
            conda_env_name_stays_one_argument(name, benign_lines, &pwned);
        }
        if pip_refused {
            env_name_refuses_the_step(name, "pip", &pwned);
        } else {
            pip_env_name_stays_one_argument(name, &pwned);
        }
    }
}

/// #40: an environment name the plan would have to clean (or that reads as an option) is
/// never written cleaned into a command: the step says why and stops the plan, and nothing
/// is run with the name.
fn env_name_refuses_the_step(name: &str, via: &str, pwned: &Path) {
    let sandbox = Sandbox::new("torch-cuda-venv");
    let env_arg = format!("--env={name}");
    let args = [
        "--via",
        via,
        "--framework",
        "torch==2.5.1",
        env_arg.as_str(),
    ];
    let written = gpu_doctor(&sandbox.root(), &sandbox.env, &args, sandbox.dir.path());
    assert_eq!(written.code, 0, "{name:?}: {}", written.block());
    lint("refused", &written.stdout);
    assert!(
        written.stdout.contains("\nrefused 'refused: "),
        "{name:?}: {}",
        written.stdout
    );
    // The JSON face says the same: the step refused, with no guard or command naming the
    // value cleaned.
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let json = gpu_doctor(
        &sandbox.root(),
        &sandbox.env,
        &json_args,
        sandbox.dir.path(),
    );
    let plan: serde_json::Value = serde_json::from_str(&json.stdout).expect("plan JSON");
    let refused: Vec<&serde_json::Value> = plan["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter(|s| s.get("refused").is_some())
        .collect();
    assert!(!refused.is_empty(), "{name:?}: {}", json.stdout);
    for step in refused {
        assert_eq!(step["guards"].as_array().map(Vec::len), Some(0), "{step}");
        let commands = step["commands"].as_array().expect("commands");
        assert_eq!(commands.len(), 1, "{step}");
        assert!(
            commands[0]
                .as_str()
                .is_some_and(|c| c.starts_with("refused 'refused: ")),
            "{step}"
        );
    }
    // `plan --execute` says the plan stopped (3), the step and its reason shown as it ran.
    let out = sandbox.execute(&args);
    assert_eq!(out.code, 3, "{name:?}: {}", out.block());
    assert!(
        out.block().contains("gpu-doctor plan: refused: "),
        "{name:?}: {}",
        out.block()
    );
    let calls = sandbox.calls();
    assert!(!calls.contains(&format!("[{name}]")), "{name:?}\n{calls}");
    assert!(!calls.contains(&format!("[./{name}]")), "{name:?}\n{calls}");
    assert!(!pwned.exists(), "{name:?} ran a command");
}

/// conda: the name goes to conda create/install/run and into environment.yml, which keeps it
/// inside one quoted scalar (`benign_lines` lines, as with a plain name).
fn conda_env_name_stays_one_argument(name: &str, benign_lines: usize, pwned: &Path) {
    let sandbox = Sandbox::new("torch-cuda-venv");
    let env_arg = format!("--env={name}");
    let args = [
        "--via",
        "conda",
        "--framework",
        "torch==2.5.1",
        env_arg.as_str(),
    ];
    let written = gpu_doctor(&sandbox.root(), &sandbox.env, &args, sandbox.dir.path());
    assert_eq!(written.code, 0, "{name:?}: {}", written.block());
    lint("hostile", &written.stdout);
    // environment.yml keeps the name inside one quoted scalar: no extra lines or keys.
    let out_dir = sandbox.dir.path().join("out");
    std::fs::create_dir_all(&out_dir).expect("out");
    let out_file = out_dir.join("plan.sh").display().to_string();
    let mut with_o = args.to_vec();
    with_o.extend(["-o", out_file.as_str()]);
    let saved = gpu_doctor(&sandbox.root(), &sandbox.env, &with_o, sandbox.dir.path());
    assert_eq!(saved.code, 0, "{name:?}: {}", saved.block());
    let yml = std::fs::read_to_string(out_dir.join("environment.yml")).expect("yml");
    let names: Vec<&str> = yml.lines().filter(|l| l.starts_with("name: ")).collect();
    assert_eq!(names.len(), 1, "{name:?}\n{yml}");
    assert!(
        names[0].starts_with("name: \"") && names[0].ends_with('"'),
        "{yml}"
    );
    assert_eq!(yml.lines().count(), benign_lines, "{name:?}\n{yml}");
    let out = sandbox.execute(&args);
    assert_eq!(out.code, 0, "{name:?}: {}", out.block());
    let calls = sandbox.calls();
    assert!(
        calls.contains(&format!(
            "conda [create] [-y] [-n] [{name}] [-c] [conda-forge] [python=3.12]"
        )),
        "{name:?}\n{calls}"
    );
    assert!(
        calls.contains(&format!(
            "conda [run] [-n] [{name}] [python] [-m] [pip] [install] [torch==2.5.1+cu121]"
        )),
        "{name:?}\n{calls}"
    );
    assert!(!pwned.exists(), "{name:?} ran a command");
}

/// pip: the name is a venv folder (relative, so below the folder the plan runs in).
fn pip_env_name_stays_one_argument(name: &str, pwned: &Path) {
    let sandbox = Sandbox::new("torch-cuda-venv");
    let env_arg = format!("--env={name}");
    let args = [
        "--via",
        "pip",
        "--framework",
        "torch==2.5.1",
        env_arg.as_str(),
    ];
    let out = sandbox.execute(&args);
    assert_eq!(out.code, 0, "{name:?}: {}", out.block());
    let calls = sandbox.calls();
    assert!(
        calls.contains(&format!("python3 [-m] [venv] [./{name}]")),
        "{name:?}\n{calls}"
    );
    assert!(
        calls.contains("venv-python [-m] [pip] [install] [torch==2.5.1+cu121]"),
        "{name:?}\n{calls}"
    );
    assert!(
        sandbox.root().join(name).join("bin/python").exists(),
        "{name:?}"
    );
    assert!(!pwned.exists(), "{name:?} ran a command");
}

/// AMD plans run: ROCm 7.1.1 for an RX 9070 XT (installer package, use case, --no-dkms, then
/// rocminfo), and the override for an RX 6700 XT written below the root.
#[test]
fn execute_amd_plans() {
    let sandbox = Sandbox::new("amd-rx9070xt-rocm62");
    let rocminfo = sandbox.root().join("opt/rocm/bin/rocminfo");
    std::fs::create_dir_all(rocminfo.parent().expect("bin")).expect("mkdir");
    write_exec(&rocminfo, &format!("#!/bin/sh\n{LOG}\n"));
    let out = sandbox.execute(&[]);
    assert_eq!(out.code, 0, "{}", out.block());
    let calls = sandbox.calls();
    assert!(
        calls.contains(
            "/amdgpu-install_7.1.1.70101-1_all.deb] [https://repo.radeon.com/amdgpu-install/\
             7.1.1/ubuntu/noble/amdgpu-install_7.1.1.70101-1_all.deb]"
        ),
        "{calls}"
    );
    assert!(
        calls.contains("sudo [amdgpu-install] [-y] [--usecase=graphics,rocm] [--no-dkms]"),
        "{calls}"
    );
    assert!(calls.contains("rocminfo"), "{calls}");

    let sandbox = Sandbox::new("amd-rx6700xt-no-gfx1031");
    let out = sandbox.execute(&[]);
    assert_eq!(out.code, 0, "{}", out.block());
    let written = std::fs::read_to_string(
        sandbox
            .root()
            .join("etc/profile.d/gpu-doctor-hsa-override.sh"),
    )
    .expect("override written inside the copy");
    assert!(
        written.ends_with("export HSA_OVERRIDE_GFX_VERSION=10.3.0\n"),
        "{written}"
    );
    assert!(!sandbox.calls().contains("pip"), "the torch there stays");
}

/// manifests/pypi.toml is what scripts/gen-pypi-meta.py makes of the vendored PyPI answers in
/// scripts/pypi-data/, offline.
#[test]
fn the_pypi_generator_reproduces_the_checked_in_table() {
    crate::support::generator_reproduces_its_table("gen-pypi-meta.py");
}

/// The plan stops when pip "succeeds" without the GPU build: the check after pip fails and
/// says so (here the stand-in python reports no CUDA in torch).
#[test]
fn execute_stops_when_the_gpu_build_did_not_land() {
    let sandbox = Sandbox::new("torch-cuda-venv").with("STUB_LANDED", "1");
    let out = sandbox.execute(&["--via", "pip", "--framework", "torch==2.5.1", "--env", "v"]);
    assert_eq!(out.code, 3, "{}", out.block());
    let said = format!("{}{}", out.stdout, sandbox.log());
    assert!(
        said.contains("did not land: torch.version.cuda is None")
            && said.contains("FAILED in step torch"),
        "{said}"
    );
}

// --- Issue #23: the machines of the report -------------------------------------------------------

/// A working 550 host asking for torch: the newest build 550 runs (cu126 through minor-version
/// compatibility), the driver stays, and the newer build an upgrade would unlock is an option.
#[test]
fn pip_torch_keeps_a_working_driver() {
    let script = snapshot_plan(
        "pip_torch_keeps_a_working_driver",
        "healthy-torch-cu124-driver-550",
        &["--framework", "torch", "--env", "/srv/new"],
        &[],
    );
    assert!(script.contains("--index-url https://download.pytorch.org/whl/cu126"));
    assert!(!script.contains("reboot_needed=1"));
    assert_eq!(
        apt_installs(&script),
        ["sudo apt-get install -y python3-venv"]
    );
    assert!(script.contains("--framework torch --env /srv/new --driver auto` plans it"));
}

/// An RTX 5090 on a driver that predates it: the new driver uses the open kernel modules (NVIDIA
/// supports Blackwell only with them), although the working one is proprietary.
#[test]
fn rtx5090_gets_the_open_modules() {
    let out = plan_on("driver-535-on-rtx5090", &[], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    lint("rtx5090_gets_the_open_modules", &out.stdout);
    assert!(out.stdout.contains("sudo apt-get install -y nvidia-open"));
    assert!(!out.stdout.contains("install -y cuda-drivers"));
    let json = plan_on("driver-535-on-rtx5090", &["--json"], &[]);
    let plan: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    let driver = plan["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .find(|s| s["id"] == "driver")
        .expect("a driver step");
    let why = driver["why"].as_str().expect("why");
    assert!(
        why.contains("NVIDIA supports NVIDIA GeForce RTX 5090 only with them")
            && why.contains("switches flavour"),
        "{why}"
    );
    assert_eq!(driver["serves"][0], "driver-too-old-for-gpu");
}

/// A Fedora machine planned for Ubuntu 24.04: no Fedora kernel string in any apt line; the
/// headers come from `uname -r` when the script runs there.
#[test]
fn another_system_gets_the_headers_of_its_own_kernel() {
    let out = plan_on("fedora-akmods-secure-boot", &["--os", "ubuntu-24.04"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    lint("another_system_headers", &out.stdout);
    let code: Vec<&str> = out.stdout.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(code.iter().all(|l| !l.contains(".fc")), "{}", out.stdout);
    assert!(code.iter().any(|l| l.contains("linux-headers-\"$kernel\"")));
}

/// A 24.04 container on a driver-550 host: the toolkit that driver runs (12.4) is not in
/// NVIDIA's ubuntu2404 repository, so no apt line names it; torch comes as wheels instead.
#[test]
fn ubuntu_24_04_has_no_toolkit_before_12_5() {
    let out = plan_on(
        "container-ubuntu2404-driver-550",
        &["--via", "apt", "--cuda", "12.4"],
        &[],
    );
    assert_eq!(out.code, 1, "{}", out.block());
    assert!(
        out.stderr.contains("no cuda-toolkit-12-4")
            && out.stderr.contains("--via conda --cuda 12.4"),
        "{}",
        out.stderr
    );
    let torch = plan_on(
        "container-ubuntu2404-driver-550",
        &["--framework", "torch"],
        &[],
    );
    assert_eq!(torch.code, 0, "{}", torch.stderr);
    assert!(torch.stdout.contains("whl/cu126"));
    assert_eq!(
        apt_installs(&torch.stdout),
        ["sudo apt-get install -y python3-venv"]
    );
}

/// The `apt-get install` lines of a script: the packages it installs from apt.
fn apt_installs(script: &str) -> Vec<&str> {
    script
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && l.contains("apt-get install"))
        .collect()
}

/// Kepler on 22.04: R470 is its last driver and NVIDIA's ubuntu2204 repository starts at CUDA
/// 11.7, which R470 cannot run, so a toolkit is refused; torch's cu118 wheels run there.
#[test]
fn kepler_on_22_04_gets_wheels_not_a_toolkit() {
    let out = plan_on(
        "no-driver-kepler-k80",
        &["--via", "apt", "--cuda", "11.4"],
        &[],
    );
    assert_eq!(out.code, 1, "{}", out.block());
    assert!(
        out.stderr.contains("no cuda-toolkit-11-4"),
        "{}",
        out.stderr
    );
    let wheels = plan_on("no-driver-kepler-k80", &["--framework", "torch"], &[]);
    assert_eq!(wheels.code, 0, "{}", wheels.stderr);
    assert!(wheels.stdout.contains("cuda-drivers-470") && wheels.stdout.contains("whl/cu118"));
    assert!(!wheels.stdout.contains("cuda-toolkit-11-4") && !wheels.stdout.contains("+cuda11.4"));
}

/// jax[cuda13] for a new environment on a system whose Python (3.10) no release with that
/// extra supports: the new venv gets a Python that has one, and the plan says which.
#[test]
fn a_new_environment_gets_a_python_the_extra_supports() {
    let out = plan_on(
        "healthy-torch-cu124-driver-550",
        &[
            "--framework",
            "jax[cuda13]",
            "--driver",
            "auto",
            "--env",
            "jaxenv",
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    lint("a_new_environment_gets_a_python", &out.stdout);
    assert!(
        out.stdout
            .contains("So the plan makes the new environment with Python 3.")
    );
    assert!(out.stdout.contains("has_extra_wheels jax cuda13"));
}

/// The plain plan recorded on the real H200 (`tests/fixtures/real/h200-plan.sh`, release build,
/// 2026-12-02) and the one the h200 fixture gets: the same steps, and neither touches the
/// working 580 driver.
#[test]
fn the_h200_fixture_plans_what_the_real_h200_planned() {
    let real = include_str!("../fixtures/real/h200-plan.sh");
    // The real H200 is healthy: asked for nothing, the plan changes nothing (the recording is
    // of an older gpu-doctor that set up the newest stack there unasked); asked for the system
    // toolkit it recorded, it plans the same steps.
    let plain = plan_on("h200", &[], &[]);
    assert_eq!(plain.code, 0, "{}", plain.block());
    assert!(
        !plain.stdout.lines().any(|l| l.starts_with("step ")),
        "{}",
        plain.stdout
    );
    assert!(plain.stdout.contains("Nothing to fix"), "{}", plain.stdout);
    let ours = plan_on("h200", &["--via", "apt", "--cuda", "13.0"], &[]);
    assert_eq!(ours.code, 0, "{}", ours.block());
    let steps = |script: &str| -> Vec<String> {
        script
            .lines()
            .filter_map(|l| l.strip_prefix("step "))
            .map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(steps(&ours.stdout), steps(real));
    assert_eq!(
        steps(real),
        [
            "cuda-keyring",
            "apt-update",
            "cuda-toolkit",
            "cuda-environment",
            "cudnn",
            "nccl",
            "verify"
        ]
    );
    for script in [real, ours.stdout.as_str()] {
        assert!(script.contains("#   driver: keep the working driver"));
        assert!(
            !script.lines().any(|l| !l.starts_with('#')
                && (l.contains("cuda-drivers") || l.contains("nvidia-open"))),
            "a driver line in the plan"
        );
    }
}

/// The TUI's services around the real ones, standing in for a user who presses `x` while step
/// `stop_at` runs: the stop file is made as that step starts, so the script stops before the
/// next one.
struct StopsAt {
    real: gpu_doctor::tui::AppServices,
    stop_at: std::sync::atomic::AtomicUsize,
}

impl gpu_doctor::tui::Services for StopsAt {
    fn examine(&self) -> Result<gpu_doctor::report::Report, String> {
        self.real.examine()
    }
    fn sample(&self) -> Result<Vec<gpu_doctor::report::Gpu>, String> {
        self.real.sample()
    }
    fn plan_options(
        &self,
        report: &gpu_doctor::report::Report,
    ) -> gpu_doctor::tui::services::PlanOptions {
        self.real.plan_options(report)
    }
    fn plan(
        &self,
        report: &gpu_doctor::report::Report,
        choice: &gpu_doctor::tui::services::PlanChoice,
    ) -> Result<gpu_doctor::tui::services::PlanText, String> {
        self.real.plan(report, choice)
    }
    fn smoke(
        &self,
        report: Option<&gpu_doctor::report::Report>,
        progress: &mut dyn FnMut(gpu_doctor::tui::services::SmokeEvent),
    ) {
        self.real.smoke(report, progress);
    }
    fn sudo_asks(&self) -> bool {
        self.real.sudo_asks()
    }
    fn explain(
        &self,
        report: &gpu_doctor::report::Report,
        text: &str,
    ) -> gpu_doctor::report::explain::Explain {
        self.real.explain(report, text)
    }
    fn run_plan(
        &self,
        plan: &gpu_doctor::tui::services::PlanText,
        log: &Path,
        on_event: &mut dyn FnMut(gpu_doctor::tui::services::RunEvent),
    ) {
        use gpu_doctor::tui::services::RunEvent;
        let at = self.stop_at.load(std::sync::atomic::Ordering::SeqCst);
        let mut stop = None;
        self.real.run_plan(plan, log, &mut |event| {
            match &event {
                RunEvent::Started { stop: file, .. } => stop = Some(file.clone()),
                RunEvent::Step(n) if *n == at => {
                    std::fs::write(stop.as_ref().expect("started first"), "").expect("stop");
                }
                _ => {}
            }
            on_event(event);
        });
    }
}

/// The TUI's Plan screen runs the nouveau fixture's plan for real (bash and the stand-in
/// commands, as `--execute` does), stopped while each step runs in turn: the run stops before
/// the next step with the steps so far done, and `x` again resumes it, the steps finished
/// before skipped and marked, to the end.
#[test]
fn the_tui_runs_the_plan_stops_between_steps_and_resumes() {
    use crossterm::event::KeyCode;
    use gpu_doctor::tui::run::StepState;
    use gpu_doctor::tui::services::Outcome;
    use gpu_doctor::tui::state::Tab;

    for stop_at in 1..=5 {
        let sandbox = Sandbox::new("nouveau-loaded");
        let timeout =
            std::time::Duration::from_secs(crate::support::TIMEOUT_SECS.parse().expect("timeout"));
        let host = gpu_doctor::host::Host::rooted(
            sandbox.root(),
            gpu_doctor::host::Env::from_pairs(sandbox.env.clone()),
            timeout,
        );
        let services = std::sync::Arc::new(StopsAt {
            real: gpu_doctor::tui::AppServices::new(
                host.clone(),
                std::sync::Arc::new(gpu_doctor::update::set_in_use(host)),
            ),
            stop_at: std::sync::atomic::AtomicUsize::new(stop_at),
        });
        let mut app = gpu_doctor::tui::App::inline(
            services.clone(),
            gpu_doctor::tui::Theme::new(false),
            (100, 30),
        );
        app.dispatch(gpu_doctor::tui::Msg::Start);
        app.press(KeyCode::Char('6'));
        assert_eq!(app.state.tab, Tab::Plan);
        let log = sandbox.dir.path().join("plan.log");
        app.state.plan.log = log.clone();
        app.press(KeyCode::Char('x'));
        app.press(KeyCode::Char('y'));
        let run = app.state.plan.run.clone().expect("a run");
        assert_eq!(
            run.outcome(),
            Some(&Outcome::Stopped),
            "stop at {stop_at}: {:?}",
            run.output
        );
        let ids: Vec<&str> = run.steps.iter().map(|s| s.step.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "nouveau-off",
                "cuda-keyring",
                "apt-update",
                "driver-prerequisites",
                "driver",
                "verify"
            ]
        );
        for (i, step) in run.steps.iter().enumerate() {
            let expected = if i < stop_at {
                StepState::Done
            } else {
                StepState::ToDo
            };
            assert_eq!(step.state, expected, "stop at {stop_at}: {}", step.step.id);
        }
        let text = std::fs::read_to_string(&log).expect("log");
        assert!(
            text.contains("stopped before step")
                && !text.contains(&format!("==> [{}/6]", stop_at + 1)),
            "{text}"
        );

        // Run again: nothing stops it now.
        services
            .stop_at
            .store(usize::MAX, std::sync::atomic::Ordering::SeqCst);
        app.press(KeyCode::Char('x'));
        app.press(KeyCode::Char('y'));
        let run = app.state.plan.run.clone().expect("a run");
        assert_eq!(run.outcome(), Some(&Outcome::Done), "{:?}", run.output);
        for (i, step) in run.steps.iter().enumerate() {
            match &step.state {
                // apt-update is skipped only once everything it serves is installed.
                StepState::Skipped(_) => assert!(i < stop_at || step.step.id == "verify"),
                StepState::Done => assert!(
                    i >= stop_at || step.step.id == "apt-update",
                    "{}",
                    step.step.id
                ),
                other => panic!("stop at {stop_at}: {} {other:?}", step.step.id),
            }
            let skipped = matches!(step.state, StepState::Skipped(_));
            assert_eq!(step.earlier, i < stop_at && skipped, "{}", step.step.id);
        }
        assert!(
            app.state
                .status
                .as_ref()
                .is_some_and(|s| s.text.contains("ran to the end"))
        );
    }
}

/// Secure Boot refuses a module built for the running kernel: the plan enrolls the key once.
/// A second run before the reboot (mokutil already holds the key for the MOK manager) does not
/// ask for another password, and a key that is not there stops the step with what makes one.
#[test]
fn execute_enrolls_the_signing_key_once() {
    let sandbox = Sandbox::new("secure-boot-mok-not-enrolled");
    let out = sandbox.execute(&[]);
    assert_eq!(out.code, 0, "{}", out.block());
    let imports = |calls: &str| {
        calls
            .lines()
            .filter(|l| l.starts_with("mokutil [--import]"))
            .count()
    };
    assert_eq!(imports(&sandbox.calls()), 1, "{}", sandbox.calls());
    let again = sandbox.execute(&[]);
    assert_eq!(again.code, 0, "{}", again.block());
    assert_eq!(imports(&sandbox.calls()), 1, "{}", sandbox.calls());
    assert!(
        again.stdout.contains("skipped: mokutil knows the key"),
        "{}",
        again.stdout
    );

    let keyless = Sandbox::new("secure-boot-mok-not-enrolled");
    std::fs::remove_file(keyless.root().join("var/lib/dkms/mok.pub")).expect("key");
    let out = keyless.execute(&[]);
    assert_ne!(out.code, 0, "{}", out.block());
    assert!(
        out.stdout.contains("no module-signing key at"),
        "{}",
        out.block()
    );
    assert_eq!(imports(&keyless.calls()), 0);
}
