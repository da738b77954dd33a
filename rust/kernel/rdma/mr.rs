// SPDX-License-Identifier: GPL-2.0

//! Memory regions (`struct ib_mr`); the pinned user memory a user region describes is
//! [`Umem`] ([`super::umem`]).
//!
//! Unlike most verbs objects, the driver allocates memory regions and frees them in
//! `dereg_mr`; [`Mr<T>`] is a pinned box holding the core's `struct ib_mr` at offset 0.
//!
//! Kernel consumers also allocate fast-registration regions (`ib_alloc_mr`), map DMA-mapped
//! scatterlists into them (`ib_map_mr_sg`, [`MrSg`]) and register them with a work request
//! ([`RegWr`], `IB_WR_REG_MR`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    device::{Device, Driver, UData},
    pd::Pd,
    MaySleep,
};
use crate::{bindings, error::from_result, prelude::*, types::Opaque};

pub use super::umem::Umem;

crate::impl_flags!(
    /// Access rights (`enum ib_access_flags`) of a memory region, a memory window or a QP's
    /// remote access, as the caller gave them: bits no [`Access`] names are kept, so that a
    /// driver can refuse what it does not support ([`AccessFlags::is_within`]).
    #[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
    pub struct AccessFlags(u32);

    /// One access right (a bit of `enum ib_access_flags`; [`Access::Optional`] is a range).
    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    pub enum Access {
        /// The local side may write (required for any remote write or atomic).
        LocalWrite = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE,
        /// Remote RDMA WRITE.
        RemoteWrite = bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE,
        /// Remote RDMA READ.
        RemoteRead = bindings::ib_access_flags_IB_ACCESS_REMOTE_READ,
        /// Remote atomics.
        RemoteAtomic = bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC,
        /// Memory window binding.
        MwBind = bindings::ib_access_flags_IB_ACCESS_MW_BIND,
        /// Remote FLUSH for global visibility (`IB_ACCESS_FLUSH_GLOBAL`).
        FlushGlobal = bindings::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL,
        /// Remote FLUSH for persistence (`IB_ACCESS_FLUSH_PERSISTENT`).
        FlushPersistent = bindings::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT,
        /// Zero-based addressing (`IB_ZERO_BASED`): the region or window is addressed from 0.
        ZeroBased = bindings::ib_access_flags_IB_ZERO_BASED,
        /// On-demand paging (`IB_ACCESS_ON_DEMAND`): the memory is not pinned
        /// ([`OdpUmem`](super::odp::OdpUmem)).
        OnDemand = bindings::ib_access_flags_IB_ACCESS_ON_DEMAND,
        /// Huge pages (`IB_ACCESS_HUGETLB`).
        Hugetlb = bindings::ib_access_flags_IB_ACCESS_HUGETLB,
        /// `IB_ACCESS_OPTIONAL`: hints (relaxed ordering and the range reserved for more)
        /// that a device may ignore, as the core expects drivers to.
        Optional = bindings::ib_access_flags_IB_ACCESS_OPTIONAL,
    }
);

impl AccessFlags {
    /// Returns the rights `rights` name (usable in constants, where `|` is not).
    pub const fn of(rights: &[Access]) -> Self {
        let mut bits = 0;
        let mut i = 0;
        while i < rights.len() {
            bits |= rights[i] as u32;
            i += 1;
        }
        Self(bits)
    }

    /// Takes the bits as the core or userspace passed them (unnamed bits included).
    pub const fn from_raw(bits: u32) -> Self {
        Self(bits)
    }

