//! The manifest set one run uses, decided once: the settings pass makes a [`SetInUse`] (which
//! knows how to choose: the installed set or the built-in one) and hands the same value to
//! every face, planner and probe, so `doctor` cannot diagnose with one set while `plan` fixes
//! with another. Nothing below the commands picks a set of its own (clippy's
//! `disallowed-methods` keeps [`super::embedded`] to the choosing itself).
//!
//! The choice is made on first use, not when the settings are read: `doctor` chooses beside its
//! probes (issue 29: parsing or verifying the set is then off the critical path), and commands
//! that need no tables never parse them.
//!
//! Depends on nothing of the crate but the tables' type.

use std::borrow::Cow;
use std::sync::OnceLock;

use super::Manifests;

/// The chosen set and what a report says of it.
#[derive(Debug, Clone)]
pub struct InUse {
    pub manifests: Cow<'static, Manifests>,
    /// `embedded` or `installed` (the report's `manifests.origin`).
    pub origin: &'static str,
    /// The set's version (`manifests.version`).
    pub version: String,
    /// The set's date (`manifests.updated`).
    pub updated: String,
    /// Why an installed set was not used, for the user to act on.
    pub warning: Option<String>,
}

/// How a set is chosen, once.
type Choose = Box<dyn Fn() -> InUse + Send + Sync>;

/// The set of one run, chosen the first time anything asks and the same afterwards, from any
/// thread.
pub struct SetInUse {
    chosen: OnceLock<InUse>,
    choose: Choose,
}

impl SetInUse {
    /// A set that `choose` picks on first use.
    #[must_use]
    pub fn new(choose: impl Fn() -> InUse + Send + Sync + 'static) -> SetInUse {
        SetInUse {
            chosen: OnceLock::new(),
            choose: Box::new(choose),
        }
    }

    /// The chosen set (choosing it now if nothing asked before; a second thread asking
    /// meanwhile waits for the same choice).
    #[must_use]
    pub fn get(&self) -> &InUse {
        self.chosen.get_or_init(|| (self.choose)())
    }

    /// The chosen set's tables.
    #[must_use]
    pub fn manifests(&self) -> &Manifests {
        &self.get().manifests
    }
}

impl std::fmt::Debug for SetInUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetInUse")
            .field("chosen", &self.chosen.get().map(|c| (c.origin, &c.version)))
            .finish_non_exhaustive()
    }
}
