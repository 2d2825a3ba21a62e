//! Operation sequences on one RMPP [`ReceiverTable`] fed by several peers
//! (LID and GID, two QPs on one LID): the genuine segments of messages a
//! real [`Sender`] produced, replayed in an order the input chooses, with
//! drops, duplicates, replays from the wrong peer, corrupted copies,
//! control MADs and raw bytes, plus timeouts, time jumps, buffer recycling
//! and `clear`. After every step the table stays within its configured
//! bounds, and every message it delivers for a transfer only genuine
//! segments fed is byte-identical to what the sender sent; once idle and
//! past every deadline it holds nothing.

use crate::clock::Clock;
use crate::ops::Ops;
use crate::raw_rmpp::RawRmppHeader;
use arbitrary::{Arbitrary, Unstructured};
use mad_rmpp::segment::read_header;
use mad_rmpp::{
    reply_address, Output, Peer, ReceiverConfig, ReceiverTable, RmppStatus, RmppType, Sender,
    SenderConfig, TransferKey,
};
use mad_wire::addr::{Address, Grh};
use mad_wire::wire::MAD_LEN;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

/// The table's bounds, kept small so that the input reaches them.
#[derive(Arbitrary, Debug)]
struct Limits {
    window: u8,
    total_timeout_s: u8,
    linger_s: u8,
    max_message_len: u16,
    max_per_source: u8,
    max_total: u8,
    max_lingering: u8,
    max_lingering_per_source: u8,
    max_bytes: u16,
    max_bytes_per_source: u16,
    pool_buffers: u8,
    pool_bytes: u16,
    pool_min_len: u16,
}

impl Limits {
    fn config(&self) -> ReceiverConfig {
        ReceiverConfig {
            window: u32::from(self.window % 9),
            total_timeout: Duration::from_secs(u64::from(self.total_timeout_s % 60) + 1),
            linger: Duration::from_secs(u64::from(self.linger_s % 20)),
            max_message_len: usize::from(self.max_message_len % 8192),
            max_per_source: usize::from(self.max_per_source % 5),
            max_total: usize::from(self.max_total % 9),
            max_lingering: usize::from(self.max_lingering % 9),
            max_lingering_per_source: usize::from(self.max_lingering_per_source % 5),
            max_bytes: usize::from(self.max_bytes) % 40_000,
            max_bytes_per_source: usize::from(self.max_bytes_per_source) % 20_000,
            pool_buffers: usize::from(self.pool_buffers % 4),
            pool_bytes: usize::from(self.pool_bytes) % 30_000,
            pool_min_len: usize::from(self.pool_min_len % 8192),
        }
    }
}

/// One message a peer sends.
#[derive(Arbitrary, Debug)]
struct MsgSpec {
    /// Which of [`peers`].
    peer: u8,
    /// SA, vendor range 2 or DevMgt.
    class: u8,
    /// The method byte (a few requests and responses).
    method: u8,
    /// Data bytes (modulo 3000).
    len: u16,
    seed: u8,
}

/// One step.
#[derive(Arbitrary, Debug)]
enum Op {
    /// Genuine segment `seg` (modulo the count) of message `msg`, from its peer.
    Seg { msg: u8, seg: u8 },
    /// `len` genuine segments of `msg` in order from `from`.
    Run { msg: u8, from: u8, len: u8 },
    /// A genuine segment from another peer (same bytes, another transfer).
    SegFrom { msg: u8, seg: u8, peer: u8 },
    /// A copy of a genuine segment with one byte changed.
    Corrupt { msg: u8, seg: u8, at: u8, xor: u8 },
    /// An RMPP MAD on `msg`'s first segment with this header (STOP, ABORT,
    /// DS ACK, illegal types, bad versions, DATA with any numbers).
    Control { msg: u8, raw: RawRmppHeader },
    /// Raw bytes from a peer.
    Raw { peer: u8, bytes: Vec<u8> },
    /// `handle_timeout` now.
    Timeout,
    /// The clock moves this many ms.
    Advance(u16),
    /// The clock moves to the table's next deadline, and `handle_timeout`.
    ToDeadline,
    /// A delivered message goes back to the pool.
    Recycle(u8),
    /// Any buffer goes to the pool.
    RecycleFresh(u16),
    /// `clear`.
    Clear,
}

