// SPDX-License-Identifier: GPL-2.0

//! Completion queues.
//!
//! A user CQ is an rxe shared queue of 128-byte slots that the kernel produces into, mapped
//! by rdma-core's rxe provider, which polls it without a system call; the producer index is
//! the kernel's own ([`ProducedQueue`]). A kernel consumer's CQ holds `struct ib_wc` values.
//! `ibv_req_notify_cq` arms a completion event under the CQ lock.

use crate::fifo::Fifo;
use crate::params::Charge;
use crate::proto::uabi::{
    Completion, QueueGeometry, WcOpcode, WcStatus, CACHE_LINE_SIZE, UPSTREAM_CQE_SIZE,
    UVERBS_WC_LEN,
};
use crate::queue::{ProducedQueue, SharedQueue};
use crate::Rrxe;
use kernel::prelude::*;
use kernel::rdma::cq::{Cq, CqInit, Notify, NotifyFlags};
use kernel::rdma::{
    wr::{self, NetworkType, QpHandle, Wc},
    BhSpinLock,
};
use kernel::sync::static_lock_class;

/// The geometry of a CQ ring of at least `cqe` entries: slots of `struct rxe_cqe` (72
/// bytes, so 128-byte slots), exactly as the C driver lays it out.
fn cq_geometry(cqe: u32) -> Result<QueueGeometry> {
    QueueGeometry::new(cqe, UPSTREAM_CQE_SIZE, CACHE_LINE_SIZE).map_err(|_| EINVAL)
}

/// Per-CQ state.
#[pin_data]
pub(crate) struct RrxeCq {
    #[pin]
    state: BhSpinLock<CqState>,
    _charge: Charge,
}

/// Where the completions wait.
enum Ring {
    /// A user CQ: the rxe ring that rdma-core's provider maps and polls.
    User(ProducedQueue),
    /// A kernel consumer's CQ: the completions as `struct ib_wc` values, handed to
    /// `ib_poll_cq` as they are (never laid out in the user ABI and parsed back).
    Kernel(Fifo<Wc>),
}

struct CqState {
    ring: Ring,
    /// Armed `IB_CQ_SOLICITED` / `IB_CQ_NEXT_COMP` flags.
    notify: NotifyFlags,
    /// Completions lost because the queue was full.
    overflows: u64,
}

impl RrxeCq {
    /// Creates the queue of a new CQ (`ibv_create_cq`, `ib_alloc_cq`).
    pub(crate) fn new(
        init: &CqInit<'_, Rrxe>,
        charge: Charge,
    ) -> Result<impl PinInit<Self, Error>> {
        if init.flags != 0 {
            return Err(EOPNOTSUPP);
        }
        if init.cqe > crate::params::MAX_CQE {
            return Err(EINVAL);
        }
        let geo = cq_geometry(init.cqe)?;
        let ring = match (init.udata, init.ucontext) {
            (Some(udata), Some(ctx)) => {
                // struct rxe_create_cq_resp { struct mminfo mi; }
                if udata.out_len() < crate::queue::MMINFO_SIZE {
                    return Err(EINVAL);
                }
                let (queue, mi) = SharedQueue::new_user(ctx, geo)?;
                udata.respond(&mi)?;
                Ring::User(ProducedQueue::new(queue))
            }
            (None, _) => Ring::Kernel(Fifo::new(usize::try_from(geo.capacity())?)?),
            (Some(_), None) => return Err(EINVAL),
        };
        init.set_cqe(geo.capacity());
        Ok(try_pin_init!(Self {
            state <- BhSpinLock::new(
                CqState {
                    ring,
                    notify: NotifyFlags::empty(),
                    overflows: 0,
                },
                c"rrxe_cq",
                static_lock_class!()
            ),
            _charge: charge,
        }))
    }

    /// Appends a completion of the QP `qp`, with the network header type `net` of a UD
    /// receive's GRH (only kernel consumers are told); returns whether it was
    /// appended (the queue was not full) and whether a completion event is due (the CQ was
    /// armed for the next completion, or for a solicited one and this one is).
    ///
    /// # Context
    ///
    /// Softirq, or bottom halves disabled (the data path).
    pub(crate) fn post(
        &self,
        c: &Completion,
        qp: QpHandle,
        origin: Option<RecvOrigin>,
        solicited: bool,
    ) -> (bool, bool) {
        let mut st = self.state.lock();
        let appended = match &mut st.ring {
            Ring::User(q) => {
                let mut cqe = [0u8; UVERBS_WC_LEN];
                c.write(&mut cqe).is_ok() && q.push(&cqe).is_ok()
            }
            Ring::Kernel(r) => r.push_back(kernel_wc(c, qp, origin)).is_ok(),
        };
        if !appended {
            // A full CQ loses the completion: the consumer polls too slowly for the queue
            // it sized (IBA 11.4.2.1 makes this a CQ error; rxe drops it as well).
            st.overflows = st.overflows.wrapping_add(1);
            return (false, false);
        }
        let fire = st.notify.contains(Notify::NextComp)
            || (solicited && st.notify.contains(Notify::Solicited));
        if fire {
            st.notify = NotifyFlags::empty();
        }
        (true, fire)
    }

    /// Arms the completion event; returns whether completions are already waiting and the
    /// caller asked to know.
    pub(crate) fn req_notify(&self, flags: NotifyFlags) -> Result<bool> {
        // The data path takes the lock in softirq.
        let mut st = self.state.lock();
        st.notify |= if flags.solicited_only() {
            Notify::Solicited
        } else {
            Notify::NextComp
        };
        let waiting = match &st.ring {
            Ring::User(q) => q.count()? != 0,
            Ring::Kernel(r) => !r.is_empty(),
        };
        Ok(flags.report_missed() && waiting)
    }

