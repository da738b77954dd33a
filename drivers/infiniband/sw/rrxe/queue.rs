// SPDX-License-Identifier: GPL-2.0

//! The rxe shared queue in kernel memory: a ring that rdma-core's rxe provider maps.
//!
//! The layout, geometry and index arithmetic are the wire core's
//! ([`crate::proto::uabi`]); this file puts them on a [`SharedBuffer`]. The producer writes
//! a slot, then publishes it with a release store of the producer index; the consumer reads
//! the producer index with acquire, reads the slot, then frees it with a release store of the
//! consumer index. For a completion queue the kernel produces and userspace consumes: the
//! consumer index userspace writes is only used masked.

use crate::proto::uabi::{
    KernelProducer, MmInfoFields, Publish, QueueGeometry, ResizePlan, Slot, CONSUMER_INDEX_OFFSET,
    INDEX_MASK_OFFSET, LOG2_ELEM_SIZE_OFFSET, PRODUCER_INDEX_OFFSET,
};
use kernel::page::PAGE_SIZE;
use kernel::prelude::*;
use kernel::rdma::{
    device::{Driver, UContext},
    mmap::SharedBuffer,
};

/// Size of a `struct mminfo` in a udata response.
pub(crate) const MMINFO_SIZE: usize = 16;

/// A queue in a shared buffer. The kernel produces into completion queues and consumes
/// send and receive queues.
pub(crate) struct SharedQueue {
    buf: SharedBuffer,
    geo: QueueGeometry,
}

impl SharedQueue {
    /// Allocates a user-mappable queue and returns it with its `struct mminfo` (mmap offset
    /// and size) for the udata response.
    pub(crate) fn new_user<T: Driver>(
        ctx: &UContext<T>,
        geo: QueueGeometry,
    ) -> Result<(Self, [u8; MMINFO_SIZE])> {
        let (q, mi) = Self::new_user_mi(ctx, geo)?;
        let mut bytes = [0u8; MMINFO_SIZE];
        mi.write(&mut bytes).map_err(|_| EINVAL)?;
        Ok((q, bytes))
    }

    /// Like [`Self::new_user`], with the `struct mminfo` as fields.
    pub(crate) fn new_user_mi<T: Driver>(
        ctx: &UContext<T>,
        geo: QueueGeometry,
    ) -> Result<(Self, MmInfoFields)> {
        let size = geo.mmap_len(PAGE_SIZE).ok_or(EINVAL)?;
        let (buf, offset) = SharedBuffer::new_user(ctx, usize::try_from(size)?)?;
        let q = Self::init(buf, geo)?;
        Ok((
            q,
            MmInfoFields {
                offset,
                size,
                pad: 0,
            },
        ))
    }

    /// Allocates a queue that is not mapped to userspace (the queue tests).
    #[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
    pub(crate) fn new_kernel(geo: QueueGeometry) -> Result<Self> {
        Self::init(SharedBuffer::new(geo.buf_len())?, geo)
    }

    fn init(buf: SharedBuffer, geo: QueueGeometry) -> Result<Self> {
        buf.store_relaxed(LOG2_ELEM_SIZE_OFFSET, geo.log2_elem_size())?;
        buf.store_relaxed(INDEX_MASK_OFFSET, geo.index_mask())?;
        Ok(Self { buf, geo })
    }

    /// Returns the queue's geometry.
    pub(crate) fn geometry(&self) -> QueueGeometry {
        self.geo
    }

    /// Consumer side: loads the producer index userspace publishes, with acquire ordering
    /// (the slots it covers are written). The value is untrusted: check it with the kernel
    /// index state before use.
    pub(crate) fn producer_acquire(&self) -> Result<u32> {
        self.buf.load_acquire(PRODUCER_INDEX_OFFSET)
    }

    /// Consumer side: copies a slot out of the shared buffer (userspace may change it at any
    /// time: only the copy is validated and used).
    pub(crate) fn read_slot(&self, slot: &Slot, out: &mut [u8]) -> Result {
        let out = out.get_mut(..slot.len).ok_or(EINVAL)?;
        self.buf.read(slot.offset, out)
    }

    /// Consumer side: copies the first `out.len()` bytes of a slot (at most the slot).
    pub(crate) fn read_prefix(&self, slot: &Slot, out: &mut [u8]) -> Result {
        if out.len() > slot.len {
            return Err(EINVAL);
        }
        self.buf.read(slot.offset, out)
    }

