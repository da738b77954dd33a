// SPDX-License-Identifier: GPL-2.0

//! Local operations in the send queue (`IB_WR_REG_MR`, `IB_WR_LOCAL_INV`): they take no PSN
//! and send no packet; the sender hands each to its caller when the transmit cursor reaches
//! it, in send queue order ([`Sender::next_local`]), never again after a go-back-N, and
//! completes it in order once every earlier WQE completed. A failed one completes with
//! `IB_WC_LOC_QP_OP_ERR` after the earlier WQEs, and the rest is flushed.

mod common;

use common::sender::{completions, drain_poll, drain_tx, wqe};
use rrxe_proto::aeth::{Credits, Syndrome};
use rrxe_proto::opcode::Opcode;
use rrxe_proto::opcode::QpType;
use rrxe_proto::psn::{Msn, Psn};
use rrxe_proto::rc::{PathMtu, PostedWqe, Response, Sender, SenderConfig, Transport, WcStatus};
use rrxe_proto::uabi::WrOpcode;

const MTU: PathMtu = PathMtu::MTU_256;

fn sender(transport: Transport) -> Sender<8> {
    Sender::new(SenderConfig::new(Psn::new(100), MTU, 7, 7).with_transport(transport))
}

fn ack(psn: u32) -> Response {
    Response::ack(Psn::new(psn))
}

fn fenced(id: u32, op: WrOpcode) -> PostedWqe {
    PostedWqe {
        fence: true,
        ..wqe(id, op, 0)
    }
}

/// The ids of the packets `s` lets out now.
fn sent_ids(s: &mut Sender<8>) -> Vec<u32> {
    drain_tx(s).iter().map(|p| p.id).collect()
}

#[test]
fn a_local_operation_stops_the_cursor_until_it_is_carried_out() {
    let mut s = sender(Transport::Rc);
    s.post(wqe(1, WrOpcode::RegMr, 0)).unwrap();
    s.post(wqe(2, WrOpcode::Send, 10)).unwrap();
    assert_eq!(s.next_psn(), Psn::new(101), "REG_MR takes no PSN");
    assert!(
        drain_tx(&mut s).is_empty(),
        "the SEND waits for the REG_MR before it"
    );
    assert_eq!(s.next_local(), Some((1, WrOpcode::RegMr)));
    assert_eq!(s.next_local(), Some((1, WrOpcode::RegMr)), "until reported");
    s.local_done(1, true);
    assert_eq!(s.next_local(), None);
    // The REG_MR, oldest, completes at once; the SEND goes out with the first PSN.
    assert_eq!(
        completions(&drain_poll(&mut s)),
        vec![(1, WcStatus::Success)]
    );
    let pkts = drain_tx(&mut s);
    assert_eq!(pkts.len(), 1);
    assert_eq!((pkts[0].id, pkts[0].psn), (2, Psn::new(100)));
    s.on_response(&ack(100));
    assert_eq!(
        completions(&drain_poll(&mut s)),
        vec![(2, WcStatus::Success)]
    );
}

#[test]
fn completions_stay_in_send_queue_order() {
    let mut s = sender(Transport::Rc);
    s.post(wqe(1, WrOpcode::Send, 10)).unwrap();
    s.post(wqe(2, WrOpcode::LocalInv, 0)).unwrap();
    s.post(wqe(3, WrOpcode::RdmaWrite, 10)).unwrap();
    assert_eq!(sent_ids(&mut s), vec![1]);
    assert_eq!(s.next_local(), Some((2, WrOpcode::LocalInv)));
    s.local_done(2, true);
    assert_eq!(sent_ids(&mut s), vec![3]);
    // Carried out, but the SEND before it is not acknowledged: nothing completes.
    assert!(completions(&drain_poll(&mut s)).is_empty());
    s.on_response(&ack(100));
    assert_eq!(
        completions(&drain_poll(&mut s)),
        vec![(1, WcStatus::Success), (2, WcStatus::Success)]
    );
    s.on_response(&ack(101));
    assert_eq!(
        completions(&drain_poll(&mut s)),
        vec![(3, WcStatus::Success)]
    );
}

#[test]
fn go_back_n_does_not_carry_a_local_operation_out_twice() {
    let mut s = sender(Transport::Rc);
    s.post(wqe(1, WrOpcode::Send, 10)).unwrap();
    s.post(wqe(2, WrOpcode::LocalInv, 0)).unwrap();
    s.post(wqe(3, WrOpcode::RdmaWrite, 10)).unwrap();
    assert_eq!(sent_ids(&mut s), vec![1]);
    s.local_done(2, true);
    assert_eq!(sent_ids(&mut s), vec![3]);
    s.on_retransmit_timeout();
    drain_poll(&mut s);
    let again = drain_tx(&mut s);
    assert_eq!(again.iter().map(|p| p.id).collect::<Vec<_>>(), vec![1, 3]);
    assert!(again.iter().all(|p| p.retransmit));
    assert_eq!(s.next_local(), None);
    s.on_response(&ack(101));
    assert_eq!(
        completions(&drain_poll(&mut s)),
        vec![
            (1, WcStatus::Success),
            (2, WcStatus::Success),
            (3, WcStatus::Success)
        ]
    );
}

#[test]
fn a_failed_local_operation_completes_after_the_earlier_wqes() {
    let mut s = sender(Transport::Rc);
    s.post(wqe(1, WrOpcode::Send, 10)).unwrap();
    s.post(wqe(2, WrOpcode::RegMr, 0)).unwrap();
    s.post(wqe(3, WrOpcode::Send, 10)).unwrap();
    assert_eq!(sent_ids(&mut s), vec![1]);
    s.local_done(2, false);
    assert!(
        drain_tx(&mut s).is_empty(),
        "nothing after the failed REG_MR goes out"
    );
    assert_eq!(s.next_local(), None, "it is not handed out again");
    assert!(completions(&drain_poll(&mut s)).is_empty());
    s.on_response(&ack(100));
    assert_eq!(
        completions(&drain_poll(&mut s)),
        vec![
            (1, WcStatus::Success),
            (2, WcStatus::LocQpOpErr),
            (3, WcStatus::WrFlushErr)
        ]
    );
}

