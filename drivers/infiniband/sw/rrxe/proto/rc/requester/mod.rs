// SPDX-License-Identifier: GPL-2.0

//! The requester half of [`Sender`]: segmentation, PSNs, AckReq policy, window, go-back-N.
//!
//! The caller keeps its send queue (and the WQEs' scatter/gather lists); it hands each WQE
//! to the sender with [`Sender::post`] as plain values ([`PostedWqe`]) while
//! [`Sender::has_room`], then transmits whatever [`Sender::next_packet`] returns: each
//! [`TxPacket`] names the WQE, the opcode and PSN, and the byte range `[offset, offset + len)`
//! of the WQE's data to copy into the payload. [`TxPacket::spec`] builds the
//! [`PacketSpec`] for [`crate::proto::packet::build`] (or the kernel's equivalent).
//!
//! PSNs are assigned when a WQE is posted: a SEND or RDMA WRITE of `len` bytes takes
//! `max(1, ceil(len / mtu))` PSNs, one per packet; an RDMA READ request takes as many PSNs
//! as its response has packets; an atomic takes one (IBA 9.7.1). Retransmission restarts
//! from the oldest unacknowledged PSN: the packet index inside its WQE is the PSN distance
//! from the WQE's first PSN, and its byte offset that index times the MTU (rxe
//! `req_retry()`/`retry_first_write_send()`).
//!
//! A sender configured for [`Transport::Uc`] (Unreliable Connected, IBA 9.8) segments and
//! numbers packets the same way but sends the UC opcodes, never sets AckReq, never arms the
//! retransmit timer and never retransmits: nothing is acknowledged, so each packet counts
//! as done once [`Sender::next_packet`] hands it out and a WQE completes successfully with
//! its last packet (rxe `rxe_requester()` for `IB_QPT_UC`). UC carries SEND, SEND with
//! immediate, RDMA WRITE and RDMA WRITE with immediate only (IBA Table 38); [`Sender::post`]
//! refuses anything else with [`PostError::Unsupported`].
//!
//! The files split it by concern: this one holds the [`Sender`] itself (configuration,
//! posting, the ring of posted WQEs and the transmit cursor's position); `transmit.rs`
//! segmentation into packets, the window, AckReq, fences and local operations
//! ([`Sender::next_packet`], [`Sender::next_local`]); `op.rs` the transports
//! ([`Transport`]; what each operation is on them is said with the opcode, [`WrOpcode`]);
//! `tx.rs` what is handed in and out
//! ([`PostedWqe`], [`TxPacket`], [`WqeHeaders`]); `cwnd.rs` the congestion window
//! ([`Cwnd`]), which keeps an RC QP below its fixed window after losses.
//!
//! [`PacketSpec`]: super::super::packet::PacketSpec
//! [`WrOpcode`]: super::super::uabi::WrOpcode

use super::super::psn::Psn;
use super::{PathMtu, MAX_DMA_LEN, MAX_PKT_PER_ACK, MAX_UNACKED_PSNS};

mod cwnd;
mod op;
mod transmit;
mod tx;

pub use cwnd::Cwnd;
#[cfg(rrxe_host)]
pub use cwnd::CWND_MIN;
pub use op::Transport;
pub use tx::{PostedWqe, TxPacket, WqeHeaders};

/// Most PSNs that the posted WQEs may span beyond the oldest unacknowledged one.
const MAX_POSTED_PSNS: u32 = 1 << 22;

/// Per-connection parameters of a [`Sender`] (from `modify_qp`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SenderConfig {
    /// First PSN to send (`IB_QP_SQ_PSN`).
    pub sq_psn: Psn,
    /// Path MTU (`IB_QP_PATH_MTU`).
    pub mtu: PathMtu,
    /// Transport retries after a local ACK timeout or NAK sequence error
    /// (`IB_QP_RETRY_CNT`, 0-7; 7 means seven retries, see [`super::completer`]).
    pub retry_cnt: u8,
    /// RNR retries (`IB_QP_RNR_RETRY`, 0-7; 7 means infinite).
    pub rnr_retry: u8,
    /// Maximum number of PSNs sent but not acknowledged.
    pub max_unacked_psns: u32,
    /// Request an ACK at least every this many packets.
    pub max_pkt_per_ack: u32,
    /// Most RDMA READ and atomic requests outstanding at the responder
    /// (`IB_QP_MAX_QP_RD_ATOMIC`, the initiator depth; 0 is taken as 1).
    pub max_rd_atomic: u32,
    /// Transport service: RC, or UC (nothing acknowledged, see [`Transport::Uc`]).
    pub transport: Transport,
}

