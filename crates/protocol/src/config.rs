//! Configuration in RocketMQ's conventions: Java properties files (broker.conf) under RocketMQ's
//! key names — a compatibility surface: files written for RocketMQ work unchanged, misspelled
//! keys such as `mapedFileSizeCommitLog` included — read through one declarative table per
//! config struct ([`config_struct!`]): key, field, parser, default and doc, in one place, so
//! setting a key, listing the keys and printing the effective configuration cannot disagree.
//!
//! Values parse the same way for every table ([`ConfigValue`]). Booleans are `true`/`false` in
//! any case and anything else is an error: Java's loader reads "yes" or "1" as false without a
//! word, and a broker silently running with a setting its operator did not mean is worse than
//! one that refuses to start.

use std::path::PathBuf;

/// A value a config key can have.
pub trait ConfigValue: Sized {
    /// Parses the text of a properties file.
    fn parse_value(raw: &str) -> Result<Self, String>;
    /// The text that parses back to this value.
    fn render(&self) -> String;
}

impl ConfigValue for String {
    fn parse_value(raw: &str) -> Result<Self, String> {
        Ok(raw.trim().to_owned())
    }
    fn render(&self) -> String {
        self.clone()
    }
}

impl ConfigValue for PathBuf {
    fn parse_value(raw: &str) -> Result<Self, String> {
        Ok(PathBuf::from(raw.trim()))
    }
    fn render(&self) -> String {
        self.display().to_string()
    }
}

impl ConfigValue for bool {
    fn parse_value(raw: &str) -> Result<Self, String> {
        match raw.trim() {
            t if t.eq_ignore_ascii_case("true") => Ok(true),
            f if f.eq_ignore_ascii_case("false") => Ok(false),
            other => Err(format!("expected true or false, not {other:?}")),
        }
    }
    fn render(&self) -> String {
        self.to_string()
    }
}

macro_rules! numbers {
    ($($t:ty)*) => {$(
        impl ConfigValue for $t {
            fn parse_value(raw: &str) -> Result<Self, String> {
                raw.trim()
                    .parse()
                    .map_err(|_| format!("expected a number, not {raw:?}"))
            }
            fn render(&self) -> String {
                self.to_string()
            }
        }
    )*};
}

numbers!(u16 i32 i64 u64 usize);

/// An optional value: blank text means "not set".
impl<T: ConfigValue> ConfigValue for Option<T> {
    fn parse_value(raw: &str) -> Result<Self, String> {
        if raw.trim().is_empty() {
            Ok(None)
        } else {
            T::parse_value(raw).map(Some)
        }
    }
    fn render(&self) -> String {
        self.as_ref().map(ConfigValue::render).unwrap_or_default()
    }
}

/// One key of a config table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpec {
    /// RocketMQ's key name.
    pub key: &'static str,
    /// Other accepted spellings.
    pub aliases: &'static [&'static str],
    /// What it sets.
    pub doc: &'static str,
}

/// A value that did not parse for its key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct ConfigError {
    /// The key.
    pub key: String,
    /// Why the value was refused.
    pub reason: String,
}

/// Declares a config struct from its table. Each entry is
/// `/// doc` then `field: Type = default => "key" | "alias"...,`. Generates the struct,
/// `Default`, `KEYS`, `set(key, value)` and `entries()`.
#[macro_export]
macro_rules! config_struct {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $(
                #[doc = $doc:literal]
                $field:ident : $ty:ty = $default:expr => $key:literal $(| $alias:literal)*,
            )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone)]
        pub struct $name {
            $( #[doc = $doc] pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                $name { $( $field: $default, )* }
            }
        }

        impl $name {
            /// Every key of this table, in order.
            pub const KEYS: &'static [$crate::config::KeySpec] = &[$(
                $crate::config::KeySpec { key: $key, aliases: &[$($alias),*], doc: $doc },
            )*];

            /// Sets `key` (or one of its aliases) from its text; `Ok(false)` when `key` is not
            /// in this table.
            pub fn set(
                &mut self,
                key: &str,
                value: &str,
            ) -> ::core::result::Result<bool, $crate::config::ConfigError> {
                match key {
                    $(
                        $key $(| $alias)* => {
                            self.$field = $crate::config::ConfigValue::parse_value(value)
                                .map_err(|reason| $crate::config::ConfigError {
                                    key: key.to_owned(),
                                    reason,
                                })?;
                        }
                    )*
                    _ => return Ok(false),
                }
                Ok(true)
            }

            /// `(key, value)` of every key, in table order: the effective configuration.
            pub fn entries(&self) -> Vec<(&'static str, String)> {
                vec![$( ($key, $crate::config::ConfigValue::render(&self.$field)), )*]
            }
        }
    };
}

