//! Just enough of Python's lexical syntax to read the literals that version files and
//! `build_info.py` assign: strings, `None`/`True`/`False`, numbers, lists and dicts.
//!
//! This is a tokenizer, not an evaluator: nothing is executed, and anything it does not
//! understand comes out as a punctuation token that callers skip.

/// One Python token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok<'a> {
    /// A string literal's value (escapes decoded; prefixes such as `r`, `b`, `u` accepted).
    Str(String),
    /// An identifier or keyword: `None`, `True`, `cuda_version`.
    Name(&'a str),
    /// A numeric literal as written.
    Num(&'a str),
    /// Any other character: `= : , [ ] ( ) { }` ...
    Punct(char),
}

/// A literal value as the callers care about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Literal {
    Str(String),
    None,
    Bool(bool),
    /// Numbers, names, lists: anything else.
    Other,
}

impl Literal {
    /// The string, if this is one.
    pub(crate) fn into_string(self) -> Option<String> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Tokens of a Python source text; cheap to clone for lookahead.
#[derive(Debug, Clone)]
pub(crate) struct Tokens<'a> {
    rest: &'a str,
}

impl<'a> Tokens<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Self { rest: text }
    }

    /// The literal that starts here (the first token decides).
    pub(crate) fn literal(&mut self) -> Option<Literal> {
        Some(match self.next()? {
            Tok::Str(s) => Literal::Str(s),
            Tok::Name("None") => Literal::None,
            Tok::Name("True") => Literal::Bool(true),
            Tok::Name("False") => Literal::Bool(false),
            _ => Literal::Other,
        })
    }

    /// After an opening `[` or `(`: the string items up to the matching close. Nested brackets
    /// are skipped over; non-string items are dropped.
    pub(crate) fn string_list(&mut self) -> Vec<String> {
        let mut items = Vec::new();
        let mut depth = 1usize;
        for tok in self.by_ref() {
            match tok {
                Tok::Punct('[' | '(' | '{') => depth += 1,
                Tok::Punct(']' | ')' | '}') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                Tok::Str(s) if depth == 1 => items.push(s),
                _ => {}
            }
        }
        items
    }

    fn take_while(&mut self, keep: impl Fn(char) -> bool) -> &'a str {
        let end = self
            .rest
            .char_indices()
            .find(|&(_, c)| !keep(c))
            .map_or(self.rest.len(), |(i, _)| i);
        let (taken, rest) = self.rest.split_at_checked(end).unwrap_or((self.rest, ""));
        self.rest = rest;
        taken
    }

    /// Reads a string body after its opening quote(s).
    fn string_body(&mut self, quote: char, triple: bool, raw: bool) -> String {
        let mut out = String::new();
        let mut chars = self.rest.chars();
        // Running out of text leaves the string unterminated: what was read is kept.
        while let Some(c) = chars.next() {
            if c == quote {
                if !triple {
                    break;
                }
                let after = chars.as_str();
                let closing: [char; 2] = [quote, quote];
                if after.starts_with(closing) {
                    chars.next();
                    chars.next();
                    break;
                }
                out.push(c);
            } else if c == '\n' && !triple {
                break; // unterminated single-line string
            } else if c == '\\' {
                match chars.next() {
                    None => break,
                    Some(e) if raw => {
                        out.push('\\');
                        out.push(e);
                    }
                    Some('\n') => {}
                    Some('n') => out.push('\n'),
                    Some('t') => out.push('\t'),
                    Some(e @ ('\\' | '\'' | '"')) => out.push(e),
                    Some(e) => {
                        out.push('\\');
                        out.push(e);
                    }
                }
            } else {
                out.push(c);
            }
        }
        self.rest = chars.as_str();
        out
    }

    /// A string starting at `self.rest` (which begins with a quote).
    fn string(&mut self, raw: bool) -> Option<Tok<'a>> {
        let mut chars = self.rest.chars();
        let quote = chars.next()?;
        let after = chars.as_str();
        let triple_marker: [char; 2] = [quote, quote];
        let triple = after.starts_with(triple_marker);
        self.rest = if triple {
            after.get(2..).unwrap_or("")
        } else {
            after
        };
        Some(Tok::Str(self.string_body(quote, triple, raw)))
    }
}

/// Prefixes allowed before a string literal.
fn is_string_prefix(name: &str) -> bool {
    name.len() <= 2
        && name
            .chars()
            .all(|c| matches!(c, 'r' | 'R' | 'b' | 'B' | 'u' | 'U' | 'f' | 'F'))
}

impl<'a> Iterator for Tokens<'a> {
    type Item = Tok<'a>;

    fn next(&mut self) -> Option<Tok<'a>> {
        loop {
            self.rest = self.rest.trim_start();
            let c = self.rest.chars().next()?;
            if c == '#' {
                self.take_while(|c| c != '\n');
                continue;
            }
            if c == '\'' || c == '"' {
                return self.string(false);
            }
            if c.is_alphabetic() || c == '_' {
                let name = self.take_while(|c| c.is_alphanumeric() || c == '_');
                if is_string_prefix(name) && self.rest.starts_with(['\'', '"']) {
                    return self.string(name.contains(['r', 'R']));
                }
                return Some(Tok::Name(name));
            }
            if c.is_ascii_digit() {
                return Some(Tok::Num(
                    self.take_while(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.'),
                ));
            }
            self.rest = self.rest.get(c.len_utf8()..).unwrap_or("");
            return Some(Tok::Punct(c));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::text::testdata::{garbage, huge};

    fn toks(text: &str) -> Vec<Tok<'_>> {
        Tokens::new(text).collect()
    }

    #[test]
    fn strings_names_numbers() {
        assert_eq!(
            toks("cuda: Optional[str] = '13.0'  # comment\nhip = None"),
            vec![
                Tok::Name("cuda"),
                Tok::Punct(':'),
                Tok::Name("Optional"),
                Tok::Punct('['),
                Tok::Name("str"),
                Tok::Punct(']'),
                Tok::Punct('='),
                Tok::Str("13.0".into()),
                Tok::Name("hip"),
                Tok::Punct('='),
                Tok::Name("None"),
            ]
        );
        assert_eq!(
            toks(
                r#""a\"b" r'c\d' b"x" '''multi
line''' 1.5e3"#
            ),
            vec![
                Tok::Str("a\"b".into()),
                Tok::Str("c\\d".into()),
                Tok::Str("x".into()),
                Tok::Str("multi\nline".into()),
                Tok::Num("1.5e3"),
            ]
        );
    }

    #[test]
    fn lists() {
        let mut t = Tokens::new("['sm_60', ('x', 'y'), 'compute_90'] after");
        assert_eq!(t.next(), Some(Tok::Punct('[')));
        assert_eq!(t.string_list(), vec!["sm_60", "compute_90"]);
        assert_eq!(t.next(), Some(Tok::Name("after")));
    }

    #[test]
    fn garbage_truncated_and_huge() {
        assert!(toks("").is_empty());
        assert!(!toks(&garbage()).is_empty());
        assert_eq!(toks("'unterminated"), vec![Tok::Str("unterminated".into())]);
        assert_eq!(
            toks("'''open\nforever"),
            vec![Tok::Str("open\nforever".into())]
        );
        assert_eq!(
            toks("'ends in backslash\\"),
            vec![Tok::Str("ends in backslash".into())]
        );
        assert_eq!(Tokens::new("[").string_list(), Vec::<String>::new());
        let big = huge("x = 'y' # z\n");
        assert_eq!(
            Tokens::new(&big).count(),
            3 * (big.len() / "x = 'y' # z\n".len())
        );
    }
}
