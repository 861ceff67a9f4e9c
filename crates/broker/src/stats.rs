//! Traffic statistics: what mqadmin's brokerStatus, clusterList and statsAll read
//! (GET_BROKER_RUNTIME_INFO, VIEW_BROKER_STATS_DATA).
//!
//! Each statistic is an [`Item`] — a running sum and count — kept per key the way RocketMQ's
//! `BrokerStatsManager` names them (`TOPIC_PUT_NUMS` by topic, `GROUP_GET_NUMS` by
//! `topic@group`, ...). A sampler ([`BrokerStats::sample`], every 10 s) records snapshots:
//! every 10 s for the last minute, every 10 minutes for the last hour, every hour for the last
//! day; a window's figures are the difference between its newest and oldest snapshot.
//! Items exist only for keys that saw traffic, so memory follows the traffic, not the number
//! of topics. Counting is a read lock and two relaxed atomic adds.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rocketpy_protocol::body::admin::{BrokerStatsData, BrokerStatsItem};

/// Statistic names (RocketMQ's `BrokerStatsManager` constants).
pub mod name {
    /// Messages put, by topic.
    pub const TOPIC_PUT_NUMS: &str = "TOPIC_PUT_NUMS";
    /// Bytes put, by topic.
    pub const TOPIC_PUT_SIZE: &str = "TOPIC_PUT_SIZE";
    /// Messages pulled, by `topic@group`.
    pub const GROUP_GET_NUMS: &str = "GROUP_GET_NUMS";
    /// Bytes pulled, by `topic@group`.
    pub const GROUP_GET_SIZE: &str = "GROUP_GET_SIZE";
    /// Messages put, the whole broker (key: the cluster name).
    pub const BROKER_PUT_NUMS: &str = "BROKER_PUT_NUMS";
    /// Messages pulled, the whole broker (key: the cluster name).
    pub const BROKER_GET_NUMS: &str = "BROKER_GET_NUMS";
    /// Pulls that found messages (key: the cluster name).
    pub const GET_FOUND: &str = "GET_FOUND";
    /// Pulls that found none (key: the cluster name).
    pub const GET_MISS: &str = "GET_MISS";
}

/// Snapshots kept per window: 6 intervals need 7 points.
const MINUTE_POINTS: usize = 7;
const HOUR_POINTS: usize = 7;
const DAY_POINTS: usize = 25;
/// Broker-wide rates: 10 minutes of 10 s steps.
const RATE_POINTS: usize = 61;

#[derive(Debug, Clone, Copy)]
struct Snapshot {
    at_ms: i64,
    sum: i64,
    times: i64,
}

/// One statistic of one key.
#[derive(Debug, Default)]
pub struct Item {
    sum: AtomicI64,
    times: AtomicI64,
    windows: Mutex<[VecDeque<Snapshot>; 3]>,
}

impl Item {
    /// A new item: zero at the last sample in every window, so its first traffic counts in all
    /// of them (not only once the next hourly or daily snapshot is taken).
    fn starting(at_ms: i64) -> Item {
        let zero = Snapshot {
            at_ms,
            sum: 0,
            times: 0,
        };
        Item {
            windows: Mutex::new(std::array::from_fn(|_| VecDeque::from([zero]))),
            ..Item::default()
        }
    }

    fn add(&self, value: i64, times: i64) {
        self.sum.fetch_add(value, Ordering::Relaxed);
        self.times.fetch_add(times, Ordering::Relaxed);
    }

    /// The running total.
    pub fn sum(&self) -> i64 {
        self.sum.load(Ordering::Relaxed)
    }

    fn snapshot(&self, at_ms: i64) -> Snapshot {
        Snapshot {
            at_ms,
            sum: self.sum(),
            times: self.times.load(Ordering::Relaxed),
        }
    }

    fn record(&self, window: usize, at_ms: i64) {
        let keep = [MINUTE_POINTS, HOUR_POINTS, DAY_POINTS][window];
        let snap = self.snapshot(at_ms);
        let mut windows = self.windows.lock();
        let points = &mut windows[window];
        points.push_back(snap);
        while points.len() > keep {
            points.pop_front();
        }
    }

