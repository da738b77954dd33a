// SPDX-License-Identifier: GPL-2.0

//! The requester of a connected QP (RC, UC): send WQEs from the ring into the wire core's
//! [`Sender`], request packets out, responses in.
//!
//! A send WQE is copied once out of its work queue into the shadow ring
//! ([`Shadow`](super::shadow::Shadow), `shadow.rs`):
//! validated there if it came from a user's ring, already checked if a kernel consumer
//! posted it (`wq.rs`). With every local key it names resolved, it is posted to the sender
//! under its shadow slot number; from then on only the copy is read: to build each request
//! packet (and each retransmission), to place READ data and atomic results, and to complete
//! it. The sender decides what to transmit (its window, go-back-N, the RNR wait) and which
//! WQEs complete; [`QpShared::drain_actions`] carries out what it asks for.
//!
//! Local operations (fast registration, local invalidation) take no PSN: the sender hands
//! each out when it reaches it in send queue order ([`Sender::next_local`]), and it is
//! carried out here, through the device's key table, before anything after it is sent.
//!
//! [`Sender::next_local`]: crate::proto::rc::Sender::next_local
//!
//! A UC QP's sender runs in its UC mode ([`Transport::Uc`], chosen by `sender_config()`):
//! it emits the UC opcodes without AckReq, completes a WQE once its last packet is handed
//! out, never asks for the retransmit timer and refuses READ and atomics; this file treats
//! both transports alike.
//!
//! [`Transport::Uc`]: crate::proto::rc::Transport::Uc

use super::{
    cc::PACED_HDR_BYTES, replies::TX_WAIT_US, shadow::Shadow, xmit::PKEY, Engine, Events, QpShared,
};
use super::{Local, REWIND_WAIT, SQ_SLOTS};
use crate::budget::Budget;
use crate::counters::PortCounter;
use crate::mem::Need;
use crate::mem::{BindRequest, Key};
use crate::odp::{Resume, FAULT_AHEAD};
use crate::proto::{
    aeth::{NakCode, Syndrome},
    opcode::QpType as WireQpType,
    packet::Packet,
    psn::Psn,
    rc::{Deliver, PostedWqe, Response, SendAction, Sender, TxPacket, WcStatus, WqeHeaders},
    uabi::{SendData, SendFlags, SendOp, SendQueueParams, SendQueueState, WrOpcode},
};
use kernel::prelude::*;
use kernel::rdma::trace::{self, RetryCause};
use kernel::sync::atomic::ordering::Relaxed;

/// The requester's side of a QP: what only the requester (and the send completions)
/// reads and writes.
pub(super) struct ReqSide {
    /// Boxed: it is a few kilobytes, too much to move around on the kernel stack.
    pub(super) sender: KBox<Sender<SQ_SLOTS>>,
    /// Kernel indices of the send queue.
    pub(super) sqs: SendQueueState,
    /// The checks a send WQE passes.
    pub(super) params: SendQueueParams,
    /// Copies of the send WQEs in flight.
    pub(super) shadow: Shadow,
    /// A posted WQE failed validation: completed with this status once the WQEs before it
    /// are, then the QP enters ERR.
    pub(super) error: Option<WcStatus>,
    /// In SQD, the send queue is not drained yet: `IB_EVENT_SQ_DRAINED` is due once it is
    /// (and `sq_draining` reads true).
    pub(super) drain_due: bool,
    /// Local ACK timeout in microseconds, if any.
    pub(super) timeout_us: Option<u32>,
    /// UD: PSN of the next datagram.
    pub(super) ud_psn: Psn,
}

/// Why a request packet was not sent.
enum NotSent {
    /// Its payload could not be read from the WQE's local memory (not `EAGAIN`: on-demand
    /// paging memory not present is faulted in).
    Unreadable,
    /// Building or transmitting it failed (the packet is lost, or waits: `EAGAIN`,
    /// `ENOBUFS`).
    Tx(Error),
}

impl From<Error> for NotSent {
    fn from(e: Error) -> Self {
        Self::Tx(e)
    }
}

