// SPDX-License-Identifier: GPL-2.0

//! What goes into a [`Sender`] and what comes out: a posted WQE as plain values
//! ([`PostedWqe`]) and a request packet to transmit ([`TxPacket`]), with the WQE's header values
//! ([`WqeHeaders`]) that [`TxPacket::spec`] turns into the packet's headers.
//!
//! [`Sender`]: super::Sender

use super::super::super::bth::{BthFields, Qpn};
use super::super::super::ext::{
    AtomicEthFields, ExtHdr, FethFields, IethFields, ImmDtFields, RethFields,
};
use super::super::super::opcode::Opcode;
use super::super::super::packet::PacketSpec;
use super::super::super::psn::Psn;
use super::super::super::uabi::WrOpcode;

/// A send WQE posted to the sender, as it needs it: plain values, no pointers (the caller keeps
/// the WQE itself, e.g. the validated [`uabi::SendWqe`], and its data).
///
/// [`uabi::SendWqe`]: super::super::super::uabi::SendWqe
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PostedWqe {
    /// Caller's handle for the WQE (e.g. its send queue index); returned in
    /// [`TxPacket::id`] and [`SendCompletion::id`](super::super::completer::SendCompletion::id).
    pub id: u32,
    /// Operation.
    pub op: WrOpcode,
    /// Total data length in bytes (SEND/WRITE payload, READ length; ignored for atomics).
    pub len: u32,
    /// `IB_SEND_SOLICITED`: set the BTH SE bit on the last packet of a SEND or WRITE with
    /// immediate.
    pub solicited: bool,
    /// `IB_SEND_FENCE`: do not start before every earlier RDMA READ and atomic completed.
    pub fence: bool,
}

/// Header values of a WQE that [`TxPacket::spec`] copies into the extended headers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WqeHeaders {
    /// Remote virtual address (RDMA and atomic operations).
    pub remote_va: u64,
    /// Remote key (RDMA and atomic operations).
    pub rkey: u32,
    /// Immediate data (`*_WITH_IMM`, as it goes on the wire) or the rkey to invalidate
    /// (`SEND_WITH_INV`).
    pub imm_or_inv: u32,
    /// Swap (compare & swap) or add (fetch & add) operand.
    pub swap_add: u64,
    /// Compare operand (compare & swap).
    pub compare: u64,
    /// FLUSH placement type (`IB_FLUSH_GLOBAL`, `IB_FLUSH_PERSISTENT`).
    pub flush_type: u8,
    /// FLUSH selectivity level (`IB_FLUSH_RANGE`, `IB_FLUSH_MR`).
    pub flush_level: u8,
}

/// One request packet to transmit, returned by [`Sender::next_packet`](super::Sender::next_packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxPacket {
    /// The WQE this packet belongs to ([`PostedWqe::id`]).
    pub id: u32,
    /// Opcode.
    pub opcode: Opcode,
    /// PSN.
    pub psn: Psn,
    /// BTH AckReq bit.
    pub ack_req: bool,
    /// BTH SE bit.
    pub solicited: bool,
    /// Offset of the payload in the WQE's data; for a READ request, of the first byte
    /// requested (non-zero when a READ is retried from its middle).
    pub offset: u32,
    /// Payload length in bytes (0 for READ requests and atomics).
    pub len: u32,
    /// RETH DMA length, if the opcode carries a RETH.
    pub reth_len: u32,
    /// `true` if this PSN was sent before (go-back-N retransmission).
    pub retransmit: bool,
}

impl TxPacket {
    /// Returns the packet's header set; `payload` must be the `len` bytes of the WQE's data
    /// at `offset`.
    pub fn spec<'a>(
        &self,
        dest_qp: Qpn,
        pkey: u16,
        hdrs: &WqeHeaders,
        payload: &'a [u8],
    ) -> PacketSpec<'a> {
        let has = |h: ExtHdr| self.opcode.info().is_some_and(|i| i.has(h));
        let va = hdrs.remote_va.wrapping_add(u64::from(self.offset));
        PacketSpec {
            bth: BthFields {
                opcode: self.opcode,
                solicited: self.solicited,
                pkey,
                dest_qp,
                ack_req: self.ack_req,
                psn: self.psn,
                ..BthFields::default()
            },
            reth: has(ExtHdr::Reth).then_some(RethFields {
                va,
                rkey: hdrs.rkey,
                dma_len: self.reth_len,
            }),
            atomic_eth: has(ExtHdr::AtomicEth).then_some(AtomicEthFields {
                va,
                rkey: hdrs.rkey,
                swap_add: hdrs.swap_add,
                compare: hdrs.compare,
            }),
            immdt: has(ExtHdr::ImmDt).then_some(ImmDtFields {
                imm: hdrs.imm_or_inv,
            }),
            ieth: has(ExtHdr::Ieth).then_some(IethFields {
                rkey: hdrs.imm_or_inv,
            }),
            feth: has(ExtHdr::Feth).then(|| FethFields::new(hdrs.flush_type, hdrs.flush_level)),
            payload,
            ..PacketSpec::default()
        }
    }
}
