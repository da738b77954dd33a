// SPDX-License-Identifier: GPL-2.0

//! Receive WQE validation: a receive WQE copied out of a user-owned RQ or SRQ slot, checked
//! against the queue's [`RecvQueueParams`] by [`validate_recv_wqe`] into a [`RecvWqe`].

use super::super::layout::{RxeRecvWqe, RECV_WQE_DATA_OFFSET};
use super::super::sge::{sge_length, sge_list, SgeList};
use super::{LengthCheck, WqeError};

/// Receive queue or SRQ parameters for [`validate_recv_wqe`], from private state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvQueueParams {
    /// The queue's `max_sge` (RQ: reported `max_recv_sge`; SRQ: its `max_sge`).
    pub max_sge: u32,
    /// Largest message length (normally [`MAX_MSG_SIZE`](super::super::MAX_MSG_SIZE)).
    pub max_msg_size: u32,
    /// Relation of `dma.length` and the SGE list.
    pub length_check: LengthCheck,
}

/// A receive WQE that passed [`validate_recv_wqe`].
///
/// # Invariants
///
/// `sges.len() <= max_sge`, the list lies inside the slot, and the sum of its lengths equals
/// `length` without overflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWqe<'a> {
    wr_id: u64,
    length: u32,
    sges: SgeList<'a>,
}

impl<'a> RecvWqe<'a> {
    /// Returns the work request id.
    #[cfg(rrxe_host)]
    pub fn wr_id(&self) -> u64 {
        self.wr_id
    }

    /// Returns the buffer length (sum of the SGE lengths).
    pub fn length(&self) -> u32 {
        self.length
    }

    /// Returns the scatter list.
    pub fn sges(&self) -> SgeList<'a> {
        self.sges
    }
}

impl RecvWqe<'_> {
    /// Returns the WQE detached from the bytes it was validated in, to be attached again
    /// for each packet it takes ([`CheckedRecvWqe::attach`]) instead of being validated again.
    pub fn detach(&self) -> CheckedRecvWqe {
        CheckedRecvWqe {
            wr_id: self.wr_id,
            length: self.length,
            sge_bytes: self.sges.byte_len(),
        }
    }
}

/// A [`RecvWqe`] detached from its slot ([`RecvWqe::detach`]), or a kernel consumer's
/// receive work request ([`Self::from_kernel`]).
///
/// # Invariants
///
/// The fields are those of a [`RecvWqe`] that passed [`validate_recv_wqe`] (or the same
/// checks, for a kernel work request); its SGE list is the first `sge_bytes` bytes of the
/// slot's payload area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckedRecvWqe {
    wr_id: u64,
    length: u32,
    sge_bytes: usize,
}

impl CheckedRecvWqe {
    /// Checks a kernel consumer's receive work request of `num_sge` SGEs, which the driver
    /// put at the start of `area` (the payload area of the slot it will be attached to), as
    /// [`validate_recv_wqe`] checks a user WQE.
    pub fn from_kernel(
        wr_id: u64,
        num_sge: u32,
        area: &[u8],
        p: &RecvQueueParams,
    ) -> Result<Self, WqeError> {
        let sges = sge_list(area, num_sge, p.max_sge)?;
        let length = sge_length(&sges, 0, LengthCheck::SgeSum, p.max_msg_size)?;
        Ok(Self {
            wr_id,
            length,
            sge_bytes: sges.byte_len(),
        })
    }

    /// Returns the WQE with its SGE list in `slot`, which must hold the bytes it was
    /// checked in, unchanged; `None` if `slot` is too short for them.
    pub fn attach<'a>(&self, slot: &'a [u8]) -> Option<RecvWqe<'a>> {
        let area = slot.get(RECV_WQE_DATA_OFFSET..)?;
        Some(RecvWqe {
            wr_id: self.wr_id,
            length: self.length,
            sges: SgeList::from_checked(area.get(..self.sge_bytes)?),
        })
    }

    /// Returns the work request id.
    pub fn wr_id(&self) -> u64 {
        self.wr_id
    }
}

/// Validates a receive WQE copied out of a user-owned RQ or SRQ slot.
///
/// Upstream checks `num_sge` only, copies `40 + 16 * num_sge` bytes and then trusts
/// `dma.length`/`dma.resid` (the responder's length check and `byte_len` use them). librxe
/// writes `dma.length = Σ sge.length` summed in a signed `int`.
pub fn validate_recv_wqe<'a>(slot: &'a [u8], p: &RecvQueueParams) -> Result<RecvWqe<'a>, WqeError> {
    let hdr = RxeRecvWqe::new(slot).ok_or(WqeError::SlotTooShort)?;
    let dma = hdr.dma();
    let data_area = slot.get(RECV_WQE_DATA_OFFSET..).unwrap_or(&[]);
    let sges = sge_list(data_area, dma.num_sge, p.max_sge)?;
    let length = sge_length(&sges, dma.length, p.length_check, p.max_msg_size)?;
    Ok(RecvWqe {
        wr_id: hdr.wr_id(),
        length,
        sges,
    })
}
