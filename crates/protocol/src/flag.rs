//! Bit fields of the protocol: topic permissions, PULL_MESSAGE's `sysFlag`, a message's
//! `sysFlag`. Compatibility surfaces: the bits must match Apache RocketMQ.

/// Topic and broker permission bits (`PermName`).
pub mod perm {
    /// The topic was created from a template and may be inherited (TBW102).
    pub const INHERIT: i32 = 1;
    /// Consumers may read.
    pub const READ: i32 = 1 << 2;
    /// Producers may write.
    pub const WRITE: i32 = 1 << 1;
    /// Read and write: the default of a topic.
    pub const READ_WRITE: i32 = READ | WRITE;
    /// (name, value) of every bit, for the Python binding.
    pub const ALL: &[(&str, i32)] = &[("INHERIT", INHERIT), ("READ", READ), ("WRITE", WRITE)];

    /// Whether `perm` allows reading.
    pub fn is_readable(perm: i32) -> bool {
        perm & READ != 0
    }

    /// Whether `perm` allows writing.
    pub fn is_writeable(perm: i32) -> bool {
        perm & WRITE != 0
    }

    /// Whether `perm` marks a template topic.
    pub fn is_inherited(perm: i32) -> bool {
        perm & INHERIT != 0
    }
}

/// Bits of PULL_MESSAGE's `sysFlag` (`PullSysFlag`).
pub mod pull {
    /// The request carries the consumer's offset to commit (`commitOffset`).
    pub const COMMIT_OFFSET: i32 = 0x1;
    /// Hold the request (long polling) when nothing is there yet.
    pub const SUSPEND: i32 = 0x2;
    /// The request carries its subscription expression (no registered consumer needed).
    pub const SUBSCRIPTION: i32 = 0x4;
    /// Class filter (not supported; RocketMQ removed it in 5.x).
    pub const CLASS_FILTER: i32 = 0x8;
    /// A lite pull consumer's request.
    pub const LITE_PULL: i32 = 0x10;
    /// (name, value) of every bit, for the Python binding.
    pub const ALL: &[(&str, i32)] = &[
        ("COMMIT_OFFSET", COMMIT_OFFSET),
        ("SUSPEND", SUSPEND),
        ("SUBSCRIPTION", SUBSCRIPTION),
        ("CLASS_FILTER", CLASS_FILTER),
        ("LITE_PULL", LITE_PULL),
    ];
}

/// Bits of a message's `sysFlag` (`MessageSysFlag`), stored in its CommitLog record.
pub mod message {
    /// The body is zlib-compressed.
    pub const COMPRESSED: i32 = 0x1;
    /// The TAGS property holds several tags.
    pub const MULTI_TAGS: i32 = 0x2;
    /// Not part of a transaction.
    pub const TRANSACTION_NOT_TYPE: i32 = 0;
    /// A half message of a transaction.
    pub const TRANSACTION_PREPARED_TYPE: i32 = 0x4;
    /// A committed transaction message.
    pub const TRANSACTION_COMMIT_TYPE: i32 = 0x8;
    /// A rolled-back transaction message.
    pub const TRANSACTION_ROLLBACK_TYPE: i32 = 0xC;
    /// The born host is IPv6 (its field is 20 bytes).
    pub const BORNHOST_V6: i32 = 0x10;
    /// The store host is IPv6 (its field is 20 bytes).
    pub const STOREHOST_V6: i32 = 0x20;
    /// (name, value) of every flag, for the Python binding.
    pub const ALL: &[(&str, i32)] = &[
        ("COMPRESSED", COMPRESSED),
        ("MULTI_TAGS", MULTI_TAGS),
        ("TRANSACTION_NOT_TYPE", TRANSACTION_NOT_TYPE),
        ("TRANSACTION_PREPARED_TYPE", TRANSACTION_PREPARED_TYPE),
        ("TRANSACTION_COMMIT_TYPE", TRANSACTION_COMMIT_TYPE),
        ("TRANSACTION_ROLLBACK_TYPE", TRANSACTION_ROLLBACK_TYPE),
        ("BORNHOST_V6", BORNHOST_V6),
        ("STOREHOST_V6", STOREHOST_V6),
    ];

    /// The transaction type bits of `flag`.
    pub fn transaction_type(flag: i32) -> i32 {
        flag & TRANSACTION_ROLLBACK_TYPE
    }
}
