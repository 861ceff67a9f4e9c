//! A broker's answer to a send, read as leniently as the header spec reads it for Python
//! (`Producer._result`): absent or unparsable fields take the same defaults. Which answer
//! codes mean "stored" (and with which `SendStatus`) is the caller's: the binding maps them
//! from Python's table.

use rocketpy_protocol::RemotingCommand;

/// The fields every result of one stored send (or batch) shares.
#[derive(Debug, Clone, Copy)]
pub struct SendAnswer<'a> {
    cmd: &'a RemotingCommand,
}

impl<'a> SendAnswer<'a> {
    pub fn new(cmd: &'a RemotingCommand) -> Self {
        SendAnswer { cmd }
    }

    /// The answer's code.
    pub fn code(&self) -> i32 {
        self.cmd.code
    }

    fn field(&self, name: &str) -> Option<&'a str> {
        self.cmd.ext_fields.get(name).map(|v| v.trim())
    }

    /// The queue the broker stored into, when it names one.
    pub fn queue_id(&self) -> Option<i32> {
        self.field("queueId").and_then(|v| v.parse().ok())
    }

    /// The queue offset of the (first) message, -1 when the broker gave none.
    pub fn offset(&self) -> i64 {
        self.field("queueOffset")
            .and_then(|v| v.parse().ok())
            .unwrap_or(-1)
    }

    /// The broker's region.
    pub fn region(&self) -> &'a str {
        self.field("MSG_REGION")
            .filter(|r| !r.is_empty())
            .unwrap_or("DefaultRegion")
    }

    /// The broker's message ids (comma-separated for a batch).
    pub fn msg_ids(&self) -> &'a str {
        self.field("msgId").unwrap_or("")
    }

    /// The transaction id (a half message's), when there is one.
    pub fn transaction_id(&self) -> Option<&'a str> {
        self.cmd.ext_fields.get("transactionId").map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(fields: &[(&str, &str)]) -> RemotingCommand {
        let mut cmd = RemotingCommand::response_to(&RemotingCommand::request(10), 0);
        for (k, v) in fields {
            cmd.ext_fields.insert((*k).into(), (*v).into());
        }
        cmd
    }

    #[test]
    fn fields_are_read_with_their_defaults() {
        let cmd = answer(&[
            ("queueId", " 2 "),
            ("queueOffset", "41"),
            ("MSG_REGION", "r1"),
            ("msgId", "A,B"),
            ("transactionId", "t"),
        ]);
        let a = SendAnswer::new(&cmd);
        assert_eq!(a.code(), 0);
        assert_eq!(a.queue_id(), Some(2));
        assert_eq!(a.offset(), 41);
        assert_eq!(a.region(), "r1");
        assert_eq!(a.msg_ids(), "A,B");
        assert_eq!(a.transaction_id(), Some("t"));

        let cmd = answer(&[("queueId", "x"), ("queueOffset", ""), ("MSG_REGION", "")]);
        let a = SendAnswer::new(&cmd);
        assert_eq!(a.queue_id(), None);
        assert_eq!(a.offset(), -1);
        assert_eq!(a.region(), "DefaultRegion");
        assert_eq!(a.msg_ids(), "");
        assert_eq!(a.transaction_id(), None);
    }
}