    /// Returns the bits.
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Returns the rights of both (usable in constants).
    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Returns whether no right outside `allowed` is asked for, unnamed bits included.
    pub const fn is_within(self, allowed: Self) -> bool {
        self.0 & !allowed.0 == 0
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

    /// Reads a field of the core's header.
    fn header<R>(&self, f: impl FnOnce(&bindings::ib_mr) -> R) -> R {
        // The core and the consumer write `iova`, `length` and `page_size` only in
        // `ib_map_mr_sg` (the consumer does not map a region while it posts work requests
        // naming it) and `lkey`/`rkey` in `ib_update_fast_reg_key`, which the consumer
        // serialises with its use of the region.
        // SAFETY: The header lives as long as `self`, unwritten while read (above).
        f(unsafe { &*self.ib.get() })
    }

    /// The I/O virtual address the region starts at (`ib_mr.iova`): set by the core when
    /// the consumer maps a scatterlist into a fast-registration region, possibly changed by
    /// the consumer afterwards.
    pub fn iova(&self) -> u64 {
        self.header(|h| h.iova)
    }

    /// The region's length in bytes (`ib_mr.length`).
    pub fn length(&self) -> u64 {
        self.header(|h| h.length)
    }

    /// The page size of a fast-registration mapping (`ib_mr.page_size`).
    pub fn page_size(&self) -> u32 {
        self.header(|h| h.page_size)
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
    /// Access rights.
    pub access: AccessFlags,
}

/// What a re-registration of a user memory region changes (`ibv_rereg_mr`).
pub struct MrRereg<'a, T: Driver> {
    /// A new protection domain (`IB_MR_REREG_PD`).
    pub pd: Option<&'a Pd<T>>,
    /// New access rights (`IB_MR_REREG_ACCESS`; the core checked them against the device).
    pub access: Option<AccessFlags>,
    /// New memory (`IB_MR_REREG_TRANS`): start, length and I/O virtual address.
    pub translation: Option<UserMrReq>,
}

/// The keys of a new memory region.
#[derive(Copy, Clone, Debug)]
pub struct MrKeys {
    /// Local key (in work requests' SGEs).
    pub lkey: u32,
    /// Remote key (in RETH/AtomicETH).
    pub rkey: u32,
}

/// The type of a region a kernel consumer allocates (`enum ib_mr_type`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MrType {
    /// `IB_MR_TYPE_MEM_REG`: fast registration of page lists (`ib_map_mr_sg` then an
    /// `IB_WR_REG_MR` work request).
    MemReg,
    /// Any other type (`IB_MR_TYPE_SG_GAPS`, `IB_MR_TYPE_INTEGRITY`, ...), by its value.
    Other(u32),
}

/// A DMA-mapped scatterlist that a kernel consumer maps into a fast-registration region
/// (`ib_map_mr_sg`).
///
/// # Invariants
///
/// `sgl` holds `nents` entries mapped for this (virtual-DMA) device; `offset` is null or
/// valid for reads and writes; all stay valid for `'a`.
pub struct MrSg<'a> {
    sgl: *mut bindings::scatterlist,
    nents: c_int,
    offset: *mut c_uint,
    _p: core::marker::PhantomData<&'a ()>,
}

impl MrSg<'_> {
    /// Splits the scatterlist into pages of the region's page size with the core's
    /// `ib_sg_to_pages`, which sets the region's `iova` and `length` and hands each page's
    /// DMA address to [`Driver::map_mr_page`] in order; returns the number of entries
    /// mapped (fewer than all when the driver refused a page: its list was full).
    pub fn to_pages<T: Driver>(self, mr: &Mr<T>) -> Result<usize> {
        // SAFETY: `mr` is a live region of driver `T` (its header is at offset 0, so the
        // callback can find it again); the scatterlist and offset are valid by the type
        // invariant; the callback matches the expected signature.
        let n = unsafe {
            bindings::ib_sg_to_pages(
                mr.ib.get(),
                self.sgl,
                self.nents,
                self.offset,
                Some(set_page_callback::<T>),
            )
        };
        if n < 0 {
            return Err(Error::from_errno(n));
        }
        usize::try_from(n).map_err(|_| EINVAL)
    }
}

