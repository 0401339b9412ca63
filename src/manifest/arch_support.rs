//! `cuda.toml`'s `[[arch_support]]` rows: which compute capabilities each CUDA release added
//! to or removed from nvcc's targets, so "can this toolkit compile for this GPU?" is answered
//! per release (11.8 targets sm_89, 11.7 does not), not per major.

use serde::{Deserialize, Serialize};

use super::cuda::CudaTable;
use super::matching::compare;
use super::validate::Checker;

/// One CUDA release's changes to the architectures nvcc can target.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ArchSupport {
    /// The first release with the change (`11.8`).
    pub cuda: String,
    /// Compute capabilities first targeted by this release (`["8.9", "9.0"]`).
    #[serde(default)]
    pub adds: Vec<String>,
    /// Compute capabilities this release no longer targets.
    #[serde(default)]
    pub removes: Vec<String>,
    pub note: Option<String>,
    pub source: String,
    pub checked: String,
}

/// Whether a toolkit can compile for a compute capability, and the row that says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Targeting<'a> {
    /// The release is at or past the row that added it and no row removed it.
    Yes,
    /// The capability first appears in a later release (`row.cuda`).
    TooOld(&'a ArchSupport),
    /// A release at or before this toolkit removed it.
    Removed(&'a ArchSupport),
    /// No row names this capability: the table cannot tell.
    Unknown,
}

impl CudaTable {
    /// Whether nvcc of CUDA `toolkit` (`11.7`, `12.8.93`) can compile for `cc` (`8.9`).
    #[must_use]
    pub fn toolkit_targets(&self, toolkit: &str, cc: &str) -> Targeting<'_> {
        let reached = |row: &ArchSupport| compare(&row.cuda, toolkit).is_le();
        let same = |a: &String| compare(a, cc).is_eq();
        if let Some(row) = self
            .arch_support
            .iter()
            .find(|r| r.adds.iter().any(same) && !reached(r))
        {
            return Targeting::TooOld(row);
        }
        if let Some(row) = self
            .arch_support
            .iter()
            .rev()
            .find(|r| r.removes.iter().any(same) && reached(r))
        {
            return Targeting::Removed(row);
        }
        if self.arch_support.iter().any(|r| r.adds.iter().any(same)) {
            Targeting::Yes
        } else {
            Targeting::Unknown
        }
    }

    pub(super) fn check_arch_support(&self, c: &mut Checker) {
        for row in &self.arch_support {
            let label = format!("arch_support {}", row.cuda);
            c.provenance(&label, &row.source, &row.checked);
            c.version(&label, "cuda", &row.cuda);
            c.ccs(&label, "adds", &row.adds);
            c.ccs(&label, "removes", &row.removes);
        }
        c.ascending_versions(
            "arch_support release",
            self.arch_support
                .iter()
                .map(|row| (format!("arch_support {}", row.cuda), row.cuda.as_str())),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_target_what_nvidia_added_and_removed() {
        let m = crate::manifest::embedded();
        let t = |cuda: &str, cc: &str| m.cuda.toolkit_targets(cuda, cc);
        // "nvcc fatal : Unsupported gpu architecture 'compute_89'" on CUDA 11.3 / RTX 4090.
        assert!(matches!(t("11.3", "8.9"), Targeting::TooOld(r) if r.cuda == "11.8"));
        assert_eq!(t("11.8.89", "8.9"), Targeting::Yes);
        assert!(matches!(t("11.0", "8.6"), Targeting::TooOld(r) if r.cuda == "11.1"));
        assert_eq!(t("11.1", "8.6"), Targeting::Yes);
        // Blackwell: sm_120 from 12.8, sm_121 from 12.9.
        assert!(matches!(t("12.6", "12.0"), Targeting::TooOld(r) if r.cuda == "12.8"));
        assert_eq!(t("12.8.93", "12.0"), Targeting::Yes);
        assert!(matches!(t("12.8", "12.1"), Targeting::TooOld(_)));
        assert_eq!(t("13.0.88", "9.0"), Targeting::Yes);
        // Removals: Kepler sm_35 in 12.0, Pascal in 13.0.
        assert!(matches!(t("12.4", "3.5"), Targeting::Removed(r) if r.cuda == "12.0"));
        assert!(matches!(t("13.0", "6.1"), Targeting::Removed(r) if r.cuda == "13.0"));
        assert!(matches!(t("11.8", "3.0"), Targeting::Removed(_)));
        // Before any row names it: unknown, not a guess.
        assert_eq!(t("12.4", "6.1"), Targeting::Unknown);
        assert_eq!(t("10.2", "7.5"), Targeting::Unknown);
    }
}
