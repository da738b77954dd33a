// SPDX-License-Identifier: GPL-2.0

//! Target selection: where the address of a data transfer comes from, and which right guards it.
//!
//! Every transfer either gathers (reads local memory to build an outgoing payload) or
//! scatters (writes incoming data). Independently of that direction, its address is either
//! *software-named* (an SGE of a posted WQE, checked against an lkey) or *wire-named* (the
//! RETH or AtomicETH virtual address in a packet, checked against an rkey). Direction and
//! naming do not coincide: the responder's gather for an RDMA READ is wire-named.
//!
//! | operation | requester gather | requester scatter | responder gather | responder scatter |
//! |---|---|---|---|---|
//! | SEND | WQE, local read | - | - | RQ WQE, local write |
//! | WRITE | WQE, local read | - | - | RETH, remote write |
//! | READ request | - | - | RETH, remote read | - |
//! | READ response | - | WQE, local write | RETH, remote read | - |
//! | CMP_SWP/F_ADD | - | - | AtomicETH, remote atomic | AtomicETH, remote atomic |
//! | atomic ACK | - | WQE, local write | - | - |
//! | ATOMIC WRITE | WQE, local read | - | - | RETH, remote write |
//! | FLUSH | - | - | - | RETH, remote flush |
//! | ACK, CNP | - | - | - | - |
//!
//! WRITE with immediate places its payload like any WRITE; the immediate additionally
//! consumes one receive WQE ([`super::opcode::OpInfo::consumes_rwqe`]). WRITE middle/last
//! packets and READ response middle packets carry no RETH but continue the address named
//! by the first packet, so they are wire-named too.

#[cfg(any(rrxe_host, CONFIG_RDMA_RRXE_RUST_KUNIT_TEST))]
use super::opcode::{Op, OpInfo};

/// The two ends of a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg(any(rrxe_host, CONFIG_RDMA_RRXE_RUST_KUNIT_TEST))]
pub enum Side {
    /// The side that posted the work request.
    Requester,
    /// The side that executes it.
    Responder,
}

/// Direction of a data transfer relative to local memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg(any(rrxe_host, CONFIG_RDMA_RRXE_RUST_KUNIT_TEST))]
pub enum Dir {
    /// Read local memory to build an outgoing payload (or atomic operand).
    Gather,
    /// Write incoming data (or an atomic result) to local memory.
    Scatter,
}

/// Where the address of a transfer comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg(any(rrxe_host, CONFIG_RDMA_RRXE_RUST_KUNIT_TEST))]
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
#[cfg(any(rrxe_host, CONFIG_RDMA_RRXE_RUST_KUNIT_TEST))]
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
#[cfg(any(rrxe_host, CONFIG_RDMA_RRXE_RUST_KUNIT_TEST))]
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

/// `IB_ACCESS_*` rights of a memory region, as registered.
pub mod rights {
    /// The local side may write.
    pub const LOCAL_WRITE: u32 = 1;
    /// Remote RDMA WRITE.
    pub const REMOTE_WRITE: u32 = 2;
    /// Remote RDMA READ.
    pub const REMOTE_READ: u32 = 4;
    /// Remote atomics.
    pub const REMOTE_ATOMIC: u32 = 8;
    /// Remote FLUSH (`IB_ACCESS_FLUSH_GLOBAL`).
    pub const REMOTE_FLUSH: u32 = 1 << 8;
}

impl Access {
    /// Returns the `IB_ACCESS_*` right this access needs (0: always allowed).
    pub const fn right(self) -> u32 {
        match self {
            Self::LocalRead => 0,
            Self::LocalWrite => rights::LOCAL_WRITE,
            Self::RemoteRead => rights::REMOTE_READ,
            Self::RemoteWrite => rights::REMOTE_WRITE,
            Self::RemoteAtomic => rights::REMOTE_ATOMIC,
            Self::RemoteFlush => rights::REMOTE_FLUSH,
        }
    }
}

