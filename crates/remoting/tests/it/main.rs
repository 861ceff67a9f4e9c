//! Transport tests: a real server and client on loopback.

mod batch;
mod transport;
mod write_order;
