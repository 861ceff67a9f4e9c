//! Offset message ids: the uppercase hex of the storing broker's address (IPv4 or IPv6, then
//! the port as an i32) and the record's physical offset (i64) — 32 or 56 digits, as RocketMQ's
//! `MessageDecoder.createMessageId` writes them.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::error::{ProtocolError, Result};

/// The offset message id: uppercase hex of store ip + port (i32) + physical offset (i64).
pub fn offset_msg_id(store_host: &SocketAddr, physical_offset: i64) -> String {
    let mut out = String::with_capacity(56);
    push_offset_msg_id(&mut out, store_host, physical_offset);
    out
}

/// Appends the offset message id of [`offset_msg_id`] to `out`: a batch's answer writes all of
/// its ids into one string (no string per message).
pub fn push_offset_msg_id(out: &mut String, store_host: &SocketAddr, physical_offset: i64) {
    // On stack buffers: this runs for every stored message.
    let mut raw = [0u8; 28];
    let ip_len = match store_host.ip() {
        IpAddr::V4(ip) => {
            raw[..4].copy_from_slice(&ip.octets());
            4
        }
        IpAddr::V6(ip) => {
            raw[..16].copy_from_slice(&ip.octets());
            16
        }
    };
    raw[ip_len..ip_len + 4].copy_from_slice(&(store_host.port() as i32).to_be_bytes());
    raw[ip_len + 4..ip_len + 12].copy_from_slice(&physical_offset.to_be_bytes());
    let mut digits = [0u8; 56];
    let n = hex_into(&raw[..ip_len + 12], &mut digits);
    out.push_str(std::str::from_utf8(&digits[..n]).expect("hex digits are ASCII"));
}

/// Parses an offset message id back into (store host, physical offset).
pub fn parse_offset_msg_id(id: &str) -> Result<(SocketAddr, i64)> {
    let bad = || ProtocolError::InvalidArgument(format!("not an offset message id: {id:?}"));
    if !id.is_ascii() || !(id.len() == 32 || id.len() == 56) {
        return Err(bad());
    }
    let raw: Vec<u8> = (0..id.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&id[i..i + 2], 16))
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| bad())?;
    let ip_len = raw.len() - 12;
    let ip = if ip_len == 4 {
        IpAddr::V4(Ipv4Addr::new(raw[0], raw[1], raw[2], raw[3]))
    } else {
        let mut a = [0u8; 16];
        a.copy_from_slice(&raw[..16]);
        IpAddr::from(a)
    };
    let port = i32::from_be_bytes([
        raw[ip_len],
        raw[ip_len + 1],
        raw[ip_len + 2],
        raw[ip_len + 3],
    ]);
    let mut off = [0u8; 8];
    off.copy_from_slice(&raw[ip_len + 4..]);
    Ok((SocketAddr::new(ip, port as u16), i64::from_be_bytes(off)))
}

/// Uppercase hex.
pub fn hex_upper(raw: &[u8]) -> String {
    if raw.len() <= 28 {
        // Offset ids (every stored message): digits on the stack, then one exact allocation
        // (no zeroed buffer, no per-char pushes).
        let mut buf = [0u8; 56];
        let n = hex_into(raw, &mut buf);
        return std::str::from_utf8(&buf[..n])
            .expect("hex digits are ASCII")
            .to_owned();
    }
    let mut buf = vec![0u8; raw.len() * 2];
    hex_into(raw, &mut buf);
    String::from_utf8(buf).expect("hex digits are ASCII")
}

/// Writes the uppercase hex of `raw` at the start of `out` (at least twice as long); returns
/// the digits written.
pub fn hex_into(raw: &[u8], out: &mut [u8]) -> usize {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for (pair, b) in out.chunks_exact_mut(2).zip(raw) {
        pair[0] = HEX[(b >> 4) as usize];
        pair[1] = HEX[(b & 0xF) as usize];
    }
    raw.len() * 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_upper_short_and_long() {
        for n in [0usize, 1, 12, 28, 29, 40] {
            let raw: Vec<u8> = (0..n).map(|i| (i * 37 + 11) as u8).collect();
            let want: String = raw.iter().map(|b| format!("{b:02X}")).collect();
            assert_eq!(hex_upper(&raw), want);
        }
    }

    #[test]
    fn offset_msg_id_round_trip() {
        let host: SocketAddr = "192.168.1.20:10911".parse().unwrap();
        let id = offset_msg_id(&host, 0x1234);
        assert_eq!(id, "C0A8011400002A9F0000000000001234");
        assert_eq!(parse_offset_msg_id(&id).unwrap(), (host, 0x1234));
        assert!(parse_offset_msg_id("XYZ").is_err());
        assert!(parse_offset_msg_id("ZZA8011400002A9F0000000000001234").is_err());
    }

    #[test]
    fn pushed_ids_are_the_formatted_ones() {
        let v4: SocketAddr = "127.0.0.1:10911".parse().unwrap();
        let v6: SocketAddr = "[::1]:10911".parse().unwrap();
        let mut joined = String::new();
        push_offset_msg_id(&mut joined, &v4, 7);
        joined.push(',');
        push_offset_msg_id(&mut joined, &v6, 1 << 40);
        assert_eq!(
            joined,
            format!("{},{}", offset_msg_id(&v4, 7), offset_msg_id(&v6, 1 << 40))
        );
        assert_eq!(
            parse_offset_msg_id(&offset_msg_id(&v6, 1 << 40)).unwrap(),
            (v6, 1 << 40)
        );
    }
}