impl QpShared {
    /// Moves posted WQEs into the sender, transmits what it allows and carries out its
    /// actions, until nothing is left to do.
    pub(super) fn pump(&self, e: &mut Engine, ev: &mut Events) {
        if self.qp_type == WireQpType::Ud {
            self.pump_ud(e, ev);
            return;
        }
        self.fill_sender(e);
        // At most a run's budget of packets and local operations (a UC sender's window does
        // not bound them: a packet handed out is done); the QP's BH work carries on.
        let mut budget = Budget::run();
        loop {
            if !budget.take() {
                self.kick.queue(self);
                break;
            }
            // A local operation the sender reached is carried out here, in send queue order.
            if let Some((id, op)) = e.req.sender.next_local() {
                let ok = self.run_local(e, id, op).is_ok();
                if !ok {
                    self.stats(e).inc(PortCounter::LocalOpErrors);
                }
                e.req.sender.local_done(id, ok);
                continue;
            }
            // A QP that CNPs slowed down waits for its rate (`tx_wait` resumes it).
            if let Some(us) = self.pace_wait(e) {
                self.tx_wait.arm_after_us(self, us);
                break;
            }
            let Some(p) = e.req.sender.next_packet() else {
                break;
            };
            let sent = match self.send_request(e, &p) {
                Ok(()) => Ok(()),
                Err(NotSent::Tx(err)) => Err(err),
                Err(NotSent::Unreadable) => {
                    // Not a lost packet: its WQE completes with a local protection error
                    // once the WQEs before it have, and nothing from it on is sent.
                    self.stats(e).inc(PortCounter::LocalOpErrors);
                    e.req.sender.payload_failed(&p);
                    continue;
                }
            };
            if sent == Err(EAGAIN) && self.fault_payload(e, &p) && e.req.sender.unsend(&p) {
                // Its payload is on-demand paging memory not present: the packet waits, and
                // the QP with it, for the fault work, which resumes the QP.
                break;
            }
            if sent == Err(ENOBUFS) && e.req.sender.unsend(&p) {
                // The transmit queue is full: the packet waits, and the QP with it, for
                // `tx_wait` (not the retransmit timer: nothing was lost).
                self.stats(e).inc(PortCounter::TxPaused);
                self.tx_wait.arm_after_us(self, TX_WAIT_US);
                break;
            }
            // Any other failure loses the packet: the retransmit timer recovers it (RC).
            self.count_sent(e, sent, p.retransmit);
            self.paced(e, p.len.saturating_add(PACED_HDR_BYTES));
        }
        self.drain_actions(e, ev);
        if e.req.error.is_some() && e.req.sender.is_idle() {
            self.fail_sq_head(e, ev);
        }
    }

    /// Puts a validated copy of the next posted, not started send WQE in shadow slot `id`;
    /// returns the producer index it was read under, `None` if there is none, or the status
    /// the WQE completes with: that of a WQE that does not validate, or of a corrupt ring
    /// (an impossible producer index, an unreadable slot).
    pub(super) fn load_next_wqe(
        &self,
        e: &mut Engine,
        id: u32,
    ) -> core::result::Result<Option<u32>, WcStatus> {
        let Ok(prod) = self.sq_producer(e) else {
            return Ok(None);
        };
        let slot = match e.req.sqs.next_to_start(prod) {
            Ok(Some(slot)) => slot,
            Ok(None) => return Ok(None),
            Err(_) => return Err(WcStatus::LocQpOpErr),
        };
        self.load_send(e, &slot, id)?;
        Ok(Some(prod))
    }

    /// Copies, validates and posts the WQEs the consumer added to the send queue.
    fn fill_sender(&self, e: &mut Engine) {
        while e.req.error.is_none()
            && e.req.sender.has_room()
            && e.req.sender.wqes() < e.req.shadow.slots()
        {
            let id = e.req.shadow.next_slot();
            let prod = match self.load_next_wqe(e, id) {
                Ok(Some(prod)) => prod,
                Ok(None) => return,
                Err(status) => {
                    qp_dbg!(self, "send queue entry unusable: {:?}\n", status);
                    e.req.error = Some(status);
                    return;
                }
            };
            let wqe = match self.check_send_wqe(e, id) {
                Ok(w) => w,
                Err(status) => {
                    qp_dbg!(self, "send work request refused: {:?}\n", status);
                    e.req.error = Some(status);
                    return;
                }
            };
            if e.req.sender.post(PostedWqe { id, ..wqe }).is_err() {
                e.req.error = Some(WcStatus::LocQpOpErr);
                return;
            }
            if e.req.sqs.mark_started(prod).is_err() {
                e.req.error = Some(WcStatus::LocQpOpErr);
                return;
            }
            e.req.shadow.advance();
        }
    }

