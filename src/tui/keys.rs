//! The keymap: one table that both handles keys and describes them, so the footer hints and the
//! `?` help can never drift from what the keys do (gitui builds its command bar and help from
//! the same list its components act on).
//!
//! A key is looked up in [`KEYMAP`] in order; the first binding whose key matches and whose
//! `when` holds for the current state wins. Context-specific bindings (the Plan screen's ←→)
//! therefore come before the general ones that share their keys.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::edit::Edit;
use super::state::{Focus, Mode, State, Tab};

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

fn always(_: &State) -> bool {
    true
}
fn normal(s: &State) -> bool {
    s.mode == Mode::Normal
}
fn normal_or_help(s: &State) -> bool {
    matches!(s.mode, Mode::Normal | Mode::Help)
}
fn help(s: &State) -> bool {
    s.mode == Mode::Help
}
fn typing(s: &State) -> bool {
    matches!(s.mode, Mode::Filter | Mode::SavePath | Mode::ExplainInput)
}
fn explained(s: &State) -> bool {
    s.mode == Mode::Explained
}
fn scrolls(s: &State) -> bool {
    normal_or_help(s) || explained(s)
}
fn diagnosis(s: &State) -> bool {
    normal(s) && s.tab == Tab::Diagnosis && s.report.is_some()
}
fn saving_path(s: &State) -> bool {
    s.mode == Mode::SavePath
}
fn confirming(s: &State) -> bool {
    s.mode == Mode::ConfirmOverwrite
}
fn plan_fields(s: &State) -> bool {
    normal(s) && s.tab == Tab::Plan && s.focus == Focus::List
}
fn smoke_screen(s: &State) -> bool {
    normal(s) && s.tab == Tab::Smoke && s.smoke_unavailable().is_none()
}
fn overview(s: &State) -> bool {
    normal(s) && s.tab == Tab::Overview && s.report.as_ref().is_some_and(|r| !r.findings.is_empty())
}
fn plan_screen(s: &State) -> bool {
    normal(s) && s.tab == Tab::Plan
}
fn plan_running(s: &State) -> bool {
    s.plan.run.as_ref().is_some_and(super::run::PlanRun::active)
}
fn plan_idle(s: &State) -> bool {
    plan_screen(s) && !plan_running(s) && s.plan.run.is_none()
}
fn plan_ended(s: &State) -> bool {
    plan_screen(s) && s.plan.run.as_ref().is_some_and(|r| !r.active())
}
fn plan_stoppable(s: &State) -> bool {
    plan_screen(s) && plan_running(s)
}
fn confirming_run(s: &State) -> bool {
    s.mode == Mode::ConfirmRun
}
fn quit_while_running(s: &State) -> bool {
    normal(s) && plan_running(s)
}
fn filterable(s: &State) -> bool {
    normal(s) && s.tab.filterable()
}
fn back_useful(s: &State) -> bool {
    normal(s)
        && (s.focus == Focus::Detail
            || !s.cursor().filter.is_empty()
            || s.status.is_some()
            || plan_ended(s))
}
fn opens_detail(s: &State) -> bool {
    normal(s) && !matches!(s.tab, Tab::Overview | Tab::Smoke) && s.focus == Focus::List
}

const UP: &[Key] = &[Key::code(KeyCode::Up), Key::ch('k')];
const DOWN: &[Key] = &[Key::code(KeyCode::Down), Key::ch('j')];
const LEFT: &[Key] = &[Key::code(KeyCode::Left), Key::ch('h')];
const RIGHT: &[Key] = &[Key::code(KeyCode::Right), Key::ch('l')];
const ENTER: &[Key] = &[Key::code(KeyCode::Enter)];
const ESC: &[Key] = &[Key::code(KeyCode::Esc)];

/// A screen digit; the help lists them once, as "1–7".
const fn digit(keys: &'static [Key], tab: Tab, label: &'static str, listed: bool) -> Binding {
    Binding {
        keys,
        label,
        action: Action::GoTab(tab),
        help: "go to screen 1 Overview … 7 Smoke test",
        hint: None,
        section: "Screens",
        listed,
        when: normal,
    }
}

