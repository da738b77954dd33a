// SPDX-License-Identifier: GPL-2.0

//! A shared receive queue as the data path sees it ([`SrqQueue`]): the ring of receive
//! WQEs every QP attached to it takes from, its armed limit, and what the SRQ verbs
//! (`crate::srq`) do to it under its lock (arm, resize, post, query).
//!
//! A user SRQ is an rxe ring that librxe's `ibv_post_srq_recv` writes; a kernel consumer's
//! is a [`KernelRing`] of checked receive work requests (`ib_post_srq_recv`). The responder
//! of whichever QP receives a request that needs a WQE takes one under the SRQ's lock
//! ([`SrqQueue::take`]): copied out, validated and dequeued at once, it belongs to that QP
//! from then on. When fewer WQEs than the armed limit remain, the limit is disarmed and the
//! owner told once (`IB_EVENT_SRQ_LIMIT_REACHED`), as IBA 10.2.9.2 says.
//!
//! Lock order: a QP's engine lock, then the SRQ's lock (taken with bottom halves disabled).

use super::{write_sges, KernelRing, RecvCopy};
use crate::proto::uabi::{
    CheckedRecvWqe, KernelConsumer, LengthCheck, QueueGeometry, RecvQueueParams, CACHE_LINE_SIZE,
    MAX_MSG_SIZE, RECV_WQE_DATA_OFFSET,
};
use crate::queue::{move_waiting, SharedQueue};
use kernel::prelude::*;
use kernel::rdma::{wr::RecvWr, BhSpinLock};
use kernel::sync::{static_lock_class, Arc};

/// What the data path shares of an SRQ.
#[pin_data]
pub(crate) struct SrqQueue {
    #[pin]
    q: BhSpinLock<SrqState>,
    /// The checks a user WQE passes (`max_sge` is the SRQ's).
    params: RecvQueueParams,
    /// Size of a WQE slot (a power of two): what a QP's copy of one must hold.
    elem: usize,
}

/// Where the WQEs are.
enum Ring {
    User(SharedQueue),
    Kernel(KernelRing<CheckedRecvWqe>),
}

/// The queue and its limit, under the SRQ's lock.
struct SrqState {
    ring: Ring,
    consumer: KernelConsumer,
    /// The armed limit (0: not armed).
    limit: u32,
    /// Capacity in WQEs (a resize changes it).
    capacity: u32,
}

impl SrqState {
    /// The producer index: userspace's (untrusted, `consumer` checks it) or the kernel
    /// ring's.
    fn producer(&self) -> Result<u32> {
        match &self.ring {
            Ring::User(q) => q.producer_acquire(),
            Ring::Kernel(k) => Ok(k.producer()),
        }
    }
}

/// The ring geometry of an SRQ of at least `entries` WQEs of `elem` bytes.
pub(crate) fn srq_geometry(entries: u32, elem: usize) -> Result<QueueGeometry> {
    QueueGeometry::new(entries, elem, CACHE_LINE_SIZE).map_err(|_| EINVAL)
}

/// A kernel consumer's ring of geometry `geo` (its WQEs' data after their fixed part).
fn kernel_ring(geo: QueueGeometry) -> Result<KernelRing<CheckedRecvWqe>> {
    let data = geo.elem_size().checked_sub(RECV_WQE_DATA_OFFSET);
    KernelRing::new(geo, data.ok_or(EINVAL)?)
}

/// Where a new SRQ's WQEs are.
pub(crate) enum SrqRing {
    /// A user ring (librxe writes it).
    User(SharedQueue),
    /// A kernel consumer's ring, allocated here.
    Kernel,
}

/// What [`SrqQueue::take`] found.
pub(crate) struct Taken {
    /// The WQE's length.
    pub(crate) len: u32,
    /// Fewer WQEs than the armed limit remain: the limit was disarmed, and the owner must be
    /// told (once the QP's locks are dropped).
    pub(crate) limit_reached: bool,
}

