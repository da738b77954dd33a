// SPDX-License-Identifier: GPL-2.0

//! The opcode table: one row per IBA opcode, used to both build and parse packets.
//!
//! The top three opcode bits select the transport (RC `0x00`, UC `0x20`, RD `0x40`, UD `0x60`,
//! CNP `0x80`) and the low five bits the operation. Each row lists the extended headers in
//! wire order; everything else (payload, request/response, receive WQE use, AckReq rule) is
//! derived from the operation and position by the `const fn` methods of [`OpInfo`]. RD rows
//! are present so that they are recognised, but [`OpInfo::supported`] is `false`. A CNP
//! belongs to no transport ([`OpInfo::qp_type`] is `None`): it is the congestion
//! notification of RoCEv2 (Annex A17.9), which any connected QP may receive.

use super::bth::BTH_LEN;
use super::ext::ExtHdr::{self, *};

/// A raw BTH opcode; [`info`] gives its table row, if any.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Opcode(pub u8);

/// Queue pair type (transport service) that an opcode belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpType {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Reliable datagram (not supported).
    Rd,
    /// Unreliable datagram.
    Ud,
}

/// The operation an opcode performs, independent of transport and packet position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// SEND (with or without immediate or invalidate).
    Send,
    /// RDMA WRITE (with or without immediate).
    Write,
    /// RDMA READ request.
    ReadRequest,
    /// RDMA READ response.
    ReadResponse,
    /// Acknowledge.
    Ack,
    /// Atomic acknowledge.
    AtomicAck,
    /// Compare & swap.
    CompareSwap,
    /// Fetch & add.
    FetchAdd,
    /// FLUSH.
    Flush,
    /// ATOMIC WRITE (8-byte payload written atomically).
    AtomicWrite,
    /// Congestion notification packet.
    Cnp,
}

/// Position of a packet within its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// First packet of a multi-packet message.
    First,
    /// Neither first nor last packet.
    Middle,
    /// Last packet of a multi-packet message.
    Last,
    /// Single-packet message.
    Only,
}

/// What a packet may carry after its headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Payload {
    /// No payload at all (and no pad).
    None,
    /// Any length up to the path MTU (the MTU checks are the caller's).
    Any,
    /// Exactly this many bytes.
    Exactly(usize),
}

/// Rule for the BTH AckReq bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg(rrxe_host)]
pub enum AckReq {
    /// Not meaningful (UC, UD, RD here, responses): sent as zero, ignored on receipt.
    Never,
    /// RC request packet inside a message: may be set to solicit an early ACK.
    Optional,
    /// RC request packet that ends a message: set by the requester (as rxe does).
    Expected,
}

/// One row of the opcode table.
#[derive(Debug, PartialEq, Eq)]
pub struct OpInfo {
    /// The opcode.
    pub opcode: Opcode,
    /// IBA name without the `IB_OPCODE_` prefix, e.g. `RC_SEND_FIRST`.
    pub name: &'static str,
    /// Operation.
    pub op: Op,
    /// Position within the message.
    pub position: Position,
    /// Extended headers following the BTH, in wire order.
    pub headers: &'static [ExtHdr],
    /// Length of the BTH plus all extended headers.
    pub hdr_len: usize,
}

impl OpInfo {
    const fn row(
        opcode: u8,
        name: &'static str,
        op: Op,
        position: Position,
        headers: &'static [ExtHdr],
    ) -> Self {
        let mut hdr_len = BTH_LEN;
        let mut i = 0;
        while i < headers.len() {
            // Constant evaluation: an overflow or bad index is a compile error.
            #[allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
            {
                hdr_len += headers[i].size();
                i += 1;
            }
        }
        Self {
            opcode: Opcode(opcode),
            name,
            op,
            position,
            headers,
            hdr_len,
        }
    }

    /// Returns the QP type that may use this opcode, or `None` for CNP.
    pub const fn qp_type(&self) -> Option<QpType> {
        match self.opcode.0 >> 5 {
            0 => Some(QpType::Rc),
            1 => Some(QpType::Uc),
            2 => Some(QpType::Rd),
            3 => Some(QpType::Ud),
            _ => None,
        }
    }

