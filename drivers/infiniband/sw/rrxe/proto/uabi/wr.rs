// SPDX-License-Identifier: GPL-2.0

//! Work-request opcodes and flags of user send WQEs ([`WrOpcode`], [`SendFlags`], the FLUSH
//! placement types and levels) and the largest message size rxe reports ([`MAX_MSG_SIZE`]).

use super::super::opcode::{lookup, Op, Opcode, Position, QpType};
use super::wc::{WcOpcode, WcStatus};

/// A work-request opcode of a send WQE (`IB_UVERBS_WR_*` = `IBV_WR_*` = `IB_WR_*`).
///
/// Not representable, hence always rejected: `IB_WR_LSO`/TSO (10), `RDMA_READ_WITH_INV` (11,
/// which upstream lists for RC but cannot turn into a packet), the masked atomics (12, 13),
/// and the `IB_WR_RESERVED*` values. [`Self::RegMr`] is kernel-only: [`Self::from_raw`]
/// (user WQEs) refuses it, [`Self::from_raw_kernel`] accepts it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum WrOpcode {
    /// RDMA WRITE.
    RdmaWrite = 0,
    /// RDMA WRITE with immediate.
    RdmaWriteWithImm = 1,
    /// SEND.
    #[default]
    Send = 2,
    /// SEND with immediate.
    SendWithImm = 3,
    /// RDMA READ.
    RdmaRead = 4,
    /// Atomic compare & swap.
    AtomicCmpAndSwp = 5,
    /// Atomic fetch & add.
    AtomicFetchAndAdd = 6,
    /// Local invalidate (local operation).
    LocalInv = 7,
    /// Memory window bind (local operation).
    BindMw = 8,
    /// SEND with invalidate.
    SendWithInv = 9,
    /// FLUSH (rdma-core 45 and later).
    Flush = 14,
    /// ATOMIC WRITE.
    AtomicWrite = 15,
    /// Fast registration of a memory region (`IB_WR_REG_MR`, local operation; kernel
    /// consumers only).
    RegMr = 0x20,
}

impl WrOpcode {
    /// `IB_WR_REG_MR`: kernel-only ([`Self::RegMr`]). Upstream accepts it from user WQEs and
    /// then dereferences a `struct ib_mr *` read from the user-writable slot
    /// (`rxe_reg_fast_mr()`); [`Self::from_raw`] refuses it.
    #[cfg(rrxe_host)]
    pub const KERNEL_REG_MR: u32 = 0x20;

    /// Every accepted opcode.
    #[cfg(rrxe_host)]
    pub const ALL: [Self; 12] = [
        Self::RdmaWrite,
        Self::RdmaWriteWithImm,
        Self::Send,
        Self::SendWithImm,
        Self::RdmaRead,
        Self::AtomicCmpAndSwp,
        Self::AtomicFetchAndAdd,
        Self::LocalInv,
        Self::BindMw,
        Self::SendWithInv,
        Self::Flush,
        Self::AtomicWrite,
    ];

    /// Decodes a raw opcode, or `None` for anything a user WQE may not carry.
    pub const fn from_raw(raw: u32) -> Option<Self> {
        Some(match raw {
            0 => Self::RdmaWrite,
            1 => Self::RdmaWriteWithImm,
            2 => Self::Send,
            3 => Self::SendWithImm,
            4 => Self::RdmaRead,
            5 => Self::AtomicCmpAndSwp,
            6 => Self::AtomicFetchAndAdd,
            7 => Self::LocalInv,
            8 => Self::BindMw,
            9 => Self::SendWithInv,
            14 => Self::Flush,
            15 => Self::AtomicWrite,
            _ => return None,
        })
    }

    /// Decodes a raw opcode of a kernel consumer's WQE: [`Self::from_raw`]'s, plus
    /// [`Self::RegMr`].
    pub const fn from_raw_kernel(raw: u32) -> Option<Self> {
        match raw {
            0x20 => Some(Self::RegMr),
            _ => Self::from_raw(raw),
        }
    }

    /// Returns the raw value.
    #[cfg(rrxe_host)]
    pub const fn raw(self) -> u32 {
        self as u32
    }

    /// Returns the packet operation, or `None` for the local operations.
    pub const fn packet_op(self) -> Option<Op> {
        Some(match self {
            Self::RdmaWrite | Self::RdmaWriteWithImm => Op::Write,
            Self::Send | Self::SendWithImm | Self::SendWithInv => Op::Send,
            Self::RdmaRead => Op::ReadRequest,
            Self::AtomicCmpAndSwp => Op::CompareSwap,
            Self::AtomicFetchAndAdd => Op::FetchAdd,
            Self::Flush => Op::Flush,
            Self::AtomicWrite => Op::AtomicWrite,
            Self::LocalInv | Self::BindMw | Self::RegMr => return None,
        })
    }