/// What a key resolves to: a registered range of virtual addresses, its rights and its
/// protection domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First virtual address (the region's iova).
    pub iova: u64,
    /// Length in bytes.
    pub length: u64,
    /// `IB_ACCESS_*` rights.
    pub rights: u32,
    /// Protection domain: an identity never reused (64 bits, counted up from 1: it cannot
    /// wrap), so that a region is never reachable from a later PD that got the same number.
    pub pd: u64,
}

/// Why an access to a region was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessError {
    /// The QP is in another protection domain.
    WrongPd,
    /// The region lacks the right the access needs.
    NoRight,
    /// The range starts before or ends after the region (or wraps around).
    OutOfBounds,
    /// No region or window has the key's index.
    NoKey,
    /// The index names a region or window with another key (re-keyed, or the key of an
    /// earlier registration), one that is not valid (invalidated), or a window not bound.
    StaleKey,
    /// The key names the wrong kind of object: a window where a region is needed (an
    /// lkey), or the local DMA key outside the kernel.
    WrongKind,
    /// A type 2 window bound to another QP.
    OtherQp,
}

impl AccessError {
    /// Why, in words (for the driver's debug messages).
    pub const fn reason(self) -> &'static str {
        match self {
            Self::WrongPd => "the region is of another protection domain",
            Self::NoRight => "the region does not grant the access",
            Self::OutOfBounds => "the range is not inside the region",
            Self::NoKey => "no region or window has this key",
            Self::StaleKey => "the key is stale or invalidated",
            Self::WrongKind => "the key names the wrong kind of object",
            Self::OtherQp => "the window is bound to another QP",
        }
    }
}

impl Region {
    /// Checks an access of `len` bytes at `va` by a QP of protection domain `pd`, and returns
    /// its byte offset in the region. The whole range must lie inside the region: nothing
    /// outside it is ever read or written.
    pub fn check(&self, pd: u64, va: u64, len: u32, access: Access) -> Result<u64, AccessError> {
        if self.pd != pd {
            return Err(AccessError::WrongPd);
        }
        let right = access.right();
        if self.rights & right != right {
            return Err(AccessError::NoRight);
        }
        let off = va.checked_sub(self.iova).ok_or(AccessError::OutOfBounds)?;
        let end = off
            .checked_add(u64::from(len))
            .ok_or(AccessError::OutOfBounds)?;
        if end > self.length {
            return Err(AccessError::OutOfBounds);
        }
        Ok(off)
    }
}

/// Where the bytes of a region made of a page list lie (a fast-registration region): the
/// region starts `first` bytes into the first of its pages, each `page_size` bytes long.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageLayout {
    /// Bytes per page (a power of two).
    pub page_size: u64,
    /// Offset of the region's first byte in its first page.
    pub first: u64,
}

impl PageLayout {
    /// Calls `f(page, offset_in_page, range)` for each piece, within one page, of the `len`
    /// bytes at byte `off` of the region, in order, where `range` is the piece's place in a
    /// buffer of `len` bytes; stops at `f`'s first error. Returns `overflow` if a position
    /// does not fit in 64 bits or the page size is 0.
    pub fn walk<E>(
        &self,
        off: u64,
        len: usize,
        overflow: E,
        mut f: impl FnMut(usize, u64, core::ops::Range<usize>) -> Result<(), E>,
    ) -> Result<(), E> {
        let Some(mut pos) = self.first.checked_add(off) else {
            return Err(overflow);
        };
        let mut done = 0usize;
        while let Some(left) = len.checked_sub(done).filter(|&l| l > 0) {
            let (Some(in_page), Some(page)) = (
                pos.checked_rem(self.page_size),
                pos.checked_div(self.page_size),
            ) else {
                return Err(overflow);
            };
            // `in_page < page_size`: the page has room for at least one byte.
            let room = self.page_size.wrapping_sub(in_page);
            let n = usize::try_from(room).map_or(left, |r| r.min(left));
            let (Ok(page), Some(end), Some(next)) = (
                usize::try_from(page),
                done.checked_add(n),
                u64::try_from(n).ok().and_then(|n| pos.checked_add(n)),
            ) else {
                return Err(overflow);
            };
            f(page, in_page, done..end)?;
            done = end;
            pos = next;
        }
        Ok(())
    }
}
