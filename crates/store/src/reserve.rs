//! Disk blocks for a sparse file, given just ahead of its writer (see [`Region::reserve`]):
//! at least a page more than last time and up to twice as much, at most a maximum step, so a
//! file's footprint stays within a step of its data and a full disk is an error at
//! reservation time, never a SIGBUS at a store through the mapping.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Result, StoreError};
use crate::io::Region;

const PAGE: usize = 4096;

/// How far a file has blocks.
#[derive(Debug)]
pub(crate) struct Reserved {
    /// End of the range with blocks; only moves up, except when a tail is discarded.
    end: AtomicUsize,
    /// Where the doubling counts from (the index file's entries start after its slot table,
    /// which is reserved whole on the first call).
    base: usize,
    /// Largest step.
    max_step: usize,
}

impl Reserved {
    /// Nothing reserved yet; steps double from one page past `base` up to `max_step`.
    pub(crate) fn new(base: usize, max_step: usize) -> Self {
        Reserved {
            end: AtomicUsize::new(0),
            base,
            max_step: max_step.max(PAGE),
        }
    }

    /// End of the range with blocks.
    pub(crate) fn get(&self) -> usize {
        self.end.load(Ordering::Acquire)
    }

    /// Gives `[.., end)` of `region` (the file at `path`) blocks. Cheap when already done;
    /// ENOSPC as an error. Concurrent callers may both reserve: ranges already allocated cost
    /// nothing.
    pub(crate) fn reserve_to(&self, region: &dyn Region, path: &Path, end: usize) -> Result<()> {
        let reserved = self.get();
        if end <= reserved {
            return Ok(());
        }
        let step = reserved
            .saturating_sub(self.base)
            .clamp(PAGE, self.max_step);
        let target =
            (end.max(reserved.max(self.base) + step).div_ceil(PAGE) * PAGE).min(region.len());
        let from = reserved / PAGE * PAGE;
        region
            .reserve(from, target - from)
            .map_err(|e| StoreError::io(path, e))?;
        self.end.fetch_max(target, Ordering::AcqRel);
        Ok(())
    }

    /// Forgets the blocks at and above `pos` (their pages were punched out).
    pub(crate) fn forget_from(&self, pos: usize) {
        self.end.fetch_min(pos, Ordering::AcqRel);
    }
}
