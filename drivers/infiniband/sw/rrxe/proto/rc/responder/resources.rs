// SPDX-License-Identifier: GPL-2.0

//! The responder resources (C9-112, C9-114): READ, atomic and ATOMIC WRITE requests remembered so that a
//! duplicate is answered again (a READ executed again from its PSN, an atomic from its saved
//! result) rather than executed twice. A [`Responder`] has `N` slots ([`MAX_RESOURCES`] by
//! default), of which it uses `max_dest_rd_atomic`, overwriting the oldest first.

use super::super::super::psn::{Msn, Psn};
use super::Responder;

/// Responder resources of a [`Responder::new`] (the host tests and KUnit use it); the
/// driver's QPs keep as many as the device's `max_qp_rd_atom`
/// ([`Responder::with_resources`]).
pub const MAX_RESOURCES: usize = 16;

/// A remembered READ or atomic request (a responder resource).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Resource {
    /// [`Resource::FREE`], [`Resource::READ`], [`Resource::ATOMIC`],
    /// [`Resource::ATOMIC_WRITE`] or [`Resource::FLUSH`].
    pub(super) kind: u8,
    pub(super) first_psn: Psn,
    pub(super) npsn: u32,
    pub(super) va: u64,
    pub(super) rkey: u32,
    pub(super) len: u32,
    pub(super) msn: Msn,
    /// Atomic: the original value, once carried out.
    pub(super) orig: Option<u64>,
}

impl Resource {
    /// A free slot.
    pub(super) const FREE: u8 = 0;
    /// A READ request.
    pub(super) const READ: u8 = 1;
    /// An atomic request.
    pub(super) const ATOMIC: u8 = 2;
    /// An ATOMIC WRITE request (its `orig` is `Some(0)` once carried out).
    pub(super) const ATOMIC_WRITE: u8 = 3;
    /// A FLUSH request (its `orig` is `Some(0)` once carried out).
    pub(super) const FLUSH: u8 = 4;

    /// Returns `true` for an atomic, ATOMIC WRITE or FLUSH, answered from its saved outcome.
    pub(super) fn is_atomic(&self) -> bool {
        matches!(self.kind, Self::ATOMIC | Self::ATOMIC_WRITE | Self::FLUSH)
    }

    fn contains(&self, psn: Psn) -> bool {
        self.kind != Self::FREE
            && psn.diff(self.first_psn) >= 0
            && psn.diff(self.first_psn.wrapping_add(self.npsn)) < 0
    }
}

impl<const N: usize> Responder<N> {
    /// Remembers a READ or atomic request, replacing the oldest beyond the configured
    /// number of resources.
    pub(super) fn remember(&mut self, r: Resource) {
        let cap = usize::try_from(self.cfg.max_dest_rd_atomic)
            .unwrap_or(N)
            .clamp(1, N);
        let i = if self.res_next >= cap {
            0
        } else {
            self.res_next
        };
        if let Some(slot) = self.res.get_mut(i) {
            *slot = r;
        }
        self.res_next = i.wrapping_add(1);
    }

    /// Returns the remembered request whose PSN range holds `psn`, if any.
    pub(super) fn resource(&self, psn: Psn) -> Option<Resource> {
        self.res.iter().find(|r| r.contains(psn)).copied()
    }
}
