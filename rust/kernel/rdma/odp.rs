// SPDX-License-Identifier: GPL-2.0

//! On-demand paging memory (`struct ib_umem_odp`): user memory registered without pinning,
//! its pages faulted in when the device needs them and given back when the kernel takes
//! them away (reclaim, migration, `munmap`, `madvise(MADV_DONTNEED)`, fork's COW).
//!
//! The core keeps the pages of an ODP umem in its `pfn_list`, under the umem's mutex: a
//! fault (`ib_umem_odp_map_dma_and_lock`) fills it, and the driver's MMU interval notifier
//! empties a range before the kernel may reuse its pages. A software device copies in
//! softirq, where it may neither take that mutex nor fault, so [`OdpUmem`] keeps its own
//! copy of the list (the *present map*) under a spinlock taken with bottom halves disabled:
//!
//! - [`OdpUmem::fault`] (process context) faults a range in and, still holding the mutex,
//!   copies the range's entries into the present map;
//! - the notifier, holding the mutex, clears the range from the present map before the
//!   core unmaps it (and before the kernel may free the pages): a copy that found a page
//!   present finishes under the spinlock before the notifier returns;
//! - a copy ([`OdpUmem::copy_from`], [`OdpUmem::copy_to`]) checks that every page it
//!   touches is present (and writable for a write) under the spinlock and copies under it;
//!   otherwise it fails with `EAGAIN` and the caller resolves the fault in process context
//!   and tries again.
//!
//! C headers: [`include/rdma/ib_umem_odp.h`](srctree/include/rdma/ib_umem_odp.h),
//! [`include/linux/hmm.h`](srctree/include/linux/hmm.h),
//! [`include/linux/mmu_notifier.h`](srctree/include/linux/mmu_notifier.h)

use super::{
    device::{Device, Driver},
    mr::{Access, AccessFlags},
    BhSpinLock, MaySleep,
};
use crate::{
    alloc::{flags::GFP_KERNEL_ACCOUNT, KVVec},
    bindings,
    error::from_err_ptr,
    page::PAGE_SIZE,
    prelude::*,
    static_lock_class,
    sync::rcu::synchronize_rcu,
};
use core::ptr::NonNull;

/// What `ibv_advise_mr` asks of the device (`enum ib_uverbs_advise_mr_advice`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MrAdvice {
    /// Fault the pages in for reading.
    Prefetch,
    /// Fault the pages in for writing.
    PrefetchWrite,
    /// Map the pages the process has present, without faulting.
    PrefetchNoFault,
}

impl MrAdvice {
    /// Returns the advice the core passed, if it is one of the above.
    pub fn from_raw(advice: bindings::ib_uverbs_advise_mr_advice) -> Option<Self> {
        use bindings::ib_uverbs_advise_mr_advice as A;
        match advice {
            A::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH => Some(Self::Prefetch),
            A::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_WRITE => Some(Self::PrefetchWrite),
            A::IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT => Some(Self::PrefetchNoFault),
            _ => None,
        }
    }
}

/// `HMM_PFN_VALID`: the entry names a page.
const PFN_VALID: usize = 1 << (usize::BITS - 1);
/// `HMM_PFN_WRITE`: the page may be written.
const PFN_WRITE: usize = 1 << (usize::BITS - 2);

/// Returns whether every entry of `entries` names a page (writable, for `write`).
fn all_present(entries: &[usize], write: bool) -> bool {
    let need = if write {
        PFN_VALID | PFN_WRITE
    } else {
        PFN_VALID
    };
    entries.iter().all(|&p| p & need == need)
}

/// What the present map's lock protects.
struct MapState {
    /// One `hmm_pfn` per page of the umem.
    pfns: KVVec<usize>,
    /// The pages an invalidation is taking away: no longer present for [`OdpUmem::is_present`]
    /// while copies that were checked before still complete. Empty but during the notifier.
    going: core::ops::Range<usize>,
}

impl MapState {
    /// Returns whether every page of `pages` is present (and writable, for `write`) and not
    /// being taken away.
    fn present(&self, pages: core::ops::Range<usize>, write: bool) -> bool {
        let overlaps = pages.start < self.going.end && self.going.start < pages.end;
        !overlaps && self.pfns.get(pages).is_some_and(|s| all_present(s, write))
    }
}

