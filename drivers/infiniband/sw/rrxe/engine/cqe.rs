// SPDX-License-Identifier: GPL-2.0

//! Completions: send and receive WQEs completed into the CQ rings, and the error state.
//!
//! A completion is written into its CQ's ring under the CQ lock, inside the engine lock; the
//! completion event it may call for is raised once the engine lock is dropped
//! ([`Events`]). Entering ERR ([`QpShared::enter_error`]) completes everything in flight
//! and everything posted with [`WcStatus::WrFlushErr`], after the completions already due.

use super::{Engine, Events, QpShared};
use crate::budget::Budget;
use crate::counters::PortCounter;
use crate::cq::RecvOrigin;
use crate::proto::rc::{responder::RecvCompletion, SendAction, WcStatus};
use crate::proto::uabi::{Completion, SendOp, WcEx};
use kernel::prelude::*;
use kernel::rdma::{qp::QpState, trace};

/// Which CQ of the QP a completion goes to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum CqSide {
    /// The send CQ.
    Send,
    /// The receive CQ.
    Recv,
}

impl QpShared {
    /// Completes the oldest send WQE in flight (whose copy is shadow slot `id`).
    pub(super) fn complete_send(&self, e: &mut Engine, ev: &mut Events, id: u32, status: WcStatus) {
        // The shadow WQE is attached (its view built) once, for the counter and the CQE.
        let wqe = e.req.shadow.wqe(id);
        match status {
            WcStatus::Success
                if wqe
                    .as_ref()
                    .is_some_and(|w| matches!(w.op(), SendOp::Send { .. })) =>
            {
                self.stats(e).inc(PortCounter::RdmaSends)
            }
            WcStatus::RetryExcErr => self.stats(e).inc(PortCounter::RetryExceeded),
            WcStatus::RnrRetryExcErr => self.stats(e).inc(PortCounter::RnrRetryExceeded),
            _ => {}
        }
        if !matches!(status, WcStatus::Success | WcStatus::WrFlushErr) {
            qp_dbg!(
                self,
                "send work request {:#x} completed with {:?}\n",
                wqe.as_ref().map_or(0, |w| w.wr_id()),
                status
            );
        }
        let cqe = match (wqe, status) {
            (Some(w), WcStatus::Success) => w
                .signaled(self.sig_all)
                .then(|| Completion::send_success(&w, self.qpn)),
            (Some(w), _) => Some(Completion::send_error(w.wr_id(), status, self.qpn)),
            // Never validated (cannot happen: only validated WQEs are started).
            (None, _) => Some(Completion::send_error(0, status, self.qpn)),
        };
        if let Some(c) = cqe {
            self.post_cqe(ev, CqSide::Send, &c, false);
        }
        if let Ok(p) = e.req.sqs.complete_oldest() {
            self.sq_publish(e, p);
        }
    }

    /// Completes the send WQE that failed validation, with its status, and enters ERR.
    pub(super) fn fail_sq_head(&self, e: &mut Engine, ev: &mut Events) {
        let Some(status) = e.req.error.take() else {
            return;
        };
        self.stats(e).inc(PortCounter::BadWqes);
        if let Ok(prod) = self.sq_producer(e) {
            if let Ok(Some(slot)) = e.req.sqs.next_to_start(prod) {
                let wr_id = self.sq_wr_id(e, &slot);
                let c = Completion::send_error(wr_id, status, self.qpn);
                self.post_cqe(ev, CqSide::Send, &c, false);
                if e.req.sqs.mark_started(prod).is_ok() {
                    if let Ok(p) = e.req.sqs.complete_oldest() {
                        self.sq_publish(e, p);
                    }
                }
            }
        }
        self.enter_error(e, ev, c"a send work request failed validation");
    }

    /// Completes the current receive WQE as the responder says.
    pub(super) fn complete_recv(&self, e: &mut Engine, ev: &mut Events, rc: &RecvCompletion) {
        let wr_id = e.res.rwqe.wr_id();
        let c = if rc.status == WcStatus::Success {
            let ex = match (rc.imm, rc.inv_rkey) {
                (Some(imm), _) => WcEx::Imm(imm),
                (None, Some(rkey)) => WcEx::Invalidate(rkey),
                (None, None) => WcEx::None,
            };
            self.stats(e).inc(PortCounter::RdmaRecvs);
            Completion::recv_success(wr_id, self.qpn, rc.byte_len, rc.rdma_with_imm, ex, 0, 1)
        } else {
            if rc.status != WcStatus::WrFlushErr {
                qp_dbg!(
                    self,
                    "receive work request {:#x} completed with {:?}\n",
                    wr_id,
                    rc.status
                );
            }
            Completion::send_error(wr_id, rc.status, self.qpn)
        };
        self.post_cqe(ev, CqSide::Recv, &c, rc.solicited);
    }

    /// Writes a completion into the send or receive CQ.
    pub(super) fn post_cqe(&self, ev: &mut Events, side: CqSide, c: &Completion, solicited: bool) {
        self.post_cqe_net(ev, side, c, solicited, None);
    }

