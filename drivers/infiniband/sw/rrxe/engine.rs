// SPDX-License-Identifier: GPL-2.0

//! The data path of a queue pair: the RC state machines of [`crate::proto::rc`] driven from
//! the shared rings, the wire and the timers.
//!
//! Everything a QP does on the data path happens under its engine lock, in one of three
//! contexts, and runs to completion there (no work items, no packet queues):
//!
//! - the send doorbell (`ibv_post_send`, process context with bottom halves disabled) pulls
//!   new WQEs out of the send queue and transmits what the window allows;
//! - the receive path (softirq) hands requests to the responder, which places the payload
//!   and answers, and responses to the completer, which completes WQEs and transmits more;
//! - the retransmit and RNR timers (softirq) restart transmission.
//!
//! Userspace owns the rings' memory and may rewrite a slot at any time, so each WQE is copied
//! out once, validated ([`uabi::validate_send_wqe`], [`uabi::validate_recv_wqe`]) and only
//! the copy is used: a send WQE's copy stays in `shadow` until it completes, the receive WQE
//! being filled in `rwqe`. Every local key in a WQE is resolved against the device's key
//! table, the QP's protection domain and the region's bounds before any byte moves, and
//! every remote key of a request from the wire likewise, with the access right the opcode
//! needs.
//!
//! Completions go to the CQ rings under the CQ lock (inside the engine lock); completion
//! events are raised after the engine lock is dropped.

use crate::cq::CQE_LEN;
use crate::device::DevShared;
use crate::mr::Need;
use crate::net::Rcvd;
use crate::params;
use crate::proto::{
    aeth::RnrTimer,
    bth::{BthFields, Qpn},
    ext::{DethFields, ImmDtFields},
    icrc::{self, IpHdr, UDP_LEN},
    ip::{self, IpParams},
    opcode::{Op, Opcode, QpType as WireQpType},
    packet::{self, Packet, PacketSpec},
    psn::Psn,
    rc::{
        completer::local_ack_timeout_ns,
        responder::{LocalError, RecvCompletion},
        AtomicExec, AtomicReply, Deliver, PathMtu, Placement, ReadReply, Request, RespOutcome,
        Responder, ResponderConfig, Response, SendAction, SendWqe as RcWqe, Sender, SenderConfig,
        TxPacket, WcStatus, WqeHeaders, WrOp,
    },
    uabi::{
        self, Completion, KernelConsumer, LengthCheck, RecvQueueParams, RxeRecvWqeFields,
        RxeSendWqeFields, RxeSgeFields, SendData, SendFlags, SendOp, SendQueueParams,
        SendQueueState, SgeList, SgeWalkError, UdAddress, WcEx, WrOpcode, MAX_MSG_SIZE,
    },
};
use crate::queue::SharedQueue;
use crate::wire::kernel_crc32;
use crate::Rrxe;
use kernel::alloc::KVVec;
use kernel::new_spinlock;
use kernel::prelude::*;
use kernel::rdma::{
    bhwork::{impl_has_bh_work, BhWork, BhWorkCallback},
    cq::CqRef,
    mr::access,
    net::{Route, TxBuf},
    qp::{attr, QpAttrs, QpCaps, QpState},
    timer::{impl_has_timer, Timer, TimerCallback},
    wr::{KernelDma, QpHandle, Sge},
    BhGuard,
};
use kernel::sync::{Arc, SpinLock};

/// Send WQEs a QP keeps in flight (started, not completed): the sender's window in WQEs.
const SQ_SLOTS: usize = 128;

/// The partition key of every packet: the default partition, full member.
const PKEY: u16 = 0xffff;

/// What a QP's data path shares between the doorbell, the receive path and its timers.
///
/// # Invariants
///
/// Only the receive path's table, the QP's verbs object and bounded sections with bottom
/// halves disabled (softirq, the doorbell) hold references; destroying the QP takes it out
/// of the table, waits for an RCU grace period and shuts the timers down, so that the verbs
/// object drops the last reference in process context.
#[pin_data]
pub(crate) struct QpShared {
    // The timers and the work item come first: they are shut down before anything they
    // use is dropped.
    #[pin]
    rto: Timer<QpShared, 0>,
    #[pin]
    rnr: Timer<QpShared, 1>,
    /// Kernel consumers' doorbell: they post with interrupts disabled, where nothing may be
    /// transmitted, so the send queue is processed from softirq work.
    #[pin]
    kick: BhWork<QpShared>,
    #[pin]
    eng: SpinLock<Engine>,
    qpn: u32,
    /// RC or UD.
    qp_type: WireQpType,
    pd_id: u32,
    ifindex: i32,
    sig_all: bool,
    dev: Arc<DevShared>,
    scq: CqRef<Rrxe>,
    rcq: CqRef<Rrxe>,
    sq: SharedQueue,
    rq: Option<SharedQueue>,
    /// For a kernel consumer's QP: SGEs with the local DMA lkey name kernel memory.
    kernel: Option<KernelDma>,
    /// Names the QP in a kernel consumer's completions.
    handle: QpHandle,
}

/// The device's `local_dma_lkey`: in a kernel consumer's SGE, a kernel (DMA) address.
pub(crate) const LOCAL_DMA_LKEY: u32 = 0;

impl_has_timer! {
    impl HasTimer<0> for QpShared { self.rto }
    impl HasTimer<1> for QpShared { self.rnr }
}

impl_has_bh_work! {
    impl HasBhWork for QpShared { self.kick }
}

impl BhWorkCallback for QpShared {
    /// A kernel consumer rang the doorbell.
    fn work_run(this: &Self) {
        this.resume(|_| {});
    }
}

/// What the engine lock protects.
pub(crate) struct Engine {
    /// Attributes as `modify_qp` set them; `attrs.state` is the QP state.
    pub(crate) attrs: QpAttrs,
    /// Capabilities reported at creation.
    pub(crate) caps: QpCaps,
    /// Boxed: it is a few kilobytes, too much to move around on the kernel stack.
    sender: KBox<Sender<SQ_SLOTS>>,
    resp: Responder,
    /// Kernel indices of the send queue.
    sqs: SendQueueState,
    /// Kernel consumer of the receive queue.
    rqc: Option<KernelConsumer>,
    sq_params: SendQueueParams,
    rq_params: RecvQueueParams,
    /// Copies of the send WQEs in flight, `SQ_SLOTS` slots of the SQ's element size, used
    /// as a ring in posting order; `shadow_next` is where the next one goes.
    shadow: KVVec<u8>,
    shadow_next: u32,
    /// Copy of the receive WQE being filled.
    rwqe: KVVec<u8>,
    /// Copy of the receive queue's head, while the responder decides on it.
    stage: KVVec<u8>,
    /// Kernel consumers: where a work request is laid out as a WQE before it is queued.
    post_buf: KVVec<u8>,
    /// A posted WQE failed validation: completed with this status once the WQEs before it
    /// are, then the QP enters ERR.
    sq_error: Option<WcStatus>,
    /// Addressing of outgoing packets (from the address vector).
    ip: IpParams,
    dest_qpn: Qpn,
    /// Local ACK timeout in microseconds, if any.
    timeout_us: Option<u32>,
    /// IPv4 identification of the next packet.
    ip_id: u16,
    /// UD: PSN of the next datagram.
    ud_psn: Psn,
}

