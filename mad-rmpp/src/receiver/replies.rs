//! The MADs the table sends back (ACK, STOP, ABORT) and the end of a
//! transfer.

use std::time::Instant;

use super::budget::forget;
use super::transfer::{State, Transfer};
use super::{hdr_len_of, Output, ReceiverTable, TransferKey};
use crate::peer::reply_address;
use crate::segment::{
    flip_response_bit, header, read_header, write_header, RmppStatus, RmppType, FLAG_ACTIVE,
    MAD_LEN, RMPP_HEADER_END,
};
use crate::Outcome;
use mad_wire::addr::Address;
use mad_wire::wire::Mad;

impl ReceiverTable {
    /// A reply MAD built from `template` with the response bit flipped.
    pub(super) fn reply(
        template: &[u8],
        rtype: RmppType,
        st: RmppStatus,
        seg: u32,
        data2: u32,
    ) -> Vec<u8> {
        let mut m = vec![0u8; MAD_LEN];
        let n = template.len().min(MAD_LEN);
        m[..n].copy_from_slice(&template[..n]);
        flip_response_bit(&mut m);
        let rt = read_header(&m).map(|h| h.resp_time).unwrap_or(0x1F);
        write_header(&header(rtype, rt, FLAG_ACTIVE, st, seg, data2), &mut m);
        if rtype != RmppType::ACK {
            // ABORT/STOP carry no class data. The RMPP header stays, also
            // for a class with no class header (data at byte 24).
            let h = hdr_len_of(Mad::new_unchecked(&m[..]).mgmt_class().0)
                .clamp(RMPP_HEADER_END, MAD_LEN);
            m[h..].iter_mut().for_each(|b| *b = 0);
        }
        m
    }

    /// Sends ABORT with `st` (STOP for RESX), built on `mad`, to `to`.
    pub(super) fn nack(&mut self, key: TransferKey, to: Address, mad: &[u8], st: RmppStatus) {
        let rtype = if st == RmppStatus::RESX {
            RmppType::STOP
        } else {
            RmppType::ABORT
        };
        self.out.push_back(Output::Send {
            key,
            to,
            mad: Self::reply(mad, rtype, st, 0, 0),
        });
    }

    /// Refuses a MAD received from `src` with `st` (ABORT, or STOP for
    /// RESX) and ends the transfer it belongs to: an active one is
    /// dropped; for a segment that belongs to no transfer,
    /// [`Output::Ended`] is still reported so that the owner of a waiting
    /// send learns at once that its response failed.
    pub(super) fn reject(&mut self, key: TransferKey, src: &Address, mad: &[u8], st: RmppStatus) {
        self.nack(key, reply_address(src), mad, st);
        if self.is_active(&key) {
            self.fail(key, None, Outcome::Aborted(st));
        } else {
            self.out.push_back(Output::Ended {
                key,
                outcome: Outcome::Aborted(st),
            });
        }
    }

    pub(super) fn is_active(&self, key: &TransferKey) -> bool {
        self.transfers
            .get(key)
            .is_some_and(|t| t.state == State::Active)
    }

    pub(super) fn ack(&mut self, key: TransferKey) {
        if let Some(t) = self.transfers.get(&key) {
            let m = Self::reply(
                &t.first,
                RmppType::ACK,
                RmppStatus::SUCCESS,
                t.seg_num,
                t.newwin,
            );
            let to = t.reply;
            self.out.push_back(Output::Send { key, to, mad: m });
        }
    }

    pub(super) fn set_deadline(&mut self, key: TransferKey, at: Instant) {
        if let Some(t) = self.transfers.get_mut(&key) {
            self.deadlines.remove(&(t.deadline, key));
            t.deadline = at;
            self.deadlines.insert((at, key));
        }
    }

    pub(super) fn remove(&mut self, key: &TransferKey) -> Option<Transfer> {
        let mut t = self.transfers.remove(key)?;
        self.deadlines.remove(&(t.deadline, *key));
        let data = std::mem::take(&mut t.data);
        self.usage.release(key.src, data.capacity());
        // A failed or canceled reassembly's buffer serves the next one.
        self.recycle(data);
        match t.state {
            State::Active => {
                self.active -= 1;
                if let Some(s) = self.usage.sources.get_mut(&key.src) {
                    s.active = s.active.saturating_sub(1);
                }
            }
            State::Complete => {
                forget(&mut self.lingering, key);
                if let Some(s) = self.usage.sources.get_mut(&key.src) {
                    forget(&mut s.lingering, key);
                }
            }
        }
        self.usage.tidy(key.src);
        Some(t)
    }

    /// Ends an active transfer with `outcome`, telling the sender with
    /// `nack` (an RMPP status) when given.
    pub(super) fn fail(&mut self, key: TransferKey, nack: Option<RmppStatus>, outcome: Outcome) {
        if let Some(t) = self.remove(&key) {
            if let Some(st) = nack {
                let first = t.first;
                self.nack(key, t.reply, &first, st);
            }
            self.out.push_back(Output::Ended { key, outcome });
        }
    }
}
