// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues (`struct ib_srq`): one receive queue that the queue pairs attached
//! to it take their receive WQEs from.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::device::{Device, Driver, UContext, UData};
use super::event::object_event;
use super::mmap;
use super::pd::Pd;
use super::usecnt::{Dying, UseCounted, UseRef};
use super::wr::{self, RecvWr};
use crate::{bindings, error::from_result, prelude::*, types::Opaque};

/// A shared receive queue: the core-allocated `struct ib_srq` followed by the driver's data.
///
/// # Invariants
///
/// `ib` is at offset 0 and initialised by the core; `data` is initialised between a
/// successful `create_srq` and a successful `destroy_srq`, the only span in which references
/// exist.
#[repr(C)]
#[pin_data]
pub struct Srq<T: Driver> {
    #[pin]
    pub(crate) ib: Opaque<bindings::ib_srq>,
    #[pin]
    pub(crate) data: T::Srq,
}

impl<T: Driver> Srq<T> {
    /// Returns the driver data.
    pub fn data(&self) -> &T::Srq {
        &self.data
    }

    /// Returns the device of the queue.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: The core sets `device` before `create_srq`; the device is registered while
        // its objects exist.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }

    /// Returns the protection domain of the queue.
    pub fn pd(&self) -> &Pd<T> {
        // SAFETY: The core sets `pd` before `create_srq` to one of this driver's PDs, on
        // which it holds a use count while the queue exists.
        unsafe { &*(*self.ib.get()).pd.cast::<Pd<T>>() }
    }

    /// Tells the queue's owner that it holds fewer WQEs than the limit it armed
    /// (`IB_EVENT_SRQ_LIMIT_REACHED`, `ibv_get_async_event` for a user queue).
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    pub fn limit_reached(&self) {
        let srq = self.ib.get();
        // SAFETY: `event_handler` and `srq_context` are set by the core at creation and stay
        // valid while the queue exists (`&self`); the event names the queue.
        unsafe {
            let kind = bindings::ib_event_type_IB_EVENT_SRQ_LIMIT_REACHED;
            let mut ev = object_event((*srq).device, kind, |e| e.srq = srq);
            if let Some(handler) = (*srq).event_handler {
                handler(&mut ev, (*srq).srq_context);
            }
        }
    }
}

impl<T: Driver> Dying<'_, Srq<T>> {
    /// Returns the driver data.
    pub fn data(&self) -> &T::Srq {
        self.obj.data()
    }

    /// Returns the device of the queue.
    pub fn device(&self) -> &Device<T> {
        self.obj.device()
    }
}

// SAFETY: `usecnt` is the SRQ's; the core refuses to destroy an SRQ while it is not zero.
// The driver data is `Sync` (`Driver` requires it) and the methods on the core object are
// safe to call concurrently.
unsafe impl<T: Driver> UseCounted for Srq<T> {
    fn usecnt(&self) -> *mut bindings::atomic_t {
        // SAFETY: `ib` is the live core object.
        unsafe { &raw mut (*self.ib.get()).usecnt }
    }
}

/// A counted use of a shared receive queue, which keeps the core from destroying it: a queue
/// pair's data path holds one for the queue it takes its receive WQEs from.
pub type SrqRef<T> = UseRef<Srq<T>>;

/// Sizes and limit of a shared receive queue (`struct ib_srq_attr`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SrqAttrs {
    /// Number of WQEs the queue holds.
    pub max_wr: u32,
    /// Scatter entries per WQE.
    pub max_sge: u32,
    /// Limit: the owner is told when fewer WQEs remain (0: not armed).
    pub srq_limit: u32,
}

impl SrqAttrs {
    fn from_raw(a: &bindings::ib_srq_attr) -> Self {
        Self {
            max_wr: a.max_wr,
            max_sge: a.max_sge,
            srq_limit: a.srq_limit,
        }
    }

    fn write(&self, a: &mut bindings::ib_srq_attr) {
        a.max_wr = self.max_wr;
        a.max_sge = self.max_sge;
        a.srq_limit = self.srq_limit;
    }
}

crate::impl_flags!(
    /// Which attributes `ibv_modify_srq` changes (`enum ib_srq_attr_mask`), as the caller
    /// gave them (bits no [`SrqAttr`] names are kept: [`SrqAttrMask::is_within`]).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SrqAttrMask(u32);

    /// One attribute `ibv_modify_srq` changes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum SrqAttr {
        /// `IB_SRQ_MAX_WR`: resize the queue.
        MaxWr = bindings::ib_srq_attr_mask_IB_SRQ_MAX_WR,
        /// `IB_SRQ_LIMIT`: arm the limit.
        Limit = bindings::ib_srq_attr_mask_IB_SRQ_LIMIT,
    }
);

impl SrqAttrMask {
    /// Returns whether no attribute outside `allowed` is asked for, unnamed bits included.
    pub fn is_within(self, allowed: Self) -> bool {
        self.0 & !allowed.0 == 0
    }
}

/// Parameters of a new shared receive queue (`struct ib_srq_init_attr` and the udata).
pub struct SrqInit<'a, T: Driver> {
    /// Requested sizes and limit.
    pub attrs: SrqAttrs,
    /// The queue is a basic one (`IB_SRQT_BASIC`; not XRC or tag matching).
    pub basic: bool,
    /// Driver data from and to userspace, for a user queue.
    pub udata: Option<&'a UData<T>>,
    /// The user context, for a user queue.
    pub ucontext: Option<&'a UContext<T>>,
    init: *mut bindings::ib_srq_init_attr,
}

