//! A RocketMQ application written against rocketmq-client-rust 1.0, run as its own process by
//! rocketpy's compatibility suite (`tests/compat`). Nothing here uses rocketpy.
//!
//! ```text
//! rocketpy-compat-rust-client '<json spec>'
//! ```
//! The spec's `action` is `produce`, `transact`, `consume`, `pull` or `query`; what happened is
//! printed as JSON lines on stdout (`sent`, `checked`, `ready`, `received`, `failed`, `found`,
//! `done`, `error`), the same events as the C++ peer (`tests/compat/peers/cpp_client.py`). A
//! consumer, and a transactional producer (which answers the broker's checks), runs until its
//! stdin closes or `timeout` (seconds) passes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rocketmq_client_rust::{AclClientRPCHook, ClientConfig, SessionCredentials};
use rocketmq_client_rust::{
    ClientError, ClientResult, ClientRuntime, ClientRuntimeConfig, ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus, ConsumeOrderlyContext, ConsumeOrderlyStatus, DefaultMQProducer,
    DefaultMQPushConsumer, LocalTransactionState, MQPushConsumer, MessageListenerConcurrently,
    MessageListenerOrderly, TransactionListener, TransactionMQProducer,
};
use rocketmq_model::common::consumer::consume_from_where::ConsumeFromWhere;
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_model::common::message::message_single::Message;
use rocketmq_model::common::message::MessageTrait;
use rocketmq_protocol::protocol::heartbeat::message_model::MessageModel;
use rocketmq_runtime::{RuntimeConfig, RuntimeOwner};
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;

fn emit(event: &str, mut fields: Value) {
    fields["event"] = json!(event);
    // One line per event; stdout is shared by the listener threads.
    let line = fields.to_string();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let _ = std::io::Write::write_all(&mut out, line.as_bytes());
    let _ = std::io::Write::write_all(&mut out, b"\n");
    let _ = std::io::Write::flush(&mut out);
}

fn describe(m: &MessageExt, props: &[String]) -> Value {
    let body = m.body().map(|b| String::from_utf8_lossy(&b).into_owned());
    let inner = m.message_inner();
    let properties: serde_json::Map<String, Value> = props
        .iter()
        .map(|p| (p.clone(), json!(inner.property(p))))
        .collect();
    json!({
        "body": body,
        "topic": m.topic().as_str(),
        "tags": inner.tags(),
        "keys": inner.keys().map(|k| k.join(" ")),
        // The id applications see: the producer's UNIQ_KEY (Java's MessageClientExt.getMsgId);
        // this client's msg_id() is the offset message id.
        "msg_id": inner.property("UNIQ_KEY").unwrap_or(m.msg_id().as_str()),
        "offset_msg_id": m.msg_id().as_str(),
        "queue_id": m.queue_id(),
        "queue_offset": m.queue_offset(),
        "reconsume_times": m.reconsume_times(),
        "born_timestamp": m.born_timestamp(),
        "born_host": m.born_host().to_string(),
        "store_timestamp": m.store_timestamp(),
        "commit_log_offset": m.commit_log_offset(),
        "properties": properties,
    })
}

fn spec_str<'a>(spec: &'a Value, key: &str, default: &'a str) -> &'a str {
    spec.get(key).and_then(Value::as_str).unwrap_or(default)
}

fn spec_u64(spec: &Value, key: &str, default: u64) -> u64 {
    spec.get(key).and_then(Value::as_u64).unwrap_or(default)
}

fn make_message(spec: &Value, i: u64) -> Message {
    let mut b = Message::builder()
        .topic(spec_str(spec, "topic", ""))
        .body_slice(format!("{}-{i}", spec_str(spec, "prefix", "rust")).as_bytes());
    if let Some(tags) = spec.get("tags").and_then(Value::as_str) {
        b = b.tags(tags);
    }
    if let Some(keys) = spec.get("keys").and_then(Value::as_str) {
        b = b.key(format!("{keys}-{i}"));
    }
    if let Some(level) = spec.get("delay_level").and_then(Value::as_i64) {
        b = b.delay_level(level as i32);
    }
    if let Some(props) = spec.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            b = b
                .raw_property(k.as_str(), v.as_str().unwrap_or_default())
                .expect("a user property");
        }
    }
    b.build_unchecked()
}

