// SPDX-License-Identifier: GPL-2.0

//! Data shared with the receive path: bottom halves off, unless interrupts already are.
//!
//! A software RDMA device runs its transport in softirq (the network receive path, timers,
//! BH work) and in process context (verbs), on the same data. Process context must hold
//! such data with bottom halves disabled, or a softirq that interrupts the holder on its own
//! CPU spins on the lock forever. But `ib_core` consumers call some verbs with interrupts
//! disabled (the MAD layer posts under `spin_lock_irqsave()`), where softirqs cannot run
//! either and re-enabling bottom halves is not allowed (`__local_bh_enable_ip()` warns): a
//! plain `spin_lock_bh()` lock would be wrong there. [`BhSpinLock`] does what each context
//! needs, and [`BhGuard`] does the same for data under a lock of its own (an
//! [`XArray`](crate::xarray::XArray)).
//!
//! C header: [`include/linux/bottom_half.h`](srctree/include/linux/bottom_half.h)

use crate::{
    bindings,
    sync::lock::{Backend, Guard, Lock},
};

/// Keeps softirqs (bottom halves) from running on this CPU while it exists.
///
/// Data that the receive path (softirq) shares with process context under a plain spinlock,
/// such as an [`XArray`](crate::xarray::XArray), must be locked with bottom halves disabled
/// in process context, or a softirq on the same CPU could spin on the lock its own task
/// holds. Nothing that sleeps may run while the guard exists.
///
/// Kernel consumers call some verbs with interrupts disabled (the MAD layer posts under
/// `spin_lock_irqsave`); softirqs cannot run then either, and re-enabling bottom halves with
/// interrupts off is not allowed, so the guard does nothing in that case.
pub struct BhGuard {
    disabled: bool,
    _not_send: crate::types::NotThreadSafe,
}

impl BhGuard {
    /// Disables bottom halves until the guard is dropped (unless interrupts are disabled).
    pub fn new() -> Self {
        // SAFETY: No preconditions.
        let irqs_off = unsafe { crate::bindings::irqs_disabled() };
        if !irqs_off {
            // The guard is not `Send`: it is dropped on this CPU.
            // SAFETY: Balanced by the `local_bh_enable` in `drop`.
            unsafe { crate::bindings::local_bh_disable() };
        }
        Self {
            disabled: !irqs_off,
            _not_send: crate::types::NotThreadSafe,
        }
    }
}

impl Default for BhGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for BhGuard {
    fn drop(&mut self) {
        if self.disabled {
            // SAFETY: Paired with the `local_bh_disable` in `new`.
            unsafe { crate::bindings::local_bh_enable() };
        }
    }
}

/// A spinlock for data the receive path shares: held with bottom halves disabled, except
/// when the caller runs with interrupts disabled (then nothing else can run on this CPU).
///
/// Made with `BhSpinLock::new(data, name, static_lock_class!())`.
///
/// # Examples
///
/// ```
/// use kernel::rdma::BhSpinLock;
/// use kernel::sync::static_lock_class;
///
/// #[pin_data]
/// struct Ring {
///     // Filled by the receive path, drained by a verb.
///     #[pin]
///     entries: BhSpinLock<KVec<u64>>,
/// }
///
/// let ring = KBox::pin_init(
///     pin_init!(Ring {
///         entries <- BhSpinLock::new(KVec::new(), c"ring", static_lock_class!()),
///     }),
///     GFP_KERNEL,
/// )?;
/// ring.entries.lock().push(1, GFP_KERNEL)?;
/// assert_eq!(ring.entries.lock().len(), 1);
/// # Ok::<(), Error>(())
/// ```
pub type BhSpinLock<T> = Lock<T, BhSpinLockBackend>;

/// A guard of a [`BhSpinLock`]: unlocks it, then enables bottom halves again if locking
/// disabled them.
pub type BhSpinLockGuard<'a, T> = Guard<'a, T, BhSpinLockBackend>;

/// The [`BhSpinLock`] backend: a `spinlock_t`, taken with `spin_lock_bh()` when interrupts are
/// enabled and with `spin_lock()` when they are not. The guard state says which.
pub struct BhSpinLockBackend;

// SAFETY: The underlying kernel `spinlock_t` ensures mutual exclusion. The guard records
// whether locking disabled bottom halves, and unlocking undoes exactly that; guards are not
// `Send`, so the unlock runs on the CPU that locked (as `local_bh_enable()` requires).
unsafe impl Backend for BhSpinLockBackend {
    type State = bindings::spinlock_t;
    /// `true` if the lock was taken with `spin_lock_bh()`.
    type GuardState = bool;

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const crate::ffi::c_char,
        key: *mut bindings::lock_class_key,
    ) {
        // SAFETY: The safety requirements ensure that `ptr` is valid for writes, and `name` and
        // `key` are valid for read indefinitely.
        unsafe { bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: No preconditions.
        if unsafe { bindings::irqs_disabled() } {
            // SAFETY: The safety requirements ensure that `ptr` is valid and initialised.
            unsafe { bindings::spin_lock(ptr) };
            false
        } else {
            // SAFETY: As above.
            unsafe { bindings::spin_lock_bh(ptr) };
            true
        }
    }

    unsafe fn unlock(ptr: *mut Self::State, bh: &Self::GuardState) {
        if *bh {
            // SAFETY: The caller owns the lock, taken with `spin_lock_bh()` on this CPU.
            unsafe { bindings::spin_unlock_bh(ptr) }
        } else {
            // SAFETY: The caller owns the lock, taken with `spin_lock()`.
            unsafe { bindings::spin_unlock(ptr) }
        }
    }

    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        // SAFETY: No preconditions.
        let bh = !unsafe { bindings::irqs_disabled() };
        // SAFETY: The safety requirements ensure that `ptr` is valid and initialised.
        let locked = unsafe {
            if bh {
                bindings::spin_trylock_bh(ptr)
            } else {
                bindings::spin_trylock(ptr)
            }
        };
        (locked != 0).then_some(bh)
    }

    unsafe fn assert_is_held(ptr: *mut Self::State) {
        // SAFETY: The safety requirements ensure that `ptr` is valid and initialised.
        unsafe { bindings::spin_assert_is_held(ptr) }
    }
}