/// The driver's copy of the umem's page list.
#[pin_data]
struct PresentMap {
    #[pin]
    state: BhSpinLock<MapState>,
}

/// User memory registered for on-demand paging.
///
/// # Invariants
///
/// `odp` was returned by `ib_umem_odp_get()` with `ODP_OPS` as its notifier operations,
/// is not implicit, has pages of `PAGE_SIZE`, and is released on drop, before `map`.
/// `odp->private` points to `map` (set under the umem's mutex), whose list has one entry per
/// page of the umem, `start` being the address of the first. An entry with `PFN_VALID`
/// names a page that stays allocated until the notifier clears the entry (under the
/// spinlock), which it does before the core lets the kernel take the page, and only after
/// marking the entry `going` and waiting for an RCU grace period.
pub struct OdpUmem {
    odp: NonNull<bindings::ib_umem_odp>,
    map: Pin<KBox<PresentMap>>,
    /// The user address the umem starts at (`umem.address`).
    address: u64,
    /// `address` rounded down to a page.
    start: u64,
    /// Length in bytes.
    len: usize,
    /// The umem's `writable` bit: only then may the device write to its pages.
    writable: bool,
}

// SAFETY: The umem is not tied to a thread; the present map is under its spinlock and the
// core's list under its mutex.
unsafe impl Send for OdpUmem {}
// SAFETY: `&self` methods take the spinlock or the umem's mutex for anything mutable.
unsafe impl Sync for OdpUmem {}

/// The notifier operations of every [`OdpUmem`].
static ODP_OPS: bindings::mmu_interval_notifier_ops = bindings::mmu_interval_notifier_ops {
    invalidate: Some(invalidate),
    invalidate_start: None,
    invalidate_finish: None,
};

/// The MMU interval notifier: the kernel is about to take the pages of `range` away.
///
/// # Safety
///
/// Called by the MMU notifier core with the notifier of a live umem of [`OdpUmem`] (the
/// notifier is removed, waiting for running callbacks, before the umem is freed).
unsafe extern "C" fn invalidate(
    mni: *mut bindings::mmu_interval_notifier,
    range: *const bindings::mmu_notifier_range,
    cur_seq: c_ulong,
) -> bool {
    // SAFETY: `range` is valid for the call.
    if !unsafe { bindings::mmu_notifier_range_blockable(range) } {
        // The core calls again where it may block (as rdma_rxe, which needs the mutex too).
        return false;
    }
    // SAFETY: The notifier is the `notifier` field of a live `ib_umem_odp` (the contract).
    let odp = unsafe { crate::container_of!(mni, bindings::ib_umem_odp, notifier) };
    // SAFETY: `odp` is live; its mutex was initialised by `ib_umem_odp_get()`.
    unsafe { bindings::mutex_lock(&raw mut (*odp).umem_mutex) };
    // SAFETY: Under the umem's mutex, as the MMU notifier core requires.
    unsafe { bindings::mmu_interval_set_seq(mni, cur_seq) };
    // SAFETY: `odp` is live; the interval and `range` are immutable for the call.
    let (first, last, start, end) = unsafe {
        (
            (*mni).interval_tree.start,
            (*mni).interval_tree.last,
            (*range).start,
            (*range).end,
        )
    };
    let start = start.max(first);
    let end = end.min(last.wrapping_add(1));
    // SAFETY: `private` is written under the mutex, which we hold.
    let map = unsafe { (*odp).private }.cast::<PresentMap>().cast_const();
    if !map.is_null() && start < end {
        // SAFETY: By the invariants of `OdpUmem`, a non-null `private` points to its map,
        // which outlives the umem's notifier.
        let map = unsafe { &*map };
        let from = (start - first) / PAGE_SIZE;
        let to = (end - first).div_ceil(PAGE_SIZE);
        let any = {
            let mut st = map.state.lock();
            let any = st
                .pfns
                .get(from..to)
                .is_some_and(|s| s.iter().any(|&p| p & PFN_VALID != 0));
            if any {
                st.going = from..to;
            }
            any
        };
        if any {
            // A responder checks that a request's pages are present, then accepts the
            // request and copies, all with bottom halves disabled (an RCU read-side section).
            // Checks from now on find the range absent; the grace period lets every check
            // made before finish its copy, which the entries still allow.
            synchronize_rcu();
            let mut st = map.state.lock();
            for p in st.pfns.get_mut(from..to).into_iter().flatten() {
                *p = 0;
            }
            st.going = 0..0;
        }
    }
    // SAFETY: The mutex is held; the range lies in the umem.
    unsafe { bindings::ib_umem_odp_unmap_dma_pages(odp, start as u64, end as u64) };
    // SAFETY: Taken above.
    unsafe { bindings::mutex_unlock(&raw mut (*odp).umem_mutex) };
    true
}

