//! Topic routes from the name servers (GET_ROUTEINFO_BY_TOPIC), cached briefly, and what the
//! proxy makes of them: the message queues a 5.x client sees (every broker's queues, each
//! reached through this proxy) and each broker's master address.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rocketpy_protocol::body::{fastjson, TopicConfig, TopicRouteData};
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::flag::perm;
use rocketpy_protocol::header::{GetRouteInfoRequestHeader, GetTopicConfigRequestHeader};
use rocketpy_protocol::topic_attributes::{self, TopicMessageType};
use rocketpy_remoting::RemotingClient;

use crate::pb::{self, Code};
use crate::status::ProxyError;

/// How long a route is used before it is asked again (a new topic or broker shows within it).
const ROUTE_TTL: Duration = Duration::from_secs(3);
/// The master's `brokerId`.
const MASTER_ID: i64 = 0;

/// One writable or readable queue of a topic on one broker.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BrokerQueue {
    /// The broker's name.
    pub broker_name: String,
    /// The queue.
    pub queue_id: i32,
    /// The master's address.
    pub addr: String,
}

/// A topic's route as the proxy uses it.
#[derive(Debug, Clone)]
pub struct Route {
    /// The name servers' answer.
    pub data: TopicRouteData,
    /// The topic's `message.type` (GET_TOPIC_CONFIG of a master); None: no type (a topic
    /// made without one, or a broker that does not say), which takes every type.
    pub message_type: Option<TopicMessageType>,
    fetched: Instant,
}

impl Route {
    /// The master address of `broker_name`.
    pub fn master(&self, broker_name: &str) -> Option<&str> {
        self.data
            .broker_datas
            .iter()
            .find(|b| b.broker_name == broker_name)
            .and_then(|b| b.broker_addrs.get(&MASTER_ID))
            .map(String::as_str)
    }

    /// Writable queues of brokers with a master, sorted by broker name and queue id.
    pub fn write_queues(&self) -> Vec<BrokerQueue> {
        self.queues(|qd| perm::is_writeable(qd.perm), |qd| qd.write_queue_nums)
    }

    /// Readable queues of brokers with a master, sorted likewise.
    pub fn read_queues(&self) -> Vec<BrokerQueue> {
        self.queues(|qd| perm::is_readable(qd.perm), |qd| qd.read_queue_nums)
    }

    fn queues(
        &self,
        usable: impl Fn(&rocketpy_protocol::body::QueueData) -> bool,
        count: impl Fn(&rocketpy_protocol::body::QueueData) -> i32,
    ) -> Vec<BrokerQueue> {
        let mut out: Vec<BrokerQueue> = self
            .data
            .queue_datas
            .iter()
            .filter(|qd| usable(qd))
            .filter_map(|qd| {
                let addr = self.master(&qd.broker_name)?.to_owned();
                Some((0..count(qd).max(0)).map(move |q| BrokerQueue {
                    broker_name: qd.broker_name.clone(),
                    queue_id: q,
                    addr: addr.clone(),
                }))
            })
            .flatten()
            .collect();
        out.sort();
        out
    }

    /// The message types the topic's queues accept (RocketMQ's proxy: the topic's type, all
    /// four for MIXED; here also all four for a topic without a type, as 4.x topics take
    /// every type).
    pub fn accept_message_types(&self) -> Vec<i32> {
        let one = |t: pb::MessageType| vec![t as i32];
        match self.message_type {
            Some(TopicMessageType::Normal) => one(pb::MessageType::Normal),
            Some(TopicMessageType::Fifo) => one(pb::MessageType::Fifo),
            Some(TopicMessageType::Delay) => one(pb::MessageType::Delay),
            Some(TopicMessageType::Transaction) => one(pb::MessageType::Transaction),
            Some(TopicMessageType::Unspecified) => one(pb::MessageType::Unspecified),
            Some(TopicMessageType::Mixed) | None => vec![
                pb::MessageType::Normal as i32,
                pb::MessageType::Fifo as i32,
                pb::MessageType::Delay as i32,
                pb::MessageType::Transaction as i32,
            ],
        }
    }

    /// The queues a 5.x client sees: each broker's queues with their permission, all
    /// reached at `endpoints` (this proxy), accepting the topic's message types.
    pub fn message_queues(
        &self,
        topic: &pb::Resource,
        endpoints: &pb::Endpoints,
    ) -> Vec<pb::MessageQueue> {
        let mut out = Vec::new();
        let accept = self.accept_message_types();
        let mut datas = self.data.queue_datas.clone();
        datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
        for qd in datas {
            if self.master(&qd.broker_name).is_none() {
                continue;
            }
            for q in 0..qd.read_queue_nums.max(qd.write_queue_nums).max(0) {
                let read = q < qd.read_queue_nums && perm::is_readable(qd.perm);
                let write = q < qd.write_queue_nums && perm::is_writeable(qd.perm);
                let permission = match (read, write) {
                    (true, true) => pb::Permission::ReadWrite,
                    (true, false) => pb::Permission::Read,
                    (false, true) => pb::Permission::Write,
                    (false, false) => pb::Permission::None,
                };
                out.push(pb::MessageQueue {
                    topic: Some(topic.clone()),
                    id: q,
                    permission: permission as i32,
                    broker: Some(pb::Broker {
                        name: qd.broker_name.clone(),
                        id: 0,
                        endpoints: Some(endpoints.clone()),
                    }),
                    accept_message_types: accept.clone(),
                });
            }
        }
        out
    }
}