    /// Figures of window 0 (minute), 1 (hour) or 2 (day): the difference between now and the
    /// oldest snapshot (zeros before the first snapshot).
    fn window(&self, window: usize, now_ms: i64) -> BrokerStatsItem {
        let oldest = self.windows.lock()[window].front().copied();
        let Some(first) = oldest else {
            return BrokerStatsItem::default();
        };
        let last = self.snapshot(now_ms);
        let sum = last.sum - first.sum;
        let times = last.times - first.times;
        let elapsed = (last.at_ms - first.at_ms).max(1) as f64;
        BrokerStatsItem {
            sum,
            tps: sum as f64 * 1000.0 / elapsed,
            avgpt: if times > 0 {
                sum as f64 / times as f64
            } else {
                0.0
            },
        }
    }
}

/// Statistic -> key -> item (nested so a lookup by `&str` allocates nothing).
type Table = RwLock<HashMap<&'static str, HashMap<String, Arc<Item>>>>;

/// The broker's statistics.
#[derive(Debug, Default)]
pub struct BrokerStats {
    items: Table,
    samples: AtomicI64,
    /// When [`BrokerStats::sample`] last ran.
    last_sample_ms: AtomicI64,
    /// Broker-wide `(time, put, get)` totals every 10 s over the last 10 minutes: the rates
    /// brokerStatus and clusterList show.
    rates: Mutex<VecDeque<(i64, i64, i64)>>,
    /// Totals at the start of today and yesterday (local midnight): `(put, get)`.
    day_marks: Mutex<DayMarks>,
}

#[derive(Debug, Default, Clone, Copy)]
struct DayMarks {
    /// The day the marks were last moved (None before the first sample).
    day: Option<i64>,
    today: (i64, i64),
    yesterday: (i64, i64),
}

impl BrokerStats {
    /// Empty statistics.
    pub fn new() -> Self {
        Self::default()
    }

    fn item(&self, stat: &'static str, key: &str) -> Arc<Item> {
        if let Some(item) = self.items.read().get(stat).and_then(|m| m.get(key)) {
            return item.clone();
        }
        let since = self.last_sample_ms.load(Ordering::Relaxed);
        self.items
            .write()
            .entry(stat)
            .or_default()
            .entry(key.to_owned())
            .or_insert_with(|| Arc::new(Item::starting(since)))
            .clone()
    }

    /// Adds `value` (over `times` events) to a statistic.
    pub fn add(&self, stat: &'static str, key: &str, value: i64, times: i64) {
        self.item(stat, key).add(value, times);
    }

    /// A statistic, if it saw traffic.
    pub fn get(&self, stat: &str, key: &str) -> Option<Arc<Item>> {
        self.items.read().get(stat)?.get(key).cloned()
    }

    /// Records `count` messages of `bytes` put to `topic` by one request.
    pub fn on_put(&self, cluster: &str, topic: &str, count: i64, bytes: i64) {
        self.add(name::TOPIC_PUT_NUMS, topic, count, 1);
        self.add(name::TOPIC_PUT_SIZE, topic, bytes, 1);
        self.add(name::BROKER_PUT_NUMS, cluster, count, 1);
    }

    /// Records a pull of `group` on `topic` that found `count` messages of `bytes`.
    pub fn on_get(&self, cluster: &str, topic: &str, group: &str, count: i64, bytes: i64) {
        if count == 0 {
            self.add(name::GET_MISS, cluster, 1, 1);
            return;
        }
        let key = format!("{topic}@{group}");
        self.add(name::GROUP_GET_NUMS, &key, count, 1);
        self.add(name::GROUP_GET_SIZE, &key, bytes, 1);
        self.add(name::BROKER_GET_NUMS, cluster, count, 1);
        self.add(name::GET_FOUND, cluster, 1, 1);
    }

    /// Takes the periodic snapshots; call every 10 s. `day` is today's number (days since the
    /// epoch, local time), for the today/yesterday totals.
    pub fn sample(&self, now_ms: i64, day: i64, cluster: &str) {
        let n = self.samples.fetch_add(1, Ordering::Relaxed);
        self.last_sample_ms.store(now_ms, Ordering::Relaxed);
        let items: Vec<Arc<Item>> = self
            .items
            .read()
            .values()
            .flat_map(|m| m.values().cloned())
            .collect();
        for item in &items {
            item.record(0, now_ms);
            if n % 60 == 0 {
                item.record(1, now_ms);
            }
            if n % 360 == 0 {
                item.record(2, now_ms);
            }
        }
        let totals = self.totals(cluster);
        {
            let mut rates = self.rates.lock();
            rates.push_back((now_ms, totals.0, totals.1));
            while rates.len() > RATE_POINTS {
                rates.pop_front();
            }
        }
        let mut marks = self.day_marks.lock();
        if marks.day != Some(day) {
            marks.yesterday = if marks.day == Some(day - 1) {
                marks.today
            } else {
                totals
            };
            marks.today = totals;
            marks.day = Some(day);
        }
    }

