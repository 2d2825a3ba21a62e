//! The fabric served in ibsim's socket protocol (`mad_sim::serve`):
//! madstack's own ibsim transport and infiniband-diags under libumad2sim
//! — other stacks, one of them another process — attach to the built-in
//! subnet (SM-lite and the SA running in this process) and talk to it.
#![allow(clippy::unwrap_used, reason = "tests")]

use std::process::Command;
use std::time::Duration;

use mad_agents::sa::{SaClient, SaClientConfig};
use mad_agents::{EngineConfig, Runtime};
use mad_core::transport::ibsim::{IbSimConfig, IbSimTransport};
use mad_core::transport::{Address, Qp, Transport, PERMISSIVE_LID};
use mad_core::wire::attr::NodeInfo;
use mad_core::wire::sa_records::NodeRecord;
use mad_core::wire::smp::{DrPath, Smp};
use mad_core::wire::{AttributeId, Mad, Method, Repr};
use mad_sim::serve::{IbSimServer, ServeConfig};
use mad_sim::Subnet;
use mad_testkit::MadBuilder;

const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";

fn serve(s: &Subnet, tag: &str) -> (mad_sim::serve::ServerHandle, String) {
    let name = format!("madsim-{}-{tag}", std::process::id());
    let cfg = ServeConfig {
        default_at: s.free_endpoint(),
        ..ServeConfig::new(name.clone())
    };
    let h = IbSimServer::bind(s.fabric(), cfg).unwrap().spawn().unwrap();
    (h, name)
}

/// One request / answer by TID on an ibsim transport.
fn ask(t: &mut IbSimTransport, qp: Qp, mad: &[u8], to: Address) -> Vec<u8> {
    t.post_send(qp, mad, &to).unwrap();
    let tid = Mad::new_checked(mad).unwrap().tid() & 0xFFFF_FFFF_FFFF;
    for _ in 0..100 {
        if t.wait_readable(Duration::from_millis(50)).unwrap() {
            while let Some(r) = t.poll_recv().unwrap() {
                if Mad::new_checked(&r.mad[..]).unwrap().tid() & 0xFFFF_FFFF_FFFF == tid {
                    return r.mad.into();
                }
            }
        }
    }
    panic!("no answer to TID {tid:#x}");
}

fn lid_get(attr: AttributeId, tid: u64) -> Vec<u8> {
    MadBuilder::smp_get(attr).tid(tid).to_vec()
}

#[test]
fn ibsim_clients_attach_query_smps_and_read_sa_tables() {
    let s = Subnet::builtin().unwrap();
    let f = s.fabric().clone();
    let (_h, name) = serve(&s, "a");
    let h5 = f.find("host-5").unwrap();
    let mut a = IbSimTransport::attach(IbSimConfig::local(name.clone()).node("host-5")).unwrap();
    let attrs = a.port_attrs().clone();
    assert_eq!(attrs.ca_name, "host-5");
    assert_eq!(attrs.lid, f.port_info(h5, 1).unwrap().lid);
    assert_eq!(attrs.sm_lid, s.sm_lid());
    assert_eq!(attrs.port_guid, f.node(h5).unwrap().node_guid + 1);
    assert_eq!(attrs.state, 4);

    // Directed route: NodeInfo of the leaf behind host-5.
    let smp = DrPath::from_hops(&[1]).unwrap().build_request(
        Method::GET,
        AttributeId::NODE_INFO,
        0,
        0x10,
        0,
    );
    let ans = ask(&mut a, Qp::Qp0, &smp, Address::smi(PERMISSIVE_LID));
    let ni = NodeInfo::parse(Smp::new_checked(&ans[..]).unwrap().data()).unwrap();
    assert_eq!(
        ni.node_guid,
        f.node(f.find("leaf-2").unwrap()).unwrap().node_guid
    );

    // A second client at the same port gets its own answers.
    let mut b = IbSimTransport::attach(IbSimConfig::local(name.clone()).node("host-5")).unwrap();
    let h8_lid = f.port_info(f.find("host-8").unwrap(), 1).unwrap().lid;
    let ans_b = ask(
        &mut b,
        Qp::Qp0,
        &lid_get(AttributeId::NODE_INFO, 0x20),
        Address::smi(h8_lid),
    );
    let ni = NodeInfo::parse(Smp::new_checked(&ans_b[..]).unwrap().data()).unwrap();
    assert_eq!(
        ni.node_guid,
        f.node(f.find("host-8").unwrap()).unwrap().node_guid
    );
    assert!(
        !a.wait_readable(Duration::from_millis(50)).unwrap(),
        "not for a"
    );
    drop(b);

    // The SA in this process answers an SA client in the ibsim one.
    let rt = Runtime::start(a, EngineConfig::default()).unwrap();
    let sa = SaClient::new(&rt, SaClientConfig::default()).unwrap();
    assert_eq!(sa.all::<NodeRecord>().unwrap().records.len(), 12);
}

