//! A compiled selector and its evaluation, with RocketMQ's semantics (its filter module's
//! `ComparisonExpression`, `LogicExpression`, `UnaryExpression`):
//! - three-valued logic: a comparison with a missing property is unknown (None), `NOT`
//!   unknown is unknown, `AND`/`OR` as SQL; a message matches only when the whole is TRUE;
//! - values of different types are converted before comparing: numbers upward (int, long,
//!   double), a string to the other side's type (`'7' > 5` compares 7 with 5), two strings
//!   under `>`/`<` as doubles; a conversion that fails is an evaluation error, and the message
//!   does not match (RocketMQ logs and skips it);
//! - `CONTAINS`/`STARTSWITH`/`ENDSWITH` and their `NOT` forms are FALSE (not unknown) when the
//!   property is missing or the search string empty.
//!
//! Property values are borrowed from the message, never copied.

use std::cmp::Ordering;

/// A literal of the expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(String),
}

impl Lit {
    /// The literal's value (None for NULL).
    pub fn val(&self) -> Option<Val<'_>> {
        match self {
            Lit::Null => None,
            Lit::Bool(b) => Some(Val::Bool(*b)),
            Lit::Int(i) => Some(Val::Int(*i)),
            Lit::Long(l) => Some(Val::Long(*l)),
            Lit::Double(d) => Some(Val::Double(*d)),
            Lit::Str(s) => Some(Val::Str(s)),
        }
    }
}

/// A value during evaluation: a literal's or a property's (always a string).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Val<'a> {
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(&'a str),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Gt,
    Ge,
    Lt,
    Le,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextOp {
    Contains,
    StartsWith,
    EndsWith,
}

/// A compiled expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Const(Lit),
    Prop(String),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    /// A property used as a condition: TRUE only for a boolean value (never, for a message).
    BoolCast(Box<Expr>),
    /// `a AND b AND ...` as one node (a chain does not deepen the tree): evaluated left to
    /// right, stopping at the first FALSE, as RocketMQ's nested ANDs do.
    And(Vec<Expr>),
    /// `a OR b OR ...`, stopping at the first TRUE.
    Or(Vec<Expr>),
    /// `=` (and `IS NULL`, against `Const(Null)`).
    Eq(Box<Expr>, Box<Expr>),
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    In {
        prop: String,
        list: Vec<String>,
        not: bool,
    },
    Text {
        op: TextOp,
        not: bool,
        left: Box<Expr>,
        search: String,
    },
}

/// Why an evaluation stopped (the message does not match).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError(pub String);

/// Where property values come from: `get` returns a value borrowed for `'a`.
pub trait Properties<'a> {
    fn get(&self, name: &str) -> Option<&'a str>;
}

impl<'a, F: Fn(&str) -> Option<&'a str>> Properties<'a> for F {
    fn get(&self, name: &str) -> Option<&'a str> {
        self(name)
    }
}

type Eval<'a> = Result<Option<Val<'a>>, EvalError>;

impl Expr {
    /// Whether RocketMQ treats the expression as a condition (`BooleanExpression`).
    pub fn is_boolean(&self) -> bool {
        !matches!(
            self,
            Expr::Const(Lit::Int(_) | Lit::Long(_) | Lit::Double(_) | Lit::Str(_))
                | Expr::Prop(_)
                | Expr::Neg(_)
        )
    }

    /// The expression's value for a message whose properties are `props`.
    pub fn eval<'a>(&'a self, props: &impl Properties<'a>) -> Eval<'a> {
        Ok(match self {
            Expr::Const(lit) => lit.val(),
            Expr::Prop(name) => props.get(name).map(Val::Str),
            Expr::Neg(e) => match e.eval(props)? {
                Some(Val::Int(i)) => Some(Val::Int(i.wrapping_neg())),
                Some(Val::Long(l)) => Some(Val::Long(l.wrapping_neg())),
                Some(Val::Double(d)) => Some(Val::Double(-d)),
                _ => None,
            },
            Expr::Not(e) => truth(e.eval(props)?).map(|b| Val::Bool(!b)),
            Expr::BoolCast(e) => match e.eval(props)? {
                None => None,
                Some(Val::Bool(b)) => Some(Val::Bool(b)),
                Some(_) => Some(Val::Bool(false)),
            },
            Expr::And(terms) => all_or_any(terms, props, false)?,
            Expr::Or(terms) => all_or_any(terms, props, true)?,
            Expr::Eq(l, r) => match (l.eval(props)?, r.eval(props)?) {
                (None, None) => Some(Val::Bool(true)),
                (None, Some(_)) => None,
                (Some(_), None) => Some(Val::Bool(false)),
                (Some(lv), Some(rv)) => Some(Val::Bool(order(lv, rv)? == Ordering::Equal)),
            },
            Expr::Cmp(op, l, r) => {
                let Some(lv) = l.eval(props)? else {
                    return Ok(None);
                };
                let Some(rv) = r.eval(props)? else {
                    return Ok(None);
                };
                let ord = match (lv, rv) {
                    // Strings are not ordered: both are read as doubles, or it is an error.
                    (Val::Str(a), Val::Str(b)) => parse_f64(a)?.total_cmp(&parse_f64(b)?),
                    _ => order(lv, rv)?,
                };
                Some(Val::Bool(match op {
                    CmpOp::Gt => ord == Ordering::Greater,
                    CmpOp::Ge => ord != Ordering::Less,
                    CmpOp::Lt => ord == Ordering::Less,
                    CmpOp::Le => ord != Ordering::Greater,
                }))
            }
            Expr::In { prop, list, not } => props
                .get(prop)
                .map(|v| Val::Bool(list.iter().any(|s| s == v) ^ not)),
            Expr::Text {
                op,
                not,
                left,
                search,
            } => {
                let found = match left.eval(props)? {
                    Some(Val::Str(v)) if !search.is_empty() => match op {
                        TextOp::Contains => v.contains(search.as_str()),
                        TextOp::StartsWith => v.starts_with(search.as_str()),
                        TextOp::EndsWith => v.ends_with(search.as_str()),
                    },
                    _ => return Ok(Some(Val::Bool(false))),
                };
                Some(Val::Bool(found ^ not))
            }
        })
    }
}

