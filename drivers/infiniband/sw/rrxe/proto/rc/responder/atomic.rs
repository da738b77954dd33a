// SPDX-License-Identifier: GPL-2.0

//! Atomic requests (compare & swap, fetch & add): an accepted request becomes an
//! [`AtomicExec`] for the caller to carry out; [`Responder::atomic_done`] records the
//! original value in the responder resource and returns the [`AtomicReply`] to send; a
//! duplicate atomic is answered from that saved value.

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
    /// The target's value before the operation.
    pub orig: u64,
}

impl AtomicReply {
    /// Returns the header set of the atomic acknowledge packet.
    pub fn spec(&self, dest_qp: Qpn, pkey: u16) -> PacketSpec<'static> {
        PacketSpec {
            bth: BthFields {
                opcode: Opcode::RC_ATOMIC_ACKNOWLEDGE,
                pkey,
                dest_qp,
                psn: self.psn,
                ..BthFields::default()
            },
            aeth: Some(AethFields {
                syndrome: ack().encode(),
                msn: self.msn,
            }),
            atomic_ack_eth: Some(AtomicAckEthFields { orig: self.orig }),
            ..PacketSpec::default()
        }
    }
}

impl<const N: usize> Responder<N> {
    /// Records the original value of the atomic just carried out and returns the atomic
    /// ACKnowledge to send.
    pub fn atomic_done(&mut self, orig: u64) -> AtomicReply {
        let psn = self.last_psn;
        let mut msn = self.msn;
        if let Some(r) = self
            .res
            .iter_mut()
            .find(|r| r.kind == Resource::ATOMIC && r.first_psn == psn)
        {
            r.orig = Some(orig);
            msn = r.msn;
        }
        AtomicReply { psn, msn, orig }
    }

    /// Accepts an atomic request (PSN, sequence and access checked).
    pub(super) fn on_atomic(&mut self, req: &Request, op: Op) -> RespOutcome {
        let Some(a) = req.atomic else {
            return self.fail(req.psn, NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        };
        // C9-120 (o9-37): a misaligned target is an invalid request.
        if a.va & 7 != 0 {
            return self.fail(req.psn, NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        }
        self.prev_msn = self.msn;
        self.last_psn = req.psn;
        self.msn = self.msn.next();
        self.remember(Resource {
            kind: Resource::ATOMIC,
            first_psn: req.psn,
            npsn: 1,
            va: a.va,
            rkey: a.rkey,
            len: 8,
            msn: self.msn,
            orig: None,
        });
        self.epsn = req.psn.next();
        let op = if op == Op::CompareSwap {
            AtomicOp::CompareSwap {
                compare: a.compare,
                swap: a.swap_add,
            }
        } else {
            AtomicOp::FetchAdd { add: a.swap_add }
        };
        RespOutcome {
            atomic: Some(AtomicExec {
                va: a.va,
                rkey: a.rkey,
                op,
            }),
            ..RespOutcome::default()
        }
    }

    /// Answers a duplicate atomic request (C9-114): from the saved result, never executed
    /// twice; one no resource remembers, or not yet carried out, is dropped.
    pub(super) fn replay_atomic(&self, req: &Request) -> RespOutcome {
        let drop = RespOutcome::default();
        match self.resource(req.psn) {
            Some(Resource {
                kind: Resource::ATOMIC,
                orig: Some(orig),
                msn,
                first_psn,
                ..
            }) if first_psn == req.psn => RespOutcome {
                atomic_reply: Some(AtomicReply {
                    psn: req.psn,
                    msn,
                    orig,
                }),
                ..drop
            },
            _ => drop,
        }
    }
}
