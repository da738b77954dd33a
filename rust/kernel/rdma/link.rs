// SPDX-License-Identifier: GPL-2.0

//! RDMA link types: `rdma link add NAME type TYPE netdev DEV`.
//!
//! A driver registers a link type with the RDMA netlink core; `rdma link add` then asks it to
//! create a device named `NAME` on top of the network device `DEV`. If the type is not
//! registered, the core loads the module aliased `rdma-link-TYPE` first.
//!
//! C header: [`include/rdma/rdma_netlink.h`](srctree/include/rdma/rdma_netlink.h)

use super::netdev::NetDevice;
use crate::{bindings, error::from_result, prelude::*, str::CStrExt, types::Opaque};
use core::marker::PhantomData;

/// The operations of an RDMA link type.
pub trait LinkOps: Send + Sync + 'static {
    /// The link type, e.g. `c"rrxe"`.
    const TYPE: &'static CStr;

    /// Creates a device named `name` on `ndev`.
    ///
    /// Called from netlink with the link type registry read-locked and a reference to `ndev`
    /// held; may sleep.
    fn newlink(name: &CStr, ndev: &NetDevice) -> Result;
}

/// A registered RDMA link type.
///
/// # Invariants
///
/// `ops` is on the core's list of link types from a successful [`LinkRegistration::new`]
/// until drop.
#[pin_data(PinnedDrop)]
pub struct LinkRegistration<T: LinkOps> {
    #[pin]
    ops: Opaque<bindings::rdma_link_ops>,
    _t: PhantomData<T>,
}

// SAFETY: `ops` is only used by the RDMA netlink core, under its own lock.
unsafe impl<T: LinkOps> Send for LinkRegistration<T> {}
// SAFETY: See the `Send` implementation.
unsafe impl<T: LinkOps> Sync for LinkRegistration<T> {}

impl<T: LinkOps> LinkRegistration<T> {
    /// Registers the link type `T::TYPE`.
    ///
    /// Fails with `EEXIST` if another driver registered the same type.
    pub fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            _t: PhantomData,
            ops <- Opaque::try_ffi_init(|ops: *mut bindings::rdma_link_ops| {
                // SAFETY: `ops` is valid for writes and pinned until drop, which unregisters
                // it. `T::TYPE` is static.
                unsafe {
                    ops.write(bindings::rdma_link_ops {
                        type_: T::TYPE.as_char_ptr(),
                        newlink: Some(Self::newlink_callback),
                        ..pin_init::zeroed()
                    });
                    bindings::rdma_link_register(ops);
                }
                // `rdma_link_register` silently keeps the existing entry when the type is
                // taken, leaving our list node unlinked; unregistering it would then corrupt
                // the list.
                // SAFETY: `ops` is valid; the core links the node before returning.
                if unsafe { (*ops).list.next.is_null() } {
                    return Err(EEXIST);
                }
                Ok(())
            }),
        })
    }

    /// # Safety
    ///
    /// Called by the RDMA netlink core with a NUL-terminated name and a referenced netdevice.
    unsafe extern "C" fn newlink_callback(
        name: *const c_char,
        ndev: *mut bindings::net_device,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core passes a NUL-terminated name and holds a reference to `ndev`
            // for the duration of the call.
            let (name, ndev) = unsafe { (CStr::from_char_ptr(name), NetDevice::from_raw(ndev)) };
            T::newlink(name, ndev)?;
            Ok(0)
        })
    }
}

#[pinned_drop]
impl<T: LinkOps> PinnedDrop for LinkRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `ops` is registered. The core takes the registry's
        // write lock, so no `newlink` of `T` runs afterwards.
        unsafe { bindings::rdma_link_unregister(self.ops.get()) };
    }
}