/// Every key the TUI knows, most specific first.
pub const KEYMAP: &[Binding] = &[
    Binding {
        keys: &[Key::ctrl('c')],
        label: "Ctrl-C",
        action: Action::Quit,
        help: "quit, from anywhere",
        hint: None,
        section: "General",
        listed: true,
        when: always,
    },
    // Typing a filter or a file name: only these keys are commands, the rest is text.
    Binding {
        keys: ENTER,
        label: "Enter",
        action: Action::Accept,
        help: "keep the filter / save under this name / explain the pasted error",
        hint: Some("done"),
        section: "Typing",
        listed: true,
        when: typing,
    },
    Binding {
        keys: ESC,
        label: "Esc",
        action: Action::Cancel,
        help: "clear the filter / do not save / do not explain",
        hint: Some("cancel"),
        section: "Typing",
        listed: true,
        when: typing,
    },
    Binding {
        keys: &[Key::code(KeyCode::Backspace)],
        label: "Backspace",
        action: Action::Edit(Edit::Backspace),
        help: "delete the character before the cursor",
        hint: None,
        section: "Typing",
        listed: true,
        when: typing,
    },
    Binding {
        keys: &[Key::ctrl('u')],
        label: "Ctrl-U",
        action: Action::Edit(Edit::KillToStart),
        help: "delete up to the cursor (all of a filter)",
        hint: None,
        section: "Typing",
        listed: true,
        when: typing,
    },
    Binding {
        keys: &[Key::ctrl('w')],
        label: "Ctrl-W",
        action: Action::Edit(Edit::KillWord),
        help: "delete the word (or path component) before the cursor",
        hint: None,
        section: "Typing",
        listed: true,
        when: typing,
    },
    Binding {
        keys: &[Key::code(KeyCode::Delete), Key::ctrl('d')],
        label: "Delete Ctrl-D",
        action: Action::Edit(Edit::Delete),
        help: "delete the character under the cursor (file name)",
        hint: None,
        section: "Typing",
        listed: true,
        when: saving_path,
    },
    Binding {
        keys: &[Key::code(KeyCode::Left), Key::ctrl('b')],
        label: "← Ctrl-B",
        action: Action::Edit(Edit::Left),
        help: "move the cursor left (file name)",
        hint: None,
        section: "Typing",
        listed: true,
        when: saving_path,
    },
    Binding {
        keys: &[Key::code(KeyCode::Right), Key::ctrl('f')],
        label: "→ Ctrl-F",
        action: Action::Edit(Edit::Right),
        help: "move the cursor right (file name)",
        hint: None,
        section: "Typing",
        listed: true,
        when: saving_path,
    },
    Binding {
        keys: &[Key::code(KeyCode::Home), Key::ctrl('a')],
        label: "Home Ctrl-A",
        action: Action::Edit(Edit::Home),
        help: "to the start of the file name",
        hint: None,
        section: "Typing",
        listed: true,
        when: saving_path,
    },
    Binding {
        keys: &[Key::code(KeyCode::End), Key::ctrl('e')],
        label: "End Ctrl-E",
        action: Action::Edit(Edit::End),
        help: "to the end of the file name",
        hint: None,
        section: "Typing",
        listed: true,
        when: saving_path,
    },
    Binding {
        keys: &[Key::ch('y')],
        label: "y",
        action: Action::Overwrite,
        help: "replace the existing file",
        hint: Some("overwrite"),
        section: "Saving",
        listed: true,
        when: confirming,
    },
    Binding {
        keys: &[Key::ch('n'), Key::code(KeyCode::Esc)],
        label: "n Esc",
        action: Action::KeepFile,
        help: "keep the existing file",
        hint: Some("keep it"),
        section: "Saving",
        listed: true,
        when: confirming,
    },
    Binding {
        keys: &[Key::ch('y')],
        label: "y",
        action: Action::ConfirmRun,
        help: "run the plan on this machine now",
        hint: Some("run it"),
        section: "Running a plan",
        listed: true,
        when: confirming_run,
    },
    Binding {
        keys: &[Key::ch('n'), Key::code(KeyCode::Esc)],
        label: "n Esc",
        action: Action::CancelRun,
        help: "do not run it",
        hint: Some("don't"),
        section: "Running a plan",
        listed: true,
        when: confirming_run,
    },
    Binding {
        keys: &[Key::ch('q')],
        label: "q",
        action: Action::QuitWhileRunning,
        help: "while a plan runs: says how to stop it (Ctrl-C ends it and quits)",
        hint: None,
        section: "Running a plan",
        listed: true,
        when: quit_while_running,
    },
    Binding {
        keys: ESC,
        label: "Esc",
        action: Action::CloseExplain,
        help: "close the explanation (the finding it names stays selected)",
        hint: Some("close"),
        section: "Explain",
        listed: true,
        when: explained,
    },
    Binding {
        keys: &[Key::ch('e')],
        label: "e",
        action: Action::Explain,
        help: "explain another error",
        hint: Some("another"),
        section: "Explain",
        listed: false,
        when: explained,
    },
    Binding {
        keys: &[Key::code(KeyCode::Esc), Key::ch('?')],
        label: "Esc ?",
        action: Action::CloseHelp,
        help: "close this help",
        hint: Some("close"),
        section: "General",
        listed: true,
        when: help,
    },
    Binding {
        keys: &[Key::ch('q')],
        label: "q",
        action: Action::Quit,
        help: "quit",
        hint: Some("quit"),
        section: "General",
        listed: true,
        when: normal_or_help,
    },
    Binding {
        keys: &[Key::ch('?')],
        label: "?",
        action: Action::Help,
        help: "this help",
        hint: Some("help"),
        section: "General",
        listed: true,
        when: normal,
    },
    Binding {
        keys: &[Key::code(KeyCode::Tab)],
        label: "Tab",
        action: Action::NextTab,
        help: "next screen",
        hint: Some("screen"),
        section: "Screens",
        listed: true,
        when: normal,
    },
    Binding {
        keys: &[Key::code(KeyCode::BackTab)],
        label: "Shift-Tab",
        action: Action::PrevTab,
        help: "previous screen",
        hint: None,
        section: "Screens",
        listed: true,
        when: normal,
    },
    digit(&[Key::ch('1')], Tab::Overview, "1–7", true),
    digit(&[Key::ch('2')], Tab::Gpus, "2", false),
    digit(&[Key::ch('3')], Tab::Drivers, "3", false),
    digit(&[Key::ch('4')], Tab::Frameworks, "4", false),
    digit(&[Key::ch('5')], Tab::Diagnosis, "5", false),
    digit(&[Key::ch('6')], Tab::Plan, "6", false),
    digit(&[Key::ch('7')], Tab::Smoke, "7", false),
    Binding {
        keys: LEFT,
        label: "← h",
        action: Action::ChoicePrev,
        help: "Plan: previous value of the selected choice",
        hint: None,
        section: "Plan",
        listed: true,
        when: plan_fields,
    },
    Binding {
        keys: RIGHT,
        label: "→ l",
        action: Action::ChoiceNext,
        help: "Plan: next value of the selected choice",
        hint: Some("change"),
        section: "Plan",
        listed: true,
        when: plan_fields,
    },
    Binding {
        keys: LEFT,
        label: "← h",
        action: Action::PrevTab,
        help: "previous screen",
        hint: None,
        section: "Screens",
        listed: true,
        when: normal,
    },
    Binding {
        keys: RIGHT,
        label: "→ l",
        action: Action::NextTab,
        help: "next screen",
        hint: None,
        section: "Screens",
        listed: true,
        when: normal,
    },
    Binding {
        keys: UP,
        label: "↑ k",
        action: Action::Up,
        help: "move up (or scroll the open detail)",
        hint: None,
        section: "Moving",
        listed: true,
        when: scrolls,
    },
    Binding {
        keys: DOWN,
        label: "↓ j",
        action: Action::Down,
        help: "move down (or scroll the open detail)",
        hint: Some("move"),
        section: "Moving",
        listed: true,
        when: scrolls,
    },
    Binding {
        keys: &[Key::code(KeyCode::PageUp)],
        label: "PgUp",
        action: Action::PageUp,
        help: "a page up",
        hint: None,
        section: "Moving",
        listed: true,
        when: scrolls,
    },
    Binding {
        keys: &[Key::code(KeyCode::PageDown), Key::ch(' ')],
        label: "PgDn Space",
        action: Action::PageDown,
        help: "a page down",
        hint: None,
        section: "Moving",
        listed: true,
        when: scrolls,
    },
    Binding {
        keys: &[Key::code(KeyCode::Home), Key::ch('g')],
        label: "Home g",
        action: Action::Top,
        help: "first row",
        hint: None,
        section: "Moving",
        listed: true,
        when: scrolls,
    },
    Binding {
        keys: &[Key::code(KeyCode::End), Key::ch('G')],
        label: "End G",
        action: Action::Bottom,
        help: "last row",
        hint: None,
        section: "Moving",
        listed: true,
        when: scrolls,
    },
    Binding {
        keys: ENTER,
        label: "Enter",
        action: Action::RunSmoke,
        help: "Smoke test: run it",
        hint: Some("run"),
        section: "Actions",
        listed: true,
        when: smoke_screen,
    },
    Binding {
        keys: ENTER,
        label: "Enter",
        action: Action::Open,
        help: "Overview: open the selected finding in Diagnosis",
        hint: Some("open"),
        section: "Actions",
        listed: true,
        when: overview,
    },
    Binding {
        keys: ENTER,
        label: "Enter",
        action: Action::Open,
        help: "open the detail pane (the plan preview on Plan) to scroll it",
        hint: Some("open"),
        section: "Actions",
        listed: true,
        when: opens_detail,
    },
    Binding {
        keys: ESC,
        label: "Esc",
        action: Action::Back,
        help: "back: close the detail, clear the filter or the message, close a finished run",
        hint: Some("back"),
        section: "Actions",
        listed: true,
        when: back_useful,
    },
    Binding {
        keys: &[Key::ch('/')],
        label: "/",
        action: Action::Filter,
        help: "filter the list (GPUs, Drivers, Frameworks, Diagnosis)",
        hint: Some("filter"),
        section: "Actions",
        listed: true,
        when: filterable,
    },
    Binding {
        keys: &[Key::ch('e')],
        label: "e",
        action: Action::Explain,
        help: "Diagnosis: paste an error message (a traceback, a log) and see which finding explains it",
        hint: Some("explain"),
        section: "Actions",
        listed: true,
        when: diagnosis,
    },
    Binding {
        keys: &[Key::ch('r')],
        label: "r",
        action: Action::Rescan,
        help: "examine the machine again",
        hint: Some("rescan"),
        section: "Actions",
        listed: true,
        when: normal,
    },
    Binding {
        keys: &[Key::ch('x')],
        label: "x",
        action: Action::RunPlan,
        help: "Plan: run the plan on this machine (asks first; sudo asks for root steps)",
        hint: Some("run"),
        section: "Running a plan",
        listed: true,
        when: plan_idle,
    },
    Binding {
        keys: &[Key::ch('x')],
        label: "x",
        action: Action::RunPlan,
        help: "Plan, while it runs: stop before the next step",
        hint: Some("stop"),
        section: "Running a plan",
        listed: true,
        when: plan_stoppable,
    },
    Binding {
        keys: &[Key::ch('x')],
        label: "x",
        action: Action::RunPlan,
        help: "Plan, after a stop or a failure: run it again (steps done are skipped)",
        hint: Some("run again"),
        section: "Running a plan",
        listed: true,
        when: plan_ended,
    },
    Binding {
        keys: &[Key::ch('s')],
        label: "s",
        action: Action::Save,
        help: "save the plan script (on Plan) or the text report, asking for a file name",
        hint: Some("save"),
        section: "Actions",
        listed: true,
        when: plan_screen,
    },
    Binding {
        keys: &[Key::ch('s')],
        label: "s",
        action: Action::Save,
        help: "save the text report, asking for a file name",
        hint: Some("save"),
        section: "Actions",
        listed: false,
        when: normal,
    },
];

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

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyEventKind;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent {
            code,
            modifiers,
            kind: KeyEventKind::Press,
            state: crossterm::event::KeyEventState::NONE,
        }
    }

    #[test]
    fn context_bindings_win_over_general_ones() {
        let mut state = State::default();
        let right = key(KeyCode::Right, KeyModifiers::NONE);
        assert_eq!(action_for(&state, &right), Some(Action::NextTab));
        state.tab = Tab::Plan;
        assert_eq!(action_for(&state, &right), Some(Action::ChoiceNext));
        state.focus = Focus::Detail;
        assert_eq!(action_for(&state, &right), Some(Action::NextTab));
    }

    #[test]
    fn typing_turns_letters_into_text() {
        let mut state = State {
            mode: Mode::Filter,
            ..State::default()
        };
        let q = key(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(action_for(&state, &q), None);
        let ctrl_c = key(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(action_for(&state, &ctrl_c), Some(Action::Quit));
        state.mode = Mode::Normal;
        assert_eq!(action_for(&state, &q), Some(Action::Quit));
    }

    #[test]
    fn shift_is_part_of_the_key() {
        let state = State::default();
        let big_g = key(KeyCode::Char('G'), KeyModifiers::SHIFT);
        assert_eq!(action_for(&state, &big_g), Some(Action::Bottom));
        let back_tab = key(KeyCode::BackTab, KeyModifiers::SHIFT);
        assert_eq!(action_for(&state, &back_tab), Some(Action::PrevTab));
    }

    #[test]
    fn every_hint_is_a_key_that_works_now() {
        for tab in Tab::ALL {
            let state = State {
                tab,
                ..State::default()
            };
            for hint in hints(&state) {
                let binding = KEYMAP
                    .iter()
                    .find(|b| b.label == hint.keys && b.hint == Some(hint.word))
                    .expect("hint from the keymap");
                let event = key(binding.keys[0].code, KeyModifiers::NONE);
                assert_eq!(
                    action_for(&state, &event),
                    Some(binding.action),
                    "{tab:?}: {hint:?}"
                );
            }
            let words: Vec<&str> = hints(&state).iter().map(|h| h.word).collect();
            assert_eq!(words[words.len() - 2..], ["help", "quit"], "{tab:?}");
        }
    }

    #[test]
    fn help_lists_every_action() {
        let listed: Vec<&str> = help_lines().iter().map(|(_, k, _)| *k).collect();
        for needed in [
            "Tab",
            "Shift-Tab",
            "1–7",
            "↑ k",
            "↓ j",
            "← h",
            "→ l",
            "Enter",
            "Esc",
            "/",
            "r",
            "s",
            "?",
            "q",
            "Ctrl-C",
        ] {
            assert!(listed.contains(&needed), "{needed} missing from help");
        }
    }
}
