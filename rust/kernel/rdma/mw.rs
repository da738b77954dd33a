// SPDX-License-Identifier: GPL-2.0

//! Memory windows (`struct ib_mw`): remote access to a part of a memory region, granted by a
//! bind and withdrawn by an invalidation, both carried out by the driver's data path.
//!
//! The core allocates windows for user contexts only (`ib_uverbs_alloc_mw`); it checks the
//! type (1 or 2) before the driver sees it.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    device::{Device, Driver, UData},
    pd::Pd,
};
use crate::{bindings, error::from_result, prelude::*, types::Opaque};

/// The type of a memory window (IBA 10.6.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MwType {
    /// Type 1: bound by `ibv_bind_mw` on any QP of its PD, invalidated only by a bind of
    /// length 0.
    Type1,
    /// Type 2 (2B): bound by a BIND_MW work request to the QP that posts it, which alone may
    /// use it; invalidated by a local or remote invalidation.
    Type2,
}

/// A memory window: the core-allocated `struct ib_mw` followed by the driver's data.
///
/// # Invariants
///
/// `ib` is at offset 0 and initialised by the core (device, PD, type); `data` is
/// initialised between a successful `alloc_mw` and a successful `dealloc_mw`, the only span
/// in which references exist.
#[repr(C)]
#[pin_data]
pub struct Mw<T: Driver> {
    #[pin]
    pub(crate) ib: Opaque<bindings::ib_mw>,
    #[pin]
    pub(crate) data: T::Mw,
}

impl<T: Driver> Mw<T> {
    /// Returns the driver data.
    pub fn data(&self) -> &T::Mw {
        &self.data
    }

    /// Returns the device.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: The core sets `device` before `alloc_mw`; it outlives its objects.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }
}

/// Parameters of a new memory window.
pub struct MwInit<'a, T: Driver> {
    /// The protection domain the window is allocated in.
    pub pd: &'a Pd<T>,
    /// Its type.
    pub mw_type: MwType,
    /// Driver data from and to userspace.
    pub udata: Option<&'a UData<T>>,
}

/// The `alloc_mw` operation.
///
/// # Safety
///
/// Called by the core: `mw` is a zeroed allocation of `size_ib_mw` bytes whose header the core
/// initialised (`device`, `pd` of this driver, `type` 1 or 2); `udata` is null or valid.
pub(crate) unsafe extern "C" fn alloc<T: Driver>(
    mw: *mut bindings::ib_mw,
    udata: *mut bindings::ib_udata,
) -> c_int {
    const {
        assert!(core::mem::offset_of!(Mw<T>, ib) == 0);
    }
    from_result(|| {
        // SAFETY: The core sets `device`, `pd` and `type` before the call (`ib_uverbs_alloc_mw`);
        // the PD, of this driver, outlives the window.
        let (dev, pd, ty) = unsafe {
            (
                Device::<T>::from_raw((*mw).device),
                &*(*mw).pd.cast::<Pd<T>>(),
                (*mw).type_,
            )
        };
        let mw_type = match ty {
            bindings::ib_mw_type_IB_MW_TYPE_1 => MwType::Type1,
            bindings::ib_mw_type_IB_MW_TYPE_2 => MwType::Type2,
            _ => return Err(EINVAL),
        };
        let init = MwInit {
            pd,
            mw_type,
            // SAFETY: `udata` is null or valid for the call.
            udata: unsafe { UData::from_raw(udata) },
        };
        let (rkey, data) = T::alloc_mw(dev, &init)?;
        // SAFETY: `data` is uninitialised memory in the core's allocation, which never moves and
        // is freed by the core after `dealloc_mw`; `mw` is valid, and the core reports `rkey` to
        // userspace after the call.
        unsafe {
            (&raw mut (*mw.cast::<Mw<T>>()).data).write(data);
            (*mw).rkey = rkey;
        }
        Ok(0)
    })
}

/// The `dealloc_mw` operation.
///
/// # Safety
///
/// Called by the core: `mw` was initialised by `alloc_mw`; on success the core frees it next.
pub(crate) unsafe extern "C" fn dealloc<T: Driver>(mw: *mut bindings::ib_mw) -> c_int {
    from_result(|| {
        let this = mw.cast::<Mw<T>>();
        // SAFETY: The window is initialised.
        T::dealloc_mw(unsafe { &*this })?;
        // SAFETY: Deallocation succeeded: nothing uses the window any more and the core frees it.
        unsafe { core::ptr::drop_in_place(&raw mut (*this).data) };
        Ok(0)
    })
}
