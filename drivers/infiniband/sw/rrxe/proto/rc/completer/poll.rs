// SPDX-License-Identifier: GPL-2.0

//! What [`Sender`] asks of its caller: [`Sender::poll`] returns, in order, the timer commands,
//! the send completions ([`SendCompletion`]) and the move to the error state, as
//! [`SendAction`]s.

use super::super::super::aeth::RnrTimer;
use super::super::super::uabi::WrOpcode;
use super::super::requester::{RtoCmd, SendState, Sender};
use super::super::WcStatus;

/// A send work completion, in posting order; the caller writes the completion entry (for
/// a user CQ, a [`uabi::Completion`]).
///
/// [`uabi::Completion`]: super::super::super::uabi::Completion
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendCompletion {
    /// The WQE's [`super::super::PostedWqe::id`].
    pub id: u32,
    /// Its operation.
    pub op: WrOpcode,
    /// Its length (`byte_len` of the work completion).
    pub len: u32,
    /// Status.
    pub status: WcStatus,
}

/// Something the caller must do, returned by [`Sender::poll`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendAction {
    /// Report this completion (if signaled, or always when the status is not success).
    Complete(SendCompletion),
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

impl<const N: usize> Sender<N> {
    /// Returns the next action, or `None` when there is nothing left to do for now.
    pub fn poll(&mut self) -> Option<SendAction> {
        if let Some(cmd) = self.rto_cmd.take() {
            return Some(match cmd {
                RtoCmd::Arm => SendAction::ArmRetransmitTimer,
                RtoCmd::Stop => SendAction::StopRetransmitTimer,
            });
        }
        if let Some(t) = self.rnr_cmd.take() {
            return Some(SendAction::ArmRnrTimer(t));
        }
        if let Some(slot) = self.slot(0).copied() {
            let status = if self.done > 0 {
                self.done = self.done.wrapping_sub(1);
                Some(WcStatus::Success)
            } else if let SendState::Dead { failed, .. } = &mut self.state {
                // The failed WQE's status once, then every other is flushed.
                Some(failed.take().unwrap_or(WcStatus::WrFlushErr))
            } else {
                None
            };
            if let Some(status) = status {
                self.head = self.index(1);
                self.len = self.len.wrapping_sub(1);
                self.tx_slot = self.tx_slot.saturating_sub(1);
                return Some(SendAction::Complete(SendCompletion {
                    id: slot.wqe.id,
                    op: slot.wqe.op,
                    len: slot.wqe.len,
                    status,
                }));
            }
        }
        if let SendState::Dead {
            tell: tell @ true, ..
        } = &mut self.state
        {
            *tell = false;
            return Some(SendAction::EnterError);
        }
        None
    }
}
