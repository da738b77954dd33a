// SPDX-License-Identifier: GPL-2.0

//! The responder of a connected QP (RC, UC): requests in, the wire core's [`Responder`]
//! deciding, payloads placed, READ responses, atomic ACKs and ACK/NAKs out.
//!
//! For each request the responder says where its payload goes ([`Placement`]), what to
//! complete, what to answer and whether the QP fails; this file carries that out. A receive
//! WQE is copied out of the ring and validated ([`QpShared::peek_recv`]) before the
//! responder decides on it, and becomes the current one (`rwqe`) when a message starts in
//! it. Remote accesses resolve their rkey for the whole range first: the first packet of an
//! RDMA WRITE for the RETH's whole length (so that a WRITE running past its region writes
//! nothing at all), a READ for the whole range it asks for, an atomic for its 8 bytes; a
//! zero-length WRITE or READ names no memory and its rkey is not checked (C9-88).
//!
//! [`Responder`]: crate::proto::rc::Responder

use super::{replies::ReplyQueue, state::ResTable, Engine, Events, QpShared, RecvCopy};
use crate::counters::PortCounter;
use crate::mem::{Key, Need};
use crate::odp::FAULT_AHEAD;
use crate::proto::{
    aeth::{NakCode, Syndrome},
    opcode::QpType as WireQpType,
    packet::Packet,
    rc::{
        responder::LocalError, AtomicExec, AtomicOp, Placement, Request, RespOutcome, Responder,
        Touches,
    },
    uabi::{KernelConsumer, RecvQueueParams},
};
use kernel::prelude::*;
use kernel::sync::barrier;

/// The responder's side of a QP: what only the responder (and the receive completions)
/// reads and writes.
pub(super) struct RespSide {
    /// Boxed, as the sender: its table of responder resources is kilobytes.
    pub(super) responder: KBox<Responder<ResTable>>,
    /// The responder's responses not sent yet.
    pub(super) replies: ReplyQueue,
    /// Kernel consumer of the receive queue (`None` without one).
    pub(super) rqc: Option<KernelConsumer>,
    /// The checks a receive WQE passes.
    pub(super) params: RecvQueueParams,
    /// Copy of the receive WQE being filled.
    pub(super) rwqe: RecvCopy,
    /// Copy of the receive queue's head, while the responder decides on it.
    pub(super) stage: RecvCopy,
    /// `stage` holds a WQE taken from the SRQ (it belongs to this QP now) that no request
    /// began with yet.
    pub(super) stage_taken: bool,
    /// `IB_EVENT_QP_LAST_WQE_REACHED` was raised since the QP last left RESET.
    pub(super) last_wqe_told: bool,
    /// UD: a datagram received while the head receive WQE's memory was not present (on-
    /// demand paging), placed once the fault work resumes the QP.
    pub(super) parked: Option<super::ud::Parked>,
}

