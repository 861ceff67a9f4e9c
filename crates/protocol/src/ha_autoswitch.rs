//! The HA protocol of controller mode (RocketMQ 5.x's `AutoSwitchHAConnection` /
//! `AutoSwitchHAClient`), on the broker's HA port: the 4.x frames (`[offset][size][bytes]`)
//! are not used there. Big-endian; the first field of every frame is the sender's connection
//! state (RocketMQ's `HAConnectionState` ordinal).
//!
//! | direction | frame |
//! | --- | --- |
//! | slave → master, handshake (16 B) | state 1, `isSyncFromLastFile: i16`, `isAsyncLearner: i16`, `slaveBrokerId: i64` |
//! | master → slave, handshake (20 B + body) | state 1, `bodySize: i32`, `maxPhyOffset: i64`, `lastEpoch: i32`, then `bodySize / 12` × (`epoch: i32`, `startOffset: i64`) |
//! | master → slave, transfer (36 B + body) | state 2, `bodySize: i32`, `offset: i64`, `epoch: i32`, `epochStartOffset: i64`, `confirmOffset: i64`, then CommitLog bytes (none: a heartbeat) |
//! | slave → master, ack (12 B) | state 2, `maxOffset: i64` |
//!
//! A slave's frames carry no length: the master reads the one its connection state expects
//! (a handshake first, acks after). What must stay true: decoding is bounded before any
//! allocation — a body is at most [`MAX_TRANSFER_BODY`] (the slave's read buffer in RocketMQ)
//! or [`MAX_EPOCH_ENTRIES`] epoch entries — and a frame in an unexpected state is an error
//! (RocketMQ resets the connection), never skipped.

use thiserror::Error;

/// `HAConnectionState.HANDSHAKE`.
pub const STATE_HANDSHAKE: i32 = 1;
/// `HAConnectionState.TRANSFER`.
pub const STATE_TRANSFER: i32 = 2;

/// A slave's handshake.
pub const SLAVE_HANDSHAKE_SIZE: usize = 16;
/// A slave's ack.
pub const SLAVE_ACK_SIZE: usize = 12;
/// The master's handshake header (before its epoch entries).
pub const MASTER_HANDSHAKE_HEADER: usize = 20;
/// The master's transfer header (before the CommitLog bytes).
pub const MASTER_TRANSFER_HEADER: usize = 36;
/// One epoch entry of the master's handshake.
pub const EPOCH_ENTRY_SIZE: usize = 12;
/// The most CommitLog bytes one transfer frame carries (RocketMQ's slave reads into a 4 MiB
/// buffer; a larger frame could never be read there).
pub const MAX_TRANSFER_BODY: usize = 4 << 20;
/// The most epoch entries a master's handshake carries.
pub const MAX_EPOCH_ENTRIES: usize = 100_000;

/// Why bytes are not a frame of this protocol.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum HaFrameError {
    /// The frame's state is not the one the connection is in.
    #[error("HA frame in state {got}, expected {expected}")]
    State {
        /// The state the frame says.
        got: i32,
        /// The state the connection is in.
        expected: i32,
    },
    /// A body size out of bounds (negative, too large, or not whole epoch entries).
    #[error("HA frame body size {0} is out of bounds")]
    BodySize(i32),
}

/// A slave's first frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlaveHandshake {
    /// Start from the master's last CommitLog file when the slave is empty.
    pub sync_from_last_file: bool,
    /// The slave never joins the SyncStateSet.
    pub async_learner: bool,
    /// The slave's controller-assigned broker id.
    pub broker_id: i64,
}

/// What a slave sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlaveFrame {
    /// Its handshake.
    Handshake(SlaveHandshake),
    /// Its CommitLog end (where the master continues, and how far it has replicated).
    Ack {
        /// The slave's max physical offset.
        max_offset: i64,
    },
}

/// The master's handshake: where its CommitLog ends and its whole epoch table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MasterHandshake {
    /// The master's max physical offset.
    pub max_phy_offset: i64,
    /// The master's newest epoch.
    pub last_epoch: i32,
    /// `(epoch, start offset)`, oldest first.
    pub epochs: Vec<(i32, i64)>,
}

/// The header of a transfer frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransferHeader {
    /// The CommitLog offset of the frame's first byte.
    pub offset: i64,
    /// The epoch these bytes belong to.
    pub epoch: i32,
    /// Where that epoch starts.
    pub epoch_start_offset: i64,
    /// The master's confirm offset (what every in-sync replica holds).
    pub confirm_offset: i64,
}

/// What a master sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MasterFrame<'a> {
    /// Its handshake.
    Handshake(MasterHandshake),
    /// CommitLog bytes of one epoch (empty: a heartbeat).
    Transfer(TransferHeader, &'a [u8]),
}

