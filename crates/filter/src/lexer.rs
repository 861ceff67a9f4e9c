//! Tokens of RocketMQ's SQL92 selector grammar (its filter module's `SelectorParser.jj`):
//! keywords and identifiers in any case, decimal literals with an optional `L`, floating
//! literals (`5.5`, `5.`, `.5`, `5E10`), single-quoted strings with `''` for a quote,
//! `--` line and `/* */` block comments.
//!
//! Linear in the input: each byte is looked at a bounded number of times.

use crate::FilterError;

/// One token and where it starts (a 0-based byte offset).
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub kind: Kind,
    pub at: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Not,
    And,
    Or,
    Between,
    In,
    True,
    False,
    Null,
    Is,
    Contains,
    StartsWith,
    EndsWith,
    /// A decimal literal's digits (the `L` stripped).
    Decimal(String),
    /// A floating literal as written.
    Float(String),
    /// A string literal, `''` decoded.
    Str(String),
    Id(String),
    /// One of `= <> > >= < <= ( ) , + -`.
    Sym(&'static str),
    End,
}

impl Kind {
    /// How the token reads in an error message.
    pub fn describe(&self) -> String {
        match self {
            Kind::Decimal(d) => d.clone(),
            Kind::Float(f) => f.clone(),
            Kind::Str(s) => format!("'{s}'"),
            Kind::Id(id) => id.clone(),
            Kind::Sym(s) => (*s).to_owned(),
            Kind::End => "the end".to_owned(),
            keyword => format!("{keyword:?}").to_uppercase(),
        }
    }
}

fn keyword(word: &str) -> Option<Kind> {
    Some(match word.to_ascii_uppercase().as_str() {
        "NOT" => Kind::Not,
        "AND" => Kind::And,
        "OR" => Kind::Or,
        "BETWEEN" => Kind::Between,
        "IN" => Kind::In,
        "TRUE" => Kind::True,
        "FALSE" => Kind::False,
        "NULL" => Kind::Null,
        "IS" => Kind::Is,
        "CONTAINS" => Kind::Contains,
        "STARTSWITH" => Kind::StartsWith,
        "ENDSWITH" => Kind::EndsWith,
        _ => return None,
    })
}

fn id_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}

fn id_part(b: u8) -> bool {
    id_start(b) || b.is_ascii_digit()
}

/// The tokens of `text`, ending with [`Kind::End`].
pub fn tokens(text: &str) -> Result<Vec<Token>, FilterError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let digits = |mut j: usize| {
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        j
    };
    // An exponent (`E`, an optional sign, digits) at `j`: where it ends, or None.
    let exponent = |j: usize| -> Option<usize> {
        if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
            let k = if j + 1 < b.len() && (b[j + 1] == b'+' || b[j + 1] == b'-') {
                j + 2
            } else {
                j + 1
            };
            let end = digits(k);
            (end > k).then_some(end)
        } else {
            None
        }
    };
    while i < b.len() {
        let c = b[i];
        let at = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if text[i..].starts_with("--") {
            i = text[i..].find(['\n', '\r']).map_or(b.len(), |n| i + n);
            continue;
        }
        if text[i..].starts_with("/*") {
            let end = text[i + 2..]
                .find("*/")
                .ok_or_else(|| FilterError::at(at, "a comment that never ends"))?;
            i += 2 + end + 2;
            continue;
        }
        let kind = if c == b'\'' {
            let mut s = String::new();
            let mut j = i + 1;
            loop {
                let Some(n) = text[j..].find('\'') else {
                    return Err(FilterError::at(at, "a string that never ends"));
                };
                s.push_str(&text[j..j + n]);
                j += n + 1;
                if b.get(j) == Some(&b'\'') {
                    s.push('\'');
                    j += 1;
                } else {
                    break;
                }
            }
            i = j;
            Kind::Str(s)
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let int_end = digits(i);
            if int_end < b.len() && b[int_end] == b'.' {
                let frac_end = digits(int_end + 1);
                i = exponent(frac_end).unwrap_or(frac_end);
                Kind::Float(text[at..i].to_owned())
            } else if let Some(end) = exponent(int_end) {
                i = end;
                Kind::Float(text[at..i].to_owned())
            } else {
                // "0" alone, or no leading zero (RocketMQ's DECIMAL_LITERAL).
                if c == b'0' && int_end > i + 1 {
                    return Err(FilterError::at(at, "a number with a leading zero"));
                }
                let value = text[at..int_end].to_owned();
                i = int_end;
                if i < b.len() && (b[i] == b'l' || b[i] == b'L') {
                    i += 1;
                }
                Kind::Decimal(value)
            }
        } else if id_start(c) {
            let mut j = i + 1;
            while j < b.len() && id_part(b[j]) {
                j += 1;
            }
            let word = &text[i..j];
            i = j;
            keyword(word).unwrap_or_else(|| Kind::Id(word.to_owned()))
        } else {
            let two = text.get(i..i + 2).unwrap_or("");
            let sym = match two {
                "<>" => Some("<>"),
                ">=" => Some(">="),
                "<=" => Some("<="),
                _ => None,
            };
            let sym = match sym {
                Some(s) => s,
                None => match c {
                    b'=' => "=",
                    b'>' => ">",
                    b'<' => "<",
                    b'(' => "(",
                    b')' => ")",
                    b',' => ",",
                    b'+' => "+",
                    b'-' => "-",
                    _ => {
                        let ch = text[i..].chars().next().unwrap_or('?');
                        return Err(FilterError::at(at, format!("unexpected character {ch:?}")));
                    }
                },
            };
            i += sym.len();
            Kind::Sym(sym)
        };
        out.push(Token { kind, at });
    }
    out.push(Token {
        kind: Kind::End,
        at: b.len(),
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Kind> {
        tokens(text)
            .expect("tokens")
            .into_iter()
            .map(|t| t.kind)
            .collect()
    }

    #[test]
    fn keywords_ids_numbers_strings_and_symbols() {
        use Kind::*;
        assert_eq!(
            kinds("a >= 5L and B_$1 <> 'it''s' oR x in ('1') -- done\n"),
            [
                Id("a".into()),
                Sym(">="),
                Decimal("5".into()),
                And,
                Id("B_$1".into()),
                Sym("<>"),
                Str("it's".into()),
                Or,
                Id("x".into()),
                In,
                Sym("("),
                Str("1".into()),
                Sym(")"),
                End
            ]
        );
        assert_eq!(
            kinds("5.5 5. .5 5E10 1.5e-3 /* c */ 0"),
            [
                Float("5.5".into()),
                Float("5.".into()),
                Float(".5".into()),
                Float("5E10".into()),
                Float("1.5e-3".into()),
                Decimal("0".into()),
                End
            ]
        );
    }

    #[test]
    fn bad_input_names_its_position() {
        for (text, at) in [("a = 'x", 4), ("a = 07", 4), ("a # 1", 2), ("/* x", 0)] {
            match tokens(text) {
                Err(e) => assert_eq!(e.position(), Some(at), "{text}: {e}"),
                Ok(t) => panic!("{text} gave {t:?}"),
            }
        }
    }
}