#[test]
fn a_bad_mad_handed_straight_to_the_ibsim_transport_is_refused_with_its_cause() {
    use mad_core::transport::{TransportError, Unsendable};
    use mad_core::wire::MgmtClass;
    let s = Subnet::builtin().unwrap();
    let (_h, name) = serve(&s, "c");
    let mut t = IbSimTransport::attach(IbSimConfig::local(name).node("host-5")).unwrap();
    let f = s.fabric().clone();
    let smp = lid_get(AttributeId::NODE_INFO, 0x51);
    let to = Address::smi(f.port_info(f.find("host-8").unwrap(), 1).unwrap().lid);
    let refused = |r: Result<_, TransportError>| match r {
        Err(TransportError::BadSend(c)) => c,
        other => panic!("{other:?}"),
    };
    // bytes are the point: a MAD cut short of its common header.
    assert_eq!(
        refused(t.post_send(Qp::Qp0, &smp[..10], &to)),
        Unsendable::Truncated { len: 10 }
    );
    let mut long = smp.clone();
    long.resize(300, 0);
    assert_eq!(
        refused(t.post_send(Qp::Qp0, &long, &to)),
        Unsendable::TooLong { len: 300, max: 256 }
    );
    assert_eq!(
        refused(t.post_send(Qp::Qp1, &smp, &Address::gsi(1))),
        Unsendable::WrongQp {
            class: MgmtClass::SUBN_LID_ROUTED,
            qp: Qp::Qp1
        }
    );
    // Nothing went to the server: the next good request's answer is the
    // first thing that comes back.
    let answer = ask(&mut t, Qp::Qp0, &smp, to);
    assert_eq!(Mad::new_checked(&answer[..]).unwrap().tid() & 0xFFFF, 0x51);
}

#[test]
fn a_client_naming_no_node_attaches_at_the_first_free_ca_and_unknown_nodes_are_refused() {
    let s = Subnet::builtin().unwrap();
    let (_h, name) = serve(&s, "b");
    let t = IbSimTransport::attach(IbSimConfig::local(name.clone())).unwrap();
    assert_eq!(t.port_attrs().ca_name, "host-2");
    let e = IbSimTransport::attach(IbSimConfig::local(name.clone()).node("nowhere")).unwrap_err();
    assert!(e.to_string().contains("nowhere"), "{e}");
    // The SM's node is taken by SM-lite and the SA.
    assert!(IbSimTransport::attach(IbSimConfig::local(name).node("host-1")).is_err());
}

#[test]
fn infiniband_diags_under_libumad2sim_query_the_built_in_fabric_from_another_process() {
    if !std::path::Path::new(UMAD2SIM).exists() {
        panic!("{UMAD2SIM} missing: install libumad2sim0");
    }
    let s = Subnet::builtin().unwrap();
    let f = s.fabric().clone();
    let (_h, name) = serve(&s, "c");
    let h8_lid = f.port_info(f.find("host-8").unwrap(), 1).unwrap().lid;
    let out = Command::new("smpquery")
        .current_dir(std::env::temp_dir())
        .env("LD_PRELOAD", UMAD2SIM)
        .env("IBSIM_SOCKNAME", &name)
        .env("SIM_HOST", "host-6")
        .env_remove("SIM_SET_ISSM")
        .env_remove("IBSIM_SERVER_NAME")
        .args(["nodedesc", &h8_lid.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("host-8 HCA-1"), "{text}");
    let out = Command::new("sminfo")
        .current_dir(std::env::temp_dir())
        .env("LD_PRELOAD", UMAD2SIM)
        .env("IBSIM_SOCKNAME", &name)
        .env("SIM_HOST", "host-6")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("sminfo: sm lid {}", s.sm_lid())) && text.contains("SMINFO_MASTER"),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
