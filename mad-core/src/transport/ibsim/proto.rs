//! ibsim's own socket protocol, as `ibsim` 0.10–0.12 and its client
//! library `libumad2sim` speak it (`include/ibsim.h` in
//! github.com/linux-rdma/ibsim).
//!
//! These are C structures sent as raw datagrams between two processes
//! of the same host, so most integers are in *host* byte order; the
//! exceptions are marked on each accessor. Everything here is pure:
//! encoding and decoding byte buffers, no I/O.
//!
//! # Sockets
//! The server binds (local mode) abstract-namespace Unix datagram
//! sockets `@NAME:ctl` and `@NAME:out0` … `@NAME:out9`, `NAME` being
//! `IBSIM_SOCKNAME` (default `sim`); or, in remote mode (`ibsim -r`),
//! UDP ports `P` (control) and `P+1` … `P+10`, `P` being
//! `IBSIM_SERVER_PORT` (default 7070).
//!
//! A client binds its own control socket (any name; libumad2sim uses
//! `@NAME:ctl<pid>`) and a data socket `@NAME:in<id>` (remote mode: any
//! UDP port, whose number becomes `id`), sends [`SimCtl`] `CONNECT` with
//! a [`SimClientInfo`], and gets back its client number `i` (0–9). The
//! server then connects its `out<i>` socket to the client's data
//! socket; the client connects its data socket to `out<i>` and from then
//! on exchanges [`SimRequest`] datagrams on it, in both directions.

use crate::wire::field::be_u32;

/// Most clients ibsim serves at once (`IBSIM_MAX_CLIENTS`).
pub const MAX_CLIENTS: u32 = 10;
/// Default UDP control port of a remote-mode ibsim.
pub const DEFAULT_SERVER_PORT: u16 = 7070;
/// Default socket base name (`SIM_BASENAME`).
pub const DEFAULT_SOCKNAME: &str = "sim";
/// `SIM_MAGIC`, first word of every control message.
pub const SIM_MAGIC: u32 = 0xdead_beef;
/// Bytes of payload in a control message (`SIM_CTL_MAX_DATA`).
pub const CTL_DATA_LEN: usize = 64;
/// Size of `struct sim_ctl`: magic, clientid, type, len, data\[64\].
pub const CTL_LEN: usize = 16 + CTL_DATA_LEN;
/// Size of `struct sim_request` on x86-64 and every LP64 / ILP32 ABI
/// that aligns `uint64_t` to 8: five `u32`, 4 bytes padding, a `u64`
/// length, 256 bytes of MAD. ibsim drops any other size.
pub const REQUEST_LEN: usize = 288;
/// Offset of the MAD inside a [`SimRequest`] datagram.
pub const REQUEST_MAD_OFFSET: usize = 32;
/// Bytes of MAD a request carries.
pub const REQUEST_MAD_LEN: usize = 256;
/// Longest node name a client can ask for (`char nodeid[32]`, NUL
/// terminated).
pub const MAX_NODEID_LEN: usize = 31;
/// `sim_request.status` ibsim sets when it could not deliver a MAD
/// (no route, nobody to hand it to, dropped by an error rate): the
/// request comes back to its sender unchanged but for this status
/// (`ETIMEDOUT`).
pub const STATUS_UNDELIVERABLE: u32 = 110;

/// Control message types (`enum SIM_CTL_TYPES`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum CtlType {
    /// The reply type of a refused request.
    Error = 0,
    /// Attach: data is a [`SimClientInfo`].
    Connect = 1,
    /// Detach.
    Disconnect = 2,
    /// The attached port's LID and state.
    GetPort = 3,
    /// Vendor id, part id, hardware version.
    GetVendor = 4,
    /// GID (prefix + node GUID, the latter in host byte order).
    GetGid = 5,
    /// Node GUID (host byte order).
    GetGuid = 6,
    /// The node's 64-byte NodeInfo, wire format (but LocalPortNum and
    /// PortGUID are those of the node record, not of the port).
    GetNodeInfo = 7,
    /// A 64-byte PortInfo, wire format; `data[0]` selects the port
    /// (0: the attached one).
    GetPortInfo = 8,
    /// Declare / withdraw as SM (data: a host-order `int`); sets the
    /// port's CapabilityMask IsSM bit.
    SetIsSm = 9,
    /// Up to 32 P_Keys of the attached port, wire (big-endian) order.
    GetPkeys = 10,
}

