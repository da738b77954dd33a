// SPDX-License-Identifier: GPL-2.0

//! User memory pinned for the device (`struct ib_umem`), and the piecewise copies the data
//! path makes to and from pinned and on-demand paging memory.
//!
//! C header: [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h)

use super::{
    device::{Device, Driver},
    mr::AccessFlags,
    MaySleep,
};
use crate::{
    alloc::{flags::GFP_KERNEL_ACCOUNT, KVVec},
    bindings,
    error::{from_err_ptr, to_result},
    prelude::*,
};
use core::ptr::NonNull;

/// User memory pinned for the device (`struct ib_umem`).
///
/// The data path copies to and from it at any byte offset, one packet at a time, in
/// softirq. Walking the umem's scatterlist from its start for each copy would cost time
/// proportional to the region's size per packet; instead the pinned pages are listed once,
/// at registration, in an array indexed by page number (as rdma_rxe's page list), and each
/// copy maps just the pages it touches (`kmap_local_page`).
///
/// # Invariants
///
/// `umem` was returned by `ib_umem_get*()` and is released on drop. `pages` lists the pages
/// its scatterlist describes, in order (they stay pinned while `umem` lives); the range
/// starts `first` bytes into `pages[0]`. `writable` is the umem's own `writable` bit: the
/// pages were pinned for writing (`FOLL_WRITE`) and are dirtied on release only if it is
/// set, so only then may the kernel write to them.
pub struct Umem {
    umem: NonNull<bindings::ib_umem>,
    pages: KVVec<NonNull<bindings::page>>,
    first: usize,
    writable: bool,
}

// SAFETY: The pinned pages and their list are not tied to a thread; copies map pages
// locally in whatever context they run.
unsafe impl Send for Umem {}
// SAFETY: `&self` methods only read the immutable description or copy through it.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `len` bytes of the calling process's memory at `addr` for `access`.
    ///
    /// # Context
    ///
    /// Process context of the process owning the memory (`_ctx`); may sleep.
    pub fn get<T: Driver>(
        _ctx: &MaySleep<'_>,
        dev: &Device<T>,
        addr: u64,
        len: usize,
        access: AccessFlags,
    ) -> Result<Self> {
        crate::task::might_sleep();
        let access = c_int::try_from(access.bits()).map_err(|_| EINVAL)?;
        // SAFETY: `dev` is a registered device; without a bundle, the core pins the user
        // range `[addr, addr + len)` of the current process, or returns an error pointer.
        let umem = from_err_ptr(unsafe {
            bindings::ib_umem_get_attr_or_va(dev.as_raw(), core::ptr::null(), 0, addr, len, access)
        })?;
        let umem = NonNull::new(umem).ok_or(ENOMEM)?;
        // SAFETY: The umem is valid; `address` is immutable.
        let first = unsafe { (*umem.as_ptr()).address } & (crate::page::PAGE_SIZE - 1);
        // SAFETY: The umem is valid; `writable` is set by `ib_umem_get()` and immutable.
        let writable = unsafe { (*umem.as_ptr()).writable() } != 0;
        // INVARIANT: A valid umem from `ib_umem_get*()`, released by `drop` if listing its
        // pages fails below; `pages` is filled in before `this` is returned.
        let mut this = Self {
            umem,
            pages: KVVec::new(),
            first,
            writable,
        };
        let npages = first
            .checked_add(len)
            .and_then(|n| n.checked_add(crate::page::PAGE_SIZE - 1))
            .ok_or(EINVAL)?
            / crate::page::PAGE_SIZE;
        this.pages.reserve(npages, GFP_KERNEL_ACCOUNT)?;
        let mut iter = core::mem::MaybeUninit::<bindings::sg_page_iter>::uninit();
        // SAFETY: The umem is valid; its scatterlist describes the pinned pages, and the
        // iterator is initialised by `__sg_page_iter_start` before it is used.
        unsafe {
            let sgt = &(*umem.as_ptr()).sgt_append.sgt;
            bindings::__sg_page_iter_start(iter.as_mut_ptr(), sgt.sgl, sgt.orig_nents, 0);
        }
        // SAFETY: The iterator was started above and walks the umem's scatterlist.
        while unsafe { bindings::__sg_page_iter_next(iter.as_mut_ptr()) } {
            // SAFETY: The iterator stands on a page of the scatterlist.
            let page = unsafe { bindings::sg_page_iter_page(iter.as_mut_ptr()) };
            this.pages
                .push(NonNull::new(page).ok_or(EINVAL)?, GFP_KERNEL_ACCOUNT)?;
        }
        if this.pages.len() < npages {
            return Err(EINVAL);
        }
        Ok(this)
    }

    /// Checks that the pinned memory allows `access` after a re-registration that keeps
    /// it (`ib_umem_check_rereg`): `EACCES` for a writable access to memory pinned
    /// read-only.
    pub fn check_rereg_access(&self, access: AccessFlags) -> Result {
        let access = c_int::try_from(access.bits()).map_err(|_| EINVAL)?;
        let flags = bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS as c_int;
        // SAFETY: By the type invariant the umem is valid.
        to_result(unsafe { bindings::ib_umem_check_rereg(self.umem.as_ptr(), flags, access) })
    }

    /// Length of the pinned range in bytes.
    pub fn len(&self) -> usize {
        // SAFETY: By the type invariant the umem is valid; `length` is immutable.
        unsafe { (*self.umem.as_ptr()).length }
    }

    /// Returns whether the range is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Calls `f(page address, bytes)` for each piece, within one page, of the `len` bytes at
    /// byte offset `offset` of the range, the page mapped meanwhile; `EINVAL` if the range
    /// does not hold them.
    fn for_each_piece(
        &self,
        offset: usize,
        len: usize,
        mut f: impl FnMut(*mut u8, usize),
    ) -> Result {
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end > self.len() {
            return Err(EINVAL);
        }
        let mut pos = self.first.checked_add(offset).ok_or(EINVAL)?;
        let mut left = len;
        while left > 0 {
            let in_page = pos % crate::page::PAGE_SIZE;
            let n = (crate::page::PAGE_SIZE - in_page).min(left);
            let page = *self.pages.get(pos / crate::page::PAGE_SIZE).ok_or(EINVAL)?;
            // SAFETY: By the type invariant the page is pinned while `self` lives; the
            // mapping is local to this thread and undone below, before anything else maps.
            let va = unsafe { bindings::kmap_local_page(page.as_ptr()) }.cast::<u8>();
            // SAFETY: `in_page + n <= PAGE_SIZE`: the piece lies in the mapped page.
            f(unsafe { va.add(in_page) }, n);
            // SAFETY: `va` was returned by `kmap_local_page` above, the latest mapping.
            unsafe { bindings::kunmap_local(va.cast()) };
            pos += n;
            left -= n;
        }
        Ok(())
    }

    /// Copies `out.len()` bytes at byte offset `offset` of the range into `out`.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts: the pages are mapped locally.
    pub fn copy_from(&self, offset: usize, out: &mut [u8]) -> Result {
        let len = out.len();
        // SAFETY: `for_each_piece` hands out mapped pieces of pinned pages, valid for their
        // length while the callback runs; user memory and `out` do not overlap.
        unsafe { copy_out(out, |f| self.for_each_piece(offset, len, f)) }
    }

    /// Copies `data` to byte offset `offset` of the range; `EACCES` if the memory was pinned
    /// read-only (the pages may be the zero page or a read-only file's page cache, and would
    /// not be dirtied on release).
    ///
    /// # Context
    ///
    /// Any context but hard interrupts: the pages are mapped locally.
    pub fn copy_to(&self, offset: usize, data: &[u8]) -> Result {
        if !self.writable {
            return Err(EACCES);
        }
        // SAFETY: `for_each_piece` hands out mapped pieces of pinned pages, valid for their
        // length while the callback runs; they were pinned for writing (checked above); user
        // memory and `data` do not overlap.
        unsafe { copy_in(data, |f| self.for_each_piece(offset, data.len(), f)) }
    }
}

