// SPDX-License-Identifier: GPL-2.0

//! What the RC machines do for on-demand paging faults: the responder names the memory a
//! request would write before accepting it ([`Responder::touches`]) and refuses it with an
//! RNR NAK that leaves its state alone ([`Responder::rnr_nak`]); the requester goes back
//! after a fault of its own without spending a retry ([`Sender::on_fault_resolved`]).

mod common;

use common::sender::{completions, drain_poll, drain_tx, wqe};
use rrxe_proto::aeth::{Credits, RnrTimer, Syndrome};
use rrxe_proto::opcode::Opcode;
use rrxe_proto::psn::{Msn, Psn};
use rrxe_proto::rc::responder::AtomicReq;
use rrxe_proto::rc::{
    PathMtu, Placement, Request, Response, Sender, SenderConfig, Touches, WcStatus,
};
use rrxe_proto::uabi::WrOpcode;

const MTU: PathMtu = PathMtu::MTU_1024;

fn req(opcode: Opcode, psn: u32, len: u32) -> Request {
    Request {
        opcode,
        psn: Psn::new(psn),
        payload_len: len,
        ..Request::default()
    }
}

fn ack(psn: u32) -> Response {
    Response {
        opcode: Opcode::RC_ACKNOWLEDGE,
        psn: Psn::new(psn),
        syndrome: Syndrome::Ack(Credits::INVALID),
        msn: Msn::new(0),
        payload_len: 0,
        atomic_orig: None,
    }
}

#[test]
fn touches_names_what_an_in_sequence_request_writes() {
    let mut r = common::responder::responder(0, MTU);
    // A SEND beginning a message: the head receive WQE, from its start.
    let first = req(Opcode::RC_SEND_FIRST, 0, 1024);
    assert_eq!(
        r.touches(&first),
        Some(Touches::Recv {
            offset: 0,
            len: 1024,
            fresh: true
        })
    );
    let out = r.on_request(&first, Some(4096));
    assert_eq!(out.placement, Some(Placement::Recv { offset: 0 }));
    // Its next packet: the current WQE, where the first one ended.
    assert_eq!(
        r.touches(&req(Opcode::RC_SEND_LAST, 1, 100)),
        Some(Touches::Recv {
            offset: 1024,
            len: 100,
            fresh: false
        })
    );
    // Not in sequence (ahead, a duplicate): nothing, the responder does not accept it.
    assert_eq!(r.touches(&req(Opcode::RC_SEND_LAST, 2, 100)), None);
    assert_eq!(r.touches(&req(Opcode::RC_SEND_FIRST, 0, 1024)), None);
    r.on_request(&req(Opcode::RC_SEND_LAST, 1, 100), None);

    // An RDMA WRITE: its RETH target, then the next address for the next packet.
    let mut w = req(Opcode::RC_RDMA_WRITE_FIRST, 2, 1024);
    w.reth = Some((0x1000, 0x77, 2048));
    assert_eq!(
        r.touches(&w),
        Some(Touches::Remote {
            va: 0x1000,
            rkey: 0x77,
            len: 1024,
            left: 2048,
            atomic: false
        })
    );
    r.on_request(&w, None);
    assert_eq!(
        r.touches(&req(Opcode::RC_RDMA_WRITE_LAST, 3, 1024)),
        Some(Touches::Remote {
            va: 0x1400,
            rkey: 0x77,
            len: 1024,
            left: 1024,
            atomic: false
        })
    );
    r.on_request(&req(Opcode::RC_RDMA_WRITE_LAST, 3, 1024), None);

    // A READ writes nothing here (its responses wait for their pages); an empty SEND
    // nothing either.
    let mut rd = req(Opcode::RC_RDMA_READ_REQUEST, 4, 0);
    rd.reth = Some((0x1000, 0x77, 4096));
    assert_eq!(r.touches(&rd), None);
    assert_eq!(r.touches(&req(Opcode::RC_SEND_ONLY, 4, 0)), None);

    // Atomics: their 8 bytes, with the atomic right for compare-and-swap and fetch-and-add.
    let mut fa = req(Opcode::RC_FETCH_ADD, 4, 0);
    fa.atomic = Some(AtomicReq {
        va: 0x2008,
        rkey: 0x99,
        swap_add: 1,
        compare: 0,
    });
    assert_eq!(
        r.touches(&fa),
        Some(Touches::Remote {
            va: 0x2008,
            rkey: 0x99,
            len: 8,
            left: 8,
            atomic: true
        })
    );
    let mut aw = req(Opcode::RC_ATOMIC_WRITE, 4, 8);
    aw.reth = Some((0x2010, 0x99, 8));
    aw.atomic_write = Some(5);
    assert_eq!(
        r.touches(&aw),
        Some(Touches::Remote {
            va: 0x2010,
            rkey: 0x99,
            len: 8,
            left: 8,
            atomic: false
        })
    );
}

