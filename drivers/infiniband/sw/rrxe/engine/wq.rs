// SPDX-License-Identifier: GPL-2.0

//! Work queues: where the data path finds the WQEs a consumer posted, and how a kernel
//! consumer posts them.
//!
//! A user QP's send and receive queues are rxe rings in memory userspace writes
//! ([`SharedQueue`]): a WQE is copied out of its slot once and validated
//! ([`validate_send_wqe`], [`validate_recv_wqe`]). A kernel consumer's queues are
//! [`KernelRing`]s: `ib_post_send` and `ib_post_recv` check each work request as typed values
//! ([`CheckedSendWqe::from_kernel`], [`CheckedRecvWqe::from_kernel`], the same rules as a
//! user WQE's), so that one the QP cannot carry out fails the post instead of completing in
//! error, and keep it with its SGE list or inline payload beside it; nothing is laid out as
//! a WQE and parsed back. Both kinds are indexed alike (the engine's `SendQueueState` and
//! `KernelConsumer`), so the requester, the responder and the flush in ERR see one kind of
//! queue, through the accessors below. Either way the data path works on its own copy: a
//! send WQE in the shadow ring ([`Shadow`]), the receive WQE being filled in a
//! [`RecvCopy`].
//!
//! [`validate_send_wqe`]: crate::proto::uabi::validate_send_wqe
//! [`validate_recv_wqe`]: crate::proto::uabi::validate_recv_wqe
//! [`Shadow`]: super::req::Shadow

use super::{Engine, Local, QpShared};
use crate::mem::{Key, Need};
use crate::proto::{
    rc::WcStatus,
    uabi::{
        self, CheckedRecvWqe, CheckedSendWqe, KernelData, KernelProducer, KernelSendWr, Publish,
        QueueGeometry, RecvQueueParams, RecvWqe, RxeSgeFields, SendFlags, Slot,
        RECV_WQE_DATA_OFFSET, SEND_WQE_DATA_OFFSET,
    },
};
use crate::queue::SharedQueue;
use kernel::alloc::KVVec;
use kernel::prelude::*;
use kernel::rdma::{qp::QpState, wr::Sge};

/// A queue as a new QP is given it.
pub(crate) enum Queue {
    /// A user QP's ring, mapped to userspace.
    User(SharedQueue),
    /// A kernel consumer's queue of this geometry (its capacity and element size).
    Kernel(QueueGeometry),
}

impl Queue {
    /// Returns the geometry.
    pub(crate) fn geometry(&self) -> QueueGeometry {
        match self {
            Self::User(q) => q.geometry(),
            Self::Kernel(g) => *g,
        }
    }
}

/// A user QP's send and receive rings, or a kernel consumer's queues.
type Queues = (
    Option<SharedQueue>,
    Option<SharedQueue>,
    Option<KernelQueues>,
);

/// Returns the rings of a user QP, or the queues of a kernel consumer's, from the queues a
/// new QP is given (both of one kind).
pub(super) fn split(sq: Queue, rq: Option<Queue>) -> Result<Queues> {
    match (sq, rq) {
        (Queue::User(sq), None) => Ok((Some(sq), None, None)),
        (Queue::User(sq), Some(Queue::User(rq))) => Ok((Some(sq), Some(rq), None)),
        (Queue::Kernel(sq), rq) => {
            let rq = match rq {
                Some(Queue::Kernel(g)) => {
                    let data = g.elem_size().checked_sub(RECV_WQE_DATA_OFFSET);
                    Some(KernelRing::new(g, data.ok_or(EINVAL)?)?)
                }
                None => None,
                Some(Queue::User(_)) => return Err(EINVAL),
            };
            let data = sq.elem_size().checked_sub(SEND_WQE_DATA_OFFSET);
            let sq = KernelRing::new(sq, data.ok_or(EINVAL)?)?;
            Ok((None, None, Some(KernelQueues { sq, rq })))
        }
        (Queue::User(_), Some(Queue::Kernel(_))) => Err(EINVAL),
    }
}

