// SPDX-License-Identifier: GPL-2.0

//! User contexts and the driver-specific data of verbs.
//!
//! A user context (`struct ib_ucontext`, [`UContext`]) is a process's open uverbs file as the
//! driver sees it: the core allocates it with the size the operations table gives, and the
//! `alloc_ucontext` / `dealloc_ucontext` trampoline bodies here initialise and drop the
//! driver's part. [`UData`] (`struct ib_udata`) is the driver-specific payload a verb from
//! userspace carries, with the room for the driver's response.

use super::{Device, Driver};
use crate::{bindings, prelude::*, types::Opaque};

/// Driver-specific data passed with a verb (`struct ib_udata`).
///
/// # Invariants
///
/// `self.0` is a valid `struct ib_udata` for the duration of the operation it was passed to.
#[repr(transparent)]
pub struct UData(Opaque<bindings::ib_udata>);

impl UData {
    /// Creates a reference from a pointer the core passed to an operation.
    ///
    /// # Safety
    ///
    /// `ptr` is null or points to a valid `struct ib_udata` that outlives `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_udata) -> Option<&'a Self> {
        // SAFETY: `UData` is a transparent wrapper of `struct ib_udata`, and the caller
        // guarantees that a non-null `ptr` is valid for `'a`.
        unsafe { ptr.cast::<Self>().as_ref() }
    }

    /// Length of the driver-specific input from userspace.
    pub fn in_len(&self) -> usize {
        // SAFETY: By the type invariant, `self.0` is valid.
        unsafe { (*self.0.get()).inlen }
    }

    /// Length of the driver-specific output buffer userspace provided.
    pub fn out_len(&self) -> usize {
        // SAFETY: By the type invariant, `self.0` is valid.
        unsafe { (*self.0.get()).outlen }
    }

    /// Reads the start of the driver-specific input from userspace into `buf`.
    ///
    /// Fails with `EINVAL` if userspace provided less than `buf.len()` bytes (the command
    /// size is part of the driver's ABI).
    pub fn read_input(&self, buf: &mut [u8]) -> Result {
        if self.in_len() < buf.len() {
            return Err(EINVAL);
        }
        // SAFETY: By the type invariant, `self.0` is valid.
        let inbuf = unsafe { (*self.0.get()).inbuf };
        crate::uaccess::UserSlice::new(
            crate::uaccess::UserPtr::from_ptr(inbuf.cast_mut()),
            buf.len(),
        )
        .reader()
        .read_slice(buf)
    }

    /// Writes the driver's response to userspace.
    ///
    /// Fails with `EINVAL` if userspace provided less room than `data` needs (the response
    /// size is part of the driver's ABI).
    pub fn respond(&self, data: &[u8]) -> Result {
        if self.out_len() < data.len() {
            return Err(EINVAL);
        }
        // SAFETY: By the type invariant, `self.0` is valid.
        let out = unsafe { (*self.0.get()).outbuf };
        crate::uaccess::UserSlice::new(crate::uaccess::UserPtr::from_ptr(out), data.len())
            .writer()
            .write_slice(data)
    }

    /// Returns the user context of the verb this udata came with.
    pub fn ucontext<T: Driver>(&self) -> Option<&UContext<T>> {
        // SAFETY: `self.0` is the driver udata of a verb's attribute bundle; the context, if
        // any, is alive during the verb and belongs to this driver's device.
        unsafe {
            let ctx = bindings::rdma_udata_ucontext(self.0.get());
            ctx.cast::<UContext<T>>().as_ref()
        }
    }
}

/// A user context (`struct ib_ucontext`) followed by the driver's data.
///
/// # Invariants
///
/// `ib` is at offset 0 and initialised by the core; `data` is initialised between a
/// successful `alloc_ucontext` and `dealloc_ucontext`.
#[repr(C)]
#[pin_data]
pub struct UContext<T: Driver> {
    #[pin]
    ib: Opaque<bindings::ib_ucontext>,
    #[pin]
    data: T::UContext,
}

impl<T: Driver> UContext<T> {
    /// Returns the raw `struct ib_ucontext`.
    pub fn as_raw(&self) -> *mut bindings::ib_ucontext {
        self.ib.get()
    }

    /// Returns the driver data of the user context.
    pub fn data(&self) -> &T::UContext {
        &self.data
    }

    /// Returns the device of the user context.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: The core sets `device` before `alloc_ucontext`; a context's device is
        // registered while the context exists.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }
}

/// `alloc_ucontext` trampoline body.
///
/// # Safety
///
/// `uctx` is a zeroed allocation of `size_ib_ucontext` bytes whose `struct ib_ucontext`
/// header the core initialised, for a registered `Device<T>`.
pub(super) unsafe fn alloc<T: Driver>(
    uctx: *mut bindings::ib_ucontext,
    udata: *mut bindings::ib_udata,
) -> Result {
    const {
        assert!(core::mem::offset_of!(UContext<T>, ib) == 0);
    }
    // SAFETY: The core sets `device` before calling `alloc_ucontext`, and calls
    // operations only while the device data is alive.
    let dev = unsafe { Device::<T>::from_raw((*uctx).device) };
    let ctx = uctx.cast::<UContext<T>>();
    // SAFETY: `udata` is null or valid for the call.
    let init = T::alloc_ucontext(dev, unsafe { UData::from_raw(udata) });
    // SAFETY: `data` is uninitialised memory in the core's allocation, which never
    // moves. On failure nothing is initialised and the core frees the allocation
    // without calling `dealloc_ucontext`.
    unsafe { pin_init::raw_try_init(&raw mut (*ctx).data, init) }
}

/// `dealloc_ucontext` trampoline body.
///
/// # Safety
///
/// `uctx` was initialised by a successful `alloc_ucontext`; the core frees it next.
pub(super) unsafe fn dealloc<T: Driver>(uctx: *mut bindings::ib_ucontext) {
    let ctx = uctx.cast::<UContext<T>>();
    // SAFETY: `data` is initialised (successful `alloc_ucontext`) and is not used again.
    unsafe { core::ptr::drop_in_place(&raw mut (*ctx).data) };
}

/// `disassociate_ucontext` trampoline body.
///
/// # Safety
///
/// `uctx` is a context of a `Device<T>` initialised by a successful `alloc_ucontext` and not
/// deallocated yet (the core disassociates before it deallocates).
pub(super) unsafe fn disassociate<T: Driver>(uctx: *mut bindings::ib_ucontext) {
    // SAFETY: By the function's safety requirements, the context and its data are alive for
    // the call; the core never moves it.
    let ctx = unsafe { &*uctx.cast::<UContext<T>>() };
    T::disassociate_ucontext(ctx);
}
