//! The keymap: one table that both handles keys and describes them, so the footer hints and the
//! `?` help can never drift from what the keys do (gitui builds its command bar and help from
//! the same list its components act on).
//!
//! A key is looked up in [`KEYMAP`] in order; the first binding whose key matches and whose
//! `when` holds for the current state wins. Context-specific bindings (the Plan screen's ←→)
//! therefore come before the general ones that share their keys.
//!
//! This file holds what a binding is and the three readers of the table (the key handler, the
//! footer hints, the help); [`map`] holds the table and [`when`] the states it is keyed on.

mod map;
#[cfg(test)]
mod tests;
mod when;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::tui::state::{State, Tab};

pub use map::KEYMAP;

/// What a key asks for; [`super::update`] gives it meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Help,
    CloseHelp,
    NextTab,
    PrevTab,
    GoTab(Tab),
    Up,
    Down,
    PageUp,
    PageDown,
    Top,
    Bottom,
    /// Previous / next value of the selected Plan field.
    ChoicePrev,
    ChoiceNext,
    /// Open the selection: its detail, the finding behind an Overview line, the plan preview.
    Open,
    RunSmoke,
    /// Close a detail pane, clear a filter or a message.
    Back,
    Filter,
    Rescan,
    Save,
    /// Finish typing (filter, file name).
    Accept,
    /// Abandon typing.
    Cancel,
    /// Edit the text being typed (Backspace, Ctrl-U, the cursor keys of the save prompt).
    Edit(super::edit::Edit),
    /// Replace the existing file.
    Overwrite,
    /// Keep it.
    KeepFile,
    /// Open the box to paste an error message into (Diagnosis).
    Explain,
    /// Close the explanation.
    CloseExplain,
    /// Plan: ask to run the plan shown (or run it again); while it runs, stop it before its
    /// next step.
    RunPlan,
    /// Yes, run it.
    ConfirmRun,
    /// No, do not run it.
    CancelRun,
    /// `q` while a plan runs: says how to stop it instead of quitting.
    QuitWhileRunning,
}

/// A key with the modifiers that matter (Ctrl, Alt). Shift is part of the character itself
/// (`G`) or of the code (`BackTab`), so it is ignored, as terminals report it inconsistently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
}

impl Key {
    const fn ch(c: char) -> Key {
        Key {
            code: KeyCode::Char(c),
            ctrl: false,
        }
    }

    const fn code(code: KeyCode) -> Key {
        Key { code, ctrl: false }
    }

    const fn ctrl(c: char) -> Key {
        Key {
            code: KeyCode::Char(c),
            ctrl: true,
        }
    }

    /// Whether a terminal key event is this key.
    #[must_use]
    pub fn matches(self, event: &KeyEvent) -> bool {
        let ctrl = event.modifiers.contains(KeyModifiers::CONTROL);
        let alt = event.modifiers.contains(KeyModifiers::ALT);
        !alt && ctrl == self.ctrl && self.code == event.code
    }
}

/// Where a binding applies.
pub type When = fn(&State) -> bool;

/// One line of the keymap.
#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub keys: &'static [Key],
    /// The keys as the user reads them ("↑ k").
    pub label: &'static str,
    pub action: Action,
    /// What it does, for the help.
    pub help: &'static str,
    /// The footer's short word for it, when the footer shows it.
    pub hint: Option<&'static str>,
    /// Help section.
    pub section: &'static str,
    /// Listed in the help (the digits 2–7 hide behind "1–7").
    pub listed: bool,
    pub when: When,
}

/// The action a key asks for in this state, if any.
#[must_use]
pub fn action_for(state: &State, event: &KeyEvent) -> Option<Action> {
    KEYMAP
        .iter()
        .find(|b| (b.when)(state) && b.keys.iter().any(|k| k.matches(event)))
        .map(|b| b.action)
}

/// A footer hint: the key label and its short word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hint {
    pub keys: &'static str,
    pub word: &'static str,
}

/// The hints that apply now, in keymap order, each key label once. "help" and "quit" come
/// last so the footer can always keep them when it has to drop others.
#[must_use]
pub fn hints(state: &State) -> Vec<Hint> {
    let mut out: Vec<Hint> = Vec::new();
    let mut tail: Vec<Hint> = Vec::new();
    for b in KEYMAP.iter().filter(|b| (b.when)(state)) {
        let Some(word) = b.hint else { continue };
        // The first applicable binding for a key wins, as in `action_for`.
        let shadowed = KEYMAP
            .iter()
            .take_while(|other| !std::ptr::eq(*other, b))
            .any(|other| (other.when)(state) && other.keys.iter().any(|k| b.keys.contains(k)));
        if shadowed {
            continue;
        }
        let hint = Hint {
            keys: b.label,
            word,
        };
        if matches!(b.action, Action::Help | Action::Quit) {
            tail.push(hint);
        } else {
            out.push(hint);
        }
    }
    tail.sort_by_key(|h| h.word != "help");
    out.extend(tail);
    out
}

/// The help overlay's lines: (section, keys, what) for every listed binding, sections in
/// first-appearance order.
#[must_use]
pub fn help_lines() -> Vec<(&'static str, &'static str, &'static str)> {
    // Most used first; the keymap's own order is matching priority, not reading order.
    const ORDER: [&str; 9] = [
        "Screens",
        "Moving",
        "Actions",
        "Plan",
        "Running a plan",
        "Explain",
        "Typing",
        "Saving",
        "General",
    ];
    let mut sections: Vec<&'static str> = ORDER.to_vec();
    for b in KEYMAP {
        if !sections.contains(&b.section) {
            sections.push(b.section);
        }
    }
    let mut out = Vec::new();
    for section in sections {
        for b in KEYMAP.iter().filter(|b| b.section == section && b.listed) {
            out.push((section, b.label, b.help));
        }
    }
    out
}
