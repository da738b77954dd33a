// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: one receive queue for every QP attached to it.
//!
//! A user SRQ is an rxe ring of receive WQEs that librxe's `ibv_post_srq_recv` writes
//! (mapped as the RQ of a QP is, `struct rxe_create_srq_resp` gives its `mminfo`); a kernel
//! consumer's is a [`KernelRing`] of checked receive work requests (`ib_post_srq_recv`).
//! The kernel consumes it under the SRQ's lock, from the responder of whichever QP receives
//! a request that needs a WQE ([`SrqShared::take`]): the WQE is copied out, validated and
//! dequeued at once, and belongs to that QP from then on (flushed with it if the QP fails
//! before using it). When fewer WQEs than the armed limit remain, the limit is disarmed and
//! the owner told once (`IB_EVENT_SRQ_LIMIT_REACHED`), as IBA 10.2.9.2 says.
//!
//! Lock order: a QP's engine lock, then the SRQ's lock.
//!
//! Not offered (as the device attributes say): resizing (`IB_SRQ_MAX_WR`), XRC and
//! tag-matching SRQs.

use crate::engine::{write_sges, KernelRing, RecvCopy};
use crate::params::{self, Charge};
use crate::proto::uabi::{
    self, CheckedRecvWqe, CreateSrqRespFields, KernelConsumer, LengthCheck, QueueGeometry,
    RecvQueueParams, CACHE_LINE_SIZE, MAX_MSG_SIZE, RECV_WQE_DATA_OFFSET,
};
use crate::queue::{move_waiting, SharedQueue};
use crate::Rrxe;
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::rdma::{
    device::{Device, UData},
    pd::Pd,
    srq::{Srq, SrqAttrMask, SrqAttrs, SrqInit},
    wr::RecvWr,
    BhGuard,
};
use kernel::sync::{Arc, SpinLock};
use kernel::uaccess::{UserPtr, UserSlice};

/// Per-SRQ driver data.
pub(crate) struct RrxeSrq {
    pub(crate) shared: Arc<SrqShared>,
    _charge: Charge,
}

/// What the data path shares of an SRQ.
#[pin_data]
pub(crate) struct SrqShared {
    #[pin]
    q: SpinLock<SrqQueue>,
    /// The checks a user WQE passes (`max_sge` is the SRQ's).
    params: RecvQueueParams,
    /// Size of a WQE slot (a power of two): what a QP's copy of one must hold.
    elem: usize,
    max_sge: u32,
}

/// Where the WQEs are.
enum Ring {
    User(SharedQueue),
    Kernel(KernelRing<CheckedRecvWqe>),
}

/// The queue and its limit, under the SRQ's lock.
struct SrqQueue {
    ring: Ring,
    consumer: KernelConsumer,
    /// The armed limit (0: not armed).
    limit: u32,
    /// Capacity in WQEs (a resize changes it).
    capacity: u32,
}

impl SrqQueue {
    /// The producer index: userspace's (untrusted, `consumer` checks it) or the kernel
    /// ring's.
    fn producer(&self) -> Result<u32> {
        match &self.ring {
            Ring::User(q) => q.producer_acquire(),
            Ring::Kernel(k) => Ok(k.producer()),
        }
    }
}

fn geometry(entries: u32, elem: usize) -> Result<QueueGeometry> {
    QueueGeometry::new(entries, elem, CACHE_LINE_SIZE).map_err(|_| EINVAL)
}

