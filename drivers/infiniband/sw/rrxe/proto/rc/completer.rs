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
//!   `rnr_retry` that meaning, so here 7 means seven retries.
//! - rxe resets the retry counters only on a positive ACK; here any forward progress
//!   (including the implicit acknowledgement of a NAK) resets them, so that a lossy but
//!   working link cannot exhaust them.
//! - rxe keeps sending new packets while it waits for the RNR timer; here transmission
//!   pauses (they would only be rejected as out of sequence).
//! - An RNR NAK implicitly acknowledges the PSNs before it (IBA 9.7.5.1.4), which rxe does
//!   not apply.
//!
//! The MSN of the AETH is not used: completion is by PSN, as in rxe.

use super::super::aeth::{NakCode, RnrTimer, Syndrome};
use super::super::opcode::Opcode;
use super::super::packet::Packet;
use super::super::psn::{Msn, Psn};
use super::requester::{Sender, WrOp};
use super::WcStatus;

/// The AETH-carrying part of a received response packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response {
    /// Opcode (`RC_ACKNOWLEDGE`; READ responses and atomic ACKs are not handled yet).
    pub opcode: Opcode,
    /// BTH PSN.
    pub psn: Psn,
    /// Decoded AETH syndrome.
    pub syndrome: Syndrome,
    /// AETH MSN.
    pub msn: Msn,
}

impl Response {
    /// Extracts the response fields of a parsed packet, or `None` if it has no AETH or a
    /// reserved syndrome (such packets are dropped).
    pub fn from_packet(pkt: &Packet<'_>) -> Option<Self> {
        let aeth = pkt.aeth?;
        Some(Self {
            opcode: pkt.opcode(),
            psn: pkt.bth.psn(),
            syndrome: aeth.decode_syndrome().ok()?,
            msn: aeth.msn(),
        })
    }
}

/// A send work completion, in posting order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The WQE's [`super::SendWqe::id`].
    pub id: u32,
    /// Its operation.
    pub op: WrOp,
    /// Its length (`byte_len` of the work completion).
    pub len: u32,
    /// Status.
    pub status: WcStatus,
}

/// Something the caller must do, returned by [`Sender::poll`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendAction {
    /// Report this completion (if signaled, or always when the status is not success).
    Complete(Completion),
    /// (Re)start the retransmit timer with the QP's local ACK timeout.
    ArmRetransmitTimer,
    /// Stop the retransmit timer.
    StopRetransmitTimer,
    /// Start the RNR timer for [`RnrTimer::micros`]; call [`Sender::on_rnr_timeout`] then.
    ArmRnrTimer(RnrTimer),
    /// Move the QP to ERR: flush the receive queue and the send WQEs not yet posted to the
    /// sender (after the completions already returned).
    EnterError,
}

/// Returns the local ACK timeout in nanoseconds for the `IB_QP_TIMEOUT` value `t`
/// (4.096 us * 2^t), or `None` for 0 (no timeout) or values above 31.
pub fn local_ack_timeout_ns(t: u8) -> Option<u64> {
    match t {
        1..=31 => Some(4096u64.wrapping_shl(u32::from(t))),
        _ => None,
    }
}

