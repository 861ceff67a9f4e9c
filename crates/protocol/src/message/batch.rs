//! The SEND_BATCH_MESSAGE body: the messages of one batch, each with its flag, body and
//! properties (RocketMQ's `MessageDecoder.encodeMessages`). All integers big-endian:
//!
//! ```text
//! repeated [totalSize i32][magic i32][bodyCRC i32][flag i32][bodyLen i32][body]
//!          [propLen i16][properties]
//! ```

/// One message of a SEND_BATCH_MESSAGE body; its properties borrowed from the body (no copy
/// per message: a batch of small messages is mostly its properties).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchItem<'a> {
    pub flag: i32,
    pub body: bytes::Bytes,
    pub properties: &'a str,
}

/// Appends one message to a SEND_BATCH_MESSAGE body (the layout [`decode_batch`] reads; magic
/// and CRC are 0, as RocketMQ's client sends them).
pub fn encode_batch_item(
    out: &mut Vec<u8>,
    flag: i32,
    body: &[u8],
    properties: &str,
) -> Result<(), String> {
    let prop_len = i16::try_from(properties.len())
        .map_err(|_| "properties of a batched message exceed 32767 bytes".to_owned())?;
    let total = i32::try_from(22 + body.len() + properties.len())
        .map_err(|_| "a batched message exceeds 2 GiB".to_owned())?;
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
    out.extend_from_slice(&flag.to_be_bytes());
    out.extend_from_slice(&(body.len() as i32).to_be_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&prop_len.to_be_bytes());
    out.extend_from_slice(properties.as_bytes());
    Ok(())
}

/// Decodes a SEND_BATCH_MESSAGE body: repeated `[totalSize i32][magic i32][bodyCRC i32]
/// [flag i32][bodyLen i32][body][propLen i16][properties]`, big-endian (RocketMQ's
/// `MessageDecoder.encodeMessages`).
pub fn decode_batch(body: &bytes::Bytes) -> Result<Vec<BatchItem<'_>>, String> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let be_i32 = |b: &[u8]| i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    while pos < body.len() {
        let rest = &body[pos..];
        if rest.len() < 22 {
            return Err(format!("message {} of the batch is truncated", out.len()));
        }
        let total = be_i32(&rest[0..4]);
        let flag = be_i32(&rest[12..16]);
        let body_len = be_i32(&rest[16..20]);
        if total < 22
            || body_len < 0
            || total as usize > rest.len()
            || 20 + body_len as usize + 2 > total as usize
        {
            return Err(format!(
                "message {} of the batch has inconsistent sizes (total {total}, body {body_len})",
                out.len()
            ));
        }
        let body_end = 20 + body_len as usize;
        let prop_len = i16::from_be_bytes([rest[body_end], rest[body_end + 1]]);
        if prop_len < 0 || body_end + 2 + prop_len as usize != total as usize {
            return Err(format!(
                "message {} of the batch has inconsistent property length {prop_len}",
                out.len()
            ));
        }
        let props = std::str::from_utf8(&rest[body_end + 2..total as usize]).map_err(|_| {
            format!(
                "message {} of the batch has non-UTF-8 properties",
                out.len()
            )
        })?;
        out.push(BatchItem {
            flag,
            body: body.slice(pos + 20..pos + body_end),
            properties: props,
        });
        pos += total as usize;
    }
    if out.is_empty() {
        return Err("the batch is empty".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch_item(flag: i32, body: &[u8], props: &str) -> Vec<u8> {
        let mut out = Vec::new();
        encode_batch_item(&mut out, flag, body, props).unwrap();
        out
    }

    #[test]
    fn batch_body_round_trip_and_garbage() {
        let mut body = batch_item(1, b"first", "TAGS\u{1}A\u{2}");
        body.extend(batch_item(2, b"", ""));
        let whole = bytes::Bytes::from(body.clone());
        let items = decode_batch(&whole).unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(
            (items[0].flag, &items[0].body[..], items[0].properties),
            (1, &b"first"[..], "TAGS\u{1}A\u{2}")
        );
        assert_eq!((items[1].flag, items[1].body.len()), (2, 0));
        assert!(decode_batch(&bytes::Bytes::from(body[..body.len() - 1].to_vec())).is_err());
        assert!(decode_batch(&bytes::Bytes::new()).is_err());
        let mut lying = body.clone();
        lying[19] = 200; // body length past the item
        assert!(decode_batch(&bytes::Bytes::from(lying)).is_err());
        assert!(decode_batch(&bytes::Bytes::from_static(&[
            0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
        ]))
        .is_err());
    }
}
