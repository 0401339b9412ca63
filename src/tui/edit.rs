//! A one-line text field with a cursor and the editing keys of a shell prompt (readline's
//! defaults): Backspace and Delete, Left / Right, Home / End and Ctrl-A / Ctrl-E, Ctrl-U
//! (delete to the start) and Ctrl-W (delete the word before the cursor). Pure; the keymap
//! maps keys to [`Edit`]s.

/// One editing operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    /// Delete the character before the cursor.
    Backspace,
    /// Delete the character under the cursor.
    Delete,
    Left,
    Right,
    Home,
    End,
    /// Delete from the start of the line to the cursor (Ctrl-U).
    KillToStart,
    /// Delete the word before the cursor, with the spaces after it (Ctrl-W).
    KillWord,
}

/// The text and the cursor, a character index from 0 to the text's length.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineEdit {
    pub text: String,
    cursor: usize,
}

impl LineEdit {
    /// The text with the cursor at its end.
    #[must_use]
    pub fn new(text: impl Into<String>) -> LineEdit {
        let text = text.into();
        let cursor = text.chars().count();
        LineEdit { text, cursor }
    }

    #[must_use]
    #[cfg(test)]
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The text before and after the cursor, for drawing it between them.
    #[must_use]
    pub fn split(&self) -> (&str, &str) {
        self.text.split_at(self.byte(self.cursor))
    }

    fn byte(&self, chars: usize) -> usize {
        self.text
            .char_indices()
            .nth(chars)
            .map_or(self.text.len(), |(i, _)| i)
    }

    pub fn insert(&mut self, c: char) {
        let at = self.byte(self.cursor);
        self.text.insert(at, c);
        self.cursor += 1;
    }

    pub fn apply(&mut self, edit: Edit) {
        let len = self.text.chars().count();
        match edit {
            Edit::Backspace if self.cursor > 0 => {
                let (from, to) = (self.byte(self.cursor - 1), self.byte(self.cursor));
                self.text.replace_range(from..to, "");
                self.cursor -= 1;
            }
            Edit::Delete if self.cursor < len => {
                let (from, to) = (self.byte(self.cursor), self.byte(self.cursor + 1));
                self.text.replace_range(from..to, "");
            }
            Edit::Left => self.cursor = self.cursor.saturating_sub(1),
            Edit::Right => self.cursor = (self.cursor + 1).min(len),
            Edit::Home => self.cursor = 0,
            Edit::End => self.cursor = len,
            Edit::KillToStart => {
                let to = self.byte(self.cursor);
                self.text.replace_range(..to, "");
                self.cursor = 0;
            }
            Edit::KillWord => {
                let before: Vec<char> = self.text.chars().take(self.cursor).collect();
                let mut start = before.len();
                while start > 0 && before[start - 1].is_whitespace() {
                    start -= 1;
                }
                while start > 0 && !before[start - 1].is_whitespace() && before[start - 1] != '/' {
                    start -= 1;
                }
                // A path loses one component at a time, as in bash's unix-filename-rubout.
                if start == before.len() && start > 0 {
                    start -= 1;
                }
                let (from, to) = (self.byte(start), self.byte(self.cursor));
                self.text.replace_range(from..to, "");
                self.cursor = start;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edited(start: &str, edits: &[Edit]) -> (String, usize) {
        let mut line = LineEdit::new(start);
        for e in edits {
            line.apply(*e);
        }
        (line.text.clone(), line.cursor())
    }

    #[test]
    fn the_shell_editing_keys_work_at_the_cursor() {
        assert_eq!(edited("plan.sh", &[Edit::KillToStart]), (String::new(), 0));
        assert_eq!(
            edited("plan.sh", &[Edit::Left, Edit::Left, Edit::KillToStart]),
            ("sh".to_string(), 0)
        );
        assert_eq!(
            edited("/tmp/plans/plan.sh", &[Edit::KillWord]),
            ("/tmp/plans/".to_string(), 11)
        );
        assert_eq!(
            edited("/tmp/plans/", &[Edit::KillWord]),
            ("/tmp/plans".to_string(), 10),
            "then the slash, then the next name"
        );
        assert_eq!(
            edited("my plan.sh", &[Edit::KillWord]),
            ("my ".to_string(), 3)
        );
        assert_eq!(
            edited("plan.sh", &[Edit::Home, Edit::Delete]),
            ("lan.sh".to_string(), 0)
        );
        assert_eq!(
            edited(
                "plan.sh",
                &[Edit::Home, Edit::Right, Edit::Backspace, Edit::End]
            ),
            ("lan.sh".to_string(), 6)
        );
        let mut line = LineEdit::new("pln");
        line.apply(Edit::Left);
        line.apply(Edit::Left);
        line.insert('a');
        assert_eq!(line.split(), ("pa", "ln"));
        // Multi-byte characters move as one.
        let mut line = LineEdit::new("äö");
        line.apply(Edit::Left);
        line.apply(Edit::Backspace);
        assert_eq!(line.text, "ö");
    }
}
