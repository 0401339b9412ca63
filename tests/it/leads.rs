//! Fixes that lead where the maintainers led: on machines rebuilt from real reports (containers,
//! Secure Boot, fabric manager, old frameworks) the finding's fix starts with the step the
//! maintainers gave, and healthy parts stay quiet.

use crate::support::*;

/// The fix text of finding `id`.
fn fix<'a>(r: &'a serde_json::Value, id: &str) -> &'a str {
    finding(r, id)["fix"].as_str().unwrap_or("")
}

#[test]
fn a_gpu_less_container_is_no_gpu_and_nothing_else() {
    let r = doctor("container-no-gpu-on-host");
    assert_findings(&r, &["no-gpu"]);
    assert_eq!(finding(&r, "no-gpu")["severity"], "info");
    assert!(
        !fix(&r, "no-gpu").contains("--gpus"),
        "{}",
        fix(&r, "no-gpu")
    );
}

#[test]
fn secure_boot_with_a_built_module_leads_with_mok_enrollment() {
    for (name, key) in [
        ("secure-boot-mok-not-enrolled", "/var/lib/dkms/mok.pub"),
        (
            "fedora-akmods-secure-boot",
            "/etc/pki/akmods/certs/public_key.der",
        ),
    ] {
        let r = doctor(name);
        assert_findings(&r, &["no-driver"]);
        let text = fix(&r, "no-driver");
        assert!(
            text.contains(&format!("sudo mokutil --import {key}")),
            "{name}: {text}"
        );
        assert!(text.contains("Enroll MOK") && text.contains("Secure Boot off"));
        assert!(!text.starts_with("Install"), "{name}: {text}");
    }
    // No module built: installing the driver is still the first step.
    let r = doctor("gpu-no-driver");
    assert!(fix(&r, "no-driver").starts_with("Install the driver"));
}

#[test]
fn fabric_manager_not_installed_or_inactive_is_told_from_files_and_systemctl() {
    let r = doctor("hgx-fabric-manager-not-installed");
    assert_findings(&r, &["fabric-manager-not-running"]);
    let f = finding(&r, "fabric-manager-not-running");
    assert!(
        f["title"]
            .as_str()
            .unwrap_or("")
            .contains("without an installed")
    );
    assert!(
        fix(&r, "fabric-manager-not-running").starts_with(
            "The fabric manager is not installed. Install the fabric manager of the driver's \
             branch and exact version from NVIDIA's CUDA repository: `sudo apt install \
             nvidia-fabricmanager-550=550.54.15-1`"
        ),
        "{}",
        fix(&r, "fabric-manager-not-running")
    );
    let fm = find(&r["kernel"]["services"], "name", "nvidia-fabricmanager");
    assert_eq!(fm["installed"], false);
    let pd = find(&r["kernel"]["services"], "name", "nvidia-persistenced");
    assert_eq!(pd["installed"], true);
    assert_eq!(pd["active"], true);

    let r = doctor("hgx-fabric-manager-inactive");
    assert_findings(&r, &["fabric-manager-not-running"]);
    let evidence = texts(&finding(&r, "fabric-manager-not-running")["evidence"]);
    assert!(
        evidence.contains(&"systemctl is-active nvidia-fabricmanager: inactive".to_string()),
        "{evidence:?}"
    );
    assert!(
        fix(&r, "fabric-manager-not-running")
            .starts_with("Start it and enable it at boot: `sudo systemctl enable --now")
    );
    assert!(!fix(&r, "fabric-manager-not-running").contains("apt"));
}

#[test]
fn a_container_with_utility_but_not_compute_is_told_to_ask_for_compute() {
    for (name, caps) in [
        (
            "container-utility-only",
            "NVIDIA_DRIVER_CAPABILITIES: unset",
        ),
        (
            "compose-utility-capability",
            "NVIDIA_DRIVER_CAPABILITIES=utility",
        ),
    ] {
        let r = doctor(name);
        assert_findings(&r, &["container-driver-capabilities"]);
        let f = finding(&r, "container-driver-capabilities");
        assert_eq!(f["severity"], "error", "{name}");
        let evidence = texts(&f["evidence"]);
        assert!(
            evidence.iter().any(|e| e.starts_with(caps)),
            "{name}: {evidence:?}"
        );
        assert!(
            fix(&r, "container-driver-capabilities")
                .contains("-e NVIDIA_DRIVER_CAPABILITIES=compute,utility"),
            "{name}"
        );
        assert!(
            fix(&r, "container-driver-capabilities")
                .contains("ENV NVIDIA_DRIVER_CAPABILITIES=compute,utility")
        );
    }
}

#[test]
fn a_compat_libcuda_mounted_at_the_drivers_name_is_forward_compat_not_a_mismatch() {
    let r = doctor("forward-compat-mounted-geforce");
    assert_findings(
        &r,
        &["forward-compat-unsupported", "toolkit-newer-than-driver"],
    );
    let text = fix(&r, "forward-compat-unsupported");
    assert!(
        text.starts_with("In the image, remove the cuda-compat package"),
        "{text}"
    );
    assert!(
        !text.contains("rmmod") && !text.to_lowercase().contains("reboot"),
        "{text}"
    );
    // The off-path compat copy is reported, after the loader's own.
    let libcuda = driver_libs(&r, "libcuda");
    assert_eq!(libcuda[0]["version"], "550.54.15");
    assert!(
        libcuda.iter().any(|l| l["origin"] == "cuda-compat"),
        "{libcuda:?}"
    );
}