/// Copies the pieces of memory `walk` hands to its callback (`f(address, bytes)`), in order,
/// into `out`; `EINVAL` (the rest not copied) if they add up to more than `out.len()`.
///
/// # Safety
///
/// Each address `walk` passes is valid for reads of its byte count while the callback
/// runs, and does not overlap `out`.
pub(super) unsafe fn copy_out(
    out: &mut [u8],
    walk: impl FnOnce(&mut dyn FnMut(*mut u8, usize)) -> Result,
) -> Result {
    let mut done = 0usize;
    let mut over = false;
    walk(
        &mut |src, n| match out.get_mut(done..).and_then(|o| o.get_mut(..n)) {
            Some(dst) => {
                // SAFETY: Per the function's contract `src` is valid for `n` bytes and does not
                // overlap `out`; `dst` is `n` bytes of `out`.
                unsafe { core::ptr::copy_nonoverlapping(src, dst.as_mut_ptr(), n) };
                done += n;
            }
            None => over = true,
        },
    )?;
    if over {
        return Err(EINVAL);
    }
    Ok(())
}

/// Copies `data`, in order, into the pieces of memory `walk` hands to its callback
/// (`f(address, bytes)`); `EINVAL` (the rest not copied) if they add up to more than
/// `data.len()`.
///
/// # Safety
///
/// Each address `walk` passes is valid for writes of its byte count while the callback
/// runs, may be written by the kernel, and does not overlap `data`.
pub(super) unsafe fn copy_in(
    data: &[u8],
    walk: impl FnOnce(&mut dyn FnMut(*mut u8, usize)) -> Result,
) -> Result {
    let mut done = 0usize;
    let mut over = false;
    walk(
        &mut |dst, n| match data.get(done..).and_then(|d| d.get(..n)) {
            Some(src) => {
                // SAFETY: Per the function's contract `dst` is valid for writes of `n` bytes and
                // does not overlap `data`; `src` is `n` bytes of `data`.
                unsafe { core::ptr::copy_nonoverlapping(src.as_ptr(), dst, n) };
                done += n;
            }
            None => over = true,
        },
    )?;
    if over {
        return Err(EINVAL);
    }
    Ok(())
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own the umem.
        unsafe { bindings::ib_umem_release(self.umem.as_ptr()) };
    }
}
