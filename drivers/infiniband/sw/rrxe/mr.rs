// SPDX-License-Identifier: GPL-2.0

//! Memory regions: pinned user memory, fast-registration regions of kernel consumers,
//! memory windows over user regions, and the keys that name them.
//!
//! A key is `index << 8 | variable byte` (as in the C driver, which interoperating peers do
//! not care about, but the random byte keeps keys from being guessed from the allocation
//! order alone); the local and remote keys are the same. The device's table maps the index
//! to the region, so the data path can resolve an lkey or rkey without the core's help and a
//! stale key (same index, another byte) does not match.
//!
//! A user region ([`MrInner::User`]) is fixed at registration. A fast-registration region
//! ([`MrInner::Fast`], `ib_alloc_mr`) goes through the states of IBA 10.6.1: *free* when
//! allocated and after an invalidation (no key resolves), *valid* after an `IB_WR_REG_MR`
//! (its key resolves to the pages last mapped with `ib_map_mr_sg`); *invalid* is the
//! deregistered region, gone from the table. `ib_map_mr_sg` fills a staged page list; the
//! registration, carried out by the requester in send queue order, copies it into the
//! active one, so a mapping made for the next registration never changes what the current
//! one names. Every access to a fast region copies under its lock, after checking again
//! that the registration it was resolved under is still the current one.
//!
//! A memory window ([`MrInner::Window`], `ibv_alloc_mw`) has a key in the same table, so
//! the one resolver finds it; it names nothing until a bind (`ibv_bind_mw` for type 1, a
//! BIND_MW work request for type 2B) points it at a range of a user region of its PD with
//! remote rights of its own ([`Window::bind`], IBA 10.6.7.2). A bound window counts in its
//! region, which cannot be deregistered while any is bound (`EBUSY`, as IBA 10.6.3.4
//! requires), so the region a binding holds is never freed under the data path. A type 2B
//! window is usable only by the QP it was bound through, and is invalidated by a LOCAL_INV
//! or a received SEND with invalidate on that QP ([`Window::invalidate`]); a type 1 window
//! is unbound by a bind of length 0.

use crate::mw::Window;
use crate::params::Charge;
pub(crate) use crate::proto::target::Access as Need;
use crate::proto::target::{AccessError, PageLayout, Region};
use crate::Rrxe;
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::rdma::{
    mr::{AccessFlags, Mr, MrKeys, MrRereg, MrSg, MrType, Umem, UserMrReq},
    odp::{MrAdvice, OdpUmem},
    pd::Pd,
    wr::{KernelDma, Sge},
    BhGuard,
};
use kernel::sync::{
    atomic::{ordering::Full, ordering::Relaxed, Atomic},
    Arc, SpinLock, SpinLockGuard,
};

/// Access flags rrxe supports on memory regions.
pub(crate) const SUPPORTED_ACCESS: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ)
    .union(AccessFlags::REMOTE_ATOMIC)
    .union(AccessFlags::MW_BIND)
    // Remote FLUSH for global visibility (IB_DEVICE_FLUSH_GLOBAL). Not for persistence: the
    // pages would have to be persistent memory, which rrxe does not check for.
    .union(AccessFlags::FLUSH_GLOBAL)
    // Hints a device may ignore (perftest asks for relaxed ordering).
    .union(AccessFlags::OPTIONAL);

/// Most pages of a fast-registration region (`max_fast_reg_page_list_len`, rdma_rxe's
/// `RXE_MAX_FMR_PAGE_LIST_LEN`).
pub(crate) const MAX_FAST_REG_PAGES: u32 = 512;

/// What the data path needs of a memory region.
///
/// Shared between the region and the device's key table; dropping the last reference
/// unpins the memory, which may sleep: the data path must not drop one in atomic context.
pub(crate) enum MrInner {
    /// Registered user memory.
    User(UserRegion),
    /// A kernel consumer's fast-registration region.
    Fast(FastRegion),
    /// A memory window.
    Window(Window),
}

