// SPDX-License-Identifier: GPL-2.0

//! Unreliable Connected (UC) mode of the responder (IBA 9.8.3): SEND and RDMA WRITE only,
//! without acknowledgments, retries or RNR NAKs, on top of the RC checks of
//! [`Responder::on_request`].

use super::super::super::opcode::Op;
use super::{InMsg, Request, ResourceTable, RespOutcome, Responder};

impl<R: ResourceTable> Responder<R> {
    /// Decides what to do with a request on an Unreliable Connected QP (IBA 9.8.3): no
    /// acknowledgments, no retries, no RNR NAKs. A PSN other than the expected one means
    /// packets were lost: the message in progress is abandoned (its receive WQE, if one was
    /// begun, is reused by the next SEND) and only a FIRST or ONLY packet starts the next
    /// one. A message for which no receive WQE is posted, or that breaks the rules a RC
    /// responder would NAK, is dropped; the QP stays up.
    pub fn on_uc_request(&mut self, req: &Request, recv_len: Option<u32>) -> RespOutcome {
        let drop = RespOutcome::default();
        let Some(info) = req.opcode.info() else {
            return drop;
        };
        if self.dead || !info.is_request() || !matches!(info.op, Op::Send | Op::Write) {
            return drop;
        }
        if req.psn != self.epsn || (info.is_first() && self.in_msg != InMsg::None) {
            self.in_msg = InMsg::None;
            self.recv_off = 0;
        }
        self.epsn = req.psn;
        if self.in_msg == InMsg::None && !info.is_first() {
            self.epsn = req.psn.next();
            return drop;
        }
        let reuse = info.consumes_rwqe() && self.recv_active;
        if info.consumes_rwqe() && !reuse && recv_len.is_none() {
            self.epsn = req.psn.next();
            return drop;
        }
        let mut out = self.on_request(req, if reuse { Some(self.recv_cap) } else { recv_len });
        let began = out.begin_recv && !reuse;
        if out.fatal {
            // What an RC responder NAKs drops the message here; a receive WQE it began is
            // kept for the next one.
            self.dead = false;
            self.in_msg = InMsg::None;
            self.recv_active = self.recv_active || began || out.complete.is_some();
            self.recv_off = 0;
            self.epsn = req.psn.next();
            return RespOutcome {
                begin_recv: began,
                ..drop
            };
        }
        out.begin_recv = began;
        out.reply = None;
        out
    }
}