    /// Checks every local key the validated send WQE in shadow slot `id` names; returns what
    /// the sender needs of it.
    fn check_send_wqe(&self, e: &Engine, id: u32) -> core::result::Result<PostedWqe, WcStatus> {
        let wqe = e.req.shadow.wqe(id).ok_or(WcStatus::LocQpOpErr)?;
        let op = wqe.opcode();
        // READ and atomic results are written into the local buffers.
        let need = if op.is_read_or_atomic() {
            Need::LocalWrite
        } else {
            Need::LocalRead
        };
        let len = match op {
            WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd | WrOpcode::AtomicWrite => 8,
            _ => wqe.length(),
        };
        if let SendData::Sges(list) = wqe.data() {
            let sges = Local::new(list, e.req.shadow.posted(id));
            let n = usize::try_from(len).map_err(|_| WcStatus::LocLenErr)?;
            self.check_sges(sges, n, need)
                .map_err(|_| WcStatus::LocProtErr)?;
            if self.dev.faults.any() {
                // On-demand paging memory not present is faulted in ahead: the payload
                // before the first packet needs it, a READ's or atomic's destination before
                // the responses come back.
                self.ensure_sges_present(sges.list(), 0, n.min(FAULT_AHEAD), need, None);
            }
        }
        Ok(PostedWqe {
            id: 0,
            op,
            len,
            solicited: wqe.flags().contains(SendFlags::SOLICITED),
            fence: wqe.flags().contains(SendFlags::FENCE),
        })
    }

    /// Carries out the local operation whose copy is shadow slot `id`: a fast registration,
    /// a local invalidation or a memory window bind.
    fn run_local(&self, e: &Engine, id: u32, op: WrOpcode) -> Result {
        let wqe = e.req.shadow.wqe(id).ok_or(EINVAL)?;
        match (op, *wqe.op()) {
            (WrOpcode::RegMr, SendOp::RegMr { key, access }) => {
                self.fast_register(Key::from_raw(key), access)
            }
            (WrOpcode::LocalInv, SendOp::LocalInv { rkey }) => self.invalidate(Key::from_raw(rkey)),
            (WrOpcode::BindMw, SendOp::BindMw(f)) => self.bind_mw(&BindRequest {
                mr_lkey: Key::from_raw(f.mr_lkey),
                mw_rkey: Key::from_raw(f.mw_rkey),
                rkey: Key::from_raw(f.rkey),
                addr: f.addr,
                length: f.length,
                access: f.access,
            }),
            _ => Err(EINVAL),
        }
    }

