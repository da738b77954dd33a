// SPDX-License-Identifier: GPL-2.0

//! Atomic requests (compare & swap, fetch & add, and ATOMIC WRITE): an accepted request
//! becomes an [`AtomicExec`] for the caller to carry out; [`Responder::atomic_done`]
//! records the original value in the responder resource and returns the [`AtomicReply`] to
//! send; a duplicate atomic is answered from that saved value, never executed twice.
//!
//! ATOMIC WRITE (IBA 1.5 annex A19, RC only) writes its 8-byte payload at the RETH address
//! as one store, with RDMA WRITE's access rights (the QP's and the region's remote write),
//! 8-byte aligned (o19-28); it takes a responder resource like an atomic and is answered,
//! as rdma_rxe answers it, by an empty RDMA READ response ONLY carrying its PSN.

use super::super::super::aeth::NakCode;
use super::super::super::bth::{BthFields, Qpn};
use super::super::super::ext::{AethFields, AtomicAckEthFields};
use super::super::super::opcode::{Op, Opcode};
use super::super::super::packet::PacketSpec;
use super::super::super::psn::{Msn, Psn};
use super::super::WcStatus;
use super::ack::ack;
use super::resources::Resource;
use super::{Request, RespOutcome, Responder};

/// The operation of an atomic request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    /// Compare & swap: if the target equals `compare`, it becomes `swap`.
    CompareSwap {
        /// Compare operand.
        compare: u64,
        /// Swap operand.
        swap: u64,
    },
    /// Fetch & add: the target becomes itself plus `add` (wrapping).
    FetchAdd {
        /// Add operand.
        add: u64,
    },
    /// ATOMIC WRITE: the target becomes `value` (needs remote write access, not remote
    /// atomic access; the original value is not returned).
    Write {
        /// The operand, as a native-endian word of the payload bytes.
        value: u64,
    },
}

impl AtomicOp {
    /// Returns the new value of a target holding `orig`.
    pub fn apply(self, orig: u64) -> u64 {
        match self {
            Self::CompareSwap { compare, swap } => {
                if orig == compare {
                    swap
                } else {
                    orig
                }
            }
            Self::FetchAdd { add } => orig.wrapping_add(add),
            Self::Write { value } => value,
        }
    }
}

/// An atomic request to carry out: check `rkey` for the 8 bytes at `va`, apply `op`, then
/// report the original value with [`Responder::atomic_done`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicExec {
    /// Target virtual address (8-byte aligned).
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Operation.
    pub op: AtomicOp,
}

/// An atomic ACKnowledge to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtomicReply {
    /// PSN of the atomic request.
    pub psn: Psn,
    /// MSN.
    pub msn: Msn,
    /// The target's value before the operation (0 for an ATOMIC WRITE).
    pub orig: u64,
    /// The request was an ATOMIC WRITE: answered by an empty READ response ONLY.
    pub write: bool,
}

impl AtomicReply {
    /// Returns the header set of the atomic acknowledge packet (for an ATOMIC WRITE, the
    /// READ response ONLY without AtomicAckETH).
    pub fn spec(&self, dest_qp: Qpn, pkey: u16) -> PacketSpec<'static> {
        PacketSpec {
            bth: BthFields {
                opcode: if self.write {
                    Opcode::RC_RDMA_READ_RESPONSE_ONLY
                } else {
                    Opcode::RC_ATOMIC_ACKNOWLEDGE
                },
                pkey,
                dest_qp,
                psn: self.psn,
                ..BthFields::default()
            },
            aeth: Some(AethFields {
                syndrome: ack().encode(),
                msn: self.msn,
            }),
            atomic_ack_eth: (!self.write).then_some(AtomicAckEthFields { orig: self.orig }),
            ..PacketSpec::default()
        }
    }
}

impl<const N: usize> Responder<N> {
    /// Records the original value of the atomic just carried out and returns the atomic
    /// ACKnowledge to send.
    pub fn atomic_done(&mut self, orig: u64) -> AtomicReply {
        let psn = self.last_psn;
        let mut reply = AtomicReply {
            psn,
            msn: self.msn,
            orig,
            write: false,
        };
        if let Some(r) = self
            .res
            .iter_mut()
            .find(|r| r.is_atomic() && r.first_psn == psn)
        {
            reply.write = r.kind == Resource::ATOMIC_WRITE;
            if reply.write {
                reply.orig = 0;
            }
            r.orig = Some(reply.orig);
            reply.msn = r.msn;
        }
        reply
    }

    /// Accepts an atomic request (PSN, sequence and access checked).
    pub(super) fn on_atomic(&mut self, req: &Request, op: Op) -> RespOutcome {
        let (va, rkey, op) = match (op, req.atomic, req.reth, req.atomic_write) {
            (Op::CompareSwap, Some(a), _, _) => (
                a.va,
                a.rkey,
                AtomicOp::CompareSwap {
                    compare: a.compare,
                    swap: a.swap_add,
                },
            ),
            (Op::FetchAdd, Some(a), _, _) => (a.va, a.rkey, AtomicOp::FetchAdd { add: a.swap_add }),
            // o19-28: exactly 8 bytes, named by the RETH as well.
            (Op::AtomicWrite, _, Some((va, rkey, 8)), Some(value)) if req.payload_len == 8 => {
                (va, rkey, AtomicOp::Write { value })
            }
            _ => return self.fail(req.psn, NakCode::InvalidRequest, WcStatus::RemInvReqErr),
        };
        // C9-120 (o9-37, o19-28): a misaligned target is an invalid request.
        if va & 7 != 0 {
            return self.fail(req.psn, NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        }
        self.prev_msn = self.msn;
        self.last_psn = req.psn;
        self.msn = self.msn.next();
        self.remember(Resource {
            kind: if matches!(op, AtomicOp::Write { .. }) {
                Resource::ATOMIC_WRITE
            } else {
                Resource::ATOMIC
            },
            first_psn: req.psn,
            npsn: 1,
            va,
            rkey,
            len: 8,
            msn: self.msn,
            orig: None,
        });
        self.epsn = req.psn.next();
        RespOutcome {
            atomic: Some(AtomicExec { va, rkey, op }),
            ..RespOutcome::default()
        }
    }

    /// Answers a duplicate atomic request (C9-114): from the saved result, never executed
    /// twice; one no resource remembers, or not yet carried out, is dropped.
    pub(super) fn replay_atomic(&self, req: &Request) -> RespOutcome {
        let drop = RespOutcome::default();
        match self.resource(req.psn) {
            Some(Resource {
                kind,
                orig: Some(orig),
                msn,
                first_psn,
                ..
            }) if first_psn == req.psn
                && matches!(kind, Resource::ATOMIC | Resource::ATOMIC_WRITE) =>
            {
                RespOutcome {
                    atomic_reply: Some(AtomicReply {
                        psn: req.psn,
                        msn,
                        orig,
                        write: kind == Resource::ATOMIC_WRITE,
                    }),
                    ..drop
                }
            }
            _ => drop,
        }
    }
}
