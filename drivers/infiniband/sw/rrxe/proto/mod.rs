// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 wire protocol core shared by the `rdma_rrxe` module and its host tools.
//!
//! Everything below this module uses `core` only: no allocation, no `unsafe`, and no panics on
//! any input. The same files are compiled into the kernel module and into the host crate
//! `tools/rrxe` (tests, fuzzing and the `rrxe-decode` capture decoder).
//!
//! - [`bth`], [`ext`]: zero-copy header views and builders (IBA Vol. 1 ch. 9, Annex A17).
//! - [`opcode`]: the one opcode table for RC, UC, RD, UD and CNP.
//! - [`packet`]: whole-packet parser and builder, starting at the BTH (the UDP payload).
//! - [`crc32`], [`icrc`]: the invariant CRC, generic over the CRC32 implementation.
//! - [`ip`]: the IP and UDP headers of outgoing packets.
//! - [`psn`], [`aeth`]: sequence-number arithmetic and ACK syndromes.
//! - [`cc`]: congestion control: ECN marks, CNPs and the DCQCN rate of a QP.
//! - [`pma`]: the port's Performance Management agent (the answers to PerfMgmt MADs).
//! - [`rc`]: the Reliable Connected transport as sans-IO state machines.
//! - [`target`]: which address (WQE SGE or RETH/AtomicETH) and access right a transfer uses.
//! - [`uabi`]: the rxe user ABI: shared queues, WQE validation and completion entries.

#![forbid(unsafe_code)]
#![deny(
    clippy::arithmetic_side_effects,
    clippy::expect_used,
    clippy::float_arithmetic,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::unreachable,
    clippy::unwrap_used
)]

#[macro_use]
mod wire;

pub mod aeth;
pub mod bth;
pub mod cc;
#[cfg(any(rrxe_host, CONFIG_RDMA_RRXE_RUST_KUNIT_TEST))]
pub mod crc32;
pub mod ext;
pub mod icrc;
pub mod ip;
pub mod opcode;
pub mod packet;
pub mod pma;
pub mod psn;
pub mod rc;
pub mod target;
pub mod uabi;

/// Error returned when an output buffer is too short for what is written into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferTooSmall;

/// The IANA UDP port of RoCEv2.
pub const ROCE_V2_PORT: u16 = 4791;