fn sent(i: u64, r: &rocketmq_model::result::SendResult) -> Value {
    json!({
        "i": i,
        // RocketMQ's names, as the other peers report them.
        "status": match format!("{:?}", r.send_status).as_str() {
            "SendOk" => "SEND_OK".to_owned(),
            "FlushDiskTimeout" => "FLUSH_DISK_TIMEOUT".to_owned(),
            "FlushSlaveTimeout" => "FLUSH_SLAVE_TIMEOUT".to_owned(),
            "SlaveNotAvailable" => "SLAVE_NOT_AVAILABLE".to_owned(),
            other => other.to_owned(),
        },
        "msg_id": r.msg_id.as_ref().map(|m| m.as_str().to_owned()),
        "offset_msg_id": r.offset_msg_id,
        "queue_id": r.message_queue.as_ref().map(|q| q.queue_id()),
        "offset": r.queue_offset,
    })
}

/// The client's ACL hook (`AclClientRPCHook`) when the spec names an account.
fn acl_hook(spec: &Value) -> Option<Arc<dyn rocketmq_transport::api::RPCHook>> {
    let ak = spec_str(spec, "access_key", "");
    (!ak.is_empty()).then(|| {
        let credentials = SessionCredentials::with_keys(
            ak.to_owned(),
            spec_str(spec, "secret_key", "").to_owned(),
        );
        Arc::new(AclClientRPCHook::new(credentials)) as Arc<dyn rocketmq_transport::api::RPCHook>
    })
}

/// TLS settings when the spec names a CA file (`tls_ca`): the server's certificate is
/// checked against it (`tls.client.authServer=true`).
fn client_config(spec: &Value) -> ClientConfig {
    let mut config = ClientConfig::default();
    let ca = spec_str(spec, "tls_ca", "");
    if !ca.is_empty() {
        config.set_use_tls(true);
        let mut tls = config.tls_config().clone();
        tls.client.auth_server = true;
        tls.client.trust_cert_path = Some(ca.to_owned());
        config.set_tls_config(tls);
    }
    config
}

async fn produce(rt: Arc<ClientRuntime>, spec: &Value) -> ClientResult<()> {
    let mut builder = DefaultMQProducer::builder(rt)
        .client_config(client_config(spec))
        .producer_group(spec_str(spec, "group", "rust-producer").to_owned())
        .name_server_addr(spec_str(spec, "namesrv", "").to_owned());
    if let Some(hook) = acl_hook(spec) {
        builder = builder.rpc_hook(hook);
    }
    let mut producer = builder.build();
    producer.start().await?;
    let count = spec_u64(spec, "count", 1);
    match spec_str(spec, "mode", "sync") {
        "sync" => {
            for i in 0..count {
                if let Some(r) = producer.send(make_message(spec, i)).await? {
                    emit("sent", sent(i, &r));
                }
            }
        }
        "async" => {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            for i in 0..count {
                let tx = tx.clone();
                producer
                    .send_with_callback(make_message(spec, i), move |r, e| {
                        let _ = tx.send(match (r, e) {
                            (Some(r), _) => ("sent", sent(i, r)),
                            (_, e) => ("error", json!({"i": i, "error": format!("{e:?}")})),
                        });
                    })
                    .await?;
            }
            for _ in 0..count {
                match tokio::time::timeout(Duration::from_secs(30), rx.recv()).await {
                    Ok(Some((event, fields))) => emit(event, fields),
                    _ => {
                        emit("error", json!({"error": "async send callbacks missing"}));
                        break;
                    }
                }
            }
        }
        "oneway" => {
            for i in 0..count {
                producer.send_oneway(make_message(spec, i)).await?;
                emit("sent", json!({"i": i}));
            }
        }
        "orderly" => {
            // One ordering key per queue: the same key always selects the same queue.
            let keys = spec_u64(spec, "order_keys", 1);
            for i in 0..count {
                let key = i % keys;
                let r = producer
                    .send_with_selector(
                        make_message(spec, i),
                        |mqs, _msg, key: &u64| mqs.get((*key as usize) % mqs.len()).cloned(),
                        key,
                    )
                    .await?;
                if let Some(r) = r {
                    let mut fields = sent(i, &r);
                    fields["key"] = json!(key);
                    emit("sent", fields);
                }
            }
        }
        "batch" => {
            let msgs: Vec<Message> = (0..count).map(|i| make_message(spec, i)).collect();
            let r = producer.send_batch(msgs).await?;
            emit("sent", sent(0, &r));
        }
        other => emit("error", json!({"error": format!("unknown mode {other}")})),
    }
    producer.shutdown().await;
    Ok(())
}