/// The memory of a user region.
enum UserMem {
    /// Pinned at registration.
    Pinned(Umem),
    /// On-demand paging: faulted in when needed ([`crate::odp`]).
    Odp(OdpUmem),
}

impl UserMem {
    fn copy_from(&self, off: usize, out: &mut [u8]) -> Result {
        match self {
            Self::Pinned(m) => m.copy_from(off, out),
            Self::Odp(m) => m.copy_from(off, out),
        }
    }

    fn copy_to(&self, off: usize, data: &[u8]) -> Result {
        match self {
            Self::Pinned(m) => m.copy_to(off, data),
            Self::Odp(m) => m.copy_to(off, data),
        }
    }

    fn check_rereg_access(&self, access: AccessFlags) -> Result {
        match self {
            Self::Pinned(m) => m.check_rereg_access(access),
            Self::Odp(m) => m.check_rereg_access(access),
        }
    }
}

/// A user memory region, fixed at registration.
pub(crate) struct UserRegion {
    /// The user memory.
    umem: UserMem,
    /// Start of the region as the wire and SGEs name it.
    pub(crate) iova: u64,
    /// Length in bytes.
    pub(crate) length: u64,
    /// Access rights (`AccessFlags` bits), changed by a re-registration.
    access: Atomic<u32>,
    /// The protection domain's identity, changed by a re-registration.
    pd_id: Atomic<u64>,
    /// The key (lkey and rkey).
    pub(crate) key: u32,
    /// Windows bound to the region, or [`DEREGISTERED`] once it is being deregistered.
    windows: Atomic<u32>,
    /// On-demand paging: the last fault of the region failed (its memory is not mapped any
    /// more): the data path stops asking for faults, and the accesses fail, until a fault
    /// succeeds again (a prefetch, `ibv_advise_mr`).
    fault_failed: Atomic<u32>,
}

/// [`UserRegion::windows`] of a region being deregistered: no window may be bound to it.
const DEREGISTERED: u32 = 1 << 31;

impl UserRegion {
    /// Returns the access rights (a re-registration may change them at any time: an access
    /// is checked against the rights of the moment).
    pub(crate) fn access(&self) -> AccessFlags {
        AccessFlags::from_raw(self.access.load(Relaxed))
    }

    /// Returns the protection domain's identity (as [`Self::access`]).
    pub(crate) fn pd_id(&self) -> u64 {
        self.pd_id.load(Relaxed)
    }

    /// Counts one more window bound to the region; `false` if it is being deregistered.
    pub(crate) fn hold_window(&self) -> bool {
        let mut cur = self.windows.load(Relaxed);
        loop {
            // Fewer windows than keys exist: the count cannot reach the flag bit.
            if cur >= DEREGISTERED - 1 {
                return false;
            }
            match self.windows.cmpxchg(cur, cur.wrapping_add(1), Full) {
                Ok(_) => return true,
                Err(old) => cur = old,
            }
        }
    }

    /// Uncounts a window that [`Self::hold_window`] counted.
    pub(crate) fn release_window(&self) {
        self.windows.fetch_sub(1u32, Full);
    }

    /// Checks `len` bytes at `va` through `key` for a local access by protection domain
    /// `pd_id` of a region with local write access (an `ibv_advise_mr` SGE); returns the
    /// offset in the region.
    fn check_local(&self, key: u32, pd_id: u64, va: u64, len: u32) -> Option<usize> {
        if self.key != key {
            return None;
        }
        let region = Region {
            iova: self.iova,
            length: self.length,
            rights: self.access().bits(),
            pd: self.pd_id(),
        };
        let off = region.check(pd_id, va, len, Need::LocalWrite).ok()?;
        usize::try_from(off).ok()
    }