    /// Returns `true` if `qp` may send and receive this opcode.
    pub const fn allowed_on(&self, qp: QpType) -> bool {
        matches!(self.qp_type(), Some(t) if t as u8 == qp as u8)
    }

    /// Returns `true` if this driver implements the opcode (RC, UC, UD and CNP; not RD).
    pub const fn supported(&self) -> bool {
        matches!(self.qp_type(), Some(QpType::Rc | QpType::Uc | QpType::Ud)) || self.is_cnp()
    }

    /// Returns `true` for a congestion notification packet.
    pub const fn is_cnp(&self) -> bool {
        matches!(self.op, Op::Cnp)
    }

    /// Returns `true` if the packet carries `hdr`.
    pub const fn has(&self, hdr: ExtHdr) -> bool {
        let mut i = 0;
        while i < self.headers.len() {
            // Constant-bounded loop: `i` stays below `headers.len()`.
            #[allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
            {
                if self.headers[i] as u8 == hdr as u8 {
                    return true;
                }
                i += 1;
            }
        }
        false
    }

    /// Returns `true` for packets sent by the requester, `false` for responses and CNPs.
    pub const fn is_request(&self) -> bool {
        matches!(
            self.op,
            Op::Send
                | Op::Write
                | Op::ReadRequest
                | Op::CompareSwap
                | Op::FetchAdd
                | Op::Flush
                | Op::AtomicWrite
        )
    }

    /// Returns `true` for packets sent by the responder (ACKs and READ responses).
    #[cfg(rrxe_host)]
    pub const fn is_response(&self) -> bool {
        matches!(self.op, Op::Ack | Op::AtomicAck | Op::ReadResponse)
    }

    /// Returns `true` for the first packet of a message (first or only).
    pub const fn is_first(&self) -> bool {
        matches!(self.position, Position::First | Position::Only)
    }

    /// Returns `true` for the last packet of a message (last or only).
    pub const fn is_last(&self) -> bool {
        matches!(self.position, Position::Last | Position::Only)
    }

    /// Returns what may follow the headers.
    pub const fn payload(&self) -> Payload {
        match self.op {
            Op::Send | Op::Write | Op::ReadResponse => Payload::Any,
            Op::AtomicWrite => Payload::Exactly(8),
            _ => Payload::None,
        }
    }

    /// Returns `true` if the packet carries immediate data.
    pub const fn immediate(&self) -> bool {
        self.has(ImmDt)
    }

    /// Returns `true` if the packet carries an rkey to invalidate.
    pub const fn invalidate(&self) -> bool {
        self.has(Ieth)
    }

    /// Returns `true` if the responder takes a new receive WQE for this packet: the first
    /// packet of a SEND, or an RDMA WRITE with immediate (whose payload goes to RETH memory).
    pub const fn consumes_rwqe(&self) -> bool {
        match self.op {
            Op::Send => self.is_first(),
            Op::Write => self.immediate(),
            _ => false,
        }
    }

    /// Returns `true` if the packet completes a receive WQE (last SEND packet, or WRITE with
    /// immediate).
    pub const fn completes_rwqe(&self) -> bool {
        match self.op {
            Op::Send => self.is_last(),
            Op::Write => self.immediate(),
            _ => false,
        }
    }

    /// Returns the AckReq rule for this opcode.
    #[cfg(rrxe_host)]
    pub const fn ack_req(&self) -> AckReq {
        match (self.qp_type(), self.is_request()) {
            (Some(QpType::Rc), true) if self.is_last() => AckReq::Expected,
            (Some(QpType::Rc), true) => AckReq::Optional,
            _ => AckReq::Never,
        }
    }
}

macro_rules! opcode_table {
    ($($name:ident = $val:literal, $op:ident, $pos:ident, [$($hdr:ident),*];)*) => {
        // One constant per row, for every opcode the IBA defines; the module names few.
        #[allow(dead_code)]
        impl Opcode {
            $(
                #[doc = concat!("`", stringify!($name), "` (", stringify!($val), ").")]
                pub const $name: Self = Self($val);
            )*
        }

        /// The opcode table, sorted by opcode value.
        pub const OPCODE_TABLE: &[OpInfo] = &[
            $(OpInfo::row($val, stringify!($name), Op::$op, Position::$pos, &[$($hdr),*]),)*
        ];
    };
}

