//! The selector grammar (RocketMQ's `SelectorParser.jj`), by recursive descent, with the
//! checks RocketMQ makes while building the expression (a NULL compared with `=`, a string or
//! a condition ordered with `>`, `BETWEEN` bounds in the wrong order, `IN` on anything but a
//! property, a number used as a condition). Precedence, loosest first: `OR`, `AND`,
//! `= <> IS [NOT] NULL`, `> >= < <= [NOT] BETWEEN|IN|CONTAINS|STARTSWITH|ENDSWITH`, unary
//! `+ - NOT`.
//!
//! Bounded: nesting deeper than [`MAX_DEPTH`] is refused, so the recursion stays small.

use crate::expr::{order, CmpOp, Expr, Lit, TextOp};
use crate::lexer::{Kind, Token};
use crate::FilterError;

/// Deepest nesting accepted: parentheses, unary operators, and comparisons applied to a
/// comparison (`a IS NULL IS NULL`) each count one level. Evaluating and dropping the tree
/// recurse that deep; 64 levels fit any thread's stack, even unoptimised.
pub const MAX_DEPTH: usize = 64;

/// Most operators in one expression, so compiling and evaluating one stays cheap. (`AND` and
/// `OR` chains are one node each: they do not deepen the tree. Long alternatives are
/// `IN (...)`.)
pub const MAX_OPERATORS: usize = 1000;

pub struct Parser {
    tokens: Vec<Token>,
    next: usize,
    depth: usize,
    operators: usize,
}

type Parsed = Result<Expr, FilterError>;

impl Parser {
    pub fn new(tokens: Vec<Token>) -> Self {
        Parser {
            tokens,
            next: 0,
            depth: 0,
            operators: 0,
        }
    }