impl Engine {
    /// Returns the IPv4 identification for the next packet.
    fn next_ip_id(&mut self) -> u16 {
        let id = self.ip_id;
        self.ip_id = id.wrapping_add(1);
        id
    }
}

/// Completion events to raise once the engine lock is dropped.
#[derive(Default)]
struct Events {
    scq: bool,
    rcq: bool,
}

/// Parameters of a new QP's data path.
pub(crate) struct QpSetup {
    pub(crate) qpn: u32,
    pub(crate) qp_type: WireQpType,
    pub(crate) pd_id: u32,
    pub(crate) ifindex: i32,
    pub(crate) sig_all: bool,
    pub(crate) caps: QpCaps,
    pub(crate) attrs: QpAttrs,
    pub(crate) dev: Arc<DevShared>,
    pub(crate) scq: CqRef<Rrxe>,
    pub(crate) rcq: CqRef<Rrxe>,
    pub(crate) sq: SharedQueue,
    pub(crate) rq: Option<SharedQueue>,
    pub(crate) kernel: Option<KernelDma>,
    pub(crate) handle: QpHandle,
}

fn path_mtu(a: &QpAttrs) -> PathMtu {
    a.path_mtu
        .and_then(|m| PathMtu::from_bytes(m.bytes()))
        .unwrap_or(PathMtu::MTU_1024)
}

fn sender_config(a: &QpAttrs) -> SenderConfig {
    SenderConfig::new(Psn::new(a.sq_psn), path_mtu(a), a.retry_cnt, a.rnr_retry)
        .with_max_rd_atomic(u32::from(a.max_rd_atomic))
}

fn responder_config(a: &QpAttrs) -> ResponderConfig {
    ResponderConfig {
        rq_psn: Psn::new(a.rq_psn),
        mtu: path_mtu(a),
        min_rnr_timer: RnrTimer::from_low_bits(a.min_rnr_timer),
        remote_write: a.qp_access_flags & access::REMOTE_WRITE != 0,
        remote_read: a.qp_access_flags & access::REMOTE_READ != 0,
        remote_atomic: a.qp_access_flags & access::REMOTE_ATOMIC != 0,
        max_dest_rd_atomic: u32::from(a.max_dest_rd_atomic),
    }
}

/// Returns a sender in its initial state, allocated directly.
#[inline(never)]
fn new_sender(a: &QpAttrs) -> Result<KBox<Sender<SQ_SLOTS>>> {
    Ok(KBox::new(Sender::new(sender_config(a)), GFP_KERNEL)?)
}

/// Returns a zeroed buffer of `len` bytes.
fn zeroed_buf(len: usize) -> Result<KVVec<u8>> {
    Ok(KVVec::from_elem(0u8, len, GFP_KERNEL)?)
}

/// The work request id of a WQE slot copy (its first eight bytes), for flushing a WQE that
/// may not validate.
fn raw_wr_id(slot: &[u8]) -> u64 {
    slot.first_chunk::<8>()
        .map_or(0, |b| u64::from_le_bytes(*b))
}

/// Calls `f(va, lkey, range)` for each piece of `[offset, offset + len)` of a scatter/gather
/// list ([`SgeList::walk`]), where `range` is the piece's place in a buffer of `len` bytes.
/// Fails with `f`'s error, or `EINVAL` if the list is shorter than `offset + len`.
fn walk_sges(
    sges: SgeList<'_>,
    offset: u32,
    len: usize,
    mut f: impl FnMut(u64, u32, core::ops::Range<usize>) -> Result,
) -> Result {
    sges.walk(offset, len, |p| f(p.addr, p.lkey, p.range))
        .map_err(|e| match e {
            SgeWalkError::TooShort => EINVAL,
            SgeWalkError::Callback(e) => e,
        })
}

impl QpShared {
    /// Creates the data path of a new QP, in the RESET state.
    pub(crate) fn new(s: QpSetup) -> Result<Arc<Self>> {
        let sq_geo = s.sq.geometry();
        let sq_elem = sq_geo.elem_size();
        let rq_elem = s.rq.as_ref().map_or(0, |q| q.geometry().elem_size());
        let eng = Engine {
            sender: new_sender(&s.attrs)?,
            resp: Responder::new(responder_config(&s.attrs)),
            sqs: SendQueueState::new(sq_geo),
            rqc: s.rq.as_ref().map(|q| KernelConsumer::new(q.geometry())),
            sq_params: SendQueueParams {
                qp_type: s.qp_type,
                max_sge: s.caps.max_send_sge,
                max_inline: s.caps.max_inline_data,
                max_msg_size: MAX_MSG_SIZE,
                length_check: LengthCheck::SgeSum,
                allow_embedded_av: false,
                gid_table_len: params::GID_TABLE_LEN,
            },
            rq_params: RecvQueueParams {
                max_sge: s.caps.max_recv_sge,
                max_msg_size: MAX_MSG_SIZE,
                length_check: LengthCheck::SgeSum,
            },
            shadow: zeroed_buf(SQ_SLOTS.checked_mul(sq_elem).ok_or(EINVAL)?)?,
            shadow_next: 0,
            rwqe: zeroed_buf(rq_elem)?,
            stage: zeroed_buf(rq_elem)?,
            post_buf: if s.kernel.is_some() {
                zeroed_buf(sq_elem.max(rq_elem))?
            } else {
                KVVec::new()
            },
            sq_error: None,
            ip: IpParams::default(),
            dest_qpn: Qpn::new(0),
            timeout_us: None,
            ip_id: 0,
            ud_psn: Psn::new(0),
            attrs: s.attrs,
            caps: s.caps,
        };
        Arc::pin_init(
            try_pin_init!(Self {
                rto <- Timer::new(c"rrxe_qp_rto", kernel::static_lock_class!()),
                rnr <- Timer::new(c"rrxe_qp_rnr", kernel::static_lock_class!()),
                kick <- BhWork::new(c"rrxe_qp_kick", kernel::static_lock_class!()),
                eng <- new_spinlock!(eng, "rrxe_qp"),
                qpn: s.qpn,
                qp_type: s.qp_type,
                pd_id: s.pd_id,
                ifindex: s.ifindex,
                sig_all: s.sig_all,
                dev: s.dev,
                scq: s.scq,
                rcq: s.rcq,
                sq: s.sq,
                rq: s.rq,
                kernel: s.kernel,
                handle: s.handle,
            }),
            GFP_KERNEL,
        )
    }

    /// Returns the QP number.
    pub(crate) fn qpn(&self) -> u32 {
        self.qpn
    }

    /// Returns the handle that names the QP in kernel completions.
    pub(crate) fn handle(&self) -> QpHandle {
        self.handle
    }

    /// Kernel consumers: queues a send WQE (header and SGEs) in the send ring.
    pub(crate) fn push_send(&self, wqe: &RxeSendWqeFields, sges: &[Sge]) -> Result {
        self.with_engine(|this, e, _| {
            if sges.len() > usize::try_from(e.caps.max_send_sge)? {
                return Err(EINVAL);
            }
            let elem = this.sq.geometry().elem_size();
            let buf = e.post_buf.get_mut(..elem).ok_or(EINVAL)?;
            buf.fill(0);
            wqe.write(buf).map_err(|_| EINVAL)?;
            write_sges_to(buf, uabi::SEND_WQE_DATA_OFFSET, sges)?;
            // A full ring is the consumer's to wait on (`ib_post_send` says ENOMEM).
            this.sq.push(buf).map_err(|_| ENOMEM)
        })
    }

