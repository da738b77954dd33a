// SPDX-License-Identifier: GPL-2.0

//! RDMA READ requests: an accepted request becomes a [`ReadReply`] (and a responder
//! resource), which the caller segments into [`ReadResp`] packets; a duplicate READ is
//! executed again from its resource.

use super::super::super::aeth::NakCode;
use super::super::super::bth::{BthFields, Qpn};
use super::super::super::ext::AethFields;
use super::super::super::opcode::Opcode;
use super::super::super::packet::PacketSpec;
use super::super::super::psn::{Msn, Psn};
use super::super::{PathMtu, WcStatus};
use super::ack::ack;
use super::resources::{Resource, ResourceTable};
use super::{Request, RespOutcome, Responder};

/// The RDMA READ responses to send for a READ request (new or duplicate).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadReply {
    /// Virtual address of the first byte to send, checked against `rkey`.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Bytes to send.
    pub len: u32,
    /// PSN of the first response.
    pub psn: Psn,
    /// MSN the responses carry.
    pub msn: Msn,
}

/// One READ response packet of a [`ReadReply`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadResp {
    /// Opcode (READ response FIRST, MIDDLE, LAST or ONLY).
    pub opcode: Opcode,
    /// PSN.
    pub psn: Psn,
    /// Offset of the payload from the reply's `va`.
    pub offset: u32,
    /// Payload length.
    pub len: u32,
}

impl ReadReply {
    /// Returns the number of response packets at path MTU `mtu`.
    pub fn packets(&self, mtu: PathMtu) -> u32 {
        mtu.packets(self.len)
    }

    /// Returns response packet `i` (of [`Self::packets`]).
    pub fn response(&self, i: u32, mtu: PathMtu) -> ReadResp {
        let n = self.packets(mtu);
        let last = i.wrapping_add(1) >= n;
        let opcode = match (i == 0, last) {
            (true, true) => Opcode::RC_RDMA_READ_RESPONSE_ONLY,
            (true, false) => Opcode::RC_RDMA_READ_RESPONSE_FIRST,
            (false, false) => Opcode::RC_RDMA_READ_RESPONSE_MIDDLE,
            (false, true) => Opcode::RC_RDMA_READ_RESPONSE_LAST,
        };
        let offset = mtu.offset_of(i);
        ReadResp {
            opcode,
            psn: self.psn.wrapping_add(i),
            offset,
            len: self.len.saturating_sub(offset).min(mtu.bytes()),
        }
    }
}

impl ReadResp {
    /// Returns the packet's header set; `payload` is its `len` bytes.
    pub fn spec<'a>(&self, dest_qp: Qpn, pkey: u16, msn: Msn, payload: &'a [u8]) -> PacketSpec<'a> {
        let has_aeth = self.opcode != Opcode::RC_RDMA_READ_RESPONSE_MIDDLE;
        PacketSpec {
            bth: BthFields {
                opcode: self.opcode,
                pkey,
                dest_qp,
                psn: self.psn,
                ..BthFields::default()
            },
            aeth: has_aeth.then_some(AethFields {
                syndrome: ack().encode(),
                msn,
            }),
            payload,
            ..PacketSpec::default()
        }
    }
}

impl<R: ResourceTable> Responder<R> {
    /// Accepts a READ request (PSN, sequence, access and length checked).
    pub(super) fn on_read(&mut self, req: &Request) -> RespOutcome {
        let Some((va, rkey, len)) = req.reth else {
            return self.fail(req.psn, NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        };
        let npsn = self.cfg.mtu.packets(len);
        self.prev_msn = self.msn;
        self.last_psn = req.psn;
        self.msn = self.msn.next();
        self.remember(Resource {
            kind: Resource::READ,
            first_psn: req.psn,
            npsn,
            va,
            rkey,
            len,
            msn: self.msn,
            orig: None,
        });
        self.epsn = req.psn.wrapping_add(npsn);
        RespOutcome {
            read: Some(ReadReply {
                va,
                rkey,
                len,
                psn: req.psn,
                msn: self.msn,
            }),
            ..RespOutcome::default()
        }
    }

    /// Answers a duplicate READ request (C9-112): it is executed again, from its PSN, with
    /// the MSN of the original; one no resource remembers is dropped.
    pub(super) fn replay_read(&self, req: &Request) -> RespOutcome {
        let drop = RespOutcome::default();
        match self.resource(req.psn) {
            Some(r) if r.kind == Resource::READ => {
                let skip = self
                    .cfg
                    .mtu
                    .offset_of(req.psn.diff(r.first_psn).unsigned_abs());
                RespOutcome {
                    read: Some(ReadReply {
                        va: r.va.wrapping_add(u64::from(skip)),
                        rkey: r.rkey,
                        len: r.len.saturating_sub(skip),
                        psn: req.psn,
                        msn: r.msn,
                    }),
                    ..drop
                }
            }
            _ => drop,
        }
    }
}
