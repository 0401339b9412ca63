//! Colour for the text faces: whether to use it (`--color`, `NO_COLOR`, `CLICOLOR_FORCE`, the
//! config file, a terminal) and the few styles the reports use. Everything else is plain text,
//! so a report pasted into an issue reads the same with or without colour.
//!
//! Pure: the caller says whether stdout is a terminal.

use crate::host::Env;
use crate::report::Severity;

/// `--color` and the config file's `color`: when the text faces use colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorChoice {
    /// Colour when stdout is a terminal, `TERM` is not `dumb` and `NO_COLOR` is not set.
    Auto,
    Always,
    Never,
}

impl crate::choice::Choice for ColorChoice {
    const ALL: &'static [ColorChoice] =
        &[ColorChoice::Auto, ColorChoice::Always, ColorChoice::Never];
    fn name(self) -> &'static str {
        match self {
            ColorChoice::Auto => "auto",
            ColorChoice::Always => "always",
            ColorChoice::Never => "never",
        }
    }
    fn help(self) -> Option<&'static str> {
        match self {
            ColorChoice::Auto => Some(
                "Colour when stdout is a terminal, `TERM` is not `dumb` and `NO_COLOR` is not set",
            ),
            ColorChoice::Always | ColorChoice::Never => None,
        }
    }
}

/// Decides colour: `--color` first, then the environment (`NO_COLOR` set and not empty means
/// never, <https://no-color.org>; `CLICOLOR_FORCE` set and not `0` means always), then the
/// config file's `color`, then `auto`: a terminal whose `TERM` is not `dumb`.
#[must_use]
pub fn enabled(
    flag: Option<ColorChoice>,
    env: &Env,
    config: Option<ColorChoice>,
    stdout_is_terminal: bool,
) -> bool {
    let from_env = if env.non_empty("NO_COLOR").is_some() {
        Some(ColorChoice::Never)
    } else if env
        .non_empty("CLICOLOR_FORCE")
        .is_some_and(|v| v.trim() != "0")
    {
        Some(ColorChoice::Always)
    } else {
        None
    };
    match flag.or(from_env).or(config).unwrap_or(ColorChoice::Auto) {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => stdout_is_terminal && env.get("TERM") != Some("dumb"),
    }
}

/// Styles text, or leaves it alone when colour is off.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Paint {
    on: bool,
}

const RESET: &str = "\x1b[0m";

impl Paint {
    /// Colour on or off.
    #[must_use]
    pub fn new(on: bool) -> Paint {
        Paint { on }
    }

    /// No colour (files, JSON, tests).
    #[must_use]
    pub fn plain() -> Paint {
        Paint { on: false }
    }

    /// Whether this paints at all.
    #[must_use]
    pub fn is_on(self) -> bool {
        self.on
    }

    fn wrap(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}{RESET}")
        } else {
            text.to_string()
        }
    }

    /// Errors red, warnings yellow, notes cyan: the marks of a finding.
    #[must_use]
    pub fn severity(self, severity: Severity, text: &str) -> String {
        let code = match severity {
            Severity::Error => "1;31",
            Severity::Warning => "33",
            Severity::Info => "36",
        };
        self.wrap(code, text)
    }

    /// Passed, healthy.
    #[must_use]
    pub fn good(self, text: &str) -> String {
        self.wrap("32", text)
    }

    /// Failed.
    #[must_use]
    pub fn bad(self, text: &str) -> String {
        self.wrap("1;31", text)
    }

    /// Section titles.
    #[must_use]
    pub fn heading(self, text: &str) -> String {
        self.wrap("1", text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Env {
        Env::from_pairs(pairs.iter().copied())
    }

    #[test]
    fn the_flag_beats_the_environment_which_beats_the_config() {
        let no_color = env(&[("NO_COLOR", "1")]);
        assert!(enabled(Some(ColorChoice::Always), &no_color, None, false));
        assert!(!enabled(None, &no_color, Some(ColorChoice::Always), true));
        assert!(!enabled(Some(ColorChoice::Never), &env(&[]), None, true));
        let forced = env(&[("CLICOLOR_FORCE", "1")]);
        assert!(enabled(None, &forced, Some(ColorChoice::Never), false));
        assert!(!enabled(
            None,
            &env(&[("CLICOLOR_FORCE", "0")]),
            None,
            false
        ));
        assert!(!enabled(None, &env(&[]), Some(ColorChoice::Never), true));
        assert!(enabled(None, &env(&[]), Some(ColorChoice::Always), false));
    }

    #[test]
    fn auto_needs_a_terminal_that_is_not_dumb_and_an_empty_no_color_is_unset() {
        assert!(enabled(None, &env(&[("TERM", "xterm")]), None, true));
        assert!(!enabled(None, &env(&[("TERM", "xterm")]), None, false));
        assert!(!enabled(None, &env(&[("TERM", "dumb")]), None, true));
        assert!(enabled(None, &env(&[("NO_COLOR", "")]), None, true));
    }

    #[test]
    fn plain_paint_changes_nothing_and_colour_wraps_and_resets() {
        assert_eq!(
            Paint::plain().severity(Severity::Error, "[error]"),
            "[error]"
        );
        assert_eq!(
            Paint::new(true).severity(Severity::Error, "[error]"),
            "\x1b[1;31m[error]\x1b[0m"
        );
        assert_eq!(Paint::new(true).good("ok"), "\x1b[32mok\x1b[0m");
    }
}
