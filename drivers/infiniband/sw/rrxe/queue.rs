// SPDX-License-Identifier: GPL-2.0

//! The rxe shared queue: a ring in memory shared with rdma-core's rxe provider.
//!
//! Layout (`struct rxe_queue_buf` in `include/uapi/rdma/rdma_user_rxe.h`): a 384-byte header
//! with `log2_elem_size` and `index_mask`, the producer index (offset 128) and the consumer
//! index (offset 256), each on its own cache line, then `index_mask + 1` slots of
//! `1 << log2_elem_size` bytes. Indices are free-running modulo `index_mask + 1`.
//!
//! The producer writes a slot, then publishes it with a release store of the producer
//! index; the consumer reads the producer index with acquire, reads the slot, then frees it
//! with a release store of the consumer index. For a completion queue the kernel produces
//! and userspace consumes; whatever userspace writes (its consumer index) is only trusted
//! after masking.

use kernel::prelude::*;
use kernel::rdma::{
    device::{Driver, UContext},
    mmap::SharedBuffer,
};

const LOG2_ELEM_SIZE: usize = 0;
const INDEX_MASK: usize = 4;
const PRODUCER_INDEX: usize = 128;
const CONSUMER_INDEX: usize = 256;
/// Size of the queue header.
const HEADER_SIZE: usize = 384;

/// Size of an mmap info record in a udata response (`struct mminfo`).
pub(crate) const MMINFO_SIZE: usize = 16;

/// Geometry of a queue: slot count and size, both powers of two.
///
/// # Invariants
///
/// `slots` and `1 << log2_elem` are powers of two, `slots >= 2`, and
/// `HEADER_SIZE + slots << log2_elem` does not overflow.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    slots: u32,
    log2_elem: u32,
}

impl Geometry {
    /// The geometry for at least `entries` usable entries of `elem_size` bytes, as the C
    /// driver computes it: one slot stays free, slots and element size are rounded up to
    /// powers of two, elements are at least a cache line (64 bytes).
    pub(crate) fn for_entries(entries: u32, elem_size: usize) -> Result<Self> {
        let slots = entries
            .checked_add(1)
            .and_then(u32::checked_next_power_of_two)
            .ok_or(EINVAL)?;
        let elem = elem_size
            .max(64)
            .checked_next_power_of_two()
            .ok_or(EINVAL)?;
        let log2_elem = elem.trailing_zeros();
        let this = Self {
            slots: slots.max(2),
            log2_elem,
        };
        this.buf_size().ok_or(EINVAL)?;
        Ok(this)
    }

    /// Usable entries (one slot always stays free).
    pub(crate) fn entries(&self) -> u32 {
        self.slots - 1
    }

    fn elem_size(&self) -> usize {
        1 << self.log2_elem
    }

    fn buf_size(&self) -> Option<usize> {
        usize::try_from(self.slots)
            .ok()?
            .checked_mul(self.elem_size())?
            .checked_add(HEADER_SIZE)
    }
}

/// A queue in a shared buffer, written by the kernel (producer side).
pub(crate) struct ProducerQueue {
    buf: SharedBuffer,
    geo: Geometry,
}

impl ProducerQueue {
    /// Allocates a user-mappable queue and returns it with its `struct mminfo` (mmap offset
    /// and size) for the udata response.
    pub(crate) fn new_user<T: Driver>(
        ctx: &UContext<T>,
        geo: Geometry,
    ) -> Result<(Self, [u8; MMINFO_SIZE])> {
        let size = geo.buf_size().ok_or(EINVAL)?;
        let (buf, offset) = SharedBuffer::new_user(ctx, size)?;
        let q = Self::init(buf, geo)?;
        let mut mi = [0u8; MMINFO_SIZE];
        mi[..8].copy_from_slice(&offset.to_le_bytes());
        mi[8..12].copy_from_slice(&u32::try_from(size).map_err(|_| EINVAL)?.to_le_bytes());
        Ok((q, mi))
    }

    /// Allocates a queue for a kernel consumer.
    pub(crate) fn new_kernel(geo: Geometry) -> Result<Self> {
        let size = geo.buf_size().ok_or(EINVAL)?;
        Self::init(SharedBuffer::new(size)?, geo)
    }

