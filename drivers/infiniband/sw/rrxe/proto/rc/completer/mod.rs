// SPDX-License-Identifier: GPL-2.0

//! The completer half of [`Sender`]: ACKs, NAKs, RNR NAKs, timers and completions.
//!
//! A response carries a PSN and an AETH syndrome ([`Response`]). Against the oldest
//! unacknowledged PSN `una` and the highest PSN sent so far:
//!
//! - an ACK for PSN `p` acknowledges every PSN up to `p` (ACKs are cumulative, IBA
//!   9.7.5.1.1): `una` moves to `p + 1` and every WQE whose last PSN is before `una`
//!   completes with [`WcStatus::Success`], in order. ACKs before `una` (duplicates, stale
//!   reordered ones) and ACKs for PSNs never sent are ignored.
//! - a NAK with PSN `p` implicitly acknowledges every PSN before `p`. A PSN sequence error
//!   NAK restarts transmission from `p`; invalid request, remote access and remote
//!   operational error NAKs complete the WQE holding `p` with
//!   [`WcStatus::RemInvReqErr`], [`WcStatus::RemAccessErr`] or [`WcStatus::RemOpErr`],
//!   flush the rest and move the QP to ERR.
//! - an RNR NAK with PSN `p` also acknowledges what precedes `p`, stops transmission and
//!   asks for the RNR timer with the NAK's timer code; when it fires, transmission restarts
//!   from `p`. `rnr_retry` RNR NAKs are retried; 7 means forever (IBA C9-141 footnote), and
//!   the next one completes the WQE with [`WcStatus::RnrRetryExcErr`].
//! - a retransmit timer expiry with PSNs outstanding restarts transmission from `una`;
//!   after `retry_cnt` retries the next expiry completes the oldest WQE with
//!   [`WcStatus::RetryExcErr`].
//!
//! Deviations from rxe (rxe_comp.c), following IBA 9.7.5.2 instead:
//!
//! - rxe treats `retry_cnt == 7` as infinite, like `rnr_retry`; the IBA gives only
//!   `rnr_retry` that meaning, so here 7 means seven retries. Instead, each expiry without
//!   progress doubles the local ACK timeout, up to 32 times
//!   ([`Sender::rto_multiplier`]), and progress resets it: a responder that is slow for a
//!   while (rdma_rxe under load answers a window of 64 KiB messages in more than the 67 ms
//!   that rdma-core's tools ask for) is waited for, and a dead one still ends the QP with
//!   [`WcStatus::RetryExcErr`], after about 127 timeouts instead of never.
//! - rxe resets the retry counters only on a positive ACK; here any forward progress
//!   (including the implicit acknowledgment of a NAK) resets them, so that a lossy but
//!   working link cannot exhaust them.
//! - rxe keeps sending new packets while it waits for the RNR timer; here transmission
//!   pauses (they would only be rejected as out of sequence).
//! - An RNR NAK implicitly acknowledges the PSNs before it (IBA 9.7.5.1.4), which rxe does
//!   not apply.
//!
//! RDMA READ and atomic WQEs complete only by their responses (IBA 9.7.5.1.3): READ
//! response packets must arrive in PSN order (the first one may implicitly acknowledge the
//! PSNs before it), and an atomic ACKnowledge carries the original value.
//! [`Sender::check_response`]
//! tells the caller where a response's data goes before [`Sender::on_response`] takes it;
//! if placing fails, [`Sender::on_local_error`] fails the WQE instead. An ACK or NAK can
//! never complete a READ or atomic: one whose PSN lies beyond an incomplete READ or atomic
//! means its responses were lost, and transmission restarts from it. An ATOMIC WRITE or a
//! FLUSH is acknowledged like an RDMA WRITE, by an ACK or by the empty READ response ONLY
//! with its PSN that the responder answers it with (rdma_rxe).
//!
//! The MSN of the AETH is not used: completion is by PSN, as in rxe.
//!
//! A [`Transport::Uc`] sender has nothing to complete here: its WQEs complete as their
//! last packets go out (see [`super::requester`]), responses are ignored and no timer is
//! ever asked for.
//!
//! The files split it by concern: this one holds the responses ([`Response`], [`Deliver`])
//! and what they do (acknowledgment, NAKs, RNR NAKs, READ responses and atomic ACKs);
//! `recovery.rs` the timers, the go-back-N retry with its counters, and the error state;
//! `poll.rs` what the caller is told to do ([`SendAction`], [`SendCompletion`]).