/// `struct sim_ctl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimCtl {
    /// Must be [`SIM_MAGIC`].
    pub magic: u32,
    /// The sender's client number (ignored in `CONNECT`).
    pub client_id: u32,
    /// Raw [`CtlType`] (the server answers a refusal with `Error`).
    pub ctl_type: u32,
    /// Bytes of `data` used (the server ignores it).
    pub len: u32,
    /// Payload.
    pub data: [u8; CTL_DATA_LEN],
}

impl SimCtl {
    /// A request of `ctl_type` from `client_id` carrying `payload`
    /// (at most 64 bytes; longer payloads are cut).
    #[must_use]
    pub fn new(client_id: u32, ctl_type: CtlType, payload: &[u8]) -> Self {
        let mut data = [0u8; CTL_DATA_LEN];
        let n = payload.len().min(CTL_DATA_LEN);
        data[..n].copy_from_slice(&payload[..n]);
        Self {
            magic: SIM_MAGIC,
            client_id,
            ctl_type: ctl_type as u32,
            // n <= 64
            len: n as u32,
            data,
        }
    }

    /// The 80-byte datagram.
    #[must_use]
    pub fn encode(&self) -> [u8; CTL_LEN] {
        let mut b = [0u8; CTL_LEN];
        b[0..4].copy_from_slice(&self.magic.to_ne_bytes());
        b[4..8].copy_from_slice(&self.client_id.to_ne_bytes());
        b[8..12].copy_from_slice(&self.ctl_type.to_ne_bytes());
        b[12..16].copy_from_slice(&self.len.to_ne_bytes());
        b[16..].copy_from_slice(&self.data);
        b
    }

    /// Parses a datagram; `None` unless it is exactly [`CTL_LEN`] bytes.
    #[must_use]
    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != CTL_LEN {
            return None;
        }
        let mut data = [0u8; CTL_DATA_LEN];
        data.copy_from_slice(&b[16..]);
        Some(Self {
            magic: ne32(b, 0),
            client_id: ne32(b, 4),
            ctl_type: ne32(b, 8),
            len: ne32(b, 12),
            data,
        })
    }

    /// True when the server refused the request.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.ctl_type == CtlType::Error as u32
    }
}

/// `struct sim_client_info`, the payload of `CONNECT` both ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimClientInfo {
    /// Call: the client's data-socket id (`in<id>` / its UDP port);
    /// must be non-zero, ibsim marks a free slot with 0. Reply: the
    /// client number (0–9).
    pub id: u32,
    /// A QP number above 1 that requests to this port with that
    /// destination QP are handed to (0: none).
    pub qp: u32,
    /// Non-zero: this client takes requests to QP0 / QP1 of its port
    /// (at most one such client per node).
    pub issm: u32,
    /// Call: node to attach at (its name in the topology file or its
    /// NodeDescription; empty: ibsim's default node). Reply: the name of
    /// the node attached at.
    pub node: String,
}

impl SimClientInfo {
    /// Encoded size: three `u32` and `char nodeid[32]`.
    pub const LEN: usize = 44;

    /// Encodes into a control payload. Node names over
    /// [`MAX_NODEID_LEN`] bytes are cut (callers check first).
    #[must_use]
    pub fn encode(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[0..4].copy_from_slice(&self.id.to_ne_bytes());
        b[4..8].copy_from_slice(&self.qp.to_ne_bytes());
        b[8..12].copy_from_slice(&self.issm.to_ne_bytes());
        let name = self.node.as_bytes();
        let n = name.len().min(MAX_NODEID_LEN);
        b[12..12 + n].copy_from_slice(&name[..n]);
        b
    }

