//! The messages pulled from one queue and not consumed yet, by queue offset: a consumer's
//! process queue (RocketMQ's `ProcessQueue.msgTreeMap`), touched twice per message (pulled,
//! consumed), so its per-message cost is the consumer's.
//!
//! Pulls bring offsets in ascending order, each batch beyond the last, and consumers mostly
//! finish them in that order: the waiting messages are a deque sorted by offset, appended at
//! the back, looked up by binary search, and a consumed message leaves a hole that is dropped
//! once it reaches the front. (A B-tree pays a search and a rebalance per message instead.)
//!
//! What stays true: `ready` is sorted by offset, holes included, and its front is never a
//! hole; `ready` and `consuming` never share an offset; `live` counts `ready`'s non-holes;
//! `size` is the body bytes of both; `max_offset` is the largest offset ever put (-1 before
//! any). The offset to commit is the smallest offset waiting in `ready`, or one past
//! `max_offset` when none waits — an orderly consumer commits its `consuming` set itself.

use std::collections::{BTreeMap, VecDeque};

/// One waiting message (`item` None: consumed, a hole).
struct Slot<T> {
    offset: i64,
    size: u32,
    item: Option<T>,
}

/// Pulled, unconsumed messages of one queue (`T`: the message object).
pub struct Pending<T> {
    ready: VecDeque<Slot<T>>,
    live: usize,
    consuming: BTreeMap<i64, (u32, T)>,
    size: i64,
    max_offset: i64,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Pending {
            ready: VecDeque::new(),
            live: 0,
            consuming: BTreeMap::new(),
            size: 0,
            max_offset: -1,
        }
    }
}

impl<T> Pending<T> {
    /// Adds a pulled message of `size` body bytes; false (and `item` dropped) when its
    /// offset is held already.
    pub fn put(&mut self, offset: i64, size: u32, item: T) -> bool {
        if self.consuming.contains_key(&offset) {
            return false;
        }
        let at = match self.ready.back() {
            Some(last) if last.offset >= offset => match self.find(offset) {
                Ok(i) if self.ready[i].item.is_some() => return false,
                // A consumed offset pulled again (a seek back) waits again.
                Ok(i) => {
                    self.ready[i].size = size;
                    self.ready[i].item = Some(item);
                    self.held(size, offset);
                    return true;
                }
                Err(i) => i,
            },
            _ => self.ready.len(),
        };
        self.insert_new(at, offset, size, item);
        true
    }

    /// Adds one pull's messages (offset, body bytes, item); those whose offset is held
    /// already are dropped. Linear in the batch and what waits, whatever the order the
    /// broker sent them in: a batch that is not ascending is sorted first, and one that
    /// falls among the waiting offsets is merged in one pass (inserting each would move
    /// half the deque each time).
    pub fn put_all(&mut self, mut items: Vec<(i64, u32, T)>) {
        if !items.windows(2).all(|w| w[0].0 < w[1].0) {
            items.sort_by_key(|i| i.0); // stable: of equal offsets the first stays
            items.dedup_by_key(|i| i.0);
        }
        let beyond = match (self.ready.back(), items.first()) {
            (Some(last), Some(first)) => first.0 > last.offset,
            _ => true,
        };
        if beyond || items.len() == 1 {
            for (offset, size, item) in items {
                self.put(offset, size, item);
            }
            return;
        }
        let waiting = std::mem::take(&mut self.ready);
        self.ready.reserve(waiting.len() + items.len());
        let mut new = items.into_iter().peekable();
        for slot in waiting {
            while let Some((offset, size, item)) = new.next_if(|i| i.0 < slot.offset) {
                self.push_new(offset, size, item);
            }
            match new.next_if(|i| i.0 == slot.offset) {
                Some((offset, size, item)) if slot.item.is_none() => {
                    self.push_new(offset, size, item)
                }
                _ => self.ready.push_back(slot),
            }
        }
        for (offset, size, item) in new {
            self.push_new(offset, size, item);
        }
    }

    /// Appends a message known to go after every waiting one (`put_all`'s merge), unless
    /// it is consuming.
    fn push_new(&mut self, offset: i64, size: u32, item: T) {
        if !self.consuming.contains_key(&offset) {
            self.insert_new(self.ready.len(), offset, size, item);
        }
    }

