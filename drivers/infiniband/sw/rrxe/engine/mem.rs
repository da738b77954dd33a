// SPDX-License-Identifier: GPL-2.0

//! A QP's memory access: its keys resolved through the device's key table
//! ([`crate::mem`], the one resolver every local and remote access goes through), its
//! scatter lists walked piece by piece (the wire core's [`SgeList::walk`]), and the page
//! faults of on-demand paging memory asked for on its behalf ([`crate::odp`]).

use super::QpShared;
use crate::mem::{is_write, Accessor, BindRequest, Key, Mem, Need};
use crate::odp::{Fault, Resume, FAULT_AHEAD};
use crate::proto::target::AccessError;
use crate::proto::uabi::{SgeList, SgePiece, SgeWalkError};
use kernel::prelude::*;
use kernel::rdma::{mr::AccessFlags, wr::Sge};

/// A WQE's local scatter list (its lkeys name registered regions, or kernel memory by DMA
/// address), with, for a kernel consumer's WQE, the SGEs as it posted them: an access to
/// kernel memory names the posted SGE it falls in, never an address
/// ([`KernelDma`](kernel::rdma::wr::KernelDma)).
#[derive(Clone, Copy)]
pub(crate) struct Local<'a> {
    list: SgeList<'a>,
    /// Entry `i` is the SGE posted as entry `i` of `list`; empty for a user's WQE.
    posted: &'a [Option<Sge>],
}

impl<'a> Local<'a> {
    /// Returns the scatter list `list`, whose SGEs were posted as `posted`.
    pub(crate) fn new(list: SgeList<'a>, posted: &'a [Option<Sge>]) -> Self {
        Self { list, posted }
    }

    /// Returns the list.
    pub(crate) fn list(&self) -> SgeList<'a> {
        self.list
    }

    /// Returns the SGE piece `p` lies in, as posted (`None` for a user's WQE).
    fn posted(&self, p: &SgePiece) -> Option<&'a Sge> {
        self.posted.get(p.index)?.as_ref()
    }
}

