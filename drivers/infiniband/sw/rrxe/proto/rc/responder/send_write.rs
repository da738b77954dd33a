// SPDX-License-Identifier: GPL-2.0

//! SEND and RDMA WRITE requests: the receive WQE a message takes (or the RNR NAK without
//! one), where each packet's payload goes ([`Placement`]: at an offset of the receive WQE,
//! or at the next address of the WRITE's RETH range), the length checks against the
//! receive WQE and the RETH length, and the receive completion that ends a message
//! ([`RecvCompletion`]).

use super::super::super::aeth::{NakCode, Syndrome};
use super::super::super::opcode::{Op, OpInfo};
use super::super::WcStatus;
use super::ack::ack;
use super::{InMsg, Request, ResourceTable, RespOutcome, Responder};

/// Where the payload of an accepted request goes (`payload_len` bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Into the current receive WQE, at this byte offset of its scatter list.
    Recv {
        /// Byte offset.
        offset: u32,
    },
    /// Into remote-writable memory at `va`, checked against `rkey` (RDMA WRITE).
    Remote {
        /// Virtual address.
        va: u64,
        /// Remote key.
        rkey: u32,
    },
}

/// A receive work completion for the current receive WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvCompletion {
    /// Status.
    pub status: WcStatus,
    /// `byte_len`: bytes received (the RETH length for a WRITE with immediate).
    pub byte_len: u32,
    /// `IB_WC_RECV_RDMA_WITH_IMM` rather than `IB_WC_RECV`.
    pub rdma_with_imm: bool,
    /// Immediate data (`IB_WC_WITH_IMM`).
    pub imm: Option<u32>,
    /// Invalidated rkey (`IB_WC_WITH_INVALIDATE`): the caller invalidates it first.
    pub inv_rkey: Option<u32>,
    /// The BTH SE bit of the last packet (solicited event for the CQ).
    pub solicited: bool,
}

impl<R: ResourceTable> Responder<R> {
    /// Executes an accepted SEND or RDMA WRITE packet (PSN, sequence, access and length
    /// checked): takes a receive WQE if it needs one (RNR NAK without), says where its
    /// payload goes, advances the MSN at the end of a message and completes the receive WQE
    /// if the message ends it.
    pub(super) fn on_send_write(
        &mut self,
        req: &Request,
        info: &OpInfo,
        recv_len: Option<u32>,
    ) -> RespOutcome {
        let drop = RespOutcome::default();
        let len = req.payload_len;
        let mut out = drop;
        if info.consumes_rwqe() {
            let Some(cap) = recv_len else {
                return RespOutcome {
                    reply: Some(self.reply(req.psn, Syndrome::RnrNak(self.cfg.min_rnr_timer))),
                    ..drop
                };
            };
            out.begin_recv = true;
            self.recv_active = true;
            self.recv_off = 0;
            self.recv_cap = cap;
        }
        if info.op == Op::Send {
            let end = self
                .recv_off
                .checked_add(len)
                .filter(|&e| e <= self.recv_cap);
            let Some(end) = end else {
                let mut out = self.fail(req.psn, NakCode::InvalidRequest, WcStatus::LocLenErr);
                out.begin_recv |= info.consumes_rwqe();
                return out;
            };
            out.placement = Some(Placement::Recv {
                offset: self.recv_off,
            });
            self.recv_off = end;
        } else {
            if info.is_first() {
                let (va, rkey, dma_len) = req.reth.unwrap_or_default();
                self.write_va = va;
                self.write_rkey = rkey;
                self.write_left = dma_len;
                self.write_total = dma_len;
            }
            if len > self.write_left || (info.is_last() && len != self.write_left) {
                let mut out = self.fail(req.psn, NakCode::InvalidRequest, WcStatus::RemInvReqErr);
                out.begin_recv |= info.consumes_rwqe();
                return out;
            }
            if len != 0 {
                out.placement = Some(Placement::Remote {
                    va: self.write_va,
                    rkey: self.write_rkey,
                });
            }
            self.write_va = self.write_va.wrapping_add(u64::from(len));
            self.write_left = self.write_left.wrapping_sub(len);
        }
        self.prev_msn = self.msn;
        self.last_psn = req.psn;
        if info.is_last() {
            self.msn = self.msn.next();
            self.in_msg = InMsg::None;
        } else {
            self.in_msg = if info.op == Op::Send {
                InMsg::Send
            } else {
                InMsg::Write
            };
        }
        if info.completes_rwqe() {
            self.recv_active = false;
            out.complete = Some(RecvCompletion {
                status: WcStatus::Success,
                byte_len: if info.op == Op::Send {
                    self.recv_off
                } else {
                    self.write_total
                },
                rdma_with_imm: info.op == Op::Write,
                imm: req.imm,
                inv_rkey: req.inv_rkey,
                solicited: req.solicited,
            });
        }
        self.epsn = req.psn.next();
        if req.ack_req {
            out.reply = Some(self.reply(req.psn, ack()));
        }
        out
    }
}