    /// Kernel consumers: queues a receive WQE in the receive ring.
    pub(crate) fn push_recv(&self, wqe: &RxeRecvWqeFields, sges: &[Sge]) -> Result {
        self.with_engine(|this, e, ev| {
            let rq = this.rq.as_ref().ok_or(EINVAL)?;
            if sges.len() > usize::try_from(e.caps.max_recv_sge)? {
                return Err(EINVAL);
            }
            let elem = rq.geometry().elem_size();
            let buf = e.post_buf.get_mut(..elem).ok_or(EINVAL)?;
            buf.fill(0);
            wqe.write(buf).map_err(|_| EINVAL)?;
            write_sges_to(buf, uabi::RECV_WQE_DATA_OFFSET, sges)?;
            rq.push(buf).map_err(|_| ENOMEM)?;
            if e.attrs.state == Some(QpState::Err) {
                this.flush_queues(e, ev);
            }
            Ok(())
        })
    }

    /// Checks an access of `n` bytes at `va` through local key `lkey`.
    fn local_ok(&self, va: u64, lkey: u32, n: u32, need: Need) -> bool {
        if lkey == LOCAL_DMA_LKEY {
            // Kernel memory is only for kernel consumers; its range is checked per copy.
            return self.kernel.is_some();
        }
        self.dev
            .mr(lkey)
            .and_then(|mr| mr.check(self.pd_id, va, n, need))
            .is_some()
    }

    /// Copies from local memory named by `lkey` at `va`.
    fn local_read(&self, va: u64, lkey: u32, out: &mut [u8]) -> Result {
        if lkey == LOCAL_DMA_LKEY {
            return self.kernel.as_ref().ok_or(EINVAL)?.read(va, out);
        }
        let n = u32::try_from(out.len())?;
        let mr = self.dev.mr(lkey).ok_or(EINVAL)?;
        let off = mr.check(self.pd_id, va, n, Need::LocalRead).ok_or(EINVAL)?;
        mr.read(off, out)
    }

    /// Copies into local memory named by `lkey` at `va` (`IB_ACCESS_LOCAL_WRITE`).
    fn local_write(&self, va: u64, lkey: u32, data: &[u8]) -> Result {
        if lkey == LOCAL_DMA_LKEY {
            return self.kernel.as_ref().ok_or(EINVAL)?.write(va, data);
        }
        let n = u32::try_from(data.len())?;
        let mr = self.dev.mr(lkey).ok_or(EINVAL)?;
        let off = mr
            .check(self.pd_id, va, n, Need::LocalWrite)
            .ok_or(EINVAL)?;
        mr.write(off, data)
    }

    /// Returns whether every send WQE completes (`IB_SIGNAL_ALL_WR`).
    pub(crate) fn sig_all(&self) -> bool {
        self.sig_all
    }

    /// Stops the timers for good and waits for running callbacks (QP destruction, after
    /// the QP left the receive path's table and an RCU grace period passed).
    pub(crate) fn shutdown(&self) {
        self.rto.shutdown();
        self.rnr.shutdown();
        self.kick.cancel();
    }