/// AND (`decisive` FALSE) or OR (`decisive` TRUE) of `terms` in SQL's three-valued logic:
/// the decisive value as soon as a term has it; else unknown if a term was, else the other.
fn all_or_any<'a>(terms: &'a [Expr], props: &impl Properties<'a>, decisive: bool) -> Eval<'a> {
    let mut unknown = false;
    for term in terms {
        match truth(term.eval(props)?) {
            Some(v) if v == decisive => return Ok(Some(Val::Bool(decisive))),
            Some(_) => {}
            None => unknown = true,
        }
    }
    Ok((!unknown).then_some(Val::Bool(!decisive)))
}

/// A condition's value: TRUE, FALSE, or unknown (None; also for a non-boolean).
fn truth(v: Option<Val<'_>>) -> Option<bool> {
    match v {
        Some(Val::Bool(b)) => Some(b),
        _ => None,
    }
}

fn parse_i32(s: &str) -> Result<i32, EvalError> {
    s.parse()
        .map_err(|_| EvalError(format!("{s:?} is not an int")))
}

fn parse_i64(s: &str) -> Result<i64, EvalError> {
    s.parse()
        .map_err(|_| EvalError(format!("{s:?} is not a long")))
}

/// Java's `Double.valueOf`: surrounding whitespace and a `d`/`f` suffix allowed.
fn parse_f64(s: &str) -> Result<f64, EvalError> {
    let t = s.trim();
    let t = t
        .strip_suffix(['d', 'D', 'f', 'F'])
        .filter(|rest| !rest.is_empty() && !rest.ends_with(['e', 'E']))
        .unwrap_or(t);
    t.parse()
        .map_err(|_| EvalError(format!("{s:?} is not a number")))
}

/// Java's `Boolean.valueOf`.
fn parse_bool(s: &str) -> bool {
    s.eq_ignore_ascii_case("true")
}

/// RocketMQ's `__compare` with string conversion on: both sides brought to one type, then
/// ordered. Types that do not convert into each other order as "less" (RocketMQ's -1).
pub fn order(l: Val<'_>, r: Val<'_>) -> Result<Ordering, EvalError> {
    use Val::*;
    Ok(match (l, r) {
        (Bool(a), Bool(b)) => a.cmp(&b),
        (Int(a), Int(b)) => a.cmp(&b),
        (Long(a), Long(b)) => a.cmp(&b),
        (Double(a), Double(b)) => a.total_cmp(&b),
        (Str(a), Str(b)) => a.cmp(b),
        // RocketMQ casts the boolean to a string here and fails.
        (Bool(_), Str(s)) => return Err(EvalError(format!("a boolean compared with {s:?}"))),
        (Int(a), Long(b)) => i64::from(a).cmp(&b),
        (Int(a), Double(b)) => f64::from(a).total_cmp(&b),
        (Int(a), Str(s)) => a.cmp(&parse_i32(s)?),
        (Long(a), Int(b)) => a.cmp(&i64::from(b)),
        (Long(a), Double(b)) => (a as f64).total_cmp(&b),
        (Long(a), Str(s)) => a.cmp(&parse_i64(s)?),
        (Double(a), Int(b)) => a.total_cmp(&f64::from(b)),
        (Double(a), Long(b)) => a.total_cmp(&(b as f64)),
        (Double(a), Str(s)) => a.total_cmp(&parse_f64(s)?),
        (Str(s), Bool(b)) => parse_bool(s).cmp(&b),
        (Str(s), Int(b)) => parse_i32(s)?.cmp(&b),
        (Str(s), Long(b)) => parse_i64(s)?.cmp(&b),
        (Str(s), Double(b)) => parse_f64(s)?.total_cmp(&b),
        (Bool(_), _) | (Int(_) | Long(_) | Double(_), Bool(_)) => Ordering::Less,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Val::*;

    #[test]
    fn conversions_follow_rocketmq() {
        assert_eq!(order(Str("7"), Int(5)), Ok(Ordering::Greater));
        assert_eq!(order(Int(5), Str("5")), Ok(Ordering::Equal));
        assert_eq!(
            order(Str("5000000000"), Long(5_000_000_000)),
            Ok(Ordering::Equal)
        );
        assert!(order(Str("5000000000"), Int(5)).is_err(), "not an int");
        assert!(
            order(Str("7.5"), Int(7)).is_err(),
            "Integer.valueOf refuses 7.5"
        );
        assert_eq!(order(Str(" 7.5 "), Double(7.0)), Ok(Ordering::Greater));
        assert_eq!(order(Int(2), Double(2.5)), Ok(Ordering::Less));
        assert_eq!(order(Long(3), Int(3)), Ok(Ordering::Equal));
        assert_eq!(order(Str("TRUE"), Bool(true)), Ok(Ordering::Equal));
        assert_eq!(
            order(Int(1), Bool(true)),
            Ok(Ordering::Less),
            "RocketMQ's -1"
        );
        assert!(order(Bool(true), Str("true")).is_err());
        assert_eq!(parse_f64("5d"), Ok(5.0));
        assert!(parse_f64("e").is_err());
    }
}