/// A kernel consumer's work queue: checked work requests, each with its local data (an SGE
/// list in the layout of `struct ib_sge`, or an inline payload) in a data area of its own,
/// and the SGEs as the consumer posted them ([`Sge`]: what names its memory by DMA address).
///
/// # Invariants
///
/// `wqes` has one entry per slot of the producer's geometry, `data` `data_len` bytes per
/// slot and `posted` `data_len / SGE_LEN` entries per slot; the entries from the last
/// published consumer index to the producer index are `Some`, each checked with the data in
/// its area, its SGE list (if it has one) the bytes of the `Sge`s at the start of its
/// `posted` entries.
pub(crate) struct KernelRing<W> {
    producer: KernelProducer,
    /// The consumer index the data path published last.
    consumer: u32,
    wqes: KVVec<Option<W>>,
    data: KVVec<u8>,
    data_len: usize,
    posted: KVVec<Option<Sge>>,
}

impl<W: Copy> KernelRing<W> {
    /// Returns an empty ring of geometry `geo`, with `data_len` bytes of data per WQE.
    pub(crate) fn new(geo: QueueGeometry, data_len: usize) -> Result<Self> {
        let slots = usize::try_from(geo.slots())?;
        Ok(Self {
            producer: KernelProducer::new(geo),
            consumer: 0,
            wqes: KVVec::from_elem(None, slots, crate::params::gfp_user())?,
            data: KVVec::from_elem(
                0u8,
                slots.checked_mul(data_len).ok_or(EINVAL)?,
                crate::params::gfp_user(),
            )?,
            data_len,
            posted: KVVec::from_elem(
                None,
                slots.checked_mul(data_len / uabi::SGE_LEN).ok_or(EINVAL)?,
                crate::params::gfp_user(),
            )?,
        })
    }

    /// Returns the producer index.
    pub(crate) fn producer(&self) -> u32 {
        self.producer.producer()
    }

    /// Takes the consumer index the data path publishes (the slots before it are free).
    pub(crate) fn publish(&mut self, p: Publish) {
        self.consumer = p.value;
    }

    /// Returns the WQE posted in `slot`, its data and its SGEs as posted.
    pub(crate) fn get(&self, slot: &Slot) -> Option<Posted<'_, W>> {
        let i = usize::try_from(slot.index).ok()?;
        let w = (*self.wqes.get(i)?)?;
        let start = i.checked_mul(self.data_len)?;
        let data = self.data.get(start..start.checked_add(self.data_len)?)?;
        let per = self.data_len / uabi::SGE_LEN;
        let start = i.checked_mul(per)?;
        Some((w, data, self.posted.get(start..start.checked_add(per)?)?))
    }

    /// Moves the WQEs `old` holds from `consumer` (the data path's index in it) to its
    /// producer into this new, empty ring of the same data size, in order (a resize under
    /// the queue's lock: no allocation). Returns how many; `EINVAL` if they do not fit,
    /// and then this ring is to be dropped.
    pub(crate) fn take_waiting(&mut self, old: &Self, consumer: u32) -> Result<u32> {
        let geo = old.producer.geometry();
        let n = geo.count(old.producer(), consumer & geo.index_mask());
        if n > self.producer.geometry().capacity() || self.data_len != old.data_len {
            return Err(EINVAL);
        }
        let mut idx = consumer;
        for _ in 0..n {
            let (w, data, posted) = old.get(&geo.slot(idx)).ok_or(EINVAL)?;
            self.push(posted.iter().copied(), |area| {
                area.get_mut(..data.len())
                    .ok_or(EINVAL)?
                    .copy_from_slice(data);
                Ok(w)
            })?;
            idx = geo.next(idx);
        }
        Ok(n)
    }

    /// Appends the WQE `fill` checks after putting its data in the (cleared) data area it
    /// is given, with `posted` (the SGEs the consumer posted with it, those `fill` writes as
    /// its SGE list; none for an inline payload); nothing is posted if `fill` fails or there
    /// are more SGEs than the area holds. `ENOMEM` if the queue is full (as hardware drivers
    /// answer `ib_post_send` on a full queue).
    pub(crate) fn push(
        &mut self,
        posted: impl IntoIterator<Item = Option<Sge>>,
        fill: impl FnOnce(&mut [u8]) -> Result<W>,
    ) -> Result {
        let per = self.data_len / uabi::SGE_LEN;
        let r = self.producer.reserve(self.consumer).map_err(|_| ENOMEM)?;
        let i = usize::try_from(r.slot().index)?;
        let start = i.checked_mul(self.data_len).ok_or(EINVAL)?;
        let area = self
            .data
            .get_mut(start..start.checked_add(self.data_len).ok_or(EINVAL)?)
            .ok_or(EINVAL)?;
        area.fill(0);
        let w = fill(area)?;
        let start = i.checked_mul(per).ok_or(EINVAL)?;
        let kept = self
            .posted
            .get_mut(start..start.checked_add(per).ok_or(EINVAL)?)
            .ok_or(EINVAL)?;
        let mut posted = posted.into_iter();
        kept.iter_mut().for_each(|k| *k = posted.next().flatten());
        if posted.next().is_some() {
            return Err(EINVAL);
        }
        *self.wqes.get_mut(i).ok_or(EINVAL)? = Some(w);
        self.producer.commit(r).map_err(|_| EINVAL)?;
        Ok(())
    }
}

