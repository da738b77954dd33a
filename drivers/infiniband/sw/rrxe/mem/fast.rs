// SPDX-License-Identifier: GPL-2.0

//! Fast-registration regions of kernel consumers (`ib_alloc_mr`), in the states of IBA
//! 10.6.1: *free* when allocated and after an invalidation (`IB_WR_LOCAL_INV`, a received
//! SEND with invalidate: no key resolves), *valid* after an `IB_WR_REG_MR` (its key
//! resolves to the pages last mapped with `ib_map_mr_sg`). `ib_map_mr_sg` fills a staged
//! page list; the registration, carried out by the requester in send queue order, copies
//! it into the active one, so a mapping made for the next registration never changes what
//! the current one names. Every access copies under the region's lock, after checking
//! again that the registration it was resolved under is still the current one.

use super::Key;
use crate::proto::target::{AccessError, PageLayout, Region};
use crate::Rrxe;
use kernel::alloc::KVVec;
use kernel::prelude::*;
use kernel::rdma::{
    mr::{Access, AccessFlags, DmaPage, Mr, MrSg},
    BhSpinLock, BhSpinLockGuard,
};

/// A fast-registration region.
pub(crate) struct FastRegion {
    /// The protection domain's identity.
    pd_id: u64,
    /// The region's index in the key table (the key's upper 24 bits).
    index: u32,
    /// Most pages a mapping may have.
    max_pages: usize,
    /// The registration, under a lock taken with bottom halves disabled.
    state: Pin<KBox<BhSpinLock<FastState>>>,
}

/// A page list and where the region lies in it.
struct PageMap {
    /// The pages of the mapping, as the core handed them (kernel memory a consumer mapped
    /// for DMA); room for `max_pages` is allocated up front, so that mapping and
    /// registering (under the lock, in any context) never allocate.
    pages: KVVec<DmaPage>,
    /// Page size and the offset of the region in its first page.
    layout: PageLayout,
    /// Start of the region as SGEs and the wire name it.
    iova: u64,
    /// Length in bytes.
    length: u64,
}

/// A fast-registration region's state.
struct FastState {
    /// Valid (registered, `key` resolves) or free.
    valid: bool,
    /// The current key.
    key: Key,
    /// Access rights of the registration.
    access: AccessFlags,
    /// Registrations so far: an access resolved under one registration fails once another
    /// took its place.
    generation: u32,
    /// What the last `ib_map_mr_sg` mapped, for the next registration.
    staged: PageMap,
    /// What the current registration names.
    active: PageMap,
}

impl PageMap {
    fn new(max_pages: usize) -> Result<Self> {
        Ok(Self {
            pages: KVVec::with_capacity(max_pages, crate::params::gfp_user())?,
            layout: PageLayout::default(),
            iova: 0,
            length: 0,
        })
    }
}

/// The two page lists of a fast region of at most `max_pages` pages, allocated before its
/// key is.
pub(crate) struct PageLists {
    max_pages: usize,
    staged: PageMap,
    active: PageMap,
}

impl PageLists {
    /// Allocates the page lists of a region of at most `max_pages` pages.
    pub(crate) fn new(max_pages: usize) -> Result<Self> {
        Ok(Self {
            max_pages,
            staged: PageMap::new(max_pages)?,
            active: PageMap::new(max_pages)?,
        })
    }
}

impl FastRegion {
    /// A free region of protection domain `pd_id` under `key`.
    pub(crate) fn new(pd_id: u64, key: Key, lists: PageLists) -> Result<Self> {
        let state = KBox::pin_init(
            BhSpinLock::new(
                FastState {
                    valid: false,
                    key,
                    access: AccessFlags::empty(),
                    generation: 0,
                    staged: lists.staged,
                    active: lists.active,
                },
                c"rrxe_fast_mr",
                kernel::static_lock_class!(),
            ),
            crate::params::gfp_user(),
        )?;
        Ok(Self {
            pd_id,
            index: key.index(),
            max_pages: lists.max_pages,
            state,
        })
    }

