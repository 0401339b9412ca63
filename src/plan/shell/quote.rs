//! Quoting for the script: every value as one bash word that nothing expands inside, and text
//! as comment lines no line break can end. The two rules the script's safety rests on.

use super::super::cmd::{Python, Word};

/// Width that comments are wrapped to.
pub(super) const WIDTH: usize = 96;

/// Quotes a value for bash so it stays one word and nothing in it expands: plain words as
/// they are, everything else in single quotes (a `'` inside becomes `'\''`). NUL bytes, which
/// no argument can carry, are dropped, and every other control character but a tab or a line
/// break becomes `?`: the script is printed, saved and echoed as it runs, and a value from the
/// machine must not drive a terminal on any of those ways.
#[must_use]
pub fn shell_quote(value: &str) -> String {
    let safe = |b: u8| b.is_ascii_alphanumeric() || b"-_./:=+,@%".contains(&b);
    if !value.is_empty() && value.bytes().all(safe) && !value.starts_with('=') {
        return value.to_string();
    }
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        match c {
            '\'' => out.push_str("'\\''"),
            '\0' => {}
            '\t' | '\n' => out.push(c),
            c if c.is_control() => out.push('?'),
            c if crate::sanitize::is_invisible(c) => {
                out.push_str(&format!("<U+{:04X}>", u32::from(c)));
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

/// Text as `#` comment lines, wrapped; line breaks start new comment lines and other control
/// characters become `?`, so no value can end a comment and become a command.
#[must_use]
pub fn comment_lines(text: &str, indent: &str) -> Vec<String> {
    // Each line cleaned as every face cleans text (invisible characters shown escaped).
    let clean = crate::sanitize::clean_lines(text);
    let mut out = Vec::new();
    for paragraph in clean.split('\n') {
        let mut line = format!("#{indent}");
        let bare = line.len();
        for word in paragraph.split(' ').filter(|w| !w.is_empty()) {
            if line.len() > bare && line.len() + 1 + word.len() > WIDTH {
                out.push(line.trim_end().to_string());
                line = format!("#{indent}  ");
            }
            if line.len() > bare && !line.ends_with("  ") {
                line.push(' ');
            }
            line.push_str(word);
        }
        out.push(line.trim_end().to_string());
    }
    out
}

pub(super) fn word(w: &Word) -> String {
    match w {
        Word::Lit(text) => shell_quote(text),
        Word::Path(path) if path.starts_with('/') => format!("\"$root\"{}", shell_quote(path)),
        Word::Path(path) if path.starts_with("./") || path.starts_with("../") => shell_quote(path),
        Word::Path(path) => shell_quote(&format!("./{path}")),
        Word::Var(name) => format!("\"${name}\""),
        Word::Join(parts) => parts.iter().map(word).collect(),
    }
}

pub(super) fn line(words: &[Word]) -> String {
    words.iter().map(word).collect::<Vec<_>>().join(" ")
}

/// The words that run a step's Python.
pub(super) fn python_words(python: &Python) -> Vec<Word> {
    match python {
        Python::Prefix(prefix) => vec![Word::Join(vec![
            Word::path(prefix.trim_end_matches('/')),
            Word::lit("/bin/python"),
        ])],
        Python::CondaEnv(name) => vec![
            Word::lit("conda"),
            Word::lit("run"),
            Word::lit("-n"),
            Word::lit(name.clone()),
            Word::lit("python"),
        ],
    }
}