    /// Starts the deregistration: `EBUSY` while windows are bound to the region.
    fn begin_dereg(&self) -> Result {
        self.windows
            .cmpxchg(0, DEREGISTERED, Full)
            .map(|_| ())
            .map_err(|_| EBUSY)
    }
}

/// A fast-registration region.
pub(crate) struct FastRegion {
    /// The protection domain's identity.
    pd_id: u64,
    /// The region's index in the key table (the key's upper 24 bits).
    index: u32,
    /// Most pages a mapping may have.
    max_pages: usize,
    /// Kernel memory: the pages are DMA addresses a kernel consumer mapped.
    dma: KernelDma,
    /// The registration, under a lock taken with bottom halves disabled.
    state: Pin<KBox<SpinLock<FastState>>>,
}

/// A page list and where the region lies in it.
struct PageMap {
    /// DMA addresses (kernel virtual addresses: rrxe is a virtual-DMA device) of the pages,
    /// `max_pages` long; the first `npages` are the mapping.
    pages: KVVec<u64>,
    /// Pages in the mapping.
    npages: usize,
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
    key: u32,
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
            pages: KVVec::from_elem(0u64, max_pages, crate::params::gfp_user())?,
            npages: 0,
            layout: PageLayout::default(),
            iova: 0,
            length: 0,
        })
    }
}

impl MrInner {
    /// Returns the key table index.
    pub(crate) fn index(&self) -> u32 {
        match self {
            Self::User(u) => u.key >> 8,
            Self::Fast(f) => f.index,
            Self::Window(w) => w.index(),
        }
    }

    /// Returns the start and length of what `key` names now (a region, or a bound window's
    /// range as it is addressed), if it is the current key.
    pub(crate) fn span(&self, key: u32) -> Option<(u64, u64)> {
        match self {
            Self::User(u) => (u.key == key).then_some((u.iova, u.length)),
            Self::Fast(f) => {
                let st = f.lock();
                (st.valid && st.key == key).then_some((st.active.iova, st.active.length))
            }
            Self::Window(w) => w.span(key),
        }
    }

    /// Checks an access of `len` bytes at `va` through `key` by a QP of protection domain
    /// `pd_id`, and returns where it starts: the offset in the region and the registration
    /// it was checked under. The region must be in the same PD, grant the right and contain
    /// the whole range ([`Region::check`]); `key` must be the region's (a fast region's
    /// current key, the region valid).
    pub(crate) fn check(
        &self,
        key: u32,
        pd_id: u64,
        va: u64,
        len: u32,
        need: Need,
    ) -> Result<(usize, u32), AccessError> {
        let (region, generation) = match self {
            Self::User(u) if u.key != key => return Err(AccessError::StaleKey),
            Self::User(u) => (
                Region {
                    iova: u.iova,
                    length: u.length,
                    rights: u.access().bits(),
                    pd: u.pd_id(),
                },
                0,
            ),
            Self::Fast(f) => {
                let st = f.lock();
                if !st.valid || st.key != key {
                    return Err(AccessError::StaleKey);
                }
                (
                    Region {
                        iova: st.active.iova,
                        length: st.active.length,
                        rights: st.access.bits(),
                        pd: f.pd_id,
                    },
                    st.generation,
                )
            }
            // A window names part of a region: `Window::resolve`.
            Self::Window(_) => return Err(AccessError::WrongKind),
        };
        let off = region.check(pd_id, va, len, need)?;
        let off = usize::try_from(off).map_err(|_| AccessError::OutOfBounds)?;
        Ok((off, generation))
    }

    /// Copies out of the region at an offset checked under registration `generation`.
    pub(crate) fn read(&self, generation: u32, off: usize, out: &mut [u8]) -> Result {
        match self {
            Self::User(u) => u.umem.copy_from(off, out),
            Self::Fast(f) => f.copy(generation, off, out.len(), |dma, addr, r| {
                dma.read(addr, out.get_mut(r).ok_or(EINVAL)?)
            }),
            Self::Window(_) => Err(EINVAL),
        }
    }

