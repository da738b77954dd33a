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
//!   timer from being armed again.
//!
//! A type declares its timers (and its BH work) with [`impl_deferred!`](crate::impl_deferred),
//! the only way to implement [`HasTimer`] without `unsafe`. The macro also gives the type a
//! `PinnedDrop` that shuts every timer down and cancels the work *before any field is
//! dropped*, whatever the order of the fields, so that no callback sees a half-dropped
//! object; the type must be `#[pin_data(PinnedDrop)]` (pin-init refuses to compile a
//! `PinnedDrop` the struct does not declare). A timer is armed through its owner
//! ([`Timer::arm_after_us`] takes it): a `Timer<T>` that is not the field of a `T` that
//! [`HasTimer`] names never fires.
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

/// Implemented by types that embed the [`Timer`] number `ID`; use
/// [`impl_deferred!`](crate::impl_deferred).
///
/// # Safety
///
/// `raw_get_timer` and `timer_container_of` must be inverses: the timer is a field of `Self`.
/// Every timer of `Self` must be shut down before any field of `Self` is dropped (the
/// `PinnedDrop` that `impl_deferred!` writes).
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

/// A kernel timer embedded in a `T`, calling [`TimerCallback::timer_fired`] on the `T`.
///
/// # Invariants
///
/// `timer` was set up by `timer_init_key` with `Self::run` as its function. It is only
/// armed while it is the field of a pinned `T` that [`HasTimer`] names, and such a `T` shuts
/// it down before any of its fields is dropped.
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
    /// Called by the timer core with the `timer_list` of a `Timer<T, ID>` that was armed, so
    /// (by the type invariant) embedded in a live `T`, which shuts it down before it drops.
    unsafe extern "C" fn run(t: *mut bindings::timer_list) {
        let timer = t.cast::<Self>().cast_const();
        // SAFETY: `Self` is `repr(transparent)` over the `timer_list`, which is the field of
        // a live `T`, per the function's contract.
        let this = unsafe { &*T::timer_container_of(timer) };
        T::timer_fired(this);
    }

    /// Arms the timer of `owner` to fire in `us` microseconds (at least one jiffy),
    /// replacing an earlier expiry. Does nothing after [`Self::shutdown`], nor if this timer
    /// is not `owner`'s.
    pub fn arm_after_us(&self, owner: &T, us: u32) {
        // SAFETY: `owner` is a valid `T`.
        if !core::ptr::eq(unsafe { T::raw_get_timer(owner) }, self) {
            return;
        }
        // SAFETY: No preconditions.
        let delta = unsafe { bindings::__usecs_to_jiffies(us) }.max(1);
        // SAFETY: `jiffies` is the kernel's tick counter, read with a volatile load as
        // `READ_ONCE` does.
        let now = unsafe { core::ptr::read_volatile(&raw const bindings::jiffies) };
        // INVARIANT: Armed as the field of `owner`, which shuts it down before it drops.
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
        // Its owner shut it down already; a timer never armed has nothing to wait for. This
        // keeps a stray timer (never armed) from being freed while the timer core lists it.
        self.shutdown();
    }
}

