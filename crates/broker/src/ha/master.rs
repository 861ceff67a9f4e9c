//! The master's side: accepts slaves on the HA port and streams its CommitLog to each.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

use crate::state::BrokerInner;

/// Binds the HA listener: `haListenPort` when set, else the broker's port + 1 (RocketMQ's
/// default) — or, when that is taken, any free port: slaves learn the address from the name
/// server, which relays what this broker registers.
pub async fn bind(host: &str, configured: u16, listen_port: u16) -> std::io::Result<TcpListener> {
    if configured != 0 {
        return TcpListener::bind((host, configured)).await;
    }
    match TcpListener::bind((host, listen_port.wrapping_add(1))).await {
        Ok(l) => Ok(l),
        Err(e) => {
            tracing::warn!(port = listen_port.wrapping_add(1), error = %e, "HA port (listenPort + 1) unavailable; listening on a free port");
            TcpListener::bind((host, 0)).await
        }
    }
}

/// Accepts slaves until `stop` is set.
pub async fn serve(
    broker: Arc<BrokerInner>,
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
) {
    // Checked when the settings were (Broker::start validates them first).
    let allowed =
        super::allow::allowed_peers(&broker.settings.ha_exposure()).unwrap_or(Some(Vec::new()));
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = stop.wait_for(|s| *s) => return,
        };
        match accepted {
            Ok((stream, peer)) if !super::allow::serves(allowed.as_deref(), peer.ip()) => {
                tracing::warn!(%peer, "HA connection from an address haAllowedAddresses does not name: closed");
                drop(stream);
            }
            Ok((stream, peer)) => {
                tracing::info!(%peer, "slave connected");
                let broker = broker.clone();
                let stop = stop.clone();
                tokio::spawn(async move {
                    broker.ha.slaves.fetch_add(1, Ordering::AcqRel);
                    if let Err(e) = connection(&broker, stream, stop).await {
                        tracing::warn!(%peer, error = %e, "slave connection closed");
                    }
                    broker.ha.slaves.fetch_sub(1, Ordering::AcqRel);
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "HA accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// One slave: reads its offset reports, and pushes CommitLog bytes from where it is.
async fn connection(
    broker: &Arc<BrokerInner>,
    stream: TcpStream,
    mut stop: watch::Receiver<bool>,
) -> Result<(), Error> {
    stream.set_nodelay(true)?;
    let (mut rd, mut wr) = stream.into_split();
    let cfg = &broker.settings.store;
    let housekeeping = Duration::from_millis(cfg.ha_housekeeping_interval.max(1));
    let heartbeat = Duration::from_millis(cfg.ha_send_heartbeat_interval.max(1));
    let batch = cfg.ha_transfer_batch_size.max(1);
    // The slave's reports, as they come (the newest wins).
    let (reports, mut reported) = watch::channel::<Option<i64>>(None);
    let owner = broker.clone();
    let reader = tokio::spawn(async move {
        let mut buf = [0u8; 8];
        loop {
            match tokio::time::timeout(housekeeping, rd.read_exact(&mut buf)).await {
                Ok(Ok(_)) => {
                    let offset = i64::from_be_bytes(buf);
                    // A slave ahead of this master holds bytes the master lost, not its
                    // writes: its offset acknowledges nothing.
                    if offset <= owner.store.commit_log_range().1 {
                        owner.ha.report(offset);
                    }
                    reports.send_replace(Some(offset));
                }
                Ok(Err(e)) => return format!("read failed: {e}"),
                Err(_) => {
                    return "no report from the slave within haHousekeepingInterval".to_owned()
                }
            }
        }
    });
    let result = async {
        let gone = |reported: &watch::Receiver<Option<i64>>| reported.has_changed().is_err();
        // Where to start: the first report the master can serve.
        let mut next = loop {
            tokio::select! {
                changed = reported.changed() => changed.map_err(|_| "slave gone before reporting")?,
                _ = stop.wait_for(|s| *s) => return Ok(()),
            }
            let Some(offset) = *reported.borrow_and_update() else {
                continue;
            };
            let (min, max) = broker.store.commit_log_range();
            if offset == 0 {
                break broker.store.replica_start_offset();
            }
            if offset > max {
                // The slave has bytes this master lost: tell it where the master ends.
                tracing::warn!(
                    slave = offset,
                    master = max,
                    "slave is ahead of this master; telling it to cut back"
                );
                write_frame(&mut wr, max, &[]).await?;
                continue;
            }
            if offset < min {
                tracing::error!(
                    slave = offset,
                    master_min = min,
                    "slave needs CommitLog bytes this master no longer has"
                );
            }
            break offset;
        };
        let mut last_write = Instant::now();
        loop {
            if *stop.borrow() {
                return Ok(());
            }
            if gone(&reported) {
                return Err("the slave's side closed".into());
            }
            // Enabled before looking for data, so an append in between still wakes us.
            let grown = broker.ha.grown.notified();
            tokio::pin!(grown);
            grown.as_mut().enable();
            if let Some(data) = broker.store.commit_log_data(next, batch) {
                write_frame(&mut wr, next, &data).await?;
                next += data.len() as i64;
                last_write = Instant::now();
                continue;
            }
            if last_write.elapsed() >= heartbeat {
                write_frame(&mut wr, next, &[]).await?;
                last_write = Instant::now();
            }
            let nap = heartbeat
                .saturating_sub(last_write.elapsed())
                .min(Duration::from_secs(1));
            tokio::select! {
                _ = grown => {}
                _ = tokio::time::sleep(nap) => {}
                _ = reported.changed() => {}
                _ = stop.wait_for(|s| *s) => return Ok(()),
            }
        }
    }
    .await;
    let why = if reader.is_finished() {
        reader.await.ok()
    } else {
        reader.abort();
        None
    };
    result.map_err(|e: Error| match why {
        Some(why) => format!("{e} ({why})").into(),
        None => e,
    })
}

async fn write_frame(
    wr: &mut tokio::net::tcp::OwnedWriteHalf,
    offset: i64,
    data: &[u8],
) -> Result<(), Error> {
    let mut header = [0u8; 12];
    header[..8].copy_from_slice(&offset.to_be_bytes());
    header[8..].copy_from_slice(&(data.len() as i32).to_be_bytes());
    wr.write_all(&header).await?;
    if !data.is_empty() {
        wr.write_all(data).await?;
    }
    Ok(())
}
