//! The ML frameworks gpu-doctor knows by name: one enum for `plan --framework`, `check --require`
//! and the TUI, so a framework's spelling lives in one place. The report keeps plain strings (its
//! JSON contract); this is the typed name code compares against.

use std::fmt;

use serde::Serialize;

/// A framework gpu-doctor can check and plan for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FrameworkName {
    Torch,
    Tensorflow,
    Jax,
    Cupy,
}

impl FrameworkName {
    /// Every framework, in the order messages list them.
    pub const ALL: [FrameworkName; 4] = [
        FrameworkName::Torch,
        FrameworkName::Tensorflow,
        FrameworkName::Jax,
        FrameworkName::Cupy,
    ];

    /// The import name, which is also how the report spells the framework.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FrameworkName::Torch => "torch",
            FrameworkName::Tensorflow => "tensorflow",
            FrameworkName::Jax => "jax",
            FrameworkName::Cupy => "cupy",
        }
    }

    /// The framework the report names `name` (exact import name, no aliases).
    #[must_use]
    pub fn from_report(name: &str) -> Option<FrameworkName> {
        FrameworkName::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// A name a user typed: the import name, or the aliases people write (`pytorch`, `tf`).
    #[must_use]
    pub fn parse(name: &str) -> Option<FrameworkName> {
        match name {
            "pytorch" => Some(FrameworkName::Torch),
            "tf" => Some(FrameworkName::Tensorflow),
            other => FrameworkName::from_report(other),
        }
    }
}

impl fmt::Display for FrameworkName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `fw.name == FrameworkName::Torch` for the report's string names.
impl PartialEq<FrameworkName> for str {
    fn eq(&self, other: &FrameworkName) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<FrameworkName> for String {
    fn eq(&self, other: &FrameworkName) -> bool {
        self.as_str() == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::FrameworkName;

    #[test]
    fn names_round_trip_and_aliases_parse() {
        for f in FrameworkName::ALL {
            assert_eq!(FrameworkName::from_report(f.as_str()), Some(f));
            assert_eq!(FrameworkName::parse(f.as_str()), Some(f));
            assert_eq!(f.to_string(), f.as_str());
        }
        assert_eq!(FrameworkName::parse("pytorch"), Some(FrameworkName::Torch));
        assert_eq!(FrameworkName::parse("tf"), Some(FrameworkName::Tensorflow));
        assert_eq!(FrameworkName::from_report("pytorch"), None);
        assert_eq!(FrameworkName::parse("Torch"), None);
        assert_eq!(FrameworkName::parse("mxnet"), None);
        let (jax, torch) = (String::from("jax"), String::from("torch"));
        assert!(jax == FrameworkName::Jax);
        assert!(torch != FrameworkName::Tensorflow);
        assert!(*"cupy" == FrameworkName::Cupy);
    }
}
