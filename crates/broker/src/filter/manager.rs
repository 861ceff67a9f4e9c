//! The SQL92 filters of consumer groups (RocketMQ's `ConsumerFilterManager`): one compiled
//! filter per (topic, group), registered from heartbeats with the subscription's version
//! (`clientVersion`), made dead when the group leaves or stops subscribing the topic, and
//! forgotten `filterDataCleanTimeSpan` after its death.
//!
//! What must stay true: an expression is compiled once per registration, never per message;
//! a registration with an older version never replaces a newer one; an expression that does
//! not compile leaves no filter (a pull then answers FILTER_DATA_NOT_EXIST, as RocketMQ's).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use rocketpy_filter::bloom::{BloomBits, BloomFilter};
use rocketpy_filter::Filter;
use rocketpy_protocol::body::SubscriptionData;
use rocketpy_protocol::subscription::is_tag_type;

/// RocketMQ's SQL92 expression type (`ExpressionType.SQL92`).
pub const SQL92: &str = "SQL92";

/// Compiles a non-tag expression of type `ty`; Err names what is wrong and where.
pub fn compile(ty: &str, expression: &str) -> Result<Filter, String> {
    if ty != SQL92 {
        return Err(format!(
            "the expression type {ty} is not supported (TAG or SQL92)"
        ));
    }
    Filter::compile(expression).map_err(|e| e.to_string())
}

/// A group's compiled filter of one topic (RocketMQ's `ConsumerFilterData`).
#[derive(Debug, Clone)]
pub struct FilterData {
    pub group: String,
    pub topic: String,
    pub expression: String,
    pub expression_type: String,
    /// The subscription version it was registered with.
    pub client_version: i64,
    /// When it was registered (ms of the broker's clock).
    pub born_time: i64,
    /// When its group left (0 while alive).
    pub dead_time: i64,
    pub filter: Arc<Filter>,
    /// Its bits in messages' bit maps (key `group#topic`).
    pub bloom: Option<BloomBits>,
}

impl FilterData {
    /// Compiles a group's subscription of `topic`; None for tag types or when it does not
    /// compile (logged).
    pub fn build(
        topic: &str,
        group: &str,
        expression: &str,
        ty: &str,
        client_version: i64,
        now: i64,
    ) -> Option<FilterData> {
        if is_tag_type(Some(ty)) {
            return None;
        }
        match compile(ty, expression) {
            Ok(filter) => Some(FilterData {
                group: group.to_owned(),
                topic: topic.to_owned(),
                expression: expression.to_owned(),
                expression_type: ty.to_owned(),
                client_version,
                born_time: now,
                dead_time: 0,
                filter: Arc::new(filter),
                bloom: None,
            }),
            Err(e) => {
                tracing::warn!(topic, group, expression, error = %e, "consumer filter does not compile");
                None
            }
        }
    }

    /// Whether a message stored at `store_time` was dispatched while this filter was known
    /// (RocketMQ's `isMsgInLive`): only then do its bits in the message's bit map count.
    pub fn knew(&self, store_time: i64) -> bool {
        store_time > self.born_time
    }

    /// Whether its group left (RocketMQ's `isDead`; 0 is never a death time here, so a
    /// clock that starts at 0 does not make new filters dead).
    pub fn is_dead(&self) -> bool {
        self.dead_time > 0 && self.dead_time >= self.born_time
    }
}

/// Filters by topic, then group.
pub type FilterTable = HashMap<String, HashMap<String, Arc<FilterData>>>;

/// The filters of every topic, and the bloom filter placing their bits.
#[derive(Debug)]
pub struct ConsumerFilterManager {
    by_topic: RwLock<FilterTable>,
    bloom: BloomFilter,
    /// Whether dispatch computes messages' bit maps (`enableCalcFilterBitMap`).
    pub(super) calc_bit_map: bool,
    /// `config/consumerFilter.json`, when the filters are kept (see [`super::persist`]).
    pub(super) file: Option<PathBuf>,
    /// Whether the table changed since it was last written.
    pub(super) dirty: AtomicBool,
}

