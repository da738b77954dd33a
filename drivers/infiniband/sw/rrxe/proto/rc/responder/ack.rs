// SPDX-License-Identifier: GPL-2.0

//! What the responder sends back and how it fails: the ACK, NAK and RNR NAK packet
//! ([`Reply`]), the NAK that ends the QP with an error completion of the current receive WQE,
//! and the caller's report of a failed placement or rkey check ([`LocalError`]).

use super::super::super::aeth::{Credits, NakCode, Syndrome};
use super::super::super::bth::{BthFields, Qpn};
use super::super::super::ext::AethFields;
use super::super::super::opcode::Opcode;
use super::super::super::packet::PacketSpec;
use super::super::super::psn::{Msn, Psn};
use super::super::WcStatus;
use super::{RecvCompletion, ResourceTable, RespOutcome, Responder};

/// An ACK, NAK or RNR NAK to send (`RC_ACKNOWLEDGE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    /// BTH PSN.
    pub psn: Psn,
    /// AETH MSN.
    pub msn: Msn,
    /// AETH syndrome.
    pub syndrome: Syndrome,
}

impl Reply {
    /// Returns the header set of the acknowledge packet.
    pub fn spec(&self, dest_qp: Qpn, pkey: u16) -> PacketSpec<'static> {
        PacketSpec {
            bth: BthFields {
                opcode: Opcode::RC_ACKNOWLEDGE,
                pkey,
                dest_qp,
                psn: self.psn,
                ..BthFields::default()
            },
            aeth: Some(AethFields {
                syndrome: self.syndrome.encode(),
                msn: self.msn,
            }),
            ..PacketSpec::default()
        }
    }
}

/// Why placing an accepted payload failed, for [`Responder::on_local_error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LocalError {
    /// The RETH rkey, bounds or access rights are invalid (class C remote access error).
    RemoteAccess,
    /// The receive WQE's scatter list could not be written (lkey/protection: class A).
    RecvProtection,
    /// A SEND with invalidate names an rkey that cannot be invalidated (only memory windows
    /// and fast-registered regions can): an invalid request.
    BadInvalidate,
}

impl<R: ResourceTable> Responder<R> {
    /// Reports that placing the payload of the request just accepted failed (or, for a READ
    /// or atomic, that its rkey check did): NAKs it, completes the current receive WQE in
    /// error and enters the error state.
    pub fn on_local_error(&mut self, err: LocalError) -> RespOutcome {
        self.msn = self.prev_msn;
        let psn = self.last_psn;
        match err {
            LocalError::RemoteAccess => {
                self.fail(psn, NakCode::RemoteAccessError, WcStatus::RemAccessErr)
            }
            LocalError::RecvProtection => {
                self.fail(psn, NakCode::RemoteOperationalError, WcStatus::LocProtErr)
            }
            LocalError::BadInvalidate => {
                // The receive WQE was completed by the caller's choice not to: it is current
                // again for the error completion.
                self.recv_active = true;
                self.fail(psn, NakCode::InvalidRequest, WcStatus::LocQpOpErr)
            }
        }
    }

    /// NAKs `psn` with `code`, completes the current receive WQE (if any) with `status` and
    /// enters the error state.
    pub(super) fn fail(&mut self, psn: Psn, code: NakCode, status: WcStatus) -> RespOutcome {
        let reply = self.reply(psn, Syndrome::Nak(code));
        let recv = core::mem::replace(&mut self.recv_active, false);
        self.dead = true;
        RespOutcome {
            complete: recv.then_some(RecvCompletion {
                status,
                byte_len: self.recv_off,
                rdma_with_imm: false,
                imm: None,
                inv_rkey: None,
                solicited: false,
            }),
            reply: Some(reply),
            fatal: true,
            ..RespOutcome::default()
        }
    }

    /// Returns an acknowledge packet for `psn` with the current MSN.
    pub(super) fn reply(&self, psn: Psn, syndrome: Syndrome) -> Reply {
        Reply {
            psn,
            msn: self.msn,
            syndrome,
        }
    }
}

/// A positive ACK without credit information (rxe `AETH_ACK_UNLIMITED`).
pub(super) const fn ack() -> Syndrome {
    Syndrome::Ack(Credits::INVALID)
}
