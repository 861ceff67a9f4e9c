//! Bulk sends: many messages of one topic, encoded straight from borrowed bodies into
//! SEND_BATCH_MESSAGE requests of bounded size, with a bounded number of requests in flight.
//! The binding reads the bodies from a Python list or Arrow buffers without making a Python
//! object per message; this module owns the encoding and the window.
//!
//! What must stay true:
//! - a chunk is one request: its messages were all stored or none of them (the broker appends
//!   a batch whole), so a failed chunk is retried whole by its index range;
//! - at most `window` requests are in flight, so the bytes held are bounded by
//!   `window × max_request_bytes` however many messages the caller hands over;
//! - every request sent reaches [`Flight::wait_all`] exactly once, answered or failed.

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use rocketpy_protocol::message::properties::keys;
use rocketpy_protocol::message::properties::{NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR};
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::RemotingClient;

/// Bytes of a batch item besides its body and properties: total, magic, body CRC, flag,
/// body length (i32 each) and the properties' length (i16).
pub const ITEM_OVERHEAD: usize = 22;

/// One request's worth of messages, encoded as a SEND_BATCH_MESSAGE body.
#[derive(Debug)]
pub struct ChunkWriter {
    body: Vec<u8>,
    count: usize,
    max_bytes: usize,
}

impl ChunkWriter {
    /// A chunk that takes messages while its body stays within `max_bytes` (a first message
    /// larger than that still goes, alone: the broker's `maxMessageSize` decides it).
    pub fn new(max_bytes: usize) -> Self {
        ChunkWriter {
            body: Vec::with_capacity(max_bytes.min(4 << 20)),
            count: 0,
            max_bytes,
        }
    }

    /// Messages written.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether a message of `body_len` bytes and `props_len` bytes of properties fits.
    pub fn fits(&self, body_len: usize, props_len: usize) -> bool {
        self.count == 0 || self.body.len() + ITEM_OVERHEAD + body_len + props_len <= self.max_bytes
    }

    /// Appends one message (flag 0): `body`, with properties `shared` (encoded, each pair
    /// ending in its separator), then `KEYS` when given, then `UNIQ_KEY` = `uniq` — the
    /// layout of RocketMQ's `MessageDecoder.encodeMessages` with magic and CRC 0, as its
    /// client sends them. Errors when the properties exceed an i16 length or the message 2 GiB.
    pub fn push(
        &mut self,
        body: &[u8],
        shared: &str,
        keys: Option<&str>,
        uniq: &str,
    ) -> Result<(), String> {
        let props_len = props_len(shared, keys, uniq);
        let props_len_i16 = i16::try_from(props_len).map_err(|_| {
            format!("the properties of a message take {props_len} bytes, over 32767")
        })?;
        let total = i32::try_from(ITEM_OVERHEAD + body.len() + props_len)
            .map_err(|_| "a message exceeds 2 GiB".to_owned())?;
        let out = &mut self.body;
        out.extend_from_slice(&total.to_be_bytes());
        out.extend_from_slice(&[0u8; 12]); // magic, body CRC, flag
        out.extend_from_slice(&(body.len() as i32).to_be_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(&props_len_i16.to_be_bytes());
        out.extend_from_slice(shared.as_bytes());
        if let Some(k) = keys {
            push_property(out, keys::KEYS, k);
        }
        push_property(out, keys::UNIQ_KEY, uniq);
        self.count += 1;
        Ok(())
    }

    /// The encoded body and its message count; the writer is empty again.
    pub fn take(&mut self) -> (Vec<u8>, usize) {
        let count = std::mem::take(&mut self.count);
        let cap = self.body.capacity();
        (
            std::mem::replace(&mut self.body, Vec::with_capacity(cap)),
            count,
        )
    }
}

/// The encoded length of `shared` + `KEYS` + `UNIQ_KEY`.
pub fn props_len(shared: &str, keys: Option<&str>, uniq: &str) -> usize {
    let pair = |name: &str, value: &str| name.len() + value.len() + 2;
    shared.len() + keys.map_or(0, |k| pair(keys::KEYS, k)) + pair(keys::UNIQ_KEY, uniq)
}

fn push_property(out: &mut Vec<u8>, name: &str, value: &str) {
    out.extend_from_slice(name.as_bytes());
    out.push(NAME_VALUE_SEPARATOR as u8);
    out.extend_from_slice(value.as_bytes());
    out.push(PROPERTY_SEPARATOR as u8);
}

/// Where a chunk's messages are in the caller's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkPlace {
    /// The caller's lane number.
    pub lane: u32,
    /// The input segment (a Python list, an Arrow array) the messages come from.
    pub segment: usize,
    /// The index of the first message in its segment.
    pub start: usize,
    /// Messages in the chunk.
    pub count: usize,
}