    /// Runs `f` on the engine, with bottom halves disabled, then raises the completion
    /// events it produced.
    fn with_engine<R>(&self, f: impl FnOnce(&Self, &mut Engine, &mut Events) -> R) -> R {
        let mut ev = Events::default();
        let r = {
            let _bh = BhGuard::new();
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
    }

    /// Returns the attributes, capabilities (for `query_qp`).
    pub(crate) fn query(&self) -> (QpAttrs, QpCaps) {
        let _bh = BhGuard::new();
        let e = self.eng.lock();
        (e.attrs, e.caps)
    }

    /// Applies checked `modify_qp` attributes: `merge` copies them into the current ones and
    /// the state transition to `next` starts, stops or flushes the state machines.
    pub(crate) fn modify(
        &self,
        check: impl FnOnce(&QpAttrs) -> Result<QpState>,
        merge: impl FnOnce(&mut QpAttrs),
    ) -> Result {
        self.with_engine(|this, e, ev| {
            let next = check(&e.attrs)?;
            let cur = e.attrs.state.unwrap_or(QpState::Reset);
            merge(&mut e.attrs);
            e.attrs.state = Some(next);
            let a = e.attrs;
            if a.mask & attr::TIMEOUT != 0 || e.timeout_us.is_none() {
                e.timeout_us = local_ack_timeout_ns(a.timeout)
                    .map(|ns| u32::try_from(ns / 1000).unwrap_or(u32::MAX));
            }
            match (cur, next) {
                (_, QpState::Reset) => this.reset(e),
                (QpState::Init, QpState::Rtr) => {
                    e.resp.reset(responder_config(&a));
                    e.dest_qpn = Qpn::new(a.dest_qp_num);
                    e.ip = IpParams {
                        src: a.ah.sgid,
                        dst: a.ah.dgid,
                        traffic_class: a.ah.traffic_class,
                        hop_limit: if a.ah.hop_limit == 0 {
                            64
                        } else {
                            a.ah.hop_limit
                        },
                        flow_label: a.ah.flow_label,
                        sport: ip::udp_sport(this.qpn),
                    };
                }
                (QpState::Rtr, QpState::Rts) => {
                    e.sender.reset(sender_config(&a));
                    e.ud_psn = Psn::new(a.sq_psn);
                }
                (QpState::Rts, QpState::Sqd) => e.sender.set_sq_drain(true),
                (QpState::Sqd, QpState::Rts) => {
                    e.sender.set_sq_drain(false);
                    this.pump(e, ev);
                }
                (_, QpState::Err) => this.enter_error(e, ev),
                _ => {}
            }
            Ok(())
        })
    }

    /// Back to RESET: every queue is emptied without completions.
    fn reset(&self, e: &mut Engine) {
        self.rto.stop();
        self.rnr.stop();
        e.sender.reset(sender_config(&e.attrs));
        e.resp.reset(responder_config(&e.attrs));
        e.sq_error = None;
        e.shadow_next = 0;
        if let Ok(prod) = self.sq.producer_acquire() {
            if let Ok(p) = e.sqs.drain(prod) {
                let _ = self.sq.publish(p);
            }
        }
        if let (Some(rq), Some(rqc)) = (&self.rq, &mut e.rqc) {
            if let Ok(prod) = rq.producer_acquire() {
                if let Ok(p) = rqc.drain(prod) {
                    let _ = rq.publish(p);
                }
            }
        }
    }

    /// The send doorbell (`ibv_post_send`): start the WQEs userspace posted.
    pub(crate) fn doorbell(&self) -> Result {
        self.with_engine(|this, e, ev| match e.attrs.state {
            Some(QpState::Rts | QpState::Sqd) if this.kernel.is_some() => {
                this.kick.queue();
                Ok(())
            }
            Some(QpState::Rts | QpState::Sqd) => {
                this.pump(e, ev);
                Ok(())
            }
            Some(QpState::Err) => {
                this.flush_queues(e, ev);
                Ok(())
            }
            // As the C driver: posting before RTS is an error.
            _ => Err(EINVAL),
        })
    }

    /// Moves posted WQEs into the sender, transmits what it allows and carries out its
    /// actions, until nothing is left to do.
    fn pump(&self, e: &mut Engine, ev: &mut Events) {
        if self.qp_type == WireQpType::Ud {
            self.pump_ud(e, ev);
            return;
        }
        self.fill_sender(e);
        while let Some(p) = e.sender.next_packet() {
            let stat = match self.send_request(e, &p) {
                Ok(()) if p.retransmit => Rcvd::Retransmits,
                Ok(()) => Rcvd::SentPkts,
                // A packet that cannot be sent is lost: the retransmit timer recovers.
                Err(_) => Rcvd::SendErrors,
            };
            self.dev.stats.inc(stat);
            if self.qp_type == WireQpType::Uc {
                // Unreliable: a packet is done once sent; the WQE completes with its last.
                e.sender.on_response(&Response::ack(p.psn));
            }
        }
        self.drain_actions(e, ev);
        if e.sq_error.is_some() && e.sender.is_idle() {
            self.fail_sq_head(e, ev);
        }
    }

    /// UD: sends every posted WQE as one datagram and completes it (unreliable: there is
    /// nothing to wait for).
    fn pump_ud(&self, e: &mut Engine, ev: &mut Events) {
        loop {
            let status = match self.copy_next_wqe(e, 0) {
                Ok(Some(prod)) => self.send_datagram(e).map(|()| prod),
                Ok(None) => return,
                Err(status) => Err(status),
            };
            let prod = match status {
                Ok(prod) => prod,
                Err(status) => {
                    e.sq_error = Some(status);
                    self.fail_sq_head(e, ev);
                    return;
                }
            };
            if e.sqs.mark_started(prod).is_err() {
                return;
            }
            self.complete_send(e, ev, 0, WcStatus::Success);
        }
    }

    /// UD: validates the WQE copy in shadow slot 0 and sends its datagram.
    fn send_datagram(&self, e: &mut Engine) -> core::result::Result<(), WcStatus> {
        let id = e.next_ip_id();
        let elem = e.sqs.geometry().elem_size();
        let copy = shadow_slot(&e.shadow, 0, elem).ok_or(WcStatus::LocQpOpErr)?;
        let wqe = uabi::validate_send_wqe(copy, &e.sq_params).map_err(|e| e.send_status())?;
        let SendOp::Send {
            imm, ud: Some(ud), ..
        } = *wqe.op()
        else {
            return Err(WcStatus::LocQpOpErr);
        };
        let mtu = path_mtu(&e.attrs).bytes();
        if wqe.length() > mtu {
            return Err(WcStatus::LocLenErr);
        }
        let UdAddress::Ah(num) = ud.address else {
            return Err(WcStatus::LocQpOpErr);
        };
        let ah = self.dev.ah(num).ok_or(WcStatus::LocQpOpErr)?;
        let ip = IpParams {
            src: ah.sgid,
            dst: ah.dgid,
            traffic_class: ah.traffic_class,
            hop_limit: if ah.hop_limit == 0 { 64 } else { ah.hop_limit },
            flow_label: ah.flow_label,
            sport: ip::udp_sport(self.qpn),
        };
        // A Q_Key with the high bit set means "use the QP's" (IBA 10.2.5).
        let qkey = if ud.remote_qkey & 0x8000_0000 != 0 {
            e.attrs.qkey
        } else {
            ud.remote_qkey
        };
        let psn = e.ud_psn;
        e.ud_psn = psn.next();
        let spec = PacketSpec {
            bth: BthFields {
                opcode: if imm.is_some() {
                    Opcode::UD_SEND_ONLY_WITH_IMMEDIATE
                } else {
                    Opcode::UD_SEND_ONLY
                },
                solicited: wqe.flags().contains(SendFlags::SOLICITED),
                pkey: PKEY,
                dest_qp: ud.remote_qpn,
                psn,
                ..BthFields::default()
            },
            deth: Some(DethFields {
                qkey,
                resv: 0,
                src_qp: Qpn::new(self.qpn),
            }),
            immdt: imm.map(|imm| ImmDtFields { imm }),
            ..PacketSpec::default()
        };
        let len = usize::try_from(wqe.length()).map_err(|_| WcStatus::LocLenErr)?;
        let sent = self.xmit(&ip, id, &spec, len, |out| match wqe.data() {
            SendData::Inline(bytes) => {
                out.copy_from_slice(bytes.get(..out.len()).ok_or(EINVAL)?);
                Ok(())
            }
            SendData::Sges(sges) => self.gather(sges, 0, out),
            SendData::None => Ok(()),
        });
        // A datagram that cannot be sent is lost, as on a wire; a bad local key is the
        // sender's error.
        match sent {
            Ok(()) => self.dev.stats.inc(Rcvd::SentPkts),
            Err(e) if e == EINVAL => return Err(WcStatus::LocProtErr),
            Err(_) => self.dev.stats.inc(Rcvd::SendErrors),
        }
        Ok(())
    }

    /// UD: takes a datagram into the head receive WQE: the 40-byte GRH (for IPv4, 20 zero
    /// bytes and the IPv4 header) followed by the payload.
    fn on_datagram(
        &self,
        e: &mut Engine,
        ev: &mut Events,
        pkt: &Packet<'_>,
        ip: &IpHdr<'_>,
    ) -> bool {
        if !matches!(
            e.attrs.state,
            Some(QpState::Rtr | QpState::Rts | QpState::Sqd)
        ) {
            return false;
        }
        let Some(deth) = pkt.deth else {
            return false;
        };
        if pkt.opcode().info().is_none_or(|i| i.op != Op::Send) || deth.qkey() != e.attrs.qkey {
            return false;
        }
        let mut grh = [0u8; 40];
        let hdr = match ip {
            IpHdr::V4(h) => grh.get_mut(20..).zip(h.get(..20)),
            IpHdr::V6(h) => Some((&mut grh[..], h.get(..40).unwrap_or(&[0; 40]))),
        };
        if let Some((dst, src)) = hdr {
            dst.copy_from_slice(src);
        }
        let (len, prod) = match self.peek_recv(e) {
            Ok(Some(head)) => head,
            // No receive posted: a datagram is simply dropped.
            Ok(None) => return false,
            Err(()) => {
                self.enter_error(e, ev);
                return false;
            }
        };
        // Too small a buffer: the receive completes with a length error.
        let fits =
            usize::try_from(len).is_ok_and(|l| l >= pkt.payload.len().saturating_add(grh.len()));
        core::mem::swap(&mut e.rwqe, &mut e.stage);
        if let (Some(rq), Some(rqc)) = (&self.rq, &mut e.rqc) {
            if let Ok(p) = rqc.advance(prod) {
                let _ = rq.publish(p);
            }
        }
        let wr_id = raw_wr_id(&e.rwqe);
        let placed =
            fits && self.scatter(e, 0, &grh).is_ok() && self.scatter(e, 40, pkt.payload).is_ok();
        let c = if placed {
            let byte_len = u32::try_from(pkt.payload.len().saturating_add(40)).unwrap_or(u32::MAX);
            let ex = pkt.immdt.map_or(WcEx::None, |i| WcEx::Imm(i.imm()));
            Completion::recv_success(wr_id, self.qpn, byte_len, false, ex, deth.src_qp().get(), 1)
        } else if fits {
            Completion::send_error(wr_id, WcStatus::LocProtErr, self.qpn)
        } else {
            Completion::send_error(wr_id, WcStatus::LocLenErr, self.qpn)
        };
        // RDMA_NETWORK_IPV4 or RDMA_NETWORK_IPV6: how to read the GRH.
        let net = if matches!(ip, IpHdr::V4(_)) { 2 } else { 3 };
        self.post_cqe_net(ev, false, &c, pkt.bth.solicited(), net);
        true
    }

    /// Copies the next posted, not started send WQE into shadow slot `id`; returns the
    /// producer index it was read under, `None` if there is none, or the status of a corrupt
    /// ring (an impossible producer index, an unreadable slot).
    fn copy_next_wqe(
        &self,
        e: &mut Engine,
        id: u32,
    ) -> core::result::Result<Option<u32>, WcStatus> {
        let Ok(prod) = self.sq.producer_acquire() else {
            return Ok(None);
        };
        let slot = match e.sqs.next_to_start(prod) {
            Ok(Some(slot)) => slot,
            Ok(None) => return Ok(None),
            Err(_) => return Err(WcStatus::LocQpOpErr),
        };
        let elem = e.sqs.geometry().elem_size();
        let copy = shadow_slot_mut(&mut e.shadow, id, elem).ok_or(WcStatus::LocQpOpErr)?;
        self.sq
            .read_slot(&slot, copy)
            .map_err(|_| WcStatus::LocQpOpErr)?;
        Ok(Some(prod))
    }

    /// Copies, validates and posts the WQEs userspace added to the send queue.
    fn fill_sender(&self, e: &mut Engine) {
        while e.sq_error.is_none() && e.sender.has_room() {
            let id = e.shadow_next;
            let prod = match self.copy_next_wqe(e, id) {
                Ok(Some(prod)) => prod,
                Ok(None) => return,
                Err(status) => {
                    e.sq_error = Some(status);
                    return;
                }
            };
            let elem = e.sqs.geometry().elem_size();
            let Some(copy) = shadow_slot(&e.shadow, id, elem) else {
                return;
            };
            let wqe = match self.check_send_wqe(copy, &e.sq_params) {
                Ok(w) => w,
                Err(status) => {
                    e.sq_error = Some(status);
                    return;
                }
            };
            if e.sender.post(RcWqe { id, ..wqe }).is_err() {
                e.sq_error = Some(WcStatus::LocQpOpErr);
                return;
            }
            if e.sqs.mark_started(prod).is_err() {
                e.sq_error = Some(WcStatus::LocQpOpErr);
                return;
            }
            e.shadow_next = id.wrapping_add(1) % SQ_SLOTS as u32;
        }
    }

    /// Validates a send WQE copy for this QP and every local key it names.
    fn check_send_wqe(
        &self,
        copy: &[u8],
        p: &SendQueueParams,
    ) -> core::result::Result<RcWqe, WcStatus> {
        let wqe = uabi::validate_send_wqe(copy, p).map_err(|e| e.send_status())?;
        let op = match wqe.opcode() {
            WrOpcode::Send => WrOp::Send,
            WrOpcode::SendWithImm => WrOp::SendWithImm,
            WrOpcode::SendWithInv => WrOp::SendWithInv,
            WrOpcode::RdmaWrite => WrOp::Write,
            WrOpcode::RdmaWriteWithImm => WrOp::WriteWithImm,
            WrOpcode::RdmaRead => WrOp::Read,
            WrOpcode::AtomicCmpAndSwp => WrOp::CompareSwap,
            WrOpcode::AtomicFetchAndAdd => WrOp::FetchAdd,
            // Local operations, memory windows, FLUSH and ATOMIC WRITE are not carried out.
            _ => return Err(WcStatus::LocQpOpErr),
        };
        // READ and atomic results are written into the local buffers.
        let need = if op.is_read_or_atomic() {
            Need::LocalWrite
        } else {
            Need::LocalRead
        };
        let len = match op {
            WrOp::CompareSwap | WrOp::FetchAdd => 8,
            _ => wqe.length(),
        };
        if let SendData::Sges(sges) = wqe.data() {
            let n = usize::try_from(len).map_err(|_| WcStatus::LocLenErr)?;
            walk_sges(sges, 0, n, |va, lkey, r| {
                let n = u32::try_from(r.len())?;
                if self.local_ok(va, lkey, n, need) {
                    Ok(())
                } else {
                    Err(EINVAL)
                }
            })
            .map_err(|_| WcStatus::LocProtErr)?;
        }
        Ok(RcWqe {
            id: 0,
            op,
            len,
            solicited: wqe.flags().contains(SendFlags::SOLICITED),
            fence: wqe.flags().contains(SendFlags::FENCE),
        })
    }

    /// Builds and transmits one request packet of a WQE in flight.
    fn send_request(&self, e: &mut Engine, p: &TxPacket) -> Result {
        let id = e.next_ip_id();
        let elem = e.sqs.geometry().elem_size();
        let copy = shadow_slot(&e.shadow, p.id, elem).ok_or(EINVAL)?;
        let wqe = uabi::validate_send_wqe(copy, &e.sq_params).map_err(|_| EINVAL)?;
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
            _ => return Err(EINVAL),
        };
        let mut spec = p.spec(e.dest_qpn, PKEY, &hdrs, &[]);
        if self.qp_type == WireQpType::Uc {
            // The UC opcodes are the RC ones plus 0x20; nothing is acknowledged.
            spec.bth.opcode = Opcode(spec.bth.opcode.0.wrapping_add(0x20));
            spec.bth.ack_req = false;
        }
        let len = usize::try_from(p.len)?;
        self.xmit(&e.ip, id, &spec, len, |out| match wqe.data() {
            SendData::Inline(bytes) => {
                let start = usize::try_from(p.offset)?;
                let src = start
                    .checked_add(out.len())
                    .and_then(|end| bytes.get(start..end))
                    .ok_or(EINVAL)?;
                out.copy_from_slice(src);
                Ok(())
            }
            SendData::Sges(sges) => self.gather(sges, p.offset, out),
            SendData::None => Ok(()),
        })
    }