impl SenderConfig {
    /// Returns an RC configuration with rxe's defaults for the window and AckReq period.
    pub const fn new(sq_psn: Psn, mtu: PathMtu, retry_cnt: u8, rnr_retry: u8) -> Self {
        Self {
            sq_psn,
            mtu,
            retry_cnt: retry_cnt & 7,
            rnr_retry: rnr_retry & 7,
            max_unacked_psns: MAX_UNACKED_PSNS,
            max_pkt_per_ack: MAX_PKT_PER_ACK,
            max_rd_atomic: 1,
            transport: Transport::Rc,
        }
    }

    /// Returns the configuration with the transport service `transport`.
    pub const fn with_transport(self, transport: Transport) -> Self {
        Self { transport, ..self }
    }

    /// Returns the configuration with the initiator depth `n`.
    pub const fn with_max_rd_atomic(self, n: u32) -> Self {
        Self {
            max_rd_atomic: n,
            ..self
        }
    }
}

/// Whether a [`Sender`] is sending or in the error state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SendState {
    /// Sending.
    Live,
    /// In the error state (a WQE failed, or the QP was moved to ERR): nothing is sent, and
    /// [`Sender::poll`] completes the WQEs after the acknowledged ones, the first with
    /// `failed` if a WQE failed (until returned), every other with `WrFlushErr`.
    Dead {
        /// The status of the WQE that failed, until `poll` returns its completion.
        failed: Option<super::WcStatus>,
        /// The QP error is still to be reported through `poll` (a WQE failed).
        tell: bool,
    },
}

/// What [`Sender::poll`] is to tell the retransmit timer next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RtoCmd {
    /// (Re)arm it.
    Arm,
    /// Stop it.
    Stop,
}

/// Why [`Sender::post`] refused a WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PostError {
    /// All `N` slots are taken by outstanding WQEs, or the posted WQEs already span 2^22
    /// PSNs; retry after completions.
    Full,
    /// The QP is in the error state: complete the WQE with
    /// [`super::WcStatus::WrFlushErr`] instead.
    QpError,
    /// Longer than 2^31 bytes (the port's `max_msg_sz`).
    TooLong,
    /// An operation the sender does not carry out: on [`Transport::Uc`], RDMA READ, the
    /// atomics and SEND with invalidate.
    Unsupported,
}

/// A posted WQE and its PSN range.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Slot {
    pub(super) wqe: PostedWqe,
    pub(super) first_psn: Psn,
    pub(super) npsn: u32,
    /// A local operation's outcome once the caller carried it out ([`Sender::local_done`]):
    /// `Some(true)` if it succeeded. `Some(false)` on a WQE that sends data: its payload
    /// could not be read ([`Sender::payload_failed`]).
    pub(super) ran: Option<bool>,
}

impl Slot {
    /// Returns `true` for a local operation not yet carried out successfully: the transmit
    /// cursor stops there (and `seek` puts it there) until it is.
    pub(super) fn local_pending(&self) -> bool {
        self.wqe.op.is_local() && self.ran != Some(true)
    }

    /// One past the last PSN of the WQE.
    pub(super) fn end_psn(&self) -> Psn {
        self.first_psn.wrapping_add(self.npsn)
    }

    /// Returns `true` if `psn` lies within the WQE's PSN range.
    pub(super) fn contains(&self, psn: Psn) -> bool {
        psn.diff(self.first_psn) >= 0 && psn.diff(self.end_psn()) < 0
    }
}

