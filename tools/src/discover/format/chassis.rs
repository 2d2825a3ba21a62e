//! libibnetdisc's chassis grouping (`--grouping`) and its Xsigo GUID
//! tests, for the topology output.

use crate::discover::model::Fabric;

/// Xsigo GUID tests of libibnetdisc (they add ` slot N` / ` (scp)`).
pub(super) fn is_xsigo_hca(guid: u64) -> bool {
    guid & 0xffff_ffff_0000_0000 == 0x0013_9702_0000_0000
}
pub(super) fn is_xsigo_tca(guid: u64) -> bool {
    guid & 0xffff_ffff_0000_0000 == 0x0013_9703_0000_0000
}

/// The chassis grouping libibnetdisc computes for nodes that are not
/// Voltaire ones: nodes sharing a chassis GUID (the SystemImageGUID,
/// masked for Topspin / Xsigo) form chassis numbered in discovery order
/// when there are at least two of them.
#[derive(Debug, Clone, Default)]
pub(super) struct Chassis {
    /// (chassis number, chassis GUID, member node indices newest first).
    pub(super) list: Vec<(u32, u64, Vec<usize>)>,
    /// Chassis number of each node (0: none).
    pub(super) num: Vec<u32>,
}

const VTR_VENDOR_ID: u32 = 0x8f1;
const TS_VENDOR_ID: u32 = 0x5ad;
const SS_VENDOR_ID: u32 = 0x66a;
const XS_VENDOR_ID: u32 = 0x1397;

fn chassis_guid(f: &Fabric, i: usize) -> u64 {
    let n = &f.nodes[i];
    let sys = n.info.system_image_guid;
    let vend = n.info.vendor_id;
    let xsigo_guid = |g: u64| g & 0xffff_ff00_0000_0000 == 0x0013_9700_0000_0000;
    if vend == TS_VENDOR_ID || vend == SS_VENDOR_ID {
        sys & 0xffff_ffff_00ff_ffff
    } else if vend == XS_VENDOR_ID || xsigo_guid(sys) {
        let xsigo_switch = sys & 0xffff_ffff_0000_0000 == 0x0013_9701_0000_0000;
        if !(is_xsigo_hca(sys) || is_xsigo_tca(sys)) {
            if xsigo_switch {
                sys & 0xffff_ffff_00ff_ffff
            } else {
                sys
            }
        } else {
            let Some(p1) = n.port(1) else { return 0 };
            let Some(r) = p1.remote else { return sys };
            let rsys = f.nodes[r.node].info.system_image_guid;
            if rsys & 0xffff_ffff_ff00_0000 == 0x0013_9701_0200_0000 {
                rsys & 0xffff_ffff_00ff_ffff
            } else {
                sys
            }
        }
    } else {
        sys
    }
}

impl Chassis {
    pub(super) fn build(f: &Fabric) -> Self {
        let mut c = Chassis {
            list: Vec::new(),
            num: vec![0; f.nodes.len()],
        };
        // (guid, count) in creation order of the chassis records.
        let mut recs: Vec<(u64, usize, u32, Vec<usize>)> = Vec::new();
        for i in f.listed() {
            let n = &f.nodes[i];
            if n.info.vendor_id == VTR_VENDOR_ID || n.info.system_image_guid == 0 {
                continue;
            }
            let g = chassis_guid(f, i);
            match recs.iter_mut().find(|r| r.0 == g) {
                Some(r) => r.1 += 1,
                None => recs.push((g, 1, 0, Vec::new())),
            }
        }
        let mut next = 0;
        for i in f.listed() {
            let n = &f.nodes[i];
            if n.info.vendor_id == VTR_VENDOR_ID || n.info.system_image_guid == 0 {
                continue;
            }
            let g = chassis_guid(f, i);
            if let Some(r) = recs.iter_mut().find(|r| r.0 == g) {
                if r.1 > 1 {
                    if r.2 == 0 {
                        next += 1;
                        r.2 = next;
                    }
                    // libibnetdisc prepends: newest member last.
                    r.3.insert(0, i);
                    c.num[i] = r.2;
                }
            }
        }
        for (g, _, num, members) in recs {
            if num != 0 {
                c.list.push((num, g, members));
            }
        }
        c
    }
}