    /// Copies into the region at an offset checked under registration `generation`.
    pub(crate) fn write(&self, generation: u32, off: usize, data: &[u8]) -> Result {
        match self {
            Self::User(u) => u.umem.copy_to(off, data),
            Self::Fast(f) => f.copy(generation, off, data.len(), |dma, addr, r| {
                dma.write(addr, data.get(r).ok_or(EINVAL)?)
            }),
            Self::Window(_) => Err(EINVAL),
        }
    }

    /// Returns whether the `len` bytes at offset `off` can be copied now (for writing if
    /// `write`): always, unless they are in an on-demand paging region and not present.
    pub(crate) fn is_present(&self, off: usize, len: usize, write: bool) -> bool {
        match self {
            Self::User(UserRegion {
                umem: UserMem::Odp(m),
                ..
            }) => m.is_present(off, len, write),
            _ => true,
        }
    }

    /// Returns whether the region is an on-demand paging one.
    pub(crate) fn is_odp(&self) -> bool {
        matches!(
            self,
            Self::User(UserRegion {
                umem: UserMem::Odp(_),
                ..
            })
        )
    }

    /// Faults the `len` bytes at offset `off` of an on-demand paging region in (for
    /// writing if `write`); nothing to do for other regions.
    ///
    /// # Context
    ///
    /// Process context; may sleep.
    pub(crate) fn fault(&self, off: usize, len: usize, write: bool) -> Result {
        match self {
            Self::User(
                u @ UserRegion {
                    umem: UserMem::Odp(m),
                    ..
                },
            ) => {
                let r = m.fault(off, len, write);
                u.fault_failed.store(u32::from(r.is_err()), Relaxed);
                r
            }
            _ => Ok(()),
        }
    }

    /// Returns whether the region's last fault failed ([`UserRegion::fault_failed`]).
    pub(crate) fn fault_failed(&self) -> bool {
        matches!(self, Self::User(u) if u.fault_failed.load(Relaxed) != 0)
    }

    /// Carries out an `IB_WR_REG_MR` of a QP of protection domain `pd_id`: the free fast
    /// region of `key`'s index becomes valid under `key` with `access`, over the pages
    /// staged for it. `EINVAL` for anything else (rdma_rxe's `rxe_reg_fast_mr()` checks).
    pub(crate) fn fast_register(&self, pd_id: u64, key: u32, access: AccessFlags) -> Result {
        let Self::Fast(f) = self else {
            return Err(EINVAL);
        };
        if f.pd_id != pd_id || key >> 8 != f.index || !access.is_within(SUPPORTED_ACCESS) {
            return Err(EINVAL);
        }
        // IBA 10.6.3.1: remote write and atomic access require local write access.
        let remote_modify = AccessFlags::REMOTE_WRITE.union(AccessFlags::REMOTE_ATOMIC);
        if access.bits() & remote_modify.bits() != 0 && !access.contains(AccessFlags::LOCAL_WRITE) {
            return Err(EINVAL);
        }
        let mut st = f.lock();
        if st.valid {
            return Err(EINVAL);
        }
        let st = &mut *st;
        let n = st.staged.npages;
        let src = st.staged.pages.get(..n).ok_or(EINVAL)?;
        let dst = st.active.pages.get_mut(..n).ok_or(EINVAL)?;
        for (d, s) in dst.iter_mut().zip(src) {
            *d = *s;
        }
        st.active.npages = n;
        st.active.layout = st.staged.layout;
        st.active.iova = st.staged.iova;
        st.active.length = st.staged.length;
        st.key = key;
        st.access = access;
        st.generation = st.generation.wrapping_add(1);
        st.valid = true;
        Ok(())
    }