/// The send side of an RC or UC QP: requester and completer, for up to `N` outstanding
/// WQEs.
///
/// Drive it under the QP lock: [`Sender::post`] WQEs, transmit [`Sender::next_packet`]
/// until it returns `None`, feed received ACKs to [`Sender::on_response`] and timer
/// expiries to [`Sender::on_retransmit_timeout`] / [`Sender::on_rnr_timeout`], and after
/// every such call drain [`Sender::poll`] (completions in order, timer commands, QP error).
/// On [`Transport::Uc`] there are no responses and no timers: `poll` after `next_packet`
/// returns the completions of the WQEs whose last packet went out.
///
/// # Invariants
///
/// - `head < N` (or `N == 0`), `len <= N`, `done <= tx_slot <= len`; slots
///   `head .. head + len` (mod `N`) hold posted WQEs in order, with consecutive PSN ranges
///   ending at `post_psn`.
/// - `una <= cursor PSN <= max_sent <= post_psn` in sequence order, all within 2^23.
#[derive(Clone, Debug)]
pub struct Sender<const N: usize> {
    pub(super) cfg: SenderConfig,
    pub(super) ring: [Slot; N],
    pub(super) head: usize,
    pub(super) len: usize,
    /// First PSN of the next posted WQE.
    pub(super) post_psn: Psn,
    /// Transmit cursor: WQE (offset from `head`) and packet index within it.
    pub(super) tx_slot: usize,
    pub(super) tx_pkt: u32,
    /// One past the highest PSN ever transmitted.
    pub(super) max_sent: Psn,
    /// Oldest unacknowledged PSN.
    pub(super) una: Psn,
    /// Packets sent since the last one with AckReq.
    pub(super) noack_pkts: u32,
    /// One past the last PSN of the latest packet sent with AckReq: while it lies in
    /// `una + 1 ..= cursor`, an acknowledgment is owed and a full window asks for no other.
    pub(super) ack_asked: Psn,
    /// Head slots acknowledged but not yet returned by `poll`.
    pub(super) done: usize,
    /// Sending, or in the error state (and what `poll` still has to report of it).
    pub(super) state: SendState,
    /// SQ drain: do not start new WQEs.
    pub(super) draining: bool,
    pub(super) retry_left: u8,
    pub(super) rnr_left: u8,
    /// A retry was started and no progress has been seen since.
    pub(super) retry_started: bool,
    /// Waiting for the RNR timer before resending.
    pub(super) rnr_wait: bool,
    /// The retransmit timer is (believed to be) running.
    pub(super) rto_armed: bool,
    /// Retransmit timer expiries in a row without progress (the timeout doubles with each,
    /// up to [`MAX_RTO_BACKOFF`] times).
    pub(super) rto_backoff: u8,
    /// Retransmit timer command for `poll`.
    pub(super) rto_cmd: Option<RtoCmd>,
    /// RNR timer to arm, for `poll`.
    pub(super) rnr_cmd: Option<super::super::aeth::RnrTimer>,
    /// Congestion window: at most this many PSNs outstanding, at most
    /// `cfg.max_unacked_psns` (always that on UC, where nothing is acknowledged or lost).
    pub(super) cwnd: Cwnd,
}

/// Most doublings of the local ACK timeout after expiries without progress: with
/// `retry_cnt` 7, the requester gives up after 1 + 2 + 4 + 8 + 16 + 32 + 32 + 32 = 127
/// timeouts (8.5 s at perftest's and ibv_rc_pingpong's 67 ms) instead of 8 (0.5 s).
pub const MAX_RTO_BACKOFF: u8 = 5;

impl<const N: usize> Sender<N> {
    /// Returns whether the send side is in the error state.
    pub(super) fn is_dead(&self) -> bool {
        matches!(self.state, SendState::Dead { .. })
    }

    /// Creates a sender in its initial (RTS entry) state.
    pub fn new(cfg: SenderConfig) -> Self {
        let cfg = SenderConfig {
            retry_cnt: cfg.retry_cnt & 7,
            rnr_retry: cfg.rnr_retry & 7,
            max_unacked_psns: cfg.max_unacked_psns.clamp(1, 1 << 22),
            max_pkt_per_ack: cfg.max_pkt_per_ack.max(1),
            max_rd_atomic: cfg.max_rd_atomic.max(1),
            ..cfg
        };
        Self {
            cfg,
            ring: [Slot::default(); N],
            head: 0,
            len: 0,
            post_psn: cfg.sq_psn,
            tx_slot: 0,
            tx_pkt: 0,
            max_sent: cfg.sq_psn,
            una: cfg.sq_psn,
            noack_pkts: 0,
            ack_asked: cfg.sq_psn,
            done: 0,
            state: SendState::Live,
            draining: false,
            retry_left: cfg.retry_cnt,
            rnr_left: cfg.rnr_retry,
            retry_started: false,
            rnr_wait: false,
            rto_armed: false,
            rto_backoff: 0,
            rto_cmd: None,
            rnr_cmd: None,
            cwnd: Cwnd::new(cfg.max_unacked_psns),
        }
    }

    /// Returns what the local ACK timeout is multiplied by for the next arming of the
    /// retransmit timer: 2 to the power of the expiries in a row without progress, at most
    /// 2^[`MAX_RTO_BACKOFF`].
    pub fn rto_multiplier(&self) -> u32 {
        1u32.checked_shl(u32::from(self.rto_backoff.min(MAX_RTO_BACKOFF)))
            .unwrap_or(u32::MAX)
    }

    /// Returns to the initial state with a new configuration (modify to RESET, then RTS),
    /// dropping all WQEs without completions.
    pub fn reset(&mut self, cfg: SenderConfig) {
        *self = Self::new(cfg);
    }

    /// Returns the configuration.
    #[cfg(rrxe_host)]
    pub fn config(&self) -> &SenderConfig {
        &self.cfg
    }

    /// Returns `true` if [`Sender::post`] would accept a WQE.
    pub fn has_room(&self) -> bool {
        !self.is_dead() && self.len < N
    }

    /// Returns the number of WQEs posted and not yet completed by [`Sender::poll`].
    pub fn wqes(&self) -> usize {
        self.len
    }

    /// Returns `true` if no WQE is outstanding (for `IB_EVENT_SQ_DRAINED` in SQD).
    pub fn is_idle(&self) -> bool {
        self.len == 0
    }

