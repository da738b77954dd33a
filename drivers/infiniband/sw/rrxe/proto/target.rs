// SPDX-License-Identifier: GPL-2.0

//! Target selection: where the address of a data transfer comes from, and which right guards it.
//!
//! Every transfer either gathers (reads local memory to build an outgoing payload) or
//! scatters (writes incoming data). Independently of that direction, its address is either
//! *software-named* (an SGE of a posted WQE, checked against an lkey) or *wire-named* (the
//! RETH or AtomicETH virtual address in a packet, checked against an rkey). Direction and
//! naming do not coincide: the responder's gather for an RDMA READ is wire-named.
//!
//! | operation     | requester gather | requester scatter   | responder gather   | responder scatter |
//! |---------------|------------------|---------------------|--------------------|-------------------|
//! | SEND          | WQE, local read  | -                   | -                  | RQ WQE, local write |
//! | WRITE         | WQE, local read  | -                   | -                  | RETH, remote write |
//! | READ request  | -                | -                   | RETH, remote read  | -                 |
//! | READ response | -                | WQE, local write    | RETH, remote read  | -                 |
//! | CMP_SWP/F_ADD | -                | -                   | AtomicETH, remote atomic | AtomicETH, remote atomic |
//! | atomic ACK    | -                | WQE, local write    | -                  | -                 |
//! | ATOMIC WRITE  | WQE, local read  | -                   | -                  | RETH, remote write |
//! | FLUSH         | -                | -                   | -                  | RETH, remote flush |
//! | ACK, CNP      | -                | -                   | -                  | -                 |
//!
//! WRITE with immediate places its payload like any WRITE; the immediate additionally
//! consumes one receive WQE ([`super::opcode::OpInfo::consumes_rwqe`]). WRITE middle/last
//! packets and READ response middle packets carry no RETH but continue the address named
//! by the first packet, so they are wire-named too.

use super::opcode::{Op, OpInfo};

/// The two ends of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The side that posted the work request.
    Requester,
    /// The side that executes it.
    Responder,
}

/// Direction of a data transfer relative to local memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Read local memory to build an outgoing payload (or atomic operand).
    Gather,
    /// Write incoming data (or an atomic result) to local memory.
    Scatter,
}

/// Where the address of a transfer comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addressing {
    /// An SGE (or inline data) of a posted WQE; checked with an lkey.
    Software,
    /// A virtual address carried in the packet (RETH or AtomicETH); checked with an rkey.
    Wire,
}

/// Access right the memory region must grant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Local read: implied by every valid lkey.
    LocalRead,
    /// Local write (`IB_ACCESS_LOCAL_WRITE`).
    LocalWrite,
    /// Remote read (`IB_ACCESS_REMOTE_READ`).
    RemoteRead,
    /// Remote write (`IB_ACCESS_REMOTE_WRITE`), also used by ATOMIC WRITE.
    RemoteWrite,
    /// Remote atomic (`IB_ACCESS_REMOTE_ATOMIC`).
    RemoteAtomic,
    /// Remote flush (`IB_ACCESS_FLUSH_GLOBAL` or `IB_ACCESS_FLUSH_PERSISTENT`, per FETH).
    RemoteFlush,
}

/// The answer of [`select`] for a transfer that exists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// Where the address comes from.
    pub addressing: Addressing,
    /// Right that the lkey or rkey must grant.
    pub access: Access,
}

/// Says how `side` addresses the `dir` transfer for packets with opcode `info`.
///
/// Returns `None` when there is no such transfer (for example a SEND has no wire-named
/// target, and an ACK moves no data at all).
pub fn select(info: &OpInfo, side: Side, dir: Dir) -> Option<Target> {
    use Access::*;
    use Addressing::*;
    let (addressing, access) = match (info.op, side, dir) {
        (Op::Send | Op::Write | Op::AtomicWrite, Side::Requester, Dir::Gather) => {
            (Software, LocalRead)
        }
        (Op::Send, Side::Responder, Dir::Scatter) => (Software, LocalWrite),
        (Op::Write | Op::AtomicWrite, Side::Responder, Dir::Scatter) => (Wire, RemoteWrite),
        (Op::ReadRequest | Op::ReadResponse, Side::Responder, Dir::Gather) => (Wire, RemoteRead),
        (Op::ReadResponse | Op::AtomicAck, Side::Requester, Dir::Scatter) => (Software, LocalWrite),
        (Op::CompareSwap | Op::FetchAdd, Side::Responder, _) => (Wire, RemoteAtomic),
        (Op::Flush, Side::Responder, Dir::Scatter) => (Wire, RemoteFlush),
        _ => return None,
    };
    Some(Target { addressing, access })
}
