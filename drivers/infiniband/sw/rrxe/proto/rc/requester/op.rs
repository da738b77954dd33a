// SPDX-License-Identifier: GPL-2.0

//! The operations a [`Sender`] carries out ([`WrOp`]) and its transport services
//! ([`Transport`]): how many PSNs each operation takes and which opcode each of its request
//! packets has, on RC and on UC.
//!
//! [`Sender`]: super::Sender

use super::super::super::opcode::{Opcode, QpType};
use super::super::super::uabi::WrOpcode;
use super::super::{PathMtu, WcStatus};

/// The operation of a send work request (`enum ib_wr_opcode`, RC subset; UC takes SEND and
/// RDMA WRITE, with or without immediate, only).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WrOp {
    /// `IB_WR_SEND`.
    #[default]
    Send,
    /// `IB_WR_SEND_WITH_IMM`.
    SendWithImm,
    /// `IB_WR_SEND_WITH_INV`.
    SendWithInv,
    /// `IB_WR_RDMA_WRITE`.
    Write,
    /// `IB_WR_RDMA_WRITE_WITH_IMM`.
    WriteWithImm,
    /// `IB_WR_RDMA_READ`.
    Read,
    /// `IB_WR_ATOMIC_CMP_AND_SWP`.
    CompareSwap,
    /// `IB_WR_ATOMIC_FETCH_AND_ADD`.
    FetchAdd,
    /// `IB_WR_ATOMIC_WRITE` (IBA 1.5 annex A19): 8 bytes written at the target as one store,
    /// RC only. Carried like an RDMA WRITE (its payload is the operand), counted against the
    /// initiator depth like a READ (rdma_rxe, whose responder answers it from a responder
    /// resource with an empty READ response ONLY, which acknowledges it like an ACK).
    AtomicWrite,
    /// `IB_WR_FLUSH` (IBA 1.5 annex A19): makes earlier writes to a remote range (or
    /// region) globally visible or persistent, RC only; carried and acknowledged like
    /// ATOMIC WRITE, without payload.
    Flush,
    /// `IB_WR_LOCAL_INV`: a local operation (no packet, no PSN), carried out when the
    /// sender reaches it in send queue order.
    LocalInv,
    /// `IB_WR_REG_MR` (kernel consumers' fast registration): a local operation.
    RegMr,
    /// `IB_WR_BIND_MW` (a memory window bind, type 1 through `ibv_bind_mw` or type 2B): a
    /// local operation.
    BindMw,
}

impl WrOp {
    /// Returns the operation a send WQE's opcode asks for (every opcode of the user ABI is
    /// one the sender carries out).
    pub const fn from_wr_opcode(op: WrOpcode) -> Option<Self> {
        Some(match op {
            WrOpcode::Send => Self::Send,
            WrOpcode::SendWithImm => Self::SendWithImm,
            WrOpcode::SendWithInv => Self::SendWithInv,
            WrOpcode::RdmaWrite => Self::Write,
            WrOpcode::RdmaWriteWithImm => Self::WriteWithImm,
            WrOpcode::RdmaRead => Self::Read,
            WrOpcode::AtomicCmpAndSwp => Self::CompareSwap,
            WrOpcode::AtomicFetchAndAdd => Self::FetchAdd,
            WrOpcode::AtomicWrite => Self::AtomicWrite,
            WrOpcode::Flush => Self::Flush,
            WrOpcode::LocalInv => Self::LocalInv,
            WrOpcode::RegMr => Self::RegMr,
            WrOpcode::BindMw => Self::BindMw,
        })
    }

    /// Returns `true` for RDMA READ and the atomics, which are completed by a response
    /// carrying data rather than by a plain ACK.
    pub const fn is_read_or_atomic(self) -> bool {
        matches!(self, Self::Read | Self::CompareSwap | Self::FetchAdd)
    }

    /// Returns `true` for the operations that take a responder resource at the peer, and
    /// so count against the initiator depth (`max_rd_atomic`): READ, the atomics, ATOMIC
    /// WRITE and FLUSH.
    pub const fn uses_responder_resource(self) -> bool {
        self.is_read_or_atomic() || self.acked_by_empty_read_response()
    }

    /// Returns `true` for ATOMIC WRITE and FLUSH, which the responder answers with an empty
    /// RDMA READ response ONLY carrying their PSN (as rdma_rxe), an acknowledgment.
    pub const fn acked_by_empty_read_response(self) -> bool {
        matches!(self, Self::AtomicWrite | Self::Flush)
    }

    /// Returns `true` for the local operations, which send no packet and take no PSN: the
    /// sender hands them to its caller to carry out ([`Sender::next_local`]) when it
    /// reaches them in send queue order.
    ///
    /// [`Sender::next_local`]: super::Sender::next_local
    pub const fn is_local(self) -> bool {
        matches!(self, Self::LocalInv | Self::RegMr | Self::BindMw)
    }