    /// Returns `true` if the last packet carries immediate data.
    pub const fn has_imm(self) -> bool {
        matches!(self, Self::RdmaWriteWithImm | Self::SendWithImm)
    }

    /// Returns `true` if the last packet carries an rkey to invalidate.
    pub const fn has_invalidate(self) -> bool {
        matches!(self, Self::SendWithInv)
    }

    /// Returns `true` if `IB_SEND_INLINE` is meaningful (upstream `WR_INLINE_MASK`).
    pub const fn inline_allowed(self) -> bool {
        matches!(
            self,
            Self::RdmaWrite
                | Self::RdmaWriteWithImm
                | Self::Send
                | Self::SendWithImm
                | Self::SendWithInv
        )
    }

    /// Returns `true` if the local payload is described by SGEs (or inline data).
    pub const fn has_local_data(self) -> bool {
        // What may be inline, plus the operations whose results land in local buffers.
        self.inline_allowed()
            || matches!(
                self,
                Self::RdmaRead | Self::AtomicCmpAndSwp | Self::AtomicFetchAndAdd
            )
    }

    /// Returns the packet opcode for a packet at `position` of this work request on a `qp`
    /// QP, looked up in the opcode table, or `None` if there is no such packet.
    ///
    /// Immediate data and IETH travel on the last (or only) packet only, as in
    /// `next_opcode_rc()`/`next_opcode_uc()`.
    pub fn packet_opcode(self, qp: QpType, position: Position) -> Option<Opcode> {
        let op = self.packet_op()?;
        let last = matches!(position, Position::Last | Position::Only);
        let imm = last && self.has_imm();
        let inv = last && self.has_invalidate();
        lookup(qp, op, position, imm, inv).map(|r| r.opcode)
    }

    /// Returns the opcode of the first packet: `Only` if the message fits in one packet,
    /// `First` otherwise (UD messages are always `Only`).
    #[cfg(rrxe_host)]
    pub fn first_packet_opcode(self, qp: QpType, fits: bool) -> Option<Opcode> {
        let position = if fits || qp == QpType::Ud {
            Position::Only
        } else {
            Position::First
        };
        self.packet_opcode(qp, position)
    }

    /// Returns `true` if a `qp` QP may post this opcode.
    ///
    /// This is the effective matrix of upstream rxe (`rxe_wr_opcode_info[]` combined with
    /// `next_opcode()`): RC all opcodes; UC WRITE, WRITE_IMM, SEND, SEND_IMM, BIND_MW; UD SEND,
    /// SEND_IMM; RD nothing. (Upstream's table lists SEND_WITH_INV for UC and UD, but no such
    /// packet exists, so it fails in the requester with `IB_WC_LOC_QP_OP_ERR`.)
    pub fn allowed_on(self, qp: QpType) -> bool {
        match self {
            Self::LocalInv => qp == QpType::Rc,
            Self::BindMw | Self::RegMr => matches!(qp, QpType::Rc | QpType::Uc),
            // Every other opcode has its RC packets ([`Self::opcode`], no table lookup).
            _ if qp == QpType::Rc => true,
            _ => self.packet_opcode(qp, Position::Only).is_some(),
        }
    }

    /// Returns the completion opcode of a successful send completion (`wr_to_wc_opcode()`).
    pub const fn wc_opcode(self) -> WcOpcode {
        match self {
            Self::RdmaWrite | Self::RdmaWriteWithImm => WcOpcode::RdmaWrite,
            Self::Send | Self::SendWithImm | Self::SendWithInv => WcOpcode::Send,
            Self::RdmaRead => WcOpcode::RdmaRead,
            Self::AtomicCmpAndSwp => WcOpcode::CompSwap,
            Self::AtomicFetchAndAdd => WcOpcode::FetchAdd,
            Self::LocalInv => WcOpcode::LocalInv,
            Self::BindMw => WcOpcode::BindMw,
            Self::Flush => WcOpcode::Flush,
            Self::AtomicWrite => WcOpcode::AtomicWrite,
            Self::RegMr => WcOpcode::RegMr,
        }
    }
}

