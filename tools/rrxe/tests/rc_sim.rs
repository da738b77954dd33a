// SPDX-License-Identifier: GPL-2.0

//! End-to-end simulation of the RC state machines over a lossy, reordering, duplicating
//! link: one [`Sender`] (requester + completer) talking to one [`Responder`], with every
//! packet built by `packet::build` and parsed back by `packet::parse_for`.

use std::collections::VecDeque;

use proptest::prelude::*;
use rrxe_proto::aeth::{RnrTimer, Syndrome};
use rrxe_proto::bth::Qpn;
use rrxe_proto::opcode::QpType;
use rrxe_proto::packet::{self, PacketSpec};
use rrxe_proto::psn::Psn;
use rrxe_proto::rc::{
    Deliver, PathMtu, Placement, PostedWqe, Request, Responder, ResponderConfig, Response,
    SendAction, SendCompletion, Sender, SenderConfig, WcStatus, WqeHeaders,
};
use rrxe_proto::uabi::WrOpcode;

/// Deterministic xorshift64* generator.
struct Prng(u64);

impl Prng {
    fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// `true` with probability `pm` per mille.
    fn chance(&mut self, pm: u32) -> bool {
        self.next() % 1000 < u64::from(pm)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A one-way link: drops, duplicates and delays packets; with `reorder`, each packet gets
/// its own delay (so packets overtake each other), else the link stays in order (one path,
/// as RoCE assumes).
struct Link {
    loss_pm: u32,
    dup_pm: u32,
    max_delay: u64,
    reorder: bool,
    last_at: u64,
    queue: Vec<(u64, u64, Vec<u8>)>,
    seq: u64,
}

impl Link {
    fn new(loss_pm: u32, dup_pm: u32, max_delay: u64, reorder: bool) -> Self {
        Self {
            loss_pm,
            dup_pm,
            max_delay,
            reorder,
            last_at: 0,
            queue: Vec::new(),
            seq: 0,
        }
    }

    fn send(&mut self, rng: &mut Prng, now: u64, bytes: Vec<u8>) {
        let copies = if rng.chance(self.dup_pm) { 2 } else { 1 };
        for _ in 0..copies {
            if rng.chance(self.loss_pm) {
                continue;
            }
            let mut at = now + 1 + rng.below(self.max_delay);
            if !self.reorder {
                at = at.max(self.last_at);
                self.last_at = at;
            }
            self.seq += 1;
            self.queue.push((at, self.seq, bytes.clone()));
        }
    }

    fn due(&mut self, now: u64) -> Vec<Vec<u8>> {
        let mut due: Vec<_> = Vec::new();
        let mut rest = Vec::new();
        for e in self.queue.drain(..) {
            if e.0 <= now {
                due.push(e);
            } else {
                rest.push(e);
            }
        }
        self.queue = rest;
        due.sort_by_key(|e| (e.0, e.1));
        due.into_iter().map(|e| e.2).collect()
    }
}

fn build(spec: &PacketSpec<'_>) -> Vec<u8> {
    let mut buf = vec![0u8; 8192];
    let n = packet::build(spec, &mut buf).expect("build");
    buf.truncate(n);
    buf
}

#[derive(Clone, Debug)]
struct Msg {
    op: WrOpcode,
    data: Vec<u8>,
    imm: u32,
    /// Offset in the remote memory region (WRITEs).
    remote_off: u64,
}

const REMOTE_VA: u64 = 0x7000_0000;
const RKEY: u32 = 0x1234;
/// Offset of the 8-byte counter that FETCH_ADDs target, and its initial value.
const COUNTER_OFF: usize = 1 << 19;
const COUNTER_INIT: u64 = 0x1000_0000_0000;

#[derive(Clone, Debug)]
struct SimCfg {
    seed: u64,
    fwd_loss_pm: u32,
    rev_loss_pm: u32,
    dup_pm: u32,
    max_delay: u64,
    /// Packets may overtake each other.
    reorder: bool,
    mtu: PathMtu,
    sq_psn: u32,
    retry_cnt: u8,
    rnr_retry: u8,
    msgs: Vec<Msg>,
    /// Receive WQEs posted at start.
    recv_initial: usize,
    /// Post one more receive WQE every this many ticks.
    recv_refill_every: Option<u64>,
    recv_cap: u32,
    /// The responder's `min_rnr_timer` code; the RNR timer lasts 1 + micros / 100 ticks.
    rnr_code: u8,
    rto: u64,
    max_ticks: u64,
    tx_per_tick: usize,
}

impl SimCfg {
    fn new(seed: u64, msgs: Vec<Msg>) -> Self {
        Self {
            seed,
            fwd_loss_pm: 0,
            rev_loss_pm: 0,
            dup_pm: 0,
            max_delay: 4,
            reorder: false,
            mtu: PathMtu::MTU_256,
            sq_psn: 100,
            retry_cnt: 7,
            rnr_retry: 7,
            recv_initial: msgs.len(),
            msgs,
            recv_refill_every: None,
            recv_cap: 4096,
            rnr_code: 1,
            rto: 40,
            max_ticks: 200_000,
            tx_per_tick: 8,
        }
    }
}

#[derive(Debug, Default)]
struct SimResult {
    /// What READs brought back and FETCH_ADDs returned, per message.
    local: Vec<Vec<u8>>,
    /// Times each atomic was executed at the responder (never twice).
    atomic_execs: u32,
    /// Received SEND payloads and WRITE-with-immediate completions: (bytes, imm).
    delivered: Vec<(Vec<u8>, Option<u32>)>,
    completions: Vec<SendCompletion>,
    remote_mem: Vec<u8>,
    sender_error: bool,
    responder_fatal: bool,
    live_timeouts: u32,
    rnr_naks: u32,
    seq_naks: u32,
    psns_seen: Vec<u32>,
    /// Packets with AckReq that do not end a message.
    mid_ack_reqs: u32,
    /// Largest number of PSNs outstanding when a packet was sent.
    max_outstanding: u32,
    ticks: u64,
}

fn run(cfg: &SimCfg) -> SimResult {
    let mut rng = Prng::new(cfg.seed);
    let mut fwd = Link::new(cfg.fwd_loss_pm, cfg.dup_pm, cfg.max_delay, cfg.reorder);
    let mut rev = Link::new(cfg.rev_loss_pm, cfg.dup_pm, cfg.max_delay, cfg.reorder);
    let mut snd: Sender<16> = Sender::new(
        SenderConfig::new(Psn::new(cfg.sq_psn), cfg.mtu, cfg.retry_cnt, cfg.rnr_retry)
            .with_max_rd_atomic(4),
    );
    let mut rsp = Responder::new(ResponderConfig {
        rq_psn: Psn::new(cfg.sq_psn),
        mtu: cfg.mtu,
        min_rnr_timer: RnrTimer::new(cfg.rnr_code).unwrap(),
        remote_write: true,
        remote_read: true,
        remote_atomic: true,
        max_dest_rd_atomic: 4,
        flush_types: 0,
    });
    let mut res = SimResult {
        remote_mem: vec![0; 1 << 20],
        local: vec![Vec::new(); cfg.msgs.len()],
        ..SimResult::default()
    };
    // What the READs will read.
    for m in &cfg.msgs {
        if m.op == WrOpcode::RdmaRead {
            let off = m.remote_off as usize;
            res.remote_mem[off..off + m.data.len()].copy_from_slice(&m.data);
        }
    }
    res.remote_mem[COUNTER_OFF..COUNTER_OFF + 8].copy_from_slice(&COUNTER_INIT.to_le_bytes());
    for (l, m) in res.local.iter_mut().zip(&cfg.msgs) {
        *l = vec![0; m.data.len()];
    }
    let mut rq: VecDeque<u32> = (0..cfg.recv_initial).map(|_| cfg.recv_cap).collect();
    let mut cur_recv: Option<Vec<u8>> = None;
    let mut next_post = 0usize;
    let mut rto_at: Option<u64> = None;
    let mut rnr_at: Option<u64> = None;
    let hdrs = |m: &Msg| {
        if m.op == WrOpcode::AtomicFetchAndAdd {
            WqeHeaders {
                remote_va: REMOTE_VA + COUNTER_OFF as u64,
                rkey: RKEY,
                swap_add: u64::from(m.imm),
                ..WqeHeaders::default()
            }
        } else {
            WqeHeaders {
                remote_va: REMOTE_VA + m.remote_off,
                rkey: RKEY,
                imm_or_inv: m.imm,
                ..WqeHeaders::default()
            }
        }
    };

    let mut now = 0u64;
    while now < cfg.max_ticks {
        now += 1;
        if let Some(every) = cfg.recv_refill_every {
            if now.is_multiple_of(every) {
                rq.push_back(cfg.recv_cap);
            }
        }
        // Requests reaching the responder.
        for bytes in fwd.due(now) {
            let pkt = packet::parse_for(&bytes, QpType::Rc).expect("parse request");
            res.psns_seen.push(pkt.bth.psn().get());
            let req = Request::from_packet(&pkt);
            let out = rsp.on_request(&req, rq.front().copied());
            if out.begin_recv {
                rq.pop_front().expect("begin_recv without a receive WQE");
                assert!(cur_recv.is_none(), "receive WQE begun while one is current");
                cur_recv = Some(Vec::new());
            }
            match out.placement {
                Some(Placement::Recv { offset }) => {
                    let buf = cur_recv.as_mut().expect("no current receive WQE");
                    assert_eq!(buf.len(), offset as usize, "SEND payload out of place");
                    buf.extend_from_slice(pkt.payload);
                }
                Some(Placement::Remote { va, rkey }) => {
                    assert_eq!(rkey, RKEY);
                    let off = (va - REMOTE_VA) as usize;
                    res.remote_mem[off..off + pkt.payload.len()].copy_from_slice(pkt.payload);
                }
                None => {}
            }
            if let Some(c) = out.complete {
                assert_eq!(c.status, WcStatus::Success);
                let buf = cur_recv.take().expect("completion without receive WQE");
                if c.rdma_with_imm {
                    assert!(buf.is_empty());
                    res.delivered.push((vec![0; c.byte_len as usize], c.imm));
                } else {
                    assert_eq!(c.byte_len as usize, buf.len());
                    res.delivered.push((buf, c.imm));
                }
            }
            if let Some(reply) = out.reply {
                rev.send(&mut rng, now, build(&reply.spec(Qpn::new(0x11), 0xffff)));
            }
            if let Some(rd) = out.read {
                assert_eq!(rd.rkey, RKEY);
                let base = (rd.va - REMOTE_VA) as usize;
                for i in 0..rd.packets(cfg.mtu) {
                    let r = rd.response(i, cfg.mtu);
                    let off = base + r.offset as usize;
                    let payload = res.remote_mem[off..off + r.len as usize].to_vec();
                    let spec = r.spec(Qpn::new(0x11), 0xffff, rd.msn, &payload);
                    rev.send(&mut rng, now, build(&spec));
                }
            }
            if let Some(a) = out.atomic {
                let off = (a.va - REMOTE_VA) as usize;
                let word: &mut [u8; 8] = (&mut res.remote_mem[off..off + 8]).try_into().unwrap();
                let orig = u64::from_le_bytes(*word);
                *word = a.op.apply(orig).to_le_bytes();
                res.atomic_execs += 1;
                let reply = rsp.atomic_done(orig);
                rev.send(&mut rng, now, build(&reply.spec(Qpn::new(0x11), 0xffff)));
            }
            if let Some(reply) = out.atomic_reply {
                rev.send(&mut rng, now, build(&reply.spec(Qpn::new(0x11), 0xffff)));
            }
            if out.fatal {
                res.responder_fatal = true;
            }
        }
        // Responses reaching the requester.
        for bytes in rev.due(now) {
            let pkt = packet::parse_for(&bytes, QpType::Rc).expect("parse response");
            let r = Response::from_packet(&pkt).expect("AETH");
            if r.opcode
                .info()
                .is_some_and(|i| i.op == rrxe_proto::opcode::Op::ReadResponse)
            {
                res.psns_seen.push(r.psn.get());
            }
            match r.syndrome {
                Syndrome::RnrNak(_) => res.rnr_naks += 1,
                Syndrome::Nak(_) => res.seq_naks += 1,
                Syndrome::Ack(_) => {}
            }
            match snd.check_response(&r) {
                Some(Deliver::ReadData { id, offset }) => {
                    let o = offset as usize;
                    res.local[id as usize][o..o + pkt.payload.len()].copy_from_slice(pkt.payload);
                }
                Some(Deliver::AtomicOrig { id, orig }) => {
                    res.local[id as usize].copy_from_slice(&orig.to_le_bytes());
                }
                None => {}
            }
            snd.on_response(&r);
        }
        if rto_at.is_some_and(|t| t <= now) {
            rto_at = None;
            if snd.unacked_psn() != snd.next_psn() {
                res.live_timeouts += 1;
            }
            snd.on_retransmit_timeout();
        }
        if rnr_at.is_some_and(|t| t <= now) {
            rnr_at = None;
            snd.on_rnr_timeout();
        }
        while next_post < cfg.msgs.len() && snd.has_room() {
            let m = &cfg.msgs[next_post];
            snd.post(PostedWqe {
                id: next_post as u32,
                op: m.op,
                len: m.data.len() as u32,
                solicited: false,
                fence: false,
            })
            .expect("post");
            next_post += 1;
        }
        let mut sent = 0;
        loop {
            while let Some(a) = snd.poll() {
                match a {
                    SendAction::Complete(c) => res.completions.push(c),
                    SendAction::ArmRetransmitTimer => rto_at = Some(now + cfg.rto),
                    SendAction::StopRetransmitTimer => rto_at = None,
                    SendAction::ArmRnrTimer(t) => {
                        rnr_at = Some(now + 1 + u64::from(t.micros()) / 100)
                    }
                    SendAction::EnterError => res.sender_error = true,
                }
            }
            if sent >= cfg.tx_per_tick {
                break;
            }
            let Some(p) = snd.next_packet() else { break };
            let last = p.opcode.info().is_some_and(|i| i.is_last());
            res.mid_ack_reqs += u32::from(p.ack_req && !last);
            let outstanding = p.psn.next().diff(snd.unacked_psn()) as u32;
            res.max_outstanding = res.max_outstanding.max(outstanding);
            let m = &cfg.msgs[p.id as usize];
            let payload = if m.op.has_payload() {
                &m.data[p.offset as usize..(p.offset + p.len) as usize]
            } else {
                &[][..]
            };
            let spec = p.spec(Qpn::new(0x22), 0xffff, &hdrs(m), payload);
            fwd.send(&mut rng, now, build(&spec));
            sent += 1;
        }
        if res.sender_error || res.completions.len() == cfg.msgs.len() {
            break;
        }
    }
    res.ticks = now;
    res
}

fn msg(op: WrOpcode, len: usize, tag: u8, remote_off: u64) -> Msg {
    Msg {
        op,
        data: (0..len).map(|i| (i as u8).wrapping_mul(31) ^ tag).collect(),
        imm: 0xabcd_0000 | u32::from(tag),
        remote_off,
    }
}

/// A mix of SEND, SEND with immediate, RDMA WRITE and WRITE with immediate (and with
/// `rd_atomic`, RDMA READ and FETCH_ADD), of lengths from 0 to several MTUs.
fn workload(rng: &mut Prng, n: usize, mtu: u32) -> Vec<Msg> {
    workload_ops(rng, n, mtu, true)
}

fn workload_ops(rng: &mut Prng, n: usize, mtu: u32, rd_atomic: bool) -> Vec<Msg> {
    let mut off = 0u64;
    (0..n)
        .map(|i| {
            let len = match rng.below(5) {
                0 => 0,
                1 => rng.below(u64::from(mtu)) as usize + 1,
                2 => mtu as usize,
                _ => rng.below(u64::from(mtu) * 6) as usize,
            };
            let op = [
                WrOpcode::Send,
                WrOpcode::SendWithImm,
                WrOpcode::RdmaWrite,
                WrOpcode::RdmaWriteWithImm,
                WrOpcode::RdmaRead,
                WrOpcode::AtomicFetchAndAdd,
            ][rng.below(if rd_atomic { 6 } else { 4 }) as usize];
            let len = if op == WrOpcode::AtomicFetchAndAdd {
                8
            } else {
                len
            };
            let m = msg(op, len, i as u8, off);
            off += len as u64;
            m
        })
        .collect()
}

/// The receive completions the messages should produce: (bytes, imm).
fn expected_delivery(cfg: &SimCfg) -> Vec<(Vec<u8>, Option<u32>)> {
    cfg.msgs
        .iter()
        .filter_map(|m| match m.op {
            WrOpcode::Send => Some((m.data.clone(), None)),
            WrOpcode::SendWithImm => Some((m.data.clone(), Some(m.imm))),
            WrOpcode::RdmaWriteWithImm => Some((vec![0; m.data.len()], Some(m.imm))),
            _ => None,
        })
        .collect()
}

/// Checks exactly-once, in-order delivery and in-order successful completions.
fn check_delivery(cfg: &SimCfg, res: &SimResult) {
    assert!(
        !res.sender_error,
        "sender error: {:?}",
        res.completions
            .iter()
            .find(|c| c.status != WcStatus::Success)
    );
    assert!(!res.responder_fatal);
    let ids: Vec<u32> = res.completions.iter().map(|c| c.id).collect();
    assert_eq!(ids, (0..cfg.msgs.len() as u32).collect::<Vec<_>>());
    for c in &res.completions {
        assert_eq!(c.status, WcStatus::Success);
    }
    let want = expected_delivery(cfg);
    assert_eq!(res.delivered.len(), want.len(), "message count");
    for (i, (got, want)) in res.delivered.iter().zip(&want).enumerate() {
        assert!(got == want, "message {i} differs");
    }
    let mut counter = COUNTER_INIT;
    for (i, m) in cfg.msgs.iter().enumerate() {
        if matches!(m.op, WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm) {
            let off = m.remote_off as usize;
            assert!(
                res.remote_mem[off..off + m.data.len()] == m.data[..],
                "WRITE data"
            );
        }
        if m.op == WrOpcode::RdmaRead {
            if res.local[i] != m.data {
                let d = res.local[i].iter().zip(&m.data).position(|(a, b)| a != b);
                panic!(
                    "READ {i} data: len {} first diff {:?} got {:?} want {:?} remote {:?}",
                    m.data.len(),
                    d,
                    &res.local[i][510..520],
                    &m.data[510..520],
                    &res.remote_mem[m.remote_off as usize + 510..m.remote_off as usize + 520]
                );
            }
        }
        if m.op == WrOpcode::AtomicFetchAndAdd {
            // Executed once each, in order: each sees the sum of the ones before.
            assert_eq!(res.local[i], counter.to_le_bytes(), "FETCH_ADD {i} result");
            counter = counter.wrapping_add(u64::from(m.imm));
        }
    }
    let n_atomic = cfg
        .msgs
        .iter()
        .filter(|m| m.op == WrOpcode::AtomicFetchAndAdd)
        .count() as u32;
    assert_eq!(res.atomic_execs, n_atomic, "atomics executed exactly once");
    assert_eq!(
        res.remote_mem[COUNTER_OFF..COUNTER_OFF + 8],
        counter.to_le_bytes(),
        "counter"
    );
}

#[test]
fn clean_link_delivers_everything() {
    let mut rng = Prng::new(1);
    let cfg = SimCfg::new(1, workload(&mut rng, 60, 256));
    let res = run(&cfg);
    check_delivery(&cfg, &res);
    assert_eq!(res.live_timeouts, 0);
}

#[test]
fn lossy_link_delivers_everything() {
    let mut rng = Prng::new(7);
    let mut cfg = SimCfg::new(7, workload(&mut rng, 80, 256));
    cfg.fwd_loss_pm = 100;
    cfg.rev_loss_pm = 100;
    cfg.dup_pm = 50;
    cfg.max_delay = 10;
    let res = run(&cfg);
    check_delivery(&cfg, &res);
    assert!(res.seq_naks > 0 && res.live_timeouts > 0);
}

#[test]
fn psn_wraps_around() {
    let mut rng = Prng::new(3);
    let mut cfg = SimCfg::new(3, workload(&mut rng, 60, 256));
    cfg.sq_psn = 0xff_ffc0;
    cfg.fwd_loss_pm = 30;
    cfg.rev_loss_pm = 30;
    cfg.max_delay = 6;
    let res = run(&cfg);
    check_delivery(&cfg, &res);
    assert!(res.psns_seen.iter().any(|&p| p >= 0xff_ffc0));
    assert!(res.psns_seen.iter().any(|&p| p < 0x100), "no wrap");
}

#[test]
fn total_loss_exhausts_retry_cnt() {
    for retry_cnt in [0u8, 1, 3, 7] {
        let msgs = vec![
            msg(WrOpcode::Send, 700, 1, 0),
            msg(WrOpcode::Send, 10, 2, 0),
        ];
        let mut cfg = SimCfg::new(11, msgs);
        cfg.fwd_loss_pm = 1000;
        cfg.retry_cnt = retry_cnt;
        let res = run(&cfg);
        assert!(res.sender_error);
        assert_eq!(res.live_timeouts, u32::from(retry_cnt) + 1);
        let st: Vec<_> = res.completions.iter().map(|c| (c.id, c.status)).collect();
        assert_eq!(st, [(0, WcStatus::RetryExcErr), (1, WcStatus::WrFlushErr)]);
    }
}

#[test]
fn no_receive_wqe_exhausts_rnr_retry() {
    for rnr_retry in [0u8, 2, 6] {
        let msgs = vec![
            msg(WrOpcode::Send, 300, 1, 0),
            msg(WrOpcode::SendWithImm, 5, 2, 0),
        ];
        let mut cfg = SimCfg::new(5, msgs);
        cfg.recv_initial = 0;
        cfg.rnr_retry = rnr_retry;
        // No reordering: every RNR NAK answers the latest retry, so they can be counted.
        cfg.max_delay = 1;
        let res = run(&cfg);
        assert!(res.sender_error);
        assert_eq!(res.rnr_naks, u32::from(rnr_retry) + 1);
        let st: Vec<_> = res.completions.iter().map(|c| (c.id, c.status)).collect();
        assert_eq!(
            st,
            [(0, WcStatus::RnrRetryExcErr), (1, WcStatus::WrFlushErr)]
        );
        assert!(res.delivered.is_empty());
    }
}

#[test]
fn rnr_retry_7_is_infinite() {
    let mut rng = Prng::new(9);
    let mut cfg = SimCfg::new(9, workload(&mut rng, 20, 256));
    cfg.recv_initial = 0;
    cfg.recv_refill_every = Some(400);
    cfg.rnr_retry = 7;
    let res = run(&cfg);
    check_delivery(&cfg, &res);
    assert!(res.rnr_naks > 100, "only {} RNR NAKs", res.rnr_naks);
}

#[test]
fn slow_receiver_with_limited_rnr_retry_recovers() {
    // Receive WQEs trickle in: RNR NAKs happen, but each refill makes progress and
    // resets the counter.
    let mut rng = Prng::new(13);
    let mut cfg = SimCfg::new(13, workload(&mut rng, 30, 256));
    cfg.recv_initial = 1;
    cfg.recv_refill_every = Some(30);
    cfg.rnr_code = 14; // 1.28 ms: 13 ticks
    cfg.rnr_retry = 3;
    cfg.fwd_loss_pm = 20;
    let res = run(&cfg);
    check_delivery(&cfg, &res);
    assert!(res.rnr_naks > 0);
}

#[test]
fn long_messages_fill_the_window() {
    let msgs: Vec<Msg> = (0..6)
        .map(|i| msg(WrOpcode::Send, 300 * 256 + 17, i, 0))
        .collect();
    let mut cfg = SimCfg::new(21, msgs);
    cfg.recv_cap = 1 << 20;
    cfg.tx_per_tick = 64;
    cfg.fwd_loss_pm = 5;
    let res = run(&cfg);
    check_delivery(&cfg, &res);
    assert_eq!(res.max_outstanding, 128);
    assert!(res.mid_ack_reqs > 0);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn exactly_once_in_order(
        seed in any::<u64>(),
        loss in 0u32..150,
        rev_loss in 0u32..150,
        dup in 0u32..100,
        delay in 1u64..12,
        mtu in prop::sample::select(vec![256u32, 512, 1024, 4096]),
        near_wrap in any::<bool>(),
        n in 1usize..40,
        reorder in any::<bool>(),
    ) {
        let mut rng = Prng::new(seed);
        let mtu = PathMtu::from_bytes(mtu).unwrap();
        // Go-back-N READs over a reordering link cost retries; they are covered in order.
        let mut cfg = SimCfg::new(seed, workload_ops(&mut rng, n, mtu.bytes(), !reorder));
        cfg.reorder = reorder;
        cfg.mtu = mtu;
        cfg.fwd_loss_pm = loss;
        cfg.rev_loss_pm = rev_loss;
        cfg.dup_pm = dup;
        cfg.max_delay = delay;
        cfg.rto = 3 * delay + 20;
        if near_wrap {
            cfg.sq_psn = 0xff_ffff - (seed % 64) as u32;
        }
        cfg.recv_cap = 6 * 4096;
        let res = run(&cfg);
        check_delivery(&cfg, &res);
    }

    /// On a very lossy link the retry counter may run out, but what was delivered is
    /// still an in-order prefix, and the completions are successes, then one
    /// RETRY_EXC_ERR, then flushes.
    #[test]
    fn heavy_loss_never_corrupts(
        seed in any::<u64>(),
        loss in 200u32..600,
        n in 1usize..30,
    ) {
        let mut rng = Prng::new(seed);
        let mut cfg = SimCfg::new(seed, workload(&mut rng, n, 256));
        cfg.fwd_loss_pm = loss;
        cfg.rev_loss_pm = loss;
        cfg.dup_pm = 50;
        cfg.max_delay = 6;
        let res = run(&cfg);
        prop_assert!(!res.responder_fatal);
        let want = expected_delivery(&cfg);
        prop_assert!(res.delivered.len() <= want.len());
        prop_assert!(res.delivered[..] == want[..res.delivered.len()]);
        let ids: Vec<u32> = res.completions.iter().map(|c| c.id).collect();
        prop_assert_eq!(ids, (0..res.completions.len() as u32).collect::<Vec<_>>());
        let ok = res.completions.iter().take_while(|c| c.status == WcStatus::Success).count();
        if ok < cfg.msgs.len() {
            prop_assert!(res.sender_error);
            prop_assert_eq!(res.completions[ok].status, WcStatus::RetryExcErr);
            for c in &res.completions[ok + 1..] {
                prop_assert_eq!(c.status, WcStatus::WrFlushErr);
            }
        }
    }
}