    /// Invalidates `key` for a QP (number `qpn`) of protection domain `pd_id`
    /// (`IB_WR_LOCAL_INV`, or a received SEND with invalidate): the fast region it names
    /// becomes free, or the type 2B window it names unbound ([`Window::invalidate`]).
    /// `EINVAL` if `key` is not a fast region's current key in that PD (user regions cannot
    /// be invalidated).
    pub(crate) fn invalidate(&self, pd_id: u64, qpn: u32, key: u32) -> Result {
        let f = match self {
            Self::Fast(f) => f,
            Self::Window(w) => return w.invalidate(pd_id, qpn, key),
            Self::User(_) => return Err(EINVAL),
        };
        let mut st = f.lock();
        if f.pd_id != pd_id || st.key != key {
            return Err(EINVAL);
        }
        st.valid = false;
        Ok(())
    }
}

impl FastRegion {
    /// Takes the state's lock, with bottom halves disabled (the data path takes it in
    /// softirq).
    fn lock(&self) -> BhLocked<'_, FastState> {
        BhLocked::lock(&self.state)
    }

    /// Calls `f(dma, address, range)` for each piece, within one page, of the `len` bytes at
    /// byte `off` of the region, under the lock and only if the registration is still
    /// `generation`.
    fn copy(
        &self,
        generation: u32,
        off: usize,
        len: usize,
        mut f: impl FnMut(&KernelDma, u64, core::ops::Range<usize>) -> Result,
    ) -> Result {
        let st = self.lock();
        if !st.valid || st.generation != generation {
            return Err(EINVAL);
        }
        let end = off.checked_add(len).ok_or(EINVAL)?;
        if u64::try_from(end)? > st.active.length {
            return Err(EINVAL);
        }
        let pages = st.active.pages.get(..st.active.npages).ok_or(EINVAL)?;
        st.active
            .layout
            .walk(u64::try_from(off)?, len, EINVAL, |page, in_page, r| {
                let base = *pages.get(page).ok_or(EINVAL)?;
                f(&self.dma, base.checked_add(in_page).ok_or(EINVAL)?, r)
            })
    }
}

/// A spinlock the data path also takes in softirq, held with bottom halves disabled (a
/// fast region's or a window's state).
pub(crate) struct BhLocked<'a, T> {
    // Dropped first: the lock is released before bottom halves are enabled again.
    guard: SpinLockGuard<'a, T>,
    _bh: BhGuard,
}

impl<'a, T> BhLocked<'a, T> {
    /// Disables bottom halves, then takes `lock`.
    pub(crate) fn lock(lock: &'a SpinLock<T>) -> Self {
        let bh = BhGuard::new();
        Self {
            guard: lock.lock(),
            _bh: bh,
        }
    }
}

impl<T> core::ops::Deref for BhLocked<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.guard
    }
}

impl<T: Unpin> core::ops::DerefMut for BhLocked<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.guard
    }
}

/// Per-MR state.
pub(crate) struct RrxeMr {
    /// The region in the key table; `None` for a kernel PD's DMA region, which is named by
    /// the device's `local_dma_lkey` instead.
    inner: Option<Arc<MrInner>>,
    _charge: Charge,
}

impl RrxeMr {
    /// Registers user memory (`ibv_reg_mr`).
    pub(crate) fn reg_user(pd: &Pd<Rrxe>, req: &UserMrReq) -> Result<(MrKeys, Self)> {
        if !req
            .access
            .is_within(SUPPORTED_ACCESS.union(AccessFlags::ON_DEMAND))
        {
            return Err(EOPNOTSUPP);
        }
        let dev = pd.device();
        let data = dev.data();
        let charge = data.mrs_used.take()?;
        let len = usize::try_from(req.length).map_err(|_| EINVAL)?;
        let odp = req.access.contains(AccessFlags::ON_DEMAND);
        let umem = if odp {
            UserMem::Odp(OdpUmem::get(dev, req.start, len, req.access)?)
        } else {
            UserMem::Pinned(Umem::get(dev, req.start, len, req.access)?)
        };
        let mut key = 0;
        let inner = data.insert_mr(|k| {
            key = k;
            Ok(Arc::new(
                MrInner::User(UserRegion {
                    umem,
                    iova: req.iova,
                    length: req.length,
                    access: Atomic::new(req.access.bits()),
                    pd_id: Atomic::new(pd.data().id),
                    key: k,
                    windows: Atomic::new(0),
                    fault_failed: Atomic::new(0),
                }),
                crate::params::gfp_user(),
            )?)
        })?;
        if odp {
            data.shared.faults.count_region(true);
        }
        Ok(Self::keyed(inner, key, charge))
    }

