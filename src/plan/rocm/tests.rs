//! Unit tests of the AMD planner's decisions.

use super::decide::{sibling_release, supported_by_release};

#[test]
fn installers_and_releases_agree() {
    let m = crate::manifest::embedded();
    // The newest installer for noble whose release lists gfx1100 is 7.1.1.
    let i = m.rocm.installer_for("noble", "gfx1100").expect("installer");
    assert_eq!(i.rocm, "7.1.1");
    assert_eq!(i.version(), Some("7.1.1.70101-1"));
    // RDNA 4 first appears in 6.4.1's list; 6.2.1 (jammy) lists it not.
    assert!(supported_by_release(m, "6.2.1", "gfx1201").is_none());
    assert!(supported_by_release(m, "6.4.2", "gfx1201").is_some());
    // gfx1102 runs through its RDNA 3 sibling; gfx1103 never does.
    assert_eq!(
        sibling_release(m, "7.1.1", "gfx1102"),
        Some(("RDNA 3".to_string(), "11.0.0".to_string()))
    );
    assert!(supported_by_release(m, "7.1.1", "gfx1103").is_none());
    assert!(crate::version::Version::parse(&i.rocm).is_some());
}