    /// Copies `out.len()` bytes at `offset` of a scatter/gather list into `out`.
    fn gather(&self, sges: SgeList<'_>, offset: u32, out: &mut [u8]) -> Result {
        walk_sges(sges, offset, out.len(), |va, lkey, r| {
            self.local_read(va, lkey, out.get_mut(r).ok_or(EINVAL)?)
        })
    }

    /// Builds a packet around `spec` with a payload of `payload_len` bytes that `fill`
    /// writes in place, and transmits it.
    fn xmit(
        &self,
        ip: &IpParams,
        id: u16,
        spec: &PacketSpec<'_>,
        payload_len: usize,
        fill: impl FnOnce(&mut [u8]) -> Result,
    ) -> Result {
        let body_len = packet::packet_len(spec.bth.opcode, payload_len).ok_or(EINVAL)?;
        let route = if ip.is_ipv4() {
            Route::ipv4(self.ifindex, ip::v4_of(&ip.src), ip::v4_of(&ip.dst))?
        } else {
            Route::ipv6(self.ifindex, ip.src, ip.dst)?
        };
        let ip_len = ip.ip_len();
        let hdr_len = ip_len.wrapping_add(UDP_LEN);
        let mut buf = TxBuf::new(&route, ip_len, hdr_len.checked_add(body_len).ok_or(EINVAL)?)?;
        let data = buf.data_mut();
        ip.write(data, body_len, id).map_err(|_| EINVAL)?;
        let (hdrs, body) = data.split_at_mut_checked(hdr_len).ok_or(EINVAL)?;
        let layout = packet::build_headers(spec, payload_len, body).map_err(|_| EINVAL)?;
        fill(body.get_mut(layout.payload).ok_or(EINVAL)?)?;
        let (iph, udp) = hdrs.split_at_checked(ip_len).ok_or(EINVAL)?;
        let iph = if ip.is_ipv4() {
            IpHdr::V4(iph)
        } else {
            IpHdr::V6(iph)
        };
        icrc::generate(&kernel_crc32, iph, udp, body).map_err(|_| EINVAL)?;
        if route.is_local() {
            // To a QP of this device: the IP layer would deliver it on the loopback device,
            // which no RDMA device is bound to.
            self.dev.deliver_locally(buf);
            return Ok(());
        }
        buf.send(&route)
    }

