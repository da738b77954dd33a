// SPDX-License-Identifier: GPL-2.0

//! The resolver: the one place a key is checked for an access and turned into memory.
//!
//! A local key in a WQE's scatter list (an lkey) or a remote key from the wire (the rkey of
//! a RETH or AtomicETH) names a region or a window in the key table: it is checked against
//! the accessing QP's protection domain (a type 2B window: the QP itself), the bounds and
//! the access right the operation needs, before any byte moves ([`KeyTable::resolve`]). The
//! device's `local_dma_lkey` ([`LOCAL_DMA_LKEY`]) in a kernel consumer's scatter list names
//! kernel memory by DMA address instead; only a kernel consumer's QP has one, and only inside
//! an SGE the consumer posted (the access names that SGE, checked again on each copy).
//!
//! Fast registration and invalidation (`IB_WR_REG_MR`, `IB_WR_LOCAL_INV`, a received SEND
//! with invalidate) change which key resolves to a fast region; memory window binds and
//! invalidations which range of a user region a window's key names. They go through the
//! same table ([`KeyTable::fast_register`], [`KeyTable::bind`], [`KeyTable::invalidate`]).

use super::{BindRequest, Key, KeyTable, MrInner, Need, LOCAL_DMA_LKEY};
use crate::proto::target::AccessError;
use kernel::prelude::*;
use kernel::rdma::{
    mr::AccessFlags,
    wr::{KernelDma, Sge},
};
use kernel::sync::Arc;

/// Who accesses memory: a QP, by its protection domain and number, and its access to kernel
/// memory (a kernel consumer's QP only).
#[derive(Clone, Copy)]
pub(crate) struct Accessor<'a> {
    /// The QP's protection domain identity.
    pub(crate) pd_id: u64,
    /// The QP's number (a type 2B window is usable only by the QP it was bound through).
    pub(crate) qpn: u32,
    /// The QP's access to kernel memory, named by [`LOCAL_DMA_LKEY`].
    pub(crate) kernel: Option<&'a KernelDma>,
}

/// Memory a key names, checked for one access of a given length.
pub(crate) enum Mem<'a> {
    /// Bytes of a registered region, from byte `off` of the region.
    Region {
        /// The region.
        mr: Arc<MrInner>,
        /// Offset of the access in the region.
        off: usize,
        /// The registration it was checked under (fast regions).
        generation: u32,
    },
    /// Kernel memory a kernel consumer's SGE names by DMA address (`local_dma_lkey`), from
    /// byte `at` of it.
    Kernel {
        /// The QP's access to kernel memory.
        dma: &'a KernelDma,
        /// The SGE as the consumer posted it.
        sge: Sge,
        /// Offset of the access in the SGE.
        at: usize,
    },
}

impl Mem<'_> {
    /// Copies `out.len()` bytes from byte `at` of the access.
    pub(crate) fn read(&self, at: usize, out: &mut [u8]) -> Result {
        match self {
            Self::Region {
                mr,
                off,
                generation,
            } => mr.read(*generation, off.checked_add(at).ok_or(EINVAL)?, out),
            Self::Kernel {
                dma,
                sge,
                at: start,
            } => dma.read(sge, start.checked_add(at).ok_or(EINVAL)?, out),
        }
    }

    /// Copies `data` to byte `at` of the access.
    pub(crate) fn write(&self, at: usize, data: &[u8]) -> Result {
        match self {
            Self::Region {
                mr,
                off,
                generation,
            } => mr.write(*generation, off.checked_add(at).ok_or(EINVAL)?, data),
            Self::Kernel {
                dma,
                sge,
                at: start,
            } => dma.write(sge, start.checked_add(at).ok_or(EINVAL)?, data),
        }
    }

    /// Returns whether the `len` bytes at byte `at` of the access can be copied now (for
    /// writing if `write`): always, unless they lie in on-demand paging memory that is not
    /// present.
    pub(crate) fn is_present(&self, at: usize, len: usize, write: bool) -> bool {
        match self {
            Self::Region { mr, off, .. } => off
                .checked_add(at)
                .is_some_and(|o| mr.is_present(o, len, write)),
            Self::Kernel { .. } => true,
        }
    }
}

/// Returns whether `need` writes the memory (an access that faults pages in for writing).
pub(crate) fn is_write(need: Need) -> bool {
    matches!(
        need,
        Need::LocalWrite | Need::RemoteWrite | Need::RemoteAtomic
    )
}

