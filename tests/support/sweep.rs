//! A directed-route subnet sweep over any `Transport`: NodeInfo of every
//! node, NodeDescription, PortInfo of every port, breadth first, with a
//! bounded number of SMPs in flight. It discovers the same things
//! `ibnetdiscover` does, so the two can be compared.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};

use mad_core::transport::{Address, Qp, Transport, PERMISSIVE_LID};
use mad_core::wire::attr::{NodeDescription, NodeInfo, NodeType, PhysPortState, PortInfo};
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

/// Asserts everything a sweep and `ibnetdiscover` must agree on: nodes
/// (type, port count, description), links, CA port GUIDs, and the width,
/// speed and physical state of every link.
///
/// # Panics
/// On the first disagreement, naming the topology `name`.
pub fn compare_with_ibnetdiscover(
    name: &str,
    ours: &Fabric,
    theirs: &super::ibnetdiscover::Discovered,
) {
    let our_nodes: BTreeMap<u64, (String, u8, String)> = ours
        .nodes
        .iter()
        .map(|(g, n)| {
            let kind = match n.info.node_type {
                NodeType::SWITCH => "Switch",
                NodeType::CA => "Ca",
                NodeType::ROUTER => "Rt",
                _ => "?",
            };
            (*g, (kind.to_owned(), n.info.num_ports, n.desc.clone()))
        })
        .collect();
    let their_nodes: BTreeMap<u64, (String, u8, String)> = theirs
        .nodes
        .iter()
        .map(|(g, n)| (*g, (n.kind.clone(), n.num_ports, n.desc.clone())))
        .collect();
    assert_eq!(
        our_nodes.len(),
        their_nodes.len(),
        "{name}: node count differs"
    );
    assert_eq!(our_nodes, their_nodes, "{name}: nodes differ");
    let only_ours: Vec<&Link> = ours.links.difference(&theirs.links).collect();
    let only_theirs: Vec<&Link> = theirs.links.difference(&ours.links).collect();
    assert!(
        only_ours.is_empty() && only_theirs.is_empty(),
        "{name}: links differ: only in our sweep {only_ours:x?}, only in ibnetdiscover {only_theirs:x?}"
    );
    // Port GUIDs ibnetdiscover prints (CA ports) equal those NodeInfo
    // gave us when entering by that port.
    for (g, n) in &theirs.nodes {
        for (p, pg) in &n.port_guids {
            assert_eq!(
                ours.nodes[g].port_guids.get(p),
                Some(pg),
                "{name}: port GUID of {g:#x} port {p}"
            );
        }
    }
    // Width and speed of every link, from PortInfo of either end.
    for (link, rate) in &theirs.link_rates {
        for (g, p) in [link.0, link.1] {
            let pi = &ours.nodes[&g].ports[&p];
            assert_eq!(&width_speed(pi), rate, "{name}: rate of {g:#x} port {p}");
            assert_eq!(
                pi.port_phys_state,
                PhysPortState::LINK_UP,
                "{name}: {g:#x}/{p}"
            );
        }
    }
}

use mad_testkit::hex::{decode as unhex, encode as hex};

impl Fabric {
    /// A line-oriented text form (NodeInfo / PortInfo as the wire bytes),
    /// so a sweep run in a child process (under libumad2sim) can be
    /// handed back losslessly.
    #[must_use]
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for (g, n) in &self.nodes {
            let ni = n.info.to_vec().unwrap_or_default();
            out.push_str(&format!(
                "N {g:x} {} {}\n",
                hex(&ni),
                hex(n.desc.as_bytes())
            ));
            for (p, pg) in &n.port_guids {
                out.push_str(&format!("G {g:x} {p} {pg:x}\n"));
            }
            for (p, pi) in &n.ports {
                out.push_str(&format!(
                    "P {g:x} {p} {}\n",
                    hex(&pi.to_vec().unwrap_or_default())
                ));
            }
        }
        for l in &self.links {
            out.push_str(&format!(
                "L {:x} {} {:x} {}\n",
                l.0 .0, l.0 .1, l.1 .0, l.1 .1
            ));
        }
        out
    }

    /// Parses [`Fabric::to_text`]; lines not starting with N/G/P/L are
    /// ignored (test harness noise).
    ///
    /// # Errors
    /// A malformed line.
    pub fn from_text(text: &str) -> Result<Fabric, String> {
        let mut f = Fabric::default();
        let g = |s: &str| u64::from_str_radix(s, 16).map_err(|e| format!("{s:?}: {e}"));
        let p = |s: &str| s.parse::<u8>().map_err(|e| format!("{s:?}: {e}"));
        for line in text.lines() {
            let w: Vec<&str> = line.split(' ').collect();
            match (w.first().copied(), w.len()) {
                (Some("N"), 4) => {
                    let info = NodeInfo::parse(&unhex(w[2])?).map_err(|e| e.to_string())?;
                    let desc = String::from_utf8(unhex(w[3])?).map_err(|e| e.to_string())?;
                    f.nodes.insert(
                        g(w[1])?,
                        SweptNode {
                            info,
                            desc,
                            ports: BTreeMap::new(),
                            port_guids: BTreeMap::new(),
                            path: Vec::new(),
                        },
                    );
                }
                (Some("G"), 4) => {
                    let n = f.nodes.get_mut(&g(w[1])?).ok_or("G before N")?;
                    n.port_guids.insert(p(w[2])?, g(w[3])?);
                }
                (Some("P"), 4) => {
                    let pi = PortInfo::parse(&unhex(w[3])?).map_err(|e| e.to_string())?;
                    let n = f.nodes.get_mut(&g(w[1])?).ok_or("P before N")?;
                    n.ports.insert(p(w[2])?, pi);
                }
                (Some("L"), 5) => {
                    f.links
                        .insert(Link::new((g(w[1])?, p(w[2])?), (g(w[3])?, p(w[4])?)));
                }
                _ => {}
            }
        }
        Ok(f)
    }
}

/// What a sweep over ibsim does when it has nothing to read: waits up to
/// `wait` for the data socket, and fails on any MAD ibsim could not
/// deliver.
///
/// # Errors
/// The wait failed, or ibsim returned an SMP undelivered.
pub fn ibsim_idle(
    t: &mut mad_core::transport::ibsim::IbSimTransport,
    wait: Duration,
) -> Result<(), String> {
    t.wait_readable(wait).map_err(|e| e.to_string())?;
    match t.poll_undeliverable() {
        Some(u) => Err(format!(
            "ibsim returned an SMP undelivered: {:02x?}",
            &u.mad[..24]
        )),
        None => Ok(()),
    }
}
