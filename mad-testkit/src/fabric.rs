//! A far side that answers like the simulated fabric because it is the
//! simulated fabric: one call gives a [`Fabric`] and a port on it, and
//! the helpers every fabric test wrote for itself (drain the receives,
//! check the completions, one request and its answer).

use mad_core::transport::{
    Address, Qp, Received, SendCompletion, Transport, TransportError, WcStatus,
};
use mad_core::wire::smp::{Smp, PERMISSIVE_LID};
use mad_core::wire::{AttributeId, Mad, Method};
use mad_sim::{Fabric, SimError, SimPort, Topology, TopologyError};

use crate::MadBuilder;

/// ibsim's example topology (`net` of ibsim-utils): two 8-port switches
/// joined by two links, an HCA on each of ports 1 and 2 of the first.
pub const IBSIM_EXAMPLE_NET: &str = include_str!("../nets/ibsim_example.net");

/// The TID bits a requester owns (the far side may rewrite bits 48–63).
pub const TID_MASK: u64 = (1 << 48) - 1;

/// The built-in default topology (a two-level fat tree, see
/// [`mad_sim::DEFAULT_TOPOLOGY`]) and a port on its first node.
///
/// # Panics
/// Never for the built-in topology (it has nodes).
#[must_use]
pub fn builtin() -> (Fabric, SimPort) {
    let fabric = Fabric::builtin();
    #[allow(clippy::expect_used)]
    let port = fabric
        .attach_default()
        .expect("the built-in topology has a first node");
    (fabric, port)
}

/// A fabric on the topology `text` (ibnetdiscover / ibsim format) and a
/// port at `node` / `port` of it.
///
/// # Errors
/// The topology does not parse, or has no such node or port.
pub fn from_text(text: &str, node: &str, port: u8) -> Result<(Fabric, SimPort), String> {
    let topo = Topology::parse_str(text).map_err(|e: TopologyError| e.to_string())?;
    let fabric = Fabric::new(&topo);
    let p = fabric
        .attach(node, port)
        .map_err(|e: SimError| e.to_string())?;
    Ok((fabric, p))
}

/// Everything `t` has received so far.
///
/// # Errors
/// The transport's receive error.
pub fn drain<T: Transport + ?Sized>(t: &mut T) -> Result<Vec<Received>, TransportError> {
    let mut v = Vec::new();
    while let Some(r) = t.poll_recv()? {
        v.push(r);
    }
    Ok(v)
}

/// The send completions of `t` so far.
///
/// # Errors
/// The transport's completion error.
pub fn completions<T: Transport + ?Sized>(
    t: &mut T,
) -> Result<Vec<SendCompletion>, TransportError> {
    let mut v = Vec::new();
    t.poll_send_completions(&mut v)?;
    Ok(v)
}

/// The send completions of `t` so far, all of them successes: their
/// number, or the first that is not.
///
/// # Errors
/// A completion that is not a success, or the transport's error.
pub fn completions_ok<T: Transport + ?Sized>(t: &mut T) -> Result<usize, String> {
    let v = completions(t).map_err(|e| e.to_string())?;
    match v.iter().find(|c| c.status != WcStatus::Success) {
        Some(c) => Err(format!("send completed with {c:?}")),
        None => Ok(v.len()),
    }
}

/// Posts `mad` on `qp` to `dest`, lets the fabric deliver what is due,
/// and returns the answer with the same TID (low 48 bits), if one came.
/// Other MADs received meanwhile are dropped.
///
/// # Errors
/// The post or a receive failed.
pub fn rpc(
    fabric: &Fabric,
    t: &mut SimPort,
    qp: Qp,
    mad: &[u8],
    dest: &Address,
) -> Result<Option<Received>, TransportError> {
    let tid = Mad::new_unchecked(mad).tid() & TID_MASK;
    t.post_send(qp, mad, dest)?;
    fabric.run_until_idle();
    Ok(drain(t)?.into_iter().find(|r| {
        let m = Mad::new_unchecked(r.mad.as_slice());
        m.is_response() && m.tid() & TID_MASK == tid
    }))
}

/// A directed-route Get of `attr` / `attr_mod` along `hops` with `tid`:
/// the answer's DR status and attribute data.
///
/// # Errors
/// The post or a receive failed, or no answer came.
pub fn dr_get(
    fabric: &Fabric,
    t: &mut SimPort,
    hops: &[u8],
    attr: AttributeId,
    attr_mod: u32,
    tid: u64,
) -> Result<(u16, [u8; 64]), String> {
    let mad = MadBuilder::dr(hops, Method::GET, attr)
        .attr_mod(attr_mod)
        .tid(tid)
        .build();
    let r = rpc(fabric, t, Qp::Qp0, &mad, &Address::smi(PERMISSIVE_LID))
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no answer to the DR Get of {attr:?} along {hops:?}"))?;
    let s = Smp::new_checked(r.mad.as_slice()).map_err(|e| e.to_string())?;
    let mut d = [0u8; 64];
    d.copy_from_slice(s.data());
    Ok((s.dr_status(), d))
}