/// A local transaction state by the spec's name for it.
fn transaction_state(name: &str) -> Result<LocalTransactionState, String> {
    match name {
        "commit" => Ok(LocalTransactionState::CommitMessage),
        "rollback" => Ok(LocalTransactionState::RollbackMessage),
        "unknown" => Ok(LocalTransactionState::Unknown),
        other => Err(format!("unknown transaction state {other}")),
    }
}

/// The local transactions: message `i` (the number its body ends with) executes
/// `execute[i % len]`; a check of any message answers `check`.
struct LocalTransactions {
    execute: Vec<LocalTransactionState>,
    check: LocalTransactionState,
    /// The transaction id each message had when its local transaction ran, by index.
    ids: Mutex<HashMap<u64, Option<String>>>,
}

fn index_of(body: Option<&[u8]>) -> Option<u64> {
    let body = String::from_utf8_lossy(body?).into_owned();
    body.rsplit('-').next()?.parse().ok()
}

impl TransactionListener for LocalTransactions {
    fn execute_local_transaction(
        &self,
        msg: &dyn MessageTrait,
        _arg: Option<&(dyn std::any::Any + Send + Sync)>,
    ) -> LocalTransactionState {
        let Some(i) = index_of(msg.get_body().map(|b| &b[..])) else {
            emit(
                "error",
                json!({"error": "a transactional message without an index"}),
            );
            return LocalTransactionState::Unknown;
        };
        let id = msg.transaction_id().map(|t| t.as_str().to_owned());
        self.ids.lock().unwrap().insert(i, id);
        self.execute[(i as usize) % self.execute.len()]
    }

    fn check_local_transaction(&self, msg: &MessageExt) -> LocalTransactionState {
        let mut info = describe(msg, &[]);
        info["transaction_id"] = json!(msg.transaction_id().map(|t| t.as_str()));
        info["state"] = json!(self.check.to_string());
        emit("checked", info);
        self.check
    }
}

/// Sends `count` messages in transactions, then stays up to answer the broker's checks.
async fn transact(rt: Arc<ClientRuntime>, spec: &Value) -> ClientResult<()> {
    let execute: Result<Vec<_>, String> = match spec.get("execute") {
        Some(Value::Array(names)) => names
            .iter()
            .map(|n| transaction_state(n.as_str().unwrap_or_default()))
            .collect(),
        _ => transaction_state(spec_str(spec, "execute", "commit")).map(|s| vec![s]),
    };
    let (execute, check) = match (
        execute,
        transaction_state(spec_str(spec, "check", "commit")),
    ) {
        (Ok(execute), Ok(check)) if !execute.is_empty() => (execute, check),
        (Err(e), _) | (_, Err(e)) => {
            emit("error", json!({ "error": e }));
            return Ok(());
        }
        _ => {
            emit("error", json!({"error": "execute names no state"}));
            return Ok(());
        }
    };
    let transactions = Arc::new(LocalTransactions {
        execute,
        check,
        ids: Mutex::default(),
    });
    let mut producer = TransactionMQProducer::builder(rt)
        .producer_group(spec_str(spec, "group", "rust-transactions").to_owned())
        .name_server_addr(spec_str(spec, "namesrv", "").to_owned())
        .build();
    producer.set_transaction_listener_arc(transactions.clone());
    producer.start().await?;
    for i in 0..spec_u64(spec, "count", 1) {
        let r = producer
            .send_message_in_transaction(make_message(spec, i), None::<()>)
            .await?;
        let mut fields = match &r.send_result {
            Some(s) => sent(i, s),
            None => json!({"i": i}),
        };
        fields["local_state"] = json!(r.local_transaction_state.map(|s| s.to_string()));
        // The broker's id from the send's answer, and the one the listener saw (UNIQ_KEY).
        fields["broker_transaction_id"] = json!(r
            .send_result
            .as_ref()
            .and_then(|s| s.transaction_id.clone()));
        fields["transaction_id"] =
            json!(transactions.ids.lock().unwrap().get(&i).cloned().flatten());
        emit("sent", fields);
    }
    let stdin_closed = async {
        let mut sink = Vec::new();
        let _ = tokio::io::stdin().read_to_end(&mut sink).await;
    };
    let timeout = Duration::from_secs(spec_u64(spec, "timeout", 60));
    let _ = tokio::time::timeout(timeout, stdin_closed).await;
    producer.shutdown().await;
    Ok(())
}

