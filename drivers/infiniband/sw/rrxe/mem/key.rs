// SPDX-License-Identifier: GPL-2.0

//! Keys and the key table: what an lkey or rkey is ([`Key`]) and the device's table that
//! maps it to a region or window ([`KeyTable`]).
//!
//! A key is `index << 8 | variant`, as in the C driver (interoperating peers do not care,
//! but the random variant byte keeps keys from being guessed from the allocation order
//! alone); the local and remote keys of a region are the same. The table maps the index to
//! the region, so the data path resolves an lkey or rkey without the core's help, and a
//! stale key (same index, another variant) does not match ([`super::MrInner::check`]).

use super::MrInner;
use crate::params;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::rdma::{mr::random_key_byte, BhGuard};
use kernel::sync::{Arc, Mutex};
use kernel::xarray::{AllocKind, XArray};

/// An lkey or rkey: a key table index and a variant byte.
///
/// Any 32-bit value a work request or a packet carries is a key ([`Key::from_raw`]); only
/// the table says whether it names anything.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub(crate) struct Key(u32);

/// The device's `local_dma_lkey`: in a kernel consumer's SGE, a kernel (DMA) address, not
/// a region's key (no region has index 0).
pub(crate) const LOCAL_DMA_LKEY: Key = Key(0);

impl Key {
    /// The key with table index `index` (24 bits) and variant byte `variant`.
    const fn new(index: u32, variant: u8) -> Self {
        Self((index << 8) | variant as u32)
    }

    /// The key a work request or a packet names.
    pub(crate) const fn from_raw(raw: u32) -> Self {
        Self(raw)
    }

    /// The key as a work request, a completion or the wire carries it.
    pub(crate) const fn raw(self) -> u32 {
        self.0
    }

    /// The key's index in the table.
    pub(crate) const fn index(self) -> u32 {
        self.0 >> 8
    }

    /// This key's index with the variant byte of `other` (a bind's or a fast
    /// registration's new key: only the variant changes).
    pub(crate) const fn with_variant_of(self, other: Key) -> Self {
        Self((self.0 & !0xff) | (other.0 & 0xff))
    }
}

/// The device's key table: regions and windows by key index.
///
/// Lookups happen in softirq or with bottom halves disabled, and what is found is only used
/// there: [`KeyTable::remove`] takes an entry out, then waits for an RCU grace period before
/// the entry (and the memory it pins) may be dropped.
#[pin_data]
pub(crate) struct KeyTable {
    /// Regions and windows by key index.
    #[pin]
    entries: XArray<Arc<MrInner>>,
    /// Where the search for a free index starts. Held across the search and the store, so
    /// that an index found free stays free until it is taken, and across a removal.
    #[pin]
    next: Mutex<u32>,
}

impl KeyTable {
    /// An empty table.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            entries <- XArray::new(AllocKind::Alloc),
            next <- new_mutex!(0),
        })
    }

    /// Registers a region or window under a new key: `build` makes it for the key, which
    /// then resolves through the table until [`Self::remove`].
    pub(crate) fn insert(
        &self,
        build: impl FnOnce(Key) -> Result<Arc<MrInner>>,
    ) -> Result<Arc<MrInner>> {
        let mut next = self.next.lock();
        let span = params::MAX_MR_INDEX;
        for _ in 0..span {
            let n = *next % span + 1;
            *next = next.wrapping_add(1);
            let free = {
                let _bh = BhGuard::new();
                // A named guard: a temporary in the block's tail would outlive `_bh`.
                let xa = self.entries.lock();
                xa.get(n as usize).is_none()
            };
            if !free {
                continue;
            }
            let entry = build(Key::new(n, random_key_byte()))?;
            let _bh = BhGuard::new();
            self.entries
                .lock()
                .store(n as usize, entry.clone(), GFP_ATOMIC)?;
            return Ok(entry);
        }
        Err(ENOSPC)
    }

    /// Returns the entry at `key`'s index, whatever its key and state: the caller checks
    /// `key` against it ([`MrInner::check`], or fast registration and invalidation), which
    /// refuses a stale key.
    ///
    /// # Context
    ///
    /// Softirq, or bottom halves disabled; the returned reference must be dropped before
    /// leaving that section (or, in process context, may be dropped later: then it may be
    /// the last one, which unpins memory).
    pub(crate) fn get(&self, key: Key) -> Option<Arc<MrInner>> {
        let xa = self.entries.lock();
        xa.get(key.index() as usize).map(Into::into)
    }

    /// Stops the key index of `entry` from resolving, and frees the index once the data
    /// path can no longer be using the entry.
    pub(crate) fn remove(&self, entry: &MrInner) {
        let old = {
            let _next = self.next.lock();
            let _bh = BhGuard::new();
            let mut xa = self.entries.lock();
            xa.remove(entry.index() as usize)
        };
        // The grace period is waited for outside the allocation lock: registrations and
        // other deregistrations on the device go on meanwhile. The index may be taken again
        // at once (with a fresh variant byte); the old entry stays this function's until it
        // is dropped below.
        if old.is_some() {
            // The data path may still be copying to or from the region on another CPU, in a
            // section with bottom halves disabled: wait for it before unpinning.
            kernel::sync::rcu::synchronize_rcu();
        }
        // Dropping the region unpins memory, which sleeps: outside the BH section.
        drop(old);
    }
}

#[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
#[kunit_tests(rrxe_key)]
mod tests {
    use super::{Key, LOCAL_DMA_LKEY};

    /// A key's index is its upper 24 bits; a new variant keeps the index.
    #[test]
    fn key_index_and_variant() {
        let k = Key::new(0x12_3456, 0x78);
        assert_eq!(k.raw(), 0x1234_5678);
        assert_eq!(k.index(), 0x12_3456);
        let other = Key::from_raw(0xffff_ff9a);
        assert_eq!(k.with_variant_of(other).raw(), 0x1234_569a);
        assert_eq!(LOCAL_DMA_LKEY.index(), 0);
    }
}
