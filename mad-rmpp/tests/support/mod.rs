//! Helpers shared by mad-rmpp's integration tests.

/// An SA GetTableResp class header (common MAD header, RMPP header, SA
/// header: 56 bytes) with `tid`, AttributeID NodeRecord and an
/// AttributeOffset of 14 words (a NodeRecord's length).
pub fn sa_header(tid: u64) -> Vec<u8> {
    let mut h = vec![0u8; 56];
    h[0] = 1;
    h[1] = 0x03;
    h[2] = 2;
    h[3] = 0x92;
    h[8..16].copy_from_slice(&tid.to_be_bytes());
    h[16..18].copy_from_slice(&0x0011u16.to_be_bytes());
    h[44..46].copy_from_slice(&14u16.to_be_bytes());
    h
}