/// How one chunk's request ended.
#[derive(Debug)]
pub struct ChunkOutcome {
    pub place: ChunkPlace,
    /// The broker's answer, or the transport's error.
    pub answer: Result<RemotingCommand, String>,
    /// The request's round trip.
    pub elapsed: Duration,
}

#[derive(Default)]
struct FlightState {
    in_flight: usize,
    outcomes: Vec<ChunkOutcome>,
}

/// The requests of one bulk send in flight, and the outcomes of those answered.
#[derive(Default)]
pub struct Flight {
    state: Mutex<FlightState>,
    changed: Condvar,
}

impl Flight {
    pub fn new() -> Arc<Self> {
        Arc::new(Flight::default())
    }

    /// Sends `cmd` to `addr` on the client's runtime; its outcome is kept for `wait_all`.
    pub fn send(
        self: &Arc<Self>,
        client: &RemotingClient,
        addr: &str,
        cmd: RemotingCommand,
        timeout: Duration,
        place: ChunkPlace,
    ) {
        self.state.lock().expect("flight lock").in_flight += 1;
        let flight = self.clone();
        let started = Instant::now();
        client.invoke_async(addr, cmd, timeout, move |answer| {
            let outcome = ChunkOutcome {
                place,
                answer: answer.map_err(|e| e.to_string()),
                elapsed: started.elapsed(),
            };
            let mut state = flight.state.lock().expect("flight lock");
            state.in_flight -= 1;
            state.outcomes.push(outcome);
            drop(state);
            flight.changed.notify_all();
        });
    }

    /// Blocks until fewer than `window` requests are in flight.
    pub fn wait_below(&self, window: usize) {
        let state = self.state.lock().expect("flight lock");
        let _unused = self
            .changed
            .wait_while(state, |s| s.in_flight >= window.max(1))
            .expect("flight lock");
    }

    /// Blocks until every request sent was answered or failed; their outcomes, in the order
    /// they ended. Each request has its own timeout, so this ends.
    pub fn wait_all(&self) -> Vec<ChunkOutcome> {
        let state = self.state.lock().expect("flight lock");
        let mut state = self
            .changed
            .wait_while(state, |s| s.in_flight > 0)
            .expect("flight lock");
        std::mem::take(&mut state.outcomes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rocketpy_protocol::message::batch::decode_batch;
    use rocketpy_protocol::message::properties;

    #[test]
    fn chunks_decode_as_the_broker_reads_them() {
        let shared = properties::encode([("TAGS", "A")]);
        let mut w = ChunkWriter::new(1 << 20);
        w.push(b"one", &shared, Some("k1"), "U1").unwrap();
        w.push(b"two", &shared, None, "U2").unwrap();
        let (body, count) = w.take();
        assert_eq!(count, 2);
        assert_eq!(w.count(), 0);
        let whole = bytes::Bytes::from(body);
        let items = decode_batch(&whole).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(&items[0].body[..], b"one");
        assert_eq!(
            items[0].properties,
            properties::encode([("TAGS", "A"), ("KEYS", "k1"), ("UNIQ_KEY", "U1")])
        );
        assert_eq!(
            items[1].properties,
            properties::encode([("TAGS", "A"), ("UNIQ_KEY", "U2")])
        );
    }

    #[test]
    fn a_chunk_stays_within_its_bytes_but_always_takes_one() {
        let mut w = ChunkWriter::new(100);
        let big = vec![7u8; 500];
        assert!(w.fits(big.len(), 10), "an empty chunk takes any message");
        w.push(&big, "", None, "U").unwrap();
        assert!(!w.fits(1, 10));
        let mut w = ChunkWriter::new(100);
        let len = props_len("", None, "U");
        w.push(&[0; 30], "", None, "U").unwrap();
        let room = 100 - (ITEM_OVERHEAD + 30 + len) - ITEM_OVERHEAD - len;
        assert!(w.fits(room, len));
        assert!(!w.fits(room + 1, len));
    }

    #[test]
    fn oversized_properties_are_refused() {
        let mut w = ChunkWriter::new(1 << 20);
        let key = "k".repeat(40_000);
        assert!(w.push(b"x", "", Some(&key), "U").is_err());
        assert_eq!(w.count(), 0, "nothing of a refused message is kept");
    }
}
