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
    MmInfoFields, Publish, QueueGeometry, Slot, CONSUMER_INDEX_OFFSET, INDEX_MASK_OFFSET,
    LOG2_ELEM_SIZE_OFFSET, PRODUCER_INDEX_OFFSET, QUEUE_DATA_OFFSET,
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

    /// Allocates a queue for a kernel consumer.
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

    /// Number of entries waiting for the consumer.
    pub(crate) fn count(&self) -> Result<u32> {
        // Our own index (only we write it, but it lives in user-writable memory: masked).
        let prod = self.buf.load_relaxed(PRODUCER_INDEX_OFFSET)?;
        // Acquire pairs with the consumer's release: the slots it freed are free.
        let cons = self.buf.load_acquire(CONSUMER_INDEX_OFFSET)?;
        Ok(self.geo.count(prod, cons))
    }

    /// Returns whether no entry is waiting.
    pub(crate) fn is_empty(&self) -> Result<bool> {
        Ok(self.count()? == 0)
    }

    /// Appends `elem` (at most one slot) and publishes it; `Err(ENOSPC)` if the queue is full.
    pub(crate) fn push(&self, elem: &[u8]) -> Result {
        if elem.len() > self.geo.elem_size() {
            return Err(EINVAL);
        }
        if self.count()? >= self.geo.capacity() {
            return Err(ENOSPC);
        }
        let prod = self.buf.load_relaxed(PRODUCER_INDEX_OFFSET)? & self.geo.index_mask();
        self.buf.write(self.slot_offset(prod)?, elem)?;
        // Release: the slot's contents are visible before the new index.
        self.buf
            .store_release(PRODUCER_INDEX_OFFSET, self.geo.next(prod))
    }

    fn slot_offset(&self, index: u32) -> Result<usize> {
        let i = usize::try_from(index & self.geo.index_mask())?;
        i.checked_mul(self.geo.elem_size())
            .and_then(|o| o.checked_add(QUEUE_DATA_OFFSET))
            .ok_or(EINVAL)
    }

    /// Kernel consumer of a kernel-produced queue (a kernel consumer's CQ): copies the oldest
    /// entry into `out` (at most one slot) and frees its slot; `Ok(false)` if the queue is
    /// empty.
    pub(crate) fn pop(&self, out: &mut [u8]) -> Result<bool> {
        if self.count()? == 0 {
            return Ok(false);
        }
        let cons = self.buf.load_relaxed(CONSUMER_INDEX_OFFSET)? & self.geo.index_mask();
        let len = out.len().min(self.geo.elem_size());
        self.buf
            .read(self.slot_offset(cons)?, out.get_mut(..len).ok_or(EINVAL)?)?;
        self.buf
            .store_release(CONSUMER_INDEX_OFFSET, self.geo.next(cons))?;
        Ok(true)
    }

    /// Moves the waiting entries into `new` (for a resize); fails with `EINVAL` if they do
    /// not fit.
    pub(crate) fn move_into(&self, new: &SharedQueue) -> Result {
        let count = self.count()?;
        if count > new.geo.capacity() {
            return Err(EINVAL);
        }
        let cons = self.buf.load_acquire(CONSUMER_INDEX_OFFSET)?;
        let mut elem = [0u8; 256];
        let len = self
            .geo
            .elem_size()
            .min(new.geo.elem_size())
            .min(elem.len());
        let elem = elem.get_mut(..len).ok_or(EINVAL)?;
        for i in 0..count {
            self.buf
                .read(self.slot_offset(cons.wrapping_add(i))?, elem)?;
            new.push(elem)?;
        }
        Ok(())
    }
}

#[kunit_tests(rrxe_queue)]
mod tests {
    #![allow(
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic,
        clippy::unreachable,
        clippy::unwrap_used
    )]

    use super::*;
    use crate::proto::uabi::CACHE_LINE_SIZE;

    #[test]
    fn kernel_queue_fills_and_wraps() -> Result {
        let geo = QueueGeometry::new(3, 48, CACHE_LINE_SIZE).map_err(|_| EINVAL)?;
        let q = SharedQueue::new_kernel(geo)?;
        for i in 0..3u8 {
            q.push(&[i; 48])?;
        }
        assert_eq!(q.count()?, 3);
        assert_eq!(q.push(&[9; 48]), Err(ENOSPC));
        // Consume two (as userspace would), then the producer wraps around.
        q.buf.store_release(CONSUMER_INDEX_OFFSET, 2)?;
        assert_eq!(q.count()?, 1);
        q.push(&[3; 48])?;
        q.push(&[4; 48])?;
        assert_eq!(q.count()?, 3);
        let mut e = [0u8; 1];
        q.buf.read(QUEUE_DATA_OFFSET, &mut e)?;
        assert_eq!(e[0], 4);
        // A hostile consumer index is masked, never trusted as is.
        q.buf.store_release(CONSUMER_INDEX_OFFSET, 0xffff_fff1)?;
        assert!(q.count()? <= geo.capacity());
        assert_eq!(q.push(&[0; 65]), Err(EINVAL));
        Ok(())
    }
}