/// A WQE of a [`KernelRing`]: what was checked, its data area, its SGEs as posted.
pub(crate) type Posted<'a, W> = (W, &'a [u8], &'a [Option<Sge>]);

/// A kernel consumer's send and receive queues, kept under the engine lock.
pub(crate) struct KernelQueues {
    pub(super) sq: KernelRing<CheckedSendWqe>,
    pub(super) rq: Option<KernelRing<CheckedRecvWqe>>,
}

/// The data path's copy of a receive WQE (the head it looks at, or the one being filled):
/// the slot's bytes, and what was checked of them; for a kernel consumer's WQE, its SGEs as
/// posted.
pub(crate) struct RecvCopy {
    buf: KVVec<u8>,
    wqe: Option<CheckedRecvWqe>,
    /// Room for as many SGEs as `buf` holds for a kernel consumer's QP, empty for a user's.
    posted: KVVec<Option<Sge>>,
}

impl RecvCopy {
    /// Returns an empty copy for WQEs of `elem` bytes (of a kernel consumer if `kernel`).
    pub(super) fn new(elem: usize, kernel: bool) -> Result<Self> {
        let sges = if kernel {
            elem.saturating_sub(RECV_WQE_DATA_OFFSET) / uabi::SGE_LEN
        } else {
            0
        };
        Ok(Self {
            buf: KVVec::from_elem(0u8, elem, crate::params::gfp_user())?,
            wqe: None,
            posted: KVVec::from_elem(None, sges, crate::params::gfp_user())?,
        })
    }

    /// Returns the checked WQE, if there is one.
    pub(super) fn wqe(&self) -> Option<RecvWqe<'_>> {
        self.wqe?.attach(&self.buf)
    }

    /// Returns the checked WQE's scatter list, with its SGEs as posted.
    pub(super) fn local(&self) -> Option<Local<'_>> {
        Some(Local::new(self.wqe()?.sges(), &self.posted))
    }

    /// Returns the work request id (0 if no WQE was checked into the copy).
    pub(super) fn wr_id(&self) -> u64 {
        self.wqe.map_or(0, |w| w.wr_id())
    }

    /// Copies the user WQE in `slot` of `q` and validates it with `p`; returns its length.
    pub(crate) fn load_user(
        &mut self,
        q: &SharedQueue,
        slot: &Slot,
        p: &RecvQueueParams,
    ) -> Result<u32> {
        self.wqe = None;
        q.read_slot(slot, &mut self.buf)?;
        let w = uabi::validate_recv_wqe(&self.buf, p).map_err(|_| EINVAL)?;
        let length = w.length();
        self.wqe = Some(w.detach());
        Ok(length)
    }

    /// Takes a kernel consumer's checked WQE, its SGE list and its SGEs as posted; returns
    /// its length.
    pub(crate) fn load_kernel(
        &mut self,
        w: CheckedRecvWqe,
        data: &[u8],
        posted: &[Option<Sge>],
    ) -> Result<u32> {
        self.wqe = None;
        let area = self.buf.get_mut(RECV_WQE_DATA_OFFSET..).ok_or(EINVAL)?;
        area.get_mut(..data.len())
            .ok_or(EINVAL)?
            .copy_from_slice(data);
        // Element by element: `copy_from_slice`'s length panic is not a path to keep.
        let kept = self.posted.get_mut(..posted.len()).ok_or(EINVAL)?;
        kept.iter_mut().zip(posted).for_each(|(k, p)| *k = *p);
        self.wqe = Some(w);
        Ok(self.wqe().ok_or(EINVAL)?.length())
    }

    /// Forgets the WQE (it was completed).
    pub(super) fn clear(&mut self) {
        self.wqe = None;
    }
}

