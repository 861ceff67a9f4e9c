//! SYNC_FLUSH group commit: acknowledged puts per second with 1, 16 and 64 concurrent writers
//! on the real disk. Each put is acknowledged only after an msync covering it; concurrent puts
//! share one msync, so the 64-writer rate should be far above the 1-writer rate (target >=
//! 10x). Two kinds of writer: async tasks awaiting the flush ticket on a two-thread runtime
//! (how the broker serves concurrent producers), and OS threads blocking on it (on a 2-core
//! machine their context switches, not the disk, become the limit).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rocketpy_benches::{message, open_store_with};
use rocketpy_store::{FlushDiskType, PutStatus};

fn rate(writers: usize, run_for: Duration) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    if std::env::var_os("WARM").is_some() {
        std::fs::create_dir_all(dir.path().join("commitlog")).expect("dir");
        let path = dir.path().join("commitlog").join(format!("{:020}", 0));
        std::fs::write(&path, vec![0u8; 256 << 20]).expect("warm");
        std::fs::File::open(&path)
            .expect("open")
            .sync_all()
            .expect("sync");
    }
    let store = open_store_with(dir.path(), 256 << 20, |c| {
        c.flush_disk_type = FlushDiskType::SyncFlush
    });
    let msg = message("SyncTopic", 0, 1024);
    let done = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    std::thread::scope(|s| {
        for w in 0..writers {
            let (store, done, stop) = (&store, &done, &stop);
            let mut m = msg.clone();
            m.queue_id = (w % 8) as i32;
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let r = store.put_messages(std::slice::from_ref(&m)).expect("put");
                    assert_eq!(r[0].status, PutStatus::PutOk);
                    done.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        std::thread::sleep(run_for);
        stop.store(true, Ordering::Relaxed);
    });
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    store.shutdown().expect("shutdown");
    rate
}

fn task_rate(writers: usize, run_for: Duration) -> f64 {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open_store_with(dir.path(), 256 << 20, |c| {
        c.flush_disk_type = FlushDiskType::SyncFlush
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let done = std::sync::Arc::new(AtomicUsize::new(0));
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    runtime.block_on(async {
        let mut tasks = Vec::new();
        for w in 0..writers {
            let (store, done, stop) = (store.clone(), done.clone(), stop.clone());
            let mut m = message("SyncTopic", 0, 1024);
            m.queue_id = (w % 8) as i32;
            tasks.push(tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let appended = store
                        .put_messages_nowait(std::slice::from_ref(&m))
                        .expect("put");
                    let ticket = appended.flush.expect("sync flush ticket");
                    assert!(ticket.await, "flushed");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        tokio::time::sleep(run_for).await;
        stop.store(true, Ordering::Relaxed);
        for t in tasks {
            t.await.expect("task");
        }
    });
    let rate = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    store.shutdown().expect("shutdown");
    rate
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let run_for = Duration::from_secs(3);
    task_rate(4, Duration::from_millis(500)); // warm-up
    for (kind, f) in [
        ("async tasks", task_rate as fn(usize, Duration) -> f64),
        ("OS threads", rate),
    ] {
        println!("SYNC_FLUSH (group commit), 1 KiB messages, acknowledged puts per second, writers = {kind}:");
        let one = f(1, run_for);
        println!("   1 writer : {one:>9.0} msg/s");
        for writers in [16usize, 64] {
            let r = f(writers, run_for);
            println!(
                "  {writers:>2} writers: {r:>9.0} msg/s  ({:.1}x the 1-writer rate)",
                r / one
            );
        }
    }
}