#[test]
fn no_fix_tells_a_container_to_reboot_or_reload_modules() {
    for name in [
        "container-no-gpu-on-host",
        "container-utility-only",
        "forward-compat-mounted-geforce",
        "forward-compat-on-geforce",
        "container-without-gpus-flag",
        "stub-libcuda-first",
    ] {
        let r = doctor(name);
        for f in array(&r, "findings") {
            let text = f["fix"].as_str().unwrap_or("").to_lowercase();
            let host_framed = text.contains("on the host") || text.contains("for the host");
            for word in ["reboot", "rmmod", "modprobe"] {
                assert!(
                    !text.contains(word) || host_framed,
                    "{name}: {} says {word} in a container: {text}",
                    f["id"]
                );
            }
        }
    }
}

#[test]
fn interpreters_behind_pyenv_shims_are_examined_without_running_the_shim() {
    let r = doctor("pyenv-shim-torch");
    assert_findings(&r, &[]);
    let selected = python_env(&r, "/home/ubuntu/.pyenv/versions/3.10.14");
    assert_eq!(
        selected["found_via"],
        serde_json::json!(["pyenv (selected by /home/ubuntu/project/.python-version)"])
    );
    assert_eq!(
        framework(&r, "/home/ubuntu/.pyenv/versions/3.10.14", "torch")["version"],
        "2.5.1+cu124"
    );
    let other = python_env(&r, "/home/ubuntu/.pyenv/versions/3.12.4");
    assert_eq!(other["found_via"], serde_json::json!(["pyenv"]));
    // Debian's /usr/bin/python3 reads dist-packages only, each folder once.
    let usr = python_env(&r, "/usr");
    assert_eq!(
        usr["site_packages"],
        serde_json::json!([
            "/usr/lib/python3/dist-packages",
            "/usr/local/lib/python3.10/dist-packages"
        ])
    );
    let run = on_fixture(
        "pyenv-shim-torch",
        &[],
        &["check", "-r", "torch.cuda"],
        None,
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(stdout.contains("PASS torch.cuda"), "{stdout}");
}

#[test]
fn an_old_tensorflow_is_never_told_to_use_an_extra_it_does_not_have() {
    let r = doctor("tensorflow-2.3-needs-cudnn7");
    assert_findings(&r, &["cudnn-missing"]);
    let text = fix(&r, "cudnn-missing");
    assert!(!text.contains("tensorflow[and-cuda]=="), "{text}");
    assert!(
        text.starts_with("TensorFlow 2.3.1 predates the `[and-cuda]` extra (first in 2.14)"),
        "{text}"
    );
    assert!(text.contains("CUDA 10.1 and cuDNN 7"), "{text}");
    // From 2.14 on, the extra at the framework's own version is the fix.
    let r = doctor("tensorflow-cudnn8-only-cudnn9");
    assert!(fix(&r, "cudnn-missing").contains("tensorflow[and-cuda]==2.15.0"));
}

#[test]
fn a_cpu_build_chosen_by_its_package_name_is_only_info() {
    let r = doctor("tensorflow-cpu-chosen");
    assert_findings(&r, &["cpu-only-framework-build"]);
    let f = finding(&r, "cpu-only-framework-build");
    assert_eq!(f["severity"], "info");
    assert!(
        f["title"]
            .as_str()
            .unwrap_or("")
            .contains("`tensorflow-cpu`")
    );
    // A +cpu torch from the CPU index is not chosen by its name: still a warning.
    let r = doctor("torch-cpu-build");
    assert_eq!(
        finding(&r, "cpu-only-framework-build")["severity"],
        "warning"
    );
}

#[test]
fn an_ngc_build_is_named_as_such_and_explains_its_toolkit() {
    let r = doctor("ngc-pytorch-on-driver-550");
    // No arch list is known for NGC builds: the kernel check is skipped, and said so (info).
    assert_findings(&r, &["arch-check-skipped", "driver-too-old-for-framework"]);
    let f = finding(&r, "driver-too-old-for-framework");
    assert_eq!(
        f["explains"],
        serde_json::json!(["toolkit-newer-than-driver"])
    );
    let text = fix(&r, "driver-too-old-for-framework");
    assert!(text.contains("NVIDIA's NGC container build"), "{text}");
    assert!(
        text.contains("NGC container release built on CUDA 12.4 or older"),
        "{text}"
    );
    assert!(!text.contains("--index-url"), "{text}");
}

/// A GPU that ROCm dropped is not one with "no ROCm path": the fix names the releases before
/// 4.0 that ran it; a GPU KFD never drove keeps the plain wording.
#[test]
fn a_gpu_rocm_dropped_is_told_the_releases_that_ran_it() {
    let r = doctor("amd-rx580-gfx803-rocm6");
    assert_findings(&r, &["rocm-gpu-unsupported"]);
    let text = fix(&r, "rocm-gpu-unsupported");
    assert!(!text.contains("There is no ROCm path"), "{text}");
    assert!(
        text.contains("before 4.0") && text.contains("ROCm 3.x"),
        "{text}"
    );
    let r = doctor("amd-pitcairn-unsupported");
    assert!(
        fix(&r, "rocm-gpu-unsupported").starts_with("There is no ROCm path"),
        "{}",
        fix(&r, "rocm-gpu-unsupported")
    );
}
