//! The slave's side: connects to the master's HA port, reports its CommitLog end and writes
//! what the master streams.

use std::sync::Arc;
use std::time::Duration;

use rocketpy_store::replica::ReplicaWriter;
use rocketpy_store::StoreError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;

use crate::state::BrokerInner;

/// The largest replication frame a slave takes whatever its settings (RocketMQ's slave reads
/// frames into a buffer of this size).
const MAX_FRAME: usize = 4 << 20;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// After a failed or lost connection, the slave waits this long before trying again
/// (RocketMQ's HAClient: 5 s).
const RECONNECT_DELAY: Duration = Duration::from_secs(5);

/// Replicates from the master until `stop` is set: the master's HA address is
/// `haMasterAddress`, or what the name server answered at registration.
pub async fn run(broker: Arc<BrokerInner>, mut stop: watch::Receiver<bool>) {
    loop {
        if *stop.borrow() {
            return;
        }
        let delay = match broker.ha.master_ha_addr() {
            None => Duration::from_millis(500),
            Some(addr) => {
                let session = session(&broker, &addr, stop.clone());
                let _connected = Connected(&broker.ha);
                tokio::select! {
                    result = session => match result {
                        Ok(()) => return,
                        Err(e) => {
                            tracing::warn!(master = %addr, error = %e, "replication from the master interrupted; reconnecting");
                            RECONNECT_DELAY
                        }
                    },
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// One connection: a reporter task sends the slave's offset when it moves and every
/// `haSendHeartbeatInterval`; this task reads frames and writes them to the store.
async fn session(
    broker: &Arc<BrokerInner>,
    addr: &str,
    mut stop: watch::Receiver<bool>,
) -> Result<(), Error> {
    let cfg = &broker.settings.store;
    let housekeeping = Duration::from_millis(cfg.ha_housekeeping_interval.max(1));
    let heartbeat = Duration::from_millis(cfg.ha_send_heartbeat_interval.max(1));
    let stream = tokio::time::timeout(Duration::from_secs(3), TcpStream::connect(addr))
        .await
        .map_err(|_| format!("connecting to {addr} timed out"))??;
    stream.set_nodelay(true)?;
    tracing::info!(master = %addr, "replicating from the master");
    broker
        .ha
        .master_connected
        .store(true, std::sync::atomic::Ordering::Release);
    let (mut rd, mut wr) = stream.into_split();
    let store = broker.store.clone();
    let mut writer = ReplicaWriter::new(&store);
    let (offsets, mut to_report) = watch::channel(writer.offset());
    let reporter = tokio::spawn(async move {
        loop {
            let offset = *to_report.borrow_and_update();
            if let Err(e) = wr.write_all(&offset.to_be_bytes()).await {
                return format!("report failed: {e}");
            }
            tokio::select! {
                changed = to_report.changed() => if changed.is_err() { return String::new() },
                _ = tokio::time::sleep(heartbeat) => {}
            }
        }
    });
    let result: Result<(), Error> = async {
        let mut header = [0u8; 12];
        let mut body = Vec::new();
        loop {
            tokio::select! {
                read = tokio::time::timeout(housekeeping, rd.read_exact(&mut header)) => {
                    read.map_err(|_| "nothing from the master within haHousekeepingInterval")??;
                }
                _ = stop.wait_for(|s| *s) => return Ok(()),
            }
            if reporter.is_finished() {
                return Err("the report side closed".into());
            }
            let offset = i64::from_be_bytes(header[..8].try_into().expect("8 bytes"));
            let size = i32::from_be_bytes(header[8..].try_into().expect("4 bytes"));
            // A master sends at most haTransferBatchSize per frame (RocketMQ's slave reads
            // into a 4 MiB buffer): a larger frame is not a master's, and is not buffered.
            let most = cfg.ha_transfer_batch_size.max(MAX_FRAME);
            let size = usize::try_from(size)
                .ok()
                .filter(|s| *s <= most.min(cfg.mapped_file_size_commit_log))
                .ok_or_else(|| format!("frame of {size} bytes at {offset}"))?;
            body.resize(size, 0);
            tokio::time::timeout(housekeeping, rd.read_exact(&mut body))
                .await
                .map_err(|_| "frame body did not arrive within haHousekeepingInterval")??;
            match writer.push(offset, &body) {
                Ok(()) => {}
                Err(StoreError::ReplicaOffset { expected, got }) if size == 0 && got < expected => {
                    // The master's end is before ours: it lost bytes we have.
                    cut_back(&store, got)?;
                    writer = ReplicaWriter::new(&store);
                }
                // Heartbeats say where the master will continue; data elsewhere is an error.
                Err(StoreError::ReplicaOffset { .. }) if size == 0 => {}
                Err(e) => return Err(e.into()),
            }
            offsets.send_if_modified(|v| {
                let moved = *v != writer.offset();
                *v = writer.offset();
                moved
            });
        }
    }
    .await;
    reporter.abort();
    result
}

/// Cuts this slave's store back to the master's end — unless the master has nothing at all
/// (wiped, or a wrong address): then it is an operator's decision, not the slave's.
fn cut_back(store: &rocketpy_store::MessageStore, master_end: i64) -> Result<(), Error> {
    let (min, max) = store.commit_log_range();
    if master_end <= 0 || master_end < min {
        return Err(format!(
            "the master's CommitLog ends at {master_end}, before this slave's data ({min}..{max}); not cutting back: restore the master or wipe this slave's store"
        )
        .into());
    }
    store.truncate_replica(master_end)?;
    Ok(())
}

/// Clears "master connected" when a session ends, however it ends.
struct Connected<'a>(&'a super::HaService);

impl Drop for Connected<'_> {
    fn drop(&mut self) {
        self.0
            .master_connected
            .store(false, std::sync::atomic::Ordering::Release);
    }
}
