// SPDX-License-Identifier: GPL-2.0

//! Memory regions (`struct ib_mr`) and pinned user memory (`struct ib_umem`).
//!
//! Unlike most verbs objects, the driver allocates memory regions and frees them in
//! `dereg_mr`; [`Mr<T>`] is a pinned box holding the core's `struct ib_mr` at offset 0.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h)

use super::{
    device::{Device, Driver, UData},
    pd::Pd,
};
use crate::{
    bindings,
    error::{from_err_ptr, to_result},
    prelude::*,
    types::Opaque,
};
use core::ptr::NonNull;

/// `IB_ACCESS_*` flags of a memory region.
pub mod access {
    /// The local side may write (required for any remote write or atomic).
    pub const LOCAL_WRITE: u32 = 1;
    /// Remote RDMA WRITE.
    pub const REMOTE_WRITE: u32 = 2;
    /// Remote RDMA READ.
    pub const REMOTE_READ: u32 = 4;
    /// Remote atomics.
    pub const REMOTE_ATOMIC: u32 = 8;
    /// Memory window binding.
    pub const MW_BIND: u32 = 16;
}

/// User memory pinned for the device (`struct ib_umem`).
///
/// # Invariants
///
/// `self.0` was returned by `ib_umem_get*()` and is released on drop.
pub struct Umem(NonNull<bindings::ib_umem>);

// SAFETY: The pinned pages and their scatterlist are not tied to a thread; the core's copy
// helpers may be used from any process context.
unsafe impl Send for Umem {}
// SAFETY: `&self` methods only read the immutable description or copy out.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `len` bytes of the calling process's memory at `addr` for `access`.
    ///
    /// # Context
    ///
    /// Process context of the process owning the memory; may sleep.
    pub fn get<T: Driver>(dev: &Device<T>, addr: u64, len: usize, access: u32) -> Result<Self> {
        let access = c_int::try_from(access).map_err(|_| EINVAL)?;
        // SAFETY: `dev` is a registered device; without a bundle, the core pins the user
        // range `[addr, addr + len)` of the current process, or returns an error pointer.
        let umem = from_err_ptr(unsafe {
            bindings::ib_umem_get_attr_or_va(dev.as_raw(), core::ptr::null(), 0, addr, len, access)
        })?;
        // INVARIANT: A valid umem from `ib_umem_get*()`.
        Ok(Self(NonNull::new(umem).ok_or(ENOMEM)?))
    }

    /// Length of the pinned range in bytes.
    pub fn len(&self) -> usize {
        // SAFETY: By the type invariant the umem is valid; `length` is immutable.
        unsafe { (*self.0.as_ptr()).length }
    }

    /// Returns whether the range is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `out.len()` bytes at byte offset `offset` of the range into `out`.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts: the pages are mapped atomically.
    pub fn copy_from(&self, offset: usize, out: &mut [u8]) -> Result {
        // SAFETY: The umem is valid and `out` is valid for writes of its length; the core
        // checks the range against the umem.
        to_result(unsafe {
            bindings::ib_umem_copy_from(out.as_mut_ptr().cast(), self.0.as_ptr(), offset, out.len())
        })
    }
}

impl Umem {
    /// Copies `data` to byte offset `offset` of the range.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts: the pages are mapped atomically.
    pub fn copy_to(&self, offset: usize, data: &[u8]) -> Result {
        let u = self.0.as_ptr();
        let end = offset.checked_add(data.len()).ok_or(EINVAL)?;
        if end > self.len() {
            return Err(EINVAL);
        }
        // SAFETY: By the type invariant the umem is valid; `address` is immutable.
        let first = unsafe { (*u).address } & (crate::page::PAGE_SIZE - 1);
        let skip = isize::try_from(offset.wrapping_add(first)).map_err(|_| EINVAL)?;
        // SAFETY: By the type invariant the umem is valid; its scatterlist describes the
        // pinned pages, which start `first` bytes into the first page. The range was checked
        // against the length above; `data` is valid for reads.
        let copied = unsafe {
            let sgt = &(*u).sgt_append.sgt;
            bindings::sg_pcopy_from_buffer(
                sgt.sgl,
                sgt.orig_nents,
                data.as_ptr().cast(),
                data.len(),
                skip,
            )
        };
        if copied == data.len() {
            Ok(())
        } else {
            Err(EINVAL)
        }
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own the umem.
        unsafe { bindings::ib_umem_release(self.0.as_ptr()) };
    }
}

