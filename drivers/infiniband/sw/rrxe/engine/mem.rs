// SPDX-License-Identifier: GPL-2.0

//! Memory access: the one key resolver every local and remote access goes through.
//!
//! A key names memory in one of two ways. A local key in a WQE's scatter list (an lkey) or
//! a remote key from the wire (the rkey of a RETH or AtomicETH) names a registered region:
//! it is looked up in the device's key table and checked against the QP's protection domain,
//! the region's bounds and the access right the operation needs, before any byte moves
//! ([`QpShared::resolve`]). The device's `local_dma_lkey` ([`LOCAL_DMA_LKEY`]) in a kernel
//! consumer's scatter list names kernel memory by DMA address instead; only a kernel
//! consumer's QP has one, and its range is checked on each copy.
//!
//! Fast registration and invalidation (`IB_WR_REG_MR`, `IB_WR_LOCAL_INV`, a received SEND
//! with invalidate) change which key resolves to a kernel consumer's fast region; memory
//! window binds and invalidations (`IB_WR_BIND_MW`, `IB_WR_LOCAL_INV`, SEND with
//! invalidate) which range of a user region a window's key names. They go through the same
//! key table ([`QpShared::fast_register`], [`QpShared::bind_mw`],
//! [`QpShared::invalidate`]); a remote key naming a window resolves to the range of the
//! region it is bound to ([`Window::resolve`](crate::mw::Window::resolve)).
//!
//! Scatter lists are split into per-SGE pieces by the wire core's [`SgeList::walk`]; each
//! piece is resolved on its own.

use super::QpShared;
use crate::mr::{MrInner, Need, LOCAL_DMA_LKEY};
use crate::mw::BindRequest;
use crate::odp::{Fault, Resume, FAULT_AHEAD};
use crate::proto::target::AccessError;
use crate::proto::uabi::{SgeList, SgeWalkError};
use kernel::prelude::*;
use kernel::rdma::wr::KernelDma;
use kernel::sync::Arc;

/// Memory a key names, checked for one access of a given length.
pub(super) enum Mem<'a> {
    /// Bytes of a registered region, from byte `off` of the region.
    Region {
        /// The region.
        mr: Arc<MrInner>,
        /// Offset of the access in the region.
        off: usize,
        /// The registration it was checked under (fast regions).
        generation: u32,
    },
    /// Kernel memory at DMA address `addr` (a kernel consumer's `local_dma_lkey`).
    Kernel {
        /// The QP's access to kernel memory.
        dma: &'a KernelDma,
        /// Start of the access.
        addr: u64,
    },
}

impl Mem<'_> {
    /// Copies `out.len()` bytes from byte `at` of the access.
    pub(super) fn read(&self, at: usize, out: &mut [u8]) -> Result {
        match self {
            Self::Region {
                mr,
                off,
                generation,
            } => mr.read(*generation, off.checked_add(at).ok_or(EINVAL)?, out),
            Self::Kernel { dma, addr } => dma.read(offset(*addr, at)?, out),
        }
    }

    /// Copies `data` to byte `at` of the access.
    pub(super) fn write(&self, at: usize, data: &[u8]) -> Result {
        match self {
            Self::Region {
                mr,
                off,
                generation,
            } => mr.write(*generation, off.checked_add(at).ok_or(EINVAL)?, data),
            Self::Kernel { dma, addr } => dma.write(offset(*addr, at)?, data),
        }
    }
}

impl Mem<'_> {
    /// Returns whether the `len` bytes at byte `at` of the access can be copied now (for
    /// writing if `write`): always, unless they lie in on-demand paging memory that is not
    /// present.
    pub(super) fn is_present(&self, at: usize, len: usize, write: bool) -> bool {
        match self {
            Self::Region { mr, off, .. } => off
                .checked_add(at)
                .is_some_and(|o| mr.is_present(o, len, write)),
            Self::Kernel { .. } => true,
        }
    }
}

/// Returns `addr + at`, if it does not wrap.
fn offset(addr: u64, at: usize) -> Result<u64> {
    addr.checked_add(u64::try_from(at)?).ok_or(EINVAL)
}

/// Returns whether `need` writes the memory (an access that faults pages in for writing).
fn is_write(need: Need) -> bool {
    matches!(
        need,
        Need::LocalWrite | Need::RemoteWrite | Need::RemoteAtomic
    )
}

/// Returns whether `need` is a local access (one named by a WQE's scatter list).
fn is_local(need: Need) -> bool {
    matches!(need, Need::LocalRead | Need::LocalWrite)
}