    /// Decodes a control payload (at least [`Self::LEN`] bytes).
    #[must_use]
    pub fn decode(b: &[u8]) -> Option<Self> {
        let name = b.get(12..Self::LEN)?;
        let end = name.iter().position(|c| *c == 0).unwrap_or(name.len());
        Some(Self {
            id: ne32(b, 0),
            qp: ne32(b, 4),
            issm: ne32(b, 8),
            node: String::from_utf8_lossy(&name[..end]).into_owned(),
        })
    }
}

/// `struct sim_request`: one MAD with its UD addressing, both ways on
/// the data socket.
///
/// Byte orders follow ibsim's C code: `dlid` / `slid` are `uint32_t`
/// fields holding `htons(lid)` (so the LID is big-endian in the low 16
/// bits of a host-order word); `dqp`, `sqp` and `status` are
/// `htonl`; `length` is `htobe64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimRequest {
    /// Destination LID (0xFFFF: directed route from the sender's port).
    pub dlid: u16,
    /// Source LID (0: ibsim fills in the sender's LID for LID-routed
    /// MADs; 0xFFFF for directed route).
    pub slid: u16,
    /// Destination QP.
    pub dqp: u32,
    /// Source QP.
    pub sqp: u32,
    /// 0, or [`STATUS_UNDELIVERABLE`] on a MAD ibsim returns unsent.
    pub status: u32,
    /// MAD bytes used (at most 256).
    pub length: u64,
    /// The MAD, zero padded.
    pub mad: [u8; REQUEST_MAD_LEN],
}

impl SimRequest {
    /// A request carrying `mad` (cut to 256 bytes, zero padded).
    #[must_use]
    pub fn new(dlid: u16, slid: u16, dqp: u32, sqp: u32, mad: &[u8]) -> Self {
        let mut buf = [0u8; REQUEST_MAD_LEN];
        let n = mad.len().min(REQUEST_MAD_LEN);
        buf[..n].copy_from_slice(&mad[..n]);
        Self {
            dlid,
            slid,
            dqp,
            sqp,
            status: 0,
            length: n as u64,
            mad: buf,
        }
    }

    /// The 288-byte datagram.
    #[must_use]
    pub fn encode(&self) -> [u8; REQUEST_LEN] {
        let mut b = [0u8; REQUEST_LEN];
        b[0..4].copy_from_slice(&u32::from(self.dlid.to_be()).to_ne_bytes());
        b[4..8].copy_from_slice(&u32::from(self.slid.to_be()).to_ne_bytes());
        b[8..12].copy_from_slice(&self.dqp.to_be_bytes());
        b[12..16].copy_from_slice(&self.sqp.to_be_bytes());
        b[16..20].copy_from_slice(&self.status.to_be_bytes());
        b[24..32].copy_from_slice(&self.length.to_be_bytes());
        b[REQUEST_MAD_OFFSET..].copy_from_slice(&self.mad);
        b
    }

    /// Parses a datagram; `None` unless it is exactly [`REQUEST_LEN`]
    /// bytes (ibsim sends nothing else on a data socket).
    #[must_use]
    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != REQUEST_LEN {
            return None;
        }
        let mut mad = [0u8; REQUEST_MAD_LEN];
        mad.copy_from_slice(&b[REQUEST_MAD_OFFSET..]);
        let mut len = [0u8; 8];
        len.copy_from_slice(&b[24..32]);
        Some(Self {
            // ntohs() of the low 16 bits, as ibsim reads it.
            dlid: u16::from_be(ne32(b, 0) as u16),
            slid: u16::from_be(ne32(b, 4) as u16),
            dqp: be_u32(b, 8),
            sqp: be_u32(b, 12),
            status: be_u32(b, 16),
            length: u64::from_be_bytes(len),
            mad,
        })
    }

    /// The MAD bytes the sender declared (all 256 when `length` is 0 or
    /// out of range).
    #[must_use]
    pub fn mad_bytes(&self) -> &[u8] {
        match usize::try_from(self.length) {
            Ok(n) if n > 0 && n <= REQUEST_MAD_LEN => &self.mad[..n],
            _ => &self.mad[..],
        }
    }
}

