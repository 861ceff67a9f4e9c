"""Codes, flags and names of the RocketMQ 4.x protocol, typed for Python.

The numbers are a compatibility surface: they must match Apache RocketMQ. Their one source is
``crates/protocol`` (``code.rs``, ``flag.rs``); ``tests/unit/test_protocol_tables.py`` checks every
class here against the native tables (``_native.REQUEST_CODES`` and the others), both ways, and
the controller-mode codes (which the native module does not export) against ``code.rs`` itself.
Header field names are not here at all: requests are built by attribute name through the native
header specs (``RemotingClient.invoke(addr, code, {"queue_id": 3, ...})``) and responses read
as ``response.header.queue_offset``."""

from __future__ import annotations

from typing import Final


class RequestCode:
    """Request codes."""

    SEND_MESSAGE: Final = 10
    PULL_MESSAGE: Final = 11
    QUERY_MESSAGE: Final = 12
    QUERY_CONSUMER_OFFSET: Final = 14
    UPDATE_CONSUMER_OFFSET: Final = 15
    UPDATE_AND_CREATE_TOPIC: Final = 17
    GET_ALL_TOPIC_CONFIG: Final = 21
    UPDATE_BROKER_CONFIG: Final = 25
    GET_BROKER_CONFIG: Final = 26
    GET_BROKER_RUNTIME_INFO: Final = 28
    SEARCH_OFFSET_BY_TIMESTAMP: Final = 29
    GET_MAX_OFFSET: Final = 30
    GET_MIN_OFFSET: Final = 31
    GET_EARLIEST_MSG_STORETIME: Final = 32
    VIEW_MESSAGE_BY_ID: Final = 33
    HEART_BEAT: Final = 34
    UNREGISTER_CLIENT: Final = 35
    CONSUMER_SEND_MSG_BACK: Final = 36
    END_TRANSACTION: Final = 37
    GET_CONSUMER_LIST_BY_GROUP: Final = 38
    CHECK_TRANSACTION_STATE: Final = 39
    NOTIFY_CONSUMER_IDS_CHANGED: Final = 40
    LOCK_BATCH_MQ: Final = 41
    UNLOCK_BATCH_MQ: Final = 42
    CHECK_CLIENT_CONFIG: Final = 46
    GET_ALL_CONSUMER_OFFSET: Final = 43
    GET_ALL_DELAY_OFFSET: Final = 45
    REGISTER_BROKER: Final = 103
    UNREGISTER_BROKER: Final = 104
    GET_ROUTEINFO_BY_TOPIC: Final = 105
    GET_BROKER_CLUSTER_INFO: Final = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: Final = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG: Final = 201
    GET_TOPIC_STATS_INFO: Final = 202
    GET_CONSUMER_CONNECTION_LIST: Final = 203
    GET_PRODUCER_CONNECTION_LIST: Final = 204
    WIPE_WRITE_PERM_OF_BROKER: Final = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER: Final = 206
    DELETE_SUBSCRIPTIONGROUP: Final = 207
    GET_CONSUME_STATS: Final = 208
    DELETE_TOPIC_IN_BROKER: Final = 215
    DELETE_TOPIC_IN_NAMESRV: Final = 216
    RESET_CONSUMER_CLIENT_OFFSET: Final = 220
    INVOKE_BROKER_TO_RESET_OFFSET: Final = 222
    GET_TOPICS_BY_CLUSTER: Final = 224
    QUERY_TOPIC_CONSUME_BY_WHO: Final = 300
    SEND_MESSAGE_V2: Final = 310
    VIEW_BROKER_STATS_DATA: Final = 315
    SEND_BATCH_MESSAGE: Final = 320
    QUERY_CONSUME_QUEUE: Final = 321
    QUERY_DATA_VERSION: Final = 322
    ADD_WRITE_PERM_OF_BROKER: Final = 327
    GET_TOPIC_CONFIG: Final = 351
    GET_SUBSCRIPTIONGROUP_CONFIG: Final = 352
    LITE_PULL_MESSAGE: Final = 361
    POP_MESSAGE: Final = 200050
    ACK_MESSAGE: Final = 200051
    BATCH_ACK_MESSAGE: Final = 200151
    CHANGE_MESSAGE_INVISIBLETIME: Final = 200053


class ResponseCode:
    """Response codes."""

    SUCCESS: Final = 0
    SYSTEM_ERROR: Final = 1
    SYSTEM_BUSY: Final = 2
    REQUEST_CODE_NOT_SUPPORTED: Final = 3
    FLUSH_DISK_TIMEOUT: Final = 10
    SLAVE_NOT_AVAILABLE: Final = 11
    FLUSH_SLAVE_TIMEOUT: Final = 12
    MESSAGE_ILLEGAL: Final = 13
    SERVICE_NOT_AVAILABLE: Final = 14
    NO_PERMISSION: Final = 16
    TOPIC_NOT_EXIST: Final = 17
    PULL_NOT_FOUND: Final = 19
    PULL_RETRY_IMMEDIATELY: Final = 20
    PULL_OFFSET_MOVED: Final = 21
    QUERY_NOT_FOUND: Final = 22
    SUBSCRIPTION_PARSE_FAILED: Final = 23
    SUBSCRIPTION_NOT_EXIST: Final = 24
    SUBSCRIPTION_GROUP_NOT_EXIST: Final = 26
    FILTER_DATA_NOT_EXIST: Final = 27
    FILTER_DATA_NOT_LATEST: Final = 28
    INVALID_PARAMETER: Final = 29
    NO_MESSAGE: Final = 208
    POLLING_FULL: Final = 209
    POLLING_TIMEOUT: Final = 210
    CONSUMER_NOT_ONLINE: Final = 206


