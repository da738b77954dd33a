// SPDX-License-Identifier: GPL-2.0

//! A QP's attributes and state: `query_qp`, the `modify_qp` transitions (what each does is
//! the wire core's host-tested table, `proto::rc::qp_state::modify`), the return to RESET,
//! and the configurations of the sender and the responder the attributes make.

use super::{replies, xmit::Path, Engine, QpShared, SQ_SLOTS};
use crate::params;
use crate::proto::{
    aeth::RnrTimer,
    bth::Qpn,
    ip::{self, IpParams},
    opcode::QpType as WireQpType,
    psn::Psn,
    rc::{
        completer::local_ack_timeout_ns, qp_state, PathMtu, Resource, ResourceTable, Responder,
        ResponderConfig, Sender, SenderConfig, Transport,
    },
};
use kernel::alloc::KVec;
use kernel::prelude::*;
use kernel::rdma::{
    mr::Access,
    qp::{attr, QpAttrs, QpCaps, QpState},
    trace,
};

/// The wire core's name of a QP state.
pub(super) fn wire_state(s: QpState) -> qp_state::QpState {
    match s {
        QpState::Reset => qp_state::QpState::Reset,
        QpState::Init => qp_state::QpState::Init,
        QpState::Rtr => qp_state::QpState::Rtr,
        QpState::Rts => qp_state::QpState::Rts,
        QpState::Sqd => qp_state::QpState::Sqd,
        QpState::Sqe => qp_state::QpState::Sqe,
        QpState::Err => qp_state::QpState::Err,
    }
}

/// The path MTU of the QP (1024 until one is set).
pub(super) fn path_mtu(a: &QpAttrs) -> PathMtu {
    a.path_mtu
        .and_then(|m| PathMtu::from_bytes(m.bytes()))
        .unwrap_or(PathMtu::MTU_1024)
}

/// Returns the sender's configuration for a `qp_type` QP: the UC mode for UC (nothing
/// acknowledged, UC opcodes), RC otherwise (a UD QP does not use the sender).
pub(super) fn sender_config(a: &QpAttrs, qp_type: WireQpType) -> SenderConfig {
    let transport = if qp_type == WireQpType::Uc {
        Transport::Uc
    } else {
        Transport::Rc
    };
    SenderConfig::new(Psn::new(a.sq_psn), path_mtu(a), a.retry_cnt, a.rnr_retry)
        .with_max_rd_atomic(u32::from(a.max_rd_atomic))
        .with_transport(transport)
}

pub(super) fn responder_config(a: &QpAttrs) -> ResponderConfig {
    ResponderConfig {
        rq_psn: Psn::new(a.rq_psn),
        mtu: path_mtu(a),
        min_rnr_timer: RnrTimer::from_low_bits(a.min_rnr_timer),
        remote_write: a.qp_access_flags.contains(Access::RemoteWrite),
        remote_read: a.qp_access_flags.contains(Access::RemoteRead),
        remote_atomic: a.qp_access_flags.contains(Access::RemoteAtomic),
        flush_types: u8::from(a.qp_access_flags.contains(Access::FlushGlobal))
            | u8::from(a.qp_access_flags.contains(Access::FlushPersistent)) << 1,
        max_dest_rd_atomic: u32::from(a.max_dest_rd_atomic),
    }
}

/// Returns a sender in its initial state, allocated directly.
#[inline(never)]
pub(super) fn new_sender(a: &QpAttrs, qp_type: WireQpType) -> Result<KBox<Sender<SQ_SLOTS>>> {
    Ok(KBox::new(
        Sender::new(sender_config(a, qp_type)),
        crate::params::gfp_user(),
    )?)
}

/// A QP's responder resources (the READs and atomics a requester may have outstanding, each
/// remembered for a duplicate): as many slots as its `max_dest_rd_atomic`, at least one,
/// allocated when that is set (as `rxe_qp_from_attr` does), not the device's maximum.
pub(super) struct ResTable(KVec<Resource>);

impl ResTable {
    /// Returns a table for `max_dest_rd_atomic` resources.
    pub(super) fn new(max_dest_rd_atomic: u32) -> Result<Self> {
        let n = max_dest_rd_atomic.clamp(1, params::MAX_QP_RD_ATOM);
        Ok(Self(KVec::from_elem(
            Resource::default(),
            usize::try_from(n)?,
            crate::params::gfp_user(),
        )?))
    }
}

impl ResourceTable for ResTable {
    fn slots(&self) -> &[Resource] {
        &self.0
    }

    fn slots_mut(&mut self) -> &mut [Resource] {
        &mut self.0
    }
}

/// Returns a responder in its initial state, allocated directly.
#[inline(never)]
pub(super) fn new_responder(a: &QpAttrs) -> Result<KBox<Responder<ResTable>>> {
    let table = ResTable::new(u32::from(a.max_dest_rd_atomic))?;
    Ok(KBox::new(
        Responder::with_table(responder_config(a), table),
        crate::params::gfp_user(),
    )?)
}