/// A memory region: the core's `struct ib_mr` followed by the driver's data, in a pinned
/// box the driver owns from `reg_user_mr` to `dereg_mr`.
///
/// # Invariants
///
/// `ib` is at offset 0; the box is leaked to the core on registration and reclaimed in
/// `dereg_mr`.
#[repr(C)]
#[pin_data]
pub struct Mr<T: Driver> {
    #[pin]
    ib: Opaque<bindings::ib_mr>,
    #[pin]
    data: T::Mr,
}

impl<T: Driver> Mr<T> {
    /// Returns the driver data.
    pub fn data(&self) -> &T::Mr {
        &self.data
    }

    /// Returns the device.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: The core sets `device` right after registration; the device outlives its
        // regions, and no operation on the region runs before the core set it.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }
}

/// Returns a random byte for the variable part of a memory key, so that keys cannot be
/// predicted from the allocation order alone.
pub fn random_key_byte() -> u8 {
    // SAFETY: `get_random_u32` has no preconditions.
    unsafe { bindings::get_random_u32() }.to_le_bytes()[0]
}

/// A `reg_user_mr` request (`ibv_reg_mr`).
#[derive(Copy, Clone, Debug)]
pub struct UserMrReq {
    /// Start of the user range.
    pub start: u64,
    /// Length of the range.
    pub length: u64,
    /// I/O virtual address the range is known by on the wire (`ibv_reg_mr_iova`).
    pub iova: u64,
    /// `IB_ACCESS_*` flags, see [`access`].
    pub access: u32,
}

/// The keys of a new memory region.
#[derive(Copy, Clone, Debug)]
pub struct MrKeys {
    /// Local key (in work requests' SGEs).
    pub lkey: u32,
    /// Remote key (in RETH/AtomicETH).
    pub rkey: u32,
}

/// `reg_user_mr` trampoline body.
///
/// # Safety
///
/// `pd` is one of this driver's protection domains; `udata` null or valid.
pub(crate) unsafe fn reg_user<T: Driver>(
    pd: *mut bindings::ib_pd,
    req: &UserMrReq,
    udata: *mut bindings::ib_udata,
) -> Result<*mut bindings::ib_mr> {
    // SAFETY: Per the function's contract.
    let (pd, udata) = unsafe { (&*pd.cast::<Pd<T>>(), UData::from_raw(udata)) };
    let (keys, init) = T::reg_user_mr(pd, req, udata)?;
    new_mr::<T>(keys, init, req.iova, req.length)
}

/// `get_dma_mr` trampoline body.
///
/// # Safety
///
/// `pd` is one of this driver's protection domains.
pub(crate) unsafe fn get_dma<T: Driver>(
    pd: *mut bindings::ib_pd,
    access: u32,
) -> Result<*mut bindings::ib_mr> {
    // SAFETY: Per the function's contract.
    let pd = unsafe { &*pd.cast::<Pd<T>>() };
    let (keys, init) = T::get_dma_mr(pd, access)?;
    new_mr::<T>(keys, init, 0, u64::MAX)
}

/// Allocates a region with `init`'s data and leaks it to the core, with its keys and range
/// in the core's header.
fn new_mr<T: Driver>(
    keys: MrKeys,
    init: impl PinInit<T::Mr, Error>,
    iova: u64,
    length: u64,
) -> Result<*mut bindings::ib_mr> {
    let mr = KBox::pin_init(
        try_pin_init!(Mr::<T> {
            ib: Opaque::zeroed(),
            data <- init,
        }),
        GFP_KERNEL,
    )?;
    // SAFETY: The box is leaked to the core and reclaimed, pinned, in `dereg_mr`.
    let raw = KBox::into_raw(unsafe { Pin::into_inner_unchecked(mr) });
    // SAFETY: `raw` is valid; the core fills in the rest of the header after we return.
    unsafe {
        let ib = (*raw).ib.get();
        (*ib).lkey = keys.lkey;
        (*ib).rkey = keys.rkey;
        (*ib).iova = iova;
        (*ib).length = length;
    }
    Ok(raw.cast())
}

/// `dereg_mr` trampoline body.
///
/// # Safety
///
/// `mr` was returned by [`reg_user`] and is not used by the core afterwards.
pub(crate) unsafe fn dereg<T: Driver>(mr: *mut bindings::ib_mr) -> Result {
    let mr = mr.cast::<Mr<T>>();
    // SAFETY: Per the function's contract, `mr` is a leaked, live `KBox<Mr<T>>`. On error
    // the core keeps the region, so it is only reclaimed after the driver agreed.
    T::dereg_mr(unsafe { &*mr })?;
    // SAFETY: As above; nothing refers to the region anymore.
    drop(unsafe { KBox::from_raw(mr) });
    Ok(())
}