impl Default for ConsumerFilterManager {
    fn default() -> Self {
        Self::new(
            BloomFilter::create(20, 32).expect("RocketMQ's defaults"),
            false,
        )
    }
}

impl ConsumerFilterManager {
    /// No filters yet; bits placed by `bloom`, bit maps computed at dispatch when
    /// `calc_bit_map`.
    pub fn new(bloom: BloomFilter, calc_bit_map: bool) -> Self {
        ConsumerFilterManager {
            by_topic: RwLock::new(HashMap::new()),
            bloom,
            calc_bit_map,
            file: None,
            dirty: AtomicBool::new(false),
        }
    }

    /// The bloom filter's shape.
    pub fn bloom(&self) -> &BloomFilter {
        &self.bloom
    }

    /// Replaces the table (loading `consumerFilter.json`).
    pub(super) fn replace(&self, table: FilterTable) {
        *self.by_topic.write() = table;
    }

    /// A copy of the table (persisting it).
    pub(super) fn snapshot(&self) -> FilterTable {
        self.by_topic.read().clone()
    }

    /// Runs `f` on the filters of `topic` (none: not called), under the table's read lock.
    pub(super) fn with_topic<T>(
        &self,
        topic: &str,
        f: impl FnOnce(&HashMap<String, Arc<FilterData>>) -> T,
    ) -> Option<T> {
        self.by_topic
            .read()
            .get(topic)
            .filter(|g| !g.is_empty())
            .map(f)
    }

    /// Registers a heartbeat's subscriptions of `group`; the group's filters of topics it no
    /// longer subscribes become dead.
    pub fn register(&self, group: &str, subscriptions: &[SubscriptionData], now: i64) {
        if subscriptions
            .iter()
            .any(|s| !is_tag_type(Some(&s.expression_type)))
        {
            self.dirty.store(true, Ordering::Release);
        }
        let mut by_topic = self.by_topic.write();
        for sub in subscriptions {
            if is_tag_type(Some(&sub.expression_type)) || sub.sub_string.is_empty() {
                continue;
            }
            let groups = by_topic.entry(sub.topic.clone()).or_default();
            let bloom = self.bloom.generate(&format!("{group}#{}", sub.topic));
            register_one(groups, group, sub, bloom, now);
        }
        for (topic, groups) in by_topic.iter_mut() {
            if subscriptions.iter().any(|s| &s.topic == topic) {
                continue;
            }
            if let Some(data) = groups.get_mut(group).filter(|d| !d.is_dead()) {
                Arc::make_mut(data).dead_time = now;
                self.dirty.store(true, Ordering::Release);
            }
        }
        by_topic.retain(|_, groups| !groups.is_empty());
    }

    /// The group left the broker: its filters become dead.
    pub fn unregister(&self, group: &str, now: i64) {
        for groups in self.by_topic.write().values_mut() {
            if let Some(data) = groups.get_mut(group).filter(|d| !d.is_dead()) {
                Arc::make_mut(data).dead_time = now;
                self.dirty.store(true, Ordering::Release);
            }
        }
    }

    /// The group's filter of `topic`.
    pub fn get(&self, topic: &str, group: &str) -> Option<Arc<FilterData>> {
        self.by_topic.read().get(topic)?.get(group).cloned()
    }