/// The addresses of the peers: two LIDs, the same LID on another QP, and
/// two GIDs behind LID 0 (RoCE).
fn peers() -> Vec<Address> {
    let gid = |b: u8| Address {
        grh: Some(Grh {
            gid: [b; 16],
            hop_limit: 64,
            ..Grh::default()
        }),
        ..Address::gsi(0)
    };
    let mut other_qp = Address::gsi(1);
    other_qp.qpn = 5;
    vec![
        Address::gsi(1),
        Address::gsi(2),
        other_qp,
        gid(0xA0),
        gid(0xB0),
    ]
}

/// A message and its segments, from a real [`Sender`].
struct Msg {
    peer: usize,
    message: Vec<u8>,
    segments: Vec<Vec<u8>>,
}

fn build(i: usize, spec: &MsgSpec, npeers: usize, clock: &Clock) -> Msg {
    let (class, hdr_len) = match spec.class % 3 {
        0 => (0x03, 56),
        1 => (0x32, 40),
        _ => (0x06, 64),
    };
    let method = [0x92, 0x81, 0x03, 0x02, 0x86][usize::from(spec.method) % 5];
    let mut hdr = vec![0u8; hdr_len];
    mad_testkit::header::edit(&mut hdr, |h| {
        h.base_version = 1;
        h.mgmt_class = mad_wire::wire::MgmtClass(class);
        h.class_version = 2;
        mad_testkit::header::set_method_byte(h, method);
        h.tid = 0x100 + i as u64;
    });
    hdr[36..].iter_mut().for_each(|b| *b = spec.seed);
    let data: Vec<u8> = (0..usize::from(spec.len) % 3000)
        .map(|k| (k as u8).wrapping_mul(7) ^ spec.seed)
        .collect();
    let mut tx = Sender::new(
        &hdr,
        &data,
        SenderConfig {
            initial_window: u32::MAX,
            ..SenderConfig::default()
        },
        clock.now(),
    )
    .unwrap();
    let segments: Vec<Vec<u8>> = std::iter::from_fn(|| tx.poll_transmit(clock.now())).collect();
    assert_eq!(segments.len(), tx.geometry().count as usize);
    Msg {
        peer: usize::from(spec.peer) % npeers,
        message: tx.into_message(),
        segments,
    }
}

/// What the harness tracks.
struct Harness {
    cfg: ReceiverConfig,
    rx: ReceiverTable,
    peers: Vec<Address>,
    msgs: Vec<Msg>,
    /// Keys that something other than genuine segments was fed under.
    tainted: HashSet<TransferKey>,
    /// Segment 1 fed per key since its last delivery.
    starts: HashMap<TransferKey, u32>,
    /// Delivered buffers the harness still holds.
    held: Vec<Vec<u8>>,
    delivered: u64,
}

impl Harness {
    /// Feeds `mad` from peer `p`; `genuine`: a segment as a sender made it.
    fn feed(&mut self, mad: &[u8], p: usize, genuine: bool, clock: &Clock) {
        let src = self.peers[p];
        if let Some(key) = TransferKey::of(mad, Peer::of(&src)) {
            if !genuine {
                self.tainted.insert(key);
            }
            if read_header(mad)
                .is_ok_and(|h| h.is_active() && h.rmpp_type == RmppType::DATA && h.data1 == 1)
            {
                *self.starts.entry(key).or_default() += 1;
            }
        }
        let taken = self.rx.handle(mad, &src, clock.now());
        let active = read_header(mad).is_ok_and(|h| h.is_active());
        assert_eq!(taken, active, "handle takes exactly the RMPP-active MADs");
    }

    /// Drains the outputs and checks them and the table's bounds.
    fn check(&mut self) {
        while let Some(out) = self.rx.poll_output() {
            self.check_output(out);
        }
        self.bounds();
    }