/// What a listener does with each message: fail it `fail[body]` times (-1: always) with a
/// retry, else report it received.
struct Behaviour {
    fail: HashMap<String, i64>,
    seen: Mutex<HashMap<String, i64>>,
    props: Vec<String>,
}

impl Behaviour {
    fn accept(&self, m: &MessageExt) -> bool {
        let info = describe(m, &self.props);
        let body = info["body"].as_str().unwrap_or_default().to_owned();
        let mut seen = self.seen.lock().unwrap();
        let n = seen.entry(body.clone()).or_default();
        *n += 1;
        let failing = self.fail.get(&body).copied().unwrap_or(0);
        if failing != 0 && (failing < 0 || *n <= failing) {
            emit("failed", info);
            return false;
        }
        emit("received", info);
        true
    }
}

struct Concurrent(Arc<Behaviour>);

impl MessageListenerConcurrently for Concurrent {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        _context: &ConsumeConcurrentlyContext,
    ) -> ClientResult<ConsumeConcurrentlyStatus> {
        for m in msgs {
            if !self.0.accept(m) {
                return Ok(ConsumeConcurrentlyStatus::ReconsumeLater);
            }
        }
        Ok(ConsumeConcurrentlyStatus::ConsumeSuccess)
    }
}

struct Orderly(Arc<Behaviour>);

impl MessageListenerOrderly for Orderly {
    fn consume_message(
        &self,
        msgs: &[&MessageExt],
        context: &mut ConsumeOrderlyContext,
    ) -> ClientResult<ConsumeOrderlyStatus> {
        context.set_auto_commit(true);
        for m in msgs {
            if !self.0.accept(m) {
                return Ok(ConsumeOrderlyStatus::SuspendCurrentQueueAMoment);
            }
        }
        Ok(ConsumeOrderlyStatus::Success)
    }
}

async fn consume(rt: Arc<ClientRuntime>, spec: &Value) -> ClientResult<()> {
    let model = match spec_str(spec, "model", "clustering") {
        "broadcasting" => MessageModel::Broadcasting,
        _ => MessageModel::Clustering,
    };
    let from = match spec_str(spec, "from", "last") {
        "first" => ConsumeFromWhere::ConsumeFromFirstOffset,
        _ => ConsumeFromWhere::ConsumeFromLastOffset,
    };
    let mut consumer = DefaultMQPushConsumer::builder(rt)
        .client_config(client_config(spec))
        .consumer_group(spec_str(spec, "group", "").to_owned())
        .name_server_addr(spec_str(spec, "namesrv", "").to_owned())
        .message_model(model)
        .consume_from_where(from)
        .rpc_hook(acl_hook(spec))
        .build();
    match spec.get("sql").and_then(Value::as_str) {
        // An SQL92 selector (the broker evaluates it with enablePropertyFilter=true).
        Some(sql) => {
            consumer
                .subscribe_with_selector(
                    spec_str(spec, "topic", ""),
                    Some(rocketmq_client_rust::MessageSelector::by_sql(sql.to_owned())),
                )
                .await?
        }
        None => {
            consumer
                .subscribe(
                    spec_str(spec, "topic", ""),
                    spec_str(spec, "expression", "*"),
                )
                .await?
        }
    }
    let behaviour = Arc::new(Behaviour {
        fail: spec
            .get("fail")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_i64().unwrap_or(0)))
                    .collect()
            })
            .unwrap_or_default(),
        seen: Mutex::default(),
        props: spec
            .get("read_properties")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
    });
    if spec_str(spec, "mode", "concurrent") == "orderly" {
        consumer.register_message_listener_orderly(Orderly(behaviour));
    } else {
        consumer.register_message_listener_concurrently(Concurrent(behaviour));
    }
    consumer.start().await?;
    emit("ready", json!({}));
    let stdin_closed = async {
        let mut sink = Vec::new();
        let _ = tokio::io::stdin().read_to_end(&mut sink).await;
    };
    let timeout = Duration::from_secs(spec_u64(spec, "timeout", 60));
    let _ = tokio::time::timeout(timeout, stdin_closed).await;
    consumer.shutdown().await;
    Ok(())
}

