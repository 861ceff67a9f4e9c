//! RocketMQ's names of its request and response codes, as its metrics write them: RocketMQ
//! 5.x labels `request_code` / `response_code` with `RemotingHelper.getRequestCodeDesc` /
//! `getResponseCodeDesc`, the lowercased name of the `RequestCode` / `ResponseCode` constant
//! (`ResponseCode` inherits `RemotingSysResponseCode`'s), or the number when no constant has
//! that value. Every constant is listed, not only the codes rocketpy serves, because a label
//! names what a client asked for (an unsupported code included).
//!
//! The names are kept lowercased (the label form): a label lookup per request then allocates
//! nothing. Each table is sorted by value, so a lookup is a binary search.
//!
//! Duplicate values: RocketMQ builds its maps by putting every field in a `HashMap`, so with
//! two constants of one value the one put last would win. Neither class (as of RocketMQ 5.3)
//! has two constants of one value, nor does `ResponseCode` reuse one of
//! `RemotingSysResponseCode`'s; should a future table gain one, keep the constant declared
//! last (fields are put in declaration order, the superclass's after the class's own) — the
//! tests refuse a table whose values are not strictly increasing, so the choice is made here.

use std::borrow::Cow;

/// `RequestCode`'s constants as (value, lowercased name), by value.
const REQUEST: &[(i32, &str)] = &[
    (10, "send_message"),
    (11, "pull_message"),
    (12, "query_message"),
    (13, "query_broker_offset"),
    (14, "query_consumer_offset"),
    (15, "update_consumer_offset"),
    (17, "update_and_create_topic"),
    (18, "update_and_create_topic_list"),
    (21, "get_all_topic_config"),
    (22, "get_topic_config_list"),
    (23, "get_topic_name_list"),
    (25, "update_broker_config"),
    (26, "get_broker_config"),
    (27, "trigger_delete_files"),
    (28, "get_broker_runtime_info"),
    (29, "search_offset_by_timestamp"),
    (30, "get_max_offset"),
    (31, "get_min_offset"),
    (32, "get_earliest_msg_storetime"),
    (33, "view_message_by_id"),
    (34, "heart_beat"),
    (35, "unregister_client"),
    (36, "consumer_send_msg_back"),
    (37, "end_transaction"),
    (38, "get_consumer_list_by_group"),
    (39, "check_transaction_state"),
    (40, "notify_consumer_ids_changed"),
    (41, "lock_batch_mq"),
    (42, "unlock_batch_mq"),
    (43, "get_all_consumer_offset"),
    (45, "get_all_delay_offset"),
    (46, "check_client_config"),
    (47, "get_client_config"),
    (60, "get_timer_check_point"),
    (61, "get_timer_metrics"),
    (100, "put_kv_config"),
    (101, "get_kv_config"),
    (102, "delete_kv_config"),
    (103, "register_broker"),
    (104, "unregister_broker"),
    (105, "get_routeinfo_by_topic"),
    (106, "get_broker_cluster_info"),
    (200, "update_and_create_subscriptiongroup"),
    (201, "get_all_subscriptiongroup_config"),
    (202, "get_topic_stats_info"),
    (203, "get_consumer_connection_list"),
    (204, "get_producer_connection_list"),
    (205, "wipe_write_perm_of_broker"),
    (206, "get_all_topic_list_from_nameserver"),
    (207, "delete_subscriptiongroup"),
    (208, "get_consume_stats"),
    (209, "suspend_consumer"),
    (210, "resume_consumer"),
    (211, "reset_consumer_offset_in_consumer"),
    (212, "reset_consumer_offset_in_broker"),
    (213, "adjust_consumer_thread_pool"),
    (214, "who_consume_the_message"),
    (215, "delete_topic_in_broker"),
    (216, "delete_topic_in_namesrv"),
    (217, "register_topic_in_namesrv"),
    (219, "get_kvlist_by_namespace"),
    (220, "reset_consumer_client_offset"),
    (221, "get_consumer_status_from_client"),
    (222, "invoke_broker_to_reset_offset"),
    (223, "invoke_broker_to_get_consumer_status"),
    (224, "get_topics_by_cluster"),
    (225, "update_and_create_subscriptiongroup_list"),
    (300, "query_topic_consume_by_who"),
    (301, "register_filter_server"),
    (302, "register_message_filter_class"),
    (303, "query_consume_time_span"),
    (304, "get_system_topic_list_from_ns"),
    (305, "get_system_topic_list_from_broker"),
    (306, "clean_expired_consumequeue"),
    (307, "get_consumer_running_info"),
    (308, "query_correction_offset"),
    (309, "consume_message_directly"),
    (310, "send_message_v2"),
    (311, "get_unit_topic_list"),
    (312, "get_has_unit_sub_topic_list"),
    (313, "get_has_unit_sub_ununit_topic_list"),
    (314, "clone_group_offset"),
    (315, "view_broker_stats_data"),
    (316, "clean_unused_topic"),
    (317, "get_broker_consume_stats"),
    (318, "update_namesrv_config"),
    (319, "get_namesrv_config"),
    (320, "send_batch_message"),
    (321, "query_consume_queue"),
    (322, "query_data_version"),
    (323, "resume_check_half_message"),
    (324, "send_reply_message"),
    (325, "send_reply_message_v2"),
    (326, "push_reply_message_to_client"),
    (327, "add_write_perm_of_broker"),
    (328, "get_all_producer_info"),
    (329, "delete_expired_commitlog"),
    (343, "query_topics_by_consumer"),
    (345, "query_subscription_by_consumer"),
    (351, "get_topic_config"),
    (352, "get_subscriptiongroup_config"),
    (353, "update_and_get_group_forbidden"),
    (354, "check_rocksdb_cq_write_progress"),
    (355, "export_rocksdb_config_to_json"),
    (361, "lite_pull_message"),
    (370, "recall_message"),
    (400, "query_assignment"),
    (401, "set_message_request_mode"),
    (402, "get_all_message_request_mode"),
    (513, "update_and_create_static_topic"),
    (901, "get_broker_member_group"),
    (902, "add_broker"),
    (903, "remove_broker"),
    (904, "broker_heartbeat"),
    (905, "notify_min_broker_id_change"),
    (906, "exchange_broker_ha_info"),
    (907, "get_broker_ha_status"),
    (908, "reset_master_flush_offset"),
    (1001, "controller_alter_sync_state_set"),
    (1002, "controller_elect_master"),
    (1003, "controller_register_broker"),
    (1004, "controller_get_replica_info"),
    (1005, "controller_get_metadata_info"),
    (1006, "controller_get_sync_state_data"),
    (1007, "get_broker_epoch_cache"),
    (1008, "notify_broker_role_changed"),
    (1009, "update_controller_config"),
    (1010, "get_controller_config"),
    (1011, "clean_broker_data"),
    (1012, "controller_get_next_broker_id"),
    (1013, "controller_apply_broker_id"),
    (2001, "update_cold_data_flow_ctr_config"),
    (2002, "remove_cold_data_flow_ctr_config"),
    (2003, "get_cold_data_flow_ctr_info"),
    (2004, "set_commitlog_read_mode"),
    (3001, "auth_create_user"),
    (3002, "auth_update_user"),
    (3003, "auth_delete_user"),
    (3004, "auth_get_user"),
    (3005, "auth_list_user"),
    (3006, "auth_create_acl"),
    (3007, "auth_update_acl"),
    (3008, "auth_delete_acl"),
    (3009, "auth_get_acl"),
    (3010, "auth_list_acl"),
    (200050, "pop_message"),
    (200051, "ack_message"),
    (200052, "peek_message"),
    (200053, "change_message_invisibletime"),
    (200054, "notification"),
    (200055, "polling_info"),
    (200056, "pop_rollback"),
    (200151, "batch_ack_message"),
];

