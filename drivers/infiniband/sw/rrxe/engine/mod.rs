// SPDX-License-Identifier: GPL-2.0

//! The data path of a queue pair: the wire core's transport state machines
//! ([`crate::proto::rc`]) driven from the shared rings, the wire and the timers.
//!
//! The files split it by role, as the C driver splits rxe_req/rxe_comp/rxe_resp/rxe_net:
//!
//! - `mod.rs` (this file): the QP's shared state ([`QpShared`], the engine lock and what it
//!   protects), creation, the events raised once the lock is dropped, the send doorbell, the
//!   dispatch of a received packet, the timers;
//! - `state.rs`: `query_qp`, the `modify_qp` transitions, RESET, and the configurations
//!   of the sender and the responder;
//! - `setup.rs`: a new QP's data path, from what the verbs give it;
//! - `req.rs`: the requester of RC and UC: send WQEs copied, validated and posted to the
//!   sender, request packets out, responses in; `shadow.rs` its copies of the WQEs;
//! - `resp.rs`: the responder of RC and UC: requests in, payloads placed, READ responses,
//!   atomics and acknowledgments out;
//! - `replies.rs`: the responder's transmit queue: READ responses in bounded bursts, in PSN
//!   order with the acknowledgments after them;
//! - `ud.rs`: unreliable datagrams, both directions;
//! - `cqe.rs`: completion entries into the CQ rings, the error state and flushing;
//! - `mem.rs`: a QP's memory access: its keys resolved through the one resolver
//!   ([`crate::mem`]), scatter and gather, page faults asked for;
//! - `xmit.rs`: building and transmitting a packet;
//! - `cc.rs`: congestion control: CNPs answered and sent, the pacing of requests and READ
//!   responses;
//! - `wq.rs`: the work queues: a user's rings and a kernel consumer's queues of checked
//!   work requests, and how the data path reads both;
//! - `srq.rs`: a shared receive queue as the data path sees it.
//!
//! Everything a QP does on the data path happens under its engine lock, in one of three
//! contexts, and runs to completion there (no work items, no packet queues):
//!
//! - the send doorbell (`ibv_post_send`, process context with bottom halves disabled) pulls
//!   new WQEs out of the send queue and transmits what the window allows;
//! - the receive path (softirq) hands requests to the responder, which places the payload
//!   and answers, and responses to the requester, which completes WQEs and transmits more;
//! - the retransmit and RNR timers (softirq) restart transmission.
//!
//! Userspace owns the rings' memory and may rewrite a slot at any time, so each WQE is copied
//! out once, validated ([`validate_send_wqe`], [`validate_recv_wqe`]) and only
//! the copy is used: a send WQE's copy stays in the shadow ring until it completes, the
//! receive WQE being filled in `rwqe`. A kernel consumer's work requests are checked by the
//! same rules when posted and copied into the same places, without being validated again. Every
//! local key in a WQE is resolved against the
//! device's key table, the QP's protection domain and the region's bounds before any byte
//! moves, and every remote key of a request from the wire likewise, with the access right
//! the opcode needs ([`QpShared::resolve`], [`KeyTable::resolve`]).
//!
//! [`KeyTable::resolve`]: crate::mem::KeyTable::resolve
//!
//! Completions go to the CQ rings under the CQ lock (inside the engine lock); completion
//! events are raised after the engine lock is dropped.
//!
//! [`validate_send_wqe`]: crate::proto::uabi::validate_send_wqe
//! [`validate_recv_wqe`]: crate::proto::uabi::validate_recv_wqe

mod cc;
mod cqe;
mod mem;
mod replies;
mod req;
mod resp;
mod setup;
mod shadow;
mod srq;
mod state;
mod ud;
mod wq;
mod xmit;

use mem::Local;
pub(crate) use setup::{QpSetup, QpSrq};
pub(crate) use srq::{srq_geometry, SrqQueue, SrqRing};
pub(crate) use wq::{write_sges, KernelRing, Queue, RecvCopy};

use crate::cc::QpCc;
use crate::counters::{PortCounter, Stats};
use crate::proto::{icrc::IpHdr, opcode::QpType as WireQpType, packet::Packet, rc::qp_state};
use crate::queue::SharedQueue;
use crate::shared::DevShared;
use crate::Rrxe;
use kernel::prelude::*;
use kernel::rdma::{
    bhwork::{BhWork, BhWorkCallback},
    cq::CqRef,
    qp::{QpAttrs, QpCaps, QpEvent, QpEvents, QpState},
    timer::{impl_deferred, Timer, TimerCallback},
    trace::{self, RetryCause},
    wr::{KernelDma, QpHandle},
    BhSpinLock,
};
use kernel::sync::{
    atomic::{ordering::Relaxed, Atomic},
    Arc,
};
use shadow::Shadow;
use state::{path_mtu, wire_state};
use wq::KernelQueues;
use xmit::PKEY;

