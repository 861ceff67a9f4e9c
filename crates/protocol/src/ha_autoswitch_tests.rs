//! Controller mode's HA frames: RocketMQ's layouts byte for byte, partial input, bounds.

use super::*;

#[test]
fn slave_frames_are_rocketmqs_layouts() {
    let hs = SlaveFrame::Handshake(SlaveHandshake {
        sync_from_last_file: true,
        async_learner: false,
        broker_id: 2,
    });
    let bytes = encode_slave(&hs);
    assert_eq!(bytes, [0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    assert_eq!(
        decode_slave(&bytes, STATE_HANDSHAKE).unwrap(),
        Some((hs, 16))
    );
    let ack = SlaveFrame::Ack { max_offset: 4096 };
    let bytes = encode_slave(&ack);
    assert_eq!(bytes, [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0x10, 0]);
    assert_eq!(
        decode_slave(&bytes, STATE_TRANSFER).unwrap(),
        Some((ack, 12))
    );
    assert_eq!(decode_slave(&bytes[..11], STATE_TRANSFER).unwrap(), None);
    // An ack while the master waits for a handshake: an error, not a skip.
    let early = [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0];
    assert!(decode_slave(&early, STATE_HANDSHAKE).is_err());
}

#[test]
fn the_masters_handshake_carries_its_epoch_table() {
    let h = MasterHandshake {
        max_phy_offset: 10_240,
        last_epoch: 3,
        epochs: vec![(1, 0), (3, 5120)],
    };
    let bytes = encode_master_handshake(&h).unwrap();
    assert_eq!(bytes.len(), 20 + 24);
    assert_eq!(&bytes[..8], &[0, 0, 0, 1, 0, 0, 0, 24]);
    let (frame, used) = decode_master(&bytes, STATE_HANDSHAKE).unwrap().unwrap();
    assert_eq!((frame, used), (MasterFrame::Handshake(h), 44));
    assert_eq!(decode_master(&bytes[..43], STATE_HANDSHAKE).unwrap(), None);
}

#[test]
fn transfer_frames_carry_one_epochs_bytes() {
    let h = TransferHeader {
        offset: 4096,
        epoch: 2,
        epoch_start_offset: 1024,
        confirm_offset: 2048,
    };
    let mut bytes = encode_transfer_header(&h, 5).unwrap().to_vec();
    bytes.extend_from_slice(b"hello");
    bytes.extend_from_slice(b"next frame");
    let (frame, used) = decode_master(&bytes, STATE_TRANSFER).unwrap().unwrap();
    assert_eq!(frame, MasterFrame::Transfer(h, b"hello"));
    assert_eq!(used, 41);
    // A heartbeat: no bytes.
    let beat = encode_transfer_header(&h, 0).unwrap();
    let (frame, used) = decode_master(&beat, STATE_TRANSFER).unwrap().unwrap();
    assert_eq!((frame, used), (MasterFrame::Transfer(h, b""), 36));
}

#[test]
fn sizes_are_checked_before_any_body_is_awaited() {
    let mut huge = encode_transfer_header(
        &TransferHeader {
            offset: 0,
            epoch: 1,
            epoch_start_offset: 0,
            confirm_offset: 0,
        },
        0,
    )
    .unwrap();
    huge[4..8].copy_from_slice(&((MAX_TRANSFER_BODY + 1) as i32).to_be_bytes());
    assert!(matches!(
        decode_master(&huge, STATE_TRANSFER),
        Err(HaFrameError::BodySize(_))
    ));
    huge[4..8].copy_from_slice(&(-1i32).to_be_bytes());
    assert!(decode_master(&huge, STATE_TRANSFER).is_err());
    // A handshake body that is not whole entries.
    let mut odd = encode_master_handshake(&MasterHandshake {
        max_phy_offset: 0,
        last_epoch: 1,
        epochs: vec![],
    })
    .unwrap();
    odd[4..8].copy_from_slice(&13i32.to_be_bytes());
    assert!(decode_master(&odd, STATE_HANDSHAKE).is_err());
    // Unknown or unexpected states.
    assert!(decode_master(&[0, 0, 0, 9, 0, 0, 0, 0], 9).is_err());
    assert!(decode_master(&odd, STATE_TRANSFER).is_err());
    assert_eq!(decode_master(&[0, 0, 0], STATE_TRANSFER).unwrap(), None);
}
