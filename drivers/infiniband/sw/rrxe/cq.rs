// SPDX-License-Identifier: GPL-2.0

//! Completion queues.
//!
//! A completion queue is an rxe shared queue of 64-byte slots that the kernel produces into;
//! for a user CQ the queue is mapped by rdma-core's rxe provider, which polls it without a
//! system call. `ibv_req_notify_cq` arms a completion event under the CQ lock.

use crate::params::Slot;
use crate::proto::uabi::{QueueGeometry, UverbsWc, CACHE_LINE_SIZE, UPSTREAM_CQE_SIZE};
use crate::queue::SharedQueue;
use crate::Rrxe;
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::rdma::cq::{Cq, CqInit, NotifyFlags};
use kernel::rdma::{wr::Wc, BhGuard};
use kernel::sync::SpinLock;

/// The geometry of a CQ ring of at least `cqe` entries: slots of `struct rxe_cqe` (72
/// bytes, so 128-byte slots), exactly as the C driver lays it out.
fn cq_geometry(cqe: u32) -> Result<QueueGeometry> {
    QueueGeometry::new(cqe, UPSTREAM_CQE_SIZE, CACHE_LINE_SIZE).map_err(|_| EINVAL)
}

/// Bytes of a completion entry the driver writes: a `struct ib_uverbs_wc` (48 bytes, what
/// the user provider reads) and one byte for the kernel consumer's `network_hdr_type`.
pub(crate) const CQE_LEN: usize = 49;

/// `IB_WC_WITH_NETWORK_HDR_TYPE`: the completion says which IP version the GRH holds.
const WC_WITH_NETWORK_HDR_TYPE: u32 = 1 << 6;

/// Per-CQ state.
#[pin_data]
pub(crate) struct RrxeCq {
    #[pin]
    state: SpinLock<CqState>,
    _slot: Slot,
}

struct CqState {
    queue: SharedQueue,
    /// Armed `IB_CQ_SOLICITED` / `IB_CQ_NEXT_COMP` flags.
    notify: u32,
    /// Completions lost because the queue was full.
    overflows: u64,
}

impl RrxeCq {
    /// Creates the queue of a new CQ (`ibv_create_cq`, `ib_alloc_cq`).
    pub(crate) fn new(init: &CqInit<'_, Rrxe>, slot: Slot) -> Result<impl PinInit<Self, Error>> {
        if init.flags != 0 {
            return Err(EOPNOTSUPP);
        }
        if init.cqe > crate::params::MAX_CQE {
            return Err(EINVAL);
        }
        let geo = cq_geometry(init.cqe)?;
        let queue = match (init.udata, init.ucontext) {
            (Some(udata), Some(ctx)) => {
                // struct rxe_create_cq_resp { struct mminfo mi; }
                if udata.out_len() < crate::queue::MMINFO_SIZE {
                    return Err(EINVAL);
                }
                let (queue, mi) = SharedQueue::new_user(ctx, geo)?;
                udata.respond(&mi)?;
                queue
            }
            (None, _) => SharedQueue::new_kernel(geo)?,
            (Some(_), None) => return Err(EINVAL),
        };
        init.set_cqe(geo.capacity());
        Ok(try_pin_init!(Self {
            state <- new_spinlock!(
                CqState {
                    queue,
                    notify: 0,
                    overflows: 0,
                },
                "rrxe_cq"
            ),
            _slot: slot,
        }))
    }

    /// Appends a completion entry; returns whether it was (the queue was not full) and
    /// whether a completion event is due (the CQ was armed for the next completion, or for a
    /// solicited one and this one is).
    ///
    /// # Context
    ///
    /// Softirq, or bottom halves disabled (the data path).
    pub(crate) fn post(&self, cqe: &[u8], solicited: bool) -> (bool, bool) {
        let mut st = self.state.lock();
        if st.queue.push(cqe).is_err() {
            // A full CQ loses the completion: the consumer polls too slowly for the queue
            // it sized (IBA 11.4.2.1 makes this a CQ error; rxe drops it as well).
            st.overflows = st.overflows.wrapping_add(1);
            return (false, false);
        }
        let fire = st.notify & NotifyFlags::NEXT_COMP != 0
            || (solicited && st.notify & NotifyFlags::SOLICITED != 0);
        if fire {
            st.notify = 0;
        }
        (true, fire)
    }