    /// Builds and transmits one request packet of a WQE in flight.
    fn send_request(&self, e: &mut Engine, p: &TxPacket) -> Result<(), NotSent> {
        let id = e.tx.next_ip_id();
        let wqe = e.req.shadow.wqe(p.id).ok_or(EINVAL)?;
        let hdrs = match *wqe.op() {
            SendOp::Send {
                imm,
                invalidate_rkey,
                ..
            } => WqeHeaders {
                imm_or_inv: imm.or(invalidate_rkey).unwrap_or(0),
                ..WqeHeaders::default()
            },
            SendOp::Write { remote, imm } => WqeHeaders {
                remote_va: remote.addr,
                rkey: remote.rkey,
                imm_or_inv: imm.unwrap_or(0),
                ..WqeHeaders::default()
            },
            SendOp::Read { remote } => WqeHeaders {
                remote_va: remote.addr,
                rkey: remote.rkey,
                ..WqeHeaders::default()
            },
            SendOp::CompareSwap {
                remote,
                compare,
                swap,
            } => WqeHeaders {
                remote_va: remote.addr,
                rkey: remote.rkey,
                swap_add: swap,
                compare,
                ..WqeHeaders::default()
            },
            SendOp::FetchAdd { remote, add } => WqeHeaders {
                remote_va: remote.addr,
                rkey: remote.rkey,
                swap_add: add,
                ..WqeHeaders::default()
            },
            SendOp::AtomicWrite { remote, .. } => WqeHeaders {
                remote_va: remote.addr,
                rkey: remote.rkey,
                ..WqeHeaders::default()
            },
            SendOp::Flush {
                remote,
                placement_type,
                level,
            } => WqeHeaders {
                remote_va: remote.addr,
                rkey: remote.rkey,
                flush_type: placement_type,
                flush_level: level,
                ..WqeHeaders::default()
            },
            _ => return Err(NotSent::Tx(EINVAL)),
        };
        let spec = p.spec(e.tx.dest_qpn, PKEY, &hdrs, &[]);
        let len = usize::try_from(p.len).map_err(|_| EINVAL)?;
        let operand = match *wqe.op() {
            SendOp::AtomicWrite { value, .. } => Some(value),
            _ => None,
        };
        let mut unreadable = false;
        let sent = self.xmit(&mut e.tx.routes, &e.tx.av, id, &spec, len, |out| {
            let read = match (operand, wqe.data()) {
                // The ATOMIC WRITE operand travels as the payload, from the WQE itself.
                (Some(value), _) => {
                    out.copy_from_slice(value.get(..out.len()).ok_or(EINVAL)?);
                    Ok(())
                }
                (None, SendData::Inline(bytes)) => {
                    let start = usize::try_from(p.offset)?;
                    let src = start
                        .checked_add(out.len())
                        .and_then(|end| bytes.get(start..end))
                        .ok_or(EINVAL)?;
                    out.copy_from_slice(src);
                    Ok(())
                }
                (None, SendData::Sges(list)) => {
                    self.gather(Local::new(list, e.req.shadow.posted(p.id)), p.offset, out)
                }
                (None, SendData::None) => Ok(()),
            };
            // On-demand paging memory not present (`EAGAIN`) is faulted in; anything else is
            // the WQE's local memory refusing the read.
            unreadable = read.as_ref().is_err_and(|e| *e != EAGAIN);
            read
        });
        if unreadable {
            Err(NotSent::Unreadable)
        } else {
            sent.map_err(NotSent::Tx)
        }
    }

    /// Carries out what the sender asks for: completions, timers, the error state.
    pub(super) fn drain_actions(&self, e: &mut Engine, ev: &mut Events) {
        while let Some(a) = e.req.sender.poll() {
            match a {
                SendAction::Complete(c) => self.complete_send(e, ev, c.id, c.status),
                SendAction::ArmRetransmitTimer => {
                    if let Some(us) = e.req.timeout_us {
                        // Doubled after each expiry without progress (see the completer).
                        self.rto
                            .arm_after_us(self, us.saturating_mul(e.req.sender.rto_multiplier()));
                    }
                }
                SendAction::StopRetransmitTimer => self.rto.stop(),
                SendAction::ArmRnrTimer(t) => self.rnr.arm_after_us(self, t.micros()),
                SendAction::EnterError => {
                    self.enter_error(e, ev, c"a send work request completed in error")
                }
            }
        }
        self.check_sq_drained(e, ev);
    }

    /// Raises `IB_EVENT_SQ_DRAINED` once the send queue drained after the QP entered SQD.
    pub(super) fn check_sq_drained(&self, e: &mut Engine, ev: &mut Events) {
        // A UD QP's sends are done once handed out: it drains at once.
        if e.req.drain_due && (self.qp_type == WireQpType::Ud || e.req.sender.sq_drained()) {
            e.req.drain_due = false;
            ev.sq_drained = true;
        }
    }