    /// Checks one output of the table.
    fn check_output(&mut self, out: Output) {
        match out {
            Output::Send { key, to, mad } => {
                assert_eq!(Peer::of(&to), key.src, "a reply to another peer");
                let src = self.peers.iter().find(|a| Peer::of(a) == key.src).unwrap();
                assert_eq!(to, reply_address(src), "reply address");
                assert_eq!(mad.len(), MAD_LEN);
                let sent = mad_testkit::header::method_byte(&mad_testkit::header::of(&mad));
                assert_eq!(sent, key.method ^ 0x80, "reply method");
                let h = read_header(&mad).unwrap();
                assert!(h.is_active());
                match h.rmpp_type {
                    RmppType::ACK => {
                        assert_eq!(h.status, RmppStatus::SUCCESS);
                        assert!(h.data2 >= h.data1, "ACK window below its segment");
                    }
                    RmppType::STOP | RmppType::ABORT => {
                        assert!(h.status.is_valid_for(h.rmpp_type), "{h:?}");
                    }
                    t => panic!("the receiver sent RMPP type {t:?}"),
                }
            }
            Output::Delivered { key, src, message } => {
                self.delivered += 1;
                assert_eq!(Peer::of(&src), key.src, "delivered from another peer");
                let n = self.starts.remove(&key).unwrap_or(0);
                assert!(n >= 1, "{key:?} delivered twice from one transfer");
                assert!(message.len() <= self.cfg.max_message_len);
                if !self.tainted.contains(&key) {
                    let i = key.tid.wrapping_sub(0x100) as usize;
                    let m = self.msgs.get(i).expect("only genuine segments fed");
                    assert_eq!(message.len(), m.message.len(), "message {i} length");
                    assert_eq!(&message[..24], &m.message[..24], "message {i} header");
                    assert_eq!(&message[36..], &m.message[36..], "message {i} bytes");
                }
                self.held.push(message);
            }
            Output::Ended { .. } => {}
        }
    }

    fn bounds(&self) {
        let (rx, cfg) = (&self.rx, &self.cfg);
        assert!(
            rx.held_bytes() <= cfg.max_bytes,
            "held {} bytes",
            rx.held_bytes()
        );
        assert!(rx.lingering() <= cfg.max_lingering);
        assert!(rx.active() <= cfg.max_total);
        assert_eq!(rx.len(), rx.active() + rx.lingering());
        assert!(rx.pooled_buffers() <= cfg.pool_buffers);
        assert!(rx.pooled_bytes() <= cfg.pool_bytes);
        let (mut active, mut bytes, mut lingering, mut sources) = (0, 0, 0, 0);
        for p in &self.peers {
            let u = rx.source_usage(&Peer::of(p));
            assert!(u.active <= cfg.max_per_source, "{u:?}");
            assert!(u.bytes <= cfg.max_bytes_per_source, "{u:?}");
            assert!(u.lingering <= cfg.max_lingering_per_source, "{u:?}");
            active += u.active;
            bytes += u.bytes;
            lingering += u.lingering;
            sources += usize::from(u != mad_rmpp::SourceUsage::default());
        }
        assert_eq!(
            (active, bytes, lingering, sources),
            (rx.active(), rx.held_bytes(), rx.lingering(), rx.sources()),
            "per-source usage does not add up"
        );
    }

    /// Moves past every deadline: the table must then be empty.
    fn idle(&mut self, clock: &mut Clock) {
        clock.advance(self.cfg.total_timeout.max(self.cfg.linger) + Duration::from_secs(1));
        self.rx.handle_timeout(clock.now());
        self.check();
        let rx = &self.rx;
        assert_eq!(
            (
                rx.len(),
                rx.active(),
                rx.lingering(),
                rx.held_bytes(),
                rx.sources()
            ),
            (0, 0, 0, 0, 0),
            "state left behind when idle"
        );
        assert!(rx.is_empty());
        assert_eq!(rx.poll_timeout(), None);
    }
}

