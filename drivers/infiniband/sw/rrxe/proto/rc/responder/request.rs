// SPDX-License-Identifier: GPL-2.0

//! The responder's input: the header values of an incoming request ([`Request`], with its
//! AtomicETH as [`AtomicReq`]), extracted from a parsed packet.

use super::super::super::opcode::{Op, Opcode};
use super::super::super::packet::Packet;
use super::super::super::psn::Psn;
use super::super::super::wire::chunk;

/// The header values of an incoming request that the responder decides on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// Opcode.
    pub opcode: Opcode,
    /// BTH PSN.
    pub psn: Psn,
    /// BTH AckReq bit.
    pub ack_req: bool,
    /// BTH SE bit.
    pub solicited: bool,
    /// Payload length in bytes, without pad.
    pub payload_len: u32,
    /// RETH virtual address, rkey and DMA length, if present.
    pub reth: Option<(u64, u32, u32)>,
    /// Immediate data, if present.
    pub imm: Option<u32>,
    /// IETH rkey to invalidate, if present.
    pub inv_rkey: Option<u32>,
    /// AtomicETH, if present.
    pub atomic: Option<AtomicReq>,
    /// The operand of an ATOMIC WRITE: its 8-byte payload, as a native-endian word (the
    /// bytes are stored at the target as they arrived, as rdma_rxe does).
    pub atomic_write: Option<u64>,
    /// The FETH of a FLUSH: placement type and selectivity level.
    pub flush: Option<(u8, u8)>,
}

/// The AtomicETH of an atomic request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicReq {
    /// Target virtual address (8-byte aligned).
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap (compare & swap) or add (fetch & add) operand.
    pub swap_add: u64,
    /// Compare operand (compare & swap).
    pub compare: u64,
}

impl Request {
    /// Extracts the request fields of a parsed packet.
    pub fn from_packet(pkt: &Packet<'_>) -> Self {
        Self {
            opcode: pkt.opcode(),
            psn: pkt.bth.psn(),
            ack_req: pkt.bth.ack_req(),
            solicited: pkt.bth.solicited(),
            payload_len: u32::try_from(pkt.payload.len()).unwrap_or(u32::MAX),
            reth: pkt.reth.map(|r| (r.va(), r.rkey(), r.dma_len())),
            imm: pkt.immdt.map(|i| i.imm()),
            inv_rkey: pkt.ieth.map(|i| i.rkey()),
            atomic: pkt.atomic_eth.map(|a| AtomicReq {
                va: a.va(),
                rkey: a.rkey(),
                swap_add: a.swap_add(),
                compare: a.compare(),
            }),
            atomic_write: (pkt.opcode().info().map(|i| i.op) == Some(Op::AtomicWrite))
                .then(|| chunk::<8>(pkt.payload, 0).copied().map(u64::from_ne_bytes))
                .flatten(),
            flush: pkt
                .feth
                .map(|f| (f.placement_type(), f.selectivity_level())),
        }
    }
}