    /// Consumer side: publishes the kernel's index with release ordering.
    pub(crate) fn publish(&self, p: Publish) -> Result {
        self.buf.store_release(p.offset(), p.value)
    }

    /// Producer side: appends `elem` (at most one slot) at `producer`'s index and publishes
    /// it; `Err(ENOSPC)` if the queue is full (or the consumer index is impossible),
    /// `Err(EINVAL)` if `elem` is larger than a slot.
    pub(crate) fn produce(&self, producer: &mut KernelProducer, elem: &[u8]) -> Result {
        if elem.len() > self.geo.elem_size() || producer.geometry() != self.geo {
            return Err(EINVAL);
        }
        let r = producer
            .reserve(self.consumer_acquire()?)
            .map_err(|_| ENOSPC)?;
        self.buf.write(r.slot().offset, elem)?;
        let p = producer.commit(r).map_err(|_| EINVAL)?;
        // Release: the slot's contents are visible before the new index.
        self.publish(p)
    }

    /// Producer side: loads the consumer index with acquire ordering (the slots it freed
    /// are free). Untrusted for a user queue: [`KernelProducer`] checks it.
    fn consumer_acquire(&self) -> Result<u32> {
        self.buf.load_acquire(CONSUMER_INDEX_OFFSET)
    }
}

/// A queue the kernel produces into: a user CQ. The producer index is the kernel's own
/// ([`KernelProducer`]); the copy in the shared buffer is only ever written (published),
/// never read back, since userspace can rewrite it.
pub(crate) struct ProducedQueue {
    queue: SharedQueue,
    producer: KernelProducer,
}

impl ProducedQueue {
    /// Starts producing into the empty, newly created `queue`.
    pub(crate) fn new(queue: SharedQueue) -> Self {
        let producer = KernelProducer::new(queue.geo);
        Self { queue, producer }
    }

    /// Number of entries waiting for the consumer, as its index claims.
    pub(crate) fn count(&self) -> Result<u32> {
        self.producer
            .count(self.queue.consumer_acquire()?)
            .map_err(|_| EINVAL)
    }

    /// Appends `elem` (at most one slot) and publishes it; `Err(ENOSPC)` if the queue is full
    /// (or the consumer index is impossible), `Err(EINVAL)` if `elem` is larger than a slot.
    pub(crate) fn push(&mut self, elem: &[u8]) -> Result {
        self.queue.produce(&mut self.producer, elem)
    }

    /// Moves the waiting entries into `new` (a resize, as `resize_finish()`) and returns the
    /// queue to produce into from now on. If they do not fit (or the consumer index is
    /// impossible), `new` comes back unused, for the caller to drop (dropping a queue never
    /// sleeps; its mmap entry is removed by the verb's trampoline).
    pub(crate) fn resize_into(&self, new: SharedQueue) -> core::result::Result<Self, SharedQueue> {
        match self.move_entries(&new) {
            Ok(producer) => Ok(Self {
                producer: KernelProducer::with_index(new.geo, producer),
                queue: new,
            }),
            Err(_) => Err(new),
        }
    }

    /// Copies the waiting entries into `new` and publishes its indices; returns its producer
    /// index.
    fn move_entries(&self, new: &SharedQueue) -> Result<u32> {
        let consumer = self.queue.consumer_acquire()?;
        move_waiting(&self.queue, new, self.producer.producer(), consumer).map(|(p, _)| p)
    }
}

/// Copies the entries waiting in `old` (`[consumer, producer)`, the indices as the caller
/// holds them under the queue's locks) to the start of `new`, and publishes `new`'s indices
/// (a resize, as rxe's `resize_finish()`). Returns `new`'s producer and consumer indices;
/// `EINVAL` if the indices are impossible or the entries do not fit.
pub(crate) fn move_waiting(
    old: &SharedQueue,
    new: &SharedQueue,
    producer: u32,
    consumer: u32,
) -> Result<(u32, u32)> {
    let plan = ResizePlan::new(old.geo, new.geo, producer, consumer).map_err(|_| EINVAL)?;
    let mut chunk = [0u8; COPY_CHUNK];
    for (from, to) in plan.copies() {
        let mut done = 0;
        while done < plan.copy_len() {
            let n = plan.copy_len().saturating_sub(done).min(COPY_CHUNK);
            let buf = chunk.get_mut(..n).ok_or(EINVAL)?;
            old.buf
                .read(from.offset.checked_add(done).ok_or(EINVAL)?, buf)?;
            new.buf
                .write(to.offset.checked_add(done).ok_or(EINVAL)?, buf)?;
            done = done.saturating_add(n);
        }
    }
    new.buf
        .store_relaxed(CONSUMER_INDEX_OFFSET, plan.new_consumer())?;
    new.buf
        .store_release(PRODUCER_INDEX_OFFSET, plan.new_producer())?;
    Ok((plan.new_producer(), plan.new_consumer()))
}

