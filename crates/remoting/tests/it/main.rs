//! Transport tests: a real server and client on loopback.

mod budget;
mod direct;
mod language;
mod tls;
mod transport;
mod write_order;

use std::sync::Arc;
use std::time::Duration;

use rocketpy_protocol::code::response;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{ProcessorTable, Reply};

/// Registers `code` as a request answered SUCCESS 300 ms later (timeouts, late answers).
pub(crate) fn register_slow(table: &mut ProcessorTable, code: i32) {
    table.register(
        code,
        Arc::new(|_: &Arc<_>, req: &RemotingCommand| {
            let resp = RemotingCommand::response_to(req, response::SUCCESS);
            Ok(Reply::Later(Box::pin(async move {
                tokio::time::sleep(Duration::from_millis(300)).await;
                Some(resp)
            })))
        }),
    );
}