/// What each work-request opcode is to the requester: how many PSNs it takes, which opcode
/// each of its request packets has on RC and on UC, whether it takes a responder resource
/// at the peer, whether it is a local operation. With [`WrOpcode::allowed_on`] (which QP
/// types may post it) and [`WrOpcode::wc_opcode`] (the completion it produces), the one
/// vocabulary of work-request opcodes: the sender, the WQE validation and the completions
/// all use these (Documentation/rrxe.rst, "Adding a work-request opcode").
impl WrOpcode {
    /// Returns `true` for RDMA READ and the atomics, which are completed by a response
    /// carrying data rather than by a plain ACK.
    pub const fn is_read_or_atomic(self) -> bool {
        matches!(
            self,
            Self::RdmaRead | Self::AtomicCmpAndSwp | Self::AtomicFetchAndAdd
        )
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

    /// Returns how many PSNs a WQE uses whose data takes `packets` packets at the path MTU
    /// (`PathMtu::packets`).
    pub const fn psn_count(self, packets: u32) -> u32 {
        match self {
            Self::LocalInv | Self::RegMr | Self::BindMw => 0,
            Self::AtomicCmpAndSwp | Self::AtomicFetchAndAdd | Self::AtomicWrite | Self::Flush => 1,
            _ => packets,
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
            (Self::RdmaRead, _, _) => O::RC_RDMA_READ_REQUEST,
            (Self::AtomicCmpAndSwp, _, _) => O::RC_COMPARE_SWAP,
            (Self::AtomicFetchAndAdd, _, _) => O::RC_FETCH_ADD,
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
            (Self::RdmaWrite | Self::RdmaWriteWithImm, true, false) => O::RC_RDMA_WRITE_FIRST,
            (Self::RdmaWrite | Self::RdmaWriteWithImm, false, false) => O::RC_RDMA_WRITE_MIDDLE,
            (Self::RdmaWrite, true, true) => O::RC_RDMA_WRITE_ONLY,
            (Self::RdmaWrite, false, true) => O::RC_RDMA_WRITE_LAST,
            (Self::RdmaWriteWithImm, true, true) => O::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
            (Self::RdmaWriteWithImm, false, true) => O::RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
        })
    }

    /// Returns the UC opcode of a request packet of this operation at the given position
    /// (rxe `next_opcode_uc()`), from the opcode table: the UC counterpart of the RC packet
    /// ([`OpInfo::counterpart`]). `None` for the operations UC does not carry, those whose
    /// single-packet message has no UC opcode: RDMA READ, the atomics and SEND with
    /// invalidate (IBA Table 38; a SEND with invalidate would start like a SEND).
    ///
    /// [`OpInfo::counterpart`]: super::super::opcode::OpInfo::counterpart
    pub fn uc_opcode(self, first: bool, last: bool) -> Option<Opcode> {
        let uc = |opcode: Opcode| opcode.info()?.counterpart(QpType::Uc);
        uc(self.opcode(true, true)?)?;
        uc(self.opcode(first, last)?).map(|i| i.opcode)
    }

    /// Returns the opcode of a request packet of this operation at the given position on a
    /// connected `qp` QP (RC or UC), or `None` if that transport does not carry the operation.
    pub fn opcode_on(self, qp: QpType, first: bool, last: bool) -> Option<Opcode> {
        match qp {
            QpType::Rc => self.opcode(first, last),
            QpType::Uc => self.uc_opcode(first, last),
            _ => None,
        }
    }
}

/// `IB_SEND_*` flags of a send WQE (unknown bits are kept and ignored, as upstream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SendFlags(pub u32);

impl SendFlags {
    /// `IB_SEND_FENCE`.
    pub const FENCE: u32 = 1;
    /// `IB_SEND_SIGNALED`.
    pub const SIGNALED: u32 = 1 << 1;
    /// `IB_SEND_SOLICITED`.
    pub const SOLICITED: u32 = 1 << 2;
    /// `IB_SEND_INLINE`.
    pub const INLINE: u32 = 1 << 3;

    /// Returns `true` if every bit of `bits` is set.
    pub const fn contains(self, bits: u32) -> bool {
        self.0 & bits == bits
    }
}

/// `IB_FLUSH_GLOBAL`.
pub const FLUSH_GLOBAL: u8 = 1;
/// `IB_FLUSH_PERSISTENT`.
pub const FLUSH_PERSISTENT: u8 = 2;
/// `IB_FLUSH_RANGE`.
pub const FLUSH_RANGE: u8 = 0;
/// `IB_FLUSH_MR`.
pub const FLUSH_MR: u8 = 1;

/// `RXE_PORT_MAX_MSG_SZ`: the largest message rxe reports (`max_msg_sz`).
pub const MAX_MSG_SIZE: u32 = 1 << 31;