    /// Returns the key table index.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// Takes the state's lock, with bottom halves disabled (the data path takes it in
    /// softirq).
    fn lock(&self) -> BhSpinLockGuard<'_, FastState> {
        self.state.lock()
    }

    /// Returns the start and length of the registration, if `key` is its current key.
    pub(crate) fn span(&self, key: Key) -> Option<(u64, u64)> {
        let st = self.lock();
        (st.valid && st.key == key).then_some((st.active.iova, st.active.length))
    }

    /// Returns the registration `key` names, as the wire core checks accesses against it,
    /// and its generation; [`AccessError::StaleKey`] unless the region is valid under `key`.
    pub(crate) fn current(&self, key: Key) -> Result<(Region, u32), AccessError> {
        let st = self.lock();
        if !st.valid || st.key != key {
            return Err(AccessError::StaleKey);
        }
        let region = Region {
            iova: st.active.iova,
            length: st.active.length,
            rights: st.access.bits(),
            pd: self.pd_id,
        };
        Ok((region, st.generation))
    }

    /// Calls `f(page, offset in it, range)` for each piece, within one page, of the `len`
    /// bytes at byte `off` of the region, under the lock and only if the registration is
    /// still `generation`.
    pub(crate) fn copy(
        &self,
        generation: u32,
        off: usize,
        len: usize,
        mut f: impl FnMut(&DmaPage, usize, core::ops::Range<usize>) -> Result,
    ) -> Result {
        let st = self.lock();
        if !st.valid || st.generation != generation {
            return Err(EINVAL);
        }
        let end = off.checked_add(len).ok_or(EINVAL)?;
        if u64::try_from(end)? > st.active.length {
            return Err(EINVAL);
        }
        let pages = &st.active.pages;
        st.active
            .layout
            .walk(u64::try_from(off)?, len, EINVAL, |page, in_page, r| {
                f(pages.get(page).ok_or(EINVAL)?, usize::try_from(in_page)?, r)
            })
    }

    /// Carries out an `IB_WR_REG_MR` of a QP of protection domain `pd_id`: the free region
    /// becomes valid under `key` with `access`, over the pages staged for it. `EINVAL` for
    /// anything else (rdma_rxe's `rxe_reg_fast_mr()` checks).
    pub(crate) fn register(&self, pd_id: u64, key: Key, access: AccessFlags) -> Result {
        if self.pd_id != pd_id
            || key.index() != self.index
            || !access.is_within(super::SUPPORTED_ACCESS)
        {
            return Err(EINVAL);
        }
        // IBA 10.6.3.1: remote write and atomic access require local write access.
        let remote_modify = Access::RemoteWrite | Access::RemoteAtomic;
        if access.contains_any(remote_modify) && !access.contains(Access::LocalWrite) {
            return Err(EINVAL);
        }
        let mut st = self.lock();
        if st.valid {
            return Err(EINVAL);
        }
        let st = &mut *st;
        st.active.pages.clear();
        for page in st.staged.pages.iter() {
            // Both lists have room for `max_pages`, the most the staged one takes.
            st.active
                .pages
                .push_within_capacity(*page)
                .map_err(|_| EINVAL)?;
        }
        st.active.layout = st.staged.layout;
        st.active.iova = st.staged.iova;
        st.active.length = st.staged.length;
        st.key = key;
        st.access = access;
        st.generation = st.generation.wrapping_add(1);
        st.valid = true;
        Ok(())
    }

    /// Invalidates `key` for a QP of protection domain `pd_id`: the region becomes free.
    /// `EINVAL` unless `key` is its current key in that PD.
    pub(crate) fn invalidate(&self, pd_id: u64, key: Key) -> Result {
        let mut st = self.lock();
        if self.pd_id != pd_id || st.key != key {
            return Err(EINVAL);
        }
        st.valid = false;
        Ok(())
    }

    /// `ib_map_mr_sg` of `mr`, this region: maps a DMA-mapped scatterlist into the staged
    /// page list, through the core's `ib_sg_to_pages` (pages of the consumer's page size,
    /// the first one's offset kept, `iova` and `length` set in the core's header).
    pub(crate) fn map_sg(&self, mr: &Mr<Rrxe>, sg: MrSg<'_>) -> Result<usize> {
        let page_size = u64::from(mr.page_size());
        if !page_size.is_power_of_two() || page_size < u64::try_from(kernel::page::PAGE_SIZE)? {
            return Err(EINVAL);
        }
        self.lock().staged.pages.clear();
        let n = sg.to_pages(mr)?;
        let mut st = self.lock();
        st.staged.layout = PageLayout {
            page_size,
            first: mr.iova() & (page_size - 1),
        };
        st.staged.iova = mr.iova();
        st.staged.length = mr.length();
        Ok(n)
    }

    /// Takes the next page of a mapping [`Self::map_sg`] is making; `ENOMEM` when the page
    /// list is full (`ib_sg_to_pages` then stops, and reports how far it got).
    pub(crate) fn map_page(&self, page: DmaPage) -> Result {
        let mut st = self.lock();
        if st.staged.pages.len() >= self.max_pages {
            return Err(ENOMEM);
        }
        st.staged
            .pages
            .push_within_capacity(page)
            .map_err(|_| ENOMEM)
    }

    /// Prepares an `IB_WR_REG_MR` of `mr`, this region, with `key` when a QP of protection
    /// domain `pd_id` posts it: the region must be of that PD and `key` must keep its index
    /// (only the variant byte may change, `ib_update_fast_reg_key`). The region's range as the
    /// core's header has it now (the consumer may have moved `iova` since mapping) is what
    /// the registration will name.
    pub(crate) fn prepare_registration(&self, mr: &Mr<Rrxe>, pd_id: u64, key: Key) -> Result {
        if self.pd_id != pd_id || key.index() != self.index {
            return Err(EINVAL);
        }
        let mut st = self.lock();
        st.staged.iova = mr.iova();
        st.staged.length = mr.length();
        Ok(())
    }
}