impl QpShared {
    /// Who this QP is to the key table.
    fn accessor(&self) -> Accessor<'_> {
        Accessor {
            pd_id: self.pd_id,
            qpn: self.qpn,
            kernel: self.kernel.as_ref(),
        }
    }

    /// Resolves `key` for an access of `len` bytes at `va` with the right `need`
    /// ([`KeyTable::resolve`](crate::mem::KeyTable::resolve)). `EINVAL` for anything but
    /// memory this QP may access so ([`Self::resolve_why`] says why).
    pub(super) fn resolve(&self, key: Key, va: u64, len: u32, need: Need) -> Result<Mem<'_>> {
        self.resolve_posted(key, va, len, need, None)
    }

    /// [`Self::resolve`] for a piece of a kernel consumer's SGE `posted`, as it posted it (the
    /// only way to reach kernel memory by DMA address).
    pub(super) fn resolve_posted<'a>(
        &'a self,
        key: Key,
        va: u64,
        len: u32,
        need: Need,
        posted: Option<&Sge>,
    ) -> Result<Mem<'a>> {
        self.resolve_why(key, va, len, need, posted)
            .map_err(|_| EINVAL)
    }

    /// [`Self::resolve_posted`], with the reason of a refusal.
    pub(super) fn resolve_why<'a>(
        &'a self,
        key: Key,
        va: u64,
        len: u32,
        need: Need,
        posted: Option<&Sge>,
    ) -> Result<Mem<'a>, AccessError> {
        self.dev
            .keys
            .resolve(self.accessor(), key, va, len, need, posted)
    }

    /// Why `key` is refused for an access of `len` bytes at `va` with `need`, for debug
    /// messages (the key is resolved again: if it passes now, the copy itself failed).
    pub(super) fn refusal(&self, key: Key, va: u64, len: u32, need: Need) -> &'static str {
        match self.resolve_why(key, va, len, need, None) {
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
        key: Key,
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
        key: Key,
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
        let _ = walk_sges(sges, offset, len, |p| {
            let n = u32::try_from(p.range.len())?;
            if let Ok(mem) = self.resolve(Key::from_raw(p.lkey), p.addr, n, need) {
                present &= mem.is_present(0, p.range.len(), write);
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
        let _ = walk_sges(sges, offset, len, |p| {
            let n = u32::try_from(p.range.len())?;
            present &= self.ensure_present(Key::from_raw(p.lkey), p.addr, n, need, resume);
            Ok(())
        });
        present
    }

    /// Checks the flush right of `key` over `len` bytes at `va`, or over the whole region
    /// (or window) it names (`IB_FLUSH_MR`, whose RETH range means nothing).
    pub(super) fn check_flush(&self, key: Key, va: u64, len: u32, whole: bool) -> Result {
        self.dev
            .keys
            .check_flush(self.accessor(), key, va, len, whole)
    }

    /// Carries out a fast registration (`IB_WR_REG_MR`) for this QP.
    pub(super) fn fast_register(&self, key: Key, access: u32) -> Result {
        self.dev
            .keys
            .fast_register(self.accessor(), key, AccessFlags::from_raw(access))
    }

    /// Invalidates `rkey` for this QP (`IB_WR_LOCAL_INV`, or a received SEND with
    /// invalidate): a fast region or a type 2B memory window.
    pub(super) fn invalidate(&self, rkey: Key) -> Result {
        self.dev.keys.invalidate(self.accessor(), rkey)
    }

    /// Carries out a memory window bind (`IB_WR_BIND_MW`) for this QP
    /// ([`Window::bind`](crate::mem::Window::bind)).
    pub(super) fn bind_mw(&self, req: &BindRequest) -> Result {
        self.dev.keys.bind(self.accessor(), req)
    }

    /// Resolves piece `p` of local scatter list `sges` for `need`.
    fn resolve_piece<'a>(&'a self, sges: &Local<'_>, p: &SgePiece, need: Need) -> Result<Mem<'a>> {
        let n = u32::try_from(p.range.len())?;
        self.resolve_posted(Key::from_raw(p.lkey), p.addr, n, need, sges.posted(p))
    }

    /// Checks every piece of the first `len` bytes of a local scatter list for `need`.
    pub(super) fn check_sges(&self, sges: Local<'_>, len: usize, need: Need) -> Result {
        walk_sges(sges.list, 0, len, |p| {
            self.resolve_piece(&sges, &p, need).map(|_| ())
        })
    }

    /// Copies `out.len()` bytes at byte `offset` of a local scatter list into `out`
    /// (`IB_ACCESS_LOCAL_READ`, implied by every valid lkey).
    pub(super) fn gather(&self, sges: Local<'_>, offset: u32, out: &mut [u8]) -> Result {
        walk_sges(sges.list, offset, out.len(), |p| {
            let out = out.get_mut(p.range.clone()).ok_or(EINVAL)?;
            self.resolve_piece(&sges, &p, Need::LocalRead)?.read(0, out)
        })
    }

    /// Writes `data` at byte `offset` of a local scatter list (`IB_ACCESS_LOCAL_WRITE`).
    pub(super) fn scatter_sges(&self, sges: Local<'_>, offset: u32, data: &[u8]) -> Result {
        walk_sges(sges.list, offset, data.len(), |p| {
            let data = data.get(p.range.clone()).ok_or(EINVAL)?;
            self.resolve_piece(&sges, &p, Need::LocalWrite)?
                .write(0, data)
        })
    }
}

/// Calls `f` for each piece of `[offset, offset + len)` of a scatter/gather list
/// ([`SgeList::walk`]; a piece's `range` is its place in a buffer of `len` bytes). Fails with
/// `f`'s error, or `EINVAL` if the list is shorter than `offset + len`.
fn walk_sges(
    sges: SgeList<'_>,
    offset: u32,
    len: usize,
    f: impl FnMut(SgePiece) -> Result,
) -> Result {
    sges.walk(offset, len, f).map_err(|e| match e {
        SgeWalkError::TooShort => EINVAL,
        SgeWalkError::Callback(e) => e,
    })
}
