//! Closed sets of named values that users type: `--fail-on error`, `fail_on = "warning"` in the
//! config file, `--via conda`. Each such enum lists its values once, here through [`Choice`];
//! the config file parses them with [`parse`] and the command line offers them through the
//! clap impls in `crate::cli::values`, so the domain modules that own the enums never import
//! clap.
//!
//! A leaf module: it depends on nothing in the crate.

/// An enum whose values have names a user types.
pub(crate) trait Choice: Copy + Sized + 'static {
    /// Every value, in the order help texts list them.
    const ALL: &'static [Self];

    /// The name a user types (lower case, `-` between words).
    fn name(self) -> &'static str;

    /// A one-line description for `--help`, when the name is not enough.
    fn help(self) -> Option<&'static str> {
        None
    }
}

/// The value named `text`, ignoring case.
///
/// # Errors
/// A message listing the names, to follow the setting's name: "must be one of a, b, not "c"".
pub(crate) fn parse<T: Choice>(text: &str) -> Result<T, String> {
    T::ALL
        .iter()
        .copied()
        .find(|v| v.name().eq_ignore_ascii_case(text))
        .ok_or_else(|| {
            let names: Vec<&str> = T::ALL.iter().map(|v| v.name()).collect();
            format!("must be one of {}, not {text:?}", names.join(", "))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Light {
        Red,
        AmberFlashing,
    }

    impl Choice for Light {
        const ALL: &'static [Light] = &[Light::Red, Light::AmberFlashing];
        fn name(self) -> &'static str {
            match self {
                Light::Red => "red",
                Light::AmberFlashing => "amber-flashing",
            }
        }
    }

    #[test]
    fn names_match_without_case_and_errors_list_them() {
        assert_eq!(parse::<Light>("RED"), Ok(Light::Red));
        assert_eq!(parse::<Light>("amber-flashing"), Ok(Light::AmberFlashing));
        assert_eq!(
            parse::<Light>("green"),
            Err("must be one of red, amber-flashing, not \"green\"".to_string())
        );
    }
}