/// Routes by topic, and broker masters by name.
pub struct Routes {
    client: RemotingClient,
    namesrv: Vec<String>,
    timeout: Duration,
    cache: Mutex<HashMap<String, Route>>,
    masters: Mutex<HashMap<String, String>>,
}

impl Routes {
    /// Routes asked of `namesrv` (`host:port`, `;`-separated) through `client`.
    pub fn new(client: RemotingClient, namesrv: &str, timeout: Duration) -> Self {
        Routes {
            client,
            namesrv: namesrv
                .split(';')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            timeout,
            cache: Mutex::new(HashMap::new()),
            masters: Mutex::new(HashMap::new()),
        }
    }

    /// The route of `topic` (TOPIC_NOT_FOUND when the name servers know none).
    pub async fn route(&self, topic: &str) -> Result<Route, ProxyError> {
        if let Some(r) = self.cache.lock().get(topic) {
            if r.fetched.elapsed() < ROUTE_TTL {
                return Ok(r.clone());
            }
        }
        let data = self.fetch(topic).await?;
        {
            let mut masters = self.masters.lock();
            for b in &data.broker_datas {
                if let Some(addr) = b.broker_addrs.get(&MASTER_ID) {
                    masters.insert(b.broker_name.clone(), addr.clone());
                }
            }
        }
        let message_type = self.message_type(topic, &data).await;
        let route = Route {
            data,
            message_type,
            fetched: Instant::now(),
        };
        self.cache.lock().insert(topic.to_owned(), route.clone());
        Ok(route)
    }

    /// The topic's `message.type` as a master of its route keeps it (None when it has none
    /// or cannot say: a broker without GET_TOPIC_CONFIG).
    async fn message_type(&self, topic: &str, data: &TopicRouteData) -> Option<TopicMessageType> {
        let addr = data
            .broker_datas
            .iter()
            .find_map(|b| b.broker_addrs.get(&MASTER_ID))?;
        let req = crate::request::remoting_request(request::GET_TOPIC_CONFIG).with_header(
            &GetTopicConfigRequestHeader {
                topic: topic.to_owned(),
                lo: None,
            },
        );
        let resp = self.client.invoke(addr, req, self.timeout).await.ok()?;
        if resp.code != response::SUCCESS {
            return None;
        }
        let cfg = fastjson::from_slice::<TopicConfig>(&resp.body).ok()?;
        topic_attributes::message_type(&cfg.attributes)
    }

    async fn fetch(&self, topic: &str) -> Result<TopicRouteData, ProxyError> {
        let mut last = ProxyError::new(Code::InternalServerError, "no name server configured");
        for addr in &self.namesrv {
            let req = crate::request::remoting_request(request::GET_ROUTEINFO_BY_TOPIC)
                .with_header(&GetRouteInfoRequestHeader {
                    topic: topic.to_owned(),
                });
            match self.client.invoke(addr, req, self.timeout).await {
                Ok(resp) if resp.code == response::SUCCESS => {
                    return fastjson::from_slice::<TopicRouteData>(&resp.body).map_err(|e| {
                        ProxyError::new(
                            Code::InternalServerError,
                            format!("bad route of {topic}: {e}"),
                        )
                    });
                }
                Ok(resp) if resp.code == response::TOPIC_NOT_EXIST => {
                    return Err(ProxyError::new(
                        Code::TopicNotFound,
                        format!("topic {topic} not found"),
                    ));
                }
                Ok(resp) => last = ProxyError::from_remoting(resp.code, resp.remark.as_deref()),
                Err(e) => last = e.into(),
            }
        }
        Err(last)
    }

    /// The master address of `broker_name`, known from any route fetched (else from
    /// `topic`'s route).
    pub async fn master(&self, broker_name: &str, topic: &str) -> Result<String, ProxyError> {
        if let Some(addr) = self.masters.lock().get(broker_name) {
            return Ok(addr.clone());
        }
        let route = self.route(topic).await?;
        route.master(broker_name).map(str::to_owned).ok_or_else(|| {
            ProxyError::new(
                Code::NotFound,
                format!("broker {broker_name} has no master serving {topic}"),
            )
        })
    }

    /// Every master of `topic`'s route.
    pub async fn masters_of(&self, topic: &str) -> Result<Vec<(String, String)>, ProxyError> {
        let route = self.route(topic).await?;
        Ok(route
            .data
            .broker_datas
            .iter()
            .filter_map(|b| {
                Some((
                    b.broker_name.clone(),
                    b.broker_addrs.get(&MASTER_ID)?.clone(),
                ))
            })
            .collect())
    }
}
