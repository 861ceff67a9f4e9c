//! The client core against real servers on loopback.

mod batch;
