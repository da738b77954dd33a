// SPDX-License-Identifier: GPL-2.0

//! Atomic requests (compare & swap, fetch & add, and ATOMIC WRITE): an accepted request
//! becomes an [`AtomicExec`] for the caller to carry out; [`Responder::atomic_done`]
//! records the original value in the responder resource and returns the [`AtomicReply`] to
//! send; a duplicate atomic is answered from that saved value, never executed twice.
//!
//! ATOMIC WRITE (IBA 1.5 annex A19, RC only) writes its 8-byte payload at the RETH address
//! as one store, with RDMA WRITE's access rights (the QP's and the region's remote write),
//! 8-byte aligned (o19-28). FLUSH (annex A19 too) makes the earlier writes to the RETH range,
//! or to the whole region (selectivity level `IB_FLUSH_MR`), globally visible (placement
//! type `IB_FLUSH_GLOBAL`) or persistent (`IB_FLUSH_PERSISTENT`), with the region's flush
//! right for each type. Both take a responder resource like an atomic and are answered, as
//! rdma_rxe answers them, by an empty RDMA READ response ONLY carrying their PSN.

use super::super::super::aeth::NakCode;
use super::super::super::bth::{BthFields, Qpn};
use super::super::super::ext::{AethFields, AtomicAckEthFields};
use super::super::super::opcode::{Op, Opcode};
use super::super::super::packet::PacketSpec;
use super::super::super::psn::{Msn, Psn};
use super::super::super::uabi::{FLUSH_MR, FLUSH_RANGE};
use super::super::WcStatus;
use super::ack::ack;
use super::resources::{Resource, ResourceTable};
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
    /// FLUSH of `len` bytes at the target, or of the whole region the rkey names: changes
    /// nothing (needs the region's flush right for `types`).
    Flush {
        /// Placement types (bit 0 global visibility, bit 1 persistence).
        types: u8,
        /// Bytes (the RETH length; ignored for the whole region).
        len: u32,
        /// Selectivity level `IB_FLUSH_MR`: the whole region, whatever the RETH range.
        whole_region: bool,
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
            Self::Flush { .. } => orig,
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
    /// The target's value before the operation (0 for an ATOMIC WRITE or FLUSH).
    pub orig: u64,
    /// The request was an ATOMIC WRITE or FLUSH: answered by an empty READ response ONLY.
    pub empty: bool,
}

impl AtomicReply {
    /// Returns the header set of the atomic acknowledge packet (for an ATOMIC WRITE or
    /// FLUSH, the READ response ONLY without AtomicAckETH).
    pub fn spec(&self, dest_qp: Qpn, pkey: u16) -> PacketSpec<'static> {
        PacketSpec {
            bth: BthFields {
                opcode: if self.empty {
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
            atomic_ack_eth: (!self.empty).then_some(AtomicAckEthFields { orig: self.orig }),
            ..PacketSpec::default()
        }
    }
}

impl<R: ResourceTable> Responder<R> {
    /// Records the original value of the atomic just carried out and returns the atomic
    /// ACKnowledge to send.
    pub fn atomic_done(&mut self, orig: u64) -> AtomicReply {
        let psn = self.last_psn;
        let mut reply = AtomicReply {
            psn,
            msn: self.msn,
            orig,
            empty: false,
        };
        if let Some(r) = self
            .res
            .slots_mut()
            .iter_mut()
            .find(|r| r.is_atomic() && r.first_psn == psn)
        {
            reply.empty = r.kind != Resource::ATOMIC;
            if reply.empty {
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
            (Op::Flush, _, Some((va, rkey, len)), _) => match req.flush {
                Some((types, level @ (FLUSH_RANGE | FLUSH_MR))) => (
                    va,
                    rkey,
                    AtomicOp::Flush {
                        types,
                        len,
                        whole_region: level == FLUSH_MR,
                    },
                ),
                _ => return self.fail(req.psn, NakCode::InvalidRequest, WcStatus::RemInvReqErr),
            },
            _ => return self.fail(req.psn, NakCode::InvalidRequest, WcStatus::RemInvReqErr),
        };
        // C9-120 (o9-37, o19-28): a misaligned target is an invalid request.
        if va & 7 != 0 && !matches!(op, AtomicOp::Flush { .. }) {
            return self.fail(req.psn, NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        }
        self.prev_msn = self.msn;
        self.last_psn = req.psn;
        self.msn = self.msn.next();
        self.remember(Resource {
            kind: match op {
                AtomicOp::Write { .. } => Resource::ATOMIC_WRITE,
                AtomicOp::Flush { .. } => Resource::FLUSH,
                _ => Resource::ATOMIC,
            },
            first_psn: req.psn,
            npsn: 1,
            va,
            rkey,
            len: match op {
                AtomicOp::Flush { len, .. } => len,
                _ => 8,
            },
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
                && matches!(
                    kind,
                    Resource::ATOMIC | Resource::ATOMIC_WRITE | Resource::FLUSH
                ) =>
            {
                RespOutcome {
                    atomic_reply: Some(AtomicReply {
                        psn: req.psn,
                        msn,
                        orig,
                        empty: kind != Resource::ATOMIC,
                    }),
                    ..drop
                }
            }
            _ => drop,
        }
    }
}
