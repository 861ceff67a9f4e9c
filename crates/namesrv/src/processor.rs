//! Name server request processors.

use std::sync::Arc;

use rocketpy_protocol::body::topic::register_body_data_version;
use rocketpy_protocol::body::{fastjson, DataVersion, RegisterBrokerBody, TopicList};
use rocketpy_protocol::code::{request, response};
use rocketpy_protocol::header::{
    AddWritePermOfBrokerResponseHeader, BrokerNameRequestHeader,
    DeleteTopicFromNamesrvRequestHeader, GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader, QueryDataVersionRequestHeader, QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader, RegisterBrokerResponseHeader, UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
};
use rocketpy_protocol::limits::JsonLimits;
use rocketpy_protocol::RemotingCommand;
use rocketpy_remoting::{Connection, ProcessError, ProcessResult, ProcessorTable, Reply};
use serde::Serialize;

use crate::route_info::{Registration, RouteInfoManager};

fn ok(req: &RemotingCommand) -> RemotingCommand {
    RemotingCommand::response_to(req, response::SUCCESS)
}

fn json_body<T: Serialize>(value: &T) -> Result<Vec<u8>, ProcessError> {
    serde_json::to_vec(value).map_err(|e| ProcessError::new(response::SYSTEM_ERROR, e.to_string()))
}

