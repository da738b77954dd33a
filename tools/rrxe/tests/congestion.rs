// SPDX-License-Identifier: GPL-2.0

//! Many RC QPs sharing one bottleneck: a drop-tail queue that forwards a few packets per
//! tick, as a switch port or an emulated wire does. Every request goes through it, every
//! response comes back without loss. Without a congestion window, each QP keeps its full
//! window (128 PSNs) in flight, every overflow makes the losers go back N, their resends
//! are lost in turn and QPs give up with `IB_WC_RETRY_EXC_ERR` (what `ib_write_bw -q 64`
//! did between two guests). With it, every QP completes and the queue stays busy.
//!
//! Also: the congestion window's own rules ([`Cwnd`]).

use std::collections::VecDeque;

use rrxe_proto::aeth::RnrTimer;
use rrxe_proto::bth::Qpn;
use rrxe_proto::opcode::QpType;
use rrxe_proto::packet::{self, PacketSpec};
use rrxe_proto::psn::Psn;
use rrxe_proto::rc::{
    Cwnd, PathMtu, PostedWqe, Request, Responder, ResponderConfig, Response, SendAction, Sender,
    SenderConfig, WcStatus, WqeHeaders, CWND_MIN, MAX_UNACKED_PSNS,
};
use rrxe_proto::uabi::WrOpcode;

const MTU: PathMtu = PathMtu::MTU_256;
const RKEY: u32 = 0x1234;

fn build(spec: &PacketSpec<'_>) -> Vec<u8> {
    let mut buf = vec![0u8; 8192];
    let n = packet::build(spec, &mut buf).expect("build");
    buf.truncate(n);
    buf
}

/// One QP pair: the requester, its responder and its timers.
struct Pair {
    snd: Sender<16>,
    rsp: Responder,
    posted: u32,
    ok: u32,
    errors: Vec<WcStatus>,
    rto_at: Option<u64>,
}

impl Pair {
    /// Takes the requester's actions: completions and the retransmit timer (`rto` ticks,
    /// times the backoff).
    fn take_actions(&mut self, now: u64, rto: u64) {
        while let Some(a) = self.snd.poll() {
            match a {
                SendAction::Complete(c) if c.status == WcStatus::Success => self.ok += 1,
                SendAction::Complete(c) => self.errors.push(c.status),
                SendAction::ArmRetransmitTimer => {
                    self.rto_at = Some(now + rto * u64::from(self.snd.rto_multiplier()))
                }
                SendAction::StopRetransmitTimer => self.rto_at = None,
                SendAction::ArmRnrTimer(_) | SendAction::EnterError => {}
            }
        }
    }
}

struct Outcome {
    /// Messages completed successfully, of `qps * msgs`.
    ok: u32,
    /// Error completions (of any QP).
    errors: Vec<WcStatus>,
    /// Packets the queue forwarded, and how many of them were new (not resends).
    forwarded: u64,
    dropped: u64,
    ticks: u64,
}

/// Runs `qps` QPs, each writing `msgs` messages of `len` bytes, through a queue of `cap`
/// packets that forwards `rate` packets per tick, `delay` ticks from the responders.
fn run(qps: usize, msgs: u32, len: u32, cap: usize, rate: usize, delay: u64) -> Outcome {
    let data = vec![0xa5u8; len as usize];
    let mut pairs: Vec<Pair> = (0..qps)
        .map(|_| Pair {
            snd: Sender::new(SenderConfig::new(Psn::new(0), MTU, 7, 7)),
            rsp: Responder::new(ResponderConfig {
                rq_psn: Psn::new(0),
                mtu: MTU,
                min_rnr_timer: RnrTimer::new(1).unwrap(),
                remote_write: true,
                remote_read: true,
                remote_atomic: true,
                max_dest_rd_atomic: 4,
                flush_types: 0,
            }),
            posted: 0,
            ok: 0,
            errors: Vec::new(),
            rto_at: None,
        })
        .collect();
    // The bottleneck (QP index, packet), and what it forwarded, due at the responder.
    let mut queue: VecDeque<(usize, Vec<u8>)> = VecDeque::new();
    let mut in_flight: VecDeque<(u64, usize, Vec<u8>)> = VecDeque::new();
    let mut replies: VecDeque<(u64, usize, Vec<u8>)> = VecDeque::new();
    let (mut forwarded, mut dropped) = (0u64, 0u64);
    let rto = 4 * delay + 40;
    let hdrs = WqeHeaders {
        remote_va: 0x1000,
        rkey: RKEY,
        ..WqeHeaders::default()
    };
    let mut now = 0u64;
    while now < 2_000_000 {
        now += 1;
        for _ in 0..rate {
            let Some((q, pkt)) = queue.pop_front() else {
                break;
            };
            forwarded += 1;
            in_flight.push_back((now + delay, q, pkt));
        }
        while in_flight.front().is_some_and(|(t, ..)| *t <= now) {
            let (_, q, bytes) = in_flight.pop_front().unwrap();
            let pkt = packet::parse_for(&bytes, QpType::Rc).expect("parse request");
            let out = pairs[q].rsp.on_request(&Request::from_packet(&pkt), None);
            if let Some(reply) = out.reply {
                replies.push_back((now + delay, q, build(&reply.spec(Qpn::new(0x11), 0xffff))));
            }
        }
        while replies.front().is_some_and(|(t, ..)| *t <= now) {
            let (_, q, bytes) = replies.pop_front().unwrap();
            let pkt = packet::parse_for(&bytes, QpType::Rc).expect("parse response");
            let r = Response::from_packet(&pkt).expect("AETH");
            pairs[q].snd.check_response(&r);
            pairs[q].snd.on_response(&r);
        }
        // The QPs take turns starting from a different one each tick.
        for k in 0..qps {
            let q = (k + now as usize) % qps;
            let p = &mut pairs[q];
            if p.rto_at.is_some_and(|t| t <= now) {
                p.rto_at = None;
                p.snd.on_retransmit_timeout();
            }
            while p.posted < msgs && p.snd.has_room() {
                p.snd
                    .post(PostedWqe {
                        id: p.posted,
                        op: WrOpcode::RdmaWrite,
                        len,
                        solicited: false,
                        fence: false,
                    })
                    .expect("post");
                p.posted += 1;
            }
            // Each QP sends up to 8 packets a tick, faster than the queue drains.
            for _ in 0..8 {
                p.take_actions(now, rto);
                let Some(t) = p.snd.next_packet() else { break };
                let payload = &data[t.offset as usize..(t.offset + t.len) as usize];
                let bytes = build(&t.spec(Qpn::new(0x22), 0xffff, &hdrs, payload));
                if queue.len() < cap {
                    queue.push_back((q, bytes));
                } else {
                    dropped += 1;
                }
            }
            p.take_actions(now, rto);
        }
        if pairs.iter().all(|p| p.ok + p.errors.len() as u32 >= msgs) {
            break;
        }
    }
    Outcome {
        ok: pairs.iter().map(|p| p.ok).sum(),
        errors: pairs
            .iter()
            .flat_map(|p| p.errors.iter().copied())
            .collect(),
        forwarded,
        dropped,
        ticks: now,
    }
}