impl QpShared {
    /// Returns the send queue's producer index: the one userspace published (untrusted:
    /// `SendQueueState` checks it), or the kernel ring's.
    pub(super) fn sq_producer(&self, e: &Engine) -> Result<u32> {
        match (&self.sq, &e.kq) {
            (Some(q), _) => q.producer_acquire(),
            (None, Some(k)) => Ok(k.sq.producer()),
            (None, None) => Err(EINVAL),
        }
    }

    /// Publishes the send queue's consumer index (the slots before it are free).
    pub(super) fn sq_publish(&self, e: &mut Engine, p: Publish) {
        match (&self.sq, &mut e.kq) {
            (Some(q), _) => {
                let _ = q.publish(p);
            }
            (None, Some(k)) => k.sq.publish(p),
            (None, None) => {}
        }
    }

    /// Returns the work request id of the send WQE posted in `slot`, validated or not (one
    /// that does not validate still completes under its id).
    pub(super) fn sq_wr_id(&self, e: &Engine, slot: &Slot) -> u64 {
        match (&self.sq, &e.kq) {
            (Some(q), _) => {
                let mut hdr = [0u8; 8];
                q.read_prefix(slot, &mut hdr)
                    .map_or(0, |()| uabi::slot_wr_id(&hdr))
            }
            (None, Some(k)) => k.sq.get(slot).map_or(0, |(w, ..)| w.wr_id()),
            (None, None) => 0,
        }
    }

    /// Puts a validated copy of the send WQE posted in `slot` in shadow slot `id`.
    pub(super) fn load_send(
        &self,
        e: &mut Engine,
        slot: &Slot,
        id: u32,
    ) -> core::result::Result<(), WcStatus> {
        match (&self.sq, &e.kq) {
            (Some(q), _) => {
                let copy = e.req.shadow.scratch_for(id).ok_or(WcStatus::LocQpOpErr)?;
                q.read_slot(slot, copy).map_err(|_| WcStatus::LocQpOpErr)?;
                e.req.shadow.check(id, &e.req.params).map(|_| ())
            }
            (None, Some(k)) => {
                let (w, data, posted) = k.sq.get(slot).ok_or(WcStatus::LocQpOpErr)?;
                e.req
                    .shadow
                    .install(id, w, data, posted)
                    .ok_or(WcStatus::LocQpOpErr)
            }
            (None, None) => Err(WcStatus::LocQpOpErr),
        }
    }

    /// Returns the receive queue's producer index (see [`Self::sq_producer`]).
    pub(super) fn rq_producer(&self, e: &Engine) -> Result<u32> {
        match (&self.rq, e.kq.as_ref().and_then(|k| k.rq.as_ref())) {
            (Some(q), _) => q.producer_acquire(),
            (None, Some(k)) => Ok(k.producer()),
            (None, None) => Err(EINVAL),
        }
    }

    /// Publishes the receive queue's consumer index.
    pub(super) fn rq_publish(&self, e: &mut Engine, p: Publish) {
        match (&self.rq, e.kq.as_mut().and_then(|k| k.rq.as_mut())) {
            (Some(q), _) => {
                let _ = q.publish(p);
            }
            (None, Some(k)) => k.publish(p),
            (None, None) => {}
        }
    }

    /// Returns the work request id of the receive WQE posted in `slot` (see
    /// [`Self::sq_wr_id`]).
    pub(super) fn rq_wr_id(&self, e: &Engine, slot: &Slot) -> u64 {
        match (&self.rq, e.kq.as_ref().and_then(|k| k.rq.as_ref())) {
            (Some(q), _) => {
                let mut hdr = [0u8; 8];
                q.read_prefix(slot, &mut hdr)
                    .map_or(0, |()| uabi::slot_wr_id(&hdr))
            }
            (None, Some(k)) => k.get(slot).map_or(0, |(w, ..)| w.wr_id()),
            (None, None) => 0,
        }
    }

