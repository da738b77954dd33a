// SPDX-License-Identifier: GPL-2.0

//! A bounded first-in first-out queue whose memory is allocated once, when it is created.
//!
//! The data path must not allocate per packet or per completion (it runs in softirq, where
//! an allocation can only fail), so a queue the data path fills is sized when its owner is
//! created and refuses what does not fit: a kernel consumer's completions (`cq.rs`, sized by
//! the CQ) and a responder's queued replies (`engine/replies.rs`, sized by the READs and
//! atomics a requester may have outstanding).

use kernel::alloc::KVVec;
use kernel::prelude::*;

/// A FIFO of at most `capacity` values of `T`, oldest first.
///
/// # Invariants
///
/// `len <= ring.len()`; `head < ring.len()`, or both are 0; the `len` entries from `head`
/// on (wrapping around) are `Some`, every other entry is `None`.
pub(crate) struct Fifo<T> {
    ring: KVVec<Option<T>>,
    head: usize,
    len: usize,
}

impl<T> Fifo<T> {
    /// Returns an empty FIFO that holds up to `capacity` values, its memory charged to the
    /// caller's memory cgroup (the owner is created on a consumer's behalf).
    pub(crate) fn new(capacity: usize) -> Result<Self> {
        let mut ring = KVVec::with_capacity(capacity, crate::params::gfp_user())?;
        for _ in 0..capacity {
            ring.push(None, crate::params::gfp_user())?;
        }
        Ok(Self {
            ring,
            head: 0,
            len: 0,
        })
    }

    /// Returns how many values are queued.
    #[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Returns whether nothing is queued.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Returns the index in `ring` of the `i`-th queued value.
    fn at(&self, i: usize) -> usize {
        self.head.wrapping_add(i) % self.ring.len().max(1)
    }

    /// Appends `v`, or gives it back if the FIFO is full.
    pub(crate) fn push_back(&mut self, v: T) -> core::result::Result<(), T> {
        if self.len >= self.ring.len() {
            return Err(v);
        }
        let i = self.at(self.len);
        match self.ring.get_mut(i) {
            Some(slot) => {
                *slot = Some(v);
                self.len += 1;
                Ok(())
            }
            None => Err(v),
        }
    }

    /// Takes the oldest value.
    pub(crate) fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.ring.get_mut(self.head)?.take();
        self.head = self.at(1);
        self.len -= 1;
        v
    }

    /// Takes the newest value.
    pub(crate) fn pop_back(&mut self) -> Option<T> {
        let i = self.at(self.len.checked_sub(1)?);
        let v = self.ring.get_mut(i)?.take();
        self.len -= 1;
        v
    }

    /// Returns the oldest value.
    pub(crate) fn front_mut(&mut self) -> Option<&mut T> {
        if self.len == 0 {
            return None;
        }
        self.ring.get_mut(self.head)?.as_mut()
    }

    /// Returns the newest value.
    pub(crate) fn back_mut(&mut self) -> Option<&mut T> {
        let i = self.at(self.len.checked_sub(1)?);
        self.ring.get_mut(i)?.as_mut()
    }

    /// Returns the queued values, oldest first.
    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        let (head, len, n) = (self.head, self.len, self.ring.len());
        let (wrapped, tail) = self.ring.split_at_mut(head.min(n));
        // `Iterator::chain` by path: the prelude's `Init` has a `chain` too.
        Iterator::chain(tail.iter_mut(), wrapped.iter_mut())
            .take(len)
            .filter_map(Option::as_mut)
    }

    /// Drops every queued value.
    pub(crate) fn clear(&mut self) {
        self.ring.iter_mut().for_each(|v| *v = None);
        self.head = 0;
        self.len = 0;
    }
}

#[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
#[kunit_tests(rrxe_fifo)]
mod tests {
    use super::Fifo;
    use kernel::prelude::*;

    #[test]
    fn fifo_is_bounded_ordered_and_wraps() -> Result {
        let mut f = Fifo::new(3)?;
        assert_eq!(f.pop_front(), None);
        assert_eq!(f.back_mut(), None);
        for v in 1..=3u32 {
            assert_eq!(f.push_back(v), Ok(()));
        }
        assert_eq!(f.push_back(4), Err(4));
        assert_eq!(f.pop_front(), Some(1));
        assert_eq!(f.push_back(4), Ok(()));
        if let Some(b) = f.back_mut() {
            *b = 40;
        }
        assert_eq!(f.front_mut().copied(), Some(2));
        let mut seen = KVec::new();
        for v in f.iter_mut() {
            seen.push(*v, GFP_KERNEL)?;
        }
        assert_eq!(*seen, [2, 3, 40]);
        assert_eq!(f.len(), 3);
        assert_eq!(f.pop_back(), Some(40));
        assert_eq!(f.push_back(5), Ok(()));
        assert_eq!(f.back_mut().copied(), Some(5));
        assert_eq!(f.pop_front(), Some(2));
        assert_eq!(f.pop_back(), Some(5));
        assert_eq!(f.pop_back(), Some(3));
        assert_eq!(f.pop_back(), None);
        assert_eq!(f.push_back(6), Ok(()));
        assert_eq!(f.front_mut().copied(), Some(6));
        f.clear();
        assert!(f.is_empty());
        assert_eq!(f.pop_front(), None);
        assert_eq!(f.pop_back(), None);
        let mut empty = Fifo::<u32>::new(0)?;
        assert_eq!(empty.push_back(1), Err(1));
        Ok(())
    }
}
