// SPDX-License-Identifier: GPL-2.0

//! Validation of send and receive WQEs copied out of user-owned slots ([`validate_send_wqe`],
//! [`validate_recv_wqe`]) into typed descriptions ([`SendWqe`], [`SendOp`], [`SendData`],
//! [`RecvWqe`]), the queue parameters they are checked against, and why a WQE is rejected
//! ([`WqeError`]).
//!
//! This file holds what both validations share: the length rule ([`LengthCheck`]) and the
//! errors ([`WqeError`]) with the completion status each one gets; `send/` validates send
//! WQEs (opcodes, inline data, the `wr` union, UD destinations, and the detached copy a
//! driver keeps: [`CheckedSendWqe`]), `recv.rs` receive WQEs.

use super::av::AvError;
use super::wc::WcStatus;
use super::wr::WrOpcode;

mod recv;
mod send;

pub use recv::*;
pub use send::*;

/// Returns the work request id of a send or receive WQE slot without validating the rest:
/// a WQE that does not validate still completes (with an error or flush status) under its
/// `wr_id`. `struct rxe_send_wqe` and `struct rxe_recv_wqe` both start with it (checked at
/// compile time in `layout/wqe.rs`); 0 for a slot too short to hold one.
pub fn slot_wr_id(slot: &[u8]) -> u64 {
    slot.first_chunk::<8>()
        .map_or(0, |b| u64::from_le_bytes(*b))
}

/// How `dma.length` must relate to the SGE list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LengthCheck {
    /// `dma.length` must equal the sum of the SGE lengths (else [`WqeError::LengthMismatch`]).
    Strict,
    /// Ignore `dma.length` and use the sum of the SGE lengths. This accepts multi-SGE
    /// `ibv_wr_set_sge_list()` WQEs of rdma-core 44.0/56.0, which sum `sg_list[0].length`
    /// `num_sge` times; upstream trusts `dma.length` for those.
    SgeSum,
}

/// Why a user WQE was rejected.
///
/// For a send WQE the driver completes it with [`WqeError::send_status`] and moves the QP
/// to the error state, like upstream; for a receive WQE with [`WqeError::recv_status`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqeError {
    /// The slot is shorter than the fixed WQE header (a driver bug).
    SlotTooShort,
    /// Not an opcode a user WQE may carry (including the kernel-only `IB_WR_REG_MR`).
    BadOpcode(u32),
    /// The opcode is not allowed on this QP type.
    OpcodeNotAllowed(WrOpcode),
    /// `num_sge` exceeds the queue's `max_sge`.
    TooManySge {
        /// `dma.num_sge`.
        num_sge: u32,
        /// The queue's limit.
        max_sge: u32,
    },
    /// The SGE list does not fit in the slot.
    SgeOutsideSlot,
    /// The sum of the SGE lengths overflows 32 bits.
    LengthOverflow,
    /// `dma.length` differs from the sum of the SGE lengths.
    LengthMismatch {
        /// `dma.length`.
        claimed: u32,
        /// Sum of the SGE lengths.
        sum: u32,
    },
    /// The message is longer than the device's maximum message size.
    MessageTooLong(u32),
    /// `IB_SEND_INLINE` on an opcode without local send data.
    InlineNotAllowed,
    /// Inline data longer than `max_inline_data`.
    InlineTooLong(u32),
    /// Inline data does not fit in the slot.
    InlineOutsideSlot,
    /// An atomic WQE whose local buffer is shorter than 8 bytes.
    AtomicLength(u32),
    /// An atomic or ATOMIC WRITE remote address that is not 8-byte aligned.
    AtomicMisaligned(u64),
    /// An ATOMIC WRITE whose length is not 8.
    AtomicWriteLength(u32),
    /// A FLUSH with an unknown placement type or selectivity level.
    BadFlush {
        /// `wr.flush.type`.
        placement_type: u8,
        /// `wr.flush.level`.
        level: u8,
    },
    /// A UD destination QPN wider than 24 bits.
    BadRemoteQpn(u32),
    /// A UD WQE with `ah_num == 0` where the embedded AV is not accepted.
    MissingAh,
    /// The embedded UD address vector is invalid.
    BadAv(AvError),
}

impl WqeError {
    /// Returns the completion status for a rejected send WQE: `IB_WC_LOC_LEN_ERR` for length
    /// errors, `IB_WC_LOC_QP_OP_ERR` for every malformed WQE (as upstream's requester).
    pub const fn send_status(self) -> WcStatus {
        match self {
            Self::LengthOverflow
            | Self::LengthMismatch { .. }
            | Self::MessageTooLong(_)
            | Self::InlineTooLong(_)
            | Self::AtomicLength(_)
            | Self::AtomicWriteLength(_) => WcStatus::LocLenErr,
            _ => WcStatus::LocQpOpErr,
        }
    }

    /// Returns the completion status for a rejected receive WQE: `IB_WC_LOC_QP_OP_ERR`, as
    /// upstream's `RESPST_ERR_MALFORMED_WQE` (which also NAKs an RC request with REM_OP_ERR).
    #[cfg(rrxe_host)]
    pub const fn recv_status(self) -> WcStatus {
        WcStatus::LocQpOpErr
    }
}
