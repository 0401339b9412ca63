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
    assert!(!fix(&r, "no-gpu").contains("--gpus"), "{}", fix(&r, "no-gpu"));
}

#[test]
fn secure_boot_with_a_built_module_leads_with_mok_enrollment() {
    for (name, key) in [
        ("secure-boot-mok-not-enrolled", "/var/lib/dkms/mok.pub"),
        ("fedora-akmods-secure-boot", "/etc/pki/akmods/certs/public_key.der"),
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