/// [`QpShared::rewind`]: a fault for a dropped response is being resolved.
pub(super) const REWIND_WAIT: u32 = 1;
/// [`QpShared::rewind`]: the fault was resolved; the requester goes back.
const REWIND_DUE: u32 = 2;

/// Send WQEs a QP keeps in flight (started, not completed): the sender's window in WQEs.
const SQ_SLOTS: usize = 128;

/// What a QP's data path shares between the doorbell, the receive path and its timers.
///
/// # Invariants
///
/// Only the receive path's table and the QP's verbs object hold references (packets being
/// processed borrow it from the table, a `lookup::Found`); destroying the QP takes it out
/// of the table, which waits for those borrowers, and shuts the timers down, so that the
/// verbs object drops the last reference in process context.
#[pin_data(PinnedDrop)]
pub(crate) struct QpShared {
    // The timers and the work item are shut down before any field is dropped
    // (`impl_deferred!` below).
    #[pin]
    rto: Timer<QpShared, 0>,
    #[pin]
    rnr: Timer<QpShared, 1>,
    /// The transmit queue was full: try again (see `replies.rs`).
    #[pin]
    tx_wait: Timer<QpShared, 2>,
    /// Work in softirq: kernel consumers' doorbell (they post with interrupts disabled,
    /// where nothing may be transmitted), and the responses a run's budget left over.
    #[pin]
    kick: BhWork<QpShared>,
    #[pin]
    eng: BhSpinLock<Engine>,
    qpn: u32,
    /// RC, UC or UD.
    qp_type: WireQpType,
    pub(crate) pd_id: u64,
    sig_all: bool,
    dev: Arc<DevShared>,
    scq: CqRef<Rrxe>,
    rcq: CqRef<Rrxe>,
    /// A user QP's send ring (a kernel consumer's queue is `Engine::kq`).
    sq: Option<SharedQueue>,
    /// A user QP's receive ring, unless the QP uses an SRQ.
    rq: Option<SharedQueue>,
    /// The shared receive queue the QP takes its receive WQEs from, instead of a receive
    /// queue of its own.
    srq: Option<QpSrq>,
    /// For a kernel consumer's QP: SGEs with the local DMA lkey name kernel memory.
    kernel: Option<KernelDma>,
    /// Names the QP in a kernel consumer's completions.
    handle: QpHandle,
    /// Where the QP's asynchronous events go.
    events: Arc<QpEvents>,
    /// Its requester dropped a response for a page fault: [`REWIND_WAIT`] while the fault
    /// is being resolved (further drops ask for nothing more), [`REWIND_DUE`] once it is:
    /// the next run goes back to the oldest unacknowledged PSN
    /// ([`Sender::on_fault_resolved`]).
    pub(super) rewind: Atomic<u32>,
    /// How a connected user QP's shadow ring is made at its first doorbell (`None`: it was
    /// made with the QP).
    shadow_plan: Option<ShadowPlan>,
    /// The shadow ring has its storage (set under the engine lock when it gets it).
    shadow_made: Atomic<bool>,
}

/// The size of a shadow ring made later ([`Shadow::new`]'s arguments).
#[derive(Clone, Copy)]
pub(super) struct ShadowPlan {
    pub(super) elem: usize,
    pub(super) slots: usize,
}

impl_deferred! {
    impl Deferred for QpShared {
        timer 0 => rto;
        timer 1 => rnr;
        timer 2 => tx_wait;
        work kick;
    }
}

impl BhWorkCallback for QpShared {
    /// A kernel consumer rang the doorbell, or responses are waiting.
    fn work_run(this: &Self) {
        let rewind = this.rewind.cmpxchg(REWIND_DUE, 0, Relaxed).is_ok();
        this.resume(|_, e| {
            if rewind {
                e.req.sender.on_fault_resolved();
            }
        });
    }
}

/// What the engine lock protects.
pub(crate) struct Engine {
    /// Attributes as `modify_qp` set them; `attrs.state` is the QP state.
    pub(crate) attrs: QpAttrs,
    /// Capabilities reported at creation.
    pub(crate) caps: QpCaps,
    /// The requester's side: send queue, sender, WQE copies.
    req: req::ReqSide,
    /// The responder's side: responder, queued replies, receive queue.
    res: resp::RespSide,
    /// Where packets go: the address vector, the route cache, the destination QP.
    tx: xmit::TxPath,
    /// A kernel consumer's send and receive queues.
    kq: Option<KernelQueues>,
    /// The counter the QP is bound to (`rdma statistic qp`), where its transport events are
    /// counted instead of in the port's counters (see [`QpShared::stats`]).
    pub(crate) counter: Option<Arc<Stats>>,
    /// Congestion control: the QP's rate, pacer and CNP interval (connected QPs).
    cc: QpCc,
}

