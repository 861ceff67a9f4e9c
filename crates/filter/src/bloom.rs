//! RocketMQ's bloom filter of consumer filters (its filter module's `BloomFilter`): each
//! (group, topic) SQL92 filter owns `k` of `m` bits, placed by hashing `group#topic`; at
//! dispatch a message's bit map gets the bits of every filter it matches, so a read for one
//! filter skips a message whose bits are not all set without reading the message.
//!
//! What must stay true (the bits are on disk, in the consume-queue ext file, and must mean
//! the same to RocketMQ): `k = ceil(ln(f/100) / ln(1/2))`, `m = ceil(n * log2(100/f) *
//! log2(e))` rounded up to a multiple of 8; positions from the first 64 bits of
//! MurmurHash3 x64 128 (seed 0) of the key's UTF-8, split into low and high i32 `a`, `b`:
//! `a + i*b` for i in 1..=k (wrapping), bit-inverted when negative, modulo `m`; bit `i`
//! is bit `i % 8` (least significant first) of byte `i / 8`.

use std::io::Cursor;

/// A bloom filter's shape: `k` bits of `m` per key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BloomFilter {
    k: usize,
    m: usize,
}

/// One key's bit positions in a filter of `m` bits (RocketMQ's `BloomFilterData`: `bitPos`,
/// `bitNum`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BloomBits {
    pub positions: Vec<u32>,
    pub bit_num: u32,
}

impl BloomFilter {
    /// The filter for `n` expected keys with a false-positive rate of `f` percent
    /// (RocketMQ's `createByFn`; `f` in 1..=99 and `n` >= 1, else Err).
    pub fn create(f: i32, n: i32) -> Result<BloomFilter, String> {
        if !(1..100).contains(&f) || n < 1 {
            return Err(format!(
                "a bloom filter needs an error rate of 1..99 % and at least one key, not {f} % and {n}"
            ));
        }
        let e = f64::from(f) / 100.0;
        let k = (e.ln() / 0.5f64.ln()).ceil() as usize;
        let m = (f64::from(n) * ((1.0 / e).ln() / 2f64.ln()) * (1.0 / 2f64.ln())).ceil() as usize;
        let m = m.div_ceil(8) * 8;
        Ok(BloomFilter { k, m: m.max(8) })
    }

    /// Bits per key.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Bits in all (a bit map is `m / 8` bytes).
    pub fn m(&self) -> usize {
        self.m
    }

    /// Bytes of a bit map.
    pub fn bytes(&self) -> usize {
        self.m / 8
    }

    /// The bits of `key` (RocketMQ's `generate`; the broker's key is `group#topic`).
    pub fn generate(&self, key: &str) -> BloomBits {
        let digest = murmur3::murmur3_x64_128(&mut Cursor::new(key.as_bytes()), 0)
            .expect("reading from memory cannot fail");
        // Guava's `asLong()`: the first 8 bytes of the little-endian digest, h1.
        let h1 = digest as u64;
        let (a, b) = (h1 as u32 as i32, (h1 >> 32) as u32 as i32);
        let positions = (1..=self.k as i32)
            .map(|i| {
                let c = a.wrapping_add(i.wrapping_mul(b));
                let c = if c < 0 { !c } else { c };
                (c as u32) % self.m as u32
            })
            .collect();
        BloomBits {
            positions,
            bit_num: self.m as u32,
        }
    }

    /// Whether `bits` belong to this filter (RocketMQ's `isValid`): same `m`, `k` positions.
    pub fn is_valid(&self, bits: &BloomBits) -> bool {
        bits.bit_num as usize == self.m && bits.positions.len() == self.k
    }

    /// Sets `bits`' positions in `map` (RocketMQ's `hashTo`).
    pub fn set(&self, bits: &BloomBits, map: &mut [u8]) {
        for &p in &bits.positions {
            if let Some(byte) = map.get_mut(p as usize / 8) {
                *byte |= 1 << (p % 8);
            }
        }
    }

    /// Whether all of `bits`' positions are set in `map` (RocketMQ's `isHit`); a map of
    /// another length is a hit (it cannot rule anything out).
    pub fn is_hit(&self, bits: &BloomBits, map: &[u8]) -> bool {
        if map.len() * 8 != self.m || !self.is_valid(bits) {
            return true;
        }
        bits.positions
            .iter()
            .all(|&p| map[p as usize / 8] & (1 << (p % 8)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_rocketmqs() {
        let shape = |f, n| {
            let b = BloomFilter::create(f, n).unwrap();
            (b.k(), b.m())
        };
        assert_eq!(
            shape(20, 32),
            (3, 112),
            "the broker's defaults: 14-byte bit maps"
        );
        assert_eq!(shape(20, 64), (3, 216));
        assert_eq!(shape(10, 20), (4, 96));
        assert_eq!(shape(1, 300), (7, 2880));
        assert_eq!(shape(10, 128), (4, 616));
        assert!(BloomFilter::create(0, 10).is_err());
        assert!(BloomFilter::create(100, 10).is_err());
        assert!(BloomFilter::create(20, 0).is_err());
    }

    #[test]
    fn murmur3_is_guavas() {
        // Guava's test vector for murmur3_128: h1 is the digest's first 8 bytes.
        let key = "The quick brown fox jumps over the lazy dog";
        let digest = murmur3::murmur3_x64_128(&mut Cursor::new(key.as_bytes()), 0).unwrap();
        assert_eq!(digest as u64, 0xe34b_bc7b_bc07_1b6c);
    }

    #[test]
    fn positions_match_rocketmqs() {
        let default = BloomFilter::create(20, 32).unwrap();
        let other = BloomFilter::create(10, 20).unwrap();
        assert_eq!(default.generate("CID_abc_efg").positions, [49, 97, 110]);
        assert_eq!(other.generate("CID_abc_efg").positions, [49, 17, 78, 14]);
        assert_eq!(default.generate("CID_abc_123").positions, [17, 39, 50]);
        assert_eq!(default.generate("group1#TopicTest").positions, [79, 5, 68]);
        assert_eq!(
            other.generate("group1#TopicTest").positions,
            [79, 69, 36, 46]
        );
        assert_eq!(default.generate("中文#t").positions, [34, 72, 33]);
    }

    #[test]
    fn set_and_hit() {
        let b = BloomFilter::create(20, 32).unwrap();
        let x = b.generate("g1#T");
        let y = b.generate("g2#T");
        let mut map = vec![0u8; b.bytes()];
        assert!(!b.is_hit(&x, &map));
        b.set(&x, &mut map);
        assert!(b.is_hit(&x, &map));
        // Bit 49 is byte 6, mask 1 << 1 (least significant bit first).
        let mut m2 = vec![0u8; b.bytes()];
        b.set(
            &BloomBits {
                positions: vec![49],
                bit_num: 112,
            },
            &mut m2,
        );
        assert_eq!(m2[6], 0b10);
        assert!(b.is_hit(&y, &[0u8; 3]), "another length rules nothing out");
        let _ = y;
    }
}