/// `ResponseCode`'s constants (with `RemotingSysResponseCode`'s) as (value, lowercased
/// name), by value.
const RESPONSE: &[(i32, &str)] = &[
    (-1006, "rpc_time_out"),
    (-1004, "rpc_send_to_channel_failed"),
    (-1002, "rpc_addr_is_null"),
    (-1000, "rpc_unknown"),
    (0, "success"),
    (1, "system_error"),
    (2, "system_busy"),
    (3, "request_code_not_supported"),
    (4, "transaction_failed"),
    (10, "flush_disk_timeout"),
    (11, "slave_not_available"),
    (12, "flush_slave_timeout"),
    (13, "message_illegal"),
    (14, "service_not_available"),
    (15, "version_not_supported"),
    (16, "no_permission"),
    (17, "topic_not_exist"),
    (18, "topic_exist_already"),
    (19, "pull_not_found"),
    (20, "pull_retry_immediately"),
    (21, "pull_offset_moved"),
    (22, "query_not_found"),
    (23, "subscription_parse_failed"),
    (24, "subscription_not_exist"),
    (25, "subscription_not_latest"),
    (26, "subscription_group_not_exist"),
    (27, "filter_data_not_exist"),
    (28, "filter_data_not_latest"),
    (29, "invalid_parameter"),
    (200, "transaction_should_commit"),
    (201, "transaction_should_rollback"),
    (202, "transaction_state_unknow"),
    (203, "transaction_state_group_wrong"),
    (204, "no_buyer_id"),
    (205, "not_in_current_unit"),
    (206, "consumer_not_online"),
    (207, "consume_msg_timeout"),
    (208, "no_message"),
    (209, "polling_full"),
    (210, "polling_timeout"),
    (211, "broker_not_exist"),
    (212, "broker_dispatch_not_complete"),
    (213, "broadcast_consumption"),
    (215, "flow_control"),
    (501, "not_leader_for_queue"),
    (604, "illegal_operation"),
    (1500, "go_away"),
    (2000, "controller_fenced_master_epoch"),
    (2001, "controller_fenced_sync_state_set_epoch"),
    (2002, "controller_invalid_master"),
    (2003, "controller_invalid_replicas"),
    (2004, "controller_master_not_available"),
    (2005, "controller_invalid_request"),
    (2006, "controller_broker_not_alive"),
    (2007, "controller_not_leader"),
    (2008, "controller_broker_metadata_not_exist"),
    (2009, "controller_invalid_clean_broker_metadata"),
    (2010, "controller_broker_need_to_be_registered"),
    (2011, "controller_master_still_exist"),
    (2012, "controller_elect_master_failed"),
    (2013, "controller_alter_sync_state_set_failed"),
    (2014, "controller_broker_id_invalid"),
    (2015, "controller_jraft_internal_error"),
    (2016, "controller_broker_live_info_not_exists"),
    (3001, "user_not_exist"),
    (3002, "policy_not_exist"),
];

