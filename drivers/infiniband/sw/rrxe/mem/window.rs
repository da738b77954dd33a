// SPDX-License-Identifier: GPL-2.0

//! Memory windows (`ibv_alloc_mw`): a window is a key in the device's key table
//! ([`MrInner::Window`]), bound and invalidated by the requester in send queue order and
//! resolved by the responder like any rkey. [`Window`] is what the key table holds: its
//! binding, and the checks of a bind, an invalidation and a resolution. The verbs' object
//! is `crate::mw::RrxeMw`.

use super::{Key, MrInner, Need, SUPPORTED_ACCESS};
use crate::proto::target::{AccessError, Region};
use kernel::prelude::*;
use kernel::rdma::{
    mr::{Access, AccessFlags},
    BhSpinLock, BhSpinLockGuard,
};
use kernel::sync::Arc;

/// Access flags a memory window may grant: those of a region, and zero-based addressing
/// (type 2B only).
const SUPPORTED_MW_ACCESS: AccessFlags =
    SUPPORTED_ACCESS.union(AccessFlags::of(&[Access::ZeroBased]));

/// A memory window.
pub(crate) struct Window {
    /// The protection domain's identity.
    pd_id: u64,
    /// The window's index in the key table.
    index: u32,
    /// Type 2B (bound to a QP, invalidated by work requests) rather than type 1.
    type2: bool,
    /// Its key and binding, under a lock taken with bottom halves disabled.
    state: Pin<KBox<BhSpinLock<WindowState>>>,
}

/// A window's key and binding.
struct WindowState {
    /// The current key (only the variant changes, with each bind).
    key: Key,
    /// What the window names; `None` for an unbound type 1 window or a free type 2B one.
    bound: Option<Binding>,
}

/// What a bound window names: a range of a user region, with the window's own rights.
///
/// # Invariants
///
/// `mr` is a [`MrInner::User`] region in which this binding is counted
/// ([`UserRegion::hold_window`]) until it is dropped.
struct Binding {
    mr: Arc<MrInner>,
    /// Start of the range as the region's addresses name it.
    addr: u64,
    /// Length of the range (not 0).
    length: u64,
    /// The rights the window grants (and [`Access::ZeroBased`]).
    access: AccessFlags,
    /// The QP a type 2B window was bound through (the only one that may use it).
    qpn: u32,
}

impl Drop for Binding {
    fn drop(&mut self) {
        // Uncounted first: the region may then be deregistered, but the deregistration
        // waits for an RCU grace period (a section with bottom halves disabled, where the
        // data path binds and invalidates) before dropping its reference, so the data path
        // never drops the last one (which unpins, and may sleep).
        if let MrInner::User(u) = &*self.mr {
            u.release_window();
        }
    }
}

/// A memory window bind (`IB_WR_BIND_MW`), as the work request gives it.
pub(crate) struct BindRequest {
    /// Key of the region to bind to (unused when `length` is 0).
    pub(crate) mr_lkey: Key,
    /// The window's current key.
    pub(crate) mw_rkey: Key,
    /// The new key (only its variant is used).
    pub(crate) rkey: Key,
    /// Start of the range in the region's addresses.
    pub(crate) addr: u64,
    /// Length of the range; 0 unbinds a type 1 window.
    pub(crate) length: u64,
    /// `IB_ACCESS_*` rights the window grants.
    pub(crate) access: u32,
}

impl Window {
    /// Returns the window's index in the key table.
    pub(crate) fn index(&self) -> u32 {
        self.index
    }

    /// Returns the start and length of the range `key` names now, as it is addressed (0
    /// for a zero-based window), if it is the current key of a bound window.
    pub(crate) fn span(&self, key: Key) -> Option<(u64, u64)> {
        let st = self.lock();
        let b = st.bound.as_ref().filter(|_| st.key == key)?;
        let start = if b.access.contains(Access::ZeroBased) {
            0
        } else {
            b.addr
        };
        Some((start, b.length))
    }

    /// Returns a new window of protection domain `pd_id` with key `key`, unbound.
    pub(crate) fn new(pd_id: u64, key: Key, type2: bool) -> Result<Self> {
        Ok(Self {
            pd_id,
            index: key.index(),
            type2,
            state: KBox::pin_init(
                BhSpinLock::new(
                    WindowState { key, bound: None },
                    c"rrxe_mw",
                    kernel::static_lock_class!(),
                ),
                crate::params::gfp_user(),
            )?,
        })
    }