fn register_broker(
    routes: &RouteInfoManager,
    conn: &Arc<Connection>,
    req: &RemotingCommand,
) -> ProcessResult {
    let h: RegisterBrokerRequestHeader = req.decode_header()?;
    let body_crc = h.body_crc32.unwrap_or(0);
    if body_crc != 0 {
        let crc = (crc32fast::hash(&req.body) & 0x7FFF_FFFF) as i64;
        if crc != body_crc {
            return Err(ProcessError::new(response::SYSTEM_ERROR, "crc32 not match"));
        }
    }
    if h.compressed.unwrap_or(false) {
        // RocketMQ's compressed body is only produced with `compressedRegister=true`
        // (off by default); refuse it clearly instead of guessing.
        return Err(ProcessError::new(
            response::SYSTEM_ERROR,
            "compressed REGISTER_BROKER bodies are not supported; set compressedRegister=false",
        ));
    }
    let registration = |data_version, topics| Registration {
        cluster_name: h.cluster_name.clone(),
        broker_addr: h.broker_addr.clone(),
        broker_name: h.broker_name.clone(),
        broker_id: h.broker_id,
        ha_server_addr: h.ha_server_addr.clone().unwrap_or_default(),
        data_version,
        topics,
        connection_id: conn.id(),
    };
    // Brokers re-send their whole topic table every registerNameServerPeriod; it is read only
    // when its version changed (or the broker is new).
    let quick = register_body_data_version(&req.body)
        .map(|version| routes.register_broker(registration(version, None)))
        .filter(|r| !r.needs_topics);
    let result = match quick {
        Some(result) => result,
        None => {
            let body: RegisterBrokerBody = if req.body.is_empty() {
                RegisterBrokerBody::default()
            } else {
                fastjson::from_slice_within(&req.body, JsonLimits::TABLE).map_err(|e| {
                    ProcessError::new(
                        response::SYSTEM_ERROR,
                        format!("invalid RegisterBrokerBody: {e}"),
                    )
                })?
            };
            let wrapper = body.topic_config_serialize_wrapper;
            routes.register_broker(registration(
                wrapper.data_version,
                Some(wrapper.topic_config_table.into_values().collect()),
            ))
        }
    };
    let resp = ok(req)
        .with_header(&RegisterBrokerResponseHeader {
            ha_server_addr: Some(result.ha_server_addr),
            master_addr: Some(result.master_addr),
        })
        .with_body(br#"{"table":{}}"#.to_vec());
    Ok(Reply::Now(Some(resp)))
}

/// QUERY_DATA_VERSION: the broker's `DataVersion` (JSON body) against the one it last
/// registered; the answer's `changed` tells it whether to register, and an unchanged version
/// refreshes its liveness as a registration would.
fn query_data_version(routes: &RouteInfoManager, req: &RemotingCommand) -> ProcessResult {
    let h: QueryDataVersionRequestHeader = req.decode_header()?;
    let version: DataVersion = fastjson::from_slice(&req.body).map_err(|e| {
        ProcessError::new(
            response::SYSTEM_ERROR,
            format!("invalid DataVersion body: {e}"),
        )
    })?;
    let (changed, known) = routes.query_data_version(&h.broker_addr, &version);
    let mut resp = ok(req).with_header(&QueryDataVersionResponseHeader {
        changed: Some(changed),
    });
    if let Some(known) = known {
        resp = resp.with_body(json_body(&known)?);
    }
    Ok(Reply::Now(Some(resp)))
}

fn unregister_broker(routes: &RouteInfoManager, req: &RemotingCommand) -> ProcessResult {
    let h: UnRegisterBrokerRequestHeader = req.decode_header()?;
    routes.unregister_broker(&h.broker_addr);
    Ok(Reply::Now(Some(ok(req))))
}

fn route_by_topic(routes: &RouteInfoManager, req: &RemotingCommand) -> ProcessResult {
    let h: GetRouteInfoRequestHeader = req.decode_header()?;
    let topic = h.topic.as_str();
    match routes.topic_route(topic) {
        Some(route) => Ok(Reply::Now(Some(ok(req).with_body(json_body(&route)?)))),
        None => Err(ProcessError::new(
            response::TOPIC_NOT_EXIST,
            format!("No topic route info in name server for the topic: {topic}"),
        )),
    }
}

/// The name server's processors over `routes`.
pub fn processor_table(routes: Arc<RouteInfoManager>) -> ProcessorTable {
    let mut table = ProcessorTable::new();
    let r = routes.clone();
    table.register(
        request::REGISTER_BROKER,
        Arc::new(move |conn: &Arc<Connection>, req: &RemotingCommand| {
            register_broker(&r, conn, req)
        }),
    );
    let r = routes.clone();
    table.register(
        request::QUERY_DATA_VERSION,
        Arc::new(move |_: &Arc<Connection>, req: &RemotingCommand| query_data_version(&r, req)),
    );
    let r = routes.clone();
    table.register(
        request::UNREGISTER_BROKER,
        Arc::new(move |_: &Arc<Connection>, req: &RemotingCommand| unregister_broker(&r, req)),
    );
    let r = routes.clone();
    table.register(
        request::GET_ROUTEINFO_BY_TOPIC,
        Arc::new(move |_: &Arc<Connection>, req: &RemotingCommand| route_by_topic(&r, req)),
    );
    let r = routes.clone();
    table.register(
        request::GET_BROKER_CLUSTER_INFO,
        Arc::new(move |_: &Arc<Connection>, req: &RemotingCommand| {
            Ok(Reply::Now(Some(
                ok(req).with_body(json_body(&r.cluster_info())?),
            )))
        }),
    );
    let r = routes.clone();
    table.register(
        request::GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        Arc::new(move |_: &Arc<Connection>, req: &RemotingCommand| {
            let body = json_body(&TopicList {
                topic_list: r.topic_list(),
            })?;
            Ok(Reply::Now(Some(ok(req).with_body(body))))
        }),
    );
    register_admin(&mut table, &routes);
    table.on_close(Arc::new(move |conn: &Arc<Connection>| {
        routes.on_connection_closed(conn.id())
    }));
    table
}

/// mqadmin's requests: wipeWritePerm / addWritePerm, deleteTopic, topicList -c.
fn register_admin(table: &mut ProcessorTable, routes: &Arc<RouteInfoManager>) {
    for (code, add) in [
        (request::WIPE_WRITE_PERM_OF_BROKER, false),
        (request::ADD_WRITE_PERM_OF_BROKER, true),
    ] {
        let r = routes.clone();
        table.register(
            code,
            Arc::new(move |_: &Arc<Connection>, req: &RemotingCommand| {
                let h: BrokerNameRequestHeader = req.decode_header()?;
                let count = r.set_write_perm(&h.broker_name, add);
                tracing::info!(broker = %h.broker_name, add, topics = count, "write permission changed");
                let resp = if add {
                    ok(req).with_header(&AddWritePermOfBrokerResponseHeader {
                        add_topic_count: count,
                    })
                } else {
                    ok(req).with_header(&WipeWritePermOfBrokerResponseHeader {
                        wipe_topic_count: count,
                    })
                };
                Ok(Reply::Now(Some(resp)))
            }),
        );
    }
    let r = routes.clone();
    table.register(
        request::DELETE_TOPIC_IN_NAMESRV,
        Arc::new(move |_: &Arc<Connection>, req: &RemotingCommand| {
            let h: DeleteTopicFromNamesrvRequestHeader = req.decode_header()?;
            let cluster = h.cluster_name.as_deref().filter(|c| !c.is_empty());
            r.delete_topic(&h.topic, cluster);
            tracing::info!(topic = %h.topic, "topic route deleted");
            Ok(Reply::Now(Some(ok(req))))
        }),
    );
    let r = routes.clone();
    table.register(
        request::GET_TOPICS_BY_CLUSTER,
        Arc::new(move |_: &Arc<Connection>, req: &RemotingCommand| {
            let h: GetTopicsByClusterRequestHeader = req.decode_header()?;
            let body = json_body(&TopicList {
                topic_list: r.topics_of_cluster(&h.cluster),
            })?;
            Ok(Reply::Now(Some(ok(req).with_body(body))))
        }),
    );
}

#[cfg(test)]
mod tests {
    /// Every code the name server serves has an access rule, and every rule is for a code it
    /// serves.
    #[test]
    fn every_served_code_has_an_access_rule() {
        let routes = std::sync::Arc::new(crate::route_info::RouteInfoManager::new());
        let served = super::processor_table(routes).codes();
        let table = rocketpy_acl::rules::NAMESRV;
        assert_eq!(rocketpy_acl::rules::check_coverage(table, &served), Ok(()));
    }
}