/// Declares the timers and the BH work a type embeds, and shuts them down when it drops.
///
/// Implements [`HasTimer`] for each `timer ID => field;` and
/// [`HasBhWork`](crate::rdma::bhwork::HasBhWork) for `work field;`, and a `PinnedDrop` that
/// shuts every timer down and cancels the work before any field is dropped: the struct
/// must be declared `#[pin_data(PinnedDrop)]` and write no `PinnedDrop` of its own.
///
/// ```ignore
/// impl_deferred! {
///     impl Deferred for Conn {
///         timer 0 => rto;
///         timer 1 => rnr;
///         work kick;
///     }
/// }
/// ```
#[macro_export]
macro_rules! impl_deferred {
    (impl Deferred for $self:ty {
        $(timer $id:tt => $tfield:ident;)*
        $(work $wfield:ident;)?
        $(sleepable work $sfield:ident;)?
    }) => {
        $(
            // SAFETY: The two functions project to the field and back (`container_of!` checks
            // the field's type); the `PinnedDrop` below shuts the timer down before any
            // field is dropped.
            unsafe impl $crate::rdma::timer::HasTimer<$id> for $self {
                #[inline]
                unsafe fn raw_get_timer(
                    ptr: *const Self,
                ) -> *const $crate::rdma::timer::Timer<Self, $id> {
                    // SAFETY: The caller promises that `ptr` points to a valid `Self`.
                    unsafe { ::core::ptr::addr_of!((*ptr).$tfield) }
                }

                #[inline]
                unsafe fn timer_container_of(
                    ptr: *const $crate::rdma::timer::Timer<Self, $id>,
                ) -> *const Self {
                    // SAFETY: The caller promises that `ptr` points to the field of a `Self`.
                    unsafe { $crate::container_of!(ptr, Self, $tfield) }
                }
            }
        )*
        $(
            // SAFETY: As for the timers: the field and back, cancelled before any field is
            // dropped.
            unsafe impl $crate::rdma::bhwork::HasBhWork for $self {
                const SLEEPABLE: bool = false;

                #[inline]
                fn dispatch(
                    this: &Self,
                    _ctx: ::core::option::Option<&$crate::rdma::MaySleep<'_>>,
                ) {
                    <Self as $crate::rdma::bhwork::BhWorkCallback>::work_run(this);
                }

                #[inline]
                unsafe fn raw_get_work(
                    ptr: *const Self,
                ) -> *const $crate::rdma::bhwork::BhWork<Self> {
                    // SAFETY: The caller promises that `ptr` points to a valid `Self`.
                    unsafe { ::core::ptr::addr_of!((*ptr).$wfield) }
                }

                #[inline]
                unsafe fn bh_work_container_of(
                    ptr: *const $crate::rdma::bhwork::BhWork<Self>,
                ) -> *const Self {
                    // SAFETY: The caller promises that `ptr` points to the field of a `Self`.
                    unsafe { $crate::container_of!(ptr, Self, $wfield) }
                }
            }
        )?
        $(
            // SAFETY: As for `work`; the work runs in process context.
            unsafe impl $crate::rdma::bhwork::HasBhWork for $self {
                const SLEEPABLE: bool = true;

                #[inline]
                fn dispatch(
                    this: &Self,
                    ctx: ::core::option::Option<&$crate::rdma::MaySleep<'_>>,
                ) {
                    if let ::core::option::Option::Some(ctx) = ctx {
                        <Self as $crate::rdma::bhwork::SleepableWorkCallback>::work_run(
                            this, ctx,
                        );
                    }
                }

                #[inline]
                unsafe fn raw_get_work(
                    ptr: *const Self,
                ) -> *const $crate::rdma::bhwork::BhWork<Self> {
                    // SAFETY: The caller promises that `ptr` points to a valid `Self`.
                    unsafe { ::core::ptr::addr_of!((*ptr).$sfield) }
                }

                #[inline]
                unsafe fn bh_work_container_of(
                    ptr: *const $crate::rdma::bhwork::BhWork<Self>,
                ) -> *const Self {
                    // SAFETY: The caller promises that `ptr` points to the field of a `Self`.
                    unsafe { $crate::container_of!(ptr, Self, $sfield) }
                }
            }
        )?

        #[$crate::prelude::pinned_drop]
        impl ::pin_init::PinnedDrop for $self {
            fn drop(self: ::core::pin::Pin<&mut Self>) {
                // No callback runs after this: the fields may go, in any order.
                $(self.$tfield.shutdown();)*
                $(self.$wfield.cancel();)?
                $(self.$sfield.cancel();)?
            }
        }
    };
}
pub use impl_deferred;