/// The `set_page` callback of `ib_sg_to_pages`.
///
/// # Safety
///
/// `ibmr` is a live region of driver `T`, passed by [`MrSg::to_pages`], and `addr` the DMA
/// address of a page of the region's page size that holds part of a scatterlist entry a
/// kernel consumer mapped for this device (`ib_sg_to_pages()` in `drivers/infiniband/core/
/// verbs.c` hands `sg_dma_address(sg) & page_mask` and the pages after it up to the entry's
/// end).
unsafe extern "C" fn set_page_callback<T: Driver>(ibmr: *mut bindings::ib_mr, addr: u64) -> c_int {
    // SAFETY: Per the function's contract; the header is at offset 0 of `Mr<T>`.
    let mr = unsafe { &*ibmr.cast::<Mr<T>>() };
    // SAFETY: Per the function's contract, `addr` is such a page of `mr.page_size()` bytes.
    let page = match unsafe { DmaPage::new(addr, mr.page_size()) } {
        Ok(page) => page,
        Err(e) => return e.to_errno(),
    };
    match T::map_mr_page(mr, page) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// A page of a fast-registration mapping: kernel memory a kernel consumer mapped for DMA,
/// as `ib_sg_to_pages()` hands it to the driver ([`Driver::map_mr_page`]).
///
/// A soft-RoCE device is a virtual-DMA device (`ib_uses_virt_dma()`): a DMA address is a
/// kernel virtual address, and the driver moves the bytes itself. Only the `set_page`
/// callback of [`MrSg::to_pages`] makes a `DmaPage`, so a driver reaches exactly the pages
/// the core split the consumer's scatterlist into, each within its own bounds: no address
/// a driver computes can be read or written through it.
///
/// The page stays the consumer's: it keeps the mapping until the registration that names
/// the page is invalidated (`IB_WR_LOCAL_INV`, a SEND with invalidate, `ib_dereg_mr`) and
/// the driver reports that done, as it would for a device that DMAs. A driver copies only
/// under a registration it checked is current.
///
/// # Invariants
///
/// `size` is a power of two and at least `PAGE_SIZE`; `addr` is aligned to `size`; every
/// `PAGE_SIZE` page of `[addr, addr + size)` is in the kernel's direct map; the range holds
/// part of a scatterlist entry that a kernel consumer DMA-mapped for this device.
#[derive(Clone, Copy, Debug)]
pub struct DmaPage {
    addr: usize,
    size: usize,
}

impl DmaPage {
    /// Returns the page at DMA address `addr`, of `size` bytes; `EINVAL` unless it is
    /// aligned, of a size the device can map (`PAGE_SIZE` or a larger power of two) and all
    /// in the direct map.
    ///
    /// # Safety
    ///
    /// `[addr, addr + size)` holds part of a scatterlist entry a kernel consumer DMA-mapped
    /// for this device.
    unsafe fn new(addr: u64, size: u32) -> Result<Self> {
        let addr = usize::try_from(addr).map_err(|_| EINVAL)?;
        let size = usize::try_from(size).map_err(|_| EINVAL)?;
        if !size.is_power_of_two() || size < crate::page::PAGE_SIZE || addr & (size - 1) != 0 {
            return Err(EINVAL);
        }
        addr.checked_add(size).ok_or(EINVAL)?;
        // Each page is checked: a page larger than `PAGE_SIZE` could straddle a hole.
        for kpage in (addr..addr + size).step_by(crate::page::PAGE_SIZE) {
            // SAFETY: `virt_addr_valid` only inspects the address.
            if !unsafe { bindings::virt_addr_valid(kpage as *const c_void) } {
                return Err(EINVAL);
            }
        }
        // INVARIANT: Checked above; the range holds mapped memory per the function's
        // contract.
        Ok(Self { addr, size })
    }

    /// Returns the page's DMA address.
    pub fn addr(&self) -> u64 {
        self.addr as u64
    }

    /// Returns the page's size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Returns the address of the `len` bytes at offset `at` of the page; `EINVAL` unless
    /// they lie in it.
    fn range(&self, at: usize, len: usize) -> Result<usize> {
        match at.checked_add(len) {
            Some(end) if end <= self.size => Ok(self.addr + at),
            _ => Err(EINVAL),
        }
    }

    /// Copies `out.len()` bytes from offset `at` of the page; `EINVAL` unless they lie in it.
    pub fn read(&self, at: usize, out: &mut [u8]) -> Result {
        let src = self.range(at, out.len())?;
        // SAFETY: By the type invariant the page is mapped kernel memory that the consumer
        // keeps for the device, and `[src, src + len)` lies in it (checked above).
        unsafe { core::ptr::copy_nonoverlapping(src as *const u8, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Copies `data` to offset `at` of the page; `EINVAL` unless it fits in it.
    pub fn write(&self, at: usize, data: &[u8]) -> Result {
        let dst = self.range(at, data.len())?;
        // SAFETY: As for `read`; the consumer mapped the memory for the device to write
        // (the registration's rights, which the driver checks, say whether it may).
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), dst as *mut u8, data.len()) };
        Ok(())
    }
}

/// The fast-registration part of a kernel consumer's send work request (`struct ib_reg_wr`,
/// `IB_WR_REG_MR`).
pub struct RegWr<'a, T: Driver> {
    /// The region to register.
    pub mr: &'a Mr<T>,
    /// Its new key (`ib_update_fast_reg_key` may have changed the low byte).
    pub key: u32,
    /// Access rights.
    pub access: AccessFlags,
}