    /// Carries out what the sender asks for: completions, timers, the error state.
    fn drain_actions(&self, e: &mut Engine, ev: &mut Events) {
        while let Some(a) = e.sender.poll() {
            match a {
                SendAction::Complete(c) => self.complete_send(e, ev, c.id, c.status),
                SendAction::ArmRetransmitTimer => {
                    if let (Some(us), false) = (e.timeout_us, self.qp_type == WireQpType::Uc) {
                        self.rto.arm_after_us(us);
                    }
                }
                SendAction::StopRetransmitTimer => self.rto.stop(),
                SendAction::ArmRnrTimer(t) => self.rnr.arm_after_us(t.micros()),
                SendAction::EnterError => self.enter_error(e, ev),
            }
        }
    }

    /// Completes the oldest send WQE in flight (whose copy is shadow slot `id`).
    fn complete_send(&self, e: &mut Engine, ev: &mut Events, id: u32, status: WcStatus) {
        let elem = e.sqs.geometry().elem_size();
        if let Some(copy) = shadow_slot(&e.shadow, id, elem) {
            let cqe = match uabi::validate_send_wqe(copy, &e.sq_params) {
                Ok(w) if status == WcStatus::Success => w
                    .signaled(self.sig_all)
                    .then(|| Completion::send_success(&w, self.qpn)),
                _ => Some(Completion::send_error(raw_wr_id(copy), status, self.qpn)),
            };
            if let Some(c) = cqe {
                self.post_cqe(ev, true, &c, false);
            }
        }
        if let Ok(p) = e.sqs.complete_oldest() {
            let _ = self.sq.publish(p);
        }
    }

    /// Completes the send WQE that failed validation, with its status, and enters ERR.
    fn fail_sq_head(&self, e: &mut Engine, ev: &mut Events) {
        let Some(status) = e.sq_error.take() else {
            return;
        };
        self.dev.stats.inc(Rcvd::BadWqes);
        if let Ok(prod) = self.sq.producer_acquire() {
            if let Ok(Some(slot)) = e.sqs.next_to_start(prod) {
                let mut hdr = [0u8; 8];
                let wr_id = match self.sq.read_prefix(&slot, &mut hdr) {
                    Ok(()) => raw_wr_id(&hdr),
                    Err(_) => 0,
                };
                let c = Completion::send_error(wr_id, status, self.qpn);
                self.post_cqe(ev, true, &c, false);
                if e.sqs.mark_started(prod).is_ok() {
                    if let Ok(p) = e.sqs.complete_oldest() {
                        let _ = self.sq.publish(p);
                    }
                }
            }
        }
        self.enter_error(e, ev);
    }

    /// Writes a completion into the send (`send`) or receive CQ.
    fn post_cqe(&self, ev: &mut Events, send: bool, c: &Completion, solicited: bool) {
        self.post_cqe_net(ev, send, c, solicited, 0);
    }

    /// Like [`Self::post_cqe`], with the `RDMA_NETWORK_*` type of a UD receive's GRH for
    /// kernel consumers (`IB_WC_WITH_NETWORK_HDR_TYPE`).
    fn post_cqe_net(&self, ev: &mut Events, send: bool, c: &Completion, solicited: bool, net: u8) {
        let mut bytes = [0u8; CQE_LEN];
        if c.write(&mut bytes).is_err() {
            return;
        }
        if let Some(b) = bytes.get_mut(uabi::UVERBS_WC_LEN) {
            *b = net;
        }
        let cq = if send { &self.scq } else { &self.rcq };
        let (posted, fire) = cq.data().post(&bytes, solicited);
        self.dev.stats.inc(if posted {
            Rcvd::Completions
        } else {
            Rcvd::CqOverflows
        });
        if fire {
            if send {
                ev.scq = true;
            } else {
                ev.rcq = true;
            }
        }
    }

    /// Moves the QP to ERR: every WQE in flight or posted completes with
    /// [`WcStatus::WrFlushErr`] (after the completions already due).
    fn enter_error(&self, e: &mut Engine, ev: &mut Events) {
        e.attrs.state = Some(QpState::Err);
        self.rto.stop();
        self.rnr.stop();
        e.sender.flush();
        while let Some(a) = e.sender.poll() {
            if let SendAction::Complete(c) = a {
                self.complete_send(e, ev, c.id, c.status);
            }
        }
        if e.resp.flush() {
            let c = Completion::send_error(raw_wr_id(&e.rwqe), WcStatus::WrFlushErr, self.qpn);
            self.post_cqe(ev, false, &c, false);
        }
        self.flush_queues(e, ev);
    }

    /// Completes every posted, not started WQE of both queues with
    /// [`WcStatus::WrFlushErr`] (in ERR).
    fn flush_queues(&self, e: &mut Engine, ev: &mut Events) {
        let mut hdr = [0u8; 8];
        while let Ok(prod) = self.sq.producer_acquire() {
            let Ok(Some(slot)) = e.sqs.next_to_start(prod) else {
                break;
            };
            let wr_id = match self.sq.read_prefix(&slot, &mut hdr) {
                Ok(()) => raw_wr_id(&hdr),
                Err(_) => 0,
            };
            if e.sqs.mark_started(prod).is_err() {
                break;
            }
            let c = Completion::send_error(wr_id, WcStatus::WrFlushErr, self.qpn);
            self.post_cqe(ev, true, &c, false);
            if let Ok(p) = e.sqs.complete_oldest() {
                let _ = self.sq.publish(p);
            }
        }
        let (Some(rq), Some(rqc)) = (&self.rq, &mut e.rqc) else {
            return;
        };
        while let Ok(prod) = rq.producer_acquire() {
            let Ok(Some(slot)) = rqc.head(prod) else {
                break;
            };
            let wr_id = match rq.read_prefix(&slot, &mut hdr) {
                Ok(()) => raw_wr_id(&hdr),
                Err(_) => 0,
            };
            let Ok(p) = rqc.advance(prod) else {
                break;
            };
            let _ = rq.publish(p);
            let c = Completion::send_error(wr_id, WcStatus::WrFlushErr, self.qpn);
            self.post_cqe(ev, false, &c, false);
        }
    }

