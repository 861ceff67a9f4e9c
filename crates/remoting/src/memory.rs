//! Giving freed heap memory back to the operating system.
//!
//! A long-running process that allocates from many threads (tokio workers, connection tasks,
//! Python threads) gets one glibc malloc arena per thread. Memory freed inside an arena stays
//! resident while it sits between live chunks or in the per-thread caches, so the resident set
//! of a server or client steps up after a burst — a reconnect storm when a broker restarts —
//! and never comes back down, although nothing leaks (heaptrack and `mallinfo2` show the heap
//! in use flat; measured in the soak, tests/soak/). `malloc_trim(0)` returns every whole free
//! page of every arena (glibc 2.8+ trims inside arenas, not only at the top). Servers and
//! clients call it on their housekeeping timers; it costs a walk of the free lists.

/// Returns the process's free heap pages to the operating system (glibc on Linux; elsewhere
/// it does nothing).
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks and madvises the allocator's own free memory.
    unsafe {
        libc::malloc_trim(0);
    }
}
