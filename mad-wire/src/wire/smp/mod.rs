//! Subnet management packets (classes 0x01 and 0x81, MAD.md §6).
//!
//! - [`SmpRepr`] and [`DrSmpRepr`]: lossless `Repr`s of a whole 256-byte
//!   LID-routed and directed-route SMP.
//! - [`Smp`]: a zero-copy view of either kind.
//! - The directed-route hop-pointer rules of IBA vol. 1 §14.2.2 as the
//!   Linux kernel implements them (`drivers/infiniband/core/smi.c`):
//!   [`dr_handle_send`] (and [`dr_check_send`], its verdict without
//!   writing), [`dr_handle_recv`], [`dr_check_forward`],
//!   [`dr_fwd_port`], [`is_local_smp`], [`is_local_returning_smp`].
//! - [`DrPath`]: a directed route as `smpquery -D` takes it (`"0,1,3"`),
//!   writing the requester's routing fields; [`dr_make_response`] turns a
//!   received DR request into its response.
//!
//! # A directed route, step by step
//! Requester R sends with HopPointer 0; every send on the outbound leg
//! increments HopPointer and checks that `InitialPath[hp]` is the port it
//! leaves through; every receive on a switch records the arrival port in
//! `ReturnPath[hp]`. At the end (hp = HopCount + 1) the SMA answers with
//! D = 1 and the same HopPointer; every returning send decrements it and
//! leaves through `ReturnPath[hp]`, until hp = 0 at the requester.

mod dr;
mod layout;
mod path;

pub use dr::{dr_arrive, DrArrival};
pub use dr::{
    dr_check_forward, dr_check_send, dr_fwd_port, dr_handle_recv, dr_handle_send, dr_make_response,
    is_local_returning_smp, is_local_smp, DrForward, DrVerdict,
};
pub use layout::{
    DrSmpRepr, Smp, SmpRepr, DR_DIRECTION_BIT, DR_INITIAL_PATH_OFFSET, DR_MAX_HOPS, DR_PATH_LEN,
    DR_RETURN_PATH_OFFSET, DR_STATUS_MASK, PERMISSIVE_LID, SMP_MIN_LEN,
};
pub use path::DrPath;

#[cfg(test)]
mod tests;
