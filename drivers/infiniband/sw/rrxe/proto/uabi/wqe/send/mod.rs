// SPDX-License-Identifier: GPL-2.0

//! Send WQE validation: a send WQE copied out of a user-owned SQ slot, checked against the
//! QP's [`SendQueueParams`] by [`validate_send_wqe`] into a [`SendWqe`] (its operation,
//! [`SendOp`], and local data, [`SendData`]), and the copy of it a driver keeps beside the
//! slot's bytes ([`CheckedSendWqe`]).
//!
//! This file holds the validated WQE and what it is made of: the queue parameters it is
//! checked against, the operation with its remote address or UD destination, and the local
//! data. `validate.rs` checks a user WQE into one ([`validate_send_wqe`]); `checked.rs` holds
//! the detached copy ([`CheckedSendWqe`]) and checks a kernel consumer's work request
//! ([`KernelSendWr`]) into one.

use super::super::super::bth::Qpn;
use super::super::super::opcode::QpType;
use super::super::av::ValidAv;
use super::super::layout::MwWrFields;
use super::super::sge::SgeList;
use super::super::wr::{SendFlags, WrOpcode};
use super::LengthCheck;

mod checked;
mod validate;

pub use checked::*;
pub use validate::*;

/// Send queue parameters for [`validate_send_wqe`], from the QP's private state (never from
/// the shared page).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendQueueParams {
    /// QP type.
    pub qp_type: QpType,
    /// Reported `max_send_sge`.
    pub max_sge: u32,
    /// Reported `max_inline_data`.
    pub max_inline: u32,
    /// Largest message length (normally [`MAX_MSG_SIZE`](super::super::MAX_MSG_SIZE)).
    pub max_msg_size: u32,
    /// Relation of `dma.length` and the SGE list.
    pub length_check: LengthCheck,
    /// Accept the embedded [`RxeAv`](super::super::RxeAv) of UD WQEs with `ah_num == 0` (legacy
    /// providers).
    pub allow_embedded_av: bool,
    /// Size of the port's GID table, to bound `sgid_index` of an embedded AV.
    pub gid_table_len: u32,
    /// The ring is a kernel consumer's (never mapped to userspace): the kernel-only
    /// [`WrOpcode::RegMr`] is accepted.
    pub kernel: bool,
}

/// Remote address and key of an RDMA, atomic or FLUSH operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remote {
    /// Remote virtual address (from the `wr` union, not from `iova`).
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// Where a UD send goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdAddress {
    /// An address handle by number; the driver must look it up and check that it belongs to
    /// the QP's PD (and ideally the same ucontext).
    Ah(u32),
    /// An embedded, validated address vector (legacy providers).
    Av(ValidAv),
}

/// The UD part of a UD send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdDest {
    /// Destination QP.
    pub remote_qpn: Qpn,
    /// Destination Q_Key.
    pub remote_qkey: u32,
    /// P_Key index (ignored by rxe, which always sends the default P_Key).
    pub pkey_index: u16,
    /// Address.
    pub address: UdAddress,
}

/// Operation-specific contents of a validated send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// SEND, SEND with immediate, SEND with invalidate.
    Send {
        /// Immediate data (host value of the big-endian field), for SEND with immediate.
        imm: Option<u32>,
        /// Rkey to invalidate at the responder, for SEND with invalidate.
        invalidate_rkey: Option<u32>,
        /// Destination of a UD send; `None` on connected QPs.
        ud: Option<UdDest>,
    },
    /// RDMA WRITE (with immediate).
    Write {
        /// Target.
        remote: Remote,
        /// Immediate data, for WRITE with immediate.
        imm: Option<u32>,
    },
    /// RDMA READ into the SGE list.
    Read {
        /// Source.
        remote: Remote,
    },
    /// Compare & swap; the original value lands in the SGE list.
    CompareSwap {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Compare operand.
        compare: u64,
        /// Swap operand.
        swap: u64,
    },
    /// Fetch & add; the original value lands in the SGE list.
    FetchAdd {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Addend.
        add: u64,
    },
    /// ATOMIC WRITE of 8 bytes.
    AtomicWrite {
        /// Target (8-byte aligned).
        remote: Remote,
        /// The operand, as the bytes to place on the wire.
        value: [u8; 8],
    },
    /// FLUSH of `length` bytes.
    Flush {
        /// Target.
        remote: Remote,
        /// Placement type bits.
        placement_type: u8,
        /// Selectivity level.
        level: u8,
    },
    /// Local invalidate.
    LocalInv {
        /// Rkey (MR or MW) to invalidate.
        rkey: u32,
    },
    /// Memory window bind; the MW layer checks the keys, access and range.
    BindMw(MwWrFields),
    /// Fast registration (kernel consumers only): the region whose key has `key`'s index
    /// becomes valid under `key`, with `access`, over the pages its owner mapped last.
    RegMr {
        /// The new key (lkey and rkey); only its low byte may differ from the region's.
        key: u32,
        /// `IB_ACCESS_*` flags.
        access: u32,
    },
}

