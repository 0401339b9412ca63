//! Every style the TUI draws with, in one place (ratatui demo2's `THEME`), so severity colours,
//! `NO_COLOR` and light/dark terminals are decided here and nowhere else.
//!
//! Only the terminal's own default foreground and background are used for text, plus a few
//! named ANSI accents that every palette remaps for its background; selection is `REVERSED`
//! and secondary text is `DIM`. So a light terminal and a dark one both read well, and no
//! background colour is ever painted. With `NO_COLOR` (<https://no-color.org>) the accents go
//! and only modifiers (bold, dim, reversed, underlined) remain; the words and marks (`✗ error`)
//! carry the meaning on their own either way.

use ratatui::style::{Color, Modifier, Style};

use crate::report::Severity;

/// The styles of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    color: bool,
}

impl Theme {
    /// A theme with accents (`color`), or modifiers only (`NO_COLOR`).
    #[must_use]
    pub fn new(color: bool) -> Theme {
        Theme { color }
    }

    /// The theme `NO_COLOR` asks for: set and not empty means no colour, as no-color.org says.
    #[must_use]
    pub fn from_no_color(no_color: Option<&str>) -> Theme {
        Theme::new(no_color.is_none_or(str::is_empty))
    }

    /// Whether accents are drawn.
    #[must_use]
    pub fn has_color(self) -> bool {
        self.color
    }

    fn fg(self, color: Color) -> Style {
        if self.color {
            Style::new().fg(color)
        } else {
            Style::new()
        }
    }

    /// Ordinary text: the terminal's own colours.
    #[must_use]
    pub fn text(self) -> Style {
        Style::new()
    }

    /// Labels, units and anything the eye may skip.
    #[must_use]
    pub fn dim(self) -> Style {
        Style::new().add_modifier(Modifier::DIM)
    }

    /// Section titles and the active tab.
    #[must_use]
    pub fn title(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    /// A key name in hints and help.
    #[must_use]
    pub fn key(self) -> Style {
        self.fg(Color::Cyan).add_modifier(Modifier::BOLD)
    }

    /// The selected row of a list.
    #[must_use]
    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    /// A table row, reversed when it is the selected one: every list marks selection alike.
    #[must_use]
    pub fn mark_selected<'a>(
        self,
        row: ratatui::widgets::Row<'a>,
        selected: bool,
    ) -> ratatui::widgets::Row<'a> {
        if selected {
            row.style(self.selected())
        } else {
            row
        }
    }

    /// Something that works (`✓`).
    #[must_use]
    pub fn good(self) -> Style {
        self.fg(Color::Green).add_modifier(Modifier::BOLD)
    }

    /// Something that does not (`✗`).
    #[must_use]
    pub fn bad(self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    /// A copy that exists but is not the one used (a shadowed library).
    #[must_use]
    pub fn muted(self) -> Style {
        self.fg(Color::Yellow)
    }

    /// A finding's severity, the same everywhere it is shown.
    #[must_use]
    pub fn severity(self, severity: Severity) -> Style {
        match severity {
            Severity::Error => self.fg(Color::Red).add_modifier(Modifier::BOLD),
            Severity::Warning => self.fg(Color::Yellow).add_modifier(Modifier::BOLD),
            Severity::Info => self.fg(Color::Blue),
        }
    }

    /// Pane borders; the focused pane's border is accented.
    #[must_use]
    pub fn border(self, focused: bool) -> Style {
        if focused {
            self.fg(Color::Cyan)
        } else {
            self.dim()
        }
    }

    /// Sparkline bars.
    #[must_use]
    pub fn chart(self) -> Style {
        self.fg(Color::Cyan)
    }
}

/// The mark and word for a severity, so the meaning survives without colour.
#[must_use]
pub fn severity_mark(severity: Severity) -> &'static str {
    match severity {
        Severity::Error => "✗",
        Severity::Warning => "!",
        Severity::Info => "i",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_means_set_and_not_empty() {
        assert!(Theme::from_no_color(None).has_color());
        assert!(Theme::from_no_color(Some("")).has_color());
        assert!(!Theme::from_no_color(Some("1")).has_color());
    }

    #[test]
    fn without_colour_severities_keep_their_weight_but_lose_their_hue() {
        let plain = Theme::new(false);
        assert_eq!(plain.severity(Severity::Error).fg, None);
        assert!(
            plain
                .severity(Severity::Error)
                .add_modifier
                .contains(Modifier::BOLD)
        );
        assert_eq!(
            Theme::new(true).severity(Severity::Error).fg,
            Some(Color::Red)
        );
    }
}