impl<const N: usize> Sender<N> {
    /// Processes a response (ACK, NAK or RNR NAK) from the responder.
    pub fn on_response(&mut self, r: &Response) {
        if self.dead || r.opcode != Opcode::RC_ACKNOWLEDGE {
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
                    self.ack_through(p.next());
                }
            }
            Syndrome::Nak(NakCode::PsnSequenceError) => {
                let progress = self.ack_through(p);
                if !sent || (!progress && (self.retry_started || self.rnr_wait)) {
                    return;
                }
                self.retry(false);
            }
            Syndrome::RnrNak(timer) => {
                if !sent {
                    return;
                }
                self.ack_through(p);
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
                self.rto_cmd = Some(false);
                self.rnr_cmd = Some(timer);
                self.seek(self.una);
            }
            Syndrome::Nak(code) => {
                if !sent {
                    return;
                }
                self.ack_through(p);
                self.fail(match code {
                    NakCode::InvalidRequest => WcStatus::RemInvReqErr,
                    NakCode::RemoteAccessError => WcStatus::RemAccessErr,
                    // rxe maps every other NAK code to a remote operational error.
                    _ => WcStatus::RemOpErr,
                });
            }
        }
    }

    /// Processes an expiry of the retransmit timer (local ACK timeout).
    pub fn on_retransmit_timeout(&mut self) {
        if self.dead || !self.rto_armed {
            return;
        }
        self.rto_armed = false;
        // An expiry during an RNR wait is spurious: the RNR timer drives the retry.
        if self.rnr_wait || self.max_sent.diff(self.una) <= 0 {
            return;
        }
        self.retry(true);
    }

    /// Processes an expiry of the RNR timer: resend from the RNR NAK'ed PSN.
    pub fn on_rnr_timeout(&mut self) {
        if self.dead || !self.rnr_wait {
            return;
        }
        self.rnr_wait = false;
        self.retry_started = true;
        self.seek(self.una);
    }

    /// Moves the send side to the error state (modify to ERR, or a fatal responder error):
    /// every outstanding WQE is completed by [`Sender::poll`] with
    /// [`WcStatus::WrFlushErr`].
    pub fn flush(&mut self) {
        if !self.dead {
            self.dead = true;
            self.flushing = true;
            self.stop_timers();
        }
    }

    /// Returns the next action, or `None` when there is nothing left to do for now.
    pub fn poll(&mut self) -> Option<SendAction> {
        if let Some(arm) = self.rto_cmd.take() {
            return Some(if arm {
                SendAction::ArmRetransmitTimer
            } else {
                SendAction::StopRetransmitTimer
            });
        }
        if let Some(t) = self.rnr_cmd.take() {
            return Some(SendAction::ArmRnrTimer(t));
        }
        if let Some(slot) = self.slot(0).copied() {
            let status = if self.done > 0 {
                self.done = self.done.wrapping_sub(1);
                Some(WcStatus::Success)
            } else if let Some(status) = self.error.take() {
                self.flushing = true;
                Some(status)
            } else if self.flushing {
                Some(WcStatus::WrFlushErr)
            } else {
                None
            };
            if let Some(status) = status {
                self.head = self.index(1);
                self.len = self.len.wrapping_sub(1);
                self.tx_slot = self.tx_slot.saturating_sub(1);
                return Some(SendAction::Complete(Completion {
                    id: slot.wqe.id,
                    op: slot.wqe.op,
                    len: slot.wqe.len,
                    status,
                }));
            }
        }
        if self.error_pending {
            self.error_pending = false;
            return Some(SendAction::EnterError);
        }
        None
    }

    /// Acknowledges every PSN before `new_una`; returns `true` if that is progress.
    fn ack_through(&mut self, new_una: Psn) -> bool {
        if new_una.diff(self.una) <= 0 {
            return false;
        }
        self.una = new_una;
        while let Some(slot) = self.slot(self.done) {
            if new_una.diff(slot.end_psn()) < 0 {
                break;
            }
            self.done = self.done.wrapping_add(1);
        }
        if self.tx_slot < self.done || self.cursor_psn().diff(new_una) < 0 {
            self.seek(new_una);
        }
        self.retry_left = self.cfg.retry_cnt;
        self.rnr_left = self.cfg.rnr_retry;
        self.retry_started = false;
        self.rnr_wait = false;
        if self.max_sent.diff(new_una) > 0 {
            self.rto_armed = true;
            self.rto_cmd = Some(true);
        } else {
            self.rto_armed = false;
            self.rto_cmd = Some(false);
        }
        true
    }

    /// Starts a go-back-N retry from `una`, or fails the oldest WQE when the transport
    /// retry counter is exhausted.
    fn retry(&mut self, timeout: bool) {
        if self.retry_left == 0 {
            self.fail(WcStatus::RetryExcErr);
            return;
        }
        self.retry_left = self.retry_left.wrapping_sub(1);
        self.retry_started = true;
        if !timeout {
            // The retransmissions re-arm it.
            self.rto_armed = false;
            self.rto_cmd = Some(false);
        }
        self.seek(self.una);
    }

    /// Completes the oldest unacknowledged WQE with `status` and enters the error state.
    fn fail(&mut self, status: WcStatus) {
        self.dead = true;
        self.error = Some(status);
        self.error_pending = true;
        self.stop_timers();
    }

    fn stop_timers(&mut self) {
        self.rnr_wait = false;
        self.rnr_cmd = None;
        if self.rto_armed {
            self.rto_armed = false;
            self.rto_cmd = Some(false);
        }
    }
}
