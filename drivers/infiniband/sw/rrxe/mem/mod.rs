// SPDX-License-Identifier: GPL-2.0

//! Keys and memory: what an lkey or rkey names, and the one place every access by key is
//! resolved. The floor below the engine (which resolves through it) and above the wire
//! core (whose [`Region::check`](crate::proto::target::Region::check) it applies).
//!
//! The device's key table ([`KeyTable`], `key.rs`) maps a [`Key`]'s index to a region or a
//! window ([`MrInner`]); the resolver (`resolve.rs`) checks a key for an access by a QP and
//! returns the memory it names ([`Mem`]).
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
//!
//! Files: this one has the table's view of an entry ([`MrInner`]: the checks and copies of
//! the data path); `key.rs` the keys and the table; `resolve.rs` the resolver; `user.rs`
//! the user regions, pinned or on-demand paging; `fast.rs` the fast-registration regions
//! and their page lists; `window.rs` the memory windows. The verbs that make and destroy
//! them are above, with the other verbs (`mr.rs`, `mw.rs`).

mod fast;
mod key;
mod resolve;
mod user;
mod window;

pub(crate) use crate::proto::target::Access as Need;
use crate::proto::target::AccessError;
pub(crate) use fast::{FastRegion, PageLists};
use kernel::prelude::*;
use kernel::rdma::{
    mr::{Access, AccessFlags},
    MaySleep,
};
pub(crate) use key::{Key, KeyTable, LOCAL_DMA_LKEY};
pub(crate) use resolve::{is_write, Accessor, Mem};
pub(crate) use user::{UserMem, UserRegion};
pub(crate) use window::{BindRequest, Window};

/// Access flags rrxe supports on memory regions.
pub(crate) const SUPPORTED_ACCESS: AccessFlags = AccessFlags::of(&[
    Access::LocalWrite,
    Access::RemoteWrite,
    Access::RemoteRead,
    Access::RemoteAtomic,
    Access::MwBind,
    // Remote FLUSH for global visibility (IB_DEVICE_FLUSH_GLOBAL). Not for persistence: the
    // pages would have to be persistent memory, which rrxe does not check for.
    Access::FlushGlobal,
    // Hints a device may ignore (perftest asks for relaxed ordering).
    Access::Optional,
]);

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

impl MrInner {
    /// Returns the key table index.
    pub(crate) fn index(&self) -> u32 {
        match self {
            Self::User(u) => u.key.index(),
            Self::Fast(f) => f.index(),
            Self::Window(w) => w.index(),
        }
    }

    /// Returns the start and length of what `key` names now (a region, or a bound window's
    /// range as it is addressed), if it is the current key.
    pub(crate) fn span(&self, key: Key) -> Option<(u64, u64)> {
        match self {
            Self::User(u) => (u.key == key).then_some((u.iova, u.length)),
            Self::Fast(f) => f.span(key),
            Self::Window(w) => w.span(key),
        }
    }

    /// Checks an access of `len` bytes at `va` through `key` by a QP of protection domain
    /// `pd_id`, and returns where it starts: the offset in the region and the registration
    /// it was checked under. The region must be in the same PD, grant the right and contain
    /// the whole range ([`Region::check`](crate::proto::target::Region::check)); `key` must
    /// be the region's (a fast region's current key, the region valid).
    pub(crate) fn check(
        &self,
        key: Key,
        pd_id: u64,
        va: u64,
        len: u32,
        need: Need,
    ) -> Result<(usize, u32), AccessError> {
        let (region, generation) = match self {
            Self::User(u) if u.key != key => return Err(AccessError::StaleKey),
            Self::User(u) => (u.region(), 0),
            Self::Fast(f) => f.current(key)?,
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
            Self::User(u) => u.read(off, out),
            Self::Fast(f) => f.copy(generation, off, out.len(), |page, at, r| {
                page.read(at, out.get_mut(r).ok_or(EINVAL)?)
            }),
            Self::Window(_) => Err(EINVAL),
        }
    }

    /// Copies into the region at an offset checked under registration `generation`.
    pub(crate) fn write(&self, generation: u32, off: usize, data: &[u8]) -> Result {
        match self {
            Self::User(u) => u.write(off, data),
            Self::Fast(f) => f.copy(generation, off, data.len(), |page, at, r| {
                page.write(at, data.get(r).ok_or(EINVAL)?)
            }),
            Self::Window(_) => Err(EINVAL),
        }
    }

    /// Returns whether the `len` bytes at offset `off` can be copied now (for writing if
    /// `write`): always, unless they are in an on-demand paging region and not present.
    pub(crate) fn is_present(&self, off: usize, len: usize, write: bool) -> bool {
        match self {
            Self::User(u) => u.is_present(off, len, write),
            _ => true,
        }
    }

    /// Returns whether the region is an on-demand paging one.
    pub(crate) fn is_odp(&self) -> bool {
        matches!(self, Self::User(u) if u.odp().is_some())
    }

    /// Faults the `len` bytes at offset `off` of an on-demand paging region in (for writing
    /// if `write`), in process context; nothing to do for other regions.
    pub(crate) fn fault(&self, ctx: &MaySleep<'_>, off: usize, len: usize, write: bool) -> Result {
        match self {
            Self::User(u) => u.fault(ctx, off, len, write),
            _ => Ok(()),
        }
    }

    /// Returns whether the region's last fault failed (an on-demand paging region whose
    /// memory is not mapped any more).
    pub(crate) fn fault_failed(&self) -> bool {
        matches!(self, Self::User(u) if u.fault_failed())
    }

    /// Carries out an `IB_WR_REG_MR` of a QP of protection domain `pd_id`: the free fast
    /// region of `key`'s index becomes valid under `key` with `access`
    /// ([`FastRegion::register`]). `EINVAL` for any other region.
    pub(crate) fn fast_register(&self, pd_id: u64, key: Key, access: AccessFlags) -> Result {
        match self {
            Self::Fast(f) => f.register(pd_id, key, access),
            _ => Err(EINVAL),
        }
    }

    /// Invalidates `key` for a QP (number `qpn`) of protection domain `pd_id`
    /// (`IB_WR_LOCAL_INV`, or a received SEND with invalidate): the fast region it names
    /// becomes free, or the type 2B window it names unbound ([`Window::invalidate`]).
    /// `EINVAL` if `key` is not a fast region's current key in that PD (user regions cannot
    /// be invalidated).
    pub(crate) fn invalidate(&self, pd_id: u64, qpn: u32, key: Key) -> Result {
        match self {
            Self::Fast(f) => f.invalidate(pd_id, key),
            Self::Window(w) => w.invalidate(pd_id, qpn, key),
            Self::User(_) => Err(EINVAL),
        }
    }
}

#[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
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