#[test]
fn rnr_nak_keeps_the_psn_expected_and_mutes_sequence_naks() {
    let mut r = common::responder::responder(10, MTU);
    let mut w = req(Opcode::RC_RDMA_WRITE_FIRST, 10, 1024);
    w.reth = Some((0x1000, 0x77, 3072));
    let nak = r.rnr_nak(&w);
    assert_eq!(nak.psn, Psn::new(10));
    assert_eq!(nak.syndrome, Syndrome::RnrNak(RnrTimer::new(12).unwrap()));
    assert_eq!(r.expected_psn(), Psn::new(10));
    // The packets behind it, on their way: dropped, no PSN sequence error NAK (each would
    // cost the requester a retry).
    let out = r.on_request(&req(Opcode::RC_RDMA_WRITE_MIDDLE, 11, 1024), None);
    assert_eq!(out.reply, None);
    assert_eq!(out.placement, None);
    assert_eq!(r.expected_psn(), Psn::new(10));
    // The retry is taken as new.
    let out = r.on_request(&w, None);
    assert_eq!(
        out.placement,
        Some(Placement::Remote {
            va: 0x1000,
            rkey: 0x77
        })
    );
    assert_eq!(r.expected_psn(), Psn::new(11));
}

#[test]
fn fault_resolved_goes_back_without_counting_a_retry() {
    // retry_cnt 1: a second timeout without progress would fail the WQE.
    let mut s: Sender<8> = Sender::new(SenderConfig::new(Psn::new(0), MTU, 1, 7));
    s.post(wqe(0, WrOpcode::RdmaRead, 4096)).unwrap();
    assert_eq!(drain_tx(&mut s).len(), 1);
    drain_poll(&mut s);
    // Responses dropped for page faults, each fault then resolved: the READ is asked for
    // again each time, and no retry is spent.
    for _ in 0..20 {
        s.on_fault_resolved();
        let again = drain_tx(&mut s);
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].psn, Psn::new(0));
        assert!(completions(&drain_poll(&mut s)).is_empty());
    }
    // The one retry is still there: the first timeout is retried, the second fails.
    s.on_retransmit_timeout();
    assert_eq!(drain_tx(&mut s).len(), 1);
    assert!(completions(&drain_poll(&mut s)).is_empty());
    s.on_retransmit_timeout();
    assert_eq!(
        completions(&drain_poll(&mut s)),
        [(0, WcStatus::RetryExcErr)]
    );
}

#[test]
fn fault_resolved_is_ignored_when_idle_or_in_an_rnr_wait() {
    let mut s: Sender<8> = Sender::new(SenderConfig::new(Psn::new(0), MTU, 7, 7));
    s.on_fault_resolved();
    assert!(drain_tx(&mut s).is_empty());
    s.post(wqe(0, WrOpcode::Send, 10)).unwrap();
    s.post(wqe(1, WrOpcode::Send, 10)).unwrap();
    drain_tx(&mut s);
    drain_poll(&mut s);
    let mut rnr = ack(1);
    rnr.syndrome = Syndrome::RnrNak(RnrTimer::new(1).unwrap());
    s.on_response(&rnr);
    drain_poll(&mut s);
    // The RNR timer resends, not the fault.
    s.on_fault_resolved();
    assert!(drain_tx(&mut s).is_empty());
    s.on_rnr_timeout();
    assert_eq!(drain_tx(&mut s).len(), 1);
    s.on_response(&ack(1));
    drain_poll(&mut s);
    s.on_fault_resolved();
    assert!(drain_tx(&mut s).is_empty());
}