impl SrqQueue {
    /// A queue of geometry `geo` over `ring`, of WQEs of at most `max_sge` SGEs, with
    /// `limit` armed (0: not).
    pub(crate) fn new(
        geo: QueueGeometry,
        ring: SrqRing,
        max_sge: u32,
        limit: u32,
    ) -> Result<Arc<Self>> {
        let ring = match ring {
            SrqRing::User(q) => Ring::User(q),
            SrqRing::Kernel => Ring::Kernel(kernel_ring(geo)?),
        };
        Arc::pin_init(
            try_pin_init!(Self {
                q <- BhSpinLock::new(
                    SrqState {
                        ring,
                        consumer: KernelConsumer::new(geo),
                        limit,
                        capacity: geo.capacity(),
                    },
                    c"rrxe_srq",
                    static_lock_class!()
                ),
                params: RecvQueueParams {
                    max_sge,
                    max_msg_size: MAX_MSG_SIZE,
                    length_check: LengthCheck::SgeSum,
                },
                elem: geo.elem_size(),
            }),
            crate::params::gfp_user(),
        )
    }

    /// Returns the size of a WQE slot (what a QP's copy must hold).
    pub(crate) fn elem(&self) -> usize {
        self.elem
    }

    /// Returns the most SGEs a WQE may have.
    pub(crate) fn max_sge(&self) -> u32 {
        self.params.max_sge
    }

    /// Returns the armed limit and the capacity.
    pub(crate) fn limit_and_capacity(&self) -> (u32, u32) {
        let q = self.q.lock();
        (q.limit, q.capacity)
    }

    /// Arms the limit (`IB_SRQ_LIMIT`; 0 disarms it); `EINVAL` beyond the capacity.
    pub(crate) fn arm(&self, limit: u32) -> Result {
        let mut q = self.q.lock();
        if limit > q.capacity {
            return Err(EINVAL);
        }
        q.limit = limit;
        Ok(())
    }

    /// Moves the waiting WQEs of a user SRQ into `queue`, of geometry `geo`, which becomes
    /// the SRQ's ring (rxe's `rxe_queue_resize()`); `EINVAL` if they do not fit, or if the
    /// armed limit would exceed the new size, and nothing changes.
    pub(crate) fn resize_user(&self, queue: SharedQueue, geo: QueueGeometry) -> Result {
        let mut q = self.q.lock();
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
        match swapped {
            Ok(_old) => Ok(()),
            Err(_refused) => Err(EINVAL),
        }
    }

    /// Resizes a kernel consumer's SRQ to geometry `geo`, keeping the waiting WQEs in order:
    /// a new ring, allocated before the lock, into which they move under it (the data path
    /// takes WQEs only under the lock, so none is half taken). `EINVAL` if they do not fit,
    /// or if the armed limit would exceed the new size; nothing changes then.
    pub(crate) fn resize_kernel(&self, geo: QueueGeometry) -> Result {
        let mut ring = kernel_ring(geo)?;
        let mut q = self.q.lock();
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
        match dropped {
            Ok(_old) => Ok(()),
            Err((e, _refused)) => Err(e),
        }
    }

    /// Checks a kernel consumer's receive work request and queues it (`ib_post_srq_recv`).
    pub(crate) fn post_recv(&self, wr: &RecvWr<'_>) -> Result {
        let n = u32::try_from(wr.sges.len())?;
        let mut q = self.q.lock();
        let Ring::Kernel(k) = &mut q.ring else {
            return Err(EINVAL);
        };
        k.push(wr.sges.iter().copied().map(Some), |area| {
            write_sges(area, wr.sges)?;
            CheckedRecvWqe::from_kernel(wr.wr_id, n, area, &self.params).map_err(|_| EINVAL)
        })
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
                let (w, data, posted) = k.get(&slot).ok_or(EINVAL)?;
                copy.load_kernel(w, data, posted)?
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