fn ne32(b: &[u8], at: usize) -> u32 {
    match b.get(at..at + 4) {
        Some(s) => u32::from_ne_bytes([s[0], s[1], s[2], s[3]]),
        None => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctl_encodes_host_order_header_and_round_trips() {
        let c = SimCtl::new(3, CtlType::GetPortInfo, &[0]);
        let b = c.encode();
        assert_eq!(b.len(), 80);
        assert_eq!(&b[0..4], &SIM_MAGIC.to_ne_bytes());
        assert_eq!(&b[4..8], &3u32.to_ne_bytes());
        assert_eq!(&b[8..12], &8u32.to_ne_bytes());
        assert_eq!(SimCtl::decode(&b), Some(c));
        assert_eq!(SimCtl::decode(&b[..79]), None);
    }

    #[test]
    fn ctl_error_reply_is_recognised() {
        let mut c = SimCtl::new(0, CtlType::Connect, &[]);
        assert!(!c.is_error());
        c.ctl_type = 0;
        assert!(c.is_error());
    }

    #[test]
    fn client_info_cuts_long_names_and_round_trips() {
        let info = SimClientInfo {
            id: 0x4000_1234,
            qp: 7,
            issm: 1,
            node: "Switch1".into(),
        };
        let b = info.encode();
        assert_eq!(&b[12..20], b"Switch1\0");
        assert_eq!(SimClientInfo::decode(&b), Some(info));
        let long = SimClientInfo {
            node: "x".repeat(40),
            ..SimClientInfo::decode(&b).unwrap()
        };
        let d = SimClientInfo::decode(&long.encode()).unwrap();
        assert_eq!(d.node.len(), MAX_NODEID_LEN);
        assert_eq!(SimClientInfo::decode(&b[..43]), None);
    }

    #[test]
    fn request_layout_matches_ibsim_byte_orders() {
        let mut mad = [0u8; 256];
        mad_testkit_wire::header::edit(&mut mad, |h| h.base_version = 1);
        mad[255] = 0xEE;
        let r = SimRequest::new(0xFFFF, 0x0102, 0, 1, &mad);
        let b = r.encode();
        assert_eq!(b.len(), REQUEST_LEN);
        // dlid: htons(0xffff) in a host-order u32.
        assert_eq!(
            u16::from_be(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]) as u16),
            0xFFFF
        );
        assert_eq!(
            u32::from_ne_bytes([b[4], b[5], b[6], b[7]]),
            u32::from(0x0102u16.to_be())
        );
        assert_eq!(&b[8..16], &[0, 0, 0, 0, 0, 0, 0, 1]);
        assert_eq!(&b[24..32], &[0, 0, 0, 0, 0, 0, 1, 0]);
        assert_eq!(b[32], 1);
        assert_eq!(b[287], 0xEE);
        let d = SimRequest::decode(&b).unwrap();
        assert_eq!(d, r);
        assert_eq!(d.mad_bytes().len(), 256);
        assert_eq!(SimRequest::decode(&b[..287]), None);
    }

    #[test]
    fn request_mad_bytes_honours_declared_length() {
        let r = SimRequest::new(1, 0, 1, 1, &[1u8; 100]);
        assert_eq!(r.mad_bytes().len(), 100);
        let mut z = r.clone();
        z.length = 0;
        assert_eq!(z.mad_bytes().len(), 256);
        z.length = 1 << 40;
        assert_eq!(z.mad_bytes().len(), 256);
    }

    #[test]
    fn undeliverable_status_survives_decode() {
        let mut r = SimRequest::new(5, 0, 1, 1, &[0u8; 256]);
        r.status = STATUS_UNDELIVERABLE;
        assert_eq!(SimRequest::decode(&r.encode()).unwrap().status, 110);
    }
}