/// Returns whether `need` is a local access (one named by a WQE's scatter list).
fn is_local(need: Need) -> bool {
    matches!(need, Need::LocalRead | Need::LocalWrite)
}

impl KeyTable {
    /// Resolves `key` for an access by `by` of `len` bytes at `va` with the right `need`:
    /// the region it names (of `by`'s PD, holding the whole range, granting `need`; through
    /// a window bound to it for a remote access), or kernel memory for a kernel consumer's
    /// local DMA lkey in the SGE it `posted` (the range inside it). The reason of a refusal
    /// otherwise.
    ///
    /// # Context
    ///
    /// Softirq, or bottom halves disabled ([`KeyTable::get`]).
    pub(crate) fn resolve<'a>(
        &self,
        by: Accessor<'a>,
        key: Key,
        va: u64,
        len: u32,
        need: Need,
        posted: Option<&Sge>,
    ) -> Result<Mem<'a>, AccessError> {
        if is_local(need) && key == LOCAL_DMA_LKEY {
            // Kernel memory is only for kernel consumers, and only inside an SGE they posted
            // (`KernelDma` checks the range again on each copy).
            let dma = by.kernel.ok_or(AccessError::WrongKind)?;
            let sge = *posted.ok_or(AccessError::WrongKind)?;
            let at = va.checked_sub(sge.addr()).ok_or(AccessError::OutOfBounds)?;
            let end = at
                .checked_add(u64::from(len))
                .ok_or(AccessError::OutOfBounds)?;
            if end > u64::from(sge.length()) {
                return Err(AccessError::OutOfBounds);
            }
            let at = usize::try_from(at).map_err(|_| AccessError::OutOfBounds)?;
            return Ok(Mem::Kernel { dma, sge, at });
        }
        let mr = self.get(key).ok_or(AccessError::NoKey)?;
        if let MrInner::Window(w) = &*mr {
            // Windows grant remote access only (an lkey never names one).
            if is_local(need) {
                return Err(AccessError::WrongKind);
            }
            let (mr, off) = w.resolve(key, by.pd_id, by.qpn, va, len, need)?;
            return Ok(Mem::Region {
                mr,
                off,
                generation: 0,
            });
        }
        let (off, generation) = mr.check(key, by.pd_id, va, len, need)?;
        Ok(Mem::Region {
            mr,
            off,
            generation,
        })
    }

    /// Checks the flush right of `key` for `by` over `len` bytes at `va`, or over the whole
    /// region (or window) it names (`IB_FLUSH_MR`, whose RETH range means nothing).
    pub(crate) fn check_flush(
        &self,
        by: Accessor<'_>,
        key: Key,
        va: u64,
        len: u32,
        whole: bool,
    ) -> Result {
        let va = if whole {
            self.get(key).and_then(|mr| mr.span(key)).ok_or(EINVAL)?.0
        } else {
            va
        };
        let len = if whole { 0 } else { len };
        self.resolve(by, key, va, len, Need::RemoteFlush, None)
            .map(|_| ())
            .map_err(|_| EINVAL)
    }

    /// Carries out a fast registration (`IB_WR_REG_MR`) of `key` with `access` for `by`
    /// ([`MrInner::fast_register`]).
    pub(crate) fn fast_register(&self, by: Accessor<'_>, key: Key, access: AccessFlags) -> Result {
        self.get(key)
            .ok_or(EINVAL)?
            .fast_register(by.pd_id, key, access)
    }

    /// Invalidates `key` for `by` (`IB_WR_LOCAL_INV`, or a received SEND with invalidate):
    /// a fast region or a type 2B memory window ([`MrInner::invalidate`]).
    pub(crate) fn invalidate(&self, by: Accessor<'_>, key: Key) -> Result {
        self.get(key)
            .ok_or(EINVAL)?
            .invalidate(by.pd_id, by.qpn, key)
    }

    /// Carries out a memory window bind (`IB_WR_BIND_MW`) for `by` ([`super::Window::bind`]).
    pub(crate) fn bind(&self, by: Accessor<'_>, req: &BindRequest) -> Result {
        let mw = self.get(req.mw_rkey).ok_or(EINVAL)?;
        let MrInner::Window(w) = &*mw else {
            return Err(EINVAL);
        };
        let mr = if req.length == 0 {
            None
        } else {
            Some(self.get(req.mr_lkey).ok_or(EINVAL)?)
        };
        w.bind(by.pd_id, by.qpn, req, mr)
    }
}
