// SPDX-License-Identifier: GPL-2.0

//! User contexts and the driver-specific data of verbs.
//!
//! A user context (`struct ib_ucontext`, [`UContext`]) is a process's open uverbs file as the
//! driver sees it: the core allocates it with the size the operations table gives, and the
//! `alloc_ucontext` / `dealloc_ucontext` trampoline bodies here initialise and drop the
//! driver's part. [`UData`] (`struct ib_udata`) is the driver-specific payload a verb from
//! userspace carries, with the room for the driver's response.

use super::super::mmap::MmapTable;
use super::{Device, Driver};
use crate::{bindings, error::from_result, prelude::*, types::Opaque};
use core::marker::PhantomData;

/// Driver-specific data passed with a verb (`struct ib_udata`) on a device of driver `T`.
///
/// The driver type is part of the type so that [`UData::ucontext`] can only return the user
/// context type of the device the verb was issued on.
///
/// # Invariants
///
/// `self.0` is a valid `struct ib_udata` for the duration of the operation it was passed to,
/// which is an operation of a `Device<T>`: the user context it names, if any, is a
/// `UContext<T>`.
#[repr(transparent)]
pub struct UData<T: Driver>(Opaque<bindings::ib_udata>, PhantomData<T>);

impl<T: Driver> UData<T> {
    /// Creates a reference from a pointer the core passed to an operation.
    ///
    /// # Safety
    ///
    /// `ptr` is null or points to a valid `struct ib_udata` that outlives `'a`, passed to an
    /// operation of a `Device<T>`.
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
    pub fn ucontext(&self) -> Option<&UContext<T>> {
        // SAFETY: `self.0` is the `driver_udata` of a verb's attribute bundle (the helper is
        // `rdma_udata_to_drv_context()` without the cast); the bundle's `context` is null or
        // the ufile's user context (`rdma_core.c` 308, 451, 863 set it from the uobject's),
        // alive during the verb, and by the type invariant a `UContext<T>`.
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
/// `ib` is at offset 0 and initialised by the core; `mmaps` and `data` are initialised between
/// a successful `alloc_ucontext` and `dealloc_ucontext`.
#[repr(C)]
#[pin_data]
pub struct UContext<T: Driver> {
    #[pin]
    ib: Opaque<bindings::ib_ucontext>,
    #[pin]
    mmaps: MmapTable,
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

    /// Returns the context's table of mmap entries.
    pub(crate) fn mmaps(&self) -> &MmapTable {
        &self.mmaps
    }

    /// Returns the device of the user context.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: The core sets `device` before `alloc_ucontext`; a context's device is
        // registered while the context exists.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }
}

/// The `alloc_ucontext` operation.
///
/// # Safety
///
/// Called by the core: `uctx` is a zeroed allocation of `size_ib_ucontext` bytes whose `struct
/// ib_ucontext` header the core initialised, for a registered `Device<T>`.
pub(super) unsafe extern "C" fn alloc<T: Driver>(
    uctx: *mut bindings::ib_ucontext,
    udata: *mut bindings::ib_udata,
) -> c_int {
    const {
        assert!(core::mem::offset_of!(UContext<T>, ib) == 0);
    }
    from_result(|| {
        // SAFETY: The core sets `device` before calling `alloc_ucontext`, and calls
        // operations only while the device data is alive.
        let dev = unsafe { Device::<T>::from_raw((*uctx).device) };
        let ctx = uctx.cast::<UContext<T>>();
        // SAFETY: `mmaps` is uninitialised memory in the core's allocation, which never moves;
        // the initialiser cannot fail.
        unsafe { pin_init::raw_try_init(&raw mut (*ctx).mmaps, MmapTable::new()) }?;
        // SAFETY: `udata` is null or valid for the call, an operation of a `Device<T>`.
        let init = T::alloc_ucontext(dev, unsafe { UData::from_raw(udata) });
        // SAFETY: `data` is uninitialised memory in the core's allocation, which never moves.
        let ret = unsafe { pin_init::raw_try_init(&raw mut (*ctx).data, init) };
        if ret.is_err() {
            // SAFETY: `mmaps` was initialised above and is empty (no verb ran on the context);
            // the core frees the allocation without calling `dealloc_ucontext`
            // (`uverbs_cmd.c` 247-250, `ib_alloc_ucontext()`).
            unsafe { core::ptr::drop_in_place(&raw mut (*ctx).mmaps) };
        }
        ret?;
        Ok(0)
    })
}

/// The `dealloc_ucontext` operation.
///
/// # Safety
///
/// Called by the core: `uctx` was initialised by a successful `alloc_ucontext`; the core frees it
/// next.
pub(super) unsafe extern "C" fn dealloc<T: Driver>(uctx: *mut bindings::ib_ucontext) {
    let ctx = uctx.cast::<UContext<T>>();
    // SAFETY: The context is alive for the call (successful `alloc_ucontext`, not freed yet).
    // Every object of the context was destroyed before (`rdma_core.c`
    // `uverbs_destroy_ufile_hw()`), so this only removes entries of buffers a driver still
    // holds; the core expects none left after this call (`uverbs_main.c` 977-978).
    unsafe { (*ctx).mmaps.remove_all() };
    // SAFETY: `data` and `mmaps` are initialised (successful `alloc_ucontext`) and are not
    // used again.
    unsafe {
        core::ptr::drop_in_place(&raw mut (*ctx).data);
        core::ptr::drop_in_place(&raw mut (*ctx).mmaps);
    }
}

/// The `disassociate_ucontext` operation.
///
/// # Safety
///
/// Called by the core: `uctx` is a context of a `Device<T>` initialised by a successful
/// `alloc_ucontext` and not deallocated yet (the core disassociates before it deallocates).
pub(super) unsafe extern "C" fn disassociate<T: Driver>(uctx: *mut bindings::ib_ucontext) {
    // SAFETY: By the function's safety requirements, the context and its data are alive for
    // the call; the core never moves it.
    let ctx = unsafe { &*uctx.cast::<UContext<T>>() };
    T::disassociate_ucontext(ctx);
}
