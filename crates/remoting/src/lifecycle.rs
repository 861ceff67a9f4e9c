//! How a server's background services (the broker's, the proxy's) start and stop: one stop
//! signal that every loop selects on between its rounds, and the handles that shutdown
//! waits for.
//!
//! What must stay true: a round that began (a config file being written, a revive pass, a
//! transaction check) runs to its end — a loop looks at the signal only while it waits for
//! its next round — so the final writes of shutdown never race a loop's write.

use std::future::Future;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The receiving side of the stop signal: `true` once shutdown has begun.
pub type Stop = watch::Receiver<bool>;

/// Resolves when the stop signal is set (or its sender is gone, which means the same).
pub async fn stopped(stop: &mut Stop) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Runs `round` at once and then every `period` until `stop` is set (a late round delays the
/// next, as `tokio::time::interval` with `Delay`). A round is never cut short by the signal.
pub async fn every<F, Fut>(period: Duration, mut stop: Stop, mut round: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            // The signal first: after a long round the next tick is ready at once too.
            biased;
            _ = stopped(&mut stop) => return,
            _ = tick.tick() => {}
        }
        round().await;
    }
}

/// The running services of a server: the stop signal's sender and every task's handle.
pub struct Services {
    stop: watch::Sender<bool>,
    handles: Vec<JoinHandle<()>>,
}

impl Default for Services {
    fn default() -> Self {
        Services {
            stop: watch::channel(false).0,
            handles: Vec::new(),
        }
    }
}

impl Services {
    /// A receiver of the stop signal, for a service that selects on it itself.
    pub fn stop_signal(&self) -> Stop {
        self.stop.subscribe()
    }

    /// Spawns a service that ends when the stop signal is set.
    pub fn spawn(&mut self, service: impl Future<Output = ()> + Send + 'static) {
        self.handles.push(tokio::spawn(service));
    }

    /// Sets the stop signal and waits up to `grace` for every service to end; one still
    /// running after that (a round stuck on a disk) is aborted and reported.
    pub async fn stop(&mut self, grace: Duration) {
        self.stop.send_replace(true);
        let deadline = tokio::time::Instant::now() + grace;
        for handle in self.handles.drain(..) {
            let abort = handle.abort_handle();
            if tokio::time::timeout_at(deadline, handle).await.is_err() {
                tracing::warn!("a background service did not stop within {grace:?}; aborted");
                abort.abort();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    #[tokio::test(start_paused = true)]
    async fn a_round_in_progress_finishes_before_stop_returns() {
        let mut services = Services::default();
        let rounds = Arc::new(AtomicU32::new(0));
        let counted = rounds.clone();
        services.spawn(every(
            Duration::from_millis(100),
            services.stop_signal(),
            move || {
                let counted = counted.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    counted.fetch_add(1, Ordering::SeqCst);
                }
            },
        ));
        // The first round starts at once and is still sleeping at 200 ms.
        tokio::time::sleep(Duration::from_millis(200)).await;
        services.stop(Duration::from_secs(5)).await;
        assert_eq!(rounds.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_service_that_ignores_the_signal_is_aborted_after_the_grace() {
        let mut services = Services::default();
        services.spawn(std::future::pending());
        let started = tokio::time::Instant::now();
        services.stop(Duration::from_secs(2)).await;
        assert!(started.elapsed() >= Duration::from_secs(2));
    }
}
