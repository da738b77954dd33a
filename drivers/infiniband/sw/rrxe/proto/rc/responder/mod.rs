// SPDX-License-Identifier: GPL-2.0

//! The RC responder: what to do with each incoming request packet (rxe_resp.c).
//!
//! [`Responder::on_request`] takes the header values of a request ([`Request`]) and the
//! size of the receive WQE at the head of the receive queue (if any), and returns a
//! [`RespOutcome`]: whether to start using that receive WQE, where the payload goes
//! ([`Placement`]), whether a receive WQE completes, which ACK/NAK to send ([`Reply`]), the
//! READ responses to send ([`ReadReply`]) or the atomic to carry out ([`AtomicExec`]), and
//! whether the QP must enter ERR. The checks run in the IBA order (9.7.4.1, rxe
//! `rxe_receiver()`):
//!
//! 1. PSN: a duplicate SEND or WRITE packet is not executed again but re-ACKed with its
//!    own PSN (C9-105; see `on_duplicate` for why not the last executed PSN, as rdma_rxe
//!    does); a duplicate READ is executed again
//!    from its PSN (C9-112) and a duplicate atomic answered from its saved result (C9-114),
//!    both from the responder resources; a PSN ahead of the expected one draws one NAK PSN
//!    sequence error carrying the expected PSN, and nothing more until the expected PSN
//!    arrives (C9-110..112).
//! 2. Opcode sequence: a MIDDLE or LAST without a FIRST, or a new message inside an
//!    unfinished one, is NAK invalid request (class C: the QP enters ERR).
//! 3. Opcode validity: RDMA WRITE and ATOMIC WRITE only with remote write access, RDMA READ
//!    with remote read access, atomics with remote atomic access, FLUSH with the flush
//!    access of each placement type it asks for; otherwise NAK invalid request, as is an
//!    atomic or ATOMIC WRITE at a misaligned address (C9-120, o19-28), an ATOMIC WRITE of
//!    other than 8 bytes, or a FLUSH of an unknown type or selectivity level.
//! 4. Resources: the first packet of a SEND, and a WRITE with immediate, need a receive
//!    WQE; without one the answer is an RNR NAK with the QP's `min_rnr_timer` and the packet
//!    is dropped (class B, the QP stays up). A READ, atomic, ATOMIC WRITE or FLUSH takes a
//!    responder resource, overwriting the oldest.
//! 5. Length: FIRST and MIDDLE packets carry exactly one MTU, LAST 1..=MTU, ONLY 0..=MTU
//!    (C9-92 and 9.7.2); a RETH length is at most 2^31 (C9-94); a WRITE's packets must add
//!    up to its RETH length; a SEND must fit its receive WQE (local length error).
//!
//! ACKs follow rxe: one for every packet with AckReq set (the requester decides how often,
//! which is where ACKs are coalesced), carrying that packet's PSN and the MSN after it.
//! The AETH credit field is "invalid" (no end-to-end flow control), as sent by rxe.
//!
//! This module holds the [`Responder`] state and the checks above; the rest is split by
//! concern, every public item re-exported here: `request` (the [`Request`] input),
//! `send_write` (SEND and RDMA WRITE execution and placement), `read` (RDMA READ),
//! `atomic` (atomics), `resources` (the responder resources), `ack` (ACK/NAK packets, fatal
//! errors and [`LocalError`]) and `uc` (the Unreliable Connected variant).

use super::super::aeth::{NakCode, RnrTimer, Syndrome};
use super::super::opcode::{Op, Position};
use super::super::psn::{Msn, Psn, PsnClass};
use super::{PathMtu, WcStatus, MAX_DMA_LEN};

mod ack;
mod atomic;
mod read;
mod request;
mod resources;
mod send_write;
mod touch;
mod uc;

pub use ack::{LocalError, Reply};
pub use atomic::{AtomicExec, AtomicOp, AtomicReply};
pub use read::ReadReply;
#[cfg(rrxe_host)]
pub use read::ReadResp;
#[cfg(rrxe_host)]
pub use request::AtomicReq;
pub use request::Request;
pub use resources::{Resource, ResourceTable, MAX_RESOURCES};
pub use send_write::{Placement, RecvCompletion};
pub use touch::Touches;

use ack::ack;

/// Per-connection parameters of a [`Responder`] (from `modify_qp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponderConfig {
    /// First expected PSN (`IB_QP_RQ_PSN`).
    pub rq_psn: Psn,
    /// Path MTU (`IB_QP_PATH_MTU`).
    pub mtu: PathMtu,
    /// RNR timer code sent in RNR NAKs (`IB_QP_MIN_RNR_TIMER`).
    pub min_rnr_timer: RnrTimer,
    /// `IB_ACCESS_REMOTE_WRITE` in the QP access flags.
    pub remote_write: bool,
    /// `IB_ACCESS_REMOTE_READ` in the QP access flags.
    pub remote_read: bool,
    /// `IB_ACCESS_REMOTE_ATOMIC` in the QP access flags.
    pub remote_atomic: bool,
    /// FLUSH placement types the QP grants: bit 0 (`IB_FLUSH_GLOBAL`) with
    /// `IB_ACCESS_FLUSH_GLOBAL`, bit 1 (`IB_FLUSH_PERSISTENT`) with
    /// `IB_ACCESS_FLUSH_PERSISTENT` in its access flags.
    pub flush_types: u8,
    /// READ and atomic requests remembered for duplicates (`IB_QP_MAX_DEST_RD_ATOMIC`, the
    /// responder resources; at most the responder's table, 0 is taken as 1).
    pub max_dest_rd_atomic: u32,
}

