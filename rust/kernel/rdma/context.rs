// SPDX-License-Identifier: GPL-2.0

//! Execution contexts a driver can be given proof of.
//!
//! Some calls sleep: pinning or faulting in user memory ([`Umem::get`](super::mr::Umem::get),
//! [`OdpUmem::fault`](super::odp::OdpUmem::fault)), and a driver that made them from its
//! softirq receive path or a timer would schedule while atomic. They take a [`MaySleep`],
//! which only the abstractions make, for the callbacks they call in process context.

use crate::types::NotThreadSafe;
use core::marker::PhantomData;

/// Proof that the code holding it runs in process context and may sleep: a verb a process
/// called (`reg_user_mr`, `rereg_user_mr`, `advise_mr`) or a work item declared `sleepable
/// work` in [`impl_deferred!`](crate::impl_deferred).
///
/// The abstractions make one on the stack of such a callback and lend it to the driver for
/// the call; it is neither `Send` nor `Sync`, and a reference to it lives no longer than the
/// call, so it can be neither kept for later nor handed to code running elsewhere. A driver
/// that takes a spinlock and then sleeps is not caught by the type: the sleeping functions
/// call `might_sleep()`, which reports it (`CONFIG_DEBUG_ATOMIC_SLEEP`).
///
/// # Invariants
///
/// Made only where the current task runs in process context, without spinlocks held or
/// interrupts or bottom halves disabled by the abstractions.
pub struct MaySleep<'a> {
    _not_send: NotThreadSafe,
    _scope: PhantomData<&'a ()>,
}

impl MaySleep<'_> {
    /// Returns the proof for a callback about to be called.
    ///
    /// # Safety
    ///
    /// The caller runs in process context and may sleep, and lends the token only by
    /// reference, for the duration of a call.
    pub(crate) unsafe fn new() -> Self {
        // INVARIANT: Per the function's contract.
        Self {
            _not_send: PhantomData,
            _scope: PhantomData,
        }
    }
}
