// SPDX-License-Identifier: GPL-2.0

//! The responder resources (C9-112, C9-114): READ, atomic and ATOMIC WRITE requests remembered so
//! that a
//! duplicate is answered again (a READ executed again from its PSN, an atomic from its saved
//! result) rather than executed twice. A [`Responder`] keeps them in a [`ResourceTable`]: a
//! fixed array of [`MAX_RESOURCES`] for the host tests and KUnit, or the slots the driver
//! allocates for a QP's `max_dest_rd_atomic`. It uses `max_dest_rd_atomic` slots (at most
//! the table's), overwriting the oldest first.

use super::super::super::psn::{Msn, Psn};
use super::Responder;

/// Responder resources of a [`Responder::new`] (the host tests and KUnit use it); the
/// driver sizes each QP's table by its `max_dest_rd_atomic` ([`Responder::with_table`]).
pub const MAX_RESOURCES: usize = 16;

/// Where a [`Responder`] keeps its resources.
pub trait ResourceTable {
    /// Returns the slots.
    fn slots(&self) -> &[Resource];
    /// Returns the slots for writing.
    fn slots_mut(&mut self) -> &mut [Resource];
}

impl<const N: usize> ResourceTable for [Resource; N] {
    fn slots(&self) -> &[Resource] {
        self
    }

    fn slots_mut(&mut self) -> &mut [Resource] {
        self
    }
}

/// A remembered READ or atomic request (a responder resource): a slot of a
/// [`ResourceTable`], read and written by the [`Responder`] only.
#[derive(Clone, Copy, Debug, Default)]
pub struct Resource {
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

impl<R: ResourceTable> Responder<R> {
    /// Remembers a READ or atomic request, replacing the oldest beyond the configured
    /// number of resources (or beyond the table's, if it has fewer slots).
    pub(super) fn remember(&mut self, r: Resource) {
        let n = self.res.slots().len();
        let cap = usize::try_from(self.cfg.max_dest_rd_atomic)
            .unwrap_or(n)
            .clamp(1, n.max(1));
        let i = if self.res_next >= cap {
            0
        } else {
            self.res_next
        };
        if let Some(slot) = self.res.slots_mut().get_mut(i) {
            *slot = r;
        }
        self.res_next = i.wrapping_add(1);
    }

    /// Returns the remembered request whose PSN range holds `psn`, if any.
    pub(super) fn resource(&self, psn: Psn) -> Option<Resource> {
        self.res.slots().iter().find(|r| r.contains(psn)).copied()
    }
}
