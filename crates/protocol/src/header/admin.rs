//! Administration (mqadmin's requests to brokers): topics, groups, statistics, offsets.

use super::header;

header! {
    /// `CreateTopicRequestHeader`.
    pub struct CreateTopicRequestHeader {
        /// The topic.
        topic: String = "topic",
        /// Template topic (TBW102).
        default_topic: Option<String> = "defaultTopic",
        /// Queues consumers read.
        read_queue_nums: i32 = "readQueueNums",
        /// Queues producers write.
        write_queue_nums: i32 = "writeQueueNums",
        /// Permission bits.
        perm: i32 = "perm",
        /// "SINGLE_TAG" or "MULTI_TAG".
        topic_filter_type: Option<String> = "topicFilterType",
        /// Topic system flags.
        topic_sys_flag: Option<i32> = "topicSysFlag",
        /// Whether the topic is ordered.
        order: Option<bool> = "order",
        /// 5.x attribute changes, `+message.type=FIFO,-key` (see `topic_attributes`).
        attributes: Option<String> = "attributes",
    }
}

header! {
    /// `GetTopicConfigRequestHeader` (GET_TOPIC_CONFIG, 5.x).
    pub struct GetTopicConfigRequestHeader {
        /// The topic.
        topic: String = "topic",
        /// Whether the logic-queue mapping is wanted too (static topics; rocketpy has none).
        lo: Option<bool> = "lo",
    }
}

header! {
    /// `DeleteTopicRequestHeader` (DELETE_TOPIC_IN_BROKER).
    pub struct DeleteTopicRequestHeader {
        /// The topic.
        topic: String = "topic",
    }
}

header! {
    /// `DeleteTopicFromNamesrvRequestHeader` (DELETE_TOPIC_IN_NAMESRV); 5.x adds the cluster.
    pub struct DeleteTopicFromNamesrvRequestHeader {
        /// The topic.
        topic: String = "topic",
        /// Only this cluster's brokers lose the route (all when absent).
        cluster_name: Option<String> = "clusterName",
    }
}

header! {
    /// `GetTopicStatsInfoRequestHeader` (GET_TOPIC_STATS_INFO).
    pub struct GetTopicStatsInfoRequestHeader {
        /// The topic.
        topic: String = "topic",
    }
}

header! {
    /// `GetConsumeStatsRequestHeader` (GET_CONSUME_STATS).
    pub struct GetConsumeStatsRequestHeader {
        /// The group.
        consumer_group: String = "consumerGroup",
        /// One topic only (every topic the group has offsets for when absent).
        topic: Option<String> = "topic",
    }
}

header! {
    /// `GetConsumerConnectionListRequestHeader` (GET_CONSUMER_CONNECTION_LIST).
    pub struct GetConsumerConnectionListRequestHeader {
        /// The group.
        consumer_group: String = "consumerGroup",
    }
}

header! {
    /// `GetProducerConnectionListRequestHeader` (GET_PRODUCER_CONNECTION_LIST).
    pub struct GetProducerConnectionListRequestHeader {
        /// The group.
        producer_group: String = "producerGroup",
    }
}

header! {
    /// `DeleteSubscriptionGroupRequestHeader` (DELETE_SUBSCRIPTIONGROUP).
    pub struct DeleteSubscriptionGroupRequestHeader {
        /// The group.
        group_name: String = "groupName",
        /// Also forget the group's committed offsets.
        clean_offset: Option<bool> = "cleanOffset",
    }
}

header! {
    /// `QueryTopicConsumeByWhoRequestHeader` (QUERY_TOPIC_CONSUME_BY_WHO).
    pub struct QueryTopicConsumeByWhoRequestHeader {
        /// The topic.
        topic: String = "topic",
    }
}

header! {
    /// `ResetOffsetRequestHeader`: INVOKE_BROKER_TO_RESET_OFFSET (admin to broker) and
    /// RESET_CONSUMER_CLIENT_OFFSET (broker to each consumer of the group).
    pub struct ResetOffsetRequestHeader {
        /// The topic.
        topic: String = "topic",
        /// The consumer group.
        group: String = "group",
        /// Reset to the first message stored at or after this time (ms).
        timestamp: i64 = "timestamp",
        /// Also move offsets forward (false: only back).
        is_force: bool = "isForce",
        /// 5.x: one queue only (with `offset`).
        queue_id: Option<i32> = "queueId",
        /// 5.x: the offset for `queueId`.
        offset: Option<i64> = "offset",
    }
}

header! {
    /// `GetBrokerConfigResponseHeader`: the config's data version.
    pub struct GetBrokerConfigResponseHeader {
        /// The data version (JSON).
        version: Option<String> = "version",
    }
}

header! {
    /// `ViewBrokerStatsDataRequestHeader` (VIEW_BROKER_STATS_DATA).
    pub struct ViewBrokerStatsDataRequestHeader {
        /// The statistic (`TOPIC_PUT_NUMS`, `GROUP_GET_NUMS`, ...).
        stats_name: String = "statsName",
        /// Its key: a topic, or `topic@group`.
        stats_key: String = "statsKey",
    }
}

header! {
    /// `QueryConsumeQueueRequestHeader` (QUERY_CONSUME_QUEUE).
    pub struct QueryConsumeQueueRequestHeader {
        /// The topic.
        topic: String = "topic",
        /// The queue.
        queue_id: i32 = "queueId",
        /// Queue offset of the first unit wanted.
        index: i64 = "index",
        /// Most units wanted (the answer stops at the end of the file holding `index`).
        count: i32 = "count",
        /// A group whose subscription the answer shows (optional).
        consumer_group: Option<String> = "consumerGroup",
    }
}

header! {
    /// `GetSubscriptionGroupConfigRequestHeader` (GET_SUBSCRIPTIONGROUP_CONFIG, 5.x).
    pub struct GetSubscriptionGroupConfigRequestHeader {
        /// The group.
        group: String = "group",
    }
}
