//! A port's per-packet counters, counted in runs.
//!
//! Every packet that crosses a port adds to ten counters or more
//! (PortXmitData / PortXmitPkts of PortCounters and of
//! PortCountersExtended, the unicast or multicast packets, the per-SL and
//! per-VL data and packets). A bring-up sends millions of SMPs, each
//! across about nine links, all of one kind (SL 0, VL15, 72 words,
//! unicast), so a port keeps only how many packets of the kind it last
//! saw went each way ([`Traffic`](super::node::Traffic)) and adds the run into the counters
//! when a packet of another kind comes or before anything reads or
//! clears them ([`Port::settle`]). Adding a run at once gives what
//! adding its packets one by one gives, saturation included: a
//! saturating sum of non-negative numbers does not depend on how they
//! are grouped.

use super::node::Port;
use super::pma_ext::Way;

/// Marks a kind as present (so that no kind is 0).
const PRESENT: u32 = 1 << 31;
/// Set for a unicast packet.
const UNICAST: u32 = 1 << 30;

/// The kind of a packet for the counters: its SL and VL, its length in
/// 4-byte words, unicast or not.
#[inline]
pub(crate) fn kind(sl: u8, vl: u8, words: u32, unicast: bool) -> u32 {
    PRESENT
        | if unicast { UNICAST } else { 0 }
        | (words & 0x3F_FFFF) << 8
        | u32::from(vl & 0xF) << 4
        | u32::from(sl & 0xF)
}

impl Port {
    /// Counts a packet of kind `kind` ([`kind`]) crossing the port `way`.
    #[inline]
    pub(crate) fn count_crossing(&mut self, way: Way, kind: u32) {
        let t = &self.traffic;
        if t.kind != kind || t.xmit == u32::MAX || t.rcv == u32::MAX {
            self.settle();
            self.traffic.kind = kind;
        }
        match way {
            Way::Xmit => self.traffic.xmit += 1,
            Way::Rcv => self.traffic.rcv += 1,
        }
    }

    /// Adds the packets not yet counted into the counters: call before
    /// reading or clearing PortCounters, PortCountersExtended or the
    /// per-SL / per-VL counters.
    pub(crate) fn settle(&mut self) {
        let t = std::mem::take(&mut self.traffic);
        if t.kind == 0 {
            return;
        }
        let sl = (t.kind & 0xF) as u8;
        let vl = ((t.kind >> 4) & 0xF) as u8;
        let words = (t.kind >> 8) & 0x3F_FFFF;
        let unicast = t.kind & UNICAST != 0;
        for (way, n) in [(Way::Xmit, t.xmit), (Way::Rcv, t.rcv)] {
            if n > 0 {
                self.add_packets(way, n, words, sl, vl, unicast);
            }
        }
    }

    /// Adds `n` packets of `words` words on `sl` / `vl` crossing the port
    /// `way` to PortCounters, PortCountersExtended and the per-SL /
    /// per-VL counters, each counter saturating at its width.
    fn add_packets(&mut self, way: Way, n: u32, words: u32, sl: u8, vl: u8, unicast: bool) {
        let data = u64::from(words) * u64::from(n);
        let n64 = u64::from(n);
        let sat32 =
            |c: &mut u32, by: u64| *c = (u64::from(*c) + by).min(u64::from(u32::MAX)) as u32;
        let (c, e) = (&mut self.counters, &mut self.counters_ext);
        let (d32, p32, d64, p64, ucast, mcast) = match way {
            Way::Xmit => (
                &mut c.port_xmit_data,
                &mut c.port_xmit_pkts,
                &mut e.port_xmit_data,
                &mut e.port_xmit_pkts,
                &mut e.port_unicast_xmit_pkts,
                &mut e.port_multicast_xmit_pkts,
            ),
            Way::Rcv => (
                &mut c.port_rcv_data,
                &mut c.port_rcv_pkts,
                &mut e.port_rcv_data,
                &mut e.port_rcv_pkts,
                &mut e.port_unicast_rcv_pkts,
                &mut e.port_multicast_rcv_pkts,
            ),
        };
        sat32(d32, data);
        sat32(p32, n64);
        *d64 = d64.saturating_add(data);
        *p64 = p64.saturating_add(n64);
        let cast = if unicast { ucast } else { mcast };
        *cast = cast.saturating_add(n64);
        self.perf.count_n(way, words, sl, vl, n64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A port of the default topology, its 32-bit counters started at
    /// `start` (near their top, saturation is reached).
    fn port(start: u32) -> Port {
        let topo = crate::default_topology();
        let cfg = crate::fabric::FabricConfig::default();
        let mut p = crate::fabric::node::build_node(&topo.nodes()[0], &cfg, 30_720)
            .ports
            .into_iter()
            .next()
            .expect("a port");
        p.counters.port_xmit_data = start;
        p.counters.port_rcv_data = start;
        p.counters.port_xmit_pkts = start;
        p.counters.port_rcv_pkts = start;
        p
    }

    #[test]
    fn runs_count_what_packets_one_by_one_count() {
        let mut rng = mad_testkit::Rng::new(0x5eed_7aff);
        for start in [0, u32::MAX - 5000] {
            let (mut runs, mut each) = (port(start), port(start));
            for _ in 0..20_000 {
                // Mostly runs of one kind, sometimes another.
                let odd = rng.below(8) == 0;
                let sl = if odd { rng.below(16) as u8 } else { 0 };
                let vl = if odd { rng.below(16) as u8 } else { 15 };
                let words = if odd { 82 } else { 72 };
                let unicast = !odd || rng.below(2) == 0;
                let way = if rng.below(2) == 0 {
                    Way::Xmit
                } else {
                    Way::Rcv
                };
                runs.count_crossing(way, kind(sl, vl, words, unicast));
                each.add_packets(way, 1, words, sl, vl, unicast);
                if rng.below(500) == 0 {
                    runs.settle();
                    assert_eq!(runs.counters, each.counters);
                }
            }
            runs.settle();
            assert_eq!(runs.counters, each.counters);
            assert_eq!(runs.counters_ext, each.counters_ext);
            assert_eq!(format!("{:?}", runs.perf), format!("{:?}", each.perf));
            assert_eq!(runs.traffic, super::super::node::Traffic::default());
        }
    }
}
