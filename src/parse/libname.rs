//! Shared-library file names: `libcuda.so.580.159.04` → stem `libcuda`, version `580.159.04`.
//!
//! Many NVIDIA libraries carry their exact version only in the file name (the driver's
//! `libcuda.so.<driver version>`, `libcudnn.so.9.14.0`), so the name is the cheapest way to
//! learn what is installed without loading anything.

use crate::parse::text::is_dotted_numeric;

/// Splits a file name into the part before `.so` and the dotted numeric version after it:
///
/// - `libcuda.so.580.159.04` → `("libcuda", Some("580.159.04"))`
/// - `libcuda.so` → `("libcuda", None)`
/// - `libnvrtc.alt.so.13` → `("libnvrtc.alt", Some("13"))`
///
/// Names that are not shared libraries (`libcudart_static.a`, a path) and names whose suffix is
/// not a plain version (`libfoo.so.1.debug`) are `None`.
pub fn split_soname(file_name: &str) -> Option<(&str, Option<&str>)> {
    if file_name.contains('/') {
        return None;
    }
    // The first `.so` that ends the name or is followed by `.`.
    let mut search_from = 0;
    loop {
        let found = file_name.get(search_from..)?.find(".so")? + search_from;
        let stem = file_name.get(..found)?;
        let after = file_name.get(found + ".so".len()..)?;
        if after.is_empty() {
            return (!stem.is_empty()).then_some((stem, None));
        }
        if let Some(version) = after.strip_prefix('.') {
            let ok = !stem.is_empty() && is_dotted_numeric(version);
            return ok.then_some((stem, Some(version)));
        }
        search_from = found + ".so".len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{body, garbage, huge};

    const LIBS: &str = include_str!("../../tests/data/h200/libs.txt");

    #[test]
    fn examples() {
        assert_eq!(
            split_soname("libcuda.so.580.159.04"),
            Some(("libcuda", Some("580.159.04")))
        );
        assert_eq!(split_soname("libcuda.so"), Some(("libcuda", None)));
        assert_eq!(
            split_soname("libcudnn_ops.so.9"),
            Some(("libcudnn_ops", Some("9")))
        );
        assert_eq!(
            split_soname("libnvrtc-builtins.so.13.0.88"),
            Some(("libnvrtc-builtins", Some("13.0.88")))
        );
        assert_eq!(
            split_soname("libnvrtc.alt.so.13.0.88"),
            Some(("libnvrtc.alt", Some("13.0.88")))
        );
        assert_eq!(
            split_soname("libsomething.so.1"),
            Some(("libsomething", Some("1")))
        );
        assert_eq!(split_soname("libcudart_static.a"), None);
        assert_eq!(split_soname("libfoo.so.1.debug"), None);
        assert_eq!(split_soname("libfoo.so-1"), None);
        assert_eq!(split_soname("cudnn_version.h"), None);
        assert_eq!(split_soname("/usr/lib/libcuda.so"), None);
    }

    #[test]
    fn h200_library_list() {
        // Every library the capture's `find` printed splits, and the versioned ones agree with
        // what the machine has.
        let names: Vec<&str> = body(LIBS)
            .lines()
            .filter_map(|path| path.rsplit('/').next())
            .filter(|name| name.contains(".so"))
            .collect();
        assert!(names.len() > 60);
        for name in &names {
            assert!(split_soname(name).is_some(), "{name}");
        }
        let versions: Vec<&str> = names
            .iter()
            .filter_map(|n| split_soname(n))
            .filter(|(stem, _)| *stem == "libcuda")
            .filter_map(|(_, v)| v)
            .collect();
        assert_eq!(versions, vec!["1", "580.95.05", "1"]);
        assert_eq!(
            split_soname("libcudnn_graph.so.9.14.0"),
            Some(("libcudnn_graph", Some("9.14.0")))
        );
        assert_eq!(
            split_soname("libcublasLt.so.13.1.0.3"),
            Some(("libcublasLt", Some("13.1.0.3")))
        );
    }

    #[test]
    fn garbage_truncated_and_huge() {
        assert_eq!(split_soname(""), None);
        assert_eq!(split_soname(".so"), None);
        assert_eq!(split_soname(".so.1"), None);
        assert_eq!(split_soname("libcuda.so."), None);
        assert_eq!(split_soname("libcuda.s"), None);
        assert_eq!(split_soname(&garbage()), None);
        assert_eq!(split_soname("libé.so.1"), Some(("libé", Some("1"))));
        // A long name full of `.so` look-alikes is scanned once.
        let long = huge(".sox") + ".so.1";
        assert_eq!(split_soname(&long).map(|(_, v)| v), Some(Some("1")));
        assert_eq!(split_soname(&huge(".sox")), None);
    }
}
