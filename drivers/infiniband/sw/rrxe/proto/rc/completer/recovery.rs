// SPDX-License-Identifier: GPL-2.0

//! Recovery and failure of [`Sender`]: the local ACK timeout ([`local_ack_timeout_ns`]), the
//! retransmit and RNR timer expiries, the go-back-N retry they start with its retry counter
//! and timeout backoff, and the error state a failed or flushed send side enters.

use super::super::requester::{RtoCmd, SendState, Sender, MAX_RTO_BACKOFF};
use super::super::WcStatus;

/// Returns the local ACK timeout in nanoseconds for the `IB_QP_TIMEOUT` value `t`
/// (4.096 us * 2^t), or `None` for 0 (no timeout) or values above 31.
pub fn local_ack_timeout_ns(t: u8) -> Option<u64> {
    match t {
        1..=31 => Some(4096u64.wrapping_shl(u32::from(t))),
        _ => None,
    }
}

impl<const N: usize> Sender<N> {
    /// Processes an expiry of the retransmit timer (local ACK timeout).
    pub fn on_retransmit_timeout(&mut self) {
        if self.is_dead() || !self.rto_armed {
            return;
        }
        self.rto_armed = false;
        // An expiry during an RNR wait is spurious: the RNR timer drives the retry.
        if self.rnr_wait || self.max_sent.diff(self.una) <= 0 {
            return;
        }
        self.retry(true);
    }

    /// Resends from the oldest unacknowledged PSN now, without counting a retry: a response
    /// was dropped because the local memory it goes to was not there (a page fault of
    /// on-demand paging memory, resolved since), not because the network lost it. Nothing
    /// during an RNR wait (its timer resends) or with nothing outstanding.
    pub fn on_fault_resolved(&mut self) {
        if self.is_dead() || self.rnr_wait || self.max_sent.diff(self.una) <= 0 {
            return;
        }
        self.retry_started = true;
        self.seek(self.una);
    }

    /// Processes an expiry of the RNR timer: resend from the RNR NAK'ed PSN.
    pub fn on_rnr_timeout(&mut self) {
        if self.is_dead() || !self.rnr_wait {
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
        if !self.is_dead() {
            self.state = SendState::Dead {
                failed: None,
                tell: false,
            };
            self.stop_timers();
        }
    }

    /// Starts a go-back-N retry from `una`, or fails the oldest WQE when the transport
    /// retry counter is exhausted.
    pub(super) fn retry(&mut self, timeout: bool) {
        if self.retry_left == 0 {
            self.fail(WcStatus::RetryExcErr);
            return;
        }
        self.retry_left = self.retry_left.wrapping_sub(1);
        self.retry_started = true;
        // Packets were lost: send less until acknowledgments show the path has room.
        self.cwnd
            .on_loss(self.max_sent.diff(self.una).unsigned_abs(), timeout);
        if timeout {
            self.rto_backoff = self.rto_backoff.saturating_add(1).min(MAX_RTO_BACKOFF);
        } else {
            // The retransmissions re-arm it.
            self.rto_armed = false;
            self.rto_cmd = Some(RtoCmd::Stop);
        }
        self.seek(self.una);
    }

    /// Completes the oldest unacknowledged WQE with `status` and enters the error state.
    pub(in super::super) fn fail(&mut self, status: WcStatus) {
        self.state = SendState::Dead {
            failed: Some(status),
            tell: true,
        };
        self.stop_timers();
    }

    fn stop_timers(&mut self) {
        self.rnr_wait = false;
        self.rnr_cmd = None;
        if self.rto_armed {
            self.rto_armed = false;
            self.rto_cmd = Some(RtoCmd::Stop);
        }
    }
}