/// What to do for one request, in field order; [`RespOutcome::default`] means "drop it".
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RespOutcome {
    /// Make the receive queue head the current receive WQE (for an SRQ: dequeue it now).
    pub begin_recv: bool,
    /// Where the payload goes. If placing it fails, skip the rest and call
    /// [`Responder::on_local_error`].
    pub placement: Option<Placement>,
    /// Complete the current receive WQE and release it.
    pub complete: Option<RecvCompletion>,
    /// Send this acknowledge packet.
    pub reply: Option<Reply>,
    /// Send these READ responses (check `rkey` first: if that fails, call
    /// [`Responder::on_local_error`] with [`LocalError::RemoteAccess`] instead).
    pub read: Option<ReadReply>,
    /// Carry out this atomic (check `rkey` first, as for `read`).
    pub atomic: Option<AtomicExec>,
    /// Send this atomic ACKnowledge again (a duplicate atomic request).
    pub atomic_reply: Option<AtomicReply>,
    /// Move the QP to ERR (after the above).
    pub fatal: bool,
    /// The request was a duplicate (its PSN before the expected one), answered as one.
    pub duplicate: bool,
}

/// The message the responder is in the middle of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InMsg {
    None,
    Send,
    Write,
}

/// The receive side of an RC QP.
///
/// # Invariants
///
/// `recv_off <= recv_cap` while a receive WQE is current.
#[derive(Clone, Copy, Debug)]
pub struct Responder<R = [Resource; MAX_RESOURCES]> {
    cfg: ResponderConfig,
    /// Expected PSN.
    epsn: Psn,
    /// MSN: number of completed requests, modulo 2^24.
    msn: Msn,
    /// MSN before the last executed request (for a NAK after a failed placement).
    prev_msn: Msn,
    in_msg: InMsg,
    /// A NAK PSN sequence error was sent and the expected PSN has not arrived since.
    nak_sent: bool,
    /// A receive WQE is current.
    recv_active: bool,
    recv_off: u32,
    recv_cap: u32,
    write_va: u64,
    write_rkey: u32,
    write_left: u32,
    write_total: u32,
    dead: bool,
    /// PSN of the last request executed (for a NAK after a failed placement).
    last_psn: Psn,
    res: R,
    /// Next resource slot to use (oldest is overwritten first).
    res_next: usize,
}

#[cfg(any(rrxe_host, CONFIG_RDMA_RRXE_RUST_KUNIT_TEST))]
impl Responder {
    /// Creates a responder with [`MAX_RESOURCES`] responder resources, in its initial (RTR
    /// entry) state.
    pub fn new(cfg: ResponderConfig) -> Self {
        Self::with_table(cfg, [Resource::default(); MAX_RESOURCES])
    }
}

impl<R: ResourceTable> Responder<R> {
    /// Creates a responder that keeps its responder resources (READs and atomics remembered
    /// for duplicates, C9-112/C9-114) in `res`, in its initial (RTR entry) state.
    pub fn with_table(cfg: ResponderConfig, mut res: R) -> Self {
        res.slots_mut()
            .iter_mut()
            .for_each(|r| *r = Resource::default());
        Self {
            cfg,
            epsn: cfg.rq_psn,
            msn: Msn::default(),
            prev_msn: Msn::default(),
            in_msg: InMsg::None,
            nak_sent: false,
            recv_active: false,
            recv_off: 0,
            recv_cap: 0,
            write_va: 0,
            write_rkey: 0,
            write_left: 0,
            write_total: 0,
            dead: false,
            last_psn: cfg.rq_psn,
            res,
            res_next: 0,
        }
    }

    /// Returns to the initial state with a new configuration (modify to RESET, then RTR).
    pub fn reset(&mut self, cfg: ResponderConfig) {
        // In place: the resource table can be kilobytes, too much for a temporary on the
        // kernel stack.
        self.res
            .slots_mut()
            .iter_mut()
            .for_each(|r| *r = Resource::default());
        self.cfg = cfg;
        self.epsn = cfg.rq_psn;
        self.msn = Msn::default();
        self.prev_msn = Msn::default();
        self.in_msg = InMsg::None;
        self.nak_sent = false;
        self.recv_active = false;
        self.recv_off = 0;
        self.recv_cap = 0;
        self.write_va = 0;
        self.write_rkey = 0;
        self.write_left = 0;
        self.write_total = 0;
        self.dead = false;
        self.last_psn = cfg.rq_psn;
        self.res_next = 0;
    }