    /// Puts a message not held yet at `at` of the waiting ones.
    fn insert_new(&mut self, at: usize, offset: i64, size: u32, item: T) {
        let item = Some(item);
        self.ready.insert(at, Slot { offset, size, item });
        self.held(size, offset);
    }

    fn held(&mut self, size: u32, offset: i64) {
        self.live += 1;
        self.size += i64::from(size);
        self.max_offset = self.max_offset.max(offset);
    }

    fn find(&self, offset: i64) -> Result<usize, usize> {
        self.ready.binary_search_by_key(&offset, |s| s.offset)
    }

    /// Removes the waiting message at `offset` (consumed); returns it, None when it is not
    /// waiting. Call [`Pending::commit_offset`] after a run of removals.
    pub fn remove(&mut self, offset: i64) -> Option<T> {
        // Consumers finish mostly in order: the front is the likely place.
        let i = match self.ready.front() {
            Some(first) if first.offset == offset => 0,
            _ => self.find(offset).ok()?,
        };
        let slot = &mut self.ready[i];
        let item = slot.item.take()?;
        self.live -= 1;
        self.size -= i64::from(slot.size);
        self.drop_front_holes();
        Some(item)
    }

    fn drop_front_holes(&mut self) {
        while self.ready.front().is_some_and(|s| s.item.is_none()) {
            self.ready.pop_front();
        }
    }

    /// The offset to commit: the smallest waiting, or one past the largest ever put when
    /// none waits; -1 if nothing was ever put.
    pub fn commit_offset(&self) -> i64 {
        if self.max_offset < 0 {
            return -1;
        }
        match self.ready.front() {
            Some(first) => first.offset,
            None => self.max_offset + 1,
        }
    }

    /// Moves the first `n` waiting messages to the consuming set (orderly consumption);
    /// `each` sees each of them.
    pub fn take(&mut self, n: usize, mut each: impl FnMut(&T)) {
        let mut taken = 0;
        while taken < n {
            let Some(slot) = self.ready.pop_front() else {
                break;
            };
            if let Some(item) = slot.item {
                each(&item);
                self.live -= 1;
                self.consuming.insert(slot.offset, (slot.size, item));
                taken += 1;
            }
        }
        self.drop_front_holes();
    }

    /// The consuming set is done: returns the offset to commit (one past its largest), or
    /// -1 when it is empty.
    pub fn commit(&mut self) -> i64 {
        let Some(&last) = self.consuming.keys().next_back() else {
            return -1;
        };
        let done: i64 = self.consuming.values().map(|(s, _)| i64::from(*s)).sum();
        self.size -= done;
        self.consuming.clear();
        last + 1
    }

    /// Puts `item` (the consuming message at `offset`, or its new copy: reconsume times
    /// counted) back among the waiting ones, to be handed out again (orderly).
    pub fn consume_again(&mut self, offset: i64, size: u32, item: T) {
        if let Some((held, _)) = self.consuming.remove(&offset) {
            self.size -= i64::from(held);
        }
        let max = self.max_offset;
        self.put(offset, size, item);
        self.max_offset = max;
    }

    /// Messages waiting (consuming ones excluded).
    pub fn pending(&self) -> usize {
        self.live
    }

    /// Messages held, consuming ones included.
    pub fn count(&self) -> usize {
        self.live + self.consuming.len()
    }

    /// Body bytes held.
    pub fn size(&self) -> i64 {
        self.size
    }

    /// The largest offset ever put (-1 before any).
    pub fn max_offset(&self) -> i64 {
        self.max_offset
    }

