//! Reading JSON bodies as tolerantly as the Java broker (fastjson) does, in one place for every
//! body and every processor.
//!
//! RocketMQ clients do not all write the same JSON for the same body: the C++ client writes
//! enums as ordinals (`"consumeType":1`), numbers as strings (`"subVersion":"1700000000000"`)
//! and booleans as `0`/`1`; older Java clients leave fields `null`. fastjson accepts all of these
//! for the bean it fills, and so must we. A [`Lenient`] value deserializes into any serde type
//! with these coercions, driven by the type asked for:
//! - booleans: `true`/`false`, strings as header booleans are read ("true" in any case or "1"
//!   is true, see [`crate::header::parse_bool`]), numbers (non-zero is true), `null` (false);
//! - integers and floats: numbers, or strings holding one (trimmed); `null` is 0;
//! - strings: strings, or numbers and booleans as their text; `null` is empty;
//! - enums: a variant's name, or its ordinal (its position in the Rust enum, which must be
//!   declared in Java's order);
//! - sequences and maps: `null` is empty; map keys parse as numbers where numbers are asked for;
//! - unknown fields are ignored (as every body struct here allows).
//!
//! Output is always standard JSON written by serde; only reading is lenient.

use serde::de::value::{MapDeserializer, SeqDeserializer};
use serde::de::{self, DeserializeOwned, Deserializer as _, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::{Number, Value};

type Error = serde_json::Error;

/// Deserializes `T` from a parsed JSON value with fastjson's coercions.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, Error> {
    T::deserialize(Lenient(value))
}

/// A JSON value that deserializes leniently (see the module documentation).
#[derive(Debug)]
pub struct Lenient(pub Value);

impl<'de> IntoDeserializer<'de, Error> for Lenient {
    type Deserializer = Lenient;

    fn into_deserializer(self) -> Lenient {
        self
    }
}

fn number_from_str(s: &str) -> Option<Number> {
    let t = s.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Some(i.into());
    }
    if let Ok(u) = t.parse::<u64>() {
        return Some(u.into());
    }
    t.parse::<f64>().ok().and_then(Number::from_f64)
}

fn visit_number<'de, V: Visitor<'de>>(n: &Number, visitor: V) -> Result<V::Value, Error> {
    if let Some(i) = n.as_i64() {
        visitor.visit_i64(i)
    } else if let Some(u) = n.as_u64() {
        visitor.visit_u64(u)
    } else {
        visitor.visit_f64(n.as_f64().unwrap_or(0.0))
    }
}

impl Lenient {
    /// Integers and floats: a number, a string holding one, a boolean (0/1) or null (0).
    fn number<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Number(n) => visit_number(&n, visitor),
            Value::String(s) => match number_from_str(&s) {
                Some(n) => visit_number(&n, visitor),
                None => Err(de::Error::invalid_value(
                    de::Unexpected::Str(&s),
                    &"a number",
                )),
            },
            Value::Bool(b) => visitor.visit_i64(b as i64),
            Value::Null => visitor.visit_i64(0),
            other => Lenient(other).deserialize_any(visitor),
        }
    }
}

macro_rules! numbers {
    ($($method:ident)*) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.number(visitor)
        })*
    };
}

impl<'de> de::Deserializer<'de> for Lenient {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => visit_number(&n, visitor),
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => {
                visitor.visit_seq(SeqDeserializer::new(items.into_iter().map(Lenient)))
            }
            Value::Object(map) => visitor.visit_map(MapDeserializer::new(
                map.into_iter()
                    .map(|(k, v)| (Lenient(Value::String(k)), Lenient(v))),
            )),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Bool(b) => visitor.visit_bool(b),
            Value::String(s) => visitor.visit_bool(crate::header::parse_bool(&s)),
            Value::Number(n) => visitor.visit_bool(n.as_f64().is_some_and(|f| f != 0.0)),
            Value::Null => visitor.visit_bool(false),
            other => Lenient(other).deserialize_any(visitor),
        }
    }

    numbers! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::String(s) => visitor.visit_string(s),
            Value::Number(n) => visitor.visit_string(n.to_string()),
            Value::Bool(b) => visitor.visit_string(b.to_string()),
            Value::Null => visitor.visit_string(String::new()),
            other => Lenient(other).deserialize_any(visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            other => visitor.visit_some(Lenient(other)),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_seq(SeqDeserializer::new(std::iter::empty::<Lenient>())),
            other => Lenient(other).deserialize_any(visitor),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor
                .visit_map(MapDeserializer::new(
                    std::iter::empty::<(Lenient, Lenient)>(),
                )),
            other => Lenient(other).deserialize_any(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let ordinal = match &self.0 {
            Value::Number(n) => n.as_u64(),
            Value::String(s) if s.trim().bytes().all(|b| b.is_ascii_digit()) => {
                s.trim().parse().ok()
            }
            _ => None,
        };
        match (ordinal, self.0) {
            (Some(i), _) => match variants.get(i as usize) {
                Some(variant) => visitor.visit_enum((*variant).into_deserializer()),
                None => Err(de::Error::custom(format!(
                    "{name} has no variant with ordinal {i}"
                ))),
            },
            (None, Value::String(s)) => visitor.visit_enum(s.trim().to_owned().into_deserializer()),
            (None, other) => other.deserialize_enum(name, variants, visitor),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! {
        char bytes byte_buf unit unit_struct tuple tuple_struct identifier
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq, Eq)]
    enum Model {
        Broadcasting,
        Clustering,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase")]
    struct Bean {
        flag: bool,
        count: i32,
        version: i64,
        name: String,
        #[serde(default)]
        model: Option<Model>,
        #[serde(default)]
        list: Vec<i32>,
        #[serde(default)]
        addrs: HashMap<i64, String>,
    }

    fn parse(json: &str) -> Result<Bean, Error> {
        from_value(serde_json::from_str(json).unwrap())
    }

    #[test]
    fn coerces_like_fastjson() {
        let b = parse(
            r#"{"flag":"TRUE","count":"7","version":" 1700000000000 ","name":12,"model":1,
                "list":null,"addrs":{"0":"a:1"},"unknown":{"x":[1]}}"#,
        )
        .unwrap();
        assert!(b.flag);
        assert_eq!(
            (b.count, b.version, b.name.as_str()),
            (7, 1_700_000_000_000, "12")
        );
        assert_eq!(b.model, Some(Model::Clustering));
        assert!(b.list.is_empty());
        assert_eq!(b.addrs[&0], "a:1");
        let b =
            parse(r#"{"flag":"no","count":null,"version":0,"name":null,"model":"Broadcasting"}"#)
                .unwrap();
        assert!(!b.flag, "anything but true or 1 is false");
        assert_eq!((b.count, b.name.as_str()), (0, ""));
        assert_eq!(b.model, Some(Model::Broadcasting));
        assert!(parse(r#"{"flag":1,"count":0,"version":0,"name":"","model":"2"}"#).is_err());
        assert!(parse(r#"{"flag":1,"count":"seven","version":0,"name":""}"#).is_err());
        assert!(parse(r#"{"flag":1,"count":0,"version":0,"name":"","model":"Nope"}"#).is_err());
    }
}