opcode_table! {
    RC_SEND_FIRST = 0x00, Send, First, [];
    RC_SEND_MIDDLE = 0x01, Send, Middle, [];
    RC_SEND_LAST = 0x02, Send, Last, [];
    RC_SEND_LAST_WITH_IMMEDIATE = 0x03, Send, Last, [ImmDt];
    RC_SEND_ONLY = 0x04, Send, Only, [];
    RC_SEND_ONLY_WITH_IMMEDIATE = 0x05, Send, Only, [ImmDt];
    RC_RDMA_WRITE_FIRST = 0x06, Write, First, [Reth];
    RC_RDMA_WRITE_MIDDLE = 0x07, Write, Middle, [];
    RC_RDMA_WRITE_LAST = 0x08, Write, Last, [];
    RC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09, Write, Last, [ImmDt];
    RC_RDMA_WRITE_ONLY = 0x0a, Write, Only, [Reth];
    RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b, Write, Only, [Reth, ImmDt];
    RC_RDMA_READ_REQUEST = 0x0c, ReadRequest, Only, [Reth];
    RC_RDMA_READ_RESPONSE_FIRST = 0x0d, ReadResponse, First, [Aeth];
    RC_RDMA_READ_RESPONSE_MIDDLE = 0x0e, ReadResponse, Middle, [];
    RC_RDMA_READ_RESPONSE_LAST = 0x0f, ReadResponse, Last, [Aeth];
    RC_RDMA_READ_RESPONSE_ONLY = 0x10, ReadResponse, Only, [Aeth];
    RC_ACKNOWLEDGE = 0x11, Ack, Only, [Aeth];
    RC_ATOMIC_ACKNOWLEDGE = 0x12, AtomicAck, Only, [Aeth, AtomicAckEth];
    RC_COMPARE_SWAP = 0x13, CompareSwap, Only, [AtomicEth];
    RC_FETCH_ADD = 0x14, FetchAdd, Only, [AtomicEth];
    RC_SEND_LAST_WITH_INVALIDATE = 0x16, Send, Last, [Ieth];
    RC_SEND_ONLY_WITH_INVALIDATE = 0x17, Send, Only, [Ieth];
    RC_FLUSH = 0x1c, Flush, Only, [Feth, Reth];
    RC_ATOMIC_WRITE = 0x1d, AtomicWrite, Only, [Reth];
    UC_SEND_FIRST = 0x20, Send, First, [];
    UC_SEND_MIDDLE = 0x21, Send, Middle, [];
    UC_SEND_LAST = 0x22, Send, Last, [];
    UC_SEND_LAST_WITH_IMMEDIATE = 0x23, Send, Last, [ImmDt];
    UC_SEND_ONLY = 0x24, Send, Only, [];
    UC_SEND_ONLY_WITH_IMMEDIATE = 0x25, Send, Only, [ImmDt];
    UC_RDMA_WRITE_FIRST = 0x26, Write, First, [Reth];
    UC_RDMA_WRITE_MIDDLE = 0x27, Write, Middle, [];
    UC_RDMA_WRITE_LAST = 0x28, Write, Last, [];
    UC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x29, Write, Last, [ImmDt];
    UC_RDMA_WRITE_ONLY = 0x2a, Write, Only, [Reth];
    UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x2b, Write, Only, [Reth, ImmDt];
    RD_SEND_FIRST = 0x40, Send, First, [Rdeth, Deth];
    RD_SEND_MIDDLE = 0x41, Send, Middle, [Rdeth, Deth];
    RD_SEND_LAST = 0x42, Send, Last, [Rdeth, Deth];
    RD_SEND_LAST_WITH_IMMEDIATE = 0x43, Send, Last, [Rdeth, Deth, ImmDt];
    RD_SEND_ONLY = 0x44, Send, Only, [Rdeth, Deth];
    RD_SEND_ONLY_WITH_IMMEDIATE = 0x45, Send, Only, [Rdeth, Deth, ImmDt];
    RD_RDMA_WRITE_FIRST = 0x46, Write, First, [Rdeth, Deth, Reth];
    RD_RDMA_WRITE_MIDDLE = 0x47, Write, Middle, [Rdeth, Deth];
    RD_RDMA_WRITE_LAST = 0x48, Write, Last, [Rdeth, Deth];
    RD_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x49, Write, Last, [Rdeth, Deth, ImmDt];
    RD_RDMA_WRITE_ONLY = 0x4a, Write, Only, [Rdeth, Deth, Reth];
    RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x4b, Write, Only, [Rdeth, Deth, Reth, ImmDt];
    RD_RDMA_READ_REQUEST = 0x4c, ReadRequest, Only, [Rdeth, Deth, Reth];
    RD_RDMA_READ_RESPONSE_FIRST = 0x4d, ReadResponse, First, [Rdeth, Aeth];
    RD_RDMA_READ_RESPONSE_MIDDLE = 0x4e, ReadResponse, Middle, [Rdeth];
    RD_RDMA_READ_RESPONSE_LAST = 0x4f, ReadResponse, Last, [Rdeth, Aeth];
    RD_RDMA_READ_RESPONSE_ONLY = 0x50, ReadResponse, Only, [Rdeth, Aeth];
    RD_ACKNOWLEDGE = 0x51, Ack, Only, [Rdeth, Aeth];
    RD_ATOMIC_ACKNOWLEDGE = 0x52, AtomicAck, Only, [Rdeth, Aeth, AtomicAckEth];
    RD_COMPARE_SWAP = 0x53, CompareSwap, Only, [Rdeth, Deth, AtomicEth];
    RD_FETCH_ADD = 0x54, FetchAdd, Only, [Rdeth, Deth, AtomicEth];
    RD_FLUSH = 0x5c, Flush, Only, [Rdeth, Deth, Feth, Reth];
    UD_SEND_ONLY = 0x64, Send, Only, [Deth];
    UD_SEND_ONLY_WITH_IMMEDIATE = 0x65, Send, Only, [Deth, ImmDt];
    CNP = 0x81, Cnp, Only, [CnpReserved];
}

