//! A directed-route subnet sweep over any `Transport`: NodeInfo of every
//! node, NodeDescription, PortInfo of every port, breadth first, with a
//! bounded number of SMPs in flight. It discovers the same things
//! `ibnetdiscover` does, so the two can be compared.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};

use mad_core::transport::{Address, Qp, Transport, PERMISSIVE_LID};
use mad_core::wire::attr::{NodeDescription, NodeInfo, NodeType, PortInfo};
use mad_core::wire::smp::{DrPath, Smp};
use mad_core::wire::{AttributeId, Method, Repr};

/// One end of a link: (node GUID, port number).
pub type End = (u64, u8);

/// A link, its ends in ascending order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Link(pub End, pub End);

impl Link {
    /// The link between `a` and `b`, normalised.
    #[must_use]
    pub fn new(a: End, b: End) -> Self {
        if a <= b {
            Link(a, b)
        } else {
            Link(b, a)
        }
    }
}

/// What the sweep learnt about a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweptNode {
    /// NodeInfo as first received.
    pub info: NodeInfo,
    /// NodeDescription text.
    pub desc: String,
    /// PortInfo of every port (switch: 0..=N; CA: 1..=N).
    pub ports: BTreeMap<u8, PortInfo>,
    /// Port GUIDs seen in NodeInfo answers, by the port they entered at.
    pub port_guids: BTreeMap<u8, u64>,
    /// The directed route it was first reached by.
    pub path: Vec<u8>,
}

/// The fabric as swept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fabric {
    /// Nodes by node GUID.
    pub nodes: BTreeMap<u64, SweptNode>,
    /// Every link seen.
    pub links: BTreeSet<Link>,
}

/// Counters of one sweep.
#[derive(Debug, Clone, Copy, Default)]
pub struct SweepStats {
    /// SMPs sent (retries included).
    pub sent: usize,
    /// Answers received.
    pub received: usize,
    /// Most SMPs in flight at once.
    pub max_in_flight: usize,
    /// Resends after a timeout.
    pub retries: usize,
    /// Wall time.
    pub elapsed: Duration,
}

#[derive(Debug, Clone)]
enum Query {
    /// NodeInfo at `path`; `from` is the (node, port) it was reached from.
    NodeInfo {
        path: Vec<u8>,
        from: Option<End>,
    },
    NodeDesc {
        path: Vec<u8>,
        guid: u64,
    },
    PortInfo {
        path: Vec<u8>,
        guid: u64,
        port: u8,
    },
}

impl Query {
    fn path(&self) -> &[u8] {
        match self {
            Query::NodeInfo { path, .. }
            | Query::NodeDesc { path, .. }
            | Query::PortInfo { path, .. } => path,
        }
    }
    fn attr(&self) -> (AttributeId, u32) {
        match self {
            Query::NodeInfo { .. } => (AttributeId::NODE_INFO, 0),
            Query::NodeDesc { .. } => (AttributeId::NODE_DESC, 0),
            Query::PortInfo { port, .. } => (AttributeId::PORT_INFO, u32::from(*port)),
        }
    }
}

struct Outstanding {
    q: Query,
    sent: Instant,
    tries: u32,
}

/// TID bits the sweep owns (ibsim and the kernel own the top 16).
const TID_MASK: u64 = (1 << 48) - 1;
const TIMEOUT: Duration = Duration::from_secs(2);
const TRIES: u32 = 3;

/// Sweeps the fabric from `t`'s port with at most `max_in_flight` SMPs
/// outstanding. `idle` is called whenever nothing is ready: it should
/// block briefly until the transport may have something (and may fail
/// the sweep, e.g. on an undeliverable MAD).
///
/// # Errors
/// A send failure, an SMP answered with a non-zero status, an SMP
/// unanswered after 3 tries, or whatever `idle` reports.
pub fn dr_sweep<T: Transport + ?Sized>(
    t: &mut T,
    max_in_flight: usize,
    mut idle: impl FnMut(&mut T) -> Result<(), String>,
) -> Result<(Fabric, SweepStats), String> {
    let start = Instant::now();
    let mut stats = SweepStats::default();
    let mut fabric = Fabric::default();
    let mut queue: VecDeque<Query> = VecDeque::new();
    let mut out: HashMap<u64, Outstanding> = HashMap::new();
    let mut next_tid: u64 = 0x5357_0000_0000; // "SW" in bits 32-47
    let local_port = t.port_attrs().port_num;
    let mut completions = Vec::new();

    queue.push_back(Query::NodeInfo {
        path: Vec::new(),
        from: None,
    });

    loop {
        // Fill the window.
        while out.len() < max_in_flight {
            let Some(q) = queue.pop_front() else { break };
            next_tid = (next_tid + 1) & TID_MASK;
            send(t, &q, next_tid)?;
            stats.sent += 1;
            out.insert(
                next_tid,
                Outstanding {
                    q,
                    sent: Instant::now(),
                    tries: 1,
                },
            );
        }
        stats.max_in_flight = stats.max_in_flight.max(out.len());
        completions.clear();
        t.poll_send_completions(&mut completions)
            .map_err(|e| format!("poll completions: {e}"))?;
        if let Some(c) = completions
            .iter()
            .find(|c| c.status != mad_core::transport::WcStatus::Success)
        {
            return Err(format!("send completed with {}", c.status));
        }
        if out.is_empty() && queue.is_empty() {
            break;
        }

        let mut got_any = false;
        while let Some(rx) = t.poll_recv().map_err(|e| format!("receive: {e}"))? {
            got_any = true;
            let Ok(smp) = Smp::new_checked(&rx.mad[..]) else {
                continue;
            };
            let Some(o) = out.remove(&(smp.tid() & TID_MASK)) else {
                continue;
            };
            stats.received += 1;
            let status = smp.dr_status() & 0x7FFF;
            if status != 0 {
                return Err(format!(
                    "{:?} via {:?}: status {status:#06x}",
                    o.q.attr(),
                    o.q.path()
                ));
            }
            handle(&mut fabric, &mut queue, o.q, smp.data(), local_port)?;
        }
        if !got_any {
            // Resend what timed out.
            let now = Instant::now();
            let late: Vec<u64> = out
                .iter()
                .filter(|(_, o)| now.duration_since(o.sent) > TIMEOUT)
                .map(|(tid, _)| *tid)
                .collect();
            for tid in late {
                let Some(mut o) = out.remove(&tid) else {
                    continue;
                };
                if o.tries >= TRIES {
                    return Err(format!(
                        "{:?} via {:?} unanswered after {TRIES} tries",
                        o.q.attr(),
                        o.q.path()
                    ));
                }
                next_tid = (next_tid + 1) & TID_MASK;
                send(t, &o.q, next_tid)?;
                o.tries += 1;
                o.sent = now;
                stats.sent += 1;
                stats.retries += 1;
                out.insert(next_tid, o);
            }
            idle(t)?;
        }
    }
    stats.elapsed = start.elapsed();
    Ok((fabric, stats))
}

