// SPDX-License-Identifier: GPL-2.0

//! The Reliable Connected (RC) transport as sans-IO state machines (IBA Vol. 1 ch. 9.7).
//!
//! Nothing here owns a queue, a buffer, a timer or a socket. The caller (the kernel QP code,
//! or a host simulation) feeds *events* under its per-QP lock and carries out the *actions*
//! that come back:
//!
//! - [`qp_state`]: the QP states, which `modify_qp` transitions the driver accepts and what
//!   each one implies (flush, start or stop of the requester, SQ drain).
//! - [`requester`]: [`Sender`], the requester half: segmentation of send WQEs into
//!   path-MTU packets, PSN assignment, the AckReq policy, the unacknowledged-PSN window and
//!   go-back-N retransmission; in its [`Transport::Uc`] mode, the Unreliable Connected
//!   requester (UC opcodes, nothing acknowledged, a WQE done once its last packet is out).
//! - [`completer`]: the completer half of [`Sender`]: ACK, NAK and RNR NAK processing,
//!   in-order completions, the retransmit and RNR timers and their retry counters.
//! - [`responder`]: [`Responder`], the receive side: PSN classification, opcode sequence and
//!   length checks, RNR NAKs, MSN tracking, ACK generation and where the payload goes; READ
//!   and atomic requests and the responder resources that answer their duplicates; UC
//!   requests go to [`Responder::on_uc_request`].
//!
//! All state lives in small fixed-size structs; nothing allocates. The wire format itself
//! is left to [`super::packet`]: a [`TxPacket`] or [`Reply`] turns into a
//! [`super::packet::PacketSpec`], and received packets are reduced to plain header values
//! ([`Request`], [`Response`]) before they reach the state machines.

pub mod completer;
pub mod qp_state;
pub mod requester;
pub mod responder;

pub use completer::{Deliver, Response, SendAction};
pub use requester::{PostedWqe, Sender, SenderConfig, Transport, TxPacket, WqeHeaders};
pub use responder::{
    AtomicExec, AtomicOp, AtomicReply, Placement, ReadReply, Reply, Request, Resource,
    ResourceTable, RespOutcome, Responder, ResponderConfig, Touches,
};
// Used by the host crate only.
#[cfg(rrxe_host)]
pub use {
    completer::SendCompletion,
    qp_state::QpState,
    requester::{Cwnd, PostError, CWND_MIN},
    responder::ReadResp,
};

/// Requester: request an ACK at least every this many packets (rxe `RXE_MAX_PKT_PER_ACK`).
pub const MAX_PKT_PER_ACK: u32 = 64;

/// Requester: at most this many PSNs sent but not acknowledged (rxe `RXE_MAX_UNACKED_PSNS`);
/// after losses, the congestion window ([`requester::Cwnd`]) allows fewer.
pub const MAX_UNACKED_PSNS: u32 = 128;

/// Largest RDMA length a RETH may carry (IBA C9-94: 2^31 bytes).
pub const MAX_DMA_LEN: u32 = 1 << 31;

/// Work completion status (`enum ib_wc_status`), shared with the user ABI's completions.
pub use super::uabi::WcStatus;

/// A path MTU as negotiated by `modify_qp` (`IB_QP_PATH_MTU`).
///
/// # Invariants
///
/// The MTU is 2^`shift` bytes with `shift` in 8..=12 (256 to 4096 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathMtu {
    shift: u8,
}

impl PathMtu {
    /// 256 bytes.
    #[cfg(rrxe_host)]
    pub const MTU_256: Self = Self { shift: 8 };
    /// 1024 bytes (rxe's active MTU on a 1500-byte netdev).
    pub const MTU_1024: Self = Self { shift: 10 };

    /// Creates the MTU from the verbs enum `ib_mtu` (1 = 256, ..., 5 = 4096).
    #[cfg(rrxe_host)]
    pub const fn from_ib_enum(v: u8) -> Option<Self> {
        match v {
            1..=5 => Some(Self {
                shift: v.wrapping_add(7),
            }),
            _ => None,
        }
    }

    /// Creates the MTU from its size in bytes (256, 512, 1024, 2048 or 4096).
    pub const fn from_bytes(bytes: u32) -> Option<Self> {
        match bytes {
            256 | 512 | 1024 | 2048 | 4096 => Some(Self {
                // `bytes` is a power of two in 2^8..=2^12.
                shift: bytes.trailing_zeros() as u8,
            }),
            _ => None,
        }
    }

    /// Returns the MTU in bytes.
    pub fn bytes(self) -> u32 {
        1u32.wrapping_shl(u32::from(self.shift))
    }

    /// Returns how many packets of this MTU carry `len` bytes (at least one, for a
    /// zero-length message).
    pub fn packets(self, len: u32) -> u32 {
        len.wrapping_shr(u32::from(self.shift))
            .wrapping_add(u32::from(len & self.bytes().wrapping_sub(1) != 0))
            .max(1)
    }

    /// Returns the byte offset of packet number `index` of a message, saturating.
    pub fn offset_of(self, index: u32) -> u32 {
        index.saturating_mul(self.bytes())
    }
}
