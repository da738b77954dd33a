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
