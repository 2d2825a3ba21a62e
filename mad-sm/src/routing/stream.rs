//! Routing on a thread of its own while SM-lite sends its Sets: the
//! tables of [`super::compute_lfts`], handed over switch by switch.

use super::{compute_lfts_on, Candidates, Picker, Plan, NO_ROUTE};
use crate::lft::{BlockInterner, Lft};
use crate::subnet::{NodeIdx, Subnet};

/// Every switch's table computed on a thread of its own, while the
/// caller goes on (SM-lite sends its PortInfo Sets and the LFT blocks of
/// the switches already routed): see [`RouteStream::spawn`].
pub(crate) struct RouteStream {
    /// The switches (node indices) in the order their tables come.
    switches: Vec<NodeIdx>,
    /// Tables taken so far (a prefix of `switches`).
    taken: usize,
    rx: std::sync::mpsc::Receiver<Lft>,
}

impl RouteStream {
    /// Starts routing `subnet` (LIDs assigned) on a new thread, which
    /// sends the tables in switch order; `None` (route it on the
    /// caller's thread then) when the thread cannot be started. The
    /// tables are those of [`compute_lfts`](super::compute_lfts); only what is read from the
    /// subnet is copied (the thread holds no handle to it). Dropping the
    /// stream stops the thread at its next table.
    pub(crate) fn spawn(subnet: &Subnet) -> Option<Self> {
        let plan = Plan::without_distances(subnet);
        let switches = plan.graph.switches.clone();
        // The caller keeps one core busy with the fabric: the searches
        // use the others, if any.
        let workers = std::thread::available_parallelism()
            .map_or(1, |n| n.get().saturating_sub(1))
            .clamp(1, 3);
        // A few tables ahead at most: each is a few hundred blocks.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Lft>(64);
        std::thread::Builder::new()
            .name("mad-sim-routing".to_owned())
            .spawn(move || {
                let mut plan = plan;
                plan.dist = plan.graph.distances(workers);
                let (mut cands, mut pick) = (Candidates::new(), Picker::default());
                let mut blocks = BlockInterner::default();
                let mut lft = vec![NO_ROUTE; plan.size];
                for s in 0..plan.graph.switches.len() {
                    plan.route(s, &mut cands, &mut pick, &mut lft);
                    if tx.send(Lft::from_entries(&lft, &mut blocks)).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(Self {
            switches,
            taken: 0,
            rx,
        })
    }

    /// Waits for the tables up to and including the one of `node` (all
    /// of them when `node` is no switch of the subnet routed) and stores
    /// each in its switch's `lft` in `subnet`. Should the routing thread
    /// end before it sent them (a panic), the switches left are routed
    /// on this thread.
    pub(crate) fn take_until(&mut self, node: Option<NodeIdx>, subnet: &mut Subnet) {
        let want = node
            .and_then(|n| self.switches.iter().position(|&s| s == n))
            .map_or(self.switches.len(), |k| k + 1);
        while self.taken < want {
            let Ok(lft) = self.rx.recv() else {
                // The thread is gone: route the rest here, as
                // compute_lfts would.
                let mut rest = subnet.clone();
                compute_lfts_on(&mut rest, 1);
                for &i in &self.switches[self.taken..] {
                    let lft = rest.nodes()[i].lft.clone();
                    if let Some(n) = subnet.node_mut(i) {
                        n.lft = lft;
                    }
                }
                self.taken = self.switches.len();
                return;
            };
            if let Some(n) = subnet.node_mut(self.switches[self.taken]) {
                n.lft = lft;
            }
            self.taken += 1;
        }
    }

    /// True once every table was taken.
    pub(crate) fn is_done(&self) -> bool {
        self.taken == self.switches.len()
    }
}

/// Fabrics of at least this many table entries (switches × LIDs) are
/// routed by a `RouteStream` while SM-lite programs them (the 4,176-node
/// fat tree has 1.5 M; small fabrics are routed before their Sets, where
/// a thread would cost more than it saves).
pub const BACKGROUND_ENTRIES: usize = 1 << 20;

/// The table entries (switches × LIDs) of `subnet` once routed.
pub(crate) fn table_entries(subnet: &Subnet) -> usize {
    let switches = subnet.nodes().iter().filter(|n| n.is_switch()).count();
    switches.saturating_mul(usize::from(subnet.max_lid()) + 1)
}