impl Engine {
    /// Returns the QP state as the wire core names it (RESET before the first modify).
    pub(super) fn state(&self) -> qp_state::QpState {
        wire_state(self.attrs.state.unwrap_or(QpState::Reset))
    }
}

/// Completion events to raise once the engine lock is dropped.
#[derive(Default)]
struct Events {
    scq: bool,
    rcq: bool,
    /// The SRQ went below its limit.
    srq_limit: bool,
    /// A request violated an access right (RC).
    access_err: bool,
    /// The send CQ, or the receive CQ, overflowed.
    scq_err: bool,
    rcq_err: bool,
    /// The QP, on an SRQ, entered ERR.
    last_wqe: bool,
    /// The send queue drained (SQD).
    sq_drained: bool,
}

impl QpShared {
    /// Returns the QP number.
    pub(crate) fn qpn(&self) -> u32 {
        self.qpn
    }

    /// Returns whether every send WQE completes (`IB_SIGNAL_ALL_WR`).
    pub(crate) fn sig_all(&self) -> bool {
        self.sig_all
    }

    /// Resumes the QP soon, from its softirq work: what waited for a page fault to be
    /// resolved (on-demand paging) goes on.
    /// With `rewind`, the requester goes back to its oldest unacknowledged PSN first (a
    /// response it dropped for a page fault is asked for again).
    pub(crate) fn resume_soon(&self, rewind: bool) {
        if rewind {
            self.rewind.store(REWIND_DUE, Relaxed);
        }
        self.kick.queue(self);
    }

    /// Stops the timers for good and waits for running callbacks (QP destruction, after
    /// the QP left the receive path's table and the packets that found it are done).
    pub(crate) fn shutdown(&self) {
        self.rto.shutdown();
        self.rnr.shutdown();
        self.tx_wait.shutdown();
        self.kick.cancel();
    }

    /// Where the QP's transport events (completions, NAKs, retries, refusals) are counted:
    /// the counter it is bound to, or else its port's counters. Packet and byte counts are
    /// the link's, always counted on the port (the PMA reports them).
    pub(crate) fn stats<'a>(&'a self, e: &'a Engine) -> &'a Stats {
        e.counter.as_deref().unwrap_or(&self.dev.stats)
    }

    /// Counts and traces the requester's going back to `psn` for `cause`: a timeout or a
    /// sequence NAK (`completer_retry_err` and `rdma_sw_retry`, one for the other); an RNR
    /// wait is traced alone, where it ends.
    pub(super) fn go_back(&self, e: &Engine, psn: u32, cause: RetryCause) {
        if cause != RetryCause::Rnr {
            self.stats(e).inc(PortCounter::CompleterRetries);
        }
        trace::retry(self.dev_name(), self.qpn, psn, cause);
    }

    /// The name of the network device the QP's RDMA device runs on (messages, tracepoints).
    pub(crate) fn dev_name(&self) -> &CStr {
        self.dev.netdev().name()
    }

    /// Binds the QP to `counter`, or unbinds it (`None`).
    pub(crate) fn bind_counter(&self, counter: Option<Arc<Stats>>) {
        // The old binding is dropped after the lock.
        let _old = self.with_engine(|_, e, _| core::mem::replace(&mut e.counter, counter));
    }

    /// Runs `f` on the engine, with bottom halves disabled, then raises the completion
    /// events it produced.
    fn with_engine<R>(&self, f: impl FnOnce(&Self, &mut Engine, &mut Events) -> R) -> R {
        let mut ev = Events::default();
        let r = {
            let mut e = self.eng.lock();
            f(self, &mut e, &mut ev)
        };
        self.raise(ev);
        r
    }

    fn raise(&self, ev: Events) {
        if ev.scq {
            self.scq.completion_event();
        }
        if ev.rcq {
            self.rcq.completion_event();
        }
        if ev.scq_err {
            self.scq.error_event();
        }
        if ev.rcq_err {
            self.rcq.error_event();
        }
        if let (true, Some(srq)) = (ev.srq_limit, &self.srq) {
            srq.obj.limit_reached();
        }
        if ev.access_err {
            self.events.raise(QpEvent::AccessErr);
        }
        if ev.last_wqe {
            self.events.raise(QpEvent::LastWqeReached);
        }
        if ev.sq_drained {
            self.events.raise(QpEvent::SqDrained);
        }
    }