    /// Puts a validated copy of the receive WQE posted in `slot` in `e.res.stage`; returns its
    /// length.
    pub(super) fn load_recv(&self, e: &mut Engine, slot: &Slot) -> Result<u32> {
        match (&self.rq, e.kq.as_ref().and_then(|k| k.rq.as_ref())) {
            (Some(q), _) => e.res.stage.load_user(q, slot, &e.res.params),
            (None, Some(k)) => {
                let (w, data, posted) = k.get(slot).ok_or(EINVAL)?;
                e.res.stage.load_kernel(w, data, posted)
            }
            (None, None) => Err(EINVAL),
        }
    }
}

impl QpShared {
    /// Kernel consumers (`ib_post_send`): checks a send work request and queues it, with
    /// its SGEs, or its payload if it is inline.
    pub(crate) fn push_send(&self, wr: &KernelSendWr, sges: &[Sge]) -> Result {
        self.with_engine(|this, e, _| {
            // `from_kernel` refuses an opcode the QP's type does not allow (`EINVAL`: the
            // core points `bad_wr` at the request), as any other malformed request.
            let params = e.req.params;
            let k = e.kq.as_mut().ok_or(EINVAL)?;
            let inline = wr.flags.contains(SendFlags::INLINE);
            // An inline payload is copied now: its SGEs are not kept.
            let posted = sges.iter().filter(|_| !inline).copied().map(Some);
            k.sq.push(posted, |area| {
                let data = if inline {
                    // Copied now: the consumer may reuse its buffers as soon as
                    // `ib_post_send` returns.
                    KernelData::Inline(this.copy_inline(area, sges)?)
                } else {
                    write_sges(area, sges)?;
                    KernelData::Sges(u32::try_from(sges.len())?)
                };
                CheckedSendWqe::from_kernel(wr, data, area, &params).map_err(|_| EINVAL)
            })
        })
    }

    /// Kernel consumers (`ib_post_recv`): checks a receive work request and queues it.
    pub(crate) fn push_recv(&self, wr_id: u64, sges: &[Sge]) -> Result {
        self.with_engine(|this, e, ev| {
            let params = e.res.params;
            let k = e.kq.as_mut().and_then(|k| k.rq.as_mut()).ok_or(EINVAL)?;
            k.push(sges.iter().copied().map(Some), |area| {
                write_sges(area, sges)?;
                let n = u32::try_from(sges.len())?;
                CheckedRecvWqe::from_kernel(wr_id, n, area, &params).map_err(|_| EINVAL)
            })?;
            if e.attrs.state == Some(QpState::Err) {
                this.flush_queues(e, ev);
            }
            Ok(())
        })
    }

    /// Copies the bytes `sges` name (each resolved for a local read, as the data path
    /// would) to the start of `area`; returns how many.
    fn copy_inline(&self, area: &mut [u8], sges: &[Sge]) -> Result<u32> {
        let mut off = 0usize;
        for s in sges {
            let n = usize::try_from(s.length())?;
            let end = off.checked_add(n).ok_or(EINVAL)?;
            let dst = area.get_mut(off..end).ok_or(EINVAL)?;
            self.resolve_posted(
                Key::from_raw(s.lkey()),
                s.addr(),
                s.length(),
                Need::LocalRead,
                Some(s),
            )?
            .read(0, dst)?;
            off = end;
        }
        Ok(u32::try_from(off)?)
    }
}

/// Writes `sges` as an SGE list (the layout of `struct ib_sge` and `struct rxe_sge`) at the
/// start of `area`.
pub(crate) fn write_sges(area: &mut [u8], sges: &[Sge]) -> Result {
    let mut chunks = area.chunks_exact_mut(uabi::SGE_LEN);
    for s in sges {
        let dst = chunks.next().ok_or(EINVAL)?;
        RxeSgeFields {
            addr: s.addr(),
            length: s.length(),
            lkey: s.lkey(),
        }
        .write(dst)
        .map_err(|_| EINVAL)?;
    }
    Ok(())
}