/// Bytes a resize copies at a time (slots are copied in pieces of this size, on the stack).
const COPY_CHUNK: usize = 128;

#[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
#[kunit_tests(rrxe_queue)]
mod tests {
    use super::*;
    use crate::proto::uabi::{CACHE_LINE_SIZE, QUEUE_DATA_OFFSET};

    #[test]
    fn kernel_queue_fills_and_wraps() -> Result {
        let geo = QueueGeometry::new(3, 48, CACHE_LINE_SIZE).map_err(|_| EINVAL)?;
        let mut q = ProducedQueue::new(SharedQueue::new_kernel(geo)?);
        for i in 0..3u8 {
            q.push(&[i; 48])?;
        }
        assert_eq!(q.count()?, 3);
        assert_eq!(q.push(&[9; 48]), Err(ENOSPC));
        // Consume two (as userspace would), then the producer wraps around.
        q.queue.buf.store_release(CONSUMER_INDEX_OFFSET, 2)?;
        assert_eq!(q.count()?, 1);
        q.push(&[3; 48])?;
        q.push(&[4; 48])?;
        assert_eq!(q.count()?, 3);
        let mut e = [0u8; 1];
        q.queue.buf.read(QUEUE_DATA_OFFSET, &mut e)?;
        assert_eq!(e, [4]);
        // The producer index in the buffer is only published, never read back: a consumer
        // that rewrites it does not move the kernel's.
        q.queue.buf.store_release(PRODUCER_INDEX_OFFSET, 0)?;
        q.queue.buf.store_release(CONSUMER_INDEX_OFFSET, 0)?;
        q.push(&[5; 48])?;
        q.queue.buf.read(QUEUE_DATA_OFFSET + 64, &mut e)?;
        assert_eq!(e, [5]);
        // A hostile consumer index is refused, never trusted as is.
        q.queue
            .buf
            .store_release(CONSUMER_INDEX_OFFSET, 0xffff_fff1)?;
        assert_eq!(q.count(), Err(EINVAL));
        assert_eq!(q.push(&[0; 48]), Err(ENOSPC));
        assert_eq!(q.push(&[0; 65]), Err(EINVAL));
        Ok(())
    }

    #[test]
    fn resize_keeps_the_waiting_entries_in_order() -> Result {
        let geo = QueueGeometry::new(3, 48, CACHE_LINE_SIZE).map_err(|_| EINVAL)?;
        let mut q = ProducedQueue::new(SharedQueue::new_kernel(geo)?);
        for i in 0..3u8 {
            q.push(&[i; 48])?;
        }
        q.queue.buf.store_release(CONSUMER_INDEX_OFFSET, 1)?;
        q.push(&[3; 48])?;
        let small = QueueGeometry::new(1, 48, CACHE_LINE_SIZE).map_err(|_| EINVAL)?;
        assert!(q.resize_into(SharedQueue::new_kernel(small)?).is_err());
        let big = QueueGeometry::new(7, 48, CACHE_LINE_SIZE).map_err(|_| EINVAL)?;
        let mut r = q
            .resize_into(SharedQueue::new_kernel(big)?)
            .map_err(|_| EINVAL)?;
        assert_eq!(r.count()?, 3);
        let mut e = [0u8; 1];
        for (i, want) in [1u8, 2, 3].into_iter().enumerate() {
            r.queue.buf.read(QUEUE_DATA_OFFSET + 64 * i, &mut e)?;
            assert_eq!(e, [want]);
        }
        r.push(&[4; 48])?;
        assert_eq!(r.count()?, 4);
        Ok(())
    }
}