#[test]
fn a_fenced_local_operation_waits_for_reads_even_across_a_retry() {
    let mut s = sender(Transport::Rc);
    s.post(wqe(1, WrOpcode::RdmaRead, 10)).unwrap();
    s.post(fenced(2, WrOpcode::LocalInv)).unwrap();
    s.post(wqe(3, WrOpcode::Send, 10)).unwrap();
    assert_eq!(sent_ids(&mut s), vec![1]);
    assert_eq!(s.next_local(), None, "the READ is outstanding");
    // The READ request is retried; its response then acknowledges everything sent.
    s.on_retransmit_timeout();
    drain_poll(&mut s);
    assert_eq!(sent_ids(&mut s), vec![1]);
    let resp = Response {
        opcode: Opcode::RC_RDMA_READ_RESPONSE_ONLY,
        psn: Psn::new(100),
        syndrome: Syndrome::Ack(Credits::INVALID),
        msn: Msn::new(1),
        payload_len: 10,
        atomic_orig: None,
    };
    assert!(s.check_response(&resp).is_some());
    s.on_response(&resp);
    assert_eq!(
        completions(&drain_poll(&mut s)),
        vec![(1, WcStatus::Success)]
    );
    assert_eq!(
        s.next_local(),
        Some((2, WrOpcode::LocalInv)),
        "the cursor stays at the LOCAL_INV"
    );
    s.local_done(2, true);
    let pkts = drain_tx(&mut s);
    assert_eq!(pkts.len(), 1);
    assert_eq!((pkts[0].id, pkts[0].psn), (3, Psn::new(101)));
}

#[test]
fn uc_completes_local_operations_in_order() {
    let mut s = sender(Transport::Uc);
    s.post(wqe(1, WrOpcode::Send, 10)).unwrap();
    s.post(wqe(2, WrOpcode::RegMr, 0)).unwrap();
    s.post(wqe(3, WrOpcode::RdmaWrite, 10)).unwrap();
    assert_eq!(sent_ids(&mut s), vec![1]);
    s.local_done(2, true);
    assert_eq!(sent_ids(&mut s), vec![3]);
    assert_eq!(
        completions(&drain_poll(&mut s)),
        vec![
            (1, WcStatus::Success),
            (2, WcStatus::Success),
            (3, WcStatus::Success)
        ]
    );
}

#[test]
fn local_done_ignores_anything_but_the_operation_handed_out() {
    let mut s = sender(Transport::Rc);
    s.post(wqe(1, WrOpcode::Send, 10)).unwrap();
    s.post(wqe(2, WrOpcode::LocalInv, 0)).unwrap();
    s.local_done(2, true);
    assert_eq!(s.next_packet().map(|p| p.id), Some(1), "not reached yet");
    s.local_done(1, true);
    assert_eq!(s.next_local(), Some((2, WrOpcode::LocalInv)));
    s.local_done(7, true);
    assert_eq!(s.next_local(), Some((2, WrOpcode::LocalInv)));
}

#[test]
fn local_operations_are_kernel_only_in_user_wqes() {
    assert_eq!(WrOpcode::from_raw(WrOpcode::KERNEL_REG_MR), None);
    assert_eq!(
        WrOpcode::from_raw_kernel(WrOpcode::KERNEL_REG_MR),
        Some(WrOpcode::RegMr)
    );
    assert!(WrOpcode::RegMr.allowed_on(QpType::Uc));
    assert!(!WrOpcode::LocalInv.allowed_on(QpType::Uc));
    assert_eq!(WrOpcode::RegMr.opcode(true, true), None);
    assert_eq!(WrOpcode::LocalInv.psn_count(MTU.packets(0)), 0);
}

#[test]
fn a_payload_that_cannot_be_read_fails_its_wqe_after_the_earlier_ones() {
    for transport in [Transport::Rc, Transport::Uc] {
        let mut s = sender(transport);
        s.post(wqe(1, WrOpcode::Send, 10)).unwrap();
        s.post(wqe(2, WrOpcode::RdmaWrite, 10)).unwrap();
        s.post(wqe(3, WrOpcode::Send, 10)).unwrap();
        let first = s.next_packet().unwrap();
        assert_eq!(first.id, 1);
        let bad = s.next_packet().unwrap();
        assert_eq!(bad.id, 2);
        // Building the WRITE's packet could not read its payload.
        s.payload_failed(&bad);
        assert!(
            drain_tx(&mut s).is_empty(),
            "{transport:?}: nothing from the failed WQE on goes out"
        );
        if transport == Transport::Rc {
            // The SEND before it is not acknowledged yet: nothing completes.
            assert!(completions(&drain_poll(&mut s)).is_empty());
            s.on_response(&ack(100));
        }
        let done = completions(&drain_poll(&mut s));
        assert_eq!(
            done.first(),
            Some(&(1, WcStatus::Success)),
            "{transport:?}: {done:?}"
        );
        assert_eq!(
            done.get(1),
            Some(&(2, WcStatus::LocProtErr)),
            "{transport:?}: {done:?}"
        );
        // The send side is in error: the SEND after it is flushed, never sent.
        assert_eq!(
            done.get(2),
            Some(&(3, WcStatus::WrFlushErr)),
            "{transport:?}: {done:?}"
        );
        assert!(drain_tx(&mut s).is_empty());
    }
}