    /// Takes a packet for this QP from the receive path (softirq); `ip` is its IP header and
    /// `src` the IP source address as a GID. Returns whether the QP accepted it.
    pub(crate) fn receive(&self, pkt: &Packet<'_>, ip: &IpHdr<'_>, src: &[u8; 16]) -> bool {
        let mut ev = Events::default();
        let taken = {
            let mut e = self.eng.lock();
            let e = &mut *e;
            let is_request = pkt.opcode().info().is_some_and(|i| i.is_request());
            if pkt.bth.pkey() & 0x7fff != PKEY & 0x7fff {
                false
            } else if self.qp_type == WireQpType::Ud {
                self.on_datagram(e, &mut ev, pkt, ip)
            } else if &e.ip.dst != src {
                // RC: only the connected peer is heard.
                false
            } else if is_request {
                self.on_request(e, &mut ev, pkt)
            } else {
                self.on_response(e, &mut ev, pkt)
            }
        };
        self.raise(ev);
        taken
    }

    fn on_request(&self, e: &mut Engine, ev: &mut Events, pkt: &Packet<'_>) -> bool {
        if !matches!(
            e.attrs.state,
            Some(QpState::Rtr | QpState::Rts | QpState::Sqd)
        ) {
            return false;
        }
        let req = Request::from_packet(pkt);
        let consumes = pkt.opcode().info().is_some_and(|i| i.consumes_rwqe());
        let mut prod = 0;
        let recv_len = if consumes {
            match self.peek_recv(e) {
                Ok(Some((len, p))) => {
                    prod = p;
                    Some(len)
                }
                Ok(None) => None,
                Err(()) => {
                    self.enter_error(e, ev);
                    return false;
                }
            }
        } else {
            None
        };
        let out = if self.qp_type == WireQpType::Uc {
            e.resp.on_uc_request(&req, recv_len)
        } else {
            e.resp.on_request(&req, recv_len)
        };
        if out
            .reply
            .is_some_and(|r| matches!(r.syndrome, crate::proto::aeth::Syndrome::RnrNak(_)))
        {
            self.dev.stats.inc(Rcvd::RnrNaksSent);
        }
        if out.begin_recv {
            // The head was validated into `stage`; it becomes the current receive WQE.
            core::mem::swap(&mut e.rwqe, &mut e.stage);
            if let Some(rqc) = &mut e.rqc {
                if let (Some(rq), Ok(p)) = (&self.rq, rqc.advance(prod)) {
                    let _ = rq.publish(p);
                }
            }
        }
        // The first packet of an RDMA WRITE is checked for the whole RETH range, so that a
        // WRITE running past its region writes nothing at all; a zero-length one names no
        // memory and its rkey is not checked (C9-88).
        let write_ok = match (req.reth, out.placement, out.fatal) {
            (Some((va, rkey, len)), Some(Placement::Remote { .. }), false) if len != 0 => self
                .dev
                .mr(rkey)
                .and_then(|mr| mr.check(self.pd_id, va, len, Need::RemoteWrite))
                .is_some(),
            _ => true,
        };
        let placed = match out.placement {
            _ if !write_ok => Err(LocalError::RemoteAccess),
            None => Ok(()),
            Some(Placement::Recv { offset }) => self
                .scatter(e, offset, pkt.payload)
                .map_err(|_| LocalError::RecvProtection),
            Some(Placement::Remote { va, rkey }) => self
                .write_remote(va, rkey, pkt.payload)
                .map_err(|_| LocalError::RemoteAccess),
        };
        // No memory region of rrxe can be invalidated remotely (there are no memory windows
        // or fast-registered regions yet), so a SEND with invalidate is an invalid request,
        // as rdma_rxe answers for regions of the wrong type.
        let placed = match (placed, out.complete.and_then(|c| c.inv_rkey)) {
            (Ok(()), Some(_)) => Err(LocalError::BadInvalidate),
            (p, _) => p,
        };
        let out = match placed {
            Ok(()) => out,
            Err(le) => e.resp.on_local_error(le),
        };
        if let Some(rd) = out.read {
            if self.send_read_responses(e, &rd).is_err() {
                let out = e.resp.on_local_error(LocalError::RemoteAccess);
                self.finish_request(e, ev, &out);
                return true;
            }
        }
        if let Some(a) = out.atomic {
            match self.execute_atomic(&a) {
                Ok(orig) => {
                    let reply = e.resp.atomic_done(orig);
                    self.send_atomic_reply(e, &reply);
                }
                Err(_) => {
                    let out = e.resp.on_local_error(LocalError::RemoteAccess);
                    self.finish_request(e, ev, &out);
                    return true;
                }
            }
        }
        if let Some(reply) = out.atomic_reply {
            self.send_atomic_reply(e, &reply);
        }
        self.finish_request(e, ev, &out);
        true
    }

    /// Sends the READ responses for `rd`, after checking its rkey over the whole range (a
    /// zero-length READ names no memory: its rkey is not checked, C9-88).
    fn send_read_responses(&self, e: &mut Engine, rd: &ReadReply) -> Result {
        let (mr, base) = if rd.len == 0 {
            (None, 0)
        } else {
            let mr = self.dev.mr(rd.rkey).ok_or(EINVAL)?;
            let base = mr
                .check(self.pd_id, rd.va, rd.len, Need::RemoteRead)
                .ok_or(EINVAL)?;
            (Some(mr), base)
        };
        let mtu = path_mtu(&e.attrs);
        for i in 0..rd.packets(mtu) {
            let r = rd.response(i, mtu);
            let spec = r.spec(e.dest_qpn, PKEY, rd.msn, &[]);
            let id = e.next_ip_id();
            let off = base.checked_add(usize::try_from(r.offset)?).ok_or(EINVAL)?;
            let sent = self.xmit(&e.ip, id, &spec, usize::try_from(r.len)?, |out| match &mr {
                Some(mr) => mr.read(off, out),
                None => Ok(()),
            });
            self.dev.stats.inc(match sent {
                Ok(()) => Rcvd::SentPkts,
                // A lost response: the requester asks again.
                Err(_) => Rcvd::SendErrors,
            });
        }
        Ok(())
    }

    /// Carries out an atomic from the wire on the 8 bytes its rkey names; returns the
    /// original value.
    fn execute_atomic(&self, a: &AtomicExec) -> Result<u64> {
        let mr = self.dev.mr(a.rkey).ok_or(EINVAL)?;
        let off = mr
            .check(self.pd_id, a.va, 8, Need::RemoteAtomic)
            .ok_or(EINVAL)?;
        let _guard = self.dev.atomic_lock.lock();
        let mut word = [0u8; 8];
        mr.read(off, &mut word)?;
        let orig = u64::from_ne_bytes(word);
        mr.write(off, &a.op.apply(orig).to_ne_bytes())?;
        Ok(orig)
    }

    fn send_atomic_reply(&self, e: &mut Engine, reply: &AtomicReply) {
        self.send_headers(e, &reply.spec(e.dest_qpn, PKEY));
    }

