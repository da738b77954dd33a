// SPDX-License-Identifier: GPL-2.0

//! Unit tests of the sender in its Unreliable Connected mode ([`Transport::Uc`]): UC
//! opcodes, no AckReq, completion once the last packet is out, no timers, no READ or
//! atomics; RC unchanged next to it.

mod common;

use common::sender::{completions, drain_poll, drain_tx, summary, wqe};
use rrxe_proto::aeth::{Credits, NakCode, Syndrome};
use rrxe_proto::bth::Qpn;
use rrxe_proto::opcode::{AckReq, Opcode, Position, QpType};
use rrxe_proto::packet;
use rrxe_proto::psn::{Msn, Psn};
use rrxe_proto::rc::{
    PathMtu, PostError, Request, Responder, ResponderConfig, Response, SendAction, SendCompletion,
    Sender, SenderConfig, Transport, WcStatus, WqeHeaders,
};
use rrxe_proto::uabi::WrOpcode;

const MTU: PathMtu = PathMtu::MTU_256;

fn uc_config(psn: u32) -> SenderConfig {
    SenderConfig::new(Psn::new(psn), MTU, 7, 7).with_transport(Transport::Uc)
}

fn uc_sender(psn: u32) -> Sender<8> {
    Sender::new(uc_config(psn))
}

fn no_timers(actions: &[SendAction]) -> bool {
    actions.iter().all(|a| matches!(a, SendAction::Complete(_)))
}

#[test]
fn transport_defaults_to_rc() {
    let cfg = SenderConfig::new(Psn::new(0), MTU, 7, 7);
    assert_eq!(cfg.transport, Transport::Rc);
    assert_eq!(Transport::default(), Transport::Rc);
    assert_eq!(cfg.with_transport(Transport::Uc).transport, Transport::Uc);
    let s: Sender<2> = Sender::new(uc_config(3));
    assert_eq!(s.config().transport, Transport::Uc);
}

#[test]
fn uc_opcodes_match_the_opcode_table() {
    let ops = [
        (WrOpcode::Send, WrOpcode::Send),
        (WrOpcode::SendWithImm, WrOpcode::SendWithImm),
        (WrOpcode::SendWithInv, WrOpcode::SendWithInv),
        (WrOpcode::RdmaWrite, WrOpcode::RdmaWrite),
        (WrOpcode::RdmaWriteWithImm, WrOpcode::RdmaWriteWithImm),
        (WrOpcode::RdmaRead, WrOpcode::RdmaRead),
        (WrOpcode::AtomicCmpAndSwp, WrOpcode::AtomicCmpAndSwp),
        (WrOpcode::AtomicFetchAndAdd, WrOpcode::AtomicFetchAndAdd),
    ];
    let positions = [
        (true, true, Position::Only),
        (true, false, Position::First),
        (false, false, Position::Middle),
        (false, true, Position::Last),
    ];
    for (op, wr) in ops {
        for (first, last, position) in positions {
            // No message of a work request UC does not carry, though a SEND with
            // invalidate would start like a SEND.
            let want = wr
                .packet_opcode(QpType::Uc, Position::Only)
                .and(wr.packet_opcode(QpType::Uc, position));
            assert_eq!(op.uc_opcode(first, last), want, "{op:?} {position:?}");
            assert_eq!(op.opcode_on(QpType::Uc, first, last), want);
            if let Some(o) = want {
                let info = o.info().unwrap();
                assert!(info.allowed_on(QpType::Uc) && info.ack_req() == AckReq::Never);
            }
            assert_eq!(
                op.opcode_on(QpType::Rc, first, last),
                op.opcode(first, last)
            );
        }
        assert!(op.allowed_on(QpType::Rc));
        assert_eq!(
            op.allowed_on(QpType::Uc),
            matches!(
                op,
                WrOpcode::Send
                    | WrOpcode::SendWithImm
                    | WrOpcode::RdmaWrite
                    | WrOpcode::RdmaWriteWithImm
            ),
            "{op:?}"
        );
    }
}

