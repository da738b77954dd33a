// SPDX-License-Identifier: GPL-2.0

//! The shadow ring of a connected QP's requester: the copies of the send WQEs in flight,
//! each validated once when it is copied out of the send queue ([`Shadow`]).

use super::{Local, SQ_SLOTS};
use crate::proto::{
    rc::WcStatus,
    uabi::{self, CheckedSendWqe, SendData, SendQueueParams, SendWqe},
};
use kernel::alloc::KVVec;
use kernel::prelude::*;
use kernel::rdma::wr::Sge;

/// Copies of the send WQEs in flight: up to `SQ_SLOTS` slots (as many as the send queue
/// depth the QP was created with: a QP of 16 WRs does not pay for 128 copies, nor one of 64
/// for the 127 its ring holds), used as a ring in posting order. A WQE is copied out of the
/// ring whole into `scratch` and validated there; its slot keeps what was validated
/// ([`CheckedSendWqe`]) and the WQE's data area (SGE list, inline data or ATOMIC WRITE
/// operand), the only bytes read after validation: building a packet, placing a response
/// or completing the WQE never validates it again. The requester starts a WQE only while a
/// slot is free.
///
/// A connected user QP's ring is made empty ([`Shadow::deferred`]) and gets its storage at
/// the QP's first doorbell ([`Shadow::provide`]): an idle QP holds no copies (about 17 KiB
/// for 64 WRs of one SGE), and until then no WQE starts.
///
/// # Invariants
///
/// Either `slots == 0`, `next == 0` and every vector is empty (no storage yet), or
/// `0 < slots <= SQ_SLOTS`, `scratch` holds `elem` bytes, `data` holds `slots * area`
/// bytes (`area` is `elem` less the WQE's fixed part) and `wqes` `slots` entries,
/// `next < slots`; `posted` holds `slots * per` entries, `per` being `area / SGE_LEN` for a
/// kernel consumer's QP and 0 for a user's.
pub(super) struct Shadow {
    scratch: KVVec<u8>,
    data: KVVec<u8>,
    wqes: KVVec<Option<CheckedSendWqe>>,
    /// A kernel consumer's SGEs as posted, `per` for each slot.
    posted: KVVec<Option<Sge>>,
    per: usize,
    area: usize,
    slots: u32,
    /// The slot the next WQE goes to.
    next: u32,
}

impl Shadow {
    /// Returns an empty shadow ring of `slots` slots (1 to `SQ_SLOTS`) for WQEs of `elem`
    /// bytes, of a kernel consumer's QP if `kernel`.
    pub(super) fn new(elem: usize, slots: usize, kernel: bool) -> Result<Self> {
        let slots = slots.clamp(1, SQ_SLOTS);
        let area = elem.saturating_sub(uabi::SEND_WQE_DATA_OFFSET);
        let len = slots.checked_mul(area).ok_or(EINVAL)?;
        let per = if kernel { area / uabi::SGE_LEN } else { 0 };
        Ok(Self {
            scratch: KVVec::from_elem(0u8, elem, crate::params::gfp_user())?,
            data: KVVec::from_elem(0u8, len, crate::params::gfp_user())?,
            wqes: KVVec::from_elem(None, slots, crate::params::gfp_user())?,
            posted: KVVec::from_elem(
                None,
                slots.checked_mul(per).ok_or(EINVAL)?,
                crate::params::gfp_user(),
            )?,
            per,
            area,
            slots: u32::try_from(slots).map_err(|_| EINVAL)?,
            next: 0,
        })
    }

    /// Returns a ring without storage, in which no WQE starts until [`Self::provide`] gives
    /// it a ring [`Self::new`] made.
    pub(super) fn deferred() -> Self {
        // INVARIANT: no slots, no storage.
        Self {
            scratch: KVVec::new(),
            data: KVVec::new(),
            wqes: KVVec::new(),
            posted: KVVec::new(),
            per: 0,
            area: 0,
            slots: 0,
            next: 0,
        }
    }

    /// Returns whether the ring has its storage.
    pub(super) fn is_provided(&self) -> bool {
        self.slots > 0
    }

    /// Gives a ring without storage that of `spare` (made by [`Self::new`], in process
    /// context, before the QP's lock was taken). Returns what the caller drops once it has
    /// released that lock: the empty ring, or `spare` if this one had storage already.
    pub(super) fn provide(&mut self, spare: Self) -> Self {
        if self.is_provided() {
            return spare;
        }
        core::mem::replace(self, spare)
    }

    /// Returns the number of slots: the most send WQEs in flight.
    pub(super) fn slots(&self) -> usize {
        // `slots <= SQ_SLOTS` by the type invariant.
        self.slots as usize
    }

    /// Returns the slot the next WQE goes to.
    pub(super) fn next_slot(&self) -> u32 {
        self.next
    }