    /// Takes the state's lock, with bottom halves disabled (the data path takes it in
    /// softirq).
    fn lock(&self) -> BhSpinLockGuard<'_, WindowState> {
        self.state.lock()
    }

    /// Binds the window for a QP (number `qpn`) of protection domain `pd_id` to `mr` (the
    /// table entry at `req.mr_lkey`'s index; `None` for a length of 0), with the checks of
    /// IBA 10.6.7.2 (rdma_rxe's `rxe_check_bind_mw()`): the window's current key; a type 1
    /// window not zero based, a type 2B one free and bound to a non-empty range; the QP,
    /// the window and the region in one PD (C10-72); the region's current key, its
    /// `MW_BIND` right (C10-73), its local write right for a writable window (C10-74), and
    /// the whole range inside it (C10-75). `EINVAL` otherwise, and nothing changes.
    pub(crate) fn bind(
        &self,
        pd_id: u64,
        qpn: u32,
        req: &BindRequest,
        mr: Option<Arc<MrInner>>,
    ) -> Result {
        let access = AccessFlags::from_raw(req.access);
        if !access.is_within(SUPPORTED_MW_ACCESS)
            || (!self.type2 && access.contains(Access::ZeroBased))
            || self.pd_id != pd_id
        {
            return Err(EINVAL);
        }
        let mut st = self.lock();
        if st.key != req.mw_rkey || (self.type2 && (st.bound.is_some() || req.length == 0)) {
            return Err(EINVAL);
        }
        let new = match (mr, req.length) {
            (_, 0) => None,
            (Some(mr), length) => {
                let MrInner::User(u) = &*mr else {
                    return Err(EINVAL);
                };
                let remote_modify = Access::RemoteWrite | Access::RemoteAtomic;
                let end = req.addr.checked_add(length).ok_or(EINVAL)?;
                let region_end = u.iova.checked_add(u.length).ok_or(EINVAL)?;
                let rights = u.access();
                if u.key != req.mr_lkey
                    || u.pd_id() != pd_id
                    || !rights.contains(Access::MwBind)
                    || (access.contains_any(remote_modify) && !rights.contains(Access::LocalWrite))
                    || req.addr < u.iova
                    || end > region_end
                    || !u.hold_window()
                {
                    return Err(EINVAL);
                }
                // INVARIANT: a user region, this binding counted in it just above.
                Some(Binding {
                    addr: req.addr,
                    length,
                    access,
                    qpn,
                    mr,
                })
            }
            (None, _) => return Err(EINVAL),
        };
        st.key = st.key.with_variant_of(req.rkey);
        // The binding replaced (a type 1 rebind) is dropped here: its region is still
        // registered (it counted this binding), so this is not its last reference.
        st.bound = new;
        Ok(())
    }

    /// Invalidates the window for a QP (number `qpn`) of protection domain `pd_id`, by a
    /// LOCAL_INV or a received SEND with invalidate of `key`: only a bound type 2B window,
    /// by the QP it is bound through (o10-37.2.26, o10-37.2.43). `EINVAL` otherwise.
    pub(crate) fn invalidate(&self, pd_id: u64, qpn: u32, key: Key) -> Result {
        let mut st = self.lock();
        match &st.bound {
            Some(b) if self.type2 && self.pd_id == pd_id && st.key == key && b.qpn == qpn => {
                st.bound = None;
                Ok(())
            }
            _ => Err(EINVAL),
        }
    }

    /// Resolves `key` for a remote access of `len` bytes at `va` with the right `need` by a
    /// QP (number `qpn`) of protection domain `pd_id`: the window must be bound under `key`,
    /// in that PD (a type 2B window: through that QP), grant `need` and hold the whole range
    /// (addressed from 0 if zero based). Returns the region and the offset of the access in
    /// it.
    pub(crate) fn resolve(
        &self,
        key: Key,
        pd_id: u64,
        qpn: u32,
        va: u64,
        len: u32,
        need: Need,
    ) -> Result<(Arc<MrInner>, usize), AccessError> {
        let st = self.lock();
        let b = st.bound.as_ref().ok_or(AccessError::StaleKey)?;
        if st.key != key {
            return Err(AccessError::StaleKey);
        }
        if self.type2 && b.qpn != qpn {
            return Err(AccessError::OtherQp);
        }
        let MrInner::User(u) = &*b.mr else {
            return Err(AccessError::WrongKind);
        };
        let window = Region {
            iova: if b.access.contains(Access::ZeroBased) {
                0
            } else {
                b.addr
            },
            length: b.length,
            rights: b.access.bits(),
            pd: self.pd_id,
        };
        let off = window.check(pd_id, va, len, need)?;
        // The range is inside the region (checked at bind): this cannot overflow.
        let off = b
            .addr
            .checked_sub(u.iova)
            .and_then(|o| o.checked_add(off))
            .and_then(|o| usize::try_from(o).ok())
            .ok_or(AccessError::OutOfBounds)?;
        Ok((b.mr.clone(), off))
    }
}