    /// Returns the keys of a region in the key table under `key` (lkey and rkey alike), and
    /// its state.
    fn keyed(inner: Arc<MrInner>, key: u32, charge: Charge) -> (MrKeys, Self) {
        (
            MrKeys {
                lkey: key,
                rkey: key,
            },
            Self {
                inner: Some(inner),
                _charge: charge,
            },
        )
    }

    /// Allocates a fast-registration region of at most `max_num_sg` pages (`ib_alloc_mr`),
    /// free until an `IB_WR_REG_MR` registers it. Only `IB_MR_TYPE_MEM_REG` is supported.
    pub(crate) fn alloc(
        pd: &Pd<Rrxe>,
        mr_type: MrType,
        max_num_sg: u32,
        dma: KernelDma,
    ) -> Result<(MrKeys, Self)> {
        if mr_type != MrType::MemReg {
            return Err(EOPNOTSUPP);
        }
        if max_num_sg == 0 || max_num_sg > MAX_FAST_REG_PAGES {
            return Err(EINVAL);
        }
        let max_pages = usize::try_from(max_num_sg)?;
        let data = pd.device().data();
        let charge = data.mrs_used.take()?;
        let staged = PageMap::new(max_pages)?;
        let active = PageMap::new(max_pages)?;
        let pd_id = pd.data().id;
        let mut key = 0;
        let inner = data.insert_mr(|k| {
            key = k;
            let state = KBox::pin_init(
                new_spinlock!(FastState {
                    valid: false,
                    key: k,
                    access: AccessFlags::NONE,
                    generation: 0,
                    staged,
                    active,
                }),
                crate::params::gfp_user(),
            )?;
            Ok(Arc::new(
                MrInner::Fast(FastRegion {
                    pd_id,
                    index: k >> 8,
                    max_pages,
                    dma,
                    state,
                }),
                crate::params::gfp_user(),
            )?)
        })?;
        Ok(Self::keyed(inner, key, charge))
    }

    /// Returns the fast region of `mr`, if it is one.
    fn fast(mr: &Mr<Rrxe>) -> Result<&FastRegion> {
        match mr.data().inner.as_deref() {
            Some(MrInner::Fast(f)) => Ok(f),
            _ => Err(EINVAL),
        }
    }

    /// `ib_map_mr_sg`: maps a DMA-mapped scatterlist into the staged page list of a fast
    /// region, through the core's `ib_sg_to_pages` (pages of the consumer's page size, the
    /// first one's offset kept, `iova` and `length` set in the core's header).
    pub(crate) fn map_sg(mr: &Mr<Rrxe>, sg: MrSg<'_>) -> Result<usize> {
        let f = Self::fast(mr)?;
        let page_size = u64::from(mr.page_size());
        if !page_size.is_power_of_two() || page_size < u64::try_from(kernel::page::PAGE_SIZE)? {
            return Err(EINVAL);
        }
        f.lock().staged.npages = 0;
        let n = sg.to_pages(mr)?;
        let mut st = f.lock();
        st.staged.layout = PageLayout {
            page_size,
            first: mr.iova() & (page_size - 1),
        };
        st.staged.iova = mr.iova();
        st.staged.length = mr.length();
        Ok(n)
    }

