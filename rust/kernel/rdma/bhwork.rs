// SPDX-License-Identifier: GPL-2.0

//! Work items run in softirq context (`system_bh_wq`), embedded in driver objects.
//!
//! A soft-RoCE driver sometimes must hand a packet to its own receive path, e.g. one sent
//! to a QP on the same device, without running that path inside the sender's locks. A
//! [`BhWork`] queued from the transmit path runs shortly after, in softirq context like the
//! network receive path, on the object that embeds it ([`BhWorkCallback::work_run`]).
//! Queueing never waits and may be done from any context but hard interrupts; the work
//! holds no reference count on the object. Dropping a `BhWork` (or [`BhWork::cancel`])
//! cancels it and waits for a running callback, so declare it before whatever the callback
//! uses in the embedding struct.
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)

use crate::{bindings, prelude::*, sync::LockClassKey, types::Opaque};
use core::marker::PhantomData;

/// The callback of the BH work item embedded in `Self`.
pub trait BhWorkCallback: Sync + Sized {
    /// Runs the work.
    ///
    /// # Context
    ///
    /// Softirq; must not sleep.
    fn work_run(this: &Self);
}

/// Implemented by types that embed a [`BhWork`]; use [`impl_has_bh_work!`].
///
/// # Safety
///
/// `bh_work_container_of` must return the struct whose field the pointer points to.
pub unsafe trait HasBhWork: BhWorkCallback {
    /// Returns a pointer to the struct containing the work item at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to the work field of a valid `Self`.
    unsafe fn bh_work_container_of(ptr: *const BhWork<Self>) -> *const Self;
}

/// Declares that a struct embeds a [`BhWork`] in a field.
#[macro_export]
macro_rules! impl_has_bh_work {
    (impl HasBhWork for $self:ty { self.$field:ident }) => {
        // SAFETY: `container_of!` checks that the field has the right type.
        unsafe impl $crate::rdma::bhwork::HasBhWork for $self {
            #[inline]
            unsafe fn bh_work_container_of(
                ptr: *const $crate::rdma::bhwork::BhWork<Self>,
            ) -> *const Self {
                // SAFETY: The caller promises that `ptr` points to the field of a `Self`.
                unsafe { $crate::container_of!(ptr, Self, $field) }
            }
        }
    };
}
pub use impl_has_bh_work;

/// A work item for `system_bh_wq`, embedded in a `T`.
///
/// # Invariants
///
/// `work` was set up with [`Self::run`] as its function and is a field of a pinned `T`; it
/// is cancelled before it is freed.
#[pin_data(PinnedDrop)]
#[repr(transparent)]
pub struct BhWork<T: HasBhWork> {
    #[pin]
    work: Opaque<bindings::work_struct>,
    _t: PhantomData<T>,
}

// SAFETY: Queueing and cancelling synchronise in the workqueue core; the callback gets
// `&T` and `T: Sync`.
unsafe impl<T: HasBhWork> Send for BhWork<T> {}
// SAFETY: See above.
unsafe impl<T: HasBhWork> Sync for BhWork<T> {}

impl<T: HasBhWork> BhWork<T> {
    /// Returns an initialiser for an idle work item; `name` and `key` are lockdep's.
    pub fn new(name: &'static CStr, key: Pin<&'static LockClassKey>) -> impl PinInit<Self> {
        pin_init!(Self {
            // INVARIANT: Set up with `run`.
            work <- Opaque::ffi_init(move |slot: *mut bindings::work_struct| {
                // SAFETY: `slot` is valid for writes; the name and the key are static.
                unsafe {
                    bindings::init_work_with_key(
                        slot,
                        Some(Self::run),
                        false,
                        name.as_char_ptr(),
                        key.as_ptr(),
                    )
                }
            }),
            _t: PhantomData,
        })
    }

    /// # Safety
    ///
    /// Called by the workqueue with the `work_struct` of a `BhWork<T>` in a live `T` (it is
    /// cancelled before the `T` is freed).
    unsafe extern "C" fn run(w: *mut bindings::work_struct) {
        // SAFETY: `Self` is `repr(transparent)` over the work item, a field of a live `T`.
        let this = unsafe { &*T::bh_work_container_of(w.cast::<Self>().cast_const()) };
        T::work_run(this);
    }

    /// Queues the work unless it is already queued.
    pub fn queue(&self) {
        // SAFETY: By the type invariant the work is set up; `system_bh_wq` is a static
        // workqueue that outlives every module.
        unsafe {
            bindings::queue_work_on(
                bindings::wq_misc_consts_WORK_CPU_UNBOUND as c_int,
                bindings::system_bh_wq,
                self.work.get(),
            )
        };
    }

    /// Cancels the work and waits for a running callback.
    ///
    /// # Context
    ///
    /// Process context; not from the callback itself.
    pub fn cancel(&self) {
        // SAFETY: By the type invariant the work is set up.
        unsafe { bindings::cancel_work_sync(self.work.get()) };
    }
}

#[pinned_drop]
impl<T: HasBhWork> PinnedDrop for BhWork<T> {
    fn drop(self: Pin<&mut Self>) {
        // INVARIANT: Nothing runs after this, so the `T` may go.
        self.cancel();
    }
}
