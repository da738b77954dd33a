// SPDX-License-Identifier: GPL-2.0

//! Work items run in softirq context (`system_bh_wq`), or in process context
//! (`system_unbound_wq`) for work that must sleep, embedded in driver objects.
//!
//! A soft-RoCE driver sometimes must hand a packet to its own receive path, e.g. one sent
//! to a QP on the same device, without running that path inside the sender's locks. A
//! [`BhWork`] queued from the transmit path runs shortly after, in softirq context like the
//! network receive path, on the object that embeds it ([`BhWorkCallback::work_run`]); a
//! sleepable one runs in process context ([`SleepableWorkCallback::work_run`], with a
//! [`MaySleep`]).
//! Queueing never waits and may be done from any context but hard interrupts; the work
//! holds no reference count on the object. [`BhWork::cancel`] cancels it and waits for a
//! running callback. The embedding type declares it with
//! [`impl_deferred!`](crate::impl_deferred), which cancels it before any field of the type
//! is dropped; it is queued through its owner ([`BhWork::queue`] takes it).
//!
//! C header: [`include/linux/workqueue.h`](srctree/include/linux/workqueue.h)

use super::MaySleep;
use crate::{bindings, prelude::*, sync::LockClassKey, types::Opaque};
use core::marker::PhantomData;

/// The callback of the BH work item embedded in `Self` (declared `work` in
/// [`impl_deferred!`](crate::impl_deferred)).
pub trait BhWorkCallback: Sync + Sized {
    /// Runs the work.
    ///
    /// # Context
    ///
    /// Softirq; must not sleep.
    fn work_run(this: &Self);
}

/// The callback of the process-context work item embedded in `Self` (declared `sleepable
/// work` in [`impl_deferred!`](crate::impl_deferred)).
pub trait SleepableWorkCallback: Sync + Sized {
    /// Runs the work, in process context (`system_unbound_wq`), where it may sleep: `ctx`
    /// proves it to the calls that do.
    fn work_run(this: &Self, ctx: &MaySleep<'_>);
}

/// Implemented by types that embed a [`BhWork`]; use [`impl_deferred!`](crate::impl_deferred).
///
/// # Safety
///
/// `raw_get_work` and `bh_work_container_of` must be inverses: the work item is a field of
/// `Self`. The work must be cancelled before any field of `Self` is dropped.
pub unsafe trait HasBhWork: Sync + Sized {
    /// The work runs in process context (`system_unbound_wq`) rather than in softirq
    /// (`system_bh_wq`): work that must sleep, such as resolving page faults.
    const SLEEPABLE: bool;

    /// Runs the callback: [`BhWorkCallback::work_run`], or for sleepable work
    /// [`SleepableWorkCallback::work_run`] with `ctx` (which it needs: without one it does
    /// nothing).
    fn dispatch(this: &Self, ctx: Option<&MaySleep<'_>>);

    /// Returns a pointer to the work field of `*ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a valid `Self`.
    unsafe fn raw_get_work(ptr: *const Self) -> *const BhWork<Self>;

    /// Returns a pointer to the struct containing the work item at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to the work field of a valid `Self`.
    unsafe fn bh_work_container_of(ptr: *const BhWork<Self>) -> *const Self;
}

/// A work item for `system_bh_wq`, embedded in a `T`.
///
/// # Invariants
///
/// `work` was set up with `Self::run` as its function. It is only queued while it is the
/// field of a pinned `T` that [`HasBhWork`] names, and such a `T` cancels it before any of its
/// fields is dropped.
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
    /// Called by the workqueue with the `work_struct` of a `BhWork<T>` that was queued, so (by
    /// the type invariant) embedded in a live `T`, which cancels it before it drops.
    unsafe extern "C" fn run(w: *mut bindings::work_struct) {
        // SAFETY: `Self` is `repr(transparent)` over the work item, a field of a live `T`.
        let this = unsafe { &*T::bh_work_container_of(w.cast::<Self>().cast_const()) };
        if T::SLEEPABLE {
            // SAFETY: Sleepable work runs on `system_unbound_wq` (`queue`), in process
            // context; the token is lent for the call.
            let ctx = unsafe { MaySleep::new() };
            T::dispatch(this, Some(&ctx));
        } else {
            T::dispatch(this, None);
        }
    }

    /// Queues the work of `owner` unless it is already queued; does nothing if this work item
    /// is not `owner`'s.
    pub fn queue(&self, owner: &T) {
        // SAFETY: `owner` is a valid `T`.
        if !core::ptr::eq(unsafe { T::raw_get_work(owner) }, self) {
            return;
        }
        // SAFETY: The system workqueues are set up at boot and never change.
        let wq = unsafe {
            if T::SLEEPABLE {
                bindings::system_unbound_wq
            } else {
                bindings::system_bh_wq
            }
        };
        // INVARIANT: Queued as the field of `owner`, which cancels it before it drops.
        // SAFETY: By the type invariant the work is set up; the system workqueues are static
        // and outlive every module.
        unsafe {
            bindings::queue_work_on(
                bindings::wq_misc_consts_WORK_CPU_UNBOUND as c_int,
                wq,
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
        // Its owner cancelled it already; this keeps a stray work item (never queued) from
        // being freed while the workqueue could list it.
        self.cancel();
    }
}
