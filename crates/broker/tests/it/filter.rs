//! Subscriptions the broker cannot evaluate (SQL92) are refused, as RocketMQ refuses them
//! with `enablePropertyFilter=false`, in PULL (from the request or from a heartbeat), and in
//! POP — never served unfiltered, never read as a tag.

use crate::broker::v2_fields;
use crate::wire::Wire;
use crate::Servers;

const PULL_MESSAGE: i32 = 11;
const HEART_BEAT: i32 = 34;
const POP_MESSAGE: i32 = 200050;
const SEND_MESSAGE_V2: i32 = 310;
const SUCCESS: i32 = 0;
const SYSTEM_ERROR: i32 = 1;
const SUBSCRIPTION_PARSE_FAILED: i32 = 23;
const REFUSED: &str = "The broker does not support consumer to filter message by SQL92";

fn pull(w: &mut Wire, sys_flag: &str, expression_type: &str) -> crate::wire::Frame {
    w.call(
        PULL_MESSAGE,
        &[
            ("consumerGroup", "sql-group"),
            ("topic", "SqlTopic"),
            ("queueId", "0"),
            ("queueOffset", "0"),
            ("maxMsgNums", "32"),
            ("sysFlag", sys_flag),
            ("commitOffset", "0"),
            ("suspendTimeoutMillis", "0"),
            ("subscription", "a > 5"),
            ("subVersion", "0"),
            ("expressionType", expression_type),
        ],
        b"",
    )
}

#[test]
fn sql92_subscriptions_are_refused_not_served_unfiltered() {
    let servers = Servers::start();
    let mut w = Wire::connect(servers.broker_addr());
    let props = "a\u{1}7\u{2}UNIQ_KEY\u{1}U1\u{2}";
    let send = v2_fields("SqlTopic", "0", props, "false");
    assert_eq!(w.call(SEND_MESSAGE_V2, &send, b"seven").code, SUCCESS);

    // The expression in the request (sysFlag SUBSCRIPTION).
    let refused = pull(&mut w, "4", "SQL92");
    assert_eq!(
        (refused.code, refused.remark.as_deref()),
        (SYSTEM_ERROR, Some(REFUSED))
    );
    // The same text as a tag expression is a tag ("a > 5"): nothing matches it.
    assert_ne!(pull(&mut w, "4", "TAG").code, SYSTEM_ERROR);

    // The expression registered by a heartbeat.
    let heartbeat = br#"{"clientID":"127.0.0.1@sql","producerDataSet":[],"consumerDataSet":[{
        "groupName":"sql-group","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",
        "consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","unitMode":false,"subscriptionDataSet":[{
        "topic":"SqlTopic","subString":"a > 5","expressionType":"SQL92","tagsSet":[],
        "codeSet":[],"subVersion":1,"classFilterMode":false}]}]}"#;
    assert_eq!(w.call(HEART_BEAT, &[], heartbeat).code, SUCCESS);
    let refused = pull(&mut w, "0", "SQL92");
    assert_eq!(
        (refused.code, refused.remark.as_deref()),
        (SYSTEM_ERROR, Some(REFUSED))
    );

    // POP (what the 5.x proxy sends for a FilterExpression of type SQL): refused as a
    // subscription that cannot be parsed.
    let pop = w.call(
        POP_MESSAGE,
        &[
            ("consumerGroup", "sql-pop-group"),
            ("topic", "SqlTopic"),
            ("queueId", "-1"),
            ("maxMsgNums", "32"),
            ("invisibleTime", "60000"),
            ("pollTime", "0"),
            ("bornTime", &servers.clock.now_millis().to_string()),
            ("initMode", "0"),
            ("expType", "SQL92"),
            ("exp", "a > 5"),
        ],
        b"",
    );
    assert_eq!(pop.code, SUBSCRIPTION_PARSE_FAILED, "{:?}", pop.remark);
    assert!(pop.remark.is_some_and(|r| r.contains("SQL92")));
}
