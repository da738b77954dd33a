// SPDX-License-Identifier: GPL-2.0

//! Completion queues (`struct ib_cq`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::device::{Device, Driver, UContext, UData};
use super::event::object_event;
use super::mmap;
use super::usecnt::{Dying, UseCounted, UseRef};
use crate::{
    bindings,
    error::from_result,
    new_spinlock_irq,
    prelude::*,
    sync::SpinLockIrq,
    types::Opaque, //
};

/// A completion queue: the core-allocated `struct ib_cq` followed by the driver's data.
///
/// # Invariants
///
/// `ib` is at offset 0 and initialised by the core; `event_lock` and `data` are initialised
/// between a successful `create_cq` and a successful `destroy_cq`, the only span in which
/// references exist.
#[repr(C)]
#[pin_data]
pub struct Cq<T: Driver> {
    #[pin]
    pub(crate) ib: Opaque<bindings::ib_cq>,
    /// Serialises the consumer's completion handler (see [`Cq::completion_event`]).
    #[pin]
    event_lock: SpinLockIrq<()>,
    #[pin]
    pub(crate) data: T::Cq,
}

impl<T: Driver> Cq<T> {
    /// Returns the driver data.
    pub fn data(&self) -> &T::Cq {
        &self.data
    }

    /// Returns the device of the completion queue.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: The core sets `device` before `create_cq`; the device is registered while
        // its objects exist.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }

    /// Returns the raw `struct ib_cq`.
    pub fn as_raw(&self) -> *mut bindings::ib_cq {
        self.ib.get()
    }

    /// Sets the number of entries the queue holds, as reported to its user.
    pub fn set_cqe(&self, cqe: u32) {
        let cqe = c_int::try_from(cqe).unwrap_or(c_int::MAX);
        // SAFETY: `cqe` is an `int` field of the live CQ. The core reads it after the verb
        // that asked the driver to set it (create, resize) and, unlocked, from netlink
        // (`nldev.c` 687, `fill_res_cq_entry()`): a single aligned store, as `WRITE_ONCE()`
        // does, so readers see the old or the new value.
        unsafe { (&raw mut (*self.ib.get()).cqe).write_volatile(cqe) };
    }

    /// Runs the consumer's completion handler (a completion event, e.g. for a channel that
    /// `ibv_req_notify_cq` armed).
    ///
    /// Calls are serialised per CQ, with interrupts off, as consumers expect (rdma_rxe
    /// calls the handler under its CQ lock): two queue pairs completing into the same CQ
    /// from two CPUs do not run the handler concurrently.
    ///
    /// # Context
    ///
    /// Any context; the handler runs in atomic context.
    pub fn completion_event(&self) {
        let cq = self.ib.get();
        let _serialised = self.event_lock.lock();
        // SAFETY: `comp_handler` and `cq_context` are set by the core at creation and stay
        // valid while the CQ exists (`&self`).
        unsafe {
            if let Some(handler) = (*cq).comp_handler {
                handler(cq, (*cq).cq_context);
            }
        }
    }

    /// Tells the consumer that the queue overflowed: a completion was lost
    /// (`IB_EVENT_CQ_ERR` to its event handler, `ibv_get_async_event` for a user CQ).
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    pub fn error_event(&self) {
        let cq = self.ib.get();
        // SAFETY: `event_handler` and `cq_context` are set by the core at creation and stay
        // valid while the CQ exists (`&self`); the event names the CQ.
        unsafe {
            let kind = bindings::ib_event_type_IB_EVENT_CQ_ERR;
            let mut ev = object_event((*cq).device, kind, |e| e.cq = cq);
            if let Some(handler) = (*cq).event_handler {
                handler(&mut ev, (*cq).cq_context);
            }
        }
    }
}

impl<T: Driver> Dying<'_, Cq<T>> {
    /// Returns the driver data.
    pub fn data(&self) -> &T::Cq {
        self.obj.data()
    }

    /// Returns the device of the queue.
    pub fn device(&self) -> &Device<T> {
        self.obj.device()
    }
}

// SAFETY: `usecnt` is the CQ's; the core refuses to destroy a CQ while it is not zero.
// The driver data is `Sync` (`Driver` requires it) and the methods on the core object are
// safe to call concurrently.
unsafe impl<T: Driver> UseCounted for Cq<T> {
    fn usecnt(&self) -> *mut bindings::atomic_t {
        // SAFETY: `ib` is the live core object.
        unsafe { &raw mut (*self.ib.get()).usecnt }
    }
}

/// A counted use of a completion queue, which keeps the core from destroying it: the data
/// path of a queue pair holds one for each CQ it completes into.
pub type CqRef<T> = UseRef<Cq<T>>;

/// Parameters of a new completion queue (`struct ib_cq_init_attr` and the udata).
pub struct CqInit<'a, T: Driver> {
    /// Requested number of entries.
    pub cqe: u32,
    /// Completion vector.
    pub comp_vector: u32,
    /// `IB_UVERBS_CQ_FLAGS_*` creation flags.
    pub flags: u32,
    /// Driver data from and to userspace, for a user CQ.
    pub udata: Option<&'a UData<T>>,
    /// The user context, for a user CQ.
    pub ucontext: Option<&'a UContext<T>>,
    /// The CQ being created (its driver data is not initialised yet).
    pub(crate) cq: *mut bindings::ib_cq,
}

impl<T: Driver> CqInit<'_, T> {
    /// Sets the number of entries the new queue holds, as reported to its user.
    pub fn set_cqe(&self, cqe: u32) {
        // SAFETY: `cq` is the core's allocation of the CQ being created, exclusively ours
        // during `create_cq`.
        unsafe { (*self.cq).cqe = c_int::try_from(cqe).unwrap_or(c_int::MAX) };
    }
}

