//! The client's native mechanics, without Python: what `rocketpy._native` (the binding)
//! drives for a producer and a Spark reader, kept here so it is tested in Rust alone.
//!
//! - [`lanes`]: a producer's lanes (broker address, topic, queue) by number.
//! - [`topic_lanes`]: which of a topic's lanes a send takes (in turn, or sticky per batch).
//! - [`batch`]: request batching per lane (`autoBatch`, `linger.ms`), with its invariants.
//! - [`bulk`]: bulk sends, many messages encoded into bounded batch requests, a window in flight.
//! - [`requests`]: SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE requests from a lane and a template.
//! - [`answer`]: the fields of a broker's answer to a send.
//! - [`pending`]: a consumer's pulled, unconsumed messages of one queue, by offset.
//! - [`pull_range`]: a range of queue offsets read through many PULL_MESSAGEs in flight.
//!
//! The binding adds what needs Python: reading `rocketpy.Message`s, futures and callbacks,
//! results as Python objects, the GIL released around waits.

pub mod answer;
pub mod batch;
pub mod bulk;
pub mod lanes;
pub mod pending;
pub mod pull_range;
pub mod requests;
pub mod topic_lanes;

pub use answer::SendAnswer;
pub use batch::{Accumulator, AddError, Added, BatchSettings, BatchSink};
pub use lanes::{Lane, Lanes};
pub use requests::Template;
pub use topic_lanes::TopicLanes;
