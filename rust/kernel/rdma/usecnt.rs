// SPDX-License-Identifier: GPL-2.0

//! Counted uses of RDMA core objects (`usecnt`).
//!
//! The core refuses to destroy a CQ or an SRQ whose use count is not zero (`ib_destroy_cq`,
//! `ib_destroy_srq` fail with `EBUSY`), so a [`UseRef`] lets a driver's data path (which may
//! outlive the verb that gave it the object, e.g. a packet in flight on another CPU) reach
//! the object safely: it takes one count and returns it on drop.

use crate::bindings;
use core::{ops::Deref, ptr::NonNull};

/// An RDMA core object with a use count.
///
/// # Safety
///
/// [`UseCounted::usecnt`] returns the `usecnt` of the live core object, and the core does not
/// free the object while that count is not zero. The object may be used through `&self` from
/// any thread (its driver data is `Sync`; the core object is only reached through methods
/// that are safe to call concurrently).
pub unsafe trait UseCounted {
    /// Returns the object's use count.
    fn usecnt(&self) -> *mut bindings::atomic_t;
}

/// A counted use of an object, which keeps the core from destroying it.
///
/// # Invariants
///
/// `obj` points to a live object on which this value holds one use count.
pub struct UseRef<O: UseCounted> {
    obj: NonNull<O>,
}

// SAFETY: The object may be used from any thread (safety contract of `UseCounted`), and the
// count may be returned from any thread.
unsafe impl<O: UseCounted> Send for UseRef<O> {}
// SAFETY: See above.
unsafe impl<O: UseCounted> Sync for UseRef<O> {}

impl<O: UseCounted> UseRef<O> {
    /// Takes a use count on `obj`.
    pub fn new(obj: &O) -> Self {
        // SAFETY: `obj` is live; its use count is an atomic of the core object.
        unsafe { bindings::atomic_inc(obj.usecnt()) };
        // INVARIANT: The count was taken above.
        Self {
            obj: NonNull::from(obj),
        }
    }
}

impl<O: UseCounted> Deref for UseRef<O> {
    type Target = O;

    fn deref(&self) -> &O {
        // SAFETY: By the type invariant the object lives while the count is held.
        unsafe { self.obj.as_ref() }
    }
}

impl<O: UseCounted> Drop for UseRef<O> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we hold one count on a live object.
        unsafe { bindings::atomic_dec(self.obj.as_ref().usecnt()) };
    }
}