#[test]
fn many_qps_share_a_bottleneck_without_collapse() {
    // 64 QPs writing 16 KiB messages (64 packets each) through a queue of 128 packets
    // that forwards 4 a tick: 8,192 PSNs of full windows against 128 + 4 * 2 * 20 places.
    let (qps, msgs, len) = (64, 12, 16 * 1024);
    let o = run(qps, msgs, len, 128, 4, 20);
    assert!(
        o.errors.is_empty(),
        "{} error completions ({} RETRY_EXC_ERR), {} of {} messages completed",
        o.errors.len(),
        o.errors
            .iter()
            .filter(|&&s| s == WcStatus::RetryExcErr)
            .count(),
        o.ok,
        qps as u32 * msgs
    );
    assert_eq!(o.ok, qps as u32 * msgs);
    // Goodput: the packets the messages needed, over what the queue could forward.
    let needed = u64::from(o.ok) * u64::from(len / 256);
    let capacity = 4 * o.ticks;
    assert!(
        needed * 100 >= capacity * 40,
        "goodput {needed} packets of {capacity} the queue could forward in {} ticks \
         ({} forwarded, {} dropped)",
        o.ticks,
        o.forwarded,
        o.dropped
    );
}

#[test]
fn one_qp_on_a_roomy_path_keeps_the_full_window() {
    // The queue holds a whole window: nothing is lost, the window never shrinks, and the
    // QP moves at the queue's rate.
    let o = run(1, 40, 16 * 1024, 256, 4, 20);
    assert!(o.errors.is_empty());
    assert_eq!(o.dropped, 0);
    assert_eq!(o.forwarded, 40 * 64);
}

#[test]
fn cwnd_halves_on_loss_and_collapses_on_timeout() {
    let mut w = Cwnd::new(MAX_UNACKED_PSNS);
    assert_eq!(w.get(), 128, "a new QP has the full window");
    w.on_loss(100, false);
    assert_eq!((w.get(), w.ssthresh()), (50, 50), "half the flight");
    w.on_loss(500, false);
    assert_eq!(
        w.get(),
        25,
        "half the window when more is in flight than it allows"
    );
    w.on_loss(3, false);
    assert_eq!(w.get(), CWND_MIN, "never below the floor");
    let mut w = Cwnd::new(MAX_UNACKED_PSNS);
    w.on_loss(128, true);
    assert_eq!((w.get(), w.ssthresh()), (CWND_MIN, 64));
}

#[test]
fn cwnd_slow_start_then_one_psn_per_window() {
    let mut w = Cwnd::new(MAX_UNACKED_PSNS);
    w.on_loss(128, true);
    // Slow start: each acknowledged PSN opens one more, up to the threshold.
    w.on_ack(2);
    assert_eq!(w.get(), 4);
    w.on_ack(100);
    assert_eq!(w.get(), 64, "slow start stops at the threshold");
    // Congestion avoidance: 64 PSNs acknowledged open one.
    w.on_ack(63);
    assert_eq!(w.get(), 64);
    w.on_ack(1);
    assert_eq!(w.get(), 65);
    // Back to the fixed window, and never past it.
    for _ in 0..200 {
        w.on_ack(128);
    }
    assert_eq!(w.get(), 128);
    let mut tiny = Cwnd::new(1);
    tiny.on_loss(1, true);
    assert_eq!(tiny.get(), 1, "a fixed window of 1 stays 1");
}
