//! Topic routes from the name servers (GET_ROUTEINFO_BY_TOPIC), cached briefly, and what the
//! proxy makes of them: the message queues a 5.x client sees (every broker's queues, each
//! reached through this proxy) and each broker's master address.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rocketpy_protocol::body::{fastjson, TopicRouteData};
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::flag::perm;
use rocketpy_protocol::header::GetRouteInfoRequestHeader;
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

    /// The queues a 5.x client sees: each broker's queues with their permission, all
    /// reached at `endpoints` (this proxy). Topics carry no message type in rocketpy and
    /// 4.x, so every queue accepts every type, as a 4.x topic does.
    pub fn message_queues(
        &self,
        topic: &pb::Resource,
        endpoints: &pb::Endpoints,
    ) -> Vec<pb::MessageQueue> {
        let mut out = Vec::new();
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
                    accept_message_types: vec![
                        pb::MessageType::Normal as i32,
                        pb::MessageType::Fifo as i32,
                        pb::MessageType::Delay as i32,
                        pb::MessageType::Transaction as i32,
                    ],
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
        let route = Route {
            data,
            fetched: Instant::now(),
        };
        self.cache.lock().insert(topic.to_owned(), route.clone());
        Ok(route)
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
