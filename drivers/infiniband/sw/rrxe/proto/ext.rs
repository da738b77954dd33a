// SPDX-License-Identifier: GPL-2.0

//! Extended transport headers that may follow the BTH (IBA Vol. 1 9.3, RoCEv2 Annex A17).
//!
//! Each header has a zero-copy view (`Reth<'a>` over `&'a [u8]`) and a builder with public
//! fields (`RethFields`) that serialises into a `&mut [u8]`. Reserved bytes are exposed as
//! fields so that parsing and rebuilding a packet reproduces it byte for byte.

use super::bth::Qpn;
use super::psn::Msn;

/// Kind of an extended transport header; the opcode table lists them in wire order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtHdr {
    /// Reliable Datagram ETH (RD only).
    Rdeth,
    /// Datagram ETH (UD and RD).
    Deth,
    /// FLUSH ETH.
    Feth,
    /// RDMA ETH: remote virtual address, rkey and length.
    Reth,
    /// Atomic ETH: remote virtual address, rkey and operands.
    AtomicEth,
    /// Immediate data.
    ImmDt,
    /// Invalidate ETH: rkey to invalidate.
    Ieth,
    /// ACK ETH: syndrome and MSN.
    Aeth,
    /// Atomic ACK ETH: original remote value.
    AtomicAckEth,
    /// The 16 reserved bytes that follow the BTH of a RoCEv2 CNP.
    CnpReserved,
}

impl ExtHdr {
    /// Returns the length of the header on the wire in bytes.
    pub const fn size(self) -> usize {
        match self {
            Self::Rdeth | Self::Feth | Self::ImmDt | Self::Ieth | Self::Aeth => 4,
            Self::Deth | Self::AtomicAckEth => 8,
            Self::Reth | Self::CnpReserved => 16,
            Self::AtomicEth => 28,
        }
    }
}

header! {
    /// Reliable Datagram Extended Transport Header (4 bytes).
    Rdeth, RdethFields, 4 {
        /// Reserved byte.
        resv: u8 = 0,
        /// End-to-end context number.
        eecn: Qpn = 1,
    }
}

header! {
    /// Datagram Extended Transport Header (8 bytes).
    Deth, DethFields, 8 {
        /// Queue key.
        qkey: u32 = 0,
        /// Reserved byte.
        resv: u8 = 4,
        /// Source queue pair.
        src_qp: Qpn = 5,
    }
}

header! {
    /// FLUSH Extended Transport Header (4 bytes).
    ///
    /// Bits 3-0 of the big-endian word are the placement type, bits 5-4 the selectivity
    /// level, the rest is reserved.
    Feth, FethFields, 4 {
        /// The raw big-endian word.
        bits: u32 = 0,
    }
}

impl Feth<'_> {
    /// Returns the placement type (bits 3-0): 1 = global visibility, 2 = persistence.
    pub fn placement_type(&self) -> u8 {
        self.bits().to_be_bytes()[3] & 0xf
    }

    /// Returns the selectivity level (bits 5-4): 0 = memory region range, 1 = memory region.
    pub fn selectivity_level(&self) -> u8 {
        (self.bits().to_be_bytes()[3] >> 4) & 0x3
    }
}

impl FethFields {
    /// Creates a FETH from its placement type (4 bits) and selectivity level (2 bits).
    pub fn new(placement_type: u8, selectivity_level: u8) -> Self {
        let low = (placement_type & 0xf) | (selectivity_level & 0x3) << 4;
        Self {
            bits: u32::from(low),
        }
    }
}

header! {
    /// RDMA Extended Transport Header (16 bytes).
    Reth, RethFields, 16 {
        /// Remote virtual address.
        va: u64 = 0,
        /// Remote key.
        rkey: u32 = 8,
        /// DMA length in bytes.
        dma_len: u32 = 12,
    }
}

header! {
    /// Atomic Extended Transport Header (28 bytes).
    AtomicEth, AtomicEthFields, 28 {
        /// Remote virtual address (8-byte aligned).
        va: u64 = 0,
        /// Remote key.
        rkey: u32 = 8,
        /// Swap (compare & swap) or add (fetch & add) operand.
        swap_add: u64 = 12,
        /// Compare operand (compare & swap only).
        compare: u64 = 20,
    }
}

header! {
    /// Immediate data (4 bytes), opaque to the transport.
    ImmDt, ImmDtFields, 4 {
        /// The immediate value as sent (big-endian interpretation of the 4 bytes).
        imm: u32 = 0,
    }
}

header! {
    /// Invalidate Extended Transport Header (4 bytes).
    Ieth, IethFields, 4 {
        /// Remote key to invalidate.
        rkey: u32 = 0,
    }
}

header! {
    /// ACK Extended Transport Header (4 bytes); see [`super::aeth`] for the syndrome.
    Aeth, AethFields, 4 {
        /// Raw syndrome byte.
        syndrome: u8 = 0,
        /// Message sequence number.
        msn: Msn = 1,
    }
}

header! {
    /// Atomic ACK Extended Transport Header (8 bytes).
    AtomicAckEth, AtomicAckEthFields, 8 {
        /// Value of the remote location before the atomic operation.
        orig: u64 = 0,
    }
}