    fn init(buf: SharedBuffer, geo: Geometry) -> Result<Self> {
        buf.store_relaxed(LOG2_ELEM_SIZE, geo.log2_elem)?;
        buf.store_relaxed(INDEX_MASK, geo.slots - 1)?;
        Ok(Self { buf, geo })
    }

    /// The geometry.
    pub(crate) fn geometry(&self) -> Geometry {
        self.geo
    }

    fn mask(&self) -> u32 {
        self.geo.slots - 1
    }

    /// Number of entries waiting for the consumer.
    pub(crate) fn count(&self) -> Result<u32> {
        // Our own index: only we write it.
        let prod = self.buf.load_relaxed(PRODUCER_INDEX)?;
        // The consumer's index is untrusted: mask it. Acquire pairs with the consumer's
        // release, so the slots it freed are free.
        let cons = self.buf.load_acquire(CONSUMER_INDEX)? & self.mask();
        Ok(prod.wrapping_sub(cons) & self.mask())
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
        if self.count()? >= self.geo.entries() {
            return Err(ENOSPC);
        }
        let prod = self.buf.load_relaxed(PRODUCER_INDEX)? & self.mask();
        let off = usize::try_from(prod).map_err(|_| EINVAL)? << self.geo.log2_elem;
        self.buf.write(HEADER_SIZE + off, elem)?;
        // Release: the slot's contents are visible before the new index.
        self.buf
            .store_release(PRODUCER_INDEX, (prod + 1) & self.mask())
    }

    /// Moves the waiting entries into `new` (for a resize); fails with `EINVAL` if they do
    /// not fit.
    pub(crate) fn move_into(&self, new: &ProducerQueue) -> Result {
        let count = self.count()?;
        if count > new.geo.entries() {
            return Err(EINVAL);
        }
        let cons = self.buf.load_acquire(CONSUMER_INDEX)? & self.mask();
        let mut elem = [0u8; 256];
        let len = self
            .geo
            .elem_size()
            .min(new.geo.elem_size())
            .min(elem.len());
        for i in 0..count {
            let idx = cons.wrapping_add(i) & self.mask();
            let off = usize::try_from(idx).map_err(|_| EINVAL)? << self.geo.log2_elem;
            self.buf.read(HEADER_SIZE + off, &mut elem[..len])?;
            new.push(&elem[..len])?;
        }
        Ok(())
    }
}

#[kunit_tests(rrxe_queue)]
mod tests {
    use super::*;

    #[test]
    fn geometry_matches_the_c_driver() -> Result {
        // rxe_queue_init: slots = roundup_pow_of_two(n + 1), elements >= 64 bytes.
        let g = Geometry::for_entries(100, 48)?;
        assert_eq!((g.entries(), g.elem_size()), (127, 64));
        let g = Geometry::for_entries(127, 48)?;
        assert_eq!(g.entries(), 127);
        let g = Geometry::for_entries(128, 48)?;
        assert_eq!(g.entries(), 255);
        let g = Geometry::for_entries(0, 200)?;
        assert_eq!((g.entries(), g.elem_size()), (1, 256));
        assert!(Geometry::for_entries(u32::MAX, 48).is_err());
        Ok(())
    }

    #[test]
    fn kernel_queue_fills_and_wraps() -> Result {
        let q = ProducerQueue::new_kernel(Geometry::for_entries(3, 48)?)?;
        for i in 0..3u8 {
            q.push(&[i; 48])?;
        }
        assert_eq!(q.count()?, 3);
        assert_eq!(q.push(&[9; 48]), Err(ENOSPC));
        // Consume two (as userspace would), then the producer wraps around.
        q.buf.store_release(CONSUMER_INDEX, 2)?;
        assert_eq!(q.count()?, 1);
        q.push(&[3; 48])?;
        q.push(&[4; 48])?;
        assert_eq!(q.count()?, 3);
        let mut e = [0u8; 1];
        q.buf.read(HEADER_SIZE, &mut e)?;
        assert_eq!(e[0], 4);
        // A hostile consumer index is masked, never trusted as is.
        q.buf.store_release(CONSUMER_INDEX, 0xffff_fff1)?;
        assert!(q.count()? <= q.geometry().entries());
        Ok(())
    }
}