    /// Like [`Self::post_cqe`], with where a UD receive came from for kernel consumers
    /// (`IB_WC_WITH_NETWORK_HDR_TYPE`, `IB_WC_WITH_VLAN`).
    pub(super) fn post_cqe_net(
        &self,
        ev: &mut Events,
        side: CqSide,
        c: &Completion,
        solicited: bool,
        origin: Option<RecvOrigin>,
    ) {
        let cq = match side {
            CqSide::Send => &self.scq,
            CqSide::Recv => &self.rcq,
        };
        let (posted, fire) = cq.data().post(c, self.handle, origin, solicited);
        self.dev.stats.inc(if posted {
            PortCounter::Completions
        } else {
            PortCounter::CqOverflows
        });
        if fire {
            match side {
                CqSide::Send => ev.scq = true,
                CqSide::Recv => ev.rcq = true,
            }
        }
        if !posted {
            // The completion is lost: the consumer is told (`IB_EVENT_CQ_ERR`).
            match side {
                CqSide::Send => ev.scq_err = true,
                CqSide::Recv => ev.rcq_err = true,
            }
        }
    }

    /// Moves the QP to ERR: every WQE in flight or posted completes with
    /// [`WcStatus::WrFlushErr`] (after the completions already due).
    pub(super) fn enter_error(&self, e: &mut Engine, ev: &mut Events, why: &'static CStr) {
        if e.attrs.state != Some(QpState::Err) {
            qp_dbg!(
                self,
                "to the error state: {}\n",
                why.to_str().unwrap_or("?")
            );
            let old = e.attrs.state.unwrap_or(QpState::Reset);
            trace::qp_state(self.dev_name(), self.qpn, old, QpState::Err, why);
        }
        // A drain that ends in ERR is not a drained send queue.
        e.req.drain_due = false;
        // A QP on an SRQ tells its owner it takes no more of the SRQ's WQEs (IBA 11.6.3,
        // `IB_EVENT_QP_LAST_WQE_REACHED`), once per entry into ERR.
        if self.srq.is_some() && !e.res.last_wqe_told {
            e.res.last_wqe_told = true;
            ev.last_wqe = true;
        }
        e.attrs.state = Some(QpState::Err);
        self.rto.stop();
        self.rnr.stop();
        self.tx_wait.stop();
        e.res.replies.clear();
        e.req.sender.flush();
        while let Some(a) = e.req.sender.poll() {
            if let SendAction::Complete(c) = a {
                self.complete_send(e, ev, c.id, c.status);
            }
        }
        if e.res.responder.flush() {
            let c = Completion::send_error(e.res.rwqe.wr_id(), WcStatus::WrFlushErr, self.qpn);
            self.post_cqe(ev, CqSide::Recv, &c, false);
        }
        // A WQE this QP took from its SRQ and did not use is its own: flushed with it.
        if core::mem::take(&mut e.res.stage_taken) {
            let c = Completion::send_error(e.res.stage.wr_id(), WcStatus::WrFlushErr, self.qpn);
            e.res.stage.clear();
            self.post_cqe(ev, CqSide::Recv, &c, false);
        }
        self.flush_queues(e, ev);
    }

    /// Completes the posted, not started WQEs of both queues with
    /// [`WcStatus::WrFlushErr`] (in ERR), at most a run's [`Budget`] of each; the QP's
    /// softirq work flushes the rest.
    pub(super) fn flush_queues(&self, e: &mut Engine, ev: &mut Events) {
        let mut budget = Budget::run();
        while let Ok(prod) = self.sq_producer(e) {
            if !budget.take() {
                self.kick.queue(self);
                break;
            }
            let Ok(Some(slot)) = e.req.sqs.next_to_start(prod) else {
                break;
            };
            let wr_id = self.sq_wr_id(e, &slot);
            if e.req.sqs.mark_started(prod).is_err() {
                break;
            }
            let c = Completion::send_error(wr_id, WcStatus::WrFlushErr, self.qpn);
            self.post_cqe(ev, CqSide::Send, &c, false);
            if let Ok(p) = e.req.sqs.complete_oldest() {
                self.sq_publish(e, p);
            }
        }
        let mut budget = Budget::run();
        while let Ok(prod) = self.rq_producer(e) {
            if !budget.take() {
                self.kick.queue(self);
                break;
            }
            let Some(Ok(Some(slot))) = e.res.rqc.as_ref().map(|c| c.head(prod)) else {
                break;
            };
            let wr_id = self.rq_wr_id(e, &slot);
            let Some(Ok(p)) = e.res.rqc.as_mut().map(|c| c.advance(prod)) else {
                break;
            };
            self.rq_publish(e, p);
            let c = Completion::send_error(wr_id, WcStatus::WrFlushErr, self.qpn);
            self.post_cqe(ev, CqSide::Recv, &c, false);
        }
    }
}