impl OdpUmem {
    /// Registers `len` bytes of the calling process's memory at `addr` for on-demand paging
    /// with `access` (which must ask for it, `IB_ACCESS_ON_DEMAND`), and maps the pages that
    /// are present already, without faulting (as rdma_rxe). `EOPNOTSUPP` for implicit ODP
    /// (the whole address space) and huge pages.
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
        if !access.contains(Access::OnDemand) {
            return Err(EINVAL);
        }
        if access.contains(Access::Hugetlb) || (addr == 0 && len == usize::MAX) {
            return Err(EOPNOTSUPP);
        }
        if len == 0 {
            return Err(EINVAL);
        }
        let page = PAGE_SIZE as u64;
        let start = addr & !(page - 1);
        let end = addr
            .checked_add(len as u64)
            .and_then(|e| e.checked_add(page - 1))
            .ok_or(EOVERFLOW)?
            & !(page - 1);
        let npages = usize::try_from((end - start) / page)?;
        let pfns = KVVec::from_elem(0usize, npages, GFP_KERNEL_ACCOUNT)?;
        let state = MapState { pfns, going: 0..0 };
        let map = KBox::pin_init(
            pin_init!(PresentMap {
                state <- BhSpinLock::new(state, c"rdma_odp_present", static_lock_class!()),
            }),
            GFP_KERNEL_ACCOUNT,
        )?;
        let c_access = c_int::try_from(access.bits()).map_err(|_| EINVAL)?;
        // SAFETY: `dev` is a registered device; the core registers the range of the current
        // process with our notifier operations, which stay valid (static), or returns an
        // error pointer.
        let odp = from_err_ptr(unsafe {
            bindings::ib_umem_odp_get(
                dev.as_raw(),
                usize::try_from(addr)?,
                len,
                c_access,
                &ODP_OPS,
            )
        })?;
        let odp = NonNull::new(odp).ok_or(ENOMEM)?;
        // SAFETY: `odp` is valid; `writable` is set by `ib_umem_odp_get()` and immutable.
        let writable = unsafe { (*odp.as_ptr()).umem.writable() } != 0;
        // INVARIANT: From `ib_umem_odp_get()` with `ODP_OPS`, explicit, of `PAGE_SIZE` pages
        // (no `IB_ACCESS_HUGETLB`); released by `drop` from here on. `private` is set below
        // before anything else runs on `this`.
        let this = Self {
            odp,
            map,
            address: addr,
            start,
            len,
            writable,
        };
        // SAFETY: `odp` is valid; its interval is immutable.
        let (first, last) = unsafe {
            let t = &(*odp.as_ptr()).notifier.interval_tree;
            (t.start, t.last)
        };
        if first as u64 != start || (last as u64).wrapping_add(1) != end {
            return Err(EINVAL);
        }
        let raw = this.raw_mutex();
        // SAFETY: The mutex was initialised by `ib_umem_odp_get()`.
        unsafe { bindings::mutex_lock(raw) };
        // SAFETY: `private` is read by the notifier under the mutex, which we hold; the map
        // is pinned and outlives the umem (dropped after it).
        unsafe {
            (*odp.as_ptr()).private = core::ptr::from_ref::<PresentMap>(&this.map)
                .cast_mut()
                .cast()
        };
        // SAFETY: Taken above.
        unsafe { bindings::mutex_unlock(raw) };
        this.map_range(0, len, false, false)?;
        Ok(this)
    }

    /// Returns the umem's mutex.
    fn raw_mutex(&self) -> *mut bindings::mutex {
        // SAFETY: By the type invariant the umem is valid.
        unsafe { &raw mut (*self.odp.as_ptr()).umem_mutex }
    }

    /// Length of the range in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Returns whether the range is empty (never: an empty range is refused).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Returns whether the memory may be written (registered with a writable right).
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// Returns the indices in the present map of the pages that the `len` bytes at byte
    /// `offset` touch; `EINVAL` if the range does not hold them.
    fn pages(&self, offset: usize, len: usize) -> Result<core::ops::Range<usize>> {
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end > self.len {
            return Err(EINVAL);
        }
        let lead = usize::try_from(self.address - self.start)?;
        let first = (lead + offset) / PAGE_SIZE;
        let last = (lead + end).div_ceil(PAGE_SIZE);
        Ok(first..last.max(first))
    }

    /// Faults the `len` bytes at byte `offset` in (for writing if `write`), or with `fault`
    /// false maps only what is present already, and copies their entries into the present
    /// map.
    fn map_range(&self, offset: usize, len: usize, write: bool, fault: bool) -> Result {
        let pages = self.pages(offset, len)?;
        if pages.is_empty() {
            return Ok(());
        }
        if write && !self.writable {
            return Err(EACCES);
        }
        let va = self
            .address
            .checked_add(u64::try_from(offset)?)
            .ok_or(EINVAL)?;
        let mask = if write { PFN_WRITE as u64 } else { 0 };
        // SAFETY: By the type invariant the umem is valid; the range lies in it (checked by
        // `pages`). On success the core returns with the umem's mutex held.
        let n = unsafe {
            bindings::ib_umem_odp_map_dma_and_lock(
                self.odp.as_ptr(),
                va,
                u64::try_from(len.max(1))?,
                mask,
                fault,
            )
        };
        if n < 0 {
            return Err(Error::from_errno(n));
        }
        {
            let mut map = self.map.state.lock();
            // SAFETY: The umem is valid and its mutex held: its page list is stable and has
            // one entry per page, as the present map.
            let list = unsafe { (*self.odp.as_ptr()).map.pfn_list };
            for i in pages {
                if let Some(p) = map.pfns.get_mut(i) {
                    // SAFETY: `i` is below the umem's page count (the map's length).
                    *p = unsafe { *list.add(i) };
                }
            }
        }
        // SAFETY: Taken by `ib_umem_odp_map_dma_and_lock()` above.
        unsafe { bindings::mutex_unlock(self.raw_mutex()) };
        Ok(())
    }

    /// Faults the `len` bytes at byte `offset` in, for writing if `write`, and makes them
    /// present for the copies; `EACCES` for a write to memory registered read-only, or the
    /// fault's error (`EFAULT` for an address the process has no mapping at).
    ///
    /// # Context
    ///
    /// Process context (`_ctx`); may sleep (any process: the umem knows its address space).
    pub fn fault(&self, _ctx: &MaySleep<'_>, offset: usize, len: usize, write: bool) -> Result {
        crate::task::might_sleep();
        self.map_range(offset, len, write, true)
    }

    /// Makes present whatever of the `len` bytes at byte `offset` the process has mapped
    /// already, without faulting (`IB_UVERBS_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT`).
    ///
    /// # Context
    ///
    /// Process context (`_ctx`); may sleep.
    pub fn snapshot(&self, _ctx: &MaySleep<'_>, offset: usize, len: usize) -> Result {
        crate::task::might_sleep();
        self.map_range(offset, len, false, false)
    }

    /// Returns whether every page the `len` bytes at byte `offset` touch is present (and
    /// writable, for `write`): whether a copy would succeed now.
    ///
    /// Called with bottom halves disabled (or in another RCU read-side critical section), a
    /// `true` holds until they are enabled again: an invalidation makes the pages absent for
    /// later checks at once, but takes them away from copies only after a grace period. So
    /// a responder may check a request's pages, accept the request and copy, without an
    /// invalidation on another CPU failing the copy in between.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    pub fn is_present(&self, offset: usize, len: usize, write: bool) -> bool {
        let Ok(pages) = self.pages(offset, len) else {
            return false;
        };
        self.map.state.lock().present(pages, write)
    }

    /// Calls `f(page address, bytes)` for each piece, within one page, of the `len` bytes
    /// at byte `offset`, each page mapped meanwhile, under the present map's lock; `EAGAIN`
    /// (and nothing copied) if a page is not present, or not writable for `write`.
    fn for_each_piece(
        &self,
        offset: usize,
        len: usize,
        write: bool,
        mut f: impl FnMut(*mut u8, usize),
    ) -> Result {
        let pages = self.pages(offset, len)?;
        let map = self.map.state.lock();
        // Pages being taken away still count: a request checked before the notifier marked
        // them completes its copy before they are cleared.
        let entries = map.pfns.get(pages).ok_or(EINVAL)?;
        if !all_present(entries, write) {
            return Err(EAGAIN);
        }
        let lead = usize::try_from(self.address - self.start)?;
        let mut pos = lead + offset;
        let mut left = len;
        for &pfn in entries {
            if left == 0 {
                break;
            }
            let in_page = pos % PAGE_SIZE;
            let n = (PAGE_SIZE - in_page).min(left);
            // SAFETY: The entry is valid (checked above): it names a page that stays
            // allocated while the entry is set, and the notifier clears it only under the
            // lock we hold.
            let page = unsafe { bindings::hmm_pfn_to_page(pfn) };
            // SAFETY: The page is allocated (above); the mapping is local to this thread
            // and undone below, before anything else maps.
            let va = unsafe { bindings::kmap_local_page(page) }.cast::<u8>();
            // SAFETY: `in_page + n <= PAGE_SIZE`: the piece lies in the mapped page.
            f(unsafe { va.add(in_page) }, n);
            // SAFETY: `va` was returned by `kmap_local_page` above, the latest mapping.
            unsafe { bindings::kunmap_local(va.cast()) };
            pos += n;
            left -= n;
        }
        Ok(())
    }

    /// Copies `out.len()` bytes at byte offset `offset` of the range into `out`; `EAGAIN` if
    /// a page is not present ([`Self::fault`] it in, in process context, and try again).
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    pub fn copy_from(&self, offset: usize, out: &mut [u8]) -> Result {
        let len = out.len();
        // SAFETY: `for_each_piece` hands out mapped pieces of present pages, valid for their
        // length while the callback runs (under the present map's lock); user memory and
        // `out` do not overlap.
        unsafe { super::umem::copy_out(out, |f| self.for_each_piece(offset, len, false, f)) }
    }

    /// Copies `data` to byte offset `offset` of the range; `EACCES` if the memory was
    /// registered read-only, `EAGAIN` if a page is not present or not writable yet
    /// ([`Self::fault`] it in for writing, in process context, and try again).
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    pub fn copy_to(&self, offset: usize, data: &[u8]) -> Result {
        if !self.writable {
            return Err(EACCES);
        }
        // SAFETY: `for_each_piece` hands out mapped pieces of present pages that are
        // writable (asked for with `write`), valid for their length while the callback runs
        // (under the present map's lock); user memory and `data` do not overlap.
        unsafe { super::umem::copy_in(data, |f| self.for_each_piece(offset, data.len(), true, f)) }
    }

    /// Checks that the memory allows `access` after a re-registration that keeps it: `EACCES`
    /// for a writable access to memory registered read-only.
    pub fn check_rereg_access(&self, access: AccessFlags) -> Result {
        let writes = Access::LocalWrite | Access::RemoteWrite | Access::RemoteAtomic;
        if access.contains_any(writes) && !self.writable {
            return Err(EACCES);
        }
        Ok(())
    }
}

impl Drop for OdpUmem {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own the umem; releasing it removes the notifier
        // (waiting for a running callback) before the present map is dropped.
        unsafe { bindings::ib_umem_odp_release(self.odp.as_ptr()) };
    }
}