#[test]
fn uc_opcodes_are_the_iba_ones() {
    // (operation, [ONLY, FIRST, MIDDLE, LAST]) as IBA Table 38 lists them for UC.
    let none = [None; 4];
    let expect = [
        (
            WrOpcode::Send,
            [
                Some(Opcode::UC_SEND_ONLY),
                Some(Opcode::UC_SEND_FIRST),
                Some(Opcode::UC_SEND_MIDDLE),
                Some(Opcode::UC_SEND_LAST),
            ],
        ),
        (
            WrOpcode::SendWithImm,
            [
                Some(Opcode::UC_SEND_ONLY_WITH_IMMEDIATE),
                Some(Opcode::UC_SEND_FIRST),
                Some(Opcode::UC_SEND_MIDDLE),
                Some(Opcode::UC_SEND_LAST_WITH_IMMEDIATE),
            ],
        ),
        (
            WrOpcode::RdmaWrite,
            [
                Some(Opcode::UC_RDMA_WRITE_ONLY),
                Some(Opcode::UC_RDMA_WRITE_FIRST),
                Some(Opcode::UC_RDMA_WRITE_MIDDLE),
                Some(Opcode::UC_RDMA_WRITE_LAST),
            ],
        ),
        (
            WrOpcode::RdmaWriteWithImm,
            [
                Some(Opcode::UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE),
                Some(Opcode::UC_RDMA_WRITE_FIRST),
                Some(Opcode::UC_RDMA_WRITE_MIDDLE),
                Some(Opcode::UC_RDMA_WRITE_LAST_WITH_IMMEDIATE),
            ],
        ),
        (WrOpcode::SendWithInv, none),
        (WrOpcode::RdmaRead, none),
        (WrOpcode::AtomicCmpAndSwp, none),
        (WrOpcode::AtomicFetchAndAdd, none),
    ];
    for (op, want) in expect {
        let got = [(true, true), (true, false), (false, false), (false, true)]
            .map(|(first, last)| op.uc_opcode(first, last));
        assert_eq!(got, want, "{op:?}");
    }
}

#[test]
fn uc_multi_packet_send_uses_uc_opcodes_without_ack_req() {
    let mut s = uc_sender(0xff_fffe);
    s.post(wqe(5, WrOpcode::Send, 600)).unwrap();
    s.post(wqe(6, WrOpcode::SendWithImm, 0)).unwrap();
    let pkts = drain_tx(&mut s);
    assert_eq!(
        summary(&pkts),
        [
            (5, Opcode::UC_SEND_FIRST, 0xff_fffe, 0, 256, false, false),
            (5, Opcode::UC_SEND_MIDDLE, 0xff_ffff, 256, 256, false, false),
            (5, Opcode::UC_SEND_LAST, 0, 512, 88, false, true),
            (6, Opcode::UC_SEND_ONLY_WITH_IMMEDIATE, 1, 0, 0, false, true),
        ]
    );
    assert!(pkts.iter().all(|p| !p.retransmit));
    let a = drain_poll(&mut s);
    assert!(no_timers(&a), "{a:?}");
    assert_eq!(
        completions(&a),
        [(5, WcStatus::Success), (6, WcStatus::Success)]
    );
    assert!(s.is_idle());
    assert_eq!(s.next_psn(), Psn::new(2));
    assert_eq!(s.unacked_psn(), Psn::new(2));
}

