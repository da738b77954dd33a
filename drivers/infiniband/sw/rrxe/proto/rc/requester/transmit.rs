// SPDX-License-Identifier: GPL-2.0

//! The transmit side of [`Sender`]: which packet or local operation goes out next
//! ([`Sender::next_packet`], [`Sender::next_local`]), segmentation of a WQE into path-MTU
//! packets, the window, the AckReq policy, fences and the initiator depth, the outcome of a
//! local operation ([`Sender::local_done`]) and taking back a packet that could not be
//! transmitted ([`Sender::unsend`]).

use super::super::super::uabi::WrOpcode;
use super::{RtoCmd, Sender, Transport, TxPacket};

impl<const N: usize> Sender<N> {
    /// Returns the next packet to transmit, new or retransmitted, or `None` if there is
    /// nothing to send or the window, an RNR wait, SQ drain or the error state forbids it.
    ///
    /// Call [`Sender::poll`] afterwards: the first packet sent arms the retransmit timer
    /// (RC); on UC, a WQE whose last packet this was completes.
    pub fn next_packet(&mut self) -> Option<TxPacket> {
        if self.is_dead() || self.rnr_wait {
            return None;
        }
        // Local operations carried out already (met again after a go-back-N) are passed
        // over; one that is not stops the cursor until `next_local` hands it out.
        while let Some(s) = self.slot(self.tx_slot) {
            if s.ran == Some(false) {
                // A WQE whose payload could not be read: nothing from it on goes out.
                return None;
            }
            if !s.wqe.op.is_local() {
                break;
            }
            if s.ran != Some(true) {
                return None;
            }
            self.tx_slot = self.tx_slot.wrapping_add(1);
            self.tx_pkt = 0;
        }
        let slot = *self.slot(self.tx_slot)?;
        let psn = slot.first_psn.wrapping_add(self.tx_pkt);
        let outstanding = psn.diff(self.una).unsigned_abs();
        let window = self.cwnd.get();
        if outstanding >= window {
            return None;
        }
        if self.draining && self.tx_pkt == 0 && psn.diff(self.max_sent) >= 0 {
            return None;
        }
        if self.tx_pkt == 0 && (slot.wqe.fence || slot.wqe.op.uses_responder_resource()) {
            // Initiator depth and fences.
            let outstanding = self.reads_outstanding();
            if (slot.wqe.fence && outstanding > 0)
                || (slot.wqe.op.uses_responder_resource() && outstanding >= self.cfg.max_rd_atomic)
            {
                return None;
            }
        }
        let mtu = self.cfg.mtu;
        let wqe = slot.wqe;
        let offset = mtu.offset_of(self.tx_pkt);
        let remaining = wqe.len.saturating_sub(offset);
        let (len, reth_len, last) = if wqe.op.has_payload() {
            let last = self.tx_pkt.wrapping_add(1) >= slot.npsn;
            (remaining.min(mtu.bytes()), wqe.len, last)
        } else {
            (0, remaining, true)
        };
        let first = self.tx_pkt == 0 || !wqe.op.has_payload();
        // `post` accepted only operations the transport carries.
        let opcode = wqe
            .op
            .opcode_on(self.cfg.transport.qp_type(), first, last)?;
        let reliable = self.cfg.transport == Transport::Rc;
        let end = if last { slot.end_psn() } else { psn.next() };
        // A packet that fills the window asks for an ACK, or the window would never open,
        // unless an earlier packet of this pass already asked for one that has not come:
        // its ACK opens the window. Otherwise every ACK that opens a few PSNs would be
        // answered by a packet asking for the next, and while the window stays full (the
        // receiver is the bottleneck) the responder would acknowledge nearly every packet
        // (one ACK per 1.6 packets of ib_write_bw between two guests, where rdma_rxe sends
        // one per message).
        let ack_owed = self.ack_asked.diff(self.una) > 0 && self.ack_asked.diff(psn) <= 0;
        let ack_req = reliable
            && (last
                || self.noack_pkts.wrapping_add(1) >= self.cfg.max_pkt_per_ack
                || (outstanding.wrapping_add(1) >= window && !ack_owed));
        self.noack_pkts = if ack_req {
            self.ack_asked = end;
            0
        } else {
            self.noack_pkts.wrapping_add(1)
        };
        let retransmit = psn.diff(self.max_sent) < 0;
        if end.diff(self.max_sent) > 0 {
            self.max_sent = end;
        }
        if last {
            self.tx_slot = self.tx_slot.wrapping_add(1);
            self.tx_pkt = 0;
        } else {
            self.tx_pkt = self.tx_pkt.wrapping_add(1);
        }
        if !reliable {
            // Unreliable: nothing will acknowledge the packet, it is done once handed out;
            // the WQE completes with its last packet.
            self.una = end;
            self.advance_done();
        } else if !self.rto_armed {
            self.rto_armed = true;
            self.rto_cmd = Some(RtoCmd::Arm);
        }
        let solicited = wqe.solicited
            && last
            && matches!(
                wqe.op,
                WrOpcode::Send
                    | WrOpcode::SendWithImm
                    | WrOpcode::SendWithInv
                    | WrOpcode::RdmaWriteWithImm
            );
        Some(TxPacket {
            id: wqe.id,
            opcode,
            psn,
            ack_req,
            solicited,
            offset,
            len,
            reth_len,
            retransmit,
        })
    }

