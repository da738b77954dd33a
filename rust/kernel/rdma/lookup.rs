// SPDX-License-Identifier: GPL-2.0

//! Tables of the objects a receive path finds by number (a packet's destination QP).
//!
//! A lookup ([`LookupTable::get`]) runs in any context but NMI and lends the object for the
//! life of a [`Found`]. Taking an object out ([`LookupTable::remove`]) waits for the
//! borrowers of that object only, and only when it has some, as rdma_rxe's object pool does
//! with a reference count and a completion: the common destroy, with no packet in flight
//! for the object, waits for nothing (no RCU grace period, no scheduler round trip), and
//! the rare one waits for an expedited grace period of the table's own SRCU (no IPI, and no
//! reader of another table or subsystem is waited for).

use super::BhGuard;
use crate::{
    prelude::*,
    sync::{
        atomic::{ordering, Atomic},
        srcu, Arc, Srcu,
    },
    xarray::{AllocKind, XArray},
};

/// An object of a [`LookupTable`] and the number of [`Found`]s that lend it.
struct Slot<T> {
    obj: Arc<T>,
    /// Live [`Found`]s of this slot, each counted under the array's lock (64 bits: it cannot
    /// wrap).
    borrowers: Atomic<u64>,
}

/// Objects found by number from any context, taken out in process context.
///
/// # Invariants
///
/// A slot of `slots` is freed only by [`LookupTable::remove`], after it left `slots` and
/// either its borrower count was seen zero (acquire) after that, or an expedited grace
/// period of `readers` that began after that ended; or by the table's drop (no [`Found`]
/// is alive then: each borrows the table).
#[pin_data]
pub struct LookupTable<T: Send + Sync + 'static> {
    #[pin]
    slots: XArray<KBox<Slot<T>>>,
    /// Every [`Found`] lives inside a read-side section of this.
    #[pin]
    readers: Srcu,
}

/// An object found in a [`LookupTable`], lent until this is dropped.
///
/// # Invariants
///
/// `slot` was in the table when this was made, its borrower count includes this, and
/// `_read` is a read-side section of the table's `readers` that began before.
pub struct Found<'a, T: Send + Sync + 'static> {
    slot: &'a Slot<T>,
    _read: srcu::Guard<'a>,
}

impl<T: Send + Sync + 'static> Drop for Found<'_, T> {
    fn drop(&mut self) {
        // The last use of the slot: once `remove` sees the count at zero it may free it.
        // The read-side section (the field) ends after.
        self.slot.borrowers.fetch_sub(1, ordering::Release);
    }
}

impl<T: Send + Sync + 'static> core::ops::Deref for Found<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.slot.obj
    }
}

impl<T: Send + Sync + 'static> LookupTable<T> {
    /// Creates an empty table.
    pub fn new(
        name: &'static CStr,
        key: Pin<&'static crate::sync::LockClassKey>,
    ) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            slots <- XArray::new(AllocKind::Alloc),
            readers <- Srcu::new(name, key),
        })
    }

    /// Puts `obj` in the table at `index`; fails with `EBUSY` if the index is taken.
    ///
    /// # Context
    ///
    /// Process context (allocates with `GFP_KERNEL`).
    pub fn insert(&self, index: usize, obj: Arc<T>) -> Result {
        let slot = KBox::new(
            Slot {
                obj,
                borrowers: Atomic::new(0),
            },
            GFP_KERNEL,
        )?;
        let _bh = BhGuard::new();
        let mut slots = self.slots.lock();
        if slots.get(index).is_some() {
            return Err(EBUSY);
        }
        // With `GFP_ATOMIC` the array keeps its lock while it allocates: the index is still
        // free.
        match slots.store(index, slot, GFP_ATOMIC) {
            Ok(None) => Ok(()),
            Ok(Some(old)) => {
                // Not reached (see above). The old slot may be lent: leak it, never free it.
                let _ = KBox::leak(old);
                Err(EBUSY)
            }
            Err(e) => Err(e.error),
        }
    }

    /// Returns the object at `index`, lent until the [`Found`] is dropped.
    ///
    /// # Context
    ///
    /// Any but NMI.
    pub fn get(&self, index: usize) -> Option<Found<'_, T>> {
        let read = self.readers.read_lock();
        let slot: *const Slot<T> = {
            // The array's lock is taken in softirq too.
            let _bh = BhGuard::new();
            let slots = self.slots.lock();
            let slot = slots.get(index)?;
            slot.borrowers.fetch_add(1, ordering::Relaxed);
            slot
        };
        // SAFETY: The slot was in the table, and its borrower count was raised under the
        // array's lock. `remove` takes it out under that lock, after: it then sees the count
        // raised until the `Found` below drops and lowers it (release; `remove`'s load is
        // acquire, so every use of the slot through the `Found` comes before the free), or
        // waits for an SRCU grace period that began after the removal, which waits for
        // `read`, begun before. By the type invariant nothing else frees a slot while the
        // table is borrowed. So the slot outlives the `Found`, which borrows the table.
        let slot = unsafe { &*slot };
        // INVARIANT: Counted above, under a section begun before.
        Some(Found { slot, _read: read })
    }

    /// Takes the object at `index` out of the table and returns it once no [`Found`] lends
    /// it: at once if none did when it was taken out, otherwise after an expedited SRCU grace
    /// period of this table.
    ///
    /// # Context
    ///
    /// Process context (it may sleep), outside any [`Found`] of this table (it would wait
    /// for itself).
    pub fn remove(&self, index: usize) -> Option<Arc<T>> {
        let slot = {
            let _bh = BhGuard::new();
            let mut slots = self.slots.lock();
            slots.remove(index)
        }?;
        if slot.borrowers.load(ordering::Acquire) != 0 {
            self.readers.synchronize_expedited();
        }
        // INVARIANT: The slot left the table and its count was seen zero after, or a grace
        // period begun after ended.
        let Slot { obj, .. } = KBox::into_inner(slot);
        Some(obj)
    }
}
