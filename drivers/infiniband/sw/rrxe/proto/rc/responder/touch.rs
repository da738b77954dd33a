// SPDX-License-Identifier: GPL-2.0

//! What memory a request would touch before it is accepted ([`Touches`]), for memory that
//! may not be there yet (on-demand paging): the driver makes sure it is present and, if it
//! is not, answers with an RNR NAK ([`Responder::rnr_nak`]) instead of accepting the request,
//! as an RNIC does on a responder page fault. The request's PSN stays expected, so the
//! requester's retry after the RNR wait is taken as new.

use super::super::super::aeth::Syndrome;
use super::super::super::opcode::Op;
use super::{InMsg, Reply, Request, ResourceTable, Responder};

/// Memory an in-sequence request would touch, were it accepted now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Touches {
    /// `len` bytes at byte `offset` of a receive WQE: the current one, or (`fresh`) the one
    /// at the head of the receive queue, which the request would begin.
    Recv {
        /// Byte offset in the WQE's scatter list.
        offset: u32,
        /// Bytes.
        len: u32,
        /// The request begins a new receive WQE.
        fresh: bool,
    },
    /// `len` bytes at `va` through `rkey`, written (RDMA WRITE, ATOMIC WRITE) or, for
    /// `atomic`, read and written (compare and swap, fetch and add: the rkey grants remote
    /// atomics).
    Remote {
        /// Virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
        /// Bytes.
        len: u32,
        /// Bytes of the message from `va` on (`len` and those of the packets still to
        /// come: an RDMA WRITE's RETH length not yet written; `len` for an atomic), which
        /// a fault may bring in together.
        left: u32,
        /// A compare and swap or fetch and add.
        atomic: bool,
    },
}

impl<R: ResourceTable> Responder<R> {
    /// Returns what memory `req` would write if it were accepted now: only for a request
    /// with the expected PSN that carries data in sequence (a duplicate, a request out of
    /// sequence or one the responder refuses touches nothing). A READ is not listed: its
    /// responses are built later and can wait for their pages.
    pub fn touches(&self, req: &Request) -> Option<Touches> {
        let info = req.opcode.info()?;
        if self.dead || !info.is_request() || req.psn != self.epsn {
            return None;
        }
        let len = req.payload_len;
        match info.op {
            Op::Send if len == 0 => None,
            Op::Send if info.is_first() => Some(Touches::Recv {
                offset: 0,
                len,
                fresh: true,
            }),
            Op::Send if self.in_msg == InMsg::Send && self.recv_active => Some(Touches::Recv {
                offset: self.recv_off,
                len,
                fresh: false,
            }),
            Op::Write if len == 0 => None,
            Op::Write if info.is_first() => {
                let (va, rkey, dma_len) = req.reth?;
                Some(Touches::Remote {
                    va,
                    rkey,
                    len,
                    left: dma_len.max(len),
                    atomic: false,
                })
            }
            Op::Write if self.in_msg == InMsg::Write => Some(Touches::Remote {
                va: self.write_va,
                rkey: self.write_rkey,
                len,
                left: self.write_left.max(len),
                atomic: false,
            }),
            Op::CompareSwap | Op::FetchAdd => {
                let a = req.atomic?;
                Some(Touches::Remote {
                    va: a.va,
                    rkey: a.rkey,
                    len: 8,
                    left: 8,
                    atomic: true,
                })
            }
            Op::AtomicWrite => {
                let (va, rkey, _) = req.reth?;
                Some(Touches::Remote {
                    va,
                    rkey,
                    len: 8,
                    left: 8,
                    atomic: false,
                })
            }
            _ => None,
        }
    }

    /// Returns the RNR NAK that refuses `req` for now (its memory is not present): the
    /// requester waits for the QP's minimum RNR timer and sends it again, from its PSN. The
    /// request stays expected; the packets after it that are on their way are dropped
    /// without a PSN sequence error NAK (the requester goes back anyway, and each NAK would
    /// cost it a retry).
    pub fn rnr_nak(&mut self, req: &Request) -> Reply {
        self.nak_sent = true;
        self.reply(req.psn, Syndrome::RnrNak(self.cfg.min_rnr_timer))
    }
}