    /// `poll_cq` of a kernel consumer: the oldest completion.
    pub(crate) fn poll_wc(cq: &Cq<Rrxe>) -> Option<Wc> {
        let mut st = cq.data().state.lock();
        match &mut st.ring {
            Ring::Kernel(r) => r.pop_front(),
            Ring::User(_) => None,
        }
    }

    /// Resizes a user CQ to at least `cqe` entries, keeping the waiting completions.
    pub(crate) fn resize(
        cq: &Cq<Rrxe>,
        cqe: u32,
        udata: Option<&kernel::rdma::device::UData<Rrxe>>,
    ) -> Result {
        let this = cq.data();
        if cqe > crate::params::MAX_CQE || cqe == 0 {
            return Err(EINVAL);
        }
        let udata = udata.ok_or(EINVAL)?;
        let ctx = udata.ucontext().ok_or(EINVAL)?;
        // struct rxe_resize_cq_resp { struct mminfo mi; }
        if udata.out_len() < crate::queue::MMINFO_SIZE {
            return Err(EINVAL);
        }
        let geo = cq_geometry(cqe)?;
        let (queue, mi) = SharedQueue::new_user(ctx, geo)?;
        // Copying to userspace may sleep: respond before taking the lock. If the move fails,
        // the verb fails and userspace ignores the response, whose queue is freed here.
        udata.respond(&mi)?;
        let mut st = this.state.lock();
        // `Ok(old queue)` or `Err(refused new queue)`: either is dropped after the lock (not
        // needed since a dropped buffer no longer removes its mmap entry, but the lock is
        // held for as short as it can be).
        let moved = match &mut st.ring {
            Ring::User(q) => q.resize_into(queue).map(|new| core::mem::replace(q, new)),
            Ring::Kernel(_) => Err(queue),
        };
        if moved.is_ok() {
            cq.set_cqe(geo.capacity());
        }
        drop(st);
        // The old queue's mapping stays valid until userspace unmaps it.
        match moved {
            Ok(_old) => Ok(()),
            Err(_refused) => Err(EINVAL),
        }
    }
}

/// Where a UD receive came from, as a kernel consumer's completion says it: the network
/// header its GRH stands for, and the VLAN it arrived on (the core picks the source GID of
/// a reply by both, e.g. for the connection manager's MADs).
#[derive(Clone, Copy)]
pub(crate) struct RecvOrigin {
    pub(crate) net: NetworkType,
    pub(crate) vlan: Option<u16>,
}

/// A completion's status, as the verbs core names it.
fn kernel_status(s: WcStatus) -> wr::WcStatus {
    match s {
        WcStatus::Success => wr::WcStatus::Success,
        WcStatus::LocLenErr => wr::WcStatus::LocLenErr,
        WcStatus::LocQpOpErr => wr::WcStatus::LocQpOpErr,
        WcStatus::LocProtErr => wr::WcStatus::LocProtErr,
        WcStatus::WrFlushErr => wr::WcStatus::WrFlushErr,
        WcStatus::MwBindErr => wr::WcStatus::MwBindErr,
        WcStatus::RemInvReqErr => wr::WcStatus::RemInvReqErr,
        WcStatus::RemAccessErr => wr::WcStatus::RemAccessErr,
        WcStatus::RemOpErr => wr::WcStatus::RemOpErr,
        WcStatus::RetryExcErr => wr::WcStatus::RetryExcErr,
        WcStatus::RnrRetryExcErr => wr::WcStatus::RnrRetryExcErr,
    }
}

/// A completion's opcode, as the verbs core names it.
fn kernel_opcode(o: WcOpcode) -> wr::WcOpcode {
    match o {
        WcOpcode::Send => wr::WcOpcode::Send,
        WcOpcode::RdmaWrite => wr::WcOpcode::RdmaWrite,
        WcOpcode::RdmaRead => wr::WcOpcode::RdmaRead,
        WcOpcode::CompSwap => wr::WcOpcode::CompSwap,
        WcOpcode::FetchAdd => wr::WcOpcode::FetchAdd,
        WcOpcode::BindMw => wr::WcOpcode::BindMw,
        WcOpcode::LocalInv => wr::WcOpcode::LocalInv,
        WcOpcode::Flush => wr::WcOpcode::Flush,
        WcOpcode::AtomicWrite => wr::WcOpcode::AtomicWrite,
        WcOpcode::RegMr => wr::WcOpcode::RegMr,
        WcOpcode::Recv => wr::WcOpcode::Recv,
        WcOpcode::RecvRdmaWithImm => wr::WcOpcode::RecvRdmaWithImm,
    }
}

/// The `struct ib_wc` of a completion, for a kernel consumer.
fn kernel_wc(c: &Completion, qp: QpHandle, origin: Option<RecvOrigin>) -> Wc {
    Wc {
        wr_id: c.wr_id,
        status: kernel_status(c.status),
        opcode: kernel_opcode(c.opcode),
        byte_len: c.byte_len,
        qp: Some(qp),
        ex: c.ex.raw(),
        src_qp: c.src_qp,
        wc_flags: c.flags.0,
        pkey_index: c.pkey_index,
        port_num: u32::from(c.port_num),
        network_hdr_type: origin.map(|o| o.net),
        vlan_id: origin.and_then(|o| o.vlan),
    }
}
