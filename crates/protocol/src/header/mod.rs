//! Typed request and response headers ("custom headers" in RocketMQ): one struct per header,
//! declared once with its wire names, and read and written only through that declaration.
//!
//! A header travels as `extFields`, a map of strings. Each struct here knows its fields' wire
//! names (RocketMQ's Java field names, a compatibility surface), the single-letter alias some
//! have (SEND_MESSAGE_V2's `a`..`n`), which are required (`@CFNotNull`: a plain type) and
//! which may be absent (`Option`). Reading is as tolerant as the Java broker's
//! `decodeCommandCustomHeader`, and more where that costs nothing:
//! - a field is found under its name or its alias, whichever the sender used;
//! - booleans are never an error: "true" in any case is true (Java's `Boolean.parseBoolean`),
//!   and so is "1", which the C++ client writes for true; anything else is false. (Java reads
//!   "1" as false, so a C++ client's batch, sent as SEND_MESSAGE with `batch` "1", is stored by
//!   a Java broker as one message whose body is the encoded batch — rocketmq-client-cpp
//!   issues #363 and #447. rocketpy stores the messages the client meant.)
//! - numbers may carry surrounding blanks;
//! - fields a header does not declare are ignored.
//!
//! [`HeaderSpec`] describes a header as data: the Python binding builds requests and reads
//! responses from it (by snake_case attribute name), so Python holds no wire names of its own,
//! and [`exchange`] says which headers a request code uses.

mod admin;
mod consumer;
mod controller;
mod namesrv;
mod offset;
mod pop;
mod pull;
mod query;
mod send;
mod transaction;

pub use admin::*;
pub use consumer::*;
pub use controller::*;
pub use namesrv::*;
pub use offset::*;
pub use pop::*;
pub use pull::*;
pub use query::*;
pub use send::*;
pub use transaction::*;

use crate::code::request;
use crate::command::{ExtFields, RemotingCommand};
use crate::error::{ProtocolError, Result};

/// The type of a header field, as a caller must supply it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// Text.
    Str,
    /// A 32-bit integer.
    Int,
    /// A 64-bit integer.
    Long,
    /// A boolean, written "true"/"false".
    Bool,
}

/// One field of a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSpec {
    /// The Rust (and Python) attribute name, snake_case.
    pub attr: &'static str,
    /// The wire name (RocketMQ's Java field name).
    pub name: &'static str,
    /// A shorter wire name some request codes use instead (see [`HeaderSpec::alias_codes`]).
    pub alias: Option<&'static str>,
    /// Its type.
    pub kind: FieldKind,
    /// Whether a header without it is invalid.
    pub required: bool,
}

/// A header as data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderSpec {
    /// RocketMQ's class name.
    pub name: &'static str,
    /// Request codes whose headers are written with the aliases.
    pub alias_codes: &'static [i32],
    /// The fields, in declaration order.
    pub fields: &'static [FieldSpec],
}

/// A field value given or read by attribute (the binding's currency).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// For [`FieldKind::Str`].
    Str(String),
    /// For [`FieldKind::Int`] and [`FieldKind::Long`].
    Int(i64),
    /// For [`FieldKind::Bool`].
    Bool(bool),
}

impl FieldSpec {
    /// The wire name under which a header for request `code` carries this field.
    pub fn wire_name(&self, spec: &HeaderSpec, code: i32) -> &'static str {
        match self.alias {
            Some(alias) if spec.alias_codes.contains(&code) => alias,
            _ => self.name,
        }
    }

    /// The raw value in `fields`, under the name or the alias.
    pub fn raw<'a>(&self, fields: &'a ExtFields) -> Option<&'a str> {
        fields
            .get(self.name)
            .or_else(|| self.alias.and_then(|a| fields.get(a)))
            .map(String::as_str)
    }

    /// Parses this field out of `fields`: `None` when absent.
    pub fn read(&self, fields: &ExtFields) -> Result<Option<Value>> {
        let Some(raw) = self.raw(fields) else {
            return Ok(None);
        };
        Ok(Some(match self.kind {
            FieldKind::Str => Value::Str(raw.to_owned()),
            FieldKind::Int => Value::Int(i32::parse_field(self.name, raw)?.into()),
            FieldKind::Long => Value::Int(i64::parse_field(self.name, raw)?),
            FieldKind::Bool => Value::Bool(bool::parse_field(self.name, raw)?),
        }))
    }

    /// The text of `value` for this field, or why it does not fit.
    pub fn format(&self, value: &Value) -> std::result::Result<String, String> {
        match (self.kind, value) {
            (FieldKind::Str, Value::Str(s)) => Ok(s.clone()),
            (FieldKind::Int, Value::Int(i)) => i32::try_from(*i)
                .map(|i| i.to_string())
                .map_err(|_| format!("{} does not fit a 32-bit integer", i)),
            (FieldKind::Long, Value::Int(i)) => Ok(i.to_string()),
            (FieldKind::Bool, Value::Bool(b)) => Ok(b.to_string()),
            (kind, value) => Err(format!("expected {kind:?}, got {value:?}")),
        }
    }
}

