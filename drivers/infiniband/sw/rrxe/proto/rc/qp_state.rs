// SPDX-License-Identifier: GPL-2.0

//! QP states and the effects of `modify_qp` state transitions.
//!
//! The core's `ib_modify_qp_is_ok()` validates the (current, next) pair and the attribute
//! mask; [`transition_allowed`] mirrors its state table (without the masks) so that host
//! tests can cover it, and [`modify`] adds the one check rxe makes on top
//! (`__qp_chk_state()`: while the send queue is still draining in SQD, only ERR may be
//! entered) and says what the transition implies for the [`super::Sender`] and
//! [`super::Responder`].
//!
//! An RC QP never enters SQE: a send error on a reliable connection moves it to ERR
//! (IBA 10.3.1); SQE is accepted here only because the core's table allows it for UC/UD.

/// A QP state, with the values of the kernel's `enum ib_qp_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum QpState {
    /// `IB_QPS_RESET`: freshly created or reset; nothing is processed.
    Reset = 0,
    /// `IB_QPS_INIT`: receive WQEs may be posted; no packets are processed.
    Init = 1,
    /// `IB_QPS_RTR`: ready to receive: the responder runs.
    Rtr = 2,
    /// `IB_QPS_RTS`: ready to send: requester, completer and responder run.
    Rts = 3,
    /// `IB_QPS_SQD`: send queue drain: no new WQE is started, outstanding ones finish.
    Sqd = 4,
    /// `IB_QPS_SQE`: send queue error (UC/UD only).
    Sqe = 5,
    /// `IB_QPS_ERR`: error: all outstanding and newly posted WQEs complete with
    /// [`super::WcStatus::WrFlushErr`].
    Err = 6,
}

impl QpState {
    /// Converts the kernel's `enum ib_qp_state` value.
    #[cfg(rrxe_host)]
    pub const fn from_raw(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::Reset,
            1 => Self::Init,
            2 => Self::Rtr,
            3 => Self::Rts,
            4 => Self::Sqd,
            5 => Self::Sqe,
            6 => Self::Err,
            _ => return None,
        })
    }

    /// Returns `true` if incoming request packets are processed by the responder (RTR and
    /// later, except ERR; rxe_recv.c `check_type_state()`).
    pub const fn accepts_requests(self) -> bool {
        matches!(self, Self::Rtr | Self::Rts | Self::Sqd | Self::Sqe)
    }

    /// Returns `true` if incoming responses (ACKs) are processed by the completer.
    pub const fn accepts_responses(self) -> bool {
        matches!(self, Self::Rts | Self::Sqd | Self::Sqe)
    }

    /// Returns `true` if the requester transmits: RTS, and SQD, where it finishes the WQEs
    /// it started (IBA 10.3.1.3).
    pub const fn transmits(self) -> bool {
        matches!(self, Self::Rts | Self::Sqd)
    }

    /// Returns `true` if `post_send` is accepted (rxe: RTS or later; in ERR the WQE is
    /// accepted and flushed).
    #[cfg(rrxe_host)]
    pub const fn can_post_send(self) -> bool {
        matches!(self, Self::Rts | Self::Sqd | Self::Sqe | Self::Err)
    }

    /// Returns `true` if `post_recv` is accepted (INIT or later; flushed in ERR).
    #[cfg(rrxe_host)]
    pub const fn can_post_recv(self) -> bool {
        !matches!(self, Self::Reset)
    }

    /// Returns `true` if the requester may start new send WQEs (only in RTS; in SQD it
    /// finishes the WQE it is in the middle of).
    #[cfg(rrxe_host)]
    pub const fn starts_new_wqes(self) -> bool {
        matches!(self, Self::Rts)
    }
}

/// Returns `true` if the core's state table (`qp_state_table` in
/// drivers/infiniband/core/verbs.c) has a valid entry for `cur -> next`.
///
/// Any state may go to RESET, and any state except RESET to ERR.
pub const fn transition_allowed(cur: QpState, next: QpState) -> bool {
    use QpState::*;
    matches!(
        (cur, next),
        (_, Reset)
            | (Init | Rtr | Rts | Sqd | Sqe | Err, Err)
            | (Reset | Init, Init)
            | (Init, Rtr)
            | (Rtr | Rts | Sqd | Sqe, Rts)
            | (Rts | Sqd, Sqd)
    )
}

/// What a state transition requires from the QP code, in the order listed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Effects {
    /// Entering RESET: discard all queued packets and WQEs without completions and call
    /// [`super::Sender::reset`] and [`super::Responder::reset`].
    pub reset: bool,
    /// Entering ERR: stop transmitting, call [`super::Sender::flush`] and complete every
    /// outstanding send and receive WQE (and any posted later) with
    /// [`super::WcStatus::WrFlushErr`].
    pub flush: bool,
    /// Entering RTR: start processing incoming requests (with the RQ PSN set).
    pub start_responder: bool,
    /// Entering RTS: start (or resume, from SQD) the requester and completer.
    pub start_requester: bool,
    /// Entering SQD: stop starting new send WQEs; once nothing is outstanding, report
    /// `IB_EVENT_SQ_DRAINED` if `en_sqd_async_notify` was requested
    /// ([`super::Sender::is_idle`]).
    pub drain_sq: bool,
}

/// Why [`modify`] refused a transition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModifyError {
    /// Not in the core's state table.
    NotAllowed,
    /// The QP is in SQD and still draining: only ERR may be entered (rxe `__qp_chk_state`).
    SqDraining,
}

/// Validates `cur -> next` for an RC QP and returns what it implies.
///
/// `sq_draining` is `true` while a QP in SQD still has outstanding send WQEs.
pub const fn modify(
    cur: QpState,
    next: QpState,
    sq_draining: bool,
) -> Result<Effects, ModifyError> {
    if !transition_allowed(cur, next) {
        return Err(ModifyError::NotAllowed);
    }
    if matches!(cur, QpState::Sqd) && sq_draining && !matches!(next, QpState::Err) {
        return Err(ModifyError::SqDraining);
    }
    let none = Effects {
        reset: false,
        flush: false,
        start_responder: false,
        start_requester: false,
        drain_sq: false,
    };
    Ok(match next {
        QpState::Reset => Effects {
            reset: true,
            ..none
        },
        QpState::Err => Effects {
            flush: !matches!(cur, QpState::Err),
            ..none
        },
        QpState::Rtr => Effects {
            start_responder: true,
            ..none
        },
        QpState::Rts => Effects {
            start_requester: !matches!(cur, QpState::Rts),
            ..none
        },
        QpState::Sqd => Effects {
            drain_sq: !matches!(cur, QpState::Sqd),
            ..none
        },
        QpState::Init | QpState::Sqe => none,
    })
}
