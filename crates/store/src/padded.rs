//! A value alone on its cache lines.
//!
//! The put path takes a few locks and bumps a few atomics per message while other threads
//! (the index, flush and prefault threads, readers, other writers) update their own atomics.
//! When two of those share a 64-byte line, every write by one core steals the line from the
//! other (false sharing): measured as most of the put path's time in one `lock cmpxchg`.
//! 128 bytes because adjacent-line prefetch pairs lines on x86.

use std::ops::{Deref, DerefMut};

/// `T` aligned (and so padded) to 128 bytes.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Padded<T>(pub T);

impl<T> Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Padded<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}
