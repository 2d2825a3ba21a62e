//! What `mad cm` prints: one text line per event (and per step this side
//! takes), or under `--json` the same as objects collected for one JSON
//! result at the end:
//!
//! ```text
//! {"command":"cm","version":..,"complete":B,"mode":"listen"|"connect",
//!  "service_id":HEX64,"local":{"lid":N,"gid":TEXT},
//!  "events":[{"side":"local"|"peer","conn":N,"event":NAME, ...}]}
//! ```
//! NAME is the text line's second word: an rdma_cm event
//! (`CONNECT_REQUEST`, `CONNECT_RESPONSE`, `ESTABLISHED`, `REJECTED`,
//! `UNREACHABLE`, `CONNECT_ERROR`, `DISCONNECTED`, `TIMEWAIT_EXIT`,
//! `DEVICE_REMOVAL`) or a step of this side (`disconnecting`, `MRA`).
//! `conn` is the local Communication ID (0 for a listener's event).
//! Events with connection parameters carry `info`
//! (`{"remote_lid","remote_gid","remote_qpn","remote_psn","remote_ca_guid","mtu","responder_resources","initiator_depth"}`),
//! `CONNECT_REQUEST` also `service_id`; `REJECTED` has `reason` (the
//! number) and `reason_name`; `CONNECT_ERROR` `why`; `DISCONNECTED`
//! `cause` (always, where the text shows it with `-v`); a listener's
//! `DEVICE_REMOVAL` `listener_service_id`; `MRA` `service_timeout` and
//! `accept_in_ms`. `side` is `peer` for the built-in fabric's listener
//! that `mad --sim cm connect` starts.

use std::cell::RefCell;
use std::net::Ipv6Addr;

use mad_cm::{CmEvent, ConnId, ConnInfo};

use crate::command::Invocation;
use crate::json::{u64_hex, Json, JsonExt};

/// Where the events go: text lines now, or JSON objects for the end.
pub(super) struct Report {
    /// `-v`: name each disconnect's cause in the text.
    pub verbose: bool,
    /// `--json`: the events so far.
    json: Option<RefCell<Vec<Json>>>,
}

impl Report {
    pub(super) fn new(verbose: bool, json: bool) -> Self {
        Self {
            verbose,
            json: json.then(|| RefCell::new(Vec::new())),
        }
    }

    /// The events collected for `--json` (empty without it).
    pub(super) fn take_json(&self) -> Vec<Json> {
        self.json.as_ref().map(RefCell::take).unwrap_or_default()
    }

    /// A step of this side (`disconnecting`, `MRA`): `text` after the ID,
    /// or `fields` in the JSON event.
    pub(super) fn step(
        &self,
        inv: &mut Invocation<'_, '_>,
        id: ConnId,
        name: &str,
        text: &str,
        fields: Json,
    ) {
        match &self.json {
            Some(events) => {
                let mut j = event_obj("local", id, name);
                if let (Json::Object(o), Json::Object(f)) = (&mut j, fields) {
                    o.extend(f);
                }
                events.borrow_mut().push(j);
            }
            None => inv.io.out(&format!("{:#010x} {text}\n", id.0)),
        }
    }

    /// One event as rdma_cm names it, from `side` (`local` or `peer`).
    pub(super) fn event(&self, inv: &mut Invocation<'_, '_>, side: &str, id: ConnId, e: &CmEvent) {
        match &self.json {
            Some(events) => events.borrow_mut().push(event_json(side, id, e)),
            None => {
                if side != "local" {
                    inv.io.out(&format!("{side} "));
                }
                inv.io
                    .out(&format!("{:#010x} {}\n", id.0, line(e, self.verbose)));
            }
        }
    }
}

fn describe(info: &ConnInfo) -> String {
    let gid = if info.path.remote_gid == [0; 16] {
        String::new()
    } else {
        format!(" GID {}", Ipv6Addr::from(info.path.remote_gid))
    };
    format!(
        "remote LID {}{gid} QPN {:#x} PSN {:#x} CA {:#018x}, MTU code {}, responder resources {}, initiator depth {}",
        info.path.remote_lid,
        info.remote_qpn,
        info.remote_psn,
        info.remote_ca_guid,
        info.path.mtu,
        info.responder_resources,
        info.initiator_depth,
    )
}

fn info_json(info: &ConnInfo) -> Json {
    let gid = if info.path.remote_gid == [0; 16] {
        Json::Null
    } else {
        Json::String(Ipv6Addr::from(info.path.remote_gid).to_string())
    };
    Json::obj()
        .with("remote_lid", Json::from(info.path.remote_lid))
        .with("remote_gid", gid)
        .with("remote_qpn", Json::from(info.remote_qpn))
        .with("remote_psn", Json::from(info.remote_psn))
        .with("remote_ca_guid", u64_hex(info.remote_ca_guid))
        .with("mtu", Json::from(info.path.mtu))
        .with("responder_resources", Json::from(info.responder_resources))
        .with("initiator_depth", Json::from(info.initiator_depth))
}

/// The event's text after the connection ID; with `verbose`, a
/// disconnect's cause follows its name.
fn line(e: &CmEvent, verbose: bool) -> String {
    match e {
        CmEvent::ConnectRequest { listener, info } => {
            format!(
                "CONNECT_REQUEST service {:#x}: {}",
                listener.0,
                describe(info)
            )
        }
        CmEvent::ConnectResponse { info } => format!("CONNECT_RESPONSE {}", describe(info)),
        CmEvent::Established { info } => format!("ESTABLISHED {}", describe(info)),
        CmEvent::Rejected { reason, .. } => format!("REJECTED reason {} ({reason})", reason.0),
        CmEvent::Unreachable => "UNREACHABLE".to_owned(),
        CmEvent::ConnectError { why } => format!("CONNECT_ERROR {why}"),
        CmEvent::Disconnected { cause, .. } if verbose => {
            format!("DISCONNECTED ({})", cause.describe())
        }
        CmEvent::Disconnected { .. } => "DISCONNECTED".to_owned(),
        CmEvent::TimewaitExit => "TIMEWAIT_EXIT".to_owned(),
        CmEvent::DeviceRemoval => "DEVICE_REMOVAL".to_owned(),
        CmEvent::ListenerRemoved { listener } => {
            format!("DEVICE_REMOVAL listener service {:#x}", listener.0)
        }
    }
}

fn event_obj(side: &str, id: ConnId, name: &str) -> Json {
    Json::obj()
        .with("side", Json::String(side.to_owned()))
        .with("conn", Json::from(id.0))
        .with("event", Json::String(name.to_owned()))
}

fn event_json(side: &str, id: ConnId, e: &CmEvent) -> Json {
    let name = line(e, false)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    let j = event_obj(side, id, &name);
    match e {
        CmEvent::ConnectRequest { listener, info } => j
            .with("service_id", u64_hex(listener.0))
            .with("info", info_json(info)),
        CmEvent::ConnectResponse { info } | CmEvent::Established { info } => {
            j.with("info", info_json(info))
        }
        CmEvent::Rejected { reason, .. } => j
            .with("reason", Json::from(reason.0))
            .with("reason_name", Json::String(reason.to_string())),
        CmEvent::ConnectError { why } => j.with("why", Json::String((*why).to_owned())),
        CmEvent::Disconnected { cause, .. } => {
            j.with("cause", Json::String(cause.describe().to_owned()))
        }
        CmEvent::ListenerRemoved { listener } => j.with("listener_service_id", u64_hex(listener.0)),
        CmEvent::Unreachable | CmEvent::TimewaitExit | CmEvent::DeviceRemoval => j,
    }
}
