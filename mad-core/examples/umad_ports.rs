//! Lists the CAs and ports libibumad sees, then sends one SMP Get NodeInfo
//! (directed route, zero hops) through the umad transport and prints the
//! node GUID from the answer. Run under libumad2sim to talk to ibsim:
//! `LD_PRELOAD=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so cargo run --example umad_ports`.
use mad_core::transport::umad::{list_cas, UmadTransport};
use mad_core::transport::{Address, Qp, Transport, PERMISSIVE_LID};
use mad_core::wire::attr::NodeInfo;
use mad_core::wire::smp::{DrPath, Smp};
use mad_core::wire::{AttributeId, Method, Repr, SMP_DATA_OFFSET};
use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for ca in list_cas()? {
        println!(
            "CA {} node_guid {:#018x} type {}",
            ca.name, ca.node_guid, ca.node_type
        );
        for p in &ca.ports {
            println!(
                "  port {} lid {} state {} guid {:#018x} pkeys {:?}",
                p.port_num, p.lid, p.state, p.port_guid, p.pkeys
            );
        }
    }
    let mut t = UmadTransport::open(None, 0)?;
    let mad = DrPath::local().build_request(
        Method::GET,
        AttributeId::NODE_INFO,
        0,
        0x0000_1234_0000_0042,
        0,
    );
    t.post_send(Qp::Qp0, &mad, &Address::smi(PERMISSIVE_LID))?;
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Some(r) = t.poll_recv()? {
            let guid = NodeInfo::parse(&r.mad[SMP_DATA_OFFSET..])?.node_guid;
            let tid = Smp::new_checked(&r.mad[..])?.tid();
            println!(
                "NodeInfo answer from lid {}: node guid {guid:#018x}, tid {tid:#018x}",
                r.src.lid
            );
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Err("no answer within 2 s".into())
}
