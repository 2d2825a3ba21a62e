//! Two instances of the stack attached to one real ibsim at different
//! nodes exchange 1 MiB RMPP messages through ibsim, first on a clean
//! fabric, then with ibsim's packet-drop error rate switched on through
//! its console (`Error "Hca1"[1] N`: ibsim drops that share of the
//! packets arriving at the port and sends them back to their sender as
//! undeliverable).
//!
//! OpenSM (under libumad2sim) assigns the LIDs first, with periodic sweeps
//! off so that the drop phase does not disturb it. Each instance attaches
//! with its own QP number above 1 (DESIGN.md "Routing to clients": ibsim
//! hands a request to QPN 0 or 1 to the port's SM client, and one to a
//! higher QPN to the client that gave that number), owns SubnAdm-style
//! vendor Set requests (class 0x30 with an OUI, RMPP on), and answers a
//! received message with a GetResp carrying a digest of what arrived.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mad_agents::{Agent, AgentEvent, AgentSpec, EngineConfig, Runtime, SendRequest, SendStatus};
use mad_core::transport::ibsim::IbSimTransport;
use mad_core::transport::{Address, Transport, GSI_QKEY};
use mad_core::wire::rmpp::{RmppHeader, RmppType, RMPP_FLAG_ACTIVE};
use mad_core::wire::{AttributeId, MadStatus, Method, MgmtClass};
use mad_testkit::{MadBuilder, Rng};
use support::opensm::console_fabric_with_sm;
use support::IbSim;

const CLASS: MgmtClass = MgmtClass(0x30);
const OUI: u32 = 0x00_14_05;
const MIB: usize = 1 << 20;
/// Vendor range-2 header: common (24) + RMPP (12) + reserved + OUI.
const HDR: usize = 40;