fn lookup(table: &'static [(i32, &'static str)], code: i32) -> Option<&'static str> {
    table
        .binary_search_by_key(&code, |(value, _)| *value)
        .ok()
        .map(|i| table[i].1)
}

/// RocketMQ's lowercased name of request code `code`, if it has one.
pub fn request_name(code: i32) -> Option<&'static str> {
    lookup(REQUEST, code)
}

/// RocketMQ's lowercased name of response code `code`, if it has one.
pub fn response_name(code: i32) -> Option<&'static str> {
    lookup(RESPONSE, code)
}

/// `RemotingHelper.getRequestCodeDesc`: the name, else the number.
pub fn request_code_desc(code: i32) -> Cow<'static, str> {
    request_name(code).map_or_else(|| Cow::Owned(code.to_string()), Cow::Borrowed)
}

/// `RemotingHelper.getResponseCodeDesc`: the name, else the number.
pub fn response_code_desc(code: i32) -> Cow<'static, str> {
    response_name(code).map_or_else(|| Cow::Owned(code.to_string()), Cow::Borrowed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::code::{request, response};

    #[test]
    fn tables_are_sorted_without_duplicates() {
        for table in [REQUEST, RESPONSE] {
            assert!(table.windows(2).all(|w| w[0].0 < w[1].0));
            assert!(table
                .iter()
                .all(|(_, n)| !n.is_empty() && *n == n.to_ascii_lowercase()));
        }
    }

    #[test]
    fn names_as_rocketmq_labels_them() {
        assert_eq!(request_code_desc(310), "send_message_v2");
        assert_eq!(request_code_desc(105), "get_routeinfo_by_topic");
        assert_eq!(request_code_desc(200050), "pop_message");
        assert_eq!(request_code_desc(-7), "-7");
        assert_eq!(response_code_desc(0), "success");
        assert_eq!(response_code_desc(17), "topic_not_exist");
        assert_eq!(response_code_desc(-1006), "rpc_time_out");
        assert_eq!(response_code_desc(99_999), "99999");
    }

    /// The codes rocketpy serves carry RocketMQ's names for the same numbers.
    #[test]
    fn served_codes_agree_with_the_names() {
        for (name, value) in request::ALL {
            assert_eq!(
                request_name(*value),
                Some(&*name.to_ascii_lowercase()),
                "{name}"
            );
        }
        for (name, value) in response::ALL {
            assert_eq!(
                response_name(*value),
                Some(&*name.to_ascii_lowercase()),
                "{name}"
            );
        }
    }
}