    /// Takes the next page of a mapping `map_sg` is making; `ENOMEM` when the region's page
    /// list is full (`ib_sg_to_pages` then stops, and reports how far it got).
    pub(crate) fn map_page(mr: &Mr<Rrxe>, addr: u64) -> Result {
        let f = Self::fast(mr)?;
        let mut st = f.lock();
        let n = st.staged.npages;
        if n >= f.max_pages {
            return Err(ENOMEM);
        }
        *st.staged.pages.get_mut(n).ok_or(ENOMEM)? = addr;
        st.staged.npages = n + 1;
        Ok(())
    }

    /// Prepares an `IB_WR_REG_MR` of `mr` with `key` when a QP of protection domain `pd_id`
    /// posts it: the region must be a fast region of that PD and `key` must keep its index
    /// (only the low byte may change, `ib_update_fast_reg_key`). The region's range as the
    /// core's header has it now (the consumer may have moved `iova` since mapping) is what
    /// the registration will name.
    pub(crate) fn prepare_registration(mr: &Mr<Rrxe>, pd_id: u64, key: u32) -> Result {
        let f = Self::fast(mr)?;
        if f.pd_id != pd_id || key >> 8 != f.index {
            return Err(EINVAL);
        }
        let mut st = f.lock();
        st.staged.iova = mr.iova();
        st.staged.length = mr.length();
        Ok(())
    }

    /// The DMA region of a kernel consumer's PD (`ib_get_dma_mr`): local access to kernel
    /// memory through the local DMA lkey. Remote access to all of memory (a global rkey)
    /// is refused.
    pub(crate) fn dma(pd: &Pd<Rrxe>, access: AccessFlags) -> Result<(MrKeys, Self)> {
        if !access.is_within(AccessFlags::LOCAL_WRITE) {
            return Err(EOPNOTSUPP);
        }
        let charge = pd.device().data().mrs_used.take()?;
        Ok((
            MrKeys {
                lkey: crate::engine::LOCAL_DMA_LKEY,
                rkey: 0,
            },
            Self {
                inner: None,
                _charge: charge,
            },
        ))
    }

    /// Re-registers a user region in place (`ibv_rereg_mr`), keeping its keys and memory:
    /// a new PD, new access rights, or both, as rdma_rxe does (`EOPNOTSUPP` for new memory).
    /// New rights must be ones rrxe supports and the pinned memory allows (writable rights
    /// need memory pinned writable); `EBUSY` while windows are bound to the region (their
    /// bindings were checked against its PD and rights). The data path checks each access
    /// against the rights of the moment.
    pub(crate) fn rereg(mr: &Mr<Rrxe>, change: &MrRereg<'_, Rrxe>) -> Result {
        let Some(MrInner::User(u)) = mr.data().inner.as_deref() else {
            return Err(EINVAL);
        };
        if change.translation.is_some() {
            return Err(EOPNOTSUPP);
        }
        if let Some(access) = change.access {
            // The memory stays what it is: pinned or on-demand paging.
            let odp = AccessFlags::ON_DEMAND;
            if !access.is_within(SUPPORTED_ACCESS.union(odp))
                || access.contains(odp) != u.access().contains(odp)
            {
                return Err(EOPNOTSUPP);
            }
            u.umem.check_rereg_access(access)?;
        }
        if u.windows.load(Relaxed) != 0 {
            return Err(EBUSY);
        }
        if let Some(pd) = change.pd {
            u.pd_id.store(pd.data().id, Relaxed);
        }
        if let Some(access) = change.access {
            u.access.store(access.bits(), Relaxed);
        }
        Ok(())
    }