use super::super::aeth::{Credits, NakCode, Syndrome};
use super::super::opcode::{Op, Opcode, Position};
use super::super::packet::Packet;
use super::super::psn::{Msn, Psn};
use super::super::uabi::WrOpcode;
use super::requester::{RtoCmd, Sender, Slot, Transport};
use super::WcStatus;

mod poll;
mod recovery;

pub use poll::*;
pub use recovery::*;

/// The header values of a received response packet: an ACK, NAK or RNR NAK, a READ
/// response or an atomic ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response {
    /// Opcode.
    pub opcode: Opcode,
    /// BTH PSN.
    pub psn: Psn,
    /// Decoded AETH syndrome (an ACK for a READ response MIDDLE, which has no AETH).
    pub syndrome: Syndrome,
    /// AETH MSN.
    pub msn: Msn,
    /// Payload length (READ responses).
    pub payload_len: u32,
    /// Original value (atomic ACKs).
    pub atomic_orig: Option<u64>,
}

impl Response {
    /// A plain ACK for `psn` (for tests and simulations).
    #[cfg(rrxe_host)]
    pub fn ack(psn: Psn) -> Self {
        Self {
            opcode: Opcode::RC_ACKNOWLEDGE,
            psn,
            syndrome: Syndrome::Ack(Credits::INVALID),
            msn: Msn::default(),
            payload_len: 0,
            atomic_orig: None,
        }
    }

    /// Extracts the response fields of a parsed packet, or `None` if it is not a response,
    /// lacks its AETH or has a reserved syndrome (such packets are dropped).
    pub fn from_packet(pkt: &Packet<'_>) -> Option<Self> {
        let info = pkt.opcode().info()?;
        let (syndrome, msn) = match (pkt.aeth, info.op) {
            (Some(a), Op::Ack | Op::AtomicAck | Op::ReadResponse) => {
                (a.decode_syndrome().ok()?, a.msn())
            }
            (None, Op::ReadResponse) => (Syndrome::Ack(Credits::INVALID), Msn::default()),
            _ => return None,
        };
        Some(Self {
            opcode: pkt.opcode(),
            psn: pkt.bth.psn(),
            syndrome,
            msn,
            payload_len: u32::try_from(pkt.payload.len()).unwrap_or(u32::MAX),
            atomic_orig: pkt.atomic_ack_eth.map(|h| h.orig()),
        })
    }
}

/// Where the data of a READ response or atomic ACK goes, from [`Sender::check_response`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deliver {
    /// The payload goes to byte `offset` of WQE `id`'s scatter list.
    ReadData {
        /// The WQE's [`super::PostedWqe::id`].
        id: u32,
        /// Byte offset in the WQE's data.
        offset: u32,
    },
    /// The original value (8 bytes, host order) goes to the start of WQE `id`'s scatter list.
    AtomicOrig {
        /// The WQE's [`super::PostedWqe::id`].
        id: u32,
        /// The value before the operation.
        orig: u64,
    },
}