/// Runs one operation sequence against a [`ReceiverTable`].
pub fn run(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(limits) = Limits::arbitrary(&mut u) else {
        return;
    };
    let Ok(specs) = <[MsgSpec; 4]>::arbitrary(&mut u) else {
        return;
    };
    let mut clock = Clock::new();
    let peers = peers();
    let msgs: Vec<Msg> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| build(i, s, peers.len(), &clock))
        .collect();
    let cfg = limits.config();
    let mut h = Harness {
        cfg,
        rx: ReceiverTable::new(cfg),
        peers,
        msgs,
        tainted: HashSet::new(),
        starts: HashMap::new(),
        held: Vec::new(),
        delivered: 0,
    };
    let nm = h.msgs.len();
    let np = h.peers.len();
    for op in Ops::<Op>::new(&mut u, 500) {
        match op {
            Op::Seg { msg, seg } => {
                let m = &h.msgs[usize::from(msg) % nm];
                let (s, p) = (
                    m.segments[usize::from(seg) % m.segments.len()].clone(),
                    m.peer,
                );
                h.feed(&s, p, true, &clock);
            }
            Op::Run { msg, from, len } => {
                let m = &h.msgs[usize::from(msg) % nm];
                let p = m.peer;
                let segs: Vec<Vec<u8>> = m
                    .segments
                    .iter()
                    .skip(usize::from(from) % m.segments.len())
                    .take(usize::from(len))
                    .cloned()
                    .collect();
                for s in segs {
                    h.feed(&s, p, true, &clock);
                    h.check();
                }
            }
            Op::SegFrom { msg, seg, peer } => {
                let m = &h.msgs[usize::from(msg) % nm];
                let s = m.segments[usize::from(seg) % m.segments.len()].clone();
                h.feed(&s, usize::from(peer) % np, true, &clock);
            }
            Op::Corrupt { msg, seg, at, xor } => {
                let m = &h.msgs[usize::from(msg) % nm];
                let mut s = m.segments[usize::from(seg) % m.segments.len()].clone();
                s[usize::from(at)] ^= xor.max(1);
                let p = m.peer;
                h.feed(&s, p, false, &clock);
            }
            Op::Control { msg, raw } => {
                let m = &h.msgs[usize::from(msg) % nm];
                let mut s = m.segments[0].clone();
                raw.write(&mut s);
                if raw.is_active_ack() {
                    // The requester's DS ACK: the request's method.
                    s[3] &= 0x7F;
                }
                let p = m.peer;
                // A DATA header with other numbers places bytes elsewhere.
                let genuine = raw.rtype != RmppType::DATA.0;
                h.feed(&s, p, genuine, &clock);
            }
            Op::Raw { peer, bytes } => h.feed(&bytes, usize::from(peer) % np, false, &clock),
            Op::Timeout => h.rx.handle_timeout(clock.now()),
            Op::Advance(ms) => clock.advance(Duration::from_millis(u64::from(ms) * 4)),
            Op::ToDeadline => {
                if let Some(d) = h.rx.poll_timeout() {
                    assert!(!h.rx.is_empty(), "a deadline with nothing held");
                    clock.advance_to(d);
                }
                h.rx.handle_timeout(clock.now());
            }
            Op::Recycle(i) => {
                if !h.held.is_empty() {
                    let b = h.held.swap_remove(usize::from(i) % h.held.len());
                    h.rx.recycle(b);
                }
            }
            Op::RecycleFresh(cap) => h.rx.recycle(Vec::with_capacity(usize::from(cap) * 4)),
            Op::Clear => {
                h.rx.clear();
                h.check();
                assert_eq!(
                    (h.rx.len(), h.rx.sources(), h.rx.pooled_buffers()),
                    (0, 0, 0)
                );
            }
        }
        h.check();
    }
    h.idle(&mut clock);
    // A clean transfer into the idle table: delivered intact, or stopped
    // for the table's bounds (RESX), never anything else.
    let i = usize::from(u.arbitrary::<u8>().unwrap_or(0)) % nm;
    let (segs, p) = (h.msgs[i].segments.clone(), h.msgs[i].peer);
    let key = TransferKey::of(&segs[0], Peer::of(&h.peers[p])).unwrap();
    h.tainted.remove(&key);
    let before = h.delivered;
    let mut resx = false;
    for s in &segs {
        h.feed(s, p, true, &clock);
        while let Some(out) = h.rx.poll_output() {
            match &out {
                Output::Ended { outcome, .. } => {
                    assert_eq!(
                        *outcome,
                        mad_rmpp::Outcome::Aborted(RmppStatus::RESX),
                        "a clean transfer failed"
                    );
                    resx = true;
                }
                Output::Send { mad, .. } => {
                    let hd = read_header(mad).unwrap();
                    assert!(hd.rmpp_type == RmppType::ACK || hd.status == RmppStatus::RESX);
                }
                Output::Delivered { .. } => {}
            }
            h.check_output(out);
        }
        if resx {
            break;
        }
    }
    h.check();
    assert!(
        resx || h.delivered == before + 1,
        "a clean transfer of {} segments was not delivered",
        segs.len()
    );
    h.idle(&mut clock);
}
