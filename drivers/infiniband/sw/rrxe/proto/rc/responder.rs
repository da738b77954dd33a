// SPDX-License-Identifier: GPL-2.0

//! The RC responder: what to do with each incoming request packet (rxe_resp.c).
//!
//! [`Responder::on_request`] takes the header values of a request ([`Request`]) and the
//! size of the receive WQE at the head of the receive queue (if any), and returns a
//! [`RespOutcome`]: whether to start using that receive WQE, where the payload goes
//! ([`Placement`]), whether a receive WQE completes, which ACK/NAK to send ([`Reply`]) and
//! whether the QP must enter ERR. The checks run in the IBA order (9.7.4.1, rxe
//! `rxe_receiver()`):
//!
//! 1. PSN: a duplicate SEND or WRITE packet is not executed again but re-ACKed with the
//!    PSN of the last executed request (C9-105); a PSN ahead of the expected one draws one
//!    NAK PSN sequence error carrying the expected PSN, and nothing more until the expected
//!    PSN arrives (C9-110..112).
//! 2. Opcode sequence: a MIDDLE or LAST without a FIRST, or a new message inside an
//!    unfinished one, is NAK invalid request (class C: the QP enters ERR).
//! 3. Opcode validity: RDMA WRITE only with remote write access; READ, atomics, FLUSH and
//!    ATOMIC WRITE are not supported yet and are NAK invalid request.
//! 4. Resources: the first packet of a SEND, and a WRITE with immediate, need a receive
//!    WQE; without one the answer is an RNR NAK with the QP's `min_rnr_timer` and the packet
//!    is dropped (class B, the QP stays up).
//! 5. Length: FIRST and MIDDLE packets carry exactly one MTU, LAST 1..=MTU, ONLY 0..=MTU
//!    (C9-92 and 9.7.2); a RETH length is at most 2^31 (C9-94); a WRITE's packets must add
//!    up to its RETH length; a SEND must fit its receive WQE (local length error).
//!
//! ACKs follow rxe: one for every packet with AckReq set (the requester decides how often,
//! which is where ACKs are coalesced), carrying that packet's PSN and the MSN after it.
//! The AETH credit field is "invalid" (no end-to-end flow control), as sent by rxe.

use super::super::aeth::{Credits, NakCode, RnrTimer, Syndrome};
use super::super::bth::{BthFields, Qpn};
use super::super::ext::{AethFields, AtomicAckEthFields};
use super::super::opcode::{Op, Opcode, Position};
use super::super::packet::{Packet, PacketSpec};
use super::super::psn::{Msn, Psn, PsnClass};
use super::{PathMtu, WcStatus, MAX_DMA_LEN};

/// The header values of an incoming request that the responder decides on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// Opcode.
    pub opcode: Opcode,
    /// BTH PSN.
    pub psn: Psn,
    /// BTH AckReq bit.
    pub ack_req: bool,
    /// BTH SE bit.
    pub solicited: bool,
    /// Payload length in bytes, without pad.
    pub payload_len: u32,
    /// RETH virtual address, rkey and DMA length, if present.
    pub reth: Option<(u64, u32, u32)>,
    /// Immediate data, if present.
    pub imm: Option<u32>,
    /// IETH rkey to invalidate, if present.
    pub inv_rkey: Option<u32>,
    /// AtomicETH, if present.
    pub atomic: Option<AtomicReq>,
}

/// The AtomicETH of an atomic request.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtomicReq {
    /// Target virtual address (8-byte aligned).
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap (compare & swap) or add (fetch & add) operand.
    pub swap_add: u64,
    /// Compare operand (compare & swap).
    pub compare: u64,
}

impl Request {
    /// Extracts the request fields of a parsed packet.
    pub fn from_packet(pkt: &Packet<'_>) -> Self {
        Self {
            opcode: pkt.opcode(),
            psn: pkt.bth.psn(),
            ack_req: pkt.bth.ack_req(),
            solicited: pkt.bth.solicited(),
            payload_len: u32::try_from(pkt.payload.len()).unwrap_or(u32::MAX),
            reth: pkt.reth.map(|r| (r.va(), r.rkey(), r.dma_len())),
            imm: pkt.immdt.map(|i| i.imm()),
            inv_rkey: pkt.ieth.map(|i| i.rkey()),
            atomic: pkt.atomic_eth.map(|a| AtomicReq {
                va: a.va(),
                rkey: a.rkey(),
                swap_add: a.swap_add(),
                compare: a.compare(),
            }),
        }
    }
}

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
    /// READ and atomic requests remembered for duplicates (`IB_QP_MAX_DEST_RD_ATOMIC`, the
    /// responder resources; at most the responder's table, 0 is taken as 1).
    pub max_dest_rd_atomic: u32,
}

/// Responder resources of a [`Responder::new`] (the host tests and KUnit use it); the
/// driver's QPs keep as many as the device's `max_qp_rd_atom`
/// ([`Responder::with_resources`]).
pub const MAX_RESOURCES: usize = 16;

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

/// A remembered READ or atomic request (a responder resource).
#[derive(Clone, Copy, Debug, Default)]
struct Resource {
    /// 0: free, 1: READ, 2: atomic.
    kind: u8,
    first_psn: Psn,
    npsn: u32,
    va: u64,
    rkey: u32,
    len: u32,
    msn: Msn,
    /// Atomic: the original value, once carried out.
    orig: Option<u64>,
}