impl<const N: usize> Sender<N> {
    /// Returns where the data of a READ response or atomic ACK goes, if the sender would
    /// take it now; `None` for any other response, or one it would drop.
    pub fn check_response(&self, r: &Response) -> Option<Deliver> {
        if self.is_dead() || self.cfg.transport == Transport::Uc {
            return None;
        }
        let op = r.opcode.info()?.op;
        let p = r.psn;
        if p.diff(self.una) < 0 || p.diff(self.max_sent) >= 0 {
            return None;
        }
        let slot = self.slot_of(p)?;
        let idx = p.diff(slot.first_psn).unsigned_abs();
        // In order: the next PSN, or the first of a READ or atomic, which implicitly
        // acknowledges the PSNs before it, but never an earlier READ or atomic.
        if (p != self.una && idx != 0) || self.ack_limit().is_some_and(|l| p.diff(l) > 0) {
            return None;
        }
        match (op, slot.wqe.op) {
            (Op::ReadResponse, WrOpcode::RdmaRead) => {
                let first = idx == 0;
                let last = idx.wrapping_add(1) >= slot.npsn;
                let position = r.opcode.info()?.position;
                // A READ retried from its middle is answered FIRST (or ONLY) from there on.
                let pos_ok = match position {
                    Position::Only => last,
                    Position::First => !last,
                    Position::Middle => !first && !last,
                    Position::Last => !first && last,
                };
                let offset = self.cfg.mtu.offset_of(idx);
                let expect = if last {
                    slot.wqe.len.saturating_sub(offset)
                } else {
                    self.cfg.mtu.bytes()
                };
                (pos_ok && r.payload_len == expect && matches!(r.syndrome, Syndrome::Ack(_)))
                    .then_some(Deliver::ReadData {
                        id: slot.wqe.id,
                        offset,
                    })
            }
            (Op::AtomicAck, WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd) => {
                match (r.syndrome, r.atomic_orig) {
                    (Syndrome::Ack(_), Some(orig)) => Some(Deliver::AtomicOrig {
                        id: slot.wqe.id,
                        orig,
                    }),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Placing the data of a response accepted by [`Sender::check_response`] failed (the
    /// WQE's local memory is not writable): the PSNs before it are acknowledged, the WQE
    /// completes with `status` and the QP enters the error state.
    pub fn on_local_error(&mut self, r: &Response, status: WcStatus) {
        if self.is_dead() || self.cfg.transport == Transport::Uc {
            return;
        }
        self.ack_through(r.psn, true);
        self.fail(status);
    }

    /// Processes a response (ACK, NAK, RNR NAK, READ response or atomic ACK); ignored on
    /// [`Transport::Uc`], which has none.
    pub fn on_response(&mut self, r: &Response) {
        if self.is_dead() || self.cfg.transport == Transport::Uc {
            return;
        }
        let Some(info) = r.opcode.info() else {
            return;
        };
        if matches!(info.op, Op::ReadResponse | Op::AtomicAck) {
            if !self.is_empty_read_response_ack(r) {
                self.on_data_response(r);
                return;
            }
        } else if info.op != Op::Ack {
            return;
        }
        let p = r.psn;
        if p.diff(self.una) < 0 || p.diff(self.max_sent) > 0 {
            return;
        }
        let sent = p.diff(self.max_sent) < 0;
        match r.syndrome {
            Syndrome::Ack(_) => {
                if sent {
                    let lost = self.lost_responses(p.next());
                    self.ack_through(p.next(), false);
                    if lost {
                        self.retry(false);
                    }
                }
            }
            Syndrome::Nak(NakCode::PsnSequenceError) => {
                let progress = self.ack_through(p, false);
                if !sent || (!progress && (self.retry_started || self.rnr_wait)) {
                    return;
                }
                self.retry(false);
            }
            Syndrome::RnrNak(timer) => {
                if !sent {
                    return;
                }
                self.ack_through(p, false);
                if self.rnr_wait {
                    return;
                }
                if self.rnr_left == 0 {
                    self.fail(WcStatus::RnrRetryExcErr);
                    return;
                }
                if self.rnr_left != 7 {
                    self.rnr_left = self.rnr_left.wrapping_sub(1);
                }
                self.rnr_wait = true;
                self.rto_armed = false;
                self.rto_cmd = Some(RtoCmd::Stop);
                self.rnr_cmd = Some(timer);
                self.seek(self.una);
            }
            Syndrome::Nak(code) => {
                if !sent {
                    return;
                }
                self.ack_through(p, false);
                self.fail(match code {
                    NakCode::InvalidRequest => WcStatus::RemInvReqErr,
                    NakCode::RemoteAccessError => WcStatus::RemAccessErr,
                    // rxe maps every other NAK code to a remote operational error.
                    _ => WcStatus::RemOpErr,
                });
            }
        }
    }

    /// Takes a READ response or atomic ACK.
    fn on_data_response(&mut self, r: &Response) {
        if self.check_response(r).is_some() {
            self.ack_through(r.psn.next(), true);
            return;
        }
        // A response beyond the next expected one: responses were lost; go back to the
        // oldest unacknowledged PSN (once per loss, as for a sequence NAK).
        let p = r.psn;
        if p.diff(self.una) > 0 && p.diff(self.max_sent) < 0 && !self.retry_started {
            self.retry(false);
        }
    }

    /// Returns `true` if `r` is the answer to an ATOMIC WRITE or FLUSH: an empty READ
    /// response ONLY with its PSN, which acknowledges it (and what precedes it) as an ACK
    /// would.
    fn is_empty_read_response_ack(&self, r: &Response) -> bool {
        r.opcode.info().is_some_and(|i| {
            i.op == Op::ReadResponse && i.position == Position::Only && r.payload_len == 0
        }) && self
            .slot_of(r.psn)
            .is_some_and(|s| s.wqe.op.acked_by_empty_read_response())
    }

    /// Returns the slot whose PSN range holds `psn`, among those not yet acknowledged.
    pub(super) fn slot_of(&self, psn: Psn) -> Option<Slot> {
        let mut off = self.done;
        while let Some(slot) = self.slot(off) {
            if slot.contains(psn) {
                return Some(*slot);
            }
            off = off.wrapping_add(1);
        }
        None
    }

    /// Returns the first PSN an ACK or NAK cannot acknowledge: that of the oldest READ or
    /// atomic WQE not yet completed by its responses (or the PSN its responses reached).
    fn ack_limit(&self) -> Option<Psn> {
        let mut off = self.done;
        while let Some(slot) = self.slot(off) {
            if slot.wqe.op.is_read_or_atomic() {
                return Some(if slot.first_psn.diff(self.una) > 0 {
                    slot.first_psn
                } else {
                    self.una
                });
            }
            off = off.wrapping_add(1);
        }
        None
    }

    /// Returns `true` if an ACK up to `new_una` covers an incomplete READ or atomic: its
    /// responses were lost.
    fn lost_responses(&self, new_una: Psn) -> bool {
        !self.retry_started && self.ack_limit().is_some_and(|l| new_una.diff(l) > 0)
    }

    /// Acknowledges every PSN before `new_una`; returns `true` if that is progress. Unless
    /// `data` (a READ response or atomic ACK), the acknowledgment stops at the first
    /// incomplete READ or atomic WQE.
    fn ack_through(&mut self, new_una: Psn, data: bool) -> bool {
        let new_una = match self.ack_limit() {
            Some(limit) if !data && new_una.diff(limit) > 0 => limit,
            _ => new_una,
        };
        if new_una.diff(self.una) <= 0 {
            return false;
        }
        self.cwnd.on_ack(new_una.diff(self.una).unsigned_abs());
        self.una = new_una;
        self.advance_done();
        if self.is_dead() {
            // A failed local operation became the oldest WQE.
            return true;
        }
        if self.tx_slot < self.done || self.cursor_psn().diff(new_una) < 0 {
            self.seek(new_una);
        }
        self.retry_left = self.cfg.retry_cnt;
        self.rnr_left = self.cfg.rnr_retry;
        self.retry_started = false;
        self.rto_backoff = 0;
        self.rnr_wait = false;
        if self.max_sent.diff(new_una) > 0 {
            self.rto_armed = true;
            self.rto_cmd = Some(RtoCmd::Arm);
        } else {
            self.rto_armed = false;
            self.rto_cmd = Some(RtoCmd::Stop);
        }
        true
    }
}
