//! Transport tests: a real server and client on loopback.

mod transport;
mod write_order;
