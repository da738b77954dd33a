// SPDX-License-Identifier: GPL-2.0

//! Address handles (`struct ib_ah`): the path to a remote port, for datagram QPs.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    device::{Device, Driver, UData},
    pd::Pd,
    qp::AhAttr,
};
use crate::{bindings, error::from_result, prelude::*, types::Opaque};

/// An address handle: the core-allocated `struct ib_ah` followed by the driver's data.
///
/// # Invariants
///
/// `ib` is at offset 0 and initialised by the core; `data` is initialised between a
/// successful `create_ah` and a successful `destroy_ah`, the only span in which references
/// exist.
#[repr(C)]
#[pin_data]
pub struct Ah<T: Driver> {
    #[pin]
    pub(crate) ib: Opaque<bindings::ib_ah>,
    #[pin]
    pub(crate) data: T::Ah,
}

impl<T: Driver> Ah<T> {
    /// Returns the driver data.
    pub fn data(&self) -> &T::Ah {
        &self.data
    }

    /// Returns the device.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: The core sets `device` before `create_ah`; it outlives its objects.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }
}

/// Parameters of a new address handle.
pub struct AhInit<'a, T: Driver> {
    /// The protection domain the address handle is created in.
    pub pd: &'a Pd<T>,
    /// The address vector (the core resolved the destination MAC and the source GID).
    pub attr: AhAttr,
    /// The call may sleep (`RDMA_CREATE_AH_SLEEPABLE`); if not, allocate atomically.
    pub sleepable: bool,
    /// Driver data from and to userspace, for a user AH.
    pub udata: Option<&'a UData<T>>,
}

/// The `create_ah` and `create_user_ah` operations.
///
/// # Safety
///
/// Called by the core: `ah` is a zeroed allocation of `size_ib_ah` bytes whose header the core
/// initialised; `init` is valid with a valid `ah_attr` whose `grh.sgid_attr` is null or valid;
/// `udata` is null or valid.
pub(crate) unsafe extern "C" fn create<T: Driver>(
    ah: *mut bindings::ib_ah,
    init: *mut bindings::rdma_ah_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    const {
        assert!(core::mem::offset_of!(Ah<T>, ib) == 0);
    }
    from_result(|| {
        // SAFETY: The core sets `device` and `pd` first (`_rdma_create_ah()`), and the PD, of
        // this driver, outlives the AH; `init` and its `ah_attr` are valid for the call.
        let (dev, pd, i, attr) = unsafe {
            (
                Device::<T>::from_raw((*ah).device),
                &*(*ah).pd.cast::<Pd<T>>(),
                &*init,
                AhAttr::from_raw(&*(*init).ah_attr),
            )
        };
        let ai = AhInit {
            pd,
            attr,
            sleepable: i.flags & bindings::rdma_create_ah_flags_RDMA_CREATE_AH_SLEEPABLE != 0,
            // SAFETY: `udata` is null or valid for the call.
            udata: unsafe { UData::from_raw(udata) },
        };
        let data = T::create_ah(dev, &ai)?;
        // SAFETY: `data` is uninitialised memory in the core's allocation, which never moves;
        // on failure the core frees it without calling `destroy_ah`.
        unsafe { pin_init::raw_try_init(&raw mut (*ah.cast::<Ah<T>>()).data, data) }?;
        Ok(0)
    })
}

/// The `destroy_ah` operation.
///
/// # Safety
///
/// Called by the core: `ah` was initialised by `create_ah`; on success the core frees it
/// next.
pub(crate) unsafe extern "C" fn destroy<T: Driver>(ah: *mut bindings::ib_ah, _flags: u32) -> c_int {
    from_result(|| {
        let this = ah.cast::<Ah<T>>();
        // SAFETY: The AH is initialised.
        T::destroy_ah(unsafe { &*this })?;
        // SAFETY: Destroy succeeded: nothing uses the AH any more and the core frees it.
        unsafe { core::ptr::drop_in_place(&raw mut (*this).data) };
        Ok(0)
    })
}

/// The `query_ah` operation.
///
/// # Safety
///
/// Called by the core: `ah` was initialised by `create_ah`; `attr` is valid for writes.
pub(crate) unsafe extern "C" fn query<T: Driver>(
    ah: *mut bindings::ib_ah,
    attr: *mut bindings::rdma_ah_attr,
) -> c_int {
    from_result(|| {
        // SAFETY: The AH is initialised.
        let a = T::query_ah(unsafe { &*ah.cast::<Ah<T>>() })?;
        // SAFETY: `attr` is valid for writes; a zeroed `rdma_ah_attr` is valid (no
        // sgid_attr).
        let out = unsafe {
            attr.write(pin_init::zeroed());
            &mut *attr
        };
        a.write(out);
        Ok(0)
    })
}

/// The `modify_ah` operation.
///
/// # Safety
///
/// Called by the core: `ah` was initialised by `create_ah`; `attr` is valid with a
/// `grh.sgid_attr` null or valid.
pub(crate) unsafe extern "C" fn modify<T: Driver>(
    ah: *mut bindings::ib_ah,
    attr: *mut bindings::rdma_ah_attr,
) -> c_int {
    from_result(|| {
        // SAFETY: Per the function's contract.
        let a = unsafe { AhAttr::from_raw(&*attr) };
        // SAFETY: The AH is initialised.
        T::modify_ah(unsafe { &*ah.cast::<Ah<T>>() }, &a)?;
        Ok(0)
    })
}