    /// Prefetches the pages of on-demand paging regions of `pd` that `sges` name by lkey
    /// (`ibv_advise_mr`), as rdma_rxe: `EINVAL` for an lkey that names no region of the PD
    /// with local write access (rdma_rxe's lookup) or a region that is not ODP or a range
    /// outside it, `EPERM` for a write prefetch of memory registered read-only. Done before
    /// returning, also when the caller did not ask to wait (`IB_UVERBS_ADVISE_MR_FLAG_FLUSH`):
    /// the call is the process context the faults need.
    pub(crate) fn advise(pd: &Pd<Rrxe>, advice: MrAdvice, sges: &[Sge]) -> Result {
        let data = pd.device().data();
        for sge in sges {
            // Held past the BH section: a deregistration meanwhile leaves the last reference
            // here, dropped in process context.
            let mr = {
                let _bh = BhGuard::new();
                data.shared.mr(sge.lkey())
            }
            .ok_or(EINVAL)?;
            let MrInner::User(u) = &*mr else {
                return Err(EINVAL);
            };
            let UserMem::Odp(m) = &u.umem else {
                return Err(EINVAL);
            };
            let off = u
                .check_local(sge.lkey(), pd.data().id, sge.addr(), sge.length())
                .ok_or(EINVAL)?;
            let len = usize::try_from(sge.length())?;
            match advice {
                MrAdvice::PrefetchWrite if !m.is_writable() => return Err(EPERM),
                MrAdvice::PrefetchWrite => mr.fault(off, len, true)?,
                MrAdvice::Prefetch => mr.fault(off, len, false)?,
                MrAdvice::PrefetchNoFault => m.snapshot(off, len)?,
            }
        }
        Ok(())
    }

    /// Deregisters (`ibv_dereg_mr`): the key stops resolving before the memory is unpinned.
    /// `EBUSY` while memory windows are bound to the region (IBA 10.6.3.4; the core retries
    /// at cleanup once the windows are deallocated).
    pub(crate) fn dereg(mr: &Mr<Rrxe>, dev_data: &crate::device::RrxeDev) -> Result {
        if let Some(inner) = &mr.data().inner {
            if let MrInner::User(u) = &**inner {
                u.begin_dereg()?;
                if matches!(u.umem, UserMem::Odp(_)) {
                    dev_data.shared.faults.count_region(false);
                }
            }
            dev_data.free_mr_index(inner.index());
        }
        Ok(())
    }
}

#[kunit_tests(rrxe_mr)]
mod tests {
    use crate::proto::target::{rights, Access, AccessError, Region};

    /// Every key resolution of the data path goes through `Region::check`: the PD, the
    /// right, and the whole range, with no arithmetic overflow on hostile addresses.
    #[test]
    fn region_check_refuses_what_the_spec_refuses() {
        let r = Region {
            iova: 0x7f00_0000_1000,
            length: 4096 * 3,
            rights: rights::LOCAL_WRITE | rights::REMOTE_READ | rights::REMOTE_ATOMIC,
            pd: 3,
        };
        let end = r.iova + r.length;
        assert_eq!(r.check(3, r.iova, 4096 * 3, Access::RemoteRead), Ok(0));
        assert_eq!(
            r.check(3, end - 8, 8, Access::RemoteAtomic),
            Ok(r.length - 8)
        );
        assert_eq!(r.check(3, end, 0, Access::RemoteRead), Ok(r.length));
        assert_eq!(
            r.check(3, end - 8, 9, Access::RemoteRead),
            Err(AccessError::OutOfBounds)
        );
        assert_eq!(
            r.check(3, r.iova - 1, 2, Access::LocalRead),
            Err(AccessError::OutOfBounds)
        );
        assert_eq!(
            r.check(3, u64::MAX - 3, 8, Access::LocalRead),
            Err(AccessError::OutOfBounds)
        );
        assert_eq!(
            r.check(4, r.iova, 1, Access::LocalRead),
            Err(AccessError::WrongPd)
        );
        assert_eq!(
            r.check(3, r.iova, 1, Access::RemoteWrite),
            Err(AccessError::NoRight)
        );
        assert_eq!(r.check(3, r.iova, 1, Access::LocalWrite), Ok(0));
    }
}
