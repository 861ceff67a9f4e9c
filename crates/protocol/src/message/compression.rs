//! Message bodies stored with the COMPRESSED sysFlag bit: zlib, as RocketMQ's producers write
//! them above `compressMsgBodyOverHowmuch`.

use std::io::Read;

/// Largest body a compressed message may inflate to (a zip bomb must not exhaust memory).
pub const MAX_INFLATED: u64 = 64 * 1024 * 1024;

/// Inflates a body stored with the COMPRESSED flag.
pub fn inflate(body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(body.len() * 4);
    flate2::read::ZlibDecoder::new(body)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("compressed body does not inflate: {e}"))?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(format!(
            "compressed body inflates past {MAX_INFLATED} bytes"
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn inflates_zlib_and_refuses_garbage() {
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(5));
        enc.write_all(&b"hello ".repeat(100)).unwrap();
        let packed = enc.finish().unwrap();
        assert_eq!(inflate(&packed).unwrap(), b"hello ".repeat(100));
        assert!(inflate(b"not zlib").is_err());
    }
}
