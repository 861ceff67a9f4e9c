//! Gives memory that the heap holds free back to the system, every 30 s (glibc only).
//!
//! Why: a client runs a hundred threads or more (listener pools, I/O), and glibc serves them
//! from several malloc arenas. Memory freed after a burst — a backlog delivered after a broker
//! restart, a busy minute — stays in those arenas, and the process's resident memory creeps
//! while the heap in use stays flat. Measured with five broadcasting consumers at 3,000
//! messages a second: heap in use +18 KiB in 7.5 minutes, resident memory +62 KiB a minute
//! without this, +33 KiB a minute with it; a trim takes well under a millisecond there.
//! What must stay true: it only releases free pages (`malloc_trim`), never touches live data.

use std::time::Duration;

const EVERY: Duration = Duration::from_secs(30);

/// Runs forever on the runtime: a trim every [`EVERY`], off the I/O threads.
pub async fn trim_loop() {
    loop {
        tokio::time::sleep(EVERY).await;
        let _ = tokio::task::spawn_blocking(trim).await;
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn trim() {
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it takes the arenas'
    // own locks and has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}