    /// Takes a response (ACK, NAK, READ response, atomic ACK) for the requester.
    pub(super) fn on_response(&self, e: &mut Engine, ev: &mut Events, pkt: &Packet<'_>) -> bool {
        if !e.state().accepts_responses() {
            return false;
        }
        let Some(r) = Response::from_packet(pkt) else {
            return false;
        };
        if !matches!(r.syndrome, Syndrome::Ack(_)) {
            trace::nak_received(self.dev_name(), self.qpn, r.psn.get(), r.syndrome.encode());
        }
        match r.syndrome {
            Syndrome::RnrNak(_) => self.stats(e).inc(PortCounter::RcvdRnrNaks),
            Syndrome::Nak(NakCode::PsnSequenceError) => {
                self.stats(e).inc(PortCounter::RcvdSeqNaks);
                // The requester goes back to the NAK's PSN.
                self.go_back(e, r.psn.get(), RetryCause::SequenceNak);
            }
            _ => {}
        }
        let deliver = e.req.sender.check_response(&r);
        let placed = match deliver {
            Some(Deliver::ReadData { id, offset }) => self.place_local(e, id, offset, pkt.payload),
            Some(Deliver::AtomicOrig { id, orig }) => {
                self.place_local(e, id, 0, &orig.to_ne_bytes())
            }
            None => Ok(()),
        };
        match placed {
            Ok(()) => e.req.sender.on_response(&r),
            Err(err) if err == EAGAIN && self.fault_destination(e, deliver) => {
                // The destination is on-demand paging memory not present: the response is
                // dropped as a lost one while it is faulted in, and the retransmission
                // brings it again.
            }
            Err(_) => e.req.sender.on_local_error(&r, WcStatus::LocProtErr),
        }
        self.pump(e, ev);
        true
    }

    /// Asks for the payload of request packet `p` (and what follows it in its WQE, up to
    /// [`FAULT_AHEAD`]) to be faulted in, resuming the QP then; `false` if it is not
    /// on-demand paging memory that can be.
    fn fault_payload(&self, e: &Engine, p: &TxPacket) -> bool {
        let Some(wqe) = e.req.shadow.wqe(p.id) else {
            return false;
        };
        let SendData::Sges(sges) = wqe.data() else {
            return false;
        };
        let left = usize::try_from(wqe.length().saturating_sub(p.offset)).unwrap_or(0);
        !self.ensure_sges_present(
            sges,
            p.offset,
            left.min(FAULT_AHEAD),
            Need::LocalRead,
            Some(Resume::Continue),
        )
    }

    /// Asks for the rest of the local buffers of a READ or atomic (from the response being
    /// delivered on) to be faulted in for writing; `false` if they are not on-demand paging
    /// memory that can be.
    fn fault_destination(&self, e: &Engine, deliver: Option<Deliver>) -> bool {
        let (id, offset) = match deliver {
            Some(Deliver::ReadData { id, offset }) => (id, offset),
            Some(Deliver::AtomicOrig { id, .. }) => (id, 0),
            None => return false,
        };
        let Some(wqe) = e.req.shadow.wqe(id) else {
            return false;
        };
        let SendData::Sges(sges) = wqe.data() else {
            return false;
        };
        let left = usize::try_from(wqe.length().saturating_sub(offset)).unwrap_or(0);
        let len = if matches!(deliver, Some(Deliver::AtomicOrig { .. })) {
            8
        } else {
            left.min(FAULT_AHEAD)
        };
        // One fault at a time: the responses after this one are dropped too, and the
        // requester goes back once it is resolved.
        if self.rewind.cmpxchg(0, REWIND_WAIT, Relaxed).is_err() {
            return true;
        }
        if !self.ensure_sges_present(sges, offset, len, Need::LocalWrite, Some(Resume::Rewind)) {
            return true;
        }
        if self.sges_present(sges, offset, len, Need::LocalWrite) {
            // The pages came in between the copy and this check (on another CPU, the fault
            // asked for when the WQE was posted): the response is dropped all the same, and
            // the requester goes back at once.
            self.resume_soon(true);
            return true;
        }
        self.rewind.store(0, Relaxed);
        false
    }

    /// Writes READ data or an atomic's original value into the local buffers of the send
    /// WQE whose copy is shadow slot `id`.
    fn place_local(&self, e: &Engine, id: u32, offset: u32, data: &[u8]) -> Result {
        let sges = e.req.shadow.local(id).ok_or(EINVAL)?;
        self.scatter_sges(sges, offset, data)
    }
}