    /// Puts `res` in place of the resource table, which it returns, and returns to the
    /// initial state with `cfg` (modify to RTR with new responder resources).
    pub fn reset_with_table(&mut self, cfg: ResponderConfig, res: R) -> R {
        let old = core::mem::replace(&mut self.res, res);
        self.reset(cfg);
        old
    }

    /// Returns the next expected PSN.
    pub fn expected_psn(&self) -> Psn {
        self.epsn
    }

    /// Returns the current MSN.
    #[cfg(rrxe_host)]
    pub fn msn(&self) -> Msn {
        self.msn
    }

    /// Enters the error state (modify to ERR or a send-side fatal error). Returns `true` if a
    /// receive WQE is current: the caller completes it with [`WcStatus::WrFlushErr`] before
    /// flushing the rest of the receive queue.
    pub fn flush(&mut self) -> bool {
        self.dead = true;
        core::mem::replace(&mut self.recv_active, false)
    }

    /// Decides what to do with an incoming request.
    ///
    /// `recv_len` is the total length of the receive WQE at the head of the receive queue,
    /// or `None` if the queue is empty; it is only looked at when the request needs a new
    /// receive WQE.
    pub fn on_request(&mut self, req: &Request, recv_len: Option<u32>) -> RespOutcome {
        let drop = RespOutcome::default();
        let Some(info) = req.opcode.info() else {
            return drop;
        };
        if self.dead || !info.is_request() {
            return drop;
        }
        match req.psn.classify(self.epsn, 1 << 23) {
            PsnClass::Expected => self.nak_sent = false,
            PsnClass::Duplicate => {
                return RespOutcome {
                    duplicate: true,
                    ..self.on_duplicate(req, info.op)
                };
            }
            PsnClass::Ahead | PsnClass::TooFarAhead => {
                if self.nak_sent {
                    return drop;
                }
                self.nak_sent = true;
                return RespOutcome {
                    reply: Some(self.reply(self.epsn, Syndrome::Nak(NakCode::PsnSequenceError))),
                    ..drop
                };
            }
        }
        let len = req.payload_len;
        let mtu = self.cfg.mtu.bytes();
        let seq_ok = match (self.in_msg, info.position) {
            (InMsg::Send, Position::Middle | Position::Last) => info.op == Op::Send,
            (InMsg::Write, Position::Middle | Position::Last) => info.op == Op::Write,
            (InMsg::None, Position::First | Position::Only) => true,
            _ => false,
        };
        let op_ok = match info.op {
            Op::Send => true,
            Op::Write | Op::AtomicWrite => self.cfg.remote_write,
            Op::ReadRequest => self.cfg.remote_read,
            Op::CompareSwap | Op::FetchAdd => self.cfg.remote_atomic,
            // oA19-10: each placement type asked for must be granted.
            Op::Flush => req
                .flush
                .is_some_and(|(t, _)| t != 0 && t & !self.cfg.flush_types == 0),
            _ => false,
        };
        let len_ok = match info.position {
            Position::First | Position::Middle => len == mtu,
            Position::Last => len != 0 && len <= mtu,
            Position::Only => len <= mtu,
        } && req.reth.is_none_or(|(_, _, l)| l <= MAX_DMA_LEN);
        if !(seq_ok && op_ok && len_ok) {
            return self.fail(req.psn, NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        }
        match info.op {
            Op::ReadRequest => self.on_read(req),
            Op::CompareSwap | Op::FetchAdd | Op::AtomicWrite | Op::Flush => {
                self.on_atomic(req, info.op)
            }
            _ => self.on_send_write(req, info, recv_len),
        }
    }

    /// Answers a duplicate request (PSN before the expected one).
    fn on_duplicate(&self, req: &Request, op: Op) -> RespOutcome {
        match op {
            // C9-105: a duplicate SEND/WRITE is not executed again but acknowledged, with
            // its own PSN (everything up to the last executed PSN has been, so any PSN in
            // between is a true cumulative ACK). Not with the last executed PSN, as
            // rdma_rxe's responder does: its completer takes an ACK for a WQE's last PSN
            // that arrives while its requester is still resending the WQE's earlier
            // packets by moving its completion PSN past the WQE, and then either
            // completes the WQE under the requester at the next such ACK (which then
            // never sends the next WQE: the 64 KiB ibv_rc_pingpong stall with rdma_rxe as
            // the requester, after the ACK of a message's last packet was lost) or, if
            // that ACK is lost too, never retries the WQE. With its own PSN, the ACK for a
            // WQE's last PSN answers only its last packet, once it is out.
            Op::Send | Op::Write => RespOutcome {
                reply: Some(self.reply(req.psn, ack())),
                ..RespOutcome::default()
            },
            // READs and atomics are replayed from the responder resources.
            Op::ReadRequest => self.replay_read(req),
            Op::CompareSwap | Op::FetchAdd | Op::AtomicWrite | Op::Flush => self.replay_atomic(req),
            _ => RespOutcome::default(),
        }
    }
}