fn i16_at(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

fn i32_at(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Reads one slave frame from the start of `buf` for a connection in `state`: the frame and
/// the bytes it took, `Ok(None)` when `buf` holds less than a frame.
pub fn decode_slave(buf: &[u8], state: i32) -> Result<Option<(SlaveFrame, usize)>, HaFrameError> {
    let size = match state {
        STATE_HANDSHAKE => SLAVE_HANDSHAKE_SIZE,
        _ => SLAVE_ACK_SIZE,
    };
    if buf.len() < size {
        return Ok(None);
    }
    let got = i32_at(buf, 0);
    if got != state {
        return Err(HaFrameError::State {
            got,
            expected: state,
        });
    }
    let frame = if state == STATE_HANDSHAKE {
        SlaveFrame::Handshake(SlaveHandshake {
            sync_from_last_file: i16_at(buf, 4) == 1,
            async_learner: i16_at(buf, 6) == 1,
            broker_id: i64_at(buf, 8),
        })
    } else {
        SlaveFrame::Ack {
            max_offset: i64_at(buf, 4),
        }
    };
    Ok(Some((frame, size)))
}

/// Reads one master frame from the start of `buf` for a connection in `state`: the frame and
/// the bytes it took, `Ok(None)` when `buf` holds less than a frame. The body size is checked
/// before waiting for the body, so a peer cannot make a reader buffer more than a frame's
/// bound.
pub fn decode_master(
    buf: &[u8],
    state: i32,
) -> Result<Option<(MasterFrame<'_>, usize)>, HaFrameError> {
    if buf.len() < 8 {
        return Ok(None);
    }
    let got = i32_at(buf, 0);
    if got != state || !(got == STATE_HANDSHAKE || got == STATE_TRANSFER) {
        return Err(HaFrameError::State {
            got,
            expected: state,
        });
    }
    let raw = i32_at(buf, 4);
    let body = usize::try_from(raw).map_err(|_| HaFrameError::BodySize(raw))?;
    let (header, bound) = if got == STATE_HANDSHAKE {
        (
            MASTER_HANDSHAKE_HEADER,
            MAX_EPOCH_ENTRIES * EPOCH_ENTRY_SIZE,
        )
    } else {
        (MASTER_TRANSFER_HEADER, MAX_TRANSFER_BODY)
    };
    if body > bound || (got == STATE_HANDSHAKE && body % EPOCH_ENTRY_SIZE != 0) {
        return Err(HaFrameError::BodySize(raw));
    }
    if buf.len() < header + body {
        return Ok(None);
    }
    let bytes = &buf[header..header + body];
    let frame = if got == STATE_HANDSHAKE {
        let epochs = bytes
            .chunks_exact(EPOCH_ENTRY_SIZE)
            .map(|e| (i32_at(e, 0), i64_at(e, 4)))
            .collect();
        MasterFrame::Handshake(MasterHandshake {
            max_phy_offset: i64_at(buf, 8),
            last_epoch: i32_at(buf, 16),
            epochs,
        })
    } else {
        MasterFrame::Transfer(
            TransferHeader {
                offset: i64_at(buf, 8),
                epoch: i32_at(buf, 16),
                epoch_start_offset: i64_at(buf, 20),
                confirm_offset: i64_at(buf, 28),
            },
            bytes,
        )
    };
    Ok(Some((frame, header + body)))
}

/// A slave's frame in wire form.
pub fn encode_slave(frame: &SlaveFrame) -> Vec<u8> {
    let mut out = Vec::with_capacity(SLAVE_HANDSHAKE_SIZE);
    match frame {
        SlaveFrame::Handshake(h) => {
            out.extend_from_slice(&STATE_HANDSHAKE.to_be_bytes());
            out.extend_from_slice(&i16::from(h.sync_from_last_file).to_be_bytes());
            out.extend_from_slice(&i16::from(h.async_learner).to_be_bytes());
            out.extend_from_slice(&h.broker_id.to_be_bytes());
        }
        SlaveFrame::Ack { max_offset } => {
            out.extend_from_slice(&STATE_TRANSFER.to_be_bytes());
            out.extend_from_slice(&max_offset.to_be_bytes());
        }
    }
    out
}

/// The master's handshake in wire form; `None` when its table is over [`MAX_EPOCH_ENTRIES`].
pub fn encode_master_handshake(h: &MasterHandshake) -> Option<Vec<u8>> {
    if h.epochs.len() > MAX_EPOCH_ENTRIES {
        return None;
    }
    let body = h.epochs.len() * EPOCH_ENTRY_SIZE;
    let mut out = Vec::with_capacity(MASTER_HANDSHAKE_HEADER + body);
    out.extend_from_slice(&STATE_HANDSHAKE.to_be_bytes());
    out.extend_from_slice(&(body as i32).to_be_bytes());
    out.extend_from_slice(&h.max_phy_offset.to_be_bytes());
    out.extend_from_slice(&h.last_epoch.to_be_bytes());
    for (epoch, start) in &h.epochs {
        out.extend_from_slice(&epoch.to_be_bytes());
        out.extend_from_slice(&start.to_be_bytes());
    }
    Some(out)
}

/// A transfer frame's header for `body_len` CommitLog bytes (the caller writes the bytes
/// after it); `None` when `body_len` is over [`MAX_TRANSFER_BODY`].
pub fn encode_transfer_header(h: &TransferHeader, body_len: usize) -> Option<[u8; 36]> {
    if body_len > MAX_TRANSFER_BODY {
        return None;
    }
    let mut out = [0u8; MASTER_TRANSFER_HEADER];
    out[0..4].copy_from_slice(&STATE_TRANSFER.to_be_bytes());
    out[4..8].copy_from_slice(&(body_len as i32).to_be_bytes());
    out[8..16].copy_from_slice(&h.offset.to_be_bytes());
    out[16..20].copy_from_slice(&h.epoch.to_be_bytes());
    out[20..28].copy_from_slice(&h.epoch_start_offset.to_be_bytes());
    out[28..36].copy_from_slice(&h.confirm_offset.to_be_bytes());
    Some(out)
}

#[cfg(test)]
#[path = "ha_autoswitch_tests.rs"]
mod tests;