class ControllerRequestCode:
    """Request codes of RocketMQ 5.x's controller mode, a mirror of ``code::controller::request``
    in ``crates/protocol/src/code.rs`` (checked against that file by
    ``tests/unit/test_protocol_tables.py``). They are not in :class:`RequestCode`, which lists
    the codes rocketpy's servers answer: controllers (and brokers in controller mode) answer
    these."""

    BROKER_HEARTBEAT: Final = 904
    CONTROLLER_ALTER_SYNC_STATE_SET: Final = 1001
    CONTROLLER_ELECT_MASTER: Final = 1002
    CONTROLLER_REGISTER_BROKER: Final = 1003
    CONTROLLER_GET_REPLICA_INFO: Final = 1004
    CONTROLLER_GET_METADATA_INFO: Final = 1005
    CONTROLLER_GET_SYNC_STATE_DATA: Final = 1006
    GET_BROKER_EPOCH_CACHE: Final = 1007
    NOTIFY_BROKER_ROLE_CHANGED: Final = 1008
    UPDATE_CONTROLLER_CONFIG: Final = 1009
    GET_CONTROLLER_CONFIG: Final = 1010
    CLEAN_BROKER_DATA: Final = 1011
    CONTROLLER_GET_NEXT_BROKER_ID: Final = 1012
    CONTROLLER_APPLY_BROKER_ID: Final = 1013


class ControllerResponseCode:
    """Response codes of the controller, a mirror of ``code::controller::response`` (checked
    like :class:`ControllerRequestCode`)."""

    CONTROLLER_FENCED_MASTER_EPOCH: Final = 2000
    CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH: Final = 2001
    CONTROLLER_INVALID_MASTER: Final = 2002
    CONTROLLER_INVALID_REPLICAS: Final = 2003
    CONTROLLER_MASTER_NOT_AVAILABLE: Final = 2004
    CONTROLLER_INVALID_REQUEST: Final = 2005
    CONTROLLER_BROKER_NOT_ALIVE: Final = 2006
    CONTROLLER_NOT_LEADER: Final = 2007
    CONTROLLER_BROKER_METADATA_NOT_EXIST: Final = 2008
    CONTROLLER_INVALID_CLEAN_BROKER_METADATA: Final = 2009
    CONTROLLER_BROKER_NEED_TO_BE_REGISTERED: Final = 2010
    CONTROLLER_MASTER_STILL_EXIST: Final = 2011
    CONTROLLER_ELECT_MASTER_FAILED: Final = 2012
    CONTROLLER_ALTER_SYNC_STATE_SET_FAILED: Final = 2013
    CONTROLLER_BROKER_ID_INVALID: Final = 2014
    CONTROLLER_JRAFT_INTERNAL_ERROR: Final = 2015
    CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS: Final = 2016


class PullSysFlag:
    """Bits of PULL_MESSAGE's ``sysFlag``."""

    COMMIT_OFFSET: Final = 0x1
    SUSPEND: Final = 0x2
    SUBSCRIPTION: Final = 0x4
    CLASS_FILTER: Final = 0x8
    LITE_PULL: Final = 0x10


class MessageSysFlag:
    """Bits of a message's ``sysFlag``."""

    COMPRESSED: Final = 0x1
    MULTI_TAGS: Final = 0x2
    TRANSACTION_NOT_TYPE: Final = 0
    TRANSACTION_PREPARED_TYPE: Final = 0x4
    TRANSACTION_COMMIT_TYPE: Final = 0x8
    TRANSACTION_ROLLBACK_TYPE: Final = 0xC
    BORNHOST_V6: Final = 0x10
    STOREHOST_V6: Final = 0x20


class Perm:
    """Topic and broker permission bits (``PermName``)."""

    INHERIT: Final = 1
    WRITE: Final = 2
    READ: Final = 4


class Property:
    """Well-known message property names (``MessageConst``)."""

    KEYS: Final = "KEYS"
    TAGS: Final = "TAGS"
    WAIT_STORE_MSG_OK: Final = "WAIT"
    DELAY_TIME_LEVEL: Final = "DELAY"
    RETRY_TOPIC: Final = "RETRY_TOPIC"
    REAL_TOPIC: Final = "REAL_TOPIC"
    REAL_QUEUE_ID: Final = "REAL_QID"
    UNIQ_KEY: Final = "UNIQ_KEY"
    RECONSUME_TIME: Final = "RECONSUME_TIME"
    MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
    CONSUME_START_TIMESTAMP: Final = "CONSUME_START_TIME"
    PRODUCER_GROUP: Final = "PGROUP"
    TRANSACTION_PREPARED: Final = "TRAN_MSG"
    TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
    CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"


#: Template topic producers use before their topic has a route (auto-creation).
AUTO_CREATE_TOPIC_KEY: Final = "TBW102"
#: Prefix of a consumer group's retry topic.
RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
#: Prefix of a consumer group's dead-letter topic.
DLQ_GROUP_TOPIC_PREFIX: Final = "%DLQ%"
#: Broker id of a master.
MASTER_ID: Final = 0


def retry_topic(group: str) -> str:
    """The retry topic of a consumer group."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """The dead-letter topic of a consumer group."""
    return DLQ_GROUP_TOPIC_PREFIX + group