    /// Sends a packet without payload (an acknowledgement) to the connected peer, counting
    /// the outcome (a lost one is recovered by the requester).
    fn send_headers(&self, e: &mut Engine, spec: &PacketSpec<'_>) {
        let id = e.next_ip_id();
        let sent = self.xmit(&e.ip, id, spec, 0, |_| Ok(()));
        self.dev.stats.inc(match sent {
            Ok(()) => Rcvd::SentPkts,
            Err(_) => Rcvd::SendErrors,
        });
    }

    /// Carries out the completion, reply and error of a responder outcome.
    fn finish_request(&self, e: &mut Engine, ev: &mut Events, out: &RespOutcome) {
        if let Some(rc) = out.complete {
            self.complete_recv(e, ev, &rc);
        }
        if let Some(reply) = out.reply {
            self.send_headers(e, &reply.spec(e.dest_qpn, PKEY));
        }
        if out.fatal {
            self.enter_error(e, ev);
        }
    }

    fn complete_recv(&self, e: &mut Engine, ev: &mut Events, rc: &RecvCompletion) {
        let wr_id = raw_wr_id(&e.rwqe);
        let c = if rc.status == WcStatus::Success {
            let ex = match (rc.imm, rc.inv_rkey) {
                (Some(imm), _) => WcEx::Imm(imm),
                (None, Some(rkey)) => WcEx::Invalidate(rkey),
                (None, None) => WcEx::None,
            };
            Completion::recv_success(wr_id, self.qpn, rc.byte_len, rc.rdma_with_imm, ex, 0, 1)
        } else {
            Completion::send_error(wr_id, rc.status, self.qpn)
        };
        self.post_cqe(ev, false, &c, rc.solicited);
    }

    /// Copies the receive queue's head into `stage` and validates it: `Ok(None)` if the
    /// queue is empty, else its length and the producer index it was read under. `Err` if
    /// the queue or the WQE is corrupt (the QP enters ERR).
    fn peek_recv(&self, e: &mut Engine) -> core::result::Result<Option<(u32, u32)>, ()> {
        let (Some(rq), Some(rqc)) = (&self.rq, &e.rqc) else {
            return Ok(None);
        };
        let prod = rq.producer_acquire().map_err(|_| ())?;
        let Some(slot) = rqc.head(prod).map_err(|_| ())? else {
            return Ok(None);
        };
        rq.read_slot(&slot, &mut e.stage).map_err(|_| ())?;
        let w = uabi::validate_recv_wqe(&e.stage, &e.rq_params).map_err(|_| ())?;
        Ok(Some((w.length(), prod)))
    }

    /// Scatters `data` into the current receive WQE at byte `offset`.
    fn scatter(&self, e: &Engine, offset: u32, data: &[u8]) -> Result {
        let w = uabi::validate_recv_wqe(&e.rwqe, &e.rq_params).map_err(|_| EINVAL)?;
        self.write_sges(w.sges(), offset, data)
    }

    /// Writes `data` at byte `offset` of a local scatter list, each piece checked against
    /// its lkey's region (PD, bounds, `IB_ACCESS_LOCAL_WRITE`).
    fn write_sges(&self, sges: SgeList<'_>, offset: u32, data: &[u8]) -> Result {
        walk_sges(sges, offset, data.len(), |va, lkey, r| {
            self.local_write(va, lkey, data.get(r).ok_or(EINVAL)?)
        })
    }

    /// Writes an RDMA WRITE payload at a wire-named address, checked against the rkey.
    fn write_remote(&self, va: u64, rkey: u32, data: &[u8]) -> Result {
        let n = u32::try_from(data.len())?;
        let mr = self.dev.mr(rkey).ok_or(EINVAL)?;
        let off = mr
            .check(self.pd_id, va, n, Need::RemoteWrite)
            .ok_or(EINVAL)?;
        mr.write(off, data)
    }

    fn on_response(&self, e: &mut Engine, ev: &mut Events, pkt: &Packet<'_>) -> bool {
        if !matches!(e.attrs.state, Some(QpState::Rts | QpState::Sqd)) {
            return false;
        }
        let Some(r) = Response::from_packet(pkt) else {
            return false;
        };
        let placed = match e.sender.check_response(&r) {
            Some(Deliver::ReadData { id, offset }) => self.place_local(e, id, offset, pkt.payload),
            Some(Deliver::AtomicOrig { id, orig }) => {
                self.place_local(e, id, 0, &orig.to_ne_bytes())
            }
            None => Ok(()),
        };
        match placed {
            Ok(()) => e.sender.on_response(&r),
            Err(_) => e.sender.on_local_error(&r, WcStatus::LocProtErr),
        }
        self.pump(e, ev);
        true
    }

    /// Writes READ data or an atomic's original value into the local buffers of the send
    /// WQE whose copy is shadow slot `id`.
    fn place_local(&self, e: &Engine, id: u32, offset: u32, data: &[u8]) -> Result {
        let elem = e.sqs.geometry().elem_size();
        let copy = shadow_slot(&e.shadow, id, elem).ok_or(EINVAL)?;
        let wqe = uabi::validate_send_wqe(copy, &e.sq_params).map_err(|_| EINVAL)?;
        let SendData::Sges(sges) = wqe.data() else {
            return Err(EINVAL);
        };
        self.write_sges(sges, offset, data)
    }
}

/// Writes `sges` as `struct rxe_sge`s into a WQE slot from byte `at`.
fn write_sges_to(buf: &mut [u8], at: usize, sges: &[Sge]) -> Result {
    let mut off = at;
    for s in sges {
        let end = off.checked_add(uabi::SGE_LEN).ok_or(EINVAL)?;
        let dst = buf.get_mut(off..end).ok_or(EINVAL)?;
        RxeSgeFields {
            addr: s.addr(),
            length: s.length(),
            lkey: s.lkey(),
        }
        .write(dst)
        .map_err(|_| EINVAL)?;
        off = end;
    }
    Ok(())
}

/// Returns shadow slot `id`.
fn shadow_slot(shadow: &[u8], id: u32, elem: usize) -> Option<&[u8]> {
    let start = usize::try_from(id).ok()?.checked_mul(elem)?;
    shadow.get(start..start.checked_add(elem)?)
}

/// Returns shadow slot `id` for writing.
fn shadow_slot_mut(shadow: &mut [u8], id: u32, elem: usize) -> Option<&mut [u8]> {
    let start = usize::try_from(id).ok()?.checked_mul(elem)?;
    shadow.get_mut(start..start.checked_add(elem)?)
}

impl QpShared {
    /// A timer expired or a kernel consumer rang the doorbell (softirq): tell the sender,
    /// then carry on transmitting.
    fn resume(&self, expired: impl FnOnce(&mut Sender<SQ_SLOTS>)) {
        let mut ev = Events::default();
        {
            let mut e = self.eng.lock();
            let e = &mut *e;
            expired(&mut e.sender);
            self.pump(e, &mut ev);
        }
        self.raise(ev);
    }
}

impl TimerCallback<0> for QpShared {
    /// The local ACK timeout expired: go back to the oldest unacknowledged PSN.
    fn timer_fired(this: &Self) {
        this.resume(|s| s.on_retransmit_timeout());
    }
}

impl TimerCallback<1> for QpShared {
    /// The RNR wait is over: resend from the PSN the responder could not take.
    fn timer_fired(this: &Self) {
        this.resume(|s| s.on_rnr_timeout());
    }
}