impl HeaderSpec {
    /// The field with attribute name `attr`.
    pub fn field(&self, attr: &str) -> Option<&'static FieldSpec> {
        self.fields.iter().find(|f| f.attr == attr)
    }

    /// Builds the extFields of a request with code `code` from values given by attribute
    /// name; unknown attributes, mistyped values and missing required fields are errors.
    pub fn encode_values<'a>(
        &self,
        code: i32,
        values: impl IntoIterator<Item = (&'a str, Value)>,
    ) -> std::result::Result<ExtFields, String> {
        let mut out = ExtFields::with_capacity(self.fields.len());
        for (attr, value) in values {
            let field = self
                .field(attr)
                .ok_or_else(|| format!("{} has no field {attr:?}", self.name))?;
            let text = field
                .format(&value)
                .map_err(|e| format!("{}.{attr}: {e}", self.name))?;
            out.insert(field.wire_name(self, code).to_owned(), text);
        }
        if let Some(missing) = self
            .fields
            .iter()
            .find(|f| f.required && !out.contains_key(f.wire_name(self, code)))
        {
            return Err(format!("{} needs field {:?}", self.name, missing.attr));
        }
        Ok(out)
    }
}

/// A value type a header field can have; `Option<T>` marks a field that may be absent.
pub trait HeaderValue: Sized {
    /// The field type.
    const KIND: FieldKind;
    /// Whether the field must be present.
    const REQUIRED: bool;
    /// Reads the field `name` from its raw text (`None`: absent).
    fn read(name: &'static str, raw: Option<&str>) -> Result<Self>;
    /// The text to send (`None`: leave the field out).
    fn write(&self) -> Option<String>;
}

/// The scalar types of header fields.
pub trait Scalar: Sized {
    /// The field type.
    const KIND: FieldKind;
    /// Parses the raw text of field `name`.
    fn parse_field(name: &'static str, raw: &str) -> Result<Self>;
    /// The wire text.
    fn to_text(&self) -> String;
}

impl Scalar for String {
    const KIND: FieldKind = FieldKind::Str;
    fn parse_field(_: &'static str, raw: &str) -> Result<Self> {
        Ok(raw.to_owned())
    }
    fn to_text(&self) -> String {
        self.clone()
    }
}

macro_rules! integer_scalar {
    ($t:ty, $kind:expr) => {
        impl Scalar for $t {
            const KIND: FieldKind = $kind;
            fn parse_field(name: &'static str, raw: &str) -> Result<Self> {
                raw.trim().parse().map_err(|_| ProtocolError::InvalidField {
                    field: name,
                    value: raw.to_owned(),
                })
            }
            fn to_text(&self) -> String {
                self.to_string()
            }
        }
    };
}

integer_scalar!(i32, FieldKind::Int);
integer_scalar!(i64, FieldKind::Long);

impl Scalar for bool {
    const KIND: FieldKind = FieldKind::Bool;
    /// Never an error (see the module documentation).
    fn parse_field(_: &'static str, raw: &str) -> Result<Self> {
        Ok(parse_bool(raw))
    }
    fn to_text(&self) -> String {
        self.to_string()
    }
}

impl<T: Scalar> HeaderValue for T {
    const KIND: FieldKind = T::KIND;
    const REQUIRED: bool = true;
    fn read(name: &'static str, raw: Option<&str>) -> Result<Self> {
        T::parse_field(name, raw.ok_or(ProtocolError::MissingField(name))?)
    }
    fn write(&self) -> Option<String> {
        Some(self.to_text())
    }
}

impl<T: Scalar> HeaderValue for Option<T> {
    const KIND: FieldKind = T::KIND;
    const REQUIRED: bool = false;
    fn read(name: &'static str, raw: Option<&str>) -> Result<Self> {
        raw.map(|r| T::parse_field(name, r)).transpose()
    }
    fn write(&self) -> Option<String> {
        self.as_ref().map(Scalar::to_text)
    }
}

/// A header boolean: "true" (any case) or "1" is true, anything else false.
pub fn parse_bool(raw: &str) -> bool {
    let t = raw.trim();
    t.eq_ignore_ascii_case("true") || t == "1"
}

/// A typed header.
pub trait CustomHeader: Sized {
    /// The header as data.
    const SPEC: HeaderSpec;
    /// Reads the header from a command's fields.
    fn from_fields(fields: &ExtFields) -> Result<Self>;
    /// Writes the header into `fields`, with aliases when `alias` is set.
    fn write_fields(&self, fields: &mut ExtFields, alias: bool);
}

impl RemotingCommand {
    /// This command's header, read as `H`.
    pub fn decode_header<H: CustomHeader>(&self) -> Result<H> {
        H::from_fields(&self.ext_fields)
    }

