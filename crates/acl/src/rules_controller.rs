//! The access rules of a controller's port (controller mode, issue 43), kept apart from
//! [`crate::rules`]' broker and name server tables only for size; the same [`Rule`]s apply.

use rocketpy_protocol::code::controller::request as controller;

use crate::rules::Rule;

/// The controller port (issue 43): brokers and admins sign as admin accounts for everything
/// that registers, elects or changes the replicated state, as they do for the name server's
/// registrations; peer controllers sign their Raft RPCs the same way (`accessKey`). Reading
/// which controller leads is open to any signed caller, as a route lookup is.
pub const CONTROLLER: &[(i32, &str, Rule)] = &[
    (
        controller::BROKER_HEARTBEAT,
        "BROKER_HEARTBEAT",
        Rule::Admin,
    ),
    (
        controller::CONTROLLER_ALTER_SYNC_STATE_SET,
        "CONTROLLER_ALTER_SYNC_STATE_SET",
        Rule::Admin,
    ),
    (
        controller::CONTROLLER_ELECT_MASTER,
        "CONTROLLER_ELECT_MASTER",
        Rule::Admin,
    ),
    (
        controller::CONTROLLER_REGISTER_BROKER,
        "CONTROLLER_REGISTER_BROKER",
        Rule::Admin,
    ),
    (
        controller::CONTROLLER_GET_REPLICA_INFO,
        "CONTROLLER_GET_REPLICA_INFO",
        Rule::Admin,
    ),
    (
        controller::CONTROLLER_GET_METADATA_INFO,
        "CONTROLLER_GET_METADATA_INFO",
        Rule::Signed,
    ),
    (
        controller::CONTROLLER_GET_SYNC_STATE_DATA,
        "CONTROLLER_GET_SYNC_STATE_DATA",
        Rule::Admin,
    ),
    (
        controller::UPDATE_CONTROLLER_CONFIG,
        "UPDATE_CONTROLLER_CONFIG",
        Rule::Admin,
    ),
    (
        controller::GET_CONTROLLER_CONFIG,
        "GET_CONTROLLER_CONFIG",
        Rule::Admin,
    ),
    (
        controller::CLEAN_BROKER_DATA,
        "CLEAN_BROKER_DATA",
        Rule::Admin,
    ),
    (
        controller::CONTROLLER_GET_NEXT_BROKER_ID,
        "CONTROLLER_GET_NEXT_BROKER_ID",
        Rule::Admin,
    ),
    (
        controller::CONTROLLER_APPLY_BROKER_ID,
        "CONTROLLER_APPLY_BROKER_ID",
        Rule::Admin,
    ),
    (
        rocketpy_protocol::code::controller::RAFT_RPC,
        "RAFT_RPC (rocketpy's, between controllers)",
        Rule::Admin,
    ),
];