impl RrxeSrq {
    /// `ibv_create_srq` / `ib_create_srq` (`rxe_create_srq`).
    pub(crate) fn new(
        dev: &Device<Rrxe>,
        _pd: &Pd<Rrxe>,
        init: &SrqInit<'_, Rrxe>,
    ) -> Result<Self> {
        if !init.basic {
            return Err(EOPNOTSUPP);
        }
        let a = init.attrs;
        if a.max_wr == 0 || a.max_wr > params::MAX_SRQ_WR || a.max_sge > params::MAX_SRQ_SGE {
            return Err(EINVAL);
        }
        // As rdma_rxe: at least one SGE per WQE.
        let max_sge = a.max_sge.max(1);
        let elem = uabi::recv_wqe_size(max_sge).map_err(|_| EINVAL)?;
        let geo = geometry(a.max_wr, elem)?;
        if a.srq_limit > geo.capacity() {
            return Err(EINVAL);
        }
        let charge = dev.data().srqs.take()?;
        // Reported to userspace only (librxe does not use it): distinct, never looked up.
        let num = dev.data().next_srq_num();
        let ring = match (init.udata, init.ucontext) {
            (Some(udata), Some(ctx)) => {
                if udata.in_len() != 0 || udata.out_len() < CreateSrqRespFields::LEN {
                    return Err(EINVAL);
                }
                let (q, mi) = SharedQueue::new_user_mi(ctx, geo)?;
                // librxe 44 does not zero the response: every field is written.
                let resp = CreateSrqRespFields {
                    mi,
                    srq_num: num,
                    reserved: 0,
                };
                let mut bytes = [0u8; CreateSrqRespFields::LEN];
                resp.write(&mut bytes).map_err(|_| EINVAL)?;
                udata.respond(&bytes)?;
                Ring::User(q)
            }
            (None, _) => {
                let data = geo.elem_size().checked_sub(RECV_WQE_DATA_OFFSET);
                let data = data.ok_or(EINVAL)?;
                Ring::Kernel(KernelRing::new(geo, data)?)
            }
            (Some(_), None) => return Err(EINVAL),
        };
        let attrs = SrqAttrs {
            max_wr: geo.capacity(),
            max_sge,
            srq_limit: a.srq_limit,
        };
        init.set_attrs(&attrs);
        let shared = Arc::pin_init(
            try_pin_init!(SrqShared {
                q <- new_spinlock!(
                    SrqQueue {
                        ring,
                        consumer: KernelConsumer::new(geo),
                        limit: a.srq_limit,
                        capacity: geo.capacity(),
                    },
                    "rrxe_srq"
                ),
                params: RecvQueueParams {
                    max_sge,
                    max_msg_size: MAX_MSG_SIZE,
                    length_check: LengthCheck::SgeSum,
                },
                elem: geo.elem_size(),
                max_sge,
            }),
            crate::params::gfp_user(),
        )?;
        Ok(Self {
            shared,
            _charge: charge,
        })
    }

    /// `ibv_modify_srq` / `ib_modify_srq`: arms the limit (`IB_SRQ_LIMIT`), resizes the SRQ
    /// (`IB_SRQ_MAX_WR`, as rdma_rxe).
    pub(crate) fn modify(
        srq: &Srq<Rrxe>,
        attrs: &SrqAttrs,
        mask: SrqAttrMask,
        udata: Option<&UData<Rrxe>>,
    ) -> Result {
        // struct rxe_modify_srq_cmd { __aligned_u64 mmap_info_addr; }: where librxe wants a
        // resized queue's mminfo (always sent; only a resize uses it).
        let mut cmd = [0u8; 8];
        if let Some(u) = udata {
            u.read_input(&mut cmd)?;
        }
        if mask.bits() & !(SrqAttrMask::LIMIT | SrqAttrMask::MAX_WR) != 0 {
            return Err(EINVAL);
        }
        if mask.contains(SrqAttrMask::MAX_WR) {
            match udata {
                Some(udata) => Self::resize(srq, attrs.max_wr, u64::from_ne_bytes(cmd), udata)?,
                None => Self::resize_kernel(srq, attrs.max_wr)?,
            }
        }
        let this = &srq.data().shared;
        if mask.contains(SrqAttrMask::LIMIT) {
            let _bh = BhGuard::new();
            let mut q = this.q.lock();
            if attrs.srq_limit > q.capacity {
                return Err(EINVAL);
            }
            q.limit = attrs.srq_limit;
        }
        Ok(())
    }

    /// Resizes a user SRQ to at least `max_wr` WQEs, keeping the waiting ones (rxe's
    /// `rxe_queue_resize()`): a new queue, its `struct mminfo` written at `mi_addr` for librxe
    /// to map it, the waiting WQEs moved into it under the SRQ's lock (librxe holds its
    /// posting lock during the call). `EINVAL` if they do not fit, or if the armed limit
    /// would exceed the new size.
    fn resize(srq: &Srq<Rrxe>, max_wr: u32, mi_addr: u64, udata: &UData<Rrxe>) -> Result {
        let this = &srq.data().shared;
        if max_wr == 0 || max_wr > params::MAX_SRQ_WR {
            return Err(EINVAL);
        }
        let ctx = udata.ucontext().ok_or(EINVAL)?;
        let geo = geometry(max_wr, this.elem)?;
        let (queue, mi) = SharedQueue::new_user(ctx, geo)?;
        // Writing to userspace may fault and sleep: before the lock. If the move fails, the
        // verb fails and librxe keeps its mapping of the old queue.
        UserSlice::new(UserPtr::from_addr(usize::try_from(mi_addr)?), mi.len())
            .writer()
            .write_slice(&mi)?;
        let bh = BhGuard::new();
        let mut q = this.q.lock();
        // `Ok(old queue)` or `Err(refused new queue)`: dropped after the lock (a short
        // critical section; dropping it never sleeps).
        let moved = match &q.ring {
            Ring::User(old) if q.limit <= geo.capacity() => q
                .producer()
                .and_then(|p| move_waiting(old, &queue, p, q.consumer.consumer()))
                .map_err(|_| ()),
            _ => Err(()),
        };
        let swapped = match moved {
            Ok((_, consumer)) => {
                q.consumer = KernelConsumer::with_index(geo, consumer);
                q.capacity = geo.capacity();
                Ok(core::mem::replace(&mut q.ring, Ring::User(queue)))
            }
            Err(()) => Err(queue),
        };
        drop(q);
        drop(bh);
        match swapped {
            Ok(_old) => Ok(()),
            Err(_refused) => Err(EINVAL),
        }
    }

