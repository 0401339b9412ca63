//! What ROCm's own file names and small files say: the HIP runtime's version in
//! `libamdhip64.so.<major>.<minor>.<build>` and `bin/.hipVersion`, and the gfx targets a
//! rocBLAS or hipBLASLt kernel library has in its file names
//! (`TensileLibrary_lazy_gfx1100.dat`, as ollama's `rocblasGFXTargets` reads them).

use crate::version::GfxTarget;

/// `libamdhip64.so.6.2.60200` → "6.2.60200". Only a name with the three numbers the real
/// file carries; the `.so` and `.so.6` links say less.
#[must_use]
pub fn hip_version_from_name(name: &str) -> Option<String> {
    let version = name.strip_prefix("libamdhip64.so.")?;
    let parts: Vec<&str> = version.split('.').collect();
    (parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    .then(|| version.to_string())
}

/// `bin/.hipVersion` (`HIP_VERSION_MAJOR=6`, `HIP_VERSION_MINOR=2`, `HIP_VERSION_PATCH=41133-
/// dd7f95766`) → "6.2.41133".
#[must_use]
pub fn hip_version_file(text: &str) -> Option<String> {
    let field = |key: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| {
                v.trim()
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
            })
        })
    };
    let (major, minor, patch) = (
        field("HIP_VERSION_MAJOR")?,
        field("HIP_VERSION_MINOR")?,
        field("HIP_VERSION_PATCH")?,
    );
    (!major.is_empty() && !minor.is_empty() && !patch.is_empty())
        .then(|| format!("{major}.{minor}.{patch}"))
}

/// The gfx target a kernel library file is for, when its name says
/// (`TensileLibrary_lazy_gfx1100.dat`, `TensileLibrary_gfx90a.co`,
/// `Kernels.so-000-gfx1030.hsaco`, `extop_gfx942.co`). Generic `gfx11-generic` names and
/// names without a target give `None`.
#[must_use]
pub fn gfx_in_file_name(name: &str) -> Option<GfxTarget> {
    let start = name.find("gfx")?;
    let tail = name.get(start..)?;
    let end = tail
        .char_indices()
        .skip(3)
        .find(|(_, c)| !c.is_ascii_hexdigit())
        .map_or(tail.len(), |(i, _)| i);
    let candidate = tail.get(..end)?;
    // `gfx11-generic`: a family build, not one target.
    if tail
        .get(end..)
        .is_some_and(|rest| rest.starts_with("-generic"))
    {
        return None;
    }
    GfxTarget::parse(candidate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hip_versions_from_the_library_name_and_the_version_file() {
        assert_eq!(
            hip_version_from_name("libamdhip64.so.6.2.60200").as_deref(),
            Some("6.2.60200")
        );
        assert_eq!(hip_version_from_name("libamdhip64.so.6"), None);
        assert_eq!(hip_version_from_name("libamdhip64.so"), None);
        assert_eq!(
            hip_version_file(
                "HIP_VERSION_MAJOR=6\nHIP_VERSION_MINOR=2\nHIP_VERSION_PATCH=41133-dd7f95766\n"
            )
            .as_deref(),
            Some("6.2.41133")
        );
        assert_eq!(hip_version_file("HIP_VERSION_MAJOR=6\n"), None);
    }

    #[test]
    fn targets_from_kernel_library_names() {
        let t = |n: &str| gfx_in_file_name(n).map(|t| t.to_string());
        assert_eq!(
            t("TensileLibrary_lazy_gfx1100.dat").as_deref(),
            Some("gfx1100")
        );
        assert_eq!(
            t("TensileLibrary_lazy_gfx90a.dat").as_deref(),
            Some("gfx90a")
        );
        assert_eq!(
            t("Kernels.so-000-gfx1030.hsaco").as_deref(),
            Some("gfx1030")
        );
        assert_eq!(t("extop_gfx942.co").as_deref(), Some("gfx942"));
        assert_eq!(t("TensileLibrary_lazy_gfx11-generic.dat"), None);
        assert_eq!(t("TensileLibrary.dat"), None);
    }
}