    /// Every filter of `topic` (alive or dead).
    pub fn of_topic(&self, topic: &str) -> Vec<Arc<FilterData>> {
        self.by_topic
            .read()
            .get(topic)
            .map(|g| g.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Forgets filters dead for `span_ms` or longer (RocketMQ's `clean`).
    pub fn clean(&self, now: i64, span_ms: i64) {
        let mut by_topic = self.by_topic.write();
        for groups in by_topic.values_mut() {
            let before = groups.len();
            groups.retain(|_, d| !(d.is_dead() && now - d.dead_time >= span_ms));
            if groups.len() != before {
                self.dirty.store(true, Ordering::Release);
            }
        }
        by_topic.retain(|_, groups| !groups.is_empty());
    }
}

/// RocketMQ's `FilterDataMapByTopic.register`: a newer version with another expression
/// replaces the filter (or removes it if it does not compile, so the client hears of its
/// error); the same expression only takes the newer version; an older or equal version is
/// ignored, except that the same version revives a dead filter.
fn register_one(
    groups: &mut HashMap<String, Arc<FilterData>>,
    group: &str,
    sub: &SubscriptionData,
    bloom: BloomBits,
    now: i64,
) {
    let build = || {
        FilterData::build(
            &sub.topic,
            group,
            &sub.sub_string,
            &sub.expression_type,
            sub.sub_version,
            now,
        )
        .map(|d| FilterData {
            bloom: Some(bloom.clone()),
            ..d
        })
    };
    let Some(old) = groups.get_mut(group) else {
        if let Some(data) = build() {
            groups.insert(group.to_owned(), Arc::new(data));
        }
        return;
    };
    if sub.sub_version <= old.client_version {
        if sub.sub_version == old.client_version && old.is_dead() {
            Arc::make_mut(old).dead_time = 0;
        }
        return;
    }
    if old.expression != sub.sub_string
        || old.expression_type != sub.expression_type
        || old.bloom.as_ref() != Some(&bloom)
    {
        match build() {
            Some(data) => *old = Arc::new(data),
            None => {
                groups.remove(group);
            }
        }
        return;
    }
    let data = Arc::make_mut(old);
    data.client_version = sub.sub_version;
    data.dead_time = 0;
}

#[cfg(test)]
mod tests {
    use rocketpy_protocol::subscription::build_typed_subscription;

    use super::*;

    fn sql(topic: &str, expr: &str, version: i64) -> SubscriptionData {
        build_typed_subscription(topic, expr, Some(SQL92), version)
    }

    #[test]
    fn registers_by_version() {
        let m = ConsumerFilterManager::default();
        m.register("G", &[sql("T", "a > 1", 10)], 100);
        let f = m.get("T", "G").expect("registered");
        assert_eq!((f.client_version, f.expression.as_str()), (10, "a > 1"));
        // Older version with another expression: ignored.
        m.register("G", &[sql("T", "a > 2", 9)], 101);
        assert_eq!(m.get("T", "G").unwrap().expression, "a > 1");
        // Newer version, same expression: only the version moves.
        m.register("G", &[sql("T", "a > 1", 11)], 102);
        let f = m.get("T", "G").unwrap();
        assert_eq!((f.client_version, f.born_time), (11, 100));
        // Newer and different: replaced; newer and broken: removed.
        m.register("G", &[sql("T", "a > 3", 12)], 103);
        assert_eq!(m.get("T", "G").unwrap().expression, "a > 3");
        m.register("G", &[sql("T", "a >", 13)], 104);
        assert!(
            m.get("T", "G").is_none(),
            "a broken expression leaves no filter"
        );
        // Tags are not filters here.
        m.register(
            "G",
            &[build_typed_subscription("T", "A || B", None, 14)],
            105,
        );
        assert!(m.get("T", "G").is_none());
    }

    #[test]
    fn dies_revives_and_is_cleaned() {
        let m = ConsumerFilterManager::default();
        m.register("G", &[sql("T", "a > 1", 10), sql("U", "b = 'x'", 10)], 100);
        // The group stops subscribing U: U's filter dies, T's lives.
        m.register("G", &[sql("T", "a > 1", 10)], 200);
        assert!(m.get("U", "G").unwrap().is_dead());
        assert!(!m.get("T", "G").unwrap().is_dead());
        m.unregister("G", 300);
        assert!(m.get("T", "G").unwrap().is_dead());
        // The same version comes back: alive again.
        m.register("G", &[sql("T", "a > 1", 10)], 400);
        assert!(!m.get("T", "G").unwrap().is_dead());
        m.clean(250, 100);
        assert!(m.get("U", "G").is_some(), "dead for 50 ms only");
        m.clean(300, 100);
        assert!(m.get("U", "G").is_none(), "dead for 100 ms: forgotten");
        assert_eq!(m.of_topic("T").len(), 1);
    }

    #[test]
    fn compile_names_the_type_and_position() {
        assert!(compile("CLASS", "x").unwrap_err().contains("CLASS"));
        assert!(compile(SQL92, "a > ").unwrap_err().contains("character"));
    }
}