    /// Returns the local operation ([`WrOpcode::is_local`]) the transmit cursor stands at, for
    /// the caller to carry out now and report with [`Sender::local_done`]: its id and
    /// operation. `None` if the cursor is elsewhere, or the operation must wait (the error
    /// state, an RNR wait, SQ drain, or a fence with READs or atomics outstanding).
    ///
    /// A local operation runs when every earlier WQE has been handed out, in send queue
    /// order, as in rxe's requester; it completes once every earlier WQE has completed.
    pub fn next_local(&mut self) -> Option<(u32, WrOpcode)> {
        if self.is_dead() || self.rnr_wait || self.tx_pkt != 0 {
            return None;
        }
        let slot = *self.slot(self.tx_slot)?;
        if !slot.wqe.op.is_local() || slot.ran.is_some() {
            return None;
        }
        if self.draining && slot.first_psn.diff(self.max_sent) >= 0 {
            return None;
        }
        if slot.wqe.fence && self.reads_outstanding() > 0 {
            return None;
        }
        Some((slot.wqe.id, slot.wqe.op))
    }

    /// The payload of request packet `p`, just handed out by [`Sender::next_packet`], could not
    /// be read from its WQE's local memory (found while building it, after the keys were
    /// checked): the packet was not sent, nothing from it on is, and once every earlier WQE
    /// has completed, its WQE completes with `IB_WC_LOC_PROT_ERR` and the send side
    /// enters the error state (as a failed local operation does). Not a lost packet, which
    /// would be retried until the retry count runs out.
    pub fn payload_failed(&mut self, p: &TxPacket) {
        if self.is_dead() {
            return;
        }
        let Some(off) = (0..self.len).find(|&o| {
            self.slot(o)
                .is_some_and(|s| s.wqe.id == p.id && !s.wqe.op.is_local() && s.contains(p.psn))
        }) else {
            return;
        };
        let i = self.index(off);
        let Some(slot) = self.ring.get_mut(i) else {
            return;
        };
        slot.ran = Some(false);
        // A UC WQE counts as done once its last packet is handed out: this one is not.
        self.done = self.done.min(off);
        if !p.retransmit {
            // Nothing from `p` on went out.
            self.max_sent = p.psn;
        }
        self.seek(p.psn);
        self.advance_done();
    }

    /// Reports the outcome of the local operation [`Sender::next_local`] returned: on
    /// success the cursor moves past it; on failure it stops there, and once every earlier
    /// WQE has completed the operation completes with its error status
    /// ([`WrOpcode::local_error`]) and the send side enters the error state. Ignored unless `id` is
    /// that operation.
    pub fn local_done(&mut self, id: u32, ok: bool) {
        let i = self.index(self.tx_slot);
        if self.tx_slot >= self.len || self.tx_pkt != 0 {
            return;
        }
        let Some(slot) = self.ring.get_mut(i) else {
            return;
        };
        if slot.wqe.id != id || !slot.wqe.op.is_local() || slot.ran.is_some() {
            return;
        }
        slot.ran = Some(ok);
        if ok {
            self.tx_slot = self.tx_slot.wrapping_add(1);
        }
        self.advance_done();
    }

    /// Counts the requests that hold a responder resource (READ, atomics, ATOMIC WRITE)
    /// sent and not completed.
    fn reads_outstanding(&self) -> u32 {
        let mut outstanding = 0u32;
        for off in self.done..self.tx_slot {
            if self
                .slot(off)
                .is_some_and(|s| s.wqe.op.uses_responder_resource())
            {
                outstanding = outstanding.wrapping_add(1);
            }
        }
        outstanding
    }

    /// Takes back `p`, the packet [`Sender::next_packet`] just returned, which could not be
    /// transmitted (the transmit queue was full): the next call returns it again, as it
    /// was. Returns `false` (the packet is lost) on UC, where a packet handed out already
    /// counted as sent, or if `p` is not the last packet handed out.
    pub fn unsend(&mut self, p: &TxPacket) -> bool {
        if self.is_dead() || self.cfg.transport != Transport::Rc {
            return false;
        }
        // The cursor is just past `p`: at its next PSN, or at the end of its WQE (its last
        // packet, or a READ request, which takes the PSNs of all its responses).
        let Some(end) = self.slot_of(p.psn).map(|s| s.end_psn()) else {
            return false;
        };
        let cursor = self.cursor_psn();
        if cursor != p.psn.next() && cursor != end {
            return false;
        }
        if !p.retransmit {
            // Nothing from `p` on went out.
            self.max_sent = p.psn;
        }
        self.seek(p.psn);
        true
    }
}