async fn pull(rt: Arc<ClientRuntime>, spec: &Value) -> ClientResult<()> {
    let consumer = rocketmq_client_rust::DefaultLitePullConsumer::builder(rt)
        .consumer_group(spec_str(spec, "group", "").to_owned())
        .name_server_addr(spec_str(spec, "namesrv", "").to_owned())
        .consume_from_where(ConsumeFromWhere::ConsumeFromFirstOffset)
        .build()?;
    consumer
        .subscribe_with_expression(
            spec_str(spec, "topic", ""),
            spec_str(spec, "expression", "*"),
        )
        .await?;
    consumer.start().await?;
    let expect = spec_u64(spec, "expect", 1) as usize;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(spec_u64(spec, "timeout", 30));
    let mut got = 0;
    while got < expect && tokio::time::Instant::now() < deadline {
        for m in consumer.poll_with_timeout(1000).await {
            emit("received", describe(&m, &[]));
            got += 1;
        }
    }
    consumer.shutdown().await;
    Ok(())
}

/// Looks messages up by key (QUERY_MESSAGE) and each found one again by its id
/// (VIEW_MESSAGE_BY_ID after decoding the offset message id).
async fn query(rt: Arc<ClientRuntime>, spec: &Value) -> ClientResult<()> {
    let mut producer = DefaultMQProducer::builder(rt)
        .producer_group(spec_str(spec, "group", "rust-admin").to_owned())
        .name_server_addr(spec_str(spec, "namesrv", "").to_owned())
        .build();
    producer.start().await?;
    let topic = spec_str(spec, "topic", "");
    let found = producer
        .query_message(topic, spec_str(spec, "key", ""), 32, 0, u64::MAX / 2)
        .await?;
    for m in found.message_list() {
        emit("found", describe(m, &[]));
    }
    if let Some(id) = spec.get("offset_msg_id").and_then(Value::as_str) {
        let m = producer.view_message(topic, id).await?;
        emit("viewed", describe(&m, &[]));
    }
    producer.shutdown().await;
    Ok(())
}

fn main() {
    let spec: Value = match std::env::args().nth(1).map(|a| serde_json::from_str(&a)) {
        Some(Ok(v)) => v,
        _ => {
            emit(
                "error",
                json!({"error": "usage: rocketpy-compat-rust-client '<json spec>'"}),
            );
            std::process::exit(2);
        }
    };
    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let outcome = tokio_rt.block_on(async {
        let owner = RuntimeOwner::plan(RuntimeConfig {
            thread_name: "rocketpy-compat".into(),
            ..Default::default()
        })
        .map_err(|e| ClientError::internal("plan client runtime", e))?
        .build()
        .map_err(|e| ClientError::internal("create client runtime", e))?;
        let telemetry = rocketmq_observability::install_global(
            &rocketmq_observability::TelemetryBootstrapConfig::default(),
        )
        .map_err(|e| ClientError::internal("initialize telemetry", e))?;
        let rt = ClientRuntime::try_new(
            owner.root_context().component("client"),
            ClientRuntimeConfig::default(),
            telemetry.handle(),
        )?;
        let result = match spec_str(&spec, "action", "") {
            "produce" => produce(rt.clone(), &spec).await,
            "transact" => transact(rt.clone(), &spec).await,
            "consume" => consume(rt.clone(), &spec).await,
            "pull" => pull(rt.clone(), &spec).await,
            "query" => query(rt.clone(), &spec).await,
            other => {
                emit("error", json!({"error": format!("unknown action {other}")}));
                Ok(())
            }
        };
        let _ = rt.shutdown().await;
        drop(telemetry);
        drop(owner);
        result
    });
    match outcome {
        Ok(()) => emit("done", json!({})),
        Err(e) => {
            emit("error", json!({"error": e.to_string(), "detail": format!("{e:?}")}));
            std::process::exit(1);
        }
    }
}
