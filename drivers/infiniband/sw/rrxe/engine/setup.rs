// SPDX-License-Identifier: GPL-2.0

//! A QP's data path created: what the verbs give it ([`QpSetup`]) and its engine in the
//! RESET state.

use super::req::ReqSide;
use super::resp::RespSide;
use super::state::{new_responder, new_sender};
use super::xmit::TxPath;
use super::{
    replies, wq, Engine, QpShared, Queue, RecvCopy, Shadow, ShadowPlan, SrqQueue, SQ_SLOTS,
};
use crate::params;
use crate::proto::{
    opcode::QpType as WireQpType,
    psn::Psn,
    uabi::{
        KernelConsumer, LengthCheck, RecvQueueParams, SendQueueParams, SendQueueState, MAX_MSG_SIZE,
    },
};
use crate::shared::DevShared;
use crate::Rrxe;
use kernel::prelude::*;
use kernel::rdma::{
    bhwork::BhWork,
    cq::CqRef,
    qp::{QpAttrs, QpCaps, QpEvents},
    srq::SrqRef,
    timer::Timer,
    wr::{KernelDma, QpHandle},
    BhSpinLock,
};
use kernel::sync::{atomic::Atomic, Arc};

/// The SRQ a QP receives from.
pub(crate) struct QpSrq {
    /// The SRQ (its limit event is the owner's).
    pub(crate) obj: SrqRef<Rrxe>,
    /// Its queue.
    pub(crate) queue: Arc<SrqQueue>,
}

/// Parameters of a new QP's data path.
pub(crate) struct QpSetup {
    pub(crate) qpn: u32,
    pub(crate) qp_type: WireQpType,
    pub(crate) pd_id: u64,
    pub(crate) sig_all: bool,
    pub(crate) caps: QpCaps,
    /// The send queue depth asked for at creation (`caps.max_send_wr` is the ring's
    /// capacity, which can be nearly twice as much).
    pub(crate) sq_depth: u32,
    pub(crate) attrs: QpAttrs,
    pub(crate) dev: Arc<DevShared>,
    pub(crate) scq: CqRef<Rrxe>,
    pub(crate) rcq: CqRef<Rrxe>,
    pub(crate) sq: Queue,
    pub(crate) rq: Option<Queue>,
    pub(crate) srq: Option<QpSrq>,
    pub(crate) kernel: Option<KernelDma>,
    pub(crate) handle: QpHandle,
    pub(crate) events: Arc<QpEvents>,
}

impl QpShared {
    /// Creates the data path of a new QP, in the RESET state.
    pub(crate) fn new(s: QpSetup) -> Result<Arc<Self>> {
        let sq_geo = s.sq.geometry();
        let sq_elem = sq_geo.elem_size();
        let rq_geo = s.rq.as_ref().map(|q| q.geometry());
        let rq_elem = match (&s.srq, rq_geo) {
            (Some(srq), _) => srq.queue.elem(),
            (None, g) => g.map_or(0, |g| g.elem_size()),
        };
        let (sq, rq, kq) = wq::split(s.sq, s.rq)?;
        // A UD QP sends from slot 0 only; a connected QP keeps as many WQEs in flight as it
        // asked its send queue to hold, at most `SQ_SLOTS` (the rest of a fuller ring waits
        // there for a slot). A connected user QP's copies are made at its first doorbell.
        let plan = ShadowPlan {
            elem: sq_elem,
            slots: match s.qp_type {
                WireQpType::Ud => 1,
                _ => usize::try_from(s.sq_depth.min(s.caps.max_send_wr)).unwrap_or(SQ_SLOTS),
            },
        };
        let deferred = s.kernel.is_none() && s.qp_type != WireQpType::Ud;
        let eng = Engine {
            counter: None,
            req: ReqSide {
                sender: new_sender(&s.attrs, s.qp_type)?,
                sqs: SendQueueState::new(sq_geo),
                params: SendQueueParams {
                    qp_type: s.qp_type,
                    max_sge: s.caps.max_send_sge,
                    max_inline: s.caps.max_inline_data,
                    max_msg_size: MAX_MSG_SIZE,
                    length_check: LengthCheck::SgeSum,
                    allow_embedded_av: false,
                    gid_table_len: params::GID_TABLE_LEN,
                    // A kernel consumer's ring is never mapped to userspace.
                    kernel: s.kernel.is_some(),
                },
                shadow: if deferred {
                    Shadow::deferred()
                } else {
                    Shadow::new(plan.elem, plan.slots, s.kernel.is_some())?
                },
                error: None,
                drain_due: false,
                timeout_us: None,
                ud_psn: Psn::new(0),
            },
            res: RespSide {
                responder: new_responder(&s.attrs)?,
                replies: replies::new_queue(0)?,
                rqc: rq_geo.map(KernelConsumer::new),
                params: RecvQueueParams {
                    max_sge: s.caps.max_recv_sge,
                    max_msg_size: MAX_MSG_SIZE,
                    length_check: LengthCheck::SgeSum,
                },
                rwqe: RecvCopy::new(rq_elem, s.kernel.is_some())?,
                stage: RecvCopy::new(rq_elem, s.kernel.is_some())?,
                stage_taken: false,
                last_wqe_told: false,
                parked: None,
            },
            tx: TxPath::new(),
            cc: crate::cc::QpCc::new(),
            kq,
            attrs: s.attrs,
            caps: s.caps,
        };
        Arc::pin_init(
            try_pin_init!(Self {
                rto <- Timer::new(c"rrxe_qp_rto", kernel::static_lock_class!()),
                rnr <- Timer::new(c"rrxe_qp_rnr", kernel::static_lock_class!()),
                tx_wait <- Timer::new(c"rrxe_qp_tx_wait", kernel::static_lock_class!()),
                kick <- BhWork::new(c"rrxe_qp_kick", kernel::static_lock_class!()),
                eng <- BhSpinLock::new(eng, c"rrxe_qp", kernel::static_lock_class!()),
                qpn: s.qpn,
                qp_type: s.qp_type,
                pd_id: s.pd_id,
                sig_all: s.sig_all,
                dev: s.dev,
                scq: s.scq,
                rcq: s.rcq,
                sq,
                rq,
                srq: s.srq,
                kernel: s.kernel,
                handle: s.handle,
                events: s.events,
                rewind: Atomic::new(0),
                shadow_plan: deferred.then_some(plan),
                shadow_made: Atomic::new(!deferred),
            }),
            crate::params::gfp_user(),
        )
    }
}