    /// Resizes a kernel consumer's SRQ to at least `max_wr` WQEs, keeping the waiting ones
    /// in order: a new ring, allocated before the lock, into which they move under it (the
    /// data path takes WQEs only under the lock, so none is half taken). `EINVAL` if they
    /// do not fit, or if the armed limit would exceed the new size; nothing changes then.
    fn resize_kernel(srq: &Srq<Rrxe>, max_wr: u32) -> Result {
        let this = &srq.data().shared;
        if max_wr == 0 || max_wr > params::MAX_SRQ_WR {
            return Err(EINVAL);
        }
        let geo = geometry(max_wr, this.elem)?;
        let data = geo.elem_size().checked_sub(RECV_WQE_DATA_OFFSET);
        let mut ring = KernelRing::new(geo, data.ok_or(EINVAL)?)?;
        let bh = BhGuard::new();
        let mut q = this.q.lock();
        let moved = match &q.ring {
            Ring::Kernel(old) if q.limit <= geo.capacity() => {
                ring.take_waiting(old, q.consumer.consumer())
            }
            _ => Err(EINVAL),
        };
        // The old ring (or the refused new one) is freed after the lock.
        let dropped = match moved {
            Ok(_) => {
                q.consumer = KernelConsumer::new(geo);
                q.capacity = geo.capacity();
                Ok(core::mem::replace(&mut q.ring, Ring::Kernel(ring)))
            }
            Err(e) => Err((e, ring)),
        };
        drop(q);
        drop(bh);
        match dropped {
            Ok(_old) => Ok(()),
            Err((e, _refused)) => Err(e),
        }
    }

    /// `ibv_query_srq`.
    pub(crate) fn query(srq: &Srq<Rrxe>) -> SrqAttrs {
        let this = &srq.data().shared;
        let (srq_limit, capacity) = {
            let _bh = BhGuard::new();
            let q = this.q.lock();
            (q.limit, q.capacity)
        };
        SrqAttrs {
            max_wr: capacity,
            max_sge: this.max_sge,
            srq_limit,
        }
    }

    /// `ib_post_srq_recv` of a kernel consumer: checks the work request and queues it.
    pub(crate) fn post_recv(srq: &Srq<Rrxe>, wr: &RecvWr<'_>) -> Result {
        let this = &srq.data().shared;
        let n = u32::try_from(wr.sges.len())?;
        let _bh = BhGuard::new();
        let mut q = this.q.lock();
        let Ring::Kernel(k) = &mut q.ring else {
            return Err(EINVAL);
        };
        k.push(|area| {
            write_sges(area, wr.sges)?;
            CheckedRecvWqe::from_kernel(wr.wr_id, n, area, &this.params).map_err(|_| EINVAL)
        })
    }
}

/// What [`SrqShared::take`] found.
pub(crate) struct Taken {
    /// The WQE's length.
    pub(crate) len: u32,
    /// Fewer WQEs than the armed limit remain: the limit was disarmed, and the owner must be
    /// told (once the QP's locks are dropped).
    pub(crate) limit_reached: bool,
}

impl SrqShared {
    /// Returns the size of a WQE slot (what a QP's copy must hold).
    pub(crate) fn elem(&self) -> usize {
        self.elem
    }

    /// Dequeues the oldest WQE into `copy`, validated: `Ok(None)` if the queue is empty,
    /// `Err` if the queue or the WQE is corrupt (the QP that asked enters ERR).
    ///
    /// # Context
    ///
    /// Bottom halves disabled (the receive path, under the QP's engine lock).
    pub(crate) fn take(&self, copy: &mut RecvCopy) -> Result<Option<Taken>> {
        let mut q = self.q.lock();
        let prod = q.producer()?;
        let Some(slot) = q.consumer.head(prod).map_err(|_| EINVAL)? else {
            return Ok(None);
        };
        let len = match &q.ring {
            Ring::User(r) => copy.load_user(r, &slot, &self.params)?,
            Ring::Kernel(k) => {
                let (w, data) = k.get(&slot).ok_or(EINVAL)?;
                copy.load_kernel(w, data)?
            }
        };
        let p = q.consumer.advance(prod).map_err(|_| EINVAL)?;
        match &mut q.ring {
            Ring::User(r) => r.publish(p)?,
            Ring::Kernel(k) => k.publish(p),
        }
        let left = q.consumer.count(prod).map_err(|_| EINVAL)?;
        let limit_reached = q.limit != 0 && left < q.limit;
        if limit_reached {
            q.limit = 0;
        }
        Ok(Some(Taken { len, limit_reached }))
    }
}