    /// Takes the oldest entry of a kernel consumer's CQ: the `struct ib_uverbs_wc` layout
    /// and, at byte 48, the network header type of a UD receive.
    pub(crate) fn poll(&self) -> Option<[u8; CQE_LEN]> {
        let _bh = BhGuard::new();
        let st = self.state.lock();
        let mut cqe = [0u8; CQE_LEN];
        match st.queue.pop(&mut cqe) {
            Ok(true) => Some(cqe),
            _ => None,
        }
    }

    /// Arms the completion event; returns whether completions are already waiting and the
    /// caller asked to know.
    pub(crate) fn req_notify(&self, flags: NotifyFlags) -> Result<bool> {
        // The data path takes the lock in softirq.
        let _bh = BhGuard::new();
        let mut st = self.state.lock();
        st.notify |= if flags.solicited_only() {
            NotifyFlags::SOLICITED
        } else {
            NotifyFlags::NEXT_COMP
        };
        Ok(flags.report_missed() && !st.queue.is_empty()?)
    }

    /// `poll_cq` of a kernel consumer.
    pub(crate) fn poll_wc(cq: &Cq<Rrxe>) -> Option<Wc> {
        let cqe = cq.data().poll()?;
        let f = UverbsWc::new(&cqe)?.fields();
        let qp = {
            let _bh = BhGuard::new();
            cq.device().data().qp(f.qp_num).map(|q| q.handle())
        };
        let net = cqe.get(48).copied().unwrap_or(0);
        Some(Wc {
            wr_id: f.wr_id,
            status: f.status,
            opcode: f.opcode,
            byte_len: f.byte_len,
            qp,
            ex: f.ex,
            src_qp: f.src_qp,
            wc_flags: f.wc_flags
                | if net != 0 {
                    WC_WITH_NETWORK_HDR_TYPE
                } else {
                    0
                },
            pkey_index: f.pkey_index,
            port_num: u32::from(f.port_num),
            network_hdr_type: net,
        })
    }

    /// Resizes a user CQ to at least `cqe` entries, keeping the waiting completions.
    pub(crate) fn resize(
        cq: &Cq<Rrxe>,
        cqe: u32,
        udata: Option<&kernel::rdma::device::UData>,
    ) -> Result {
        let this = cq.data();
        if cqe > crate::params::MAX_CQE || cqe == 0 {
            return Err(EINVAL);
        }
        let udata = udata.ok_or(EINVAL)?;
        let ctx = udata.ucontext::<Rrxe>().ok_or(EINVAL)?;
        // struct rxe_resize_cq_resp { struct mminfo mi; }
        if udata.out_len() < crate::queue::MMINFO_SIZE {
            return Err(EINVAL);
        }
        let geo = cq_geometry(cqe)?;
        let (queue, mi) = SharedQueue::new_user(ctx, geo)?;
        // Copying to userspace may sleep: respond before taking the lock. If the move fails,
        // the verb fails and userspace ignores the response, whose queue is freed here.
        udata.respond(&mi)?;
        let bh = BhGuard::new();
        let mut st = this.state.lock();
        st.queue.move_into(&queue)?;
        let old = core::mem::replace(&mut st.queue, queue);
        cq.set_cqe(geo.capacity());
        drop(st);
        drop(bh);
        // Dropping a shared buffer may sleep: outside the lock. Its mapping stays valid until
        // userspace unmaps it.
        drop(old);
        Ok(())
    }
}