    /// One level deeper at `at`, refusing past [`MAX_DEPTH`].
    fn deeper(&mut self, at: usize) -> Result<(), FilterError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(FilterError::at(
                at,
                format!("nested deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    /// Counts one more operator at `at`, refusing past [`MAX_OPERATORS`].
    fn operator(&mut self, at: usize) -> Result<(), FilterError> {
        self.operators += 1;
        if self.operators > MAX_OPERATORS {
            return Err(FilterError::at(
                at,
                format!("more than {MAX_OPERATORS} operators (for many alternatives, use IN)"),
            ));
        }
        Ok(())
    }

    /// The whole input as one condition.
    pub fn selector(mut self) -> Parsed {
        let e = self.or()?;
        let at = self.at();
        if self.peek() != &Kind::End {
            return Err(self.unexpected("an operator or the end"));
        }
        as_condition(e, at)
    }

    fn peek(&self) -> &Kind {
        &self.tokens[self.next.min(self.tokens.len() - 1)].kind
    }

    fn peek2(&self) -> &Kind {
        &self.tokens[(self.next + 1).min(self.tokens.len() - 1)].kind
    }

    fn at(&self) -> usize {
        self.tokens[self.next.min(self.tokens.len() - 1)].at
    }

    fn bump(&mut self) -> Kind {
        let kind = self.peek().clone();
        self.next += 1;
        kind
    }

    fn eat(&mut self, kind: &Kind) -> bool {
        if self.peek() == kind {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, kind: Kind) -> Result<(), FilterError> {
        if self.eat(&kind) {
            Ok(())
        } else {
            Err(self.unexpected(&kind.describe()))
        }
    }

    fn unexpected(&self, wanted: &str) -> FilterError {
        let found = self.peek().describe();
        FilterError::at(
            self.at(),
            format!("found {found} where {wanted} was expected"),
        )
    }

    fn or(&mut self) -> Parsed {
        let first = self.and()?;
        self.chain(first, Kind::Or, Self::and, Expr::Or)
    }

    fn and(&mut self) -> Parsed {
        let first = self.equality()?;
        self.chain(first, Kind::And, Self::equality, Expr::And)
    }

    /// `first (word next)*` as one node of `make`, every term a condition.
    fn chain(
        &mut self,
        first: Expr,
        word: Kind,
        next: fn(&mut Self) -> Parsed,
        make: fn(Vec<Expr>) -> Expr,
    ) -> Parsed {
        if self.peek() != &word {
            return Ok(first);
        }
        let mut at = self.at();
        let mut terms = vec![as_condition(first, at)?];
        while self.peek() == &word {
            at = self.at();
            self.operator(at)?;
            self.next += 1;
            terms.push(as_condition(next(self)?, at)?);
        }
        Ok(make(terms))
    }

    fn equality(&mut self) -> Parsed {
        self.at_this_depth(Self::equality_chain)
    }

    /// `chain`, with the depth its operators added given back when it ends.
    fn at_this_depth(&mut self, chain: fn(&mut Self) -> Parsed) -> Parsed {
        let base = self.depth;
        let e = chain(self);
        self.depth = base;
        e
    }

    /// `comparison (= comparison | <> comparison | IS [NOT] NULL)*`; each operator nests the
    /// expression so far one level deeper.
    fn equality_chain(&mut self) -> Parsed {
        let mut left = self.comparison()?;
        loop {
            let at = self.at();
            if matches!(self.peek(), Kind::Sym("=" | "<>") | Kind::Is) {
                self.operator(at)?;
                self.deeper(at)?;
            }
            left = match self.peek() {
                Kind::Sym("=") => {
                    self.next += 1;
                    equal(left, self.comparison()?, at)?
                }
                Kind::Sym("<>") => {
                    self.next += 1;
                    Expr::Not(Box::new(equal(left, self.comparison()?, at)?))
                }
                Kind::Is => {
                    self.next += 1;
                    let not = self.eat(&Kind::Not);
                    self.expect(Kind::Null)?;
                    let is_null = Expr::Eq(Box::new(left), Box::new(Expr::Const(Lit::Null)));
                    if not {
                        Expr::Not(Box::new(is_null))
                    } else {
                        is_null
                    }
                }
                _ => return Ok(left),
            };
        }
    }

    fn comparison(&mut self) -> Parsed {
        self.at_this_depth(Self::comparison_chain)
    }

    /// `unary (op unary | [NOT] word ...)*`; each operator nests one level deeper.
    fn comparison_chain(&mut self) -> Parsed {
        let mut left = self.unary()?;
        loop {
            let at = self.at();
            if matches!(
                self.peek(),
                Kind::Sym(">" | ">=" | "<" | "<=")
                    | Kind::Not
                    | Kind::Contains
                    | Kind::StartsWith
                    | Kind::EndsWith
                    | Kind::Between
                    | Kind::In
            ) {
                self.operator(at)?;
                self.deeper(at)?;
            }
            let (not, word) = match (self.peek().clone(), self.peek2().clone()) {
                (Kind::Sym(s @ (">" | ">=" | "<" | "<=")), _) => {
                    let op = match s {
                        ">" => CmpOp::Gt,
                        ">=" => CmpOp::Ge,
                        "<" => CmpOp::Lt,
                        _ => CmpOp::Le,
                    };
                    self.next += 1;
                    let right = self.unary()?;
                    left = ordered(op, left, right, at)?;
                    continue;
                }
                (
                    Kind::Not,
                    k @ (Kind::Contains
                    | Kind::StartsWith
                    | Kind::EndsWith
                    | Kind::Between
                    | Kind::In),
                ) => (true, k),
                (
                    k @ (Kind::Contains
                    | Kind::StartsWith
                    | Kind::EndsWith
                    | Kind::Between
                    | Kind::In),
                    _,
                ) => (false, k),
                _ => return Ok(left),
            };
            self.next += if not { 2 } else { 1 };
            left = match word {
                Kind::Between => {
                    let low = self.unary()?;
                    self.expect(Kind::And)?;
                    let high = self.unary()?;
                    between(left, low, high, not, at)?
                }
                Kind::In => {
                    let Expr::Prop(prop) = left else {
                        return Err(FilterError::at(at, "IN needs a property on its left"));
                    };
                    self.expect(Kind::Sym("("))?;
                    let mut list = vec![self.string()?];
                    while self.eat(&Kind::Sym(",")) {
                        list.push(self.string()?);
                    }
                    self.expect(Kind::Sym(")"))?;
                    Expr::In { prop, list, not }
                }
                text => Expr::Text {
                    op: match text {
                        Kind::Contains => TextOp::Contains,
                        Kind::StartsWith => TextOp::StartsWith,
                        _ => TextOp::EndsWith,
                    },
                    not,
                    left: Box::new(left),
                    search: self.string()?,
                },
            };
        }
    }

    fn string(&mut self) -> Result<String, FilterError> {
        match self.peek() {
            Kind::Str(s) => {
                let s = s.clone();
                self.next += 1;
                Ok(s)
            }
            _ => Err(self.unexpected("a string literal")),
        }
    }

    fn unary(&mut self) -> Parsed {
        let at = self.at();
        if matches!(self.peek(), Kind::Sym("-") | Kind::Not) {
            self.operator(at)?;
        }
        self.deeper(at)?;
        let e = match self.peek() {
            Kind::Sym("+") => {
                self.next += 1;
                self.unary()
            }
            Kind::Sym("-") => {
                self.next += 1;
                self.unary().map(|e| Expr::Neg(Box::new(e)))
            }
            Kind::Not => {
                self.next += 1;
                self.unary()
                    .and_then(|e| Ok(Expr::Not(Box::new(as_condition(e, at)?))))
            }
            _ => self.primary(),
        };
        self.depth -= 1;
        e
    }

    fn primary(&mut self) -> Parsed {
        let at = self.at();
        Ok(match self.bump() {
            Kind::Str(s) => Expr::Const(Lit::Str(s)),
            Kind::Decimal(d) => Expr::Const(decimal(&d, at)?),
            Kind::Float(f) => Expr::Const(Lit::Double(
                f.parse()
                    .map_err(|_| FilterError::at(at, format!("{f} is not a double")))?,
            )),
            Kind::True => Expr::Const(Lit::Bool(true)),
            Kind::False => Expr::Const(Lit::Bool(false)),
            Kind::Null => Expr::Const(Lit::Null),
            Kind::Id(name) => Expr::Prop(name),
            Kind::Sym("(") => {
                let e = self.or()?;
                self.expect(Kind::Sym(")"))?;
                e
            }
            _ => {
                self.next -= 1;
                return Err(self.unexpected("a value, a property or '('"));
            }
        })
    }
}

/// A decimal literal: an int when it fits (as RocketMQ's `createFromDecimal`), else a long.
fn decimal(digits: &str, at: usize) -> Result<Lit, FilterError> {
    let l: i64 = digits
        .parse()
        .map_err(|_| FilterError::at(at, format!("{digits} does not fit a long")))?;
    Ok(i32::try_from(l).map_or(Lit::Long(l), Lit::Int))
}

/// `e` where a condition is needed: a property is cast (it is never TRUE), a number or a
/// string is refused.
fn as_condition(e: Expr, at: usize) -> Parsed {
    match e {
        Expr::Prop(_) => Ok(Expr::BoolCast(Box::new(e))),
        e if e.is_boolean() => Ok(e),
        _ => Err(FilterError::at(
            at,
            "a number or a string is not a condition (it cannot be TRUE or FALSE)",
        )),
    }
}

fn equal(left: Expr, right: Expr, at: usize) -> Parsed {
    for side in [&left, &right] {
        if side == &Expr::Const(Lit::Null) {
            return Err(FilterError::at(
                at,
                "NULL cannot be compared with =; use IS NULL",
            ));
        }
    }
    if let (Expr::Const(Lit::Bool(_)), Expr::Const(r)) = (&left, &right) {
        if !matches!(r, Lit::Bool(_)) {
            return Err(FilterError::at(
                at,
                "a boolean cannot be compared with a non-boolean",
            ));
        }
    }
    Ok(Expr::Eq(Box::new(left), Box::new(right)))
}

fn ordered(op: CmpOp, left: Expr, right: Expr, at: usize) -> Parsed {
    for side in [&left, &right] {
        let refused = match side {
            Expr::Const(Lit::Int(_) | Lit::Long(_) | Lit::Double(_)) => false,
            Expr::Const(_) => true,
            e => e.is_boolean(),
        };
        if refused {
            return Err(FilterError::at(
                at,
                "only numbers and properties can be ordered (>, >=, <, <=, BETWEEN)",
            ));
        }
    }
    Ok(Expr::Cmp(op, Box::new(left), Box::new(right)))
}

fn between(value: Expr, low: Expr, high: Expr, not: bool, at: usize) -> Parsed {
    if not {
        return Ok(Expr::Or(vec![
            ordered(CmpOp::Lt, value.clone(), low, at)?,
            ordered(CmpOp::Gt, value, high, at)?,
        ]));
    }
    if let (Expr::Const(l), Expr::Const(h)) = (&low, &high) {
        let (Some(l), Some(h)) = (l.val(), h.val()) else {
            return Err(FilterError::at(at, "BETWEEN bounds cannot be NULL"));
        };
        if order(h, l).is_ok_and(|o| o == std::cmp::Ordering::Less) {
            return Err(FilterError::at(
                at,
                "BETWEEN's first bound must not be greater than its second",
            ));
        }
    }
    Ok(Expr::And(vec![
        ordered(CmpOp::Ge, value.clone(), low, at)?,
        ordered(CmpOp::Le, value, high, at)?,
    ]))
}