impl QpShared {
    /// Returns the attributes, capabilities (for `query_qp`).
    pub(crate) fn query(&self) -> (QpAttrs, QpCaps) {
        let e = self.eng.lock();
        let mut a = e.attrs;
        a.sq_draining = e.req.drain_due;
        // The PSNs where the connection is now, as `rxe_qp_to_attr` reports them: the
        // next request the requester sends and the next one the responder expects.
        if self.qp_type != WireQpType::Ud {
            let state = e.state();
            if state.transmits() {
                a.sq_psn = e.req.sender.next_psn().get();
            }
            if state.accepts_requests() {
                a.rq_psn = e.res.responder.expected_psn().get();
            }
        }
        (a, e.caps)
    }

    /// Applies checked `modify_qp` attributes: `merge` copies them into the current ones and
    /// the state transition to `next` starts, stops or flushes the state machines.
    /// `max_dest_rd_atomic` is the number of responder resources the attributes set, if they
    /// set it: the responder that starts gets a reply queue sized for them.
    pub(crate) fn modify(
        &self,
        max_dest_rd_atomic: Option<u8>,
        check: impl FnOnce(&QpAttrs) -> Result<QpState>,
        merge: impl FnOnce(&mut QpAttrs),
    ) -> Result {
        // The reply queue and resource table for the resources being set, allocated before
        // the engine lock is taken (with bottom halves disabled); those they replace are
        // freed after it is dropped.
        let mut fresh = match max_dest_rd_atomic.map(u32::from) {
            Some(n) => Some((replies::new_queue(n)?, ResTable::new(n)?)),
            None => None,
        };
        let mut old = None;
        let r = self.with_engine(|this, e, ev| {
            let next = check(&e.attrs)?;
            let cur = e.attrs.state.unwrap_or(QpState::Reset);
            // What the transition does is the wire core's table (host-tested); the core's
            // `ib_modify_qp_is_ok()` has already checked the state pair and the masks.
            let draining = cur == QpState::Sqd && !e.req.sender.is_idle();
            let fx = qp_state::modify(wire_state(cur), wire_state(next), draining)
                .map_err(|_| EINVAL)?;
            merge(&mut e.attrs);
            e.attrs.state = Some(next);
            if next != cur {
                trace::qp_state(this.dev_name(), this.qpn, cur, next, c"modify_qp");
            }
            let a = e.attrs;
            if a.mask & attr::TIMEOUT != 0 || e.req.timeout_us.is_none() {
                e.req.timeout_us = local_ack_timeout_ns(a.timeout)
                    .map(|ns| u32::try_from(ns / 1000).unwrap_or(u32::MAX));
            }
            if fx.reset {
                this.reset(e);
            }
            if fx.start_responder {
                match fresh.take() {
                    // The queue is empty before the responder starts (RESET clears it).
                    Some((q, t)) if e.res.replies.is_empty() => {
                        let old_q = core::mem::replace(&mut e.res.replies, q);
                        let old_t = e.res.responder.reset_with_table(responder_config(&a), t);
                        old = Some((old_q, old_t));
                    }
                    unused => {
                        old = unused;
                        e.res.responder.reset(responder_config(&a));
                    }
                }
                e.tx.dest_qpn = Qpn::new(a.dest_qp_num);
                e.tx.av = Path {
                    ip: IpParams {
                        src: a.ah.sgid,
                        dst: a.ah.dgid,
                        traffic_class: a.ah.traffic_class,
                        hop_limit: if a.ah.hop_limit == 0 {
                            64
                        } else {
                            a.ah.hop_limit
                        },
                        flow_label: a.ah.flow_label,
                        sport: ip::udp_sport(this.qpn),
                    },
                    oif: a.ah.gid_ifindex,
                };
            }
            if fx.start_requester {
                if cur == QpState::Rtr {
                    e.req.sender.reset(sender_config(&a, this.qp_type));
                    e.req.ud_psn = Psn::new(a.sq_psn);
                } else {
                    // Resumed (from SQD): the WQEs posted meanwhile start.
                    e.req.sender.set_sq_drain(false);
                    e.req.drain_due = false;
                    this.pump(e, ev);
                }
            }
            if fx.drain_sq {
                e.req.sender.set_sq_drain(true);
                e.req.drain_due = true;
                this.check_sq_drained(e, ev);
            }
            if fx.flush {
                this.enter_error(e, ev, c"modified to the error state");
            }
            Ok(())
        });
        drop((old, fresh));
        r
    }

    /// Back to RESET: every queue is emptied without completions.
    pub(super) fn reset(&self, e: &mut Engine) {
        self.rto.stop();
        self.rnr.stop();
        e.req.sender.reset(sender_config(&e.attrs, self.qp_type));
        e.res.responder.reset(responder_config(&e.attrs));
        e.res.replies.clear();
        e.tx.routes.clear();
        self.tx_wait.stop();
        e.req.error = None;
        e.req.shadow.reset();
        // A WQE taken from the SRQ and not used is dropped with the rest (no completions).
        e.res.stage_taken = false;
        e.res.parked = None;
        self.rewind
            .store(0, kernel::sync::atomic::ordering::Relaxed);
        e.res.last_wqe_told = false;
        e.req.drain_due = false;
        if let Ok(prod) = self.sq_producer(e) {
            if let Ok(p) = e.req.sqs.drain(prod) {
                self.sq_publish(e, p);
            }
        }
        if let Ok(prod) = self.rq_producer(e) {
            if let Some(Ok(p)) = e.res.rqc.as_mut().map(|c| c.drain(prod)) {
                self.rq_publish(e, p);
            }
        }
    }
}
