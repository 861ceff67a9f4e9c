//! RocketMQ's SQL92 message filter (`ExpressionType.SQL92`, its filter module's grammar and
//! semantics), with no I/O: a subscription's expression is compiled once ([`Filter::compile`])
//! and evaluated on each message's properties ([`Filter::matches`]), which are read in place
//! from the stored encoding ([`EncodedProperties`]) — nothing is copied per message.
//!
//! - [`lexer`]: tokens; [`parser`]: the grammar and RocketMQ's build-time checks;
//!   [`expr`]: the compiled form and its three-valued evaluation.
//!
//! What must stay true: compiling is linear in the text and bounded (its length by
//! [`MAX_EXPRESSION_LEN`], nesting by [`parser::MAX_DEPTH`]); evaluation never panics, and an
//! evaluation error (a property that does not convert) is a message that does not match, as
//! in RocketMQ.

pub mod bloom;
pub mod expr;
pub mod lexer;
pub mod parser;

pub use expr::{EvalError, Expr, Properties};

/// Longest expression compiled (bytes). A subscription travels in a request header, whose
/// size the transport bounds already; this keeps a filter's own cost bounded too.
pub const MAX_EXPRESSION_LEN: usize = 64 * 1024;

/// An expression that cannot be compiled, and where (a 0-based byte offset).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at character {})", at + 1)]
pub struct FilterError {
    pub at: usize,
    pub message: String,
}

impl FilterError {
    pub fn at(at: usize, message: impl Into<String>) -> Self {
        FilterError {
            at,
            message: message.into(),
        }
    }

    /// Where the problem is (0-based byte offset).
    pub fn position(&self) -> Option<usize> {
        Some(self.at)
    }
}

/// A compiled SQL92 expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    expr: Expr,
}

impl Filter {
    /// Compiles `text`, refusing what RocketMQ refuses (with the position).
    pub fn compile(text: &str) -> Result<Filter, FilterError> {
        if text.len() > MAX_EXPRESSION_LEN {
            return Err(FilterError::at(
                MAX_EXPRESSION_LEN,
                format!("the expression is longer than {MAX_EXPRESSION_LEN} bytes"),
            ));
        }
        let tokens = lexer::tokens(text)?;
        if tokens.len() == 1 {
            return Err(FilterError::at(0, "the expression is empty"));
        }
        let expr = parser::Parser::new(tokens).selector()?;
        Ok(Filter { expr })
    }

    /// Whether a message with these properties matches: the expression is TRUE (unknown,
    /// FALSE and evaluation errors do not match).
    pub fn matches<'a>(&'a self, props: &impl Properties<'a>) -> bool {
        matches!(self.evaluate(props), Ok(Some(true)))
    }

    /// The expression's value: TRUE, FALSE, unknown (None), or why it could not be evaluated.
    pub fn evaluate<'a>(&'a self, props: &impl Properties<'a>) -> Result<Option<bool>, EvalError> {
        Ok(match self.expr.eval(props)? {
            Some(expr::Val::Bool(b)) => Some(b),
            _ => None,
        })
    }
}

/// Properties in their stored encoding (`name\x01value\x02...`), looked up in place.
#[derive(Debug, Clone, Copy)]
pub struct EncodedProperties<'a>(pub &'a str);

impl<'a> Properties<'a> for EncodedProperties<'a> {
    fn get(&self, name: &str) -> Option<&'a str> {
        self.0.split('\u{2}').find_map(|pair| {
            let (k, v) = pair.split_once('\u{1}')?;
            (k == name).then_some(v)
        })
    }
}

#[cfg(test)]
mod tests;