impl QpShared {
    /// Resolves `key` for an access of `len` bytes at `va` with the right `need`: the region
    /// it names (in the key table, of the QP's PD, holding the whole range, granting `need`),
    /// or kernel memory for a kernel consumer's local DMA lkey. `EINVAL` for anything else
    /// ([`Self::resolve_why`] says why).
    pub(super) fn resolve(&self, key: u32, va: u64, len: u32, need: Need) -> Result<Mem<'_>> {
        self.resolve_why(key, va, len, need).map_err(|_| EINVAL)
    }

    /// [`Self::resolve`], with the reason of a refusal.
    pub(super) fn resolve_why(
        &self,
        key: u32,
        va: u64,
        len: u32,
        need: Need,
    ) -> Result<Mem<'_>, AccessError> {
        if is_local(need) && key == LOCAL_DMA_LKEY {
            // Kernel memory is only for kernel consumers; its range is checked per copy.
            let dma = self.kernel.as_ref().ok_or(AccessError::WrongKind)?;
            return Ok(Mem::Kernel { dma, addr: va });
        }
        let mr = self.dev.mr(key).ok_or(AccessError::NoKey)?;
        if let MrInner::Window(w) = &*mr {
            // Windows grant remote access only (an lkey never names one).
            if is_local(need) {
                return Err(AccessError::WrongKind);
            }
            let (mr, off) = w.resolve(key, self.pd_id, self.qpn, va, len, need)?;
            return Ok(Mem::Region {
                mr,
                off,
                generation: 0,
            });
        }
        let (off, generation) = mr.check(key, self.pd_id, va, len, need)?;
        Ok(Mem::Region {
            mr,
            off,
            generation,
        })
    }

    /// Why `key` is refused for an access of `len` bytes at `va` with `need`, for debug
    /// messages (the key is resolved again: if it passes now, the copy itself failed).
    pub(super) fn refusal(&self, key: u32, va: u64, len: u32, need: Need) -> &'static str {
        match self.resolve_why(key, va, len, need) {
            Ok(_) => "the memory could not be copied",
            Err(e) => e.reason(),
        }
    }

    /// Asks for the `len` bytes at byte `at` of `mem` to be faulted in (for writing if
    /// `write`) in process context ([`crate::odp`]), and for this QP to be resumed then as
    /// `resume` says. Returns whether it did: not for memory that is not on-demand paging,
    /// nor for a region whose last fault failed (the access then fails, as for a bad
    /// address), nor when the device's fault queue is full (the access is retried later).
    pub(super) fn request_fault(
        &self,
        mem: &Mem<'_>,
        at: usize,
        len: usize,
        write: bool,
        resume: Option<Resume>,
    ) -> bool {
        let Mem::Region { mr, off, .. } = mem else {
            return false;
        };
        let Some(off) = off.checked_add(at) else {
            return false;
        };
        if !mr.is_odp() || mr.fault_failed() {
            return false;
        }
        self.dev.faults.request(Fault {
            mr: mr.clone(),
            off,
            len,
            write,
            resume: resume.map(|how| (self.qpn, how)),
        })
    }

    /// Checks that the `len` bytes at `va` that `key` names for `need` can be copied now;
    /// if they are on-demand paging memory that is not present, asks for them to be faulted
    /// in (resuming this QP then as `resume` says) and returns `false`. `true` as well for a key
    /// that does not resolve or a fault that cannot be resolved: the access itself then
    /// fails as it would have.
    pub(super) fn ensure_present(
        &self,
        key: u32,
        va: u64,
        len: u32,
        need: Need,
        resume: Option<Resume>,
    ) -> bool {
        self.ensure_present_ahead(key, va, len, len, need, resume)
    }

    /// [`Self::ensure_present`] for the `len` bytes at `va`, but the fault, if they are not
    /// present, asks for the `ahead` bytes from `va` (at most [`FAULT_AHEAD`], and `len`
    /// where `key` does not grant that many): the pages of a message's next packets come in
    /// with its first fault instead of costing a refusal (an RNR NAK) each.
    pub(super) fn ensure_present_ahead(
        &self,
        key: u32,
        va: u64,
        len: u32,
        ahead: u32,
        need: Need,
        resume: Option<Resume>,
    ) -> bool {
        let write = is_write(need);
        let Ok(mem) = self.resolve(key, va, len, need) else {
            return true;
        };
        let Ok(n) = usize::try_from(len) else {
            return true;
        };
        if mem.is_present(0, n, write) {
            return true;
        }
        let ahead = ahead.min(u32::try_from(FAULT_AHEAD).unwrap_or(u32::MAX));
        if ahead > len {
            if let (Ok(wide), Ok(w)) = (self.resolve(key, va, ahead, need), usize::try_from(ahead))
            {
                return !self.request_fault(&wide, 0, w, write, resume);
            }
        }
        !self.request_fault(&mem, 0, n, write, resume)
    }

    /// Returns whether the first `len` bytes of a local scatter list at byte `offset` can be
    /// copied now for `need` (see [`Mem::is_present`]), asking for nothing; a piece that does
    /// not resolve counts as present (the access itself then fails).
    pub(super) fn sges_present(
        &self,
        sges: SgeList<'_>,
        offset: u32,
        len: usize,
        need: Need,
    ) -> bool {
        let write = is_write(need);
        let mut present = true;
        let _ = walk_sges(sges, offset, len, |va, lkey, r| {
            let n = u32::try_from(r.len())?;
            if let Ok(mem) = self.resolve(lkey, va, n, need) {
                present &= mem.is_present(0, r.len(), write);
            }
            Ok(())
        });
        present
    }

    /// Checks the pieces of the first `len` bytes of a local scatter list at byte `offset`
    /// as [`Self::ensure_present`] does; `false` if any is not present (all of those are
    /// asked for).
    pub(super) fn ensure_sges_present(
        &self,
        sges: SgeList<'_>,
        offset: u32,
        len: usize,
        need: Need,
        resume: Option<Resume>,
    ) -> bool {
        let mut present = true;
        let _ = walk_sges(sges, offset, len, |va, lkey, r| {
            let n = u32::try_from(r.len())?;
            present &= self.ensure_present(lkey, va, n, need, resume);
            Ok(())
        });
        present
    }

    /// Checks the flush right of `key` over `len` bytes at `va`, or over the whole region
    /// (or window) it names (`IB_FLUSH_MR`, whose RETH range means nothing).
    pub(super) fn check_flush(&self, key: u32, va: u64, len: u32, whole: bool) -> Result {
        if !whole {
            return self.resolve(key, va, len, Need::RemoteFlush).map(|_| ());
        }
        let mr = self.dev.mr(key).ok_or(EINVAL)?;
        let (start, _) = mr.span(key).ok_or(EINVAL)?;
        self.resolve(key, start, 0, Need::RemoteFlush).map(|_| ())
    }

    /// Carries out a fast registration (`IB_WR_REG_MR`) for this QP.
    pub(super) fn fast_register(&self, key: u32, access: u32) -> Result {
        self.dev.mr(key).ok_or(EINVAL)?.fast_register(
            self.pd_id,
            key,
            kernel::rdma::mr::AccessFlags::from_raw(access),
        )
    }

    /// Invalidates `rkey` for this QP (`IB_WR_LOCAL_INV`, or a received SEND with
    /// invalidate): a fast region or a type 2B memory window.
    pub(super) fn invalidate(&self, rkey: u32) -> Result {
        self.dev
            .mr(rkey)
            .ok_or(EINVAL)?
            .invalidate(self.pd_id, self.qpn, rkey)
    }

    /// Carries out a memory window bind (`IB_WR_BIND_MW`) for this QP ([`Window::bind`]).
    pub(super) fn bind_mw(&self, req: &BindRequest) -> Result {
        let mw = self.dev.mr(req.mw_rkey).ok_or(EINVAL)?;
        let MrInner::Window(w) = &*mw else {
            return Err(EINVAL);
        };
        let mr = if req.length == 0 {
            None
        } else {
            Some(self.dev.mr(req.mr_lkey).ok_or(EINVAL)?)
        };
        w.bind(self.pd_id, self.qpn, req, mr)
    }

    /// Checks every piece of the first `len` bytes of a local scatter list for `need`.
    pub(super) fn check_sges(&self, sges: SgeList<'_>, len: usize, need: Need) -> Result {
        walk_sges(sges, 0, len, |va, lkey, r| {
            self.resolve(lkey, va, u32::try_from(r.len())?, need)
                .map(|_| ())
        })
    }

    /// Copies `out.len()` bytes at byte `offset` of a local scatter list into `out`
    /// (`IB_ACCESS_LOCAL_READ`, implied by every valid lkey).
    pub(super) fn gather(&self, sges: SgeList<'_>, offset: u32, out: &mut [u8]) -> Result {
        walk_sges(sges, offset, out.len(), |va, lkey, r| {
            let out = out.get_mut(r).ok_or(EINVAL)?;
            self.resolve(lkey, va, u32::try_from(out.len())?, Need::LocalRead)?
                .read(0, out)
        })
    }

    /// Writes `data` at byte `offset` of a local scatter list (`IB_ACCESS_LOCAL_WRITE`).
    pub(super) fn scatter_sges(&self, sges: SgeList<'_>, offset: u32, data: &[u8]) -> Result {
        walk_sges(sges, offset, data.len(), |va, lkey, r| {
            let data = data.get(r).ok_or(EINVAL)?;
            self.resolve(lkey, va, u32::try_from(data.len())?, Need::LocalWrite)?
                .write(0, data)
        })
    }
}

/// Calls `f(va, lkey, range)` for each piece of `[offset, offset + len)` of a scatter/gather
/// list ([`SgeList::walk`]), where `range` is the piece's place in a buffer of `len` bytes.
/// Fails with `f`'s error, or `EINVAL` if the list is shorter than `offset + len`.
fn walk_sges(
    sges: SgeList<'_>,
    offset: u32,
    len: usize,
    mut f: impl FnMut(u64, u32, core::ops::Range<usize>) -> Result,
) -> Result {
    sges.walk(offset, len, |p| f(p.addr, p.lkey, p.range))
        .map_err(|e| match e {
            SgeWalkError::TooShort => EINVAL,
            SgeWalkError::Callback(e) => e,
        })
}
