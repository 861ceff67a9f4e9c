//! Request, response and language codes of the RocketMQ 4.x remoting protocol.
//!
//! The numbers are a compatibility surface: they must match Apache RocketMQ exactly. Python's
//! copy (`python/rocketpy/protocol.py`) is checked against [`request::ALL`] and
//! [`response::ALL`] by `tests/test_protocol_tables.py`. RocketMQ's names of every code (also
//! those rocketpy does not serve), as metric labels write them, are in [`crate::code_names`].

/// Declares a module of `i32` codes and `ALL`, their (name, value) table (which the Python
/// binding exports so Python's copy of the numbers can be checked against this one).
macro_rules! codes {
    ($(#[$meta:meta])* $module:ident { $($(#[$doc:meta])* $name:ident = $value:expr,)* }) => {
        $(#[$meta])*
        pub mod $module {
            $($(#[$doc])* pub const $name: i32 = $value;)*
            /// Every code of this module as (name, value).
            pub const ALL: &[(&str, i32)] = &[$((stringify!($name), $value),)*];
        }
    };
}

codes! {
    /// Request codes (`RequestCode` in RocketMQ).
    request {
        SEND_MESSAGE = 10,
        PULL_MESSAGE = 11,
        QUERY_MESSAGE = 12,
        QUERY_CONSUMER_OFFSET = 14,
        UPDATE_CONSUMER_OFFSET = 15,
        UPDATE_AND_CREATE_TOPIC = 17,
        GET_ALL_TOPIC_CONFIG = 21,
        /// Changes broker config keys (body: properties text).
        UPDATE_BROKER_CONFIG = 25,
        /// The broker's effective config (body: properties text).
        GET_BROKER_CONFIG = 26,
        /// The broker's runtime figures (`KVTable`): mqadmin's brokerStatus and clusterList.
        GET_BROKER_RUNTIME_INFO = 28,
        SEARCH_OFFSET_BY_TIMESTAMP = 29,
        GET_MAX_OFFSET = 30,
        GET_MIN_OFFSET = 31,
        GET_EARLIEST_MSG_STORETIME = 32,
        VIEW_MESSAGE_BY_ID = 33,
        HEART_BEAT = 34,
        UNREGISTER_CLIENT = 35,
        CONSUMER_SEND_MSG_BACK = 36,
        END_TRANSACTION = 37,
        GET_CONSUMER_LIST_BY_GROUP = 38,
        CHECK_TRANSACTION_STATE = 39,
        NOTIFY_CONSUMER_IDS_CHANGED = 40,
        LOCK_BATCH_MQ = 41,
        UNLOCK_BATCH_MQ = 42,
        /// A consumer asks whether the broker can serve its subscription (SQL92 filters).
        CHECK_CLIENT_CONFIG = 46,
        /// A slave's metadata sync: every committed consumer offset (`consumerOffset.json`).
        GET_ALL_CONSUMER_OFFSET = 43,
        /// A slave's metadata sync: the delay levels' progress (`delayOffset.json`).
        GET_ALL_DELAY_OFFSET = 45,
        REGISTER_BROKER = 103,
        UNREGISTER_BROKER = 104,
        GET_ROUTEINFO_BY_TOPIC = 105,
        GET_BROKER_CLUSTER_INFO = 106,
        UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200,
        GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201,
        GET_TOPIC_STATS_INFO = 202,
        GET_CONSUMER_CONNECTION_LIST = 203,
        GET_PRODUCER_CONNECTION_LIST = 204,
        WIPE_WRITE_PERM_OF_BROKER = 205,
        GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206,
        DELETE_SUBSCRIPTIONGROUP = 207,
        GET_CONSUME_STATS = 208,
        DELETE_TOPIC_IN_BROKER = 215,
        DELETE_TOPIC_IN_NAMESRV = 216,
        /// A broker tells each consumer of a group to move to the offsets in the body.
        RESET_CONSUMER_CLIENT_OFFSET = 220,
        /// An admin asks a broker to reset a group's offsets to a time.
        INVOKE_BROKER_TO_RESET_OFFSET = 222,
        GET_TOPICS_BY_CLUSTER = 224,
        /// The groups that consume a topic (`GroupList`).
        QUERY_TOPIC_CONSUME_BY_WHO = 300,
        SEND_MESSAGE_V2 = 310,
        /// Minute, hour and day figures of one statistic (`BrokerStatsData`).
        VIEW_BROKER_STATS_DATA = 315,
        SEND_BATCH_MESSAGE = 320,
        /// Units of one consume queue (`QueryConsumeQueueResponseBody`): mqadmin's queryCq.
        QUERY_CONSUME_QUEUE = 321,
        /// A broker asks a name server whether its topic table's data version is news
        /// (`forceRegister=false` brokers register only when it is).
        QUERY_DATA_VERSION = 322,
        ADD_WRITE_PERM_OF_BROKER = 327,
        /// 5.x: one topic's config with its attributes (the proxy reads `message.type`).
        GET_TOPIC_CONFIG = 351,
        /// 5.x: one subscription group's settings (the proxy reads `consumeMessageOrderly`).
        GET_SUBSCRIPTIONGROUP_CONFIG = 352,
        /// 5.x: a lite pull consumer's PULL_MESSAGE (same header and answer).
        LITE_PULL_MESSAGE = 361,
        /// 5.x pop consumption: messages become invisible to the group until acked.
        POP_MESSAGE = 200050,
        /// 5.x: a popped message is done.
        ACK_MESSAGE = 200051,
        /// 5.x: many popped messages are done (`BatchAckMessageRequestBody`).
        BATCH_ACK_MESSAGE = 200151,
        /// 5.x: a popped message stays invisible for longer (or shorter).
        CHANGE_MESSAGE_INVISIBLETIME = 200053,
    }
}

codes! {
    /// Response codes (`ResponseCode` / `RemotingSysResponseCode` in RocketMQ).
    response {
        SUCCESS = 0,
        SYSTEM_ERROR = 1,
        SYSTEM_BUSY = 2,
        REQUEST_CODE_NOT_SUPPORTED = 3,
        FLUSH_DISK_TIMEOUT = 10,
        SLAVE_NOT_AVAILABLE = 11,
        FLUSH_SLAVE_TIMEOUT = 12,
        MESSAGE_ILLEGAL = 13,
        SERVICE_NOT_AVAILABLE = 14,
        NO_PERMISSION = 16,
        TOPIC_NOT_EXIST = 17,
        PULL_NOT_FOUND = 19,
        PULL_RETRY_IMMEDIATELY = 20,
        PULL_OFFSET_MOVED = 21,
        QUERY_NOT_FOUND = 22,
        /// A consumer's subscription cannot be parsed (or uses a filter rocketpy lacks).
        SUBSCRIPTION_PARSE_FAILED = 23,
        SUBSCRIPTION_NOT_EXIST = 24,
        SUBSCRIPTION_GROUP_NOT_EXIST = 26,
        /// A pull names an SQL92 subscription the broker holds no compiled filter of.
        FILTER_DATA_NOT_EXIST = 27,
        /// The broker's filter of a subscription is older than the pull's version.
        FILTER_DATA_NOT_LATEST = 28,
        INVALID_PARAMETER = 29,
        /// 5.x: an ack or invisible-time change for an offset the queue does not hold.
        NO_MESSAGE = 208,
        /// 5.x: too many pops are waiting already.
        POLLING_FULL = 209,
        /// 5.x: a pop waited its poll time and found nothing.
        POLLING_TIMEOUT = 210,
        /// The group has no live member to reset (INVOKE_BROKER_TO_RESET_OFFSET).
        CONSUMER_NOT_ONLINE = 206,
    }
}

/// Codes of RocketMQ 5.x's controller mode (`RequestCode` / `ResponseCode`, issue 43), used by
/// `rocketpy-controller`. They stay out of [`request`] and [`response`] on purpose: those tables
/// list the codes rocketpy serves, and Python's copy must equal them; a code moves there when a
/// server answers it on the wire. The values must match RocketMQ's (their names are in
/// [`crate::code_names`]).
pub mod controller {
    codes! {
        /// Request codes of the controller and of the brokers in controller mode.
        request {
            /// A broker's heartbeat to every controller (liveness, epoch, offsets, priority).
            BROKER_HEARTBEAT = 904,
            CONTROLLER_ALTER_SYNC_STATE_SET = 1001,
            CONTROLLER_ELECT_MASTER = 1002,
            CONTROLLER_REGISTER_BROKER = 1003,
            CONTROLLER_GET_REPLICA_INFO = 1004,
            CONTROLLER_GET_METADATA_INFO = 1005,
            CONTROLLER_GET_SYNC_STATE_DATA = 1006,
            /// Asked of a broker, not of a controller.
            GET_BROKER_EPOCH_CACHE = 1007,
            /// Controller → broker, oneway.
            NOTIFY_BROKER_ROLE_CHANGED = 1008,
            UPDATE_CONTROLLER_CONFIG = 1009,
            GET_CONTROLLER_CONFIG = 1010,
            CLEAN_BROKER_DATA = 1011,
            CONTROLLER_GET_NEXT_BROKER_ID = 1012,
            CONTROLLER_APPLY_BROKER_ID = 1013,
        }
    }

    /// rocketpy's own code on a controller's port: one openraft RPC (its JSON as the body)
    /// from a peer controller, answered with the peer's reply. RocketMQ's controllers speak
    /// DLedger's protocol to each other, which nothing outside the group sees; rocketpy's
    /// controllers only talk to rocketpy controllers. Not a RocketMQ code: the value sits far
    /// from RocketMQ's ranges so that it never collides with one of theirs.
    pub const RAFT_RPC: i32 = 61_001;

    codes! {
        /// Response codes of the controller (2015 and 2016 are jRaft mode's own).
        response {
            CONTROLLER_FENCED_MASTER_EPOCH = 2000,
            CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH = 2001,
            CONTROLLER_INVALID_MASTER = 2002,
            CONTROLLER_INVALID_REPLICAS = 2003,
            CONTROLLER_MASTER_NOT_AVAILABLE = 2004,
            CONTROLLER_INVALID_REQUEST = 2005,
            CONTROLLER_BROKER_NOT_ALIVE = 2006,
            CONTROLLER_NOT_LEADER = 2007,
            CONTROLLER_BROKER_METADATA_NOT_EXIST = 2008,
            CONTROLLER_INVALID_CLEAN_BROKER_METADATA = 2009,
            CONTROLLER_BROKER_NEED_TO_BE_REGISTERED = 2010,
            CONTROLLER_MASTER_STILL_EXIST = 2011,
            CONTROLLER_ELECT_MASTER_FAILED = 2012,
            CONTROLLER_ALTER_SYNC_STATE_SET_FAILED = 2013,
            CONTROLLER_BROKER_ID_INVALID = 2014,
            CONTROLLER_JRAFT_INTERNAL_ERROR = 2015,
            CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS = 2016,
        }
    }
}

/// `LanguageCode` as carried in headers: a name in JSON headers, a byte in ROCKETMQ headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LanguageCode {
    Java,
    Cpp,
    Dotnet,
    Python,
    Delphi,
    Erlang,
    Ruby,
    Other,
    Http,
    Go,
    Php,
    Oms,
    Rust,
}

const LANGUAGES: [(LanguageCode, &str); 13] = [
    (LanguageCode::Java, "JAVA"),
    (LanguageCode::Cpp, "CPP"),
    (LanguageCode::Dotnet, "DOTNET"),
    (LanguageCode::Python, "PYTHON"),
    (LanguageCode::Delphi, "DELPHI"),
    (LanguageCode::Erlang, "ERLANG"),
    (LanguageCode::Ruby, "RUBY"),
    (LanguageCode::Other, "OTHER"),
    (LanguageCode::Http, "HTTP"),
    (LanguageCode::Go, "GO"),
    (LanguageCode::Php, "PHP"),
    (LanguageCode::Oms, "OMS"),
    (LanguageCode::Rust, "RUST"),
];

impl LanguageCode {
    /// The byte used by the ROCKETMQ binary header (its position in RocketMQ's enum).
    pub fn code(self) -> u8 {
        LANGUAGES.iter().position(|(l, _)| *l == self).unwrap_or(7) as u8
    }

    /// Inverse of [`LanguageCode::code`]; unknown bytes become `OTHER` (any client is accepted).
    pub fn from_code(code: u8) -> Self {
        LANGUAGES
            .get(code as usize)
            .map(|(l, _)| *l)
            .unwrap_or(LanguageCode::Other)
    }

    /// The name used by JSON headers.
    pub fn name(self) -> &'static str {
        LANGUAGES
            .iter()
            .find(|(l, _)| *l == self)
            .map(|(_, n)| *n)
            .unwrap_or("OTHER")
    }

    /// Inverse of [`LanguageCode::name`]; unknown names become `OTHER`.
    pub fn from_name(name: &str) -> Self {
        LANGUAGES
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(l, _)| *l)
            .unwrap_or(LanguageCode::Other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_codes_match_rocketmq() {
        assert_eq!(LanguageCode::Java.code(), 0);
        assert_eq!(LanguageCode::Python.code(), 3);
        assert_eq!(LanguageCode::Go.code(), 9);
        assert_eq!(LanguageCode::Rust.code(), 12);
        assert_eq!(LanguageCode::from_code(200), LanguageCode::Other);
        assert_eq!(LanguageCode::from_name("GO"), LanguageCode::Go);
    }
}
