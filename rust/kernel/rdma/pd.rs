// SPDX-License-Identifier: GPL-2.0

//! Protection domains (`struct ib_pd`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::device::{Device, Driver};
use crate::{bindings, prelude::*, types::Opaque};

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