crate::impl_flags!(
    /// `ibv_req_notify_cq` flags (`enum ib_cq_notify_flags`).
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
    pub struct NotifyFlags(u32);

    /// One `ibv_req_notify_cq` flag.
    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    pub enum Notify {
        /// Event on the next solicited completion only.
        Solicited = bindings::ib_cq_notify_flags::IB_CQ_SOLICITED.0,
        /// Event on the next completion.
        NextComp = bindings::ib_cq_notify_flags::IB_CQ_NEXT_COMP.0,
        /// Report (return a positive value) if completions are already queued.
        ReportMissedEvents = bindings::ib_cq_notify_flags::IB_CQ_REPORT_MISSED_EVENTS.0,
    }
);

impl NotifyFlags {
    pub(crate) fn from_raw(v: u32) -> Self {
        Self(v)
    }

    /// Returns whether only solicited completions should raise an event.
    pub fn solicited_only(self) -> bool {
        self.contains(Notify::Solicited) && !self.contains(Notify::NextComp)
    }

    /// Returns whether the caller wants to know about already queued completions.
    pub fn report_missed(self) -> bool {
        self.contains(Notify::ReportMissedEvents)
    }
}

/// The `create_cq` operation.
///
/// # Safety
///
/// Called by the core: `cq` is a zeroed allocation of `size_ib_cq` bytes whose header the core
/// initialised; `attr` is valid; `attrs` is null (kernel CQ) or the verb's attribute bundle.
pub(crate) unsafe extern "C" fn create<T: Driver>(
    cq: *mut bindings::ib_cq,
    attr: *const bindings::ib_cq_init_attr,
    attrs: *mut bindings::uverbs_attr_bundle,
) -> c_int {
    const {
        assert!(core::mem::offset_of!(Cq<T>, ib) == 0);
    }
    from_result(|| {
        // SAFETY: The core sets `device` first and calls operations while it is alive.
        let dev = unsafe { Device::<T>::from_raw((*cq).device) };
        // SAFETY: `attrs` is null or a valid bundle; its udata lives for the call.
        let udata = unsafe { UData::from_raw(bindings::uverbs_bundle_udata(attrs)) };
        // SAFETY: `attr` is valid for the call.
        let a = unsafe { &*attr };
        let init = CqInit {
            cqe: a.cqe,
            comp_vector: a.comp_vector,
            flags: a.flags,
            udata,
            ucontext: udata.and_then(|u| u.ucontext()),
            cq,
        };
        let data = T::create_cq(dev, &init)?;
        let this = cq.cast::<Cq<T>>();
        // SAFETY: `event_lock` is uninitialised memory in the core's allocation, which never
        // moves; the initialiser cannot fail.
        unsafe { pin_init::raw_try_init(&raw mut (*this).event_lock, new_spinlock_irq!(())) }?;
        // SAFETY: `data` is uninitialised memory in the core's allocation, which never
        // moves; on failure the core frees it without calling `destroy_cq`.
        let ret = unsafe { pin_init::raw_try_init(&raw mut (*this).data, data) };
        if ret.is_err() {
            // SAFETY: Initialised above and not shared (the CQ was never handed out).
            unsafe { core::ptr::drop_in_place(&raw mut (*this).event_lock) };
        }
        ret?;
        Ok(0)
    })
}

/// The `destroy_cq` operation.
///
/// # Safety
///
/// Called by the core: `cq` was initialised by a successful `create_cq`; `udata` is null or valid,
/// in process context.
pub(crate) unsafe extern "C" fn destroy<T: Driver>(
    cq: *mut bindings::ib_cq,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        let this = cq.cast::<Cq<T>>();
        // SAFETY: The CQ is initialised (type invariant of `Cq`); the core checked its use
        // count before calling `destroy_cq` (`verbs.c:2266`) and frees it when it succeeds.
        T::destroy_cq(&unsafe { Dying::new(&*this) })?;
        // SAFETY: Destroy succeeded: the core frees the CQ next and calls no other
        // operation on it.
        unsafe {
            core::ptr::drop_in_place(&raw mut (*this).data);
            core::ptr::drop_in_place(&raw mut (*this).event_lock);
        }
        // SAFETY: Per the function's contract.
        unsafe { mmap::sweep_after::<T>(udata) };
        Ok(0)
    })
}

/// The `req_notify_cq` operation: returns 1 if `flags` asked to report missed events and
/// completions are already queued, else 0.
///
/// # Safety
///
/// Called by the core: `cq` was initialised by a successful `create_cq`.
pub(crate) unsafe extern "C" fn req_notify<T: Driver>(
    cq: *mut bindings::ib_cq,
    flags: bindings::ib_cq_notify_flags,
) -> c_int {
    // SAFETY: The CQ is initialised (type invariant of `Cq`).
    let cq = unsafe { &*cq.cast::<Cq<T>>() };
    from_result(|| T::req_notify_cq(cq, NotifyFlags::from_raw(flags.0)).map(c_int::from))
}

/// The `resize_user_cq` operation.
///
/// # Safety
///
/// Called by the core: `cq` was initialised by a successful `create_cq`; `udata` is null or valid.
pub(crate) unsafe extern "C" fn resize<T: Driver>(
    cq: *mut bindings::ib_cq,
    cqe: c_uint,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: The CQ is initialised; `udata` is null or valid for the call.
        let (cq, ud) = unsafe { (&*cq.cast::<Cq<T>>(), UData::from_raw(udata)) };
        let ret = T::resize_cq(cq, cqe, ud);
        // SAFETY: `udata` is null or valid, in process context (a verb).
        unsafe { mmap::sweep_after::<T>(udata) };
        ret?;
        Ok(0)
    })
}
