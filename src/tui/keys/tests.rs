use super::*;
use crate::tui::state::{Focus, Mode};
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