    /// `(put, get)` message totals since the broker started.
    pub fn totals(&self, cluster: &str) -> (i64, i64) {
        let sum = |stat| self.get(stat, cluster).map_or(0, |i| i.sum());
        (sum(name::BROKER_PUT_NUMS), sum(name::BROKER_GET_NUMS))
    }

    /// `(put, get)` totals at the start of today and of yesterday.
    pub fn day_marks(&self) -> ((i64, i64), (i64, i64)) {
        let m = *self.day_marks.lock();
        (m.today, m.yesterday)
    }

    /// VIEW_BROKER_STATS_DATA's answer, if the statistic saw traffic.
    pub fn view(&self, stat: &str, key: &str, now_ms: i64) -> Option<BrokerStatsData> {
        let item = self.get(stat, key)?;
        Some(BrokerStatsData {
            stats_minute: item.window(0, now_ms),
            stats_hour: item.window(1, now_ms),
            stats_day: item.window(2, now_ms),
        })
    }

    /// `("x.xx y.yy z.zz", ...)` for puts and gets: messages per second over the last 10 s,
    /// 1 min and 10 min (RocketMQ's `putTps` / `getTransferedTps` format), from the samples.
    pub fn tps_texts(&self) -> (String, String) {
        let rates = self.rates.lock();
        let rate = |seconds: usize, pick: fn(&(i64, i64, i64)) -> i64| {
            let (Some(newest), Some(oldest)) = (rates.back(), rates.front()) else {
                return 0.0;
            };
            let older = rates.iter().rev().nth(seconds / 10).unwrap_or(oldest);
            let elapsed = (newest.0 - older.0).max(1) as f64;
            (pick(newest) - pick(older)) as f64 * 1000.0 / elapsed
        };
        let text = |pick: fn(&(i64, i64, i64)) -> i64| {
            format!(
                "{:.2} {:.2} {:.2}",
                rate(10, pick),
                rate(60, pick),
                rate(600, pick)
            )
        };
        (text(|r| r.1), text(|r| r.2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_and_tps_follow_the_samples() {
        let stats = BrokerStats::new();
        stats.on_put("c", "T", 10, 1000);
        stats.sample(0, 1, "c");
        stats.on_put("c", "T", 20, 2000);
        stats.on_get("c", "T", "g", 5, 500);
        stats.on_get("c", "T", "g", 0, 0);
        stats.sample(10_000, 1, "c");
        let v = stats.view(name::TOPIC_PUT_NUMS, "T", 10_000).unwrap();
        // The item began at zero before its first put, so all 30 count, over 2 puts.
        assert_eq!(v.stats_minute.sum, 30);
        assert!((v.stats_minute.tps - 3.0).abs() < 1e-9);
        assert!((v.stats_minute.avgpt - 15.0).abs() < 1e-9);
        assert_eq!(v.stats_day.sum, 30);
        assert_eq!(
            stats
                .view(name::GROUP_GET_NUMS, "T@g", 10_000)
                .unwrap()
                .stats_day
                .sum,
            5
        );
        assert!(stats.view(name::GROUP_GET_NUMS, "T@other", 0).is_none());
        assert_eq!(stats.totals("c"), (30, 5));
        assert_eq!(stats.get(name::GET_MISS, "c").unwrap().sum(), 1);
        assert_eq!(
            stats.tps_texts(),
            ("2.00 2.00 2.00".into(), "0.50 0.50 0.50".into())
        );
        // A new day moves today's mark to yesterday.
        assert_eq!(stats.day_marks(), ((10, 0), (10, 0)));
        stats.sample(20_000, 2, "c");
        assert_eq!(stats.day_marks(), ((30, 5), (10, 0)));
    }
}
