// SPDX-License-Identifier: GPL-2.0

//! Per-object protocol timers (`struct timer_list`), for transports driven from softirq.
//!
//! A transport's retransmit and RNR timers are re-armed and stopped on nearly every packet,
//! from softirq and from process context with bottom halves disabled, and their callbacks
//! take the same lock the data path holds while it re-arms them. A [`Timer`] fits that use:
//!
//! - [`Timer::arm_after_us`] (`mod_timer`) and [`Timer::stop`] (`timer_delete`) never wait,
//!   so they may be called under the lock the callback takes. A callback that was already
//!   running when the timer was stopped or re-armed still runs to its end: callbacks must
//!   check under their lock whether the expiry is still wanted.
//! - The callback gets a shared reference to the object that embeds the timer
//!   ([`TimerCallback::timer_fired`]); it holds no reference count, so it never drops the
//!   object.
//! - [`Timer::shutdown`] (`timer_shutdown_sync`) waits for a running callback and keeps the
//!   timer from being armed again; dropping the timer does it too. Because fields drop in
//!   declaration order, declare the timers first in the embedding struct, so that no
//!   callback can run while the fields after them are dropped.
//!
//! C header: [`include/linux/timer.h`](srctree/include/linux/timer.h)

use crate::{bindings, prelude::*, sync::LockClassKey, types::Opaque};
use core::marker::PhantomData;

/// The callback of the timer number `ID` embedded in `Self`.
pub trait TimerCallback<const ID: u64 = 0>: Sync + Sized {
    /// Runs when the timer expires.
    ///
    /// # Context
    ///
    /// Softirq (`TIMER_SOFTIRQ`); must not sleep.
    fn timer_fired(this: &Self);
}

/// Implemented by types that embed the [`Timer`] number `ID`; use [`impl_has_timer!`].
///
/// # Safety
///
/// `raw_get_timer` and `timer_container_of` must be inverses: the timer is a field of `Self`.
pub unsafe trait HasTimer<const ID: u64 = 0>: TimerCallback<ID> {
    /// Returns a pointer to the timer field of `*ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a valid `Self`.
    unsafe fn raw_get_timer(ptr: *const Self) -> *const Timer<Self, ID>;

    /// Returns a pointer to the struct containing the timer at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to the timer field of a valid `Self`.
    unsafe fn timer_container_of(ptr: *const Timer<Self, ID>) -> *const Self;
}

/// Declares that a struct embeds a [`Timer`] in a field.
///
/// ```ignore
/// impl_has_timer! {
///     impl HasTimer<0> for Conn { self.rto }
///     impl HasTimer<1> for Conn { self.rnr }
/// }
/// ```
#[macro_export]
macro_rules! impl_has_timer {
    ($(impl HasTimer<$id:tt> for $self:ty { self.$field:ident })*) => {$(
        // SAFETY: The two functions project to the field and back; the field's type is
        // checked by `container_of!`.
        unsafe impl $crate::rdma::timer::HasTimer<$id> for $self {
            #[inline]
            unsafe fn raw_get_timer(
                ptr: *const Self,
            ) -> *const $crate::rdma::timer::Timer<Self, $id> {
                // SAFETY: The caller promises that `ptr` points to a valid `Self`.
                unsafe { ::core::ptr::addr_of!((*ptr).$field) }
            }

            #[inline]
            unsafe fn timer_container_of(
                ptr: *const $crate::rdma::timer::Timer<Self, $id>,
            ) -> *const Self {
                // SAFETY: The caller promises that `ptr` points to the field of a `Self`.
                unsafe { $crate::container_of!(ptr, Self, $field) }
            }
        }
    )*};
}
pub use impl_has_timer;

/// A kernel timer embedded in a `T`, calling [`TimerCallback::timer_fired`] on the `T`.
///
/// # Invariants
///
/// `timer` was set up by `timer_init_key` with [`Self::run`] as its function, and is a field
/// of a pinned `T` (by [`HasTimer`]); it is shut down before it is freed.
#[pin_data(PinnedDrop)]
#[repr(transparent)]
pub struct Timer<T: HasTimer<ID>, const ID: u64 = 0> {
    #[pin]
    timer: Opaque<bindings::timer_list>,
    _t: PhantomData<T>,
}

// SAFETY: The C timer functions synchronise through the timer base's lock; the callback gets
// only `&T`, and `T: Sync` (from `TimerCallback`).
unsafe impl<T: HasTimer<ID>, const ID: u64> Send for Timer<T, ID> {}
// SAFETY: See above.
unsafe impl<T: HasTimer<ID>, const ID: u64> Sync for Timer<T, ID> {}

impl<T: HasTimer<ID>, const ID: u64> Timer<T, ID> {
    /// Returns an initialiser for a stopped timer; `name` and `key` are lockdep's.
    pub fn new(name: &'static CStr, key: Pin<&'static LockClassKey>) -> impl PinInit<Self> {
        pin_init!(Self {
            // INVARIANT: Set up with `run` here; `T: HasTimer` says where it lives.
            timer <- Opaque::ffi_init(move |slot: *mut bindings::timer_list| {
                // SAFETY: `slot` is valid for writes; the name and the key are static.
                unsafe {
                    bindings::timer_init_key(
                        slot,
                        Some(Self::run),
                        0,
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
    /// Called by the timer core with the `timer_list` of a `Timer<T, ID>` embedded in a live
    /// `T` (it is shut down before the `T` is freed).
    unsafe extern "C" fn run(t: *mut bindings::timer_list) {
        let timer = t.cast::<Self>().cast_const();
        // SAFETY: `Self` is `repr(transparent)` over the `timer_list`, which is the field of
        // a live `T`, per the function's contract.
        let this = unsafe { &*T::timer_container_of(timer) };
        T::timer_fired(this);
    }

    /// Arms the timer to fire in `us` microseconds (at least one jiffy), replacing an
    /// earlier expiry. Does nothing after [`Self::shutdown`].
    pub fn arm_after_us(&self, us: u32) {
        // SAFETY: No preconditions.
        let delta = unsafe { bindings::__usecs_to_jiffies(us) }.max(1);
        // SAFETY: `jiffies` is the kernel's tick counter, read with a volatile load as
        // `READ_ONCE` does.
        let now = unsafe { core::ptr::read_volatile(&raw const bindings::jiffies) };
        // SAFETY: By the type invariant the timer is set up; `mod_timer` may be called from
        // any context but hard interrupts, and with the callback's lock held.
        unsafe { bindings::mod_timer(self.timer.get(), now.wrapping_add(delta)) };
    }

    /// Stops the timer if it is pending; a callback already running is not waited for.
    pub fn stop(&self) {
        // SAFETY: By the type invariant the timer is set up; `timer_delete` does not wait.
        unsafe { bindings::timer_delete(self.timer.get()) };
    }

    /// Stops the timer, waits for a running callback and keeps the timer from being armed
    /// again.
    ///
    /// # Context
    ///
    /// Must not be called from the timer's own callback, nor with a lock the callback takes.
    pub fn shutdown(&self) {
        // SAFETY: By the type invariant the timer is set up.
        unsafe { bindings::timer_shutdown_sync(self.timer.get()) };
    }
}

#[pinned_drop]
impl<T: HasTimer<ID>, const ID: u64> PinnedDrop for Timer<T, ID> {
    fn drop(self: Pin<&mut Self>) {
        // INVARIANT: No callback runs after this, so the `T` may go.
        self.shutdown();
    }
}