/// The `alloc_mr` operation (`ib_alloc_mr()`).
///
/// # Safety
///
/// Called by the core: `pd` is one of this driver's protection domains, of a kernel consumer
/// (userspace has no way to allocate such a region).
pub(crate) unsafe extern "C" fn alloc<T: Driver>(
    pd: *mut bindings::ib_pd,
    mr_type: bindings::ib_mr_type,
    max_num_sg: u32,
) -> *mut bindings::ib_mr {
    // SAFETY: Per the function's contract.
    let pd = unsafe { &*pd.cast::<Pd<T>>() };
    let mr_type = if mr_type == bindings::ib_mr_type::IB_MR_TYPE_MEM_REG {
        MrType::MemReg
    } else {
        MrType::Other(mr_type.0)
    };
    T::alloc_mr(pd, mr_type, max_num_sg)
        .and_then(|(keys, data)| new_mr::<T>(keys, Ok::<_, Error>(data), 0, 0))
        .unwrap_or_else(|e| e.to_ptr())
}

/// The `map_mr_sg` operation (`ib_map_mr_sg()`): returns the number of entries mapped.
///
/// # Safety
///
/// Called by the core: `mr` is a region of driver `T` from `alloc_mr`; `sgl` holds `nents`
/// DMA-mapped entries; `offset` is null or valid, all for the duration of the call.
pub(crate) unsafe extern "C" fn map_sg<T: Driver>(
    mr: *mut bindings::ib_mr,
    sgl: *mut bindings::scatterlist,
    nents: c_int,
    offset: *mut c_uint,
) -> c_int {
    // SAFETY: Per the function's contract.
    let mr = unsafe { &*mr.cast::<Mr<T>>() };
    // INVARIANT: Per the function's contract.
    let sg = MrSg {
        sgl,
        nents,
        offset,
        _p: core::marker::PhantomData,
    };
    match T::map_mr_sg(mr, sg) {
        Ok(n) => c_int::try_from(n).unwrap_or(c_int::MAX),
        Err(e) => e.to_errno(),
    }
}

/// The `reg_user_mr` operation.
///
/// # Safety
///
/// Called by the core: `pd` is one of this driver's protection domains; `dmah` and `udata`
/// null or valid.
pub(crate) unsafe extern "C" fn reg_user<T: Driver>(
    pd: *mut bindings::ib_pd,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
    dmah: *mut bindings::ib_dmah,
    udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    if !dmah.is_null() {
        return EOPNOTSUPP.to_ptr();
    }
    let req = UserMrReq {
        start,
        length,
        iova,
        access: AccessFlags::from_raw(u32::from_ne_bytes(access.to_ne_bytes())),
    };
    // SAFETY: Per the function's contract.
    let (pd, udata) = unsafe { (&*pd.cast::<Pd<T>>(), UData::from_raw(udata)) };
    // SAFETY: A verb, in the calling process's context (`ib_uverbs_reg_mr`).
    let ctx = unsafe { MaySleep::new() };
    T::reg_user_mr(pd, &req, udata, &ctx)
        .and_then(|(keys, init)| new_mr::<T>(keys, init, req.iova, req.length))
        .unwrap_or_else(|e| e.to_ptr())
}