    /// Moves on to the next slot, once the WQE in [`Self::next_slot`] is posted.
    pub(super) fn advance(&mut self) {
        // INVARIANT: the new `next` is below `slots`, or 0 in a ring without storage.
        self.next = self
            .next
            .wrapping_add(1)
            .checked_rem(self.slots)
            .unwrap_or(0);
    }

    /// Returns the data area kept for slot `id`.
    fn area(&self, id: u32) -> Option<&[u8]> {
        let start = usize::try_from(id).ok()?.checked_mul(self.area)?;
        self.data.get(start..start.checked_add(self.area)?)
    }

    /// Returns the data area of slot `id` for writing.
    fn area_mut(&mut self, id: u32) -> Option<&mut [u8]> {
        let start = usize::try_from(id).ok()?.checked_mul(self.area)?;
        self.data.get_mut(start..start.checked_add(self.area)?)
    }

    /// Returns the buffer a WQE for slot `id` is copied into from its ring, before
    /// [`Self::check`] (what slot `id` held is forgotten).
    pub(super) fn scratch_for(&mut self, id: u32) -> Option<&mut [u8]> {
        *self.wqes.get_mut(usize::try_from(id).ok()?)? = None;
        Some(&mut self.scratch)
    }

    /// Validates the WQE copied into the scratch buffer and keeps the result, with its data
    /// area, in slot `id`.
    pub(super) fn check(
        &mut self,
        id: u32,
        p: &SendQueueParams,
    ) -> core::result::Result<SendWqe<'_>, WcStatus> {
        let i = usize::try_from(id).map_err(|_| WcStatus::LocQpOpErr)?;
        let checked = uabi::validate_send_wqe(&self.scratch, p)
            .map_err(|e| e.send_status())?
            .detach();
        // The data area is the scratch copy's bytes after the fixed part (`area` of them).
        let start = i.checked_mul(self.area).ok_or(WcStatus::LocQpOpErr)?;
        let to = start
            .checked_add(self.area)
            .and_then(|end| self.data.get_mut(start..end))
            .ok_or(WcStatus::LocQpOpErr)?;
        let from = self
            .scratch
            .get(uabi::SEND_WQE_DATA_OFFSET..)
            .unwrap_or_default();
        to.iter_mut().zip(from).for_each(|(d, s)| *d = *s);
        *self.wqes.get_mut(i).ok_or(WcStatus::LocQpOpErr)? = Some(checked);
        self.wqe(id).ok_or(WcStatus::LocQpOpErr)
    }

    /// Returns the SGEs kept for slot `id` (none for a user QP's).
    pub(super) fn posted(&self, id: u32) -> &[Option<Sge>] {
        usize::try_from(id)
            .ok()
            .and_then(|i| i.checked_mul(self.per))
            .and_then(|start| self.posted.get(start..start.checked_add(self.per)?))
            .unwrap_or_default()
    }

    /// Puts a kernel consumer's checked WQE in slot `id`, with its local data where
    /// [`CheckedSendWqe::attach_area`] finds it and its SGEs as posted; `None` if they do
    /// not fit.
    pub(super) fn install(
        &mut self,
        id: u32,
        wqe: CheckedSendWqe,
        data: &[u8],
        posted: &[Option<Sge>],
    ) -> Option<()> {
        *self.wqes.get_mut(usize::try_from(id).ok()?)? = None;
        self.area_mut(id)?
            .get_mut(..data.len())?
            .copy_from_slice(data);
        let start = usize::try_from(id).ok()?.checked_mul(self.per)?;
        let kept = self.posted.get_mut(start..start.checked_add(self.per)?)?;
        // Element by element: `copy_from_slice`'s length panic is not a path to keep.
        kept.get_mut(..posted.len())?
            .iter_mut()
            .zip(posted)
            .for_each(|(k, p)| *k = *p);
        *self.wqes.get_mut(usize::try_from(id).ok()?)? = Some(wqe);
        Some(())
    }

    /// Returns the validated WQE in slot `id`, if it was validated since it was copied.
    pub(super) fn wqe(&self, id: u32) -> Option<SendWqe<'_>> {
        let checked = (*self.wqes.get(usize::try_from(id).ok()?)?)?;
        checked.attach_area(self.area(id)?)
    }

    /// Returns the local scatter list of the validated WQE in slot `id` (with its SGEs as
    /// posted), if it has one.
    pub(super) fn local(&self, id: u32) -> Option<Local<'_>> {
        match self.wqe(id)?.data() {
            SendData::Sges(sges) => Some(Local::new(sges, self.posted(id))),
            _ => None,
        }
    }

    /// Starts over from slot 0 (the QP went back to RESET).
    pub(super) fn reset(&mut self) {
        self.next = 0;
        self.wqes.iter_mut().for_each(|w| *w = None);
    }
}