#[test]
fn uc_write_with_imm_builds_uc_packets() {
    let mut s = uc_sender(40);
    s.post(wqe(1, WrOpcode::RdmaWriteWithImm, 600)).unwrap();
    let pkts = drain_tx(&mut s);
    assert_eq!(
        summary(&pkts),
        [
            (1, Opcode::UC_RDMA_WRITE_FIRST, 40, 0, 256, false, false),
            (1, Opcode::UC_RDMA_WRITE_MIDDLE, 41, 256, 256, false, false),
            (
                1,
                Opcode::UC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
                42,
                512,
                88,
                false,
                true
            ),
        ]
    );
    // The header sets build, and parse back on a UC QP (and only there).
    let hdrs = WqeHeaders {
        remote_va: 0x1000,
        rkey: 77,
        imm_or_inv: 0xdead_beef,
        ..WqeHeaders::default()
    };
    let mut buf = [0u8; 512];
    for p in &pkts {
        let payload = vec![3u8; p.len as usize];
        let spec = p.spec(Qpn::new(9), 0xffff, &hdrs, &payload);
        assert_eq!(spec.bth.opcode, p.opcode);
        assert!(!spec.bth.ack_req);
        let n = packet::build(&spec, &mut buf).unwrap();
        assert!(packet::parse_for(&buf[..n], QpType::Rc).is_err());
        let pkt = packet::parse_for(&buf[..n], QpType::Uc).unwrap();
        assert!(!pkt.bth.ack_req());
        let req = Request::from_packet(&pkt);
        assert_eq!(req.opcode, p.opcode);
        assert!(!req.ack_req);
        assert_eq!(req.payload_len, p.len);
        if p.offset == 0 {
            assert_eq!(req.reth, Some((0x1000, 77, 600)));
        } else {
            assert!(req.reth.is_none());
        }
        assert_eq!(req.imm, (p.len == 88).then_some(0xdead_beef));
    }
    assert_eq!(completions(&drain_poll(&mut s)), [(1, WcStatus::Success)]);
}

#[test]
fn uc_completes_each_wqe_once_its_last_packet_is_out_in_order() {
    let mut s = uc_sender(100);
    s.post(wqe(0, WrOpcode::RdmaWrite, 300)).unwrap(); // PSNs 100-101
    s.post(wqe(1, WrOpcode::Send, 10)).unwrap(); // 102
    s.post(wqe(2, WrOpcode::RdmaWriteWithImm, 512)).unwrap(); // 103-104
    let p = s.next_packet().unwrap();
    assert_eq!((p.id, p.opcode), (0, Opcode::UC_RDMA_WRITE_FIRST));
    assert!(drain_poll(&mut s).is_empty(), "not before the last packet");
    let p = s.next_packet().unwrap();
    assert_eq!((p.id, p.opcode), (0, Opcode::UC_RDMA_WRITE_LAST));
    assert_eq!(completions(&drain_poll(&mut s)), [(0, WcStatus::Success)]);
    let p = s.next_packet().unwrap();
    assert_eq!((p.id, p.opcode), (1, Opcode::UC_SEND_ONLY));
    let p = s.next_packet().unwrap();
    assert_eq!((p.id, p.opcode), (2, Opcode::UC_RDMA_WRITE_FIRST));
    assert_eq!(completions(&drain_poll(&mut s)), [(1, WcStatus::Success)]);
    assert!(!s.is_idle());
    let p = s.next_packet().unwrap();
    assert_eq!(
        (p.id, p.opcode, p.psn.get()),
        (2, Opcode::UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, 104)
    );
    assert_eq!(s.next_packet(), None);
    let a = drain_poll(&mut s);
    assert!(no_timers(&a));
    let c: Vec<_> = a
        .iter()
        .filter_map(|a| match a {
            SendAction::Complete(c) => Some(*c),
            _ => None,
        })
        .collect();
    assert_eq!(
        c,
        [SendCompletion {
            id: 2,
            op: WrOpcode::RdmaWriteWithImm,
            len: 512,
            status: WcStatus::Success
        }]
    );
    assert!(s.is_idle());
}