impl SendOp {
    /// Returns `true` if this is the operation of `opcode`: the variant, and immediate data
    /// or an rkey to invalidate exactly where the opcode carries one.
    pub fn fits(&self, opcode: WrOpcode) -> bool {
        match (self, opcode) {
            (
                Self::Send {
                    imm,
                    invalidate_rkey,
                    ..
                },
                WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv,
            ) => {
                imm.is_some() == opcode.has_imm()
                    && invalidate_rkey.is_some() == opcode.has_invalidate()
            }
            (Self::Write { imm, .. }, WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm) => {
                imm.is_some() == opcode.has_imm()
            }
            (Self::Read { .. }, WrOpcode::RdmaRead)
            | (Self::CompareSwap { .. }, WrOpcode::AtomicCmpAndSwp)
            | (Self::FetchAdd { .. }, WrOpcode::AtomicFetchAndAdd)
            | (Self::AtomicWrite { .. }, WrOpcode::AtomicWrite)
            | (Self::Flush { .. }, WrOpcode::Flush)
            | (Self::LocalInv { .. }, WrOpcode::LocalInv)
            | (Self::BindMw(_), WrOpcode::BindMw)
            | (Self::RegMr { .. }, WrOpcode::RegMr) => true,
            _ => false,
        }
    }
}

/// Local data of a validated send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendData<'a> {
    /// No local data (local operations, FLUSH, ATOMIC WRITE).
    None,
    /// Gather (SEND, WRITE) or scatter (READ, atomics) list.
    Sges(SgeList<'a>),
    /// Inline payload.
    Inline(&'a [u8]),
}

/// A send WQE that passed [`validate_send_wqe`].
///
/// # Invariants
///
/// - the opcode is allowed on the QP type it was validated for;
/// - `Sges(l)`: `l.len() <= max_sge`, `l` lies inside the slot's payload area, the sum of the
///   SGE lengths does not overflow and equals [`Self::length`] (which is at most the maximum
///   message size);
/// - `Inline(d)`: `d.len() == length <= max_inline` and `d` lies inside the slot;
/// - atomics have `length >= 8` and an 8-byte aligned remote address; ATOMIC WRITE has
///   `length == 8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWqe<'a> {
    wr_id: u64,
    opcode: WrOpcode,
    flags: SendFlags,
    length: u32,
    op: SendOp,
    data: SendData<'a>,
}

impl<'a> SendWqe<'a> {
    /// Returns the work request id.
    pub fn wr_id(&self) -> u64 {
        self.wr_id
    }

    /// Returns the opcode.
    pub fn opcode(&self) -> WrOpcode {
        self.opcode
    }

    /// Returns the send flags.
    pub fn flags(&self) -> SendFlags {
        self.flags
    }

    /// Returns the message length: local data, or the FLUSH length, 0 for local operations.
    pub fn length(&self) -> u32 {
        self.length
    }

    /// Returns the operation-specific contents.
    pub fn op(&self) -> &SendOp {
        &self.op
    }

    /// Returns the local data.
    pub fn data(&self) -> SendData<'a> {
        self.data
    }

    /// Returns `true` if a completion must be generated on success.
    pub fn signaled(&self, sq_sig_all: bool) -> bool {
        sq_sig_all || self.flags.contains(SendFlags::SIGNALED)
    }
}