    /// Returns the status a local operation that failed completes with: a bind that the
    /// rules refuse is `IB_WC_MW_BIND_ERR`, anything else `IB_WC_LOC_QP_OP_ERR`.
    pub const fn local_error(self) -> WcStatus {
        match self {
            Self::BindMw => WcStatus::MwBindErr,
            _ => WcStatus::LocQpOpErr,
        }
    }

    /// Returns `true` if the request packets carry the WQE's data as payload.
    pub const fn has_payload(self) -> bool {
        !self.is_read_or_atomic() && !self.is_local() && !matches!(self, Self::Flush)
    }

    /// Returns how many PSNs a WQE of `len` bytes uses at path MTU `mtu`.
    pub fn psn_count(self, len: u32, mtu: PathMtu) -> u32 {
        match self {
            Self::LocalInv | Self::RegMr | Self::BindMw => 0,
            Self::CompareSwap | Self::FetchAdd | Self::AtomicWrite | Self::Flush => 1,
            _ => mtu.packets(len),
        }
    }

    /// Returns the RC opcode of a request packet of this operation at the given position
    /// (rxe `next_opcode_rc()`); READ, the atomics, ATOMIC WRITE and FLUSH are always
    /// single-packet; `None` for the
    /// local operations, which have no packets.
    pub const fn opcode(self, first: bool, last: bool) -> Option<Opcode> {
        use Opcode as O;
        Some(match (self, first, last) {
            (Self::LocalInv | Self::RegMr | Self::BindMw, _, _) => return None,
            (Self::Read, _, _) => O::RC_RDMA_READ_REQUEST,
            (Self::CompareSwap, _, _) => O::RC_COMPARE_SWAP,
            (Self::FetchAdd, _, _) => O::RC_FETCH_ADD,
            (Self::AtomicWrite, _, _) => O::RC_ATOMIC_WRITE,
            (Self::Flush, _, _) => O::RC_FLUSH,
            (Self::Send | Self::SendWithImm | Self::SendWithInv, true, false) => O::RC_SEND_FIRST,
            (Self::Send | Self::SendWithImm | Self::SendWithInv, false, false) => O::RC_SEND_MIDDLE,
            (Self::Send, true, true) => O::RC_SEND_ONLY,
            (Self::Send, false, true) => O::RC_SEND_LAST,
            (Self::SendWithImm, true, true) => O::RC_SEND_ONLY_WITH_IMMEDIATE,
            (Self::SendWithImm, false, true) => O::RC_SEND_LAST_WITH_IMMEDIATE,
            (Self::SendWithInv, true, true) => O::RC_SEND_ONLY_WITH_INVALIDATE,
            (Self::SendWithInv, false, true) => O::RC_SEND_LAST_WITH_INVALIDATE,
            (Self::Write | Self::WriteWithImm, true, false) => O::RC_RDMA_WRITE_FIRST,
            (Self::Write | Self::WriteWithImm, false, false) => O::RC_RDMA_WRITE_MIDDLE,
            (Self::Write, true, true) => O::RC_RDMA_WRITE_ONLY,
            (Self::Write, false, true) => O::RC_RDMA_WRITE_LAST,
            (Self::WriteWithImm, true, true) => O::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
            (Self::WriteWithImm, false, true) => O::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
        })
    }

    /// Returns the UC opcode of a request packet of this operation at the given position
    /// (rxe `next_opcode_uc()`), from the opcode table: the UC counterpart of the RC packet
    /// ([`OpInfo::counterpart`]). `None` for the operations UC does not carry, those whose
    /// single-packet message has no UC opcode: RDMA READ, the atomics and SEND with
    /// invalidate (IBA Table 38; a SEND with invalidate would start like a SEND).
    ///
    /// [`OpInfo::counterpart`]: super::super::super::opcode::OpInfo::counterpart
    pub fn uc_opcode(self, first: bool, last: bool) -> Option<Opcode> {
        let uc = |opcode: Opcode| opcode.info()?.counterpart(QpType::Uc);
        uc(self.opcode(true, true)?)?;
        uc(self.opcode(first, last)?).map(|i| i.opcode)
    }

    /// Returns the opcode of a request packet of this operation at the given position on
    /// `transport`, or `None` if the transport does not carry the operation.
    pub fn opcode_on(self, transport: Transport, first: bool, last: bool) -> Option<Opcode> {
        match transport {
            Transport::Rc => self.opcode(first, last),
            Transport::Uc => self.uc_opcode(first, last),
        }
    }

    /// Returns `true` if `transport` carries this operation (the local operations are
    /// carried on both).
    pub fn allowed_on(self, transport: Transport) -> bool {
        self.is_local() || self.opcode_on(transport, true, true).is_some()
    }
}

/// The transport service of a [`Sender`](super::Sender).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// Reliable Connected (IBA 9.7): ACKs, NAKs, retransmission, READ and atomics.
    #[default]
    Rc,
    /// Unreliable Connected (IBA 9.8): no acknowledgments and no retransmission; a WQE
    /// completes once its last packet is handed out. SEND and RDMA WRITE only.
    Uc,
}