impl QpShared {
    /// Takes a request (SEND, WRITE, READ, atomic) for the responder.
    pub(super) fn on_request(&self, e: &mut Engine, ev: &mut Events, pkt: &Packet<'_>) -> bool {
        if !e.state().accepts_requests() {
            return false;
        }
        let req = Request::from_packet(pkt);
        let consumes = pkt.opcode().info().is_some_and(|i| i.consumes_rwqe());
        let mut prod = 0;
        let recv_len = if consumes {
            match self.peek_recv(e, ev) {
                Ok(Some((len, p))) => {
                    prod = p;
                    Some(len)
                }
                Ok(None) => None,
                Err(()) => {
                    self.enter_error(e, ev, c"the receive queue's ring is corrupt");
                    return false;
                }
            }
        } else {
            None
        };
        if self.qp_type == WireQpType::Rc
            && self.dev.faults.any()
            && !self.target_present(e, &req, recv_len.is_some())
        {
            // A page fault (on-demand paging): refused for now with an RNR NAK, as an RNIC
            // does, while the pages are faulted in; the request keeps its PSN expected.
            let reply = e.res.responder.rnr_nak(&req);
            self.stats(e).inc(PortCounter::SentRnrNaks);
            self.reply_ack(e, reply);
            return true;
        }
        let out = if self.qp_type == WireQpType::Uc {
            e.res.responder.on_uc_request(&req, recv_len)
        } else {
            e.res.responder.on_request(&req, recv_len)
        };
        match out.reply.map(|r| r.syndrome) {
            Some(Syndrome::RnrNak(_)) => self.stats(e).inc(PortCounter::SentRnrNaks),
            Some(Syndrome::Nak(NakCode::PsnSequenceError)) => {
                self.stats(e).inc(PortCounter::OutOfSeqRequests)
            }
            _ => {}
        }
        if out.duplicate {
            self.stats(e).inc(PortCounter::DuplicateRequests);
        }
        if out.begin_recv {
            // The head was validated into `stage`; it becomes the current receive WQE.
            core::mem::swap(&mut e.res.rwqe, &mut e.res.stage);
            e.res.stage_taken = false;
            if let Some(Ok(p)) = e.res.rqc.as_mut().map(|c| c.advance(prod)) {
                self.rq_publish(e, p);
            }
        }
        let placed = match out.placement {
            None => Ok(()),
            Some(Placement::Recv { offset }) => self
                .scatter(e, offset, pkt.payload)
                .map_err(|_| LocalError::RecvProtection),
            Some(Placement::Remote { va, rkey }) => {
                let rkey = Key::from_raw(rkey);
                // The first packet of a WRITE (with its RETH) resolves the whole message's
                // range, the others their own payload's.
                let payload = u32::try_from(pkt.payload.len()).unwrap_or(u32::MAX);
                let len = req.reth.map_or(payload, |(_, _, len)| len.max(payload));
                self.resolve(rkey, va, len, Need::RemoteWrite)
                    .and_then(|mem| mem.write(0, pkt.payload))
                    .map_err(|_| self.access_error(ev, rkey, va, len, Need::RemoteWrite))
            }
        };
        // A SEND with invalidate frees the fast-registered region its rkey names, in this
        // QP's PD, before its receive completes; an rkey that names no such region (a user
        // region, another PD, a stale key) is an invalid request, as rdma_rxe answers.
        let placed = match (placed, out.complete.and_then(|c| c.inv_rkey)) {
            (Ok(()), Some(rkey)) => self.invalidate(Key::from_raw(rkey)).map_err(|_| {
                self.stats(e).inc(PortCounter::BadInvalidates);
                LocalError::BadInvalidate
            }),
            (p, _) => p,
        };
        let out = match placed {
            Ok(()) => out,
            Err(le) => e.res.responder.on_local_error(le),
        };
        if let Some(rd) = out.read {
            if self.reply_read(e, rd).is_err() {
                let le =
                    self.access_error(ev, Key::from_raw(rd.rkey), rd.va, rd.len, Need::RemoteRead);
                let out = e.res.responder.on_local_error(le);
                self.finish_request(e, ev, &out);
                return true;
            }
        }
        if let Some(a) = out.atomic {
            match self.execute_atomic(&a) {
                Ok(orig) => {
                    let reply = e.res.responder.atomic_done(orig);
                    self.reply_atomic(e, reply);
                }
                Err(_) => {
                    let need = match a.op {
                        AtomicOp::Write { .. } => Need::RemoteWrite,
                        _ => Need::RemoteAtomic,
                    };
                    let le = self.access_error(ev, Key::from_raw(a.rkey), a.va, 8, need);
                    let out = e.res.responder.on_local_error(le);
                    self.finish_request(e, ev, &out);
                    return true;
                }
            }
        }
        if let Some(reply) = out.atomic_reply {
            self.reply_atomic(e, reply);
        }
        self.finish_request(e, ev, &out);
        true
    }

    /// Returns whether the memory `req` would write if accepted now is present (always
    /// but for on-demand paging memory); if not, asks for it to be faulted in. `staged`:
    /// the head of the receive queue is in `stage`.
    fn target_present(&self, e: &Engine, req: &Request, staged: bool) -> bool {
        match e.res.responder.touches(req) {
            None => true,
            Some(Touches::Recv { offset, len, fresh }) => {
                let w = match (fresh, staged) {
                    (false, _) => e.res.rwqe.wqe(),
                    (true, true) => e.res.stage.wqe(),
                    // No receive WQE: the responder answers with an RNR NAK anyway.
                    (true, false) => None,
                };
                let (Some(w), Ok(len)) = (w, usize::try_from(len)) else {
                    return true;
                };
                // The rest of the receive buffer comes in with the first fault: a long
                // message's next packets are not refused one page at a time.
                self.sges_present(w.sges(), offset, len, Need::LocalWrite)
                    || self.ensure_sges_present(
                        w.sges(),
                        offset,
                        len.max(FAULT_AHEAD),
                        Need::LocalWrite,
                        None,
                    )
            }
            Some(Touches::Remote {
                va,
                rkey,
                len,
                left,
                atomic,
            }) => {
                let need = if atomic {
                    Need::RemoteAtomic
                } else {
                    Need::RemoteWrite
                };
                self.ensure_present_ahead(Key::from_raw(rkey), va, len, left, need, None)
            }
        }
    }