fn digest(b: &[u8]) -> u64 {
    // FNV-1a.
    b.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
        (h ^ u64::from(*x)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn payload(seed: u64, len: usize) -> Vec<u8> {
    Rng::new(seed).bytes(len)
}

fn vendor_set(data: &[u8]) -> Vec<u8> {
    let rmpp = RmppHeader {
        version: 1,
        rmpp_type: RmppType::DATA,
        flags: RMPP_FLAG_ACTIVE,
        ..RmppHeader::default()
    };
    let head = MadBuilder::vendor(CLASS, OUI, Method::SET, AttributeId(0xFF10))
        .rmpp(&rmpp)
        .build();
    let mut m = head[..HDR].to_vec();
    m.extend_from_slice(data);
    m
}

/// One instance of the stack: a runtime on an ibsim node and its agent.
struct Peer {
    rt: Runtime,
    agent: Agent,
    lid: u16,
    qpn: u32,
    received: Arc<Mutex<Vec<Vec<u8>>>>,
}

fn peer(sim: &IbSim, node: &str, qpn: u32) -> Peer {
    let mut cfg = sim.config().node(node);
    cfg.qpn = qpn;
    let t = IbSimTransport::attach(cfg).unwrap_or_else(|e| panic!("attach at {node}: {e}"));
    let lid = t.port_attrs().lid;
    assert_ne!(lid, 0, "{node} has no LID: is the subnet up?");
    let rt = Runtime::start(t, EngineConfig::default()).expect("runtime");
    let received = Arc::new(Mutex::new(Vec::new()));
    let store = received.clone();
    let slot: Arc<Mutex<Option<mad_agents::AgentRef>>> = Arc::new(Mutex::new(None));
    let me = slot.clone();
    let spec = AgentSpec::requests(node, CLASS, 1, &[Method::SET])
        .with_oui(OUI)
        .with_rmpp();
    let agent = rt
        .register(spec, move |ev| {
            if let AgentEvent::Received(msg) = ev {
                let b = msg.bytes();
                let d = digest(b.get(HDR..).unwrap_or(&[]));
                let len = b.len() as u64;
                store.lock().expect("lock").push(b.to_vec());
                // GetResp: the request's header, then (length, digest).
                let head = MadBuilder::parse(&b[..HDR])
                    .expect("a vendor header")
                    .method(Method::GET)
                    .response(MadStatus::SUCCESS)
                    .rmpp(&RmppHeader::default())
                    .build();
                let mut resp = head[..HDR].to_vec();
                resp.extend_from_slice(&len.to_be_bytes());
                resp.extend_from_slice(&d.to_be_bytes());
                resp.resize(256, 0);
                let dest = Address {
                    qkey: GSI_QKEY,
                    ..*msg.src()
                };
                if let Some(a) = me.lock().expect("lock").as_ref() {
                    a.send(SendRequest::new(resp, dest)).expect("answer");
                }
            }
        })
        .expect("register");
    *slot.lock().expect("lock") = Some(agent.handle());
    Peer {
        rt,
        agent,
        lid,
        qpn,
        received,
    }
}

/// `from` sends `data` to `to` as one RMPP message and checks the digest
/// `to` answers with and the bytes `to` received. Returns the time taken.
fn exchange(from: &Peer, to: &Peer, data: &[u8], what: &str) -> Duration {
    let dest = Address {
        lid: to.lid,
        qpn: to.qpn,
        qkey: GSI_QKEY,
        ..Address::default()
    };
    let before = to.received.lock().expect("lock").len();
    let start = Instant::now();
    let req = SendRequest::new(vendor_set(data), dest)
        .expect_response(Duration::from_millis(150), 40)
        .total_timeout(Duration::from_secs(240));
    let c = from.agent.send_and_wait(req).expect("send");
    let took = start.elapsed();
    assert_eq!(c.status, SendStatus::Success, "{what}: {c:?}");
    let resp = c.response.expect("a GetResp");
    let b = resp.bytes();
    assert_eq!(b[3], 0x81, "{what}: GetResp");
    let len = u64::from_be_bytes(b[HDR..HDR + 8].try_into().expect("8 bytes"));
    let d = u64::from_be_bytes(b[HDR + 8..HDR + 16].try_into().expect("8 bytes"));
    assert_eq!(
        len as usize,
        HDR + data.len(),
        "{what}: length the peer received"
    );
    assert_eq!(d, digest(data), "{what}: digest of what the peer received");
    let got = to.received.lock().expect("lock");
    assert_eq!(got.len(), before + 1, "{what}: delivered exactly once");
    assert!(got[before][HDR..] == *data, "{what}: byte-identical");
    let mb = data.len() as f64 / took.as_secs_f64() / 1e6;
    eprintln!("{what}: {} bytes in {took:?} ({mb:.2} MB/s)", data.len());
    took
}

#[test]
fn two_stacks_exchange_a_mebibyte_over_rmpp_through_ibsim_with_and_without_drops() {
    let Some((mut sim, _sm)) = console_fabric_with_sm("net.2sw2path4hca", "sweep_interval 0")
    else {
        return;
    };
    // Hca1 and Hca4 hang off different switches: the traffic crosses the
    // inter-switch links.
    let a = peer(&sim, "Hca1", 0x41);
    let b = peer(&sim, "Hca4", 0x42);
    assert_ne!(a.lid, b.lid);

    let one = payload(1, MIB);
    let two = payload(2, MIB);
    exchange(&a, &b, &one, "clean, Hca1 -> Hca4");
    exchange(&b, &a, &two, "clean, Hca4 -> Hca1");
    let clean_posted = a.rt.engine_stats().posted + b.rt.engine_stats().posted;
    // At least one work request per segment: 1 MiB / 216 bytes, twice.
    let segments = 2 * MIB.div_ceil(256 - HDR) as u64;
    assert!(clean_posted >= segments, "{clean_posted} < {segments}");

    // Drops: ibsim drops 2% of the packets arriving at the receiving HCA,
    // so segments are lost and sent again. (Only the data direction: the
    // final GetResp is one MAD that no RMPP protects, and a requester gives
    // up when it is lost, as the kernel's does.)
    for (from, to, node, data, what) in [
        (
            &a,
            &b,
            "Hca4",
            payload(3, MIB),
            "2% drop at Hca4, Hca1 -> Hca4",
        ),
        (
            &b,
            &a,
            "Hca1",
            payload(4, MIB),
            "2% drop at Hca1, Hca4 -> Hca1",
        ),
    ] {
        sim.console(&format!("Error \"{node}\"[1] 2"));
        sim.console(&format!("Dump \"{node}\""));
        let out = sim.output();
        let dump = &out[out.rfind(&format!("\"{node}\"")).unwrap_or(0)..];
        assert!(
            dump.contains("err_rate 2"),
            "ibsim's dump shows no error rate at {node}:\n{out}"
        );
        let posted = a.rt.engine_stats().posted + b.rt.engine_stats().posted;
        exchange(from, to, &data, what);
        let lossy = a.rt.engine_stats().posted + b.rt.engine_stats().posted - posted;
        eprintln!(
            "{what}: {lossy} work requests (clean: {})",
            clean_posted / 2
        );
        assert!(
            lossy > clean_posted / 2 + clean_posted / 100,
            "{what}: {lossy} work requests against {} clean: nothing was sent again",
            clean_posted / 2
        );
        sim.console(&format!("Error \"{node}\"[1] 0"));
    }
    // Clean again: nothing left behind by the lossy transfers.
    exchange(&a, &b, &one, "clean again, Hca1 -> Hca4");
    assert_eq!(a.agent.outstanding(), 0);
    assert_eq!(b.agent.outstanding(), 0);
}