    /// Returns the PSN the next posted WQE will start at.
    pub fn next_psn(&self) -> Psn {
        self.post_psn
    }

    /// Returns the oldest unacknowledged PSN.
    pub fn unacked_psn(&self) -> Psn {
        self.una
    }

    /// Returns the congestion window.
    #[cfg(rrxe_host)]
    pub fn cwnd(&self) -> Cwnd {
        self.cwnd
    }

    /// Returns `true` while draining once every WQE started has completed (the send queue
    /// is drained: `IB_EVENT_SQ_DRAINED`).
    pub fn sq_drained(&self) -> bool {
        self.draining && self.done == self.tx_slot && self.tx_pkt == 0
    }

    /// Enters or leaves SQ drain: while draining, no new WQE is started; the one being
    /// transmitted is finished (IBA 10.3.1.3).
    pub fn set_sq_drain(&mut self, draining: bool) {
        self.draining = draining;
    }

    /// Hands a WQE to the sender, behind all earlier ones.
    pub fn post(&mut self, wqe: PostedWqe) -> Result<(), PostError> {
        if self.is_dead() {
            return Err(PostError::QpError);
        }
        if wqe.len > MAX_DMA_LEN {
            return Err(PostError::TooLong);
        }
        if !wqe.op.allowed_on(self.cfg.transport.qp_type()) {
            return Err(PostError::Unsupported);
        }
        if self.len >= N {
            return Err(PostError::Full);
        }
        let npsn = wqe.op.psn_count(self.cfg.mtu.packets(wqe.len));
        // Keep every posted PSN within 2^22 of `una`, far inside the 2^23 range where PSN
        // comparisons are meaningful (one huge WQE alone is always accepted).
        let posted = self.post_psn.diff(self.una).unsigned_abs();
        if self.len > 0 && posted.saturating_add(npsn) > MAX_POSTED_PSNS {
            return Err(PostError::Full);
        }
        let i = self.index(self.len);
        let slot = self.ring.get_mut(i).ok_or(PostError::Full)?;
        *slot = Slot {
            wqe,
            first_psn: self.post_psn,
            npsn,
            ran: None,
        };
        self.post_psn = self.post_psn.wrapping_add(npsn);
        self.len = self.len.wrapping_add(1);
        Ok(())
    }

    /// Counts as done the oldest WQEs that are: on RC those acknowledged (`una` is past their
    /// PSNs), on UC those handed out, and local operations carried out once every earlier
    /// WQE is done. A failed local operation that is the oldest fails the send side.
    pub(super) fn advance_done(&mut self) {
        while let Some(slot) = self.slot(self.done).copied() {
            if slot.ran == Some(false) {
                // Every earlier WQE completed: this one fails, the send side with it.
                if !self.is_dead() {
                    self.fail(if slot.wqe.op.is_local() {
                        slot.wqe.op.local_error()
                    } else {
                        super::WcStatus::LocProtErr
                    });
                }
                return;
            }
            if slot.wqe.op.is_local() {
                if slot.ran.is_none() {
                    return;
                }
            } else if self.cfg.transport == Transport::Uc {
                if self.done >= self.tx_slot {
                    return;
                }
            } else if self.una.diff(slot.end_psn()) < 0 {
                return;
            }
            self.done = self.done.wrapping_add(1);
        }
    }

    /// Returns the ring index of the slot `off` places after the head.
    pub(super) fn index(&self, off: usize) -> usize {
        let i = self.head.wrapping_add(off);
        if i >= N {
            i.wrapping_sub(N)
        } else {
            i
        }
    }

    /// Returns the slot `off` places after the head.
    pub(super) fn slot(&self, off: usize) -> Option<&Slot> {
        if off >= self.len {
            return None;
        }
        self.ring.get(self.index(off))
    }

    /// Moves the transmit cursor to `psn` (go-back-N, or forward past acknowledged PSNs).
    pub(super) fn seek(&mut self, psn: Psn) {
        let mut off = self.done;
        while let Some(slot) = self.slot(off).copied() {
            // A local operation not yet carried out comes before every PSN it precedes.
            if slot.contains(psn) || (slot.local_pending() && slot.first_psn == psn) {
                self.tx_slot = off;
                self.tx_pkt = psn.diff(slot.first_psn).unsigned_abs();
                return;
            }
            off = off.wrapping_add(1);
        }
        self.tx_slot = self.len;
        self.tx_pkt = 0;
    }

    /// Returns the PSN the transmit cursor points at.
    pub(super) fn cursor_psn(&self) -> Psn {
        match self.slot(self.tx_slot) {
            Some(slot) => slot.first_psn.wrapping_add(self.tx_pkt),
            None => self.post_psn,
        }
    }
}