#[test]
fn uc_has_no_window_timers_or_retransmissions() {
    let mut s = uc_sender(0);
    // 200 packets in one WQE: more than the RC window of 128 unacknowledged PSNs.
    s.post(wqe(0, WrOpcode::Send, 200 * 256)).unwrap();
    s.post(wqe(1, WrOpcode::RdmaWrite, 256)).unwrap();
    let pkts = drain_tx(&mut s);
    assert_eq!(pkts.len(), 201, "no window");
    assert!(pkts.iter().all(|p| !p.ack_req && !p.retransmit));
    let a = drain_poll(&mut s);
    assert!(no_timers(&a), "{a:?}");
    assert_eq!(
        completions(&a),
        [(0, WcStatus::Success), (1, WcStatus::Success)]
    );
    // Responses and timer expiries change nothing: nothing is resent, nothing fails.
    s.post(wqe(2, WrOpcode::Send, 600)).unwrap();
    let p = s.next_packet().unwrap();
    assert_eq!(p.psn.get(), 201);
    let resp = |psn: u32, syndrome| Response {
        opcode: Opcode::RC_ACKNOWLEDGE,
        psn: Psn::new(psn),
        syndrome,
        msn: Msn::default(),
        payload_len: 0,
        atomic_orig: None,
    };
    for r in [
        Response::ack(Psn::new(201)),
        resp(201, Syndrome::Nak(NakCode::PsnSequenceError)),
        resp(201, Syndrome::Nak(NakCode::RemoteAccessError)),
        resp(201, Syndrome::Ack(Credits::INVALID)),
    ] {
        assert_eq!(s.check_response(&r), None);
        s.on_response(&r);
        s.on_local_error(&r, WcStatus::LocProtErr);
    }
    s.on_retransmit_timeout();
    s.on_rnr_timeout();
    assert!(drain_poll(&mut s).is_empty());
    let rest = drain_tx(&mut s);
    assert_eq!(
        rest.iter().map(|p| p.psn.get()).collect::<Vec<_>>(),
        [202, 203]
    );
    assert!(rest.iter().all(|p| !p.retransmit));
    assert_eq!(completions(&drain_poll(&mut s)), [(2, WcStatus::Success)]);
    assert!(s.has_room());
}

#[test]
fn uc_rejects_read_atomics_and_send_with_invalidate() {
    let mut s = uc_sender(0);
    for op in [
        WrOpcode::RdmaRead,
        WrOpcode::AtomicCmpAndSwp,
        WrOpcode::AtomicFetchAndAdd,
        WrOpcode::SendWithInv,
    ] {
        assert_eq!(s.post(wqe(0, op, 8)), Err(PostError::Unsupported), "{op:?}");
    }
    assert!(s.is_idle());
    assert_eq!(s.next_packet(), None);
    assert!(drain_poll(&mut s).is_empty());
    // The same WQEs are accepted by an RC sender.
    let mut rc: Sender<8> = Sender::new(SenderConfig::new(Psn::new(0), MTU, 7, 7));
    for op in [
        WrOpcode::RdmaRead,
        WrOpcode::AtomicCmpAndSwp,
        WrOpcode::AtomicFetchAndAdd,
        WrOpcode::SendWithInv,
    ] {
        rc.post(wqe(0, op, 8)).unwrap();
    }
    // Length, then transport, then room; and a dead sender refuses everything.
    assert_eq!(
        s.post(wqe(0, WrOpcode::RdmaRead, (1 << 31) + 1)),
        Err(PostError::TooLong)
    );
    s.flush();
    assert_eq!(s.post(wqe(0, WrOpcode::Send, 1)), Err(PostError::QpError));
}

#[test]
fn uc_sq_drain_and_flush() {
    let mut s = uc_sender(0);
    s.post(wqe(0, WrOpcode::Send, 512)).unwrap();
    s.post(wqe(1, WrOpcode::Send, 10)).unwrap();
    s.post(wqe(2, WrOpcode::RdmaWrite, 10)).unwrap();
    assert_eq!(s.next_packet().unwrap().opcode, Opcode::UC_SEND_FIRST);
    s.set_sq_drain(true);
    assert_eq!(s.next_packet().unwrap().opcode, Opcode::UC_SEND_LAST);
    assert_eq!(s.next_packet(), None);
    assert_eq!(completions(&drain_poll(&mut s)), [(0, WcStatus::Success)]);
    s.set_sq_drain(false);
    assert_eq!(s.next_packet().unwrap().id, 1);
    // What was handed out completes; the rest is flushed.
    s.flush();
    let a = drain_poll(&mut s);
    assert!(no_timers(&a), "{a:?}");
    assert_eq!(
        completions(&a),
        [(1, WcStatus::Success), (2, WcStatus::WrFlushErr)]
    );
    assert!(s.is_idle());
}

