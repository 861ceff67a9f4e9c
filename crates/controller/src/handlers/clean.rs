//! CLEAN_BROKER_DATA (mqadmin cleanBrokerMetadata): forget members, or a whole group, that
//! will not come back.

use rocketpy_protocol::code::controller::response::CONTROLLER_INVALID_CLEAN_BROKER_METADATA;

use crate::event::{CleanBrokerDataEvent, Event};
use crate::liveness::Liveness;
use crate::request::CleanBrokerDataRequest;
use crate::result::ControllerResult;
use crate::state::ReplicasInfo;

/// CLEAN_BROKER_DATA, all refusals 2009:
/// - the id list (`"1;2;3"`) does not parse (Java's `Long.valueOf` per `;`-part, trailing
///   empty parts dropped as Java's `split` drops them);
/// - unless `isCleanLivingBroker`: no ids while the group has a master, or any listed id
///   alive;
/// - an unknown group.
///
/// Accepted: a CleanBrokerData event with the ids (none: the whole group).
///
/// One deliberate difference: with `isCleanLivingBroker` RocketMQ ignores the id list and
/// removes the whole group; here the listed ids are what is removed, as the admin asked.
pub fn clean_broker_data(
    state: &ReplicasInfo,
    liveness: &dyn Liveness,
    req: &CleanBrokerDataRequest,
) -> ControllerResult {
    let result = ControllerResult::success();
    let name = &req.broker_name;
    let ids_text = req
        .broker_controller_ids_to_clean
        .as_deref()
        .filter(|s| !s.trim().is_empty());
    // A list of nothing but `;` would be an empty set, which the event reads as "the whole
    // group" (RocketMQ then skips the master check); here it is the whole group, checked.
    let ids = match ids_text.map(parse_ids).transpose() {
        Ok(ids) => ids.filter(|ids| !ids.is_empty()),
        Err(bad) => {
            return result.fail(
                CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                format!(
                    "Please set the option <brokerControllerIdsToClean> according to the format, exception: For input string: \"{bad}\""
                ),
            )
        }
    };
    if !req.is_clean_living_broker {
        let has_master = state
            .group(name)
            .is_some_and(|g| g.sync_state_info.master_broker_id.is_some());
        if ids.is_none() && has_master {
            return result.fail(
                CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                format!("Broker {name} is still alive, clean up failure"),
            );
        }
        if let Some(alive) = ids
            .iter()
            .flatten()
            .find(|id| liveness.is_alive(name, **id))
        {
            return result.fail(
                CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                format!("Broker [{name},  {alive}] is still alive, clean up failure"),
            );
        }
    }
    if state.group(name).is_none() {
        return result.fail(
            CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
            format!("Broker {name} is not existed,clean broker data failure."),
        );
    }
    result.with_event(Event::CleanBrokerData(CleanBrokerDataEvent {
        broker_id_set_to_clean: ids,
        broker_name: name.clone(),
    }))
}

/// `"1;2;3"` → {1, 2, 3}, as Java's `split(";")` then `Long.valueOf` reads it; the part that
/// does not parse is the error.
fn parse_ids(text: &str) -> Result<std::collections::BTreeSet<i64>, String> {
    let parts: Vec<&str> = text.split(';').collect();
    let keep = parts
        .iter()
        .rposition(|p| !p.is_empty())
        .map_or(0, |i| i + 1);
    parts[..keep]
        .iter()
        .map(|p| p.parse::<i64>().map_err(|_| (*p).to_owned()))
        .collect()
}