    /// The send doorbell (`ibv_post_send`): start the WQEs userspace posted. Process context:
    /// the first one of a connected user QP makes its shadow ring.
    pub(crate) fn doorbell(&self) -> Result {
        let spare = match self.shadow_plan {
            Some(plan) if !self.shadow_made.load(Relaxed) => {
                Some(Shadow::new(plan.elem, plan.slots, false)?)
            }
            _ => None,
        };
        let (r, left) = self.with_engine(|this, e, ev| {
            let left = spare.map(|s| e.req.shadow.provide(s));
            if left.is_some() {
                this.shadow_made.store(true, Relaxed);
            }
            (this.ring_sq(e, ev), left)
        });
        // An empty ring, or a spare another doorbell made unneeded: freed unlocked.
        drop(left);
        r
    }

    /// Starts the WQEs of the send queue, or flushes them in ERR.
    fn ring_sq(&self, e: &mut Engine, ev: &mut Events) -> Result {
        match e.state() {
            s if s.transmits() && self.kernel.is_some() => {
                self.kick.queue(self);
                Ok(())
            }
            s if s.transmits() => {
                self.pump(e, ev);
                Ok(())
            }
            qp_state::QpState::Err => {
                self.flush_queues(e, ev);
                Ok(())
            }
            // As the C driver: posting before RTS is an error.
            _ => Err(EINVAL),
        }
    }

    /// Returns `true` for a UD QP.
    pub(crate) fn is_ud(&self) -> bool {
        self.qp_type == WireQpType::Ud
    }

    /// Takes a packet for this QP from the receive path (softirq); `ip` is its IP header,
    /// `src` the IP source address as a GID and `vlan` the VLAN it arrived on. Returns
    /// whether the QP accepted it.
    pub(crate) fn receive(
        &self,
        pkt: &Packet<'_>,
        ip: &IpHdr<'_>,
        src: &[u8; 16],
        vlan: Option<u16>,
    ) -> bool {
        let mut ev = Events::default();
        let taken = {
            let mut e = self.eng.lock();
            let e = &mut *e;
            let info = pkt.opcode().info();
            let is_request = info.is_some_and(|i| i.is_request());
            if pkt.bth.pkey() & 0x7fff != PKEY & 0x7fff {
                false
            } else if !info.is_some_and(|i| {
                i.allowed_on(self.qp_type) || (i.is_cnp() && self.qp_type != WireQpType::Ud)
            }) {
                // An opcode of another transport (an RC QP is not a UC or UD one; a CNP is
                // any connected QP's): dropped,
                // never executed with the semantics of this QP's transport.
                false
            } else if self.qp_type == WireQpType::Ud {
                self.on_datagram(e, &mut ev, pkt, ip, vlan)
            } else if &e.tx.av.ip.dst != src {
                // RC: only the connected peer is heard.
                false
            } else if info.is_some_and(|i| i.is_cnp()) {
                self.on_cnp(e)
            } else {
                if crate::proto::cc::is_ce(crate::proto::cc::traffic_class(ip)) {
                    self.on_ce(e);
                }
                if is_request {
                    self.on_request(e, &mut ev, pkt)
                } else {
                    self.on_response(e, &mut ev, pkt)
                }
            }
        };
        self.raise(ev);
        taken
    }

    /// A timer expired or the QP's softirq work runs (a kernel consumer rang the doorbell,
    /// or a budget ran out): tell the sender, then carry on, a budget at a time.
    fn resume(&self, expired: impl FnOnce(&Self, &mut Engine)) {
        let mut ev = Events::default();
        {
            let mut e = self.eng.lock();
            let e = &mut *e;
            expired(self, e);
            if let Some(d) = e.res.parked.take() {
                self.place_parked(e, &mut ev, d);
            }
            match e.state() {
                s if s.transmits() => self.pump(e, &mut ev),
                qp_state::QpState::Err => self.flush_queues(e, &mut ev),
                _ => {}
            }
            self.send_replies(e);
        }
        self.raise(ev);
    }
}

impl TimerCallback<0> for QpShared {
    /// The local ACK timeout expired: go back to the oldest unacknowledged PSN.
    fn timer_fired(this: &Self) {
        this.resume(|q, e| {
            let psn = e.req.sender.unacked_psn().get();
            q.go_back(e, psn, RetryCause::Timeout);
            e.req.sender.on_retransmit_timeout();
        });
    }
}

impl TimerCallback<1> for QpShared {
    /// The RNR wait is over: resend from the PSN the responder could not take.
    fn timer_fired(this: &Self) {
        this.resume(|q, e| {
            let psn = e.req.sender.unacked_psn().get();
            q.go_back(e, psn, RetryCause::Rnr);
            e.req.sender.on_rnr_timeout();
        });
    }
}

impl TimerCallback<2> for QpShared {
    /// The transmit queue had no room: send the waiting responses.
    fn timer_fired(this: &Self) {
        this.resume(|_, _| {});
    }
}