#[test]
fn uc_sender_after_reset_behaves_the_same() {
    let mut s = uc_sender(7);
    s.post(wqe(0, WrOpcode::Send, 300)).unwrap();
    s.post(wqe(1, WrOpcode::RdmaWrite, 300)).unwrap();
    s.next_packet().unwrap();
    s.reset(uc_config(0x10));
    assert!(s.is_idle());
    assert_eq!(s.config().transport, Transport::Uc);
    assert!(drain_poll(&mut s).is_empty(), "dropped without completions");
    assert_eq!(
        s.post(wqe(0, WrOpcode::RdmaRead, 8)),
        Err(PostError::Unsupported)
    );
    s.post(wqe(3, WrOpcode::SendWithImm, 300)).unwrap();
    s.post(wqe(4, WrOpcode::RdmaWriteWithImm, 10)).unwrap();
    assert_eq!(
        summary(&drain_tx(&mut s)),
        [
            (3, Opcode::UC_SEND_FIRST, 0x10, 0, 256, false, false),
            (
                3,
                Opcode::UC_SEND_LAST_WITH_IMMEDIATE,
                0x11,
                256,
                44,
                false,
                true
            ),
            (
                4,
                Opcode::UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE,
                0x12,
                0,
                10,
                false,
                true
            ),
        ]
    );
    let a = drain_poll(&mut s);
    assert!(no_timers(&a));
    assert_eq!(
        completions(&a),
        [(3, WcStatus::Success), (4, WcStatus::Success)]
    );
    // A reset to RC gives the RC sender back.
    s.reset(SenderConfig::new(Psn::new(0), MTU, 7, 7));
    s.post(wqe(5, WrOpcode::Send, 10)).unwrap();
    let p = s.next_packet().unwrap();
    assert_eq!((p.opcode, p.ack_req), (Opcode::RC_SEND_ONLY, true));
    assert_eq!(drain_poll(&mut s), [SendAction::ArmRetransmitTimer]);
}

#[test]
fn uc_sender_feeds_the_uc_responder() {
    let mut s = uc_sender(0xff_fffe);
    let mut r: Responder = Responder::new(ResponderConfig {
        rq_psn: Psn::new(0xff_fffe),
        mtu: MTU,
        min_rnr_timer: rrxe_proto::aeth::RnrTimer::new(12).unwrap(),
        remote_write: true,
        remote_read: false,
        remote_atomic: false,
        max_dest_rd_atomic: 1,
        flush_types: 0,
    });
    s.post(wqe(0, WrOpcode::SendWithImm, 700)).unwrap();
    s.post(wqe(1, WrOpcode::RdmaWriteWithImm, 300)).unwrap();
    let hdrs = WqeHeaders {
        remote_va: 0x2000,
        rkey: 5,
        imm_or_inv: 0x1234_5678,
        ..WqeHeaders::default()
    };
    let mut buf = [0u8; 512];
    let mut recv = Vec::new();
    for p in drain_tx(&mut s) {
        let payload = vec![1u8; p.len as usize];
        let n = packet::build(&p.spec(Qpn::new(3), 0xffff, &hdrs, &payload), &mut buf).unwrap();
        let pkt = packet::parse_for(&buf[..n], QpType::Uc).unwrap();
        let out = r.on_uc_request(&Request::from_packet(&pkt), Some(4096));
        assert!(out.reply.is_none() && !out.fatal);
        recv.extend(out.complete.map(|c| (c.byte_len, c.imm, c.rdma_with_imm)));
    }
    assert_eq!(
        recv,
        [
            (700, Some(0x1234_5678), false),
            (300, Some(0x1234_5678), true)
        ]
    );
    assert_eq!(
        completions(&drain_poll(&mut s)),
        [(0, WcStatus::Success), (1, WcStatus::Success)]
    );
}
