//! What the controller's test binaries share: the group they elect in, how long they wait,
//! and a free loopback port for a controller to listen on.

use std::time::Duration;

pub const WAIT: Duration = Duration::from_secs(20);
pub const CLUSTER: &str = "DefaultCluster";
pub const GROUP: &str = "broker-a";

/// A port nothing listens on now (the controller binds it next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