/// The `get_dma_mr` operation.
///
/// # Safety
///
/// Called by the core: `pd` is one of this driver's (kernel) protection domains.
pub(crate) unsafe extern "C" fn get_dma<T: Driver>(
    pd: *mut bindings::ib_pd,
    access: c_int,
) -> *mut bindings::ib_mr {
    // SAFETY: Per the function's contract.
    let pd = unsafe { &*pd.cast::<Pd<T>>() };
    let access = AccessFlags::from_raw(u32::from_ne_bytes(access.to_ne_bytes()));
    T::get_dma_mr(pd, access)
        .and_then(|(keys, init)| new_mr::<T>(keys, init, 0, u64::MAX))
        .unwrap_or_else(|e| e.to_ptr())
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

/// The `dereg_mr` operation.
///
/// # Safety
///
/// Called by the core: `mr` was returned by [`reg_user`], [`get_dma`] or [`alloc`] and is not used
/// by the core afterwards.
pub(crate) unsafe extern "C" fn dereg<T: Driver>(
    mr: *mut bindings::ib_mr,
    _udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        let mr = mr.cast::<Mr<T>>();
        // SAFETY: Per the function's contract, `mr` is a leaked, live `KBox<Mr<T>>`. On error
        // the core keeps the region, so it is only reclaimed after the driver agreed.
        T::dereg_mr(unsafe { &*mr })?;
        // SAFETY: As above; nothing refers to the region anymore.
        drop(unsafe { KBox::from_raw(mr) });
        Ok(0)
    })
}

/// The `rereg_user_mr` operation: an in-place re-registration (the region keeps its keys, so
/// the core keeps its `ib_mr`: null on success).
///
/// # Safety
///
/// Called by the core (`ib_uverbs_rereg_mr`): `mr` is a user region of `T` whose data is
/// initialised; `pd` is a valid PD of `T` when `flags` has `IB_MR_REREG_PD`; `udata` is null
/// or valid.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe extern "C" fn rereg_user<T: Driver>(
    mr: *mut bindings::ib_mr,
    flags: c_int,
    start: u64,
    length: u64,
    iova: u64,
    access: c_int,
    pd: *mut bindings::ib_pd,
    _udata: *mut bindings::ib_udata,
) -> *mut bindings::ib_mr {
    let Ok(flags) = u32::try_from(flags) else {
        return EINVAL.to_ptr();
    };
    let has = |bit: u32| flags & bit != 0;
    let access = AccessFlags::from_raw(u32::from_ne_bytes(access.to_ne_bytes()));
    let new_pd = has(bindings::ib_mr_rereg_flags_IB_MR_REREG_PD);
    // SAFETY: Per the function's contract, `pd` is a valid PD of `T` when the flag is set.
    let new_pd = new_pd.then(|| unsafe { &*pd.cast::<Pd<T>>() });
    let change = MrRereg {
        pd: new_pd,
        access: has(bindings::ib_mr_rereg_flags_IB_MR_REREG_ACCESS).then_some(access),
        translation: has(bindings::ib_mr_rereg_flags_IB_MR_REREG_TRANS).then_some(UserMrReq {
            start,
            length,
            iova,
            access,
        }),
    };
    // SAFETY: A verb, in the calling process's context (`ib_uverbs_rereg_mr`).
    let ctx = unsafe { MaySleep::new() };
    // SAFETY: The region's data is initialised.
    match T::rereg_user_mr(unsafe { &*mr.cast::<Mr<T>>() }, &change, &ctx) {
        Ok(()) => core::ptr::null_mut(),
        Err(e) => e.to_ptr(),
    }
}
