//! How the proxy writes its remoting requests to brokers and name servers.

/// A request to a broker or name server. Its header goes in RocketMQ's binary serialisation
/// (`ROCKETMQ`), which every RocketMQ 4.x/5.x server reads and which costs less to write and
/// read than JSON on this hop, taken once per message — except for codes that do not fit its
/// 16-bit code field (the 5.x pop codes, 200050 and up), which RocketMQ sends as JSON.
pub(crate) fn remoting_request(code: i32) -> rocketpy_protocol::RemotingCommand {
    let mut cmd = rocketpy_protocol::RemotingCommand::request(code);
    if i16::try_from(code).is_ok() {
        cmd.serialize_type = rocketpy_protocol::command::SerializeType::RocketMq;
    }
    cmd
}