fn send<T: Transport + ?Sized>(t: &mut T, q: &Query, tid: u64) -> Result<(), String> {
    let route = DrPath::from_hops(q.path()).map_err(|e| format!("{e}"))?;
    let (attr, attr_mod) = q.attr();
    let mad = route.build_request(Method::GET, attr, attr_mod, tid, 0);
    t.post_send(Qp::Qp0, &mad, &Address::smi(PERMISSIVE_LID))
        .map(|_| ())
        .map_err(|e| format!("post {attr:?} via {:?}: {e}", q.path()))
}

fn handle(
    fabric: &mut Fabric,
    queue: &mut VecDeque<Query>,
    q: Query,
    data: &[u8],
    local_port: u8,
) -> Result<(), String> {
    match q {
        Query::NodeInfo { path, from } => {
            let ni = NodeInfo::parse(data).map_err(|e| format!("NodeInfo via {path:?}: {e}"))?;
            let guid = ni.node_guid;
            let here = ni.local_port_num;
            if let Some(from) = from {
                fabric.links.insert(Link::new(from, (guid, here)));
            }
            if let Some(n) = fabric.nodes.get_mut(&guid) {
                n.port_guids.insert(here, ni.port_guid);
                return Ok(());
            }
            let first = if ni.node_type == NodeType::SWITCH {
                0
            } else {
                1
            };
            for port in first..=ni.num_ports {
                queue.push_back(Query::PortInfo {
                    path: path.clone(),
                    guid,
                    port,
                });
            }
            queue.push_back(Query::NodeDesc {
                path: path.clone(),
                guid,
            });
            let mut port_guids = BTreeMap::new();
            port_guids.insert(here, ni.port_guid);
            fabric.nodes.insert(
                guid,
                SweptNode {
                    info: ni,
                    desc: String::new(),
                    ports: BTreeMap::new(),
                    port_guids,
                    path,
                },
            );
        }
        Query::NodeDesc { path, guid } => {
            let d =
                NodeDescription::parse(data).map_err(|e| format!("NodeDesc via {path:?}: {e}"))?;
            if let Some(n) = fabric.nodes.get_mut(&guid) {
                n.desc = d.text().into_owned();
            }
        }
        Query::PortInfo { path, guid, port } => {
            let pi =
                PortInfo::parse(data).map_err(|e| format!("PortInfo {port} via {path:?}: {e}"))?;
            let Some(n) = fabric.nodes.get_mut(&guid) else {
                return Ok(());
            };
            let is_switch = n.info.node_type == NodeType::SWITCH;
            let linked = pi.port_phys_state.0 == 5; // LinkUp
                                                    // Go on through every linked switch port but the one we came
                                                    // in by, and out of the local CA's own port at the start.
            let entered = n.info.local_port_num;
            let expand = if is_switch {
                port != 0 && (path.is_empty() || port != entered)
            } else {
                path.is_empty() && port == local_port
            };
            n.ports.insert(port, pi);
            if linked && expand && path.len() < 63 {
                let mut next = path.clone();
                next.push(port);
                queue.push_back(Query::NodeInfo {
                    path: next,
                    from: Some((guid, port)),
                });
            }
        }
    }
    Ok(())
}

/// `"4xSDR"` etc. from a PortInfo, as ibnetdiscover prints link widths
/// and speeds.
#[must_use]
pub fn width_speed(pi: &PortInfo) -> String {
    let width = match pi.link_width_active {
        1 => "1x",
        2 => "4x",
        4 => "8x",
        8 => "12x",
        16 => "2x",
        _ => "?x",
    };
    let speed = match (pi.link_speed_ext_active, pi.link_speed_active) {
        (1, _) => "FDR",
        (2, _) => "EDR",
        (4, _) => "HDR",
        (8, _) => "NDR",
        (_, 1) => "SDR",
        (_, 2) => "DDR",
        (_, 4) => "QDR",
        _ => "?",
    };
    format!("{width}{speed}")
}
