//! Disconnection: DREQ and DREP (IBTA tables 112–113).

crate::wire_struct! {
    /// DisconnectRequest (DREQ, IBTA table 112).
    pub struct CmDreq ("DisconnectRequest", 232) {
        /// Local Communication ID.
        local_comm_id: uint u32 [0, 32] => "LocalCommID",
        /// Remote Communication ID.
        remote_comm_id: uint u32 [32, 32] => "RemoteCommID",
        /// The receiver's QPN (or EECN).
        remote_qpn_eecn: uint u32 [64, 24] => "RemoteQPN/EECN",
        /// Reserved (byte 11).
        reserved: uint u8 [88, 8] => _,
        /// Private data (220 bytes).
        private_data: bytes [u8; 220] [12] => "PrivateData",
    }
}

crate::wire_struct! {
    /// DisconnectReply (DREP, IBTA table 113).
    pub struct CmDrep ("DisconnectReply", 232) {
        /// Local Communication ID.
        local_comm_id: uint u32 [0, 32] => "LocalCommID",
        /// Remote Communication ID.
        remote_comm_id: uint u32 [32, 32] => "RemoteCommID",
        /// Private data (224 bytes).
        private_data: bytes [u8; 224] [8] => "PrivateData",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::repr_roundtrip_tests!(CmDreq, CmDrep);
}