/// Parses Java properties text: `key=value`, `key: value` or `key value`; `#` and `!`
/// comments; a trailing `\` continues a line. Escapes other than `\\` are kept as written.
pub fn parse_properties(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut logical = String::new();
    for raw in text.lines() {
        let line = raw.trim_start();
        if logical.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with('!'))
        {
            continue;
        }
        if let Some(stripped) = line.strip_suffix('\\').filter(|s| !s.ends_with('\\')) {
            logical.push_str(stripped);
            continue;
        }
        logical.push_str(line);
        let entry = std::mem::take(&mut logical);
        let entry = entry.trim();
        let split = entry.find(|c: char| c == '=' || c == ':' || c.is_whitespace());
        let (key, value) = match split {
            Some(i) => {
                let rest = entry[i..].trim_start();
                let rest = rest
                    .strip_prefix('=')
                    .or_else(|| rest.strip_prefix(':'))
                    .unwrap_or(rest);
                (&entry[..i], rest.trim())
            }
            None => (entry, ""),
        };
        if !key.is_empty() {
            out.push((key.to_owned(), value.replace("\\\\", "\\")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    config_struct! {
        /// A test table.
        pub struct Sample {
            /// A name.
            name: String = "a".into() => "name",
            /// A size, under RocketMQ's misspelling too.
            size: usize = 4096 => "mappedSize" | "mapedSize",
            /// A switch.
            on: bool = true => "enable",
            /// An optional address.
            addr: Option<String> = None => "addr",
        }
    }

    #[test]
    fn table_sets_lists_and_prints() {
        let mut s = Sample::default();
        assert_eq!((s.name.as_str(), s.size, s.on), ("a", 4096, true));
        assert!(s.set("mapedSize", " 65536 ").unwrap());
        assert!(s.set("enable", "FALSE").unwrap());
        assert!(s.set("addr", "h:1").unwrap());
        assert!(!s.set("other", "x").unwrap());
        assert_eq!(s.size, 65536);
        assert!(!s.on);
        let err = s.set("enable", "yes").unwrap_err();
        assert_eq!(err.key, "enable");
        assert!(s.set("mappedSize", "big").is_err());
        assert!(s.set("addr", "").unwrap());
        assert_eq!(s.addr, None);
        assert_eq!(
            s.entries(),
            vec![
                ("name", "a".to_owned()),
                ("mappedSize", "65536".to_owned()),
                ("enable", "false".to_owned()),
                ("addr", String::new()),
            ]
        );
        assert_eq!(Sample::KEYS[1].aliases, &["mapedSize"]);
    }

    #[test]
    fn properties_syntax() {
        let text = "# comment\n! also\nbrokerName = broker-b\nlistenPort:10921\nnamesrvAddr 127.0.0.1:9876;\\\n  127.0.0.1:9877\nempty=\n";
        assert_eq!(
            parse_properties(text),
            vec![
                ("brokerName".into(), "broker-b".into()),
                ("listenPort".into(), "10921".into()),
                ("namesrvAddr".into(), "127.0.0.1:9876;127.0.0.1:9877".into()),
                ("empty".into(), "".into()),
            ]
        );
    }
}
