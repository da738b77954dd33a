// SPDX-License-Identifier: GPL-2.0

//! User memory regions (`ibv_reg_mr`): pinned, or on-demand paging ([`crate::odp`]), fixed
//! at registration but for the protection domain and rights a re-registration changes.

use super::{Key, Need, SUPPORTED_ACCESS};
use crate::proto::target::Region;
use kernel::prelude::*;
use kernel::rdma::{
    mr::{Access, AccessFlags, Umem},
    odp::OdpUmem,
    MaySleep,
};
use kernel::sync::atomic::{ordering::Full, ordering::Relaxed, Atomic};

/// The memory of a user region.
pub(crate) enum UserMem {
    /// Pinned at registration.
    Pinned(Umem),
    /// On-demand paging: faulted in when needed ([`crate::odp`]).
    Odp(OdpUmem),
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
    pub(crate) key: Key,
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
    /// A region of `length` bytes of `umem` at `iova`, of protection domain `pd_id`, with
    /// `access` rights, under `key`.
    pub(crate) fn new(
        umem: UserMem,
        iova: u64,
        length: u64,
        access: AccessFlags,
        pd_id: u64,
        key: Key,
    ) -> Self {
        Self {
            umem,
            iova,
            length,
            access: Atomic::new(access.bits()),
            pd_id: Atomic::new(pd_id),
            key,
            windows: Atomic::new(0),
            fault_failed: Atomic::new(0),
        }
    }

    /// Returns the access rights (a re-registration may change them at any time: an access
    /// is checked against the rights of the moment).
    pub(crate) fn access(&self) -> AccessFlags {
        AccessFlags::from_raw(self.access.load(Relaxed))
    }

    /// Returns the protection domain's identity (as [`Self::access`]).
    pub(crate) fn pd_id(&self) -> u64 {
        self.pd_id.load(Relaxed)
    }

    /// Returns the region as the wire core checks accesses against it, with the protection
    /// domain and rights of the moment.
    pub(crate) fn region(&self) -> Region {
        Region {
            iova: self.iova,
            length: self.length,
            rights: self.access().bits(),
            pd: self.pd_id(),
        }
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
    pub(crate) fn check_local(&self, key: Key, pd_id: u64, va: u64, len: u32) -> Option<usize> {
        if self.key != key {
            return None;
        }
        let off = self.region().check(pd_id, va, len, Need::LocalWrite).ok()?;
        usize::try_from(off).ok()
    }

    /// Starts the deregistration: `EBUSY` while windows are bound to the region.
    pub(crate) fn begin_dereg(&self) -> Result {
        self.windows
            .cmpxchg(0, DEREGISTERED, Full)
            .map(|_| ())
            .map_err(|_| EBUSY)
    }

    /// Changes the protection domain, the rights or both (`ibv_rereg_mr` in place). New
    /// rights must be ones rrxe supports and the memory allows (writable rights need memory
    /// pinned writable; pinned memory stays pinned, on-demand paging stays so); `EBUSY`
    /// while windows are bound to the region (their bindings were checked against its PD
    /// and rights).
    pub(crate) fn rereg(&self, pd_id: Option<u64>, access: Option<AccessFlags>) -> Result {
        if let Some(access) = access {
            let odp = Access::OnDemand;
            if !access.is_within(SUPPORTED_ACCESS | odp)
                || access.contains(odp) != self.access().contains(odp)
            {
                return Err(EOPNOTSUPP);
            }
            match &self.umem {
                UserMem::Pinned(m) => m.check_rereg_access(access)?,
                UserMem::Odp(m) => m.check_rereg_access(access)?,
            }
        }
        if self.windows.load(Relaxed) != 0 {
            return Err(EBUSY);
        }
        if let Some(pd_id) = pd_id {
            self.pd_id.store(pd_id, Relaxed);
        }
        if let Some(access) = access {
            self.access.store(access.bits(), Relaxed);
        }
        Ok(())
    }

    /// Copies out of the region from byte `off`.
    pub(crate) fn read(&self, off: usize, out: &mut [u8]) -> Result {
        match &self.umem {
            UserMem::Pinned(m) => m.copy_from(off, out),
            UserMem::Odp(m) => m.copy_from(off, out),
        }
    }

    /// Copies into the region at byte `off`.
    pub(crate) fn write(&self, off: usize, data: &[u8]) -> Result {
        match &self.umem {
            UserMem::Pinned(m) => m.copy_to(off, data),
            UserMem::Odp(m) => m.copy_to(off, data),
        }
    }

    /// Returns the on-demand paging memory, if the region is an ODP one.
    pub(crate) fn odp(&self) -> Option<&OdpUmem> {
        match &self.umem {
            UserMem::Odp(m) => Some(m),
            UserMem::Pinned(_) => None,
        }
    }

    /// Returns whether the `len` bytes at byte `off` can be copied now (for writing if
    /// `write`): always for pinned memory.
    pub(crate) fn is_present(&self, off: usize, len: usize, write: bool) -> bool {
        self.odp().is_none_or(|m| m.is_present(off, len, write))
    }

    /// Faults the `len` bytes at byte `off` in (for writing if `write`), in process context,
    /// and records whether that failed ([`Self::fault_failed`]). Nothing to do for pinned
    /// memory.
    pub(crate) fn fault(&self, ctx: &MaySleep<'_>, off: usize, len: usize, write: bool) -> Result {
        let Some(m) = self.odp() else {
            return Ok(());
        };
        let r = m.fault(ctx, off, len, write);
        self.fault_failed.store(u32::from(r.is_err()), Relaxed);
        r
    }

    /// Returns whether the region's last fault failed ([`UserRegion::fault_failed`]).
    pub(crate) fn fault_failed(&self) -> bool {
        self.fault_failed.load(Relaxed) != 0
    }
}
