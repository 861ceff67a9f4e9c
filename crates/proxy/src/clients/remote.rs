//! What the proxy fetches and sends for its clients: a group's settings read from a broker
//! (cached in [`super::GroupSettingsCache`]), the settings answered to a client, and the
//! producer heartbeats that route brokers' transaction checks to the proxy.

use super::*;
use crate::state::ProxyInner;

/// A group's settings as read at most [`GROUP_SETTINGS_TTL`] ago (receives of clients
/// without settings).
pub async fn recent_group_settings(
    proxy: &ProxyInner,
    group: &str,
    topic: &str,
) -> Result<GroupSettings, ProxyError> {
    if let Some(s) = proxy.group_settings.get(group, topic) {
        return Ok(s);
    }
    group_settings(proxy, group, topic).await
}

/// Reads a group's settings from a master of `topic` (and keeps them for
/// [`recent_group_settings`]).
pub async fn group_settings(
    proxy: &ProxyInner,
    group: &str,
    topic: &str,
) -> Result<GroupSettings, ProxyError> {
    let mut settings = GroupSettings {
        fifo: false,
        retry_max_times: 16,
    };
    let masters = proxy.routes.masters_of(topic).await?;
    let Some((_, addr)) = masters.first() else {
        return Ok(settings);
    };
    let req = crate::request::remoting_request(request::GET_SUBSCRIPTIONGROUP_CONFIG).with_header(
        &GetSubscriptionGroupConfigRequestHeader {
            group: group.to_owned(),
        },
    );
    let resp = proxy
        .remoting
        .invoke(addr, req, proxy.config.remoting_timeout)
        .await?;
    if resp.code == response::SUCCESS {
        if let Ok(v) = fastjson::from_slice::<serde_json::Value>(&resp.body) {
            settings.fifo = v["consumeMessageOrderly"].as_bool().unwrap_or(false);
            settings.retry_max_times = v["retryMaxTimes"].as_i64().unwrap_or(16) as i32;
        }
    }
    proxy.group_settings.put(group, topic, settings);
    Ok(settings)
}

/// The server's answer to a client's settings, or why they are refused.
pub async fn answer_settings(
    proxy: &ProxyInner,
    mut settings: pb::Settings,
) -> Result<pb::Settings, ProxyError> {
    match settings.pub_sub.take() {
        Some(pb::settings::PubSub::Publishing(mut p)) => {
            p.max_body_size = MAX_BODY_SIZE as i32;
            p.validate_message_type = true;
            settings.pub_sub = Some(pb::settings::PubSub::Publishing(p));
            settings.backoff_policy = Some(pb::RetryPolicy {
                max_attempts: 3,
                strategy: Some(pb::retry_policy::Strategy::ExponentialBackoff(
                    pb::ExponentialBackoff {
                        initial: Some(duration(10)),
                        max: Some(duration(1000)),
                        multiplier: 2.0,
                    },
                )),
            });
        }
        Some(pb::settings::PubSub::Subscription(mut s)) => {
            let group = s.group.as_ref().map(wrap).unwrap_or_default();
            let topic = s
                .subscriptions
                .iter()
                .find_map(|e| e.topic.as_ref().map(wrap))
                .unwrap_or_default();
            let gs = if group.is_empty() || topic.is_empty() {
                GroupSettings {
                    fifo: false,
                    retry_max_times: 16,
                }
            } else {
                group_settings(proxy, &group, &topic)
                    .await
                    .unwrap_or(GroupSettings {
                        fifo: false,
                        retry_max_times: 16,
                    })
            };
            s.fifo = Some(gs.fifo);
            s.receive_batch_size = Some(RECEIVE_BATCH_SIZE);
            s.long_polling_timeout = Some(duration(proxy.config.max_long_polling_ms));
            settings.pub_sub = Some(pb::settings::PubSub::Subscription(s));
            settings.backoff_policy = Some(pb::RetryPolicy {
                max_attempts: gs.retry_max_times + 1,
                strategy: Some(pb::retry_policy::Strategy::CustomizedBackoff(
                    pb::CustomizedBackoff {
                        next: CONSUMER_BACKOFF_S
                            .iter()
                            .map(|s| duration(s * 1000))
                            .collect(),
                    },
                )),
            });
        }
        None => {
            return Err(ProxyError::new(
                Code::BadRequest,
                "settings name neither publishing nor subscription",
            ))
        }
    }
    settings.metric = Some(pb::Metric {
        on: false,
        endpoints: None,
    });
    Ok(settings)
}

/// The telemetry reply carrying `settings`.
pub fn settings_command(settings: pb::Settings) -> pb::TelemetryCommand {
    pb::TelemetryCommand {
        status: Some(ok()),
        command: Some(pb::telemetry_command::Command::Settings(settings)),
    }
}

/// Heartbeats the masters of every published topic as a producer of the topic's group, so
/// the brokers send their transaction checks of those topics to this proxy.
pub async fn heartbeat_producers(proxy: &Arc<ProxyInner>) {
    for topic in proxy.clients.all_published_topics() {
        let Ok(masters) = proxy.routes.masters_of(&topic).await else {
            continue;
        };
        let body = HeartbeatData {
            client_id: PROXY_PRODUCER_CLIENT_ID.to_owned(),
            producer_data_set: vec![ProducerData {
                group_name: topic.clone(),
            }],
            consumer_data_set: Vec::new(),
        };
        let Ok(json) = serde_json::to_vec(&body) else {
            continue;
        };
        for (_, addr) in masters {
            let req = crate::request::remoting_request(request::HEART_BEAT).with_body(json.clone());
            if let Err(e) = proxy
                .remoting
                .invoke(&addr, req, proxy.config.remoting_timeout)
                .await
            {
                tracing::debug!(%addr, error = %e, "producer heartbeat to a broker failed");
            }
        }
    }
}