/// Maps each opcode value to its row index plus one (0 = no row).
const INDEX: [u8; 256] = {
    let mut index = [0u8; 256];
    let mut i = 0;
    while i < OPCODE_TABLE.len() {
        // Constant evaluation: an overflow or bad index is a compile error.
        #[allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
        {
            index[OPCODE_TABLE[i].opcode.0 as usize] = (i + 1) as u8;
            i += 1;
        }
    }
    index
};

/// Returns the table row for `op`, or `None` for undefined or reserved opcodes.
pub fn info(op: Opcode) -> Option<&'static OpInfo> {
    let row = INDEX.get(usize::from(op.0)).copied()?;
    OPCODE_TABLE.get(usize::from(row.checked_sub(1)?))
}

/// Returns the row of the supported opcode that a `qp` QP uses for operation `op` at
/// `position`, with immediate data and an IETH exactly as `immediate` and `invalidate` say,
/// or `None` if that transport has no such packet.
pub fn lookup(
    qp: QpType,
    op: Op,
    position: Position,
    immediate: bool,
    invalidate: bool,
) -> Option<&'static OpInfo> {
    OPCODE_TABLE.iter().find(|r| {
        r.supported()
            && r.allowed_on(qp)
            && r.op == op
            && r.position == position
            && r.immediate() == immediate
            && r.invalidate() == invalidate
    })
}

impl OpInfo {
    /// Returns the row of the same packet on a `qp` QP (same operation, position, immediate
    /// data and IETH: `UC_SEND_FIRST` for `RC_SEND_FIRST` on UC), or `None` if that transport
    /// has no such packet.
    pub fn counterpart(&self, qp: QpType) -> Option<&'static OpInfo> {
        lookup(
            qp,
            self.op,
            self.position,
            self.immediate(),
            self.invalidate(),
        )
    }
}

impl Opcode {
    /// Returns the table row, or `None` for undefined or reserved opcodes.
    pub fn info(self) -> Option<&'static OpInfo> {
        info(self)
    }

    /// Returns the IBA name, or `"UNKNOWN"`.
    pub fn name(self) -> &'static str {
        info(self).map_or("UNKNOWN", |i| i.name)
    }
}

impl core::fmt::Debug for Opcode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}({:#04x})", self.name(), self.0)
    }
}