    /// A request from the peer violated an access right (its rkey, range or rights) for
    /// `need` of the `len` bytes at `va` through `rkey`: the responder's error, and, on an
    /// RC QP, `IB_EVENT_QP_ACCESS_ERR` for the QP's owner.
    fn access_error(
        &self,
        ev: &mut Events,
        rkey: Key,
        va: u64,
        len: u32,
        need: Need,
    ) -> LocalError {
        qp_dbg!(
            self,
            "rkey {:#x} refused for {:?} of {} bytes at {:#x}: {}\n",
            rkey.raw(),
            need,
            len,
            va,
            self.refusal(rkey, va, len, need)
        );
        if self.qp_type == WireQpType::Rc {
            ev.access_err = true;
        }
        LocalError::RemoteAccess
    }

    /// Carries out an atomic from the wire on the 8 bytes its rkey names; returns the
    /// original value. An ATOMIC WRITE needs remote write access and reads nothing; a FLUSH
    /// needs the flush right over its range (or its whole region) and changes nothing.
    fn execute_atomic(&self, a: &AtomicExec) -> Result<u64> {
        if let AtomicOp::Flush {
            len, whole_region, ..
        } = a.op
        {
            // Only the global visibility type is ever granted (no region can be registered
            // for persistence): what this CPU wrote into the region is made visible before
            // the acknowledgment goes out, as rdma_rxe's wmb().
            self.check_flush(Key::from_raw(a.rkey), a.va, len, whole_region)?;
            barrier::mb(barrier::Write);
            return Ok(0);
        }
        if let AtomicOp::Write { value } = a.op {
            let mem = self.resolve(Key::from_raw(a.rkey), a.va, 8, Need::RemoteWrite)?;
            let _guard = self.dev.atomic_lock.lock();
            mem.write(0, &value.to_ne_bytes())?;
            return Ok(0);
        }
        let mem = self.resolve(Key::from_raw(a.rkey), a.va, 8, Need::RemoteAtomic)?;
        let _guard = self.dev.atomic_lock.lock();
        let mut word = [0u8; 8];
        mem.read(0, &mut word)?;
        let orig = u64::from_ne_bytes(word);
        mem.write(0, &a.op.apply(orig).to_ne_bytes())?;
        Ok(orig)
    }

    /// Carries out the completion, reply and error of a responder outcome.
    fn finish_request(&self, e: &mut Engine, ev: &mut Events, out: &RespOutcome) {
        if let Some(rc) = out.complete {
            self.complete_recv(e, ev, &rc);
        }
        if let Some(reply) = out.reply {
            self.reply_ack(e, reply);
        }
        if out.fatal {
            self.enter_error(e, ev, c"the responder failed a request");
        }
    }

    /// Puts a validated copy of the receive queue's head in `stage`: `Ok(None)` if the queue
    /// is empty, else its length and the producer index it was read under. `Err` if the
    /// queue or the WQE is corrupt (the QP enters ERR).
    ///
    /// With an SRQ, the head is dequeued into `stage` at once (other QPs take from the same
    /// queue) and stays there, this QP's, until a request begins with it.
    pub(super) fn peek_recv(
        &self,
        e: &mut Engine,
        ev: &mut Events,
    ) -> core::result::Result<Option<(u32, u32)>, ()> {
        if let Some(srq) = &self.srq {
            if e.res.stage_taken {
                return e.res.stage.wqe().map(|w| Some((w.length(), 0))).ok_or(());
            }
            return match srq.queue.take(&mut e.res.stage) {
                Ok(Some(t)) => {
                    e.res.stage_taken = true;
                    ev.srq_limit |= t.limit_reached;
                    Ok(Some((t.len, 0)))
                }
                Ok(None) => Ok(None),
                Err(_) => Err(()),
            };
        }
        let Some(rqc) = &e.res.rqc else {
            return Ok(None);
        };
        let prod = self.rq_producer(e).map_err(|_| ())?;
        let Some(slot) = rqc.head(prod).map_err(|_| ())? else {
            return Ok(None);
        };
        let len = self.load_recv(e, &slot).map_err(|_| ())?;
        Ok(Some((len, prod)))
    }

    /// Scatters `data` into the current receive WQE at byte `offset`.
    pub(super) fn scatter(&self, e: &Engine, offset: u32, data: &[u8]) -> Result {
        self.scatter_sges(e.res.rwqe.local().ok_or(EINVAL)?, offset, data)
    }
}