    /// Largest offset put minus the smallest waiting (0 when none waits).
    pub fn span(&self) -> i64 {
        self.ready
            .front()
            .map_or(0, |first| self.max_offset - first.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(offsets: impl IntoIterator<Item = i64>) -> Pending<i64> {
        let mut t = Pending::default();
        for o in offsets {
            t.put(o, (o + 1) as u32, o);
        }
        t
    }

    #[test]
    fn consumed_out_of_order_commits_the_smallest_still_waiting() {
        let mut t: Pending<i64> = Pending::default();
        assert_eq!(t.commit_offset(), -1, "nothing was ever held");
        assert_eq!(t.remove(0), None);
        for o in 0..4 {
            assert!(t.put(o, (o + 1) as u32, o));
        }
        assert!(!t.put(2, 3, 2), "an offset held is skipped");
        for o in 4..6 {
            t.put(o, (o + 1) as u32, o);
        }
        assert_eq!(
            (t.count(), t.pending(), t.size(), t.max_offset(), t.span()),
            (6, 6, 21, 5, 5)
        );
        assert_eq!((t.remove(1), t.remove(3)), (Some(1), Some(3)));
        assert_eq!(t.commit_offset(), 0);
        assert_eq!(t.remove(0), Some(0));
        assert_eq!(t.commit_offset(), 2, "the holes at the front are gone");
        assert_eq!(t.remove(3), None, "consumed already");
        for o in [2, 4, 5] {
            t.remove(o);
        }
        assert_eq!(
            (t.commit_offset(), t.count(), t.size(), t.span()),
            (6, 0, 0, 0)
        );
    }

    #[test]
    fn late_and_repeated_offsets_land_in_order() {
        let mut t = table([10, 12, 14]);
        assert!(t.put(11, 12, 11), "a gap filled later goes in its place");
        t.remove(10);
        assert_eq!(t.commit_offset(), 11);
        assert!(
            t.put(10, 11, 10),
            "a consumed offset pulled again waits again"
        );
        assert_eq!(t.commit_offset(), 10);
        assert_eq!((t.pending(), t.max_offset()), (4, 14));
        t.remove(12);
        assert!(t.put(12, 13, 12), "a hole in the middle is filled again");
        assert_eq!(t.pending(), 4);
    }

    #[test]
    fn batches_in_any_order_are_merged_in_order() {
        let mut t = table([2, 4, 6, 8]);
        t.remove(4);
        // Descending, with a duplicate, a held offset (6) and a consumed one (4).
        t.put_all(vec![
            (9, 1, 9),
            (7, 1, 7),
            (6, 1, 66),
            (5, 1, 5),
            (4, 1, 44),
            (3, 1, 3),
            (3, 1, 33),
            (1, 1, 1),
        ]);
        let waiting: Vec<(i64, Option<i64>)> = t.ready.iter().map(|s| (s.offset, s.item)).collect();
        let want = [1, 2, 3, 4, 5, 6, 7, 8, 9].map(|o| (o, Some(o)));
        let want: Vec<_> = want
            .into_iter()
            .map(|(o, v)| (o, if o == 4 { Some(44) } else { v }))
            .collect();
        assert_eq!(
            waiting, want,
            "held 6 kept, hole 4 filled, first of two 3s kept"
        );
        assert_eq!((t.pending(), t.max_offset(), t.commit_offset()), (9, 9, 1));
        t.put_all(vec![(11, 1, 11), (10, 1, 10)]);
        assert_eq!((t.pending(), t.max_offset()), (11, 11));
    }

    #[test]
    fn a_large_interleaved_batch_costs_a_merge() {
        // 200,000 alternate offsets against as many waiting: a pass, not 10^10 moves.
        let mut t: Pending<()> = Pending::default();
        t.put_all((0..200_000).map(|i| (2 * i, 1, ())).collect());
        t.put_all((0..200_000).rev().map(|i| (2 * i + 1, 1, ())).collect());
        assert_eq!(
            (t.pending(), t.commit_offset(), t.max_offset()),
            (400_000, 0, 399_999)
        );
        for o in 0..400_000 {
            assert!(t.remove(o).is_some());
        }
        assert_eq!(t.commit_offset(), 400_000);
    }

    #[test]
    fn orderly_takes_commits_and_consumes_again() {
        let mut t = table(0..6);
        let mut seen = vec![];
        t.take(4, |&o| seen.push(o));
        assert_eq!(seen, [0, 1, 2, 3]);
        assert_eq!((t.pending(), t.count()), (2, 6));
        assert!(!t.put(1, 2, 1), "a consuming offset is held");
        t.consume_again(3, 4, 33);
        t.consume_again(2, 3, 22);
        assert_eq!(
            (t.pending(), t.count(), t.size(), t.max_offset()),
            (4, 6, 21, 5)
        );
        seen.clear();
        t.take(2, |&o| seen.push(o));
        assert_eq!(seen, [22, 33], "the copies given back are handed out");
        assert_eq!((t.commit(), t.commit()), (4, -1));
        assert_eq!((t.count(), t.size(), t.commit_offset()), (2, 11, 4));
    }
}