impl Resource {
    fn contains(&self, psn: Psn) -> bool {
        self.kind != 0
            && psn.diff(self.first_psn) >= 0
            && psn.diff(self.first_psn.wrapping_add(self.npsn)) < 0
    }
}

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
pub struct Responder<const N: usize = MAX_RESOURCES> {
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
    res: [Resource; N],
    /// Next resource slot to use (oldest is overwritten first).
    res_next: usize,
}

impl Responder {
    /// Creates a responder with [`MAX_RESOURCES`] responder resources, in its initial (RTR
    /// entry) state.
    pub fn new(cfg: ResponderConfig) -> Self {
        Self::with_resources(cfg)
    }
}

impl<const N: usize> Responder<N> {
    /// Creates a responder with `N` responder resources (READs and atomics remembered for
    /// duplicates, C9-112/C9-114), in its initial (RTR entry) state.
    pub fn with_resources(cfg: ResponderConfig) -> Self {
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
            res: [Resource::default(); N],
            res_next: 0,
        }
    }

    /// Remembers a READ or atomic request, replacing the oldest beyond the configured
    /// number of resources.
    fn remember(&mut self, r: Resource) {
        let cap = usize::try_from(self.cfg.max_dest_rd_atomic)
            .unwrap_or(N)
            .clamp(1, N);
        let i = if self.res_next >= cap {
            0
        } else {
            self.res_next
        };
        if let Some(slot) = self.res.get_mut(i) {
            *slot = r;
        }
        self.res_next = i.wrapping_add(1);
    }

    fn resource(&self, psn: Psn) -> Option<Resource> {
        self.res.iter().find(|r| r.contains(psn)).copied()
    }

    /// Records the original value of the atomic just carried out and returns the atomic
    /// ACKnowledge to send.
    pub fn atomic_done(&mut self, orig: u64) -> AtomicReply {
        let psn = self.last_psn;
        let mut msn = self.msn;
        if let Some(r) = self
            .res
            .iter_mut()
            .find(|r| r.kind == 2 && r.first_psn == psn)
        {
            r.orig = Some(orig);
            msn = r.msn;
        }
        AtomicReply { psn, msn, orig }
    }

    /// Returns to the initial state with a new configuration (modify to RESET, then RTR).
    pub fn reset(&mut self, cfg: ResponderConfig) {
        // In place: the resource table can be kilobytes, too much for a temporary on the
        // kernel stack.
        self.res.iter_mut().for_each(|r| *r = Resource::default());
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

    /// Returns the next expected PSN.
    pub fn expected_psn(&self) -> Psn {
        self.epsn
    }

    /// Returns the current MSN.
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
                // C9-105: re-ACK a duplicate SEND/WRITE with the last executed PSN. READs
                // and atomics are replayed from the responder resources.
                return match info.op {
                    Op::Send | Op::Write => RespOutcome {
                        reply: Some(self.reply(self.epsn.wrapping_add(0xff_ffff), ack())),
                        ..drop
                    },
                    // C9-112: a duplicate READ is executed again, from its PSN.
                    Op::ReadRequest => match self.resource(req.psn) {
                        Some(r) if r.kind == 1 => {
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
                    },
                    // C9-114: a duplicate atomic is answered from the saved result, never
                    // executed twice.
                    Op::CompareSwap | Op::FetchAdd => match self.resource(req.psn) {
                        Some(Resource {
                            kind: 2,
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
                    },
                    _ => drop,
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
            Op::Write => self.cfg.remote_write,
            Op::ReadRequest => self.cfg.remote_read,
            Op::CompareSwap | Op::FetchAdd => self.cfg.remote_atomic,
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
            Op::ReadRequest => return self.on_read(req),
            Op::CompareSwap | Op::FetchAdd => return self.on_atomic(req, info.op),
            _ => {}
        }
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

    /// Accepts a READ request (PSN, sequence, access and length checked).
    fn on_read(&mut self, req: &Request) -> RespOutcome {
        let Some((va, rkey, len)) = req.reth else {
            return self.fail(req.psn, NakCode::InvalidRequest, WcStatus::RemInvReqErr);
        };
        let npsn = self.cfg.mtu.packets(len);
        self.prev_msn = self.msn;
        self.last_psn = req.psn;
        self.msn = self.msn.next();
        self.remember(Resource {
            kind: 1,
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

    /// Accepts an atomic request (PSN, sequence and access checked).
    fn on_atomic(&mut self, req: &Request, op: Op) -> RespOutcome {
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
            kind: 2,
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

    /// Decides what to do with a request on an Unreliable Connected QP (IBA 9.8.3): no
    /// acknowledgements, no retries, no RNR NAKs. A PSN other than the expected one means
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
    fn fail(&mut self, psn: Psn, code: NakCode, status: WcStatus) -> RespOutcome {
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

    fn reply(&self, psn: Psn, syndrome: Syndrome) -> Reply {
        Reply {
            psn,
            msn: self.msn,
            syndrome,
        }
    }
}

/// A positive ACK without credit information (rxe `AETH_ACK_UNLIMITED`).
const fn ack() -> Syndrome {
    Syndrome::Ack(Credits::INVALID)
}
