// SPDX-License-Identifier: GPL-2.0

//! Protection domains (`struct ib_pd`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::device::{Device, Driver, UData};
use crate::{bindings, error::from_result, prelude::*, types::Opaque};

/// A protection domain: the core-allocated `struct ib_pd` followed by the driver's data.
///
/// # Invariants
///
/// `ib` is at offset 0 and initialised by the core; `data` is initialised between a
/// successful `alloc_pd` and `dealloc_pd`, the only span in which references exist.
#[repr(C)]
#[pin_data]
pub struct Pd<T: Driver> {
    #[pin]
    pub(crate) ib: Opaque<bindings::ib_pd>,
    #[pin]
    pub(crate) data: T::Pd,
}

impl<T: Driver> Pd<T> {
    /// Returns the driver data.
    pub fn data(&self) -> &T::Pd {
        &self.data
    }

    /// Returns the device of the protection domain.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: The core sets `device` before `alloc_pd`; the device is registered while
        // its objects exist.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }

    /// Returns the raw `struct ib_pd`.
    pub fn as_raw(&self) -> *mut bindings::ib_pd {
        self.ib.get()
    }
}

/// The `alloc_pd` operation.
///
/// # Safety
///
/// Called by the core: `pd` is a zeroed allocation of `size_ib_pd` bytes whose header the
/// core initialised; `udata` is null or valid.
pub(crate) unsafe extern "C" fn alloc<T: Driver>(
    pd: *mut bindings::ib_pd,
    udata: *mut bindings::ib_udata,
) -> c_int {
    const {
        assert!(core::mem::offset_of!(Pd<T>, ib) == 0);
    }
    from_result(|| {
        // SAFETY: The core sets `device` first and calls operations while it is alive.
        let dev = unsafe { Device::<T>::from_raw((*pd).device) };
        // SAFETY: `udata` is null or valid for the call.
        let init = T::alloc_pd(dev, unsafe { UData::from_raw(udata) });
        // SAFETY: `data` is uninitialised memory in the core's allocation, which never
        // moves; on failure the core frees it without calling `dealloc_pd`.
        unsafe { pin_init::raw_try_init(&raw mut (*pd.cast::<Pd<T>>()).data, init) }?;
        Ok(0)
    })
}

/// The `dealloc_pd` operation; it cannot fail.
///
/// # Safety
///
/// Called by the core: `pd` was initialised by a successful `alloc_pd`; the core frees it
/// next.
pub(crate) unsafe extern "C" fn dealloc<T: Driver>(
    pd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    // SAFETY: `data` is initialised and not used again.
    unsafe { core::ptr::drop_in_place(&raw mut (*pd.cast::<Pd<T>>()).data) };
    0
}
