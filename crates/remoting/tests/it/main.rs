//! Transport tests: a real server and client on loopback.

mod batch;
mod direct;
mod transport;
mod write_order;