    /// Builder: writes `header` into the command's fields (with the aliases when the command's
    /// code is one of `H`'s alias codes).
    pub fn with_header<H: CustomHeader>(mut self, header: &H) -> Self {
        let alias = H::SPEC.alias_codes.contains(&self.code);
        header.write_fields(&mut self.ext_fields, alias);
        self
    }
}

/// Declares a header struct, its [`HeaderSpec`] and its codec. Each field is
/// `name: Type = "wireName"` or `name: Type = "wireName" | "alias"`.
macro_rules! header {
    (
        $(#[$meta:meta])*
        pub struct $name:ident $(aliased for [$($code:expr),* $(,)?])? {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $wire:literal $(| $alias:literal)? ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $crate::header::CustomHeader for $name {
            const SPEC: $crate::header::HeaderSpec = $crate::header::HeaderSpec {
                name: stringify!($name),
                alias_codes: &[$($($code),*)?],
                fields: &[$(
                    $crate::header::FieldSpec {
                        attr: stringify!($field),
                        name: $wire,
                        alias: header!(@alias $($alias)?),
                        kind: <$ty as $crate::header::HeaderValue>::KIND,
                        required: <$ty as $crate::header::HeaderValue>::REQUIRED,
                    },
                )*],
            };

            fn from_fields(fields: &$crate::command::ExtFields) -> $crate::error::Result<Self> {
                #[allow(unused_variables)]
                let raw = |name: &str, alias: Option<&str>| {
                    fields
                        .get(name)
                        .or_else(|| alias.and_then(|a| fields.get(a)))
                        .map(String::as_str)
                };
                Ok($name {
                    $( $field: <$ty as $crate::header::HeaderValue>::read(
                        $wire,
                        raw($wire, header!(@alias $($alias)?)),
                    )?, )*
                })
            }

            #[allow(unused_variables)]
            fn write_fields(&self, fields: &mut $crate::command::ExtFields, alias: bool) {
                $(
                    if let Some(text) = $crate::header::HeaderValue::write(&self.$field) {
                        let name = match (alias, header!(@alias $($alias)?)) {
                            (true, Some(a)) => a,
                            _ => $wire,
                        };
                        fields.insert(name.to_owned(), text);
                    }
                )*
            }
        }
    };
    (@alias) => { None };
    (@alias $alias:literal) => { Some($alias) };
}
pub(crate) use header;

/// The headers of one request code: what its request and its response carry.
#[derive(Debug, Clone, Copy)]
pub struct Exchange {
    /// The request code.
    pub code: i32,
    /// The request's header, if it has one.
    pub request: Option<&'static HeaderSpec>,
    /// The (successful) response's header, if it has one.
    pub response: Option<&'static HeaderSpec>,
}

macro_rules! exchanges {
    ($($code:ident $(in $module:ident)? => $req:tt, $resp:tt;)*) => {
        /// Every request code with the headers it uses.
        pub const EXCHANGES: &[Exchange] = &[$(Exchange {
            code: exchanges!(@code $($module)? $code),
            request: exchanges!(@spec $req),
            response: exchanges!(@spec $resp),
        },)*];
    };
    (@code $code:ident) => { request::$code };
    (@code $module:ident $code:ident) => { crate::code::$module::request::$code };
    (@spec _) => { None };
    (@spec $h:ident) => { Some(&<$h as CustomHeader>::SPEC) };
}

exchanges! {
    SEND_MESSAGE => SendMessageRequestHeader, SendMessageResponseHeader;
    SEND_MESSAGE_V2 => SendMessageRequestHeader, SendMessageResponseHeader;
    SEND_BATCH_MESSAGE => SendMessageRequestHeader, SendMessageResponseHeader;
    PULL_MESSAGE => PullMessageRequestHeader, PullMessageResponseHeader;
    LITE_PULL_MESSAGE => PullMessageRequestHeader, PullMessageResponseHeader;
    QUERY_MESSAGE => QueryMessageRequestHeader, QueryMessageResponseHeader;
    VIEW_MESSAGE_BY_ID => ViewMessageRequestHeader, _;
    QUERY_CONSUMER_OFFSET => QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader;
    UPDATE_CONSUMER_OFFSET => UpdateConsumerOffsetRequestHeader, _;
    GET_MAX_OFFSET => GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader;
    GET_MIN_OFFSET => GetMinOffsetRequestHeader, GetMinOffsetResponseHeader;
    SEARCH_OFFSET_BY_TIMESTAMP => SearchOffsetRequestHeader, SearchOffsetResponseHeader;
    GET_EARLIEST_MSG_STORETIME => GetEarliestMsgStoretimeRequestHeader, GetEarliestMsgStoretimeResponseHeader;
    HEART_BEAT => _, _;
    UNREGISTER_CLIENT => UnregisterClientRequestHeader, _;
    CONSUMER_SEND_MSG_BACK => ConsumerSendMsgBackRequestHeader, _;
    END_TRANSACTION => EndTransactionRequestHeader, _;
    CHECK_TRANSACTION_STATE => CheckTransactionStateRequestHeader, _;
    GET_CONSUMER_LIST_BY_GROUP => GetConsumerListByGroupRequestHeader, _;
    NOTIFY_CONSUMER_IDS_CHANGED => NotifyConsumerIdsChangedRequestHeader, _;
    LOCK_BATCH_MQ => _, _;
    UNLOCK_BATCH_MQ => _, _;
    UPDATE_AND_CREATE_TOPIC => CreateTopicRequestHeader, _;
    GET_ALL_TOPIC_CONFIG => _, _;
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => _, _;
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG => _, _;
    GET_ALL_CONSUMER_OFFSET => _, _;
    GET_ALL_DELAY_OFFSET => _, _;
    REGISTER_BROKER => RegisterBrokerRequestHeader, RegisterBrokerResponseHeader;
    UNREGISTER_BROKER => UnRegisterBrokerRequestHeader, _;
    GET_ROUTEINFO_BY_TOPIC => GetRouteInfoRequestHeader, _;
    QUERY_DATA_VERSION => QueryDataVersionRequestHeader, QueryDataVersionResponseHeader;
    GET_BROKER_CLUSTER_INFO => _, _;
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER => _, _;
    UPDATE_BROKER_CONFIG => _, _;
    GET_BROKER_CONFIG => _, GetBrokerConfigResponseHeader;
    GET_BROKER_RUNTIME_INFO => _, _;
    GET_TOPIC_STATS_INFO => GetTopicStatsInfoRequestHeader, _;
    GET_CONSUMER_CONNECTION_LIST => GetConsumerConnectionListRequestHeader, _;
    GET_PRODUCER_CONNECTION_LIST => GetProducerConnectionListRequestHeader, _;
    WIPE_WRITE_PERM_OF_BROKER => BrokerNameRequestHeader, WipeWritePermOfBrokerResponseHeader;
    ADD_WRITE_PERM_OF_BROKER => BrokerNameRequestHeader, AddWritePermOfBrokerResponseHeader;
    DELETE_SUBSCRIPTIONGROUP => DeleteSubscriptionGroupRequestHeader, _;
    GET_CONSUME_STATS => GetConsumeStatsRequestHeader, _;
    DELETE_TOPIC_IN_BROKER => DeleteTopicRequestHeader, _;
    DELETE_TOPIC_IN_NAMESRV => DeleteTopicFromNamesrvRequestHeader, _;
    RESET_CONSUMER_CLIENT_OFFSET => ResetOffsetRequestHeader, _;
    INVOKE_BROKER_TO_RESET_OFFSET => ResetOffsetRequestHeader, _;
    GET_TOPICS_BY_CLUSTER => GetTopicsByClusterRequestHeader, _;
    QUERY_TOPIC_CONSUME_BY_WHO => QueryTopicConsumeByWhoRequestHeader, _;
    VIEW_BROKER_STATS_DATA => ViewBrokerStatsDataRequestHeader, _;
    QUERY_CONSUME_QUEUE => QueryConsumeQueueRequestHeader, _;
    GET_SUBSCRIPTIONGROUP_CONFIG => GetSubscriptionGroupConfigRequestHeader, _;
    POP_MESSAGE => PopMessageRequestHeader, PopMessageResponseHeader;
    ACK_MESSAGE => AckMessageRequestHeader, _;
    CHANGE_MESSAGE_INVISIBLETIME => ChangeInvisibleTimeRequestHeader, ChangeInvisibleTimeResponseHeader;
    CONTROLLER_ELECT_MASTER in controller => ElectMasterRequestHeader, _;
    CLEAN_BROKER_DATA in controller => CleanControllerBrokerDataRequestHeader, _;
}

/// The headers of request `code`, if it is a known code.
pub fn exchange(code: i32) -> Option<&'static Exchange> {
    EXCHANGES.iter().find(|e| e.code == code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_names_v2_aliases_and_parse_boolean() {
        let h = SendMessageRequestHeader {
            producer_group: "pg".into(),
            topic: "T".into(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id: 1,
            born_timestamp: 123,
            reconsume_times: Some(2),
            batch: Some(false),
            ..Default::default()
        };
        let v2 = RemotingCommand::request(request::SEND_MESSAGE_V2).with_header(&h);
        assert_eq!(v2.field("b").unwrap(), "T");
        assert!(v2.field_opt("topic").is_none());
        assert!(
            v2.field_opt("i").is_none(),
            "absent optional fields are not sent"
        );
        let v1 = RemotingCommand::request(request::SEND_MESSAGE).with_header(&h);
        assert_eq!(v1.field("topic").unwrap(), "T");
        assert_eq!(v2.decode_header::<SendMessageRequestHeader>().unwrap(), h);
        assert_eq!(v1.decode_header::<SendMessageRequestHeader>().unwrap(), h);

        // The C++ client writes booleans as 0/1; anything unexpected is false, not an error.
        let mut cpp = v2.clone();
        cpp.set_field("m", "1");
        cpp.set_field("e", " 3 ");
        let read = cpp.decode_header::<SendMessageRequestHeader>().unwrap();
        assert_eq!((read.batch, read.queue_id), (Some(true), 3));
        for (raw, want) in [("0", false), ("TRUE", true), ("yes", false), ("", false)] {
            cpp.set_field("m", raw);
            let h = cpp.decode_header::<SendMessageRequestHeader>().unwrap();
            assert_eq!(h.batch, Some(want), "{raw:?}");
        }

        let mut missing = v2.clone();
        missing.ext_fields.remove("b");
        let err = missing
            .decode_header::<SendMessageRequestHeader>()
            .unwrap_err();
        assert!(err.to_string().contains("topic"), "{err}");
        let mut bad = v2;
        bad.set_field("e", "x");
        let err = bad.decode_header::<SendMessageRequestHeader>().unwrap_err();
        assert!(err.to_string().contains("queueId"), "{err}");
    }

    #[test]
    fn specs_drive_encoding_by_attribute() {
        let spec = exchange(request::SEND_MESSAGE_V2).unwrap().request.unwrap();
        let values = [
            ("producer_group", Value::Str("pg".into())),
            ("topic", Value::Str("T".into())),
            ("default_topic", Value::Str("TBW102".into())),
            ("default_topic_queue_nums", Value::Int(4)),
            ("queue_id", Value::Int(0)),
            ("sys_flag", Value::Int(0)),
            ("born_timestamp", Value::Int(1)),
            ("flag", Value::Int(0)),
            ("batch", Value::Bool(true)),
        ];
        let fields = spec
            .encode_values(request::SEND_MESSAGE_V2, values.clone())
            .unwrap();
        assert_eq!(fields["a"], "pg");
        assert_eq!(fields["m"], "true");
        let v1 = spec
            .encode_values(request::SEND_MESSAGE, values.clone())
            .unwrap();
        assert_eq!(v1["producerGroup"], "pg");
        assert!(spec
            .encode_values(request::SEND_MESSAGE, [("nope", Value::Int(1))])
            .unwrap_err()
            .contains("nope"));
        assert!(spec
            .encode_values(request::SEND_MESSAGE, values[1..].to_vec())
            .unwrap_err()
            .contains("producer_group"));
        assert!(spec
            .encode_values(
                request::SEND_MESSAGE,
                [("queue_id", Value::Str("1".into()))]
            )
            .is_err());
        let field = spec.field("queue_id").unwrap();
        assert_eq!(field.read(&fields).unwrap(), Some(Value::Int(0)));
    }

    #[test]
    fn every_exchange_has_distinct_wire_names() {
        for e in EXCHANGES {
            for spec in [e.request, e.response].into_iter().flatten() {
                let mut names: Vec<&str> = spec
                    .fields
                    .iter()
                    .flat_map(|f| std::iter::once(f.name).chain(f.alias))
                    .collect();
                let n = names.len();
                names.sort_unstable();
                names.dedup();
                assert_eq!(names.len(), n, "{} repeats a wire name", spec.name);
            }
        }
        let mut codes: Vec<i32> = EXCHANGES.iter().map(|e| e.code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), EXCHANGES.len());
    }
}
