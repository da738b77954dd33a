// SPDX-License-Identifier: GPL-2.0

//! Counted uses of RDMA core objects (`usecnt`).
//!
//! The core refuses to destroy a CQ or an SRQ whose use count is not zero (`ib_destroy_cq`,
//! `ib_destroy_srq` fail with `EBUSY`), so a [`UseRef`] lets a driver's data path (which may
//! outlive the verb that gave it the object, e.g. a packet in flight on another CPU) reach
//! the object safely: it takes one count and returns it on drop.
//!
//! The count only protects the object if it is taken before the core checks it. The core
//! checks it once, in `ib_destroy_cq_user()` and `ib_destroy_srq_user()` (`verbs.c`:
//! `if (atomic_read(&cq->usecnt)) return -EBUSY;`), and then calls the driver's destroy
//! operation and frees the object when it returns. A count taken inside that operation would
//! be returned to freed memory, so the destroy operations get a [`Dying`] object, which gives
//! the driver its data but no reference from which a [`UseRef`] could be made.

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

/// An object that the core is destroying: its use count was found zero and the object is
/// freed as soon as the driver's destroy operation returns.
///
/// It gives the destroy operation what it needs (per object type: its driver data, its
/// device) but never a `&O`, so no [`UseRef`] can be taken on it:
///
/// ```compile_fail
/// # use kernel::rdma::{cq::Cq, usecnt::{Dying, UseRef}, device::Driver};
/// fn destroy<T: Driver>(cq: &Dying<'_, Cq<T>>) -> UseRef<Cq<T>> {
///     UseRef::new(cq) // error[E0308]: mismatched types
/// }
/// ```
///
/// # Invariants
///
/// `obj` is live for `'a`, and the core destroys it when the operation that was given this
/// value returns successfully.
pub struct Dying<'a, O> {
    pub(crate) obj: &'a O,
}

impl<'a, O> Dying<'a, O> {
    /// Wraps an object passed to a destroy operation.
    ///
    /// # Safety
    ///
    /// `obj` is the object of a destroy operation, after the core checked its use count.
    pub(crate) unsafe fn new(obj: &'a O) -> Self {
        // INVARIANT: Per the function's contract.
        Self { obj }
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