impl<T: Driver> SrqInit<'_, T> {
    /// Reports the sizes actually provided (at least those requested).
    pub fn set_attrs(&self, attrs: &SrqAttrs) {
        // SAFETY: `init` is valid during `create_srq`, and the core reads the sizes back
        // from it after the call.
        attrs.write(unsafe { &mut (*self.init).attr });
    }
}

/// The `create_srq` operation.
///
/// # Safety
///
/// Called by the core: `srq` is a zeroed allocation of `size_ib_srq` bytes whose header the core
/// initialised; `init` is valid; `udata` is null or valid.
pub(crate) unsafe extern "C" fn create<T: Driver>(
    srq: *mut bindings::ib_srq,
    init: *mut bindings::ib_srq_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    const {
        assert!(core::mem::offset_of!(Srq<T>, ib) == 0);
    }
    from_result(|| {
        // SAFETY: The core sets `device` and `pd` first and calls operations while they live.
        let (dev, pd) = unsafe {
            (
                Device::<T>::from_raw((*srq).device),
                &*(*srq).pd.cast::<Pd<T>>(),
            )
        };
        // SAFETY: `udata` is null or valid for the call.
        let udata = unsafe { UData::from_raw(udata) };
        // SAFETY: `init` is valid for the call.
        let i = unsafe { &*init };
        let si = SrqInit {
            attrs: SrqAttrs::from_raw(&i.attr),
            basic: i.srq_type == bindings::ib_srq_type_IB_SRQT_BASIC,
            udata,
            ucontext: udata.and_then(|u| u.ucontext()),
            init,
        };
        let data = T::create_srq(dev, pd, &si)?;
        // SAFETY: `data` goes to uninitialised memory in the core's allocation, which never
        // moves; on failure (none from here on) the core would free it without `destroy_srq`.
        unsafe { (&raw mut (*srq.cast::<Srq<T>>()).data).write(data) };
        Ok(0)
    })
}

/// The `modify_srq` operation.
///
/// # Safety
///
/// Called by the core: `srq` was initialised by `create_srq`; `attr` is valid; `udata` is null or
/// valid.
pub(crate) unsafe extern "C" fn modify<T: Driver>(
    srq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
    mask: bindings::ib_srq_attr_mask,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        // SAFETY: Per the function's contract.
        let (srq, attrs, ud) = unsafe {
            (
                &*srq.cast::<Srq<T>>(),
                SrqAttrs::from_raw(&*attr),
                UData::from_raw(udata),
            )
        };
        let ret = T::modify_srq(srq, &attrs, SrqAttrMask(mask), ud);
        // SAFETY: `udata` is null or valid, in process context (a verb).
        unsafe { mmap::sweep_after::<T>(udata) };
        ret?;
        Ok(0)
    })
}

/// The `query_srq` operation.
///
/// # Safety
///
/// Called by the core: `srq` was initialised by `create_srq`; `attr` is valid for writes.
pub(crate) unsafe extern "C" fn query<T: Driver>(
    srq: *mut bindings::ib_srq,
    attr: *mut bindings::ib_srq_attr,
) -> c_int {
    from_result(|| {
        // SAFETY: Per the function's contract.
        let srq = unsafe { &*srq.cast::<Srq<T>>() };
        let a = T::query_srq(srq)?;
        // SAFETY: Per the function's contract.
        a.write(unsafe { &mut *attr });
        Ok(0)
    })
}

/// The `destroy_srq` operation.
///
/// # Safety
///
/// Called by the core: `srq` was initialised by a successful `create_srq`; `udata` is null or
/// valid, in process context.
pub(crate) unsafe extern "C" fn destroy<T: Driver>(
    srq: *mut bindings::ib_srq,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        let this = srq.cast::<Srq<T>>();
        // SAFETY: The SRQ is initialised (type invariant of `Srq`); the core checked its use
        // count before calling `destroy_srq` (`verbs.c:1143`) and frees it when it succeeds.
        T::destroy_srq(&unsafe { Dying::new(&*this) })?;
        // SAFETY: Destroy succeeded: the core frees the SRQ next and calls no other operation
        // on it.
        unsafe { core::ptr::drop_in_place(&raw mut (*this).data) };
        // SAFETY: Per the function's contract.
        unsafe { mmap::sweep_after::<T>(udata) };
        Ok(0)
    })
}

/// The `post_srq_recv` operation.
///
/// # Safety
///
/// Called by the core: `srq` was initialised by `create_srq`; `wr` is a valid chain; `bad_wr` is
/// valid for writes.
pub(crate) unsafe extern "C" fn post_recv<T: Driver>(
    srq: *mut bindings::ib_srq,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    from_result(|| {
        // SAFETY: The SRQ is initialised.
        let srq = unsafe { &*srq.cast::<Srq<T>>() };
        // SAFETY: `uobject` is set by the core before `create_srq` and not changed after.
        let user = !unsafe { (*srq.ib.get()).uobject }.is_null();
        // SAFETY: Per the function's contract.
        unsafe {
            wr::post_recv_chain(user, wr, bad_wr, |w: &RecvWr<'_>| {
                T::post_srq_recv_wr(srq, w)
            })
        }?;
        Ok(0)
    })
}
