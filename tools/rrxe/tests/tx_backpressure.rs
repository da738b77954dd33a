// SPDX-License-Identifier: GPL-2.0

//! A full transmit queue: [`Sender::unsend`] takes back the packet that could not be sent,
//! so the next [`Sender::next_packet`] returns it again, unchanged, and nothing is counted
//! as lost or retransmitted; on UC a packet handed out is gone.

mod common;

use common::sender::{drain_tx, wqe};
use rrxe_proto::psn::Psn;
use rrxe_proto::rc::{PathMtu, Sender, SenderConfig, Transport};
use rrxe_proto::uabi::WrOpcode;

const MTU: PathMtu = PathMtu::MTU_256;

fn sender(psn: u32, transport: Transport) -> Sender<8> {
    Sender::new(SenderConfig::new(Psn::new(psn), MTU, 7, 7).with_transport(transport))
}

#[test]
fn the_packet_taken_back_comes_again_unchanged() {
    // Across the PSN wrap: a 3-packet WRITE, a READ (3 PSNs, one request), a SEND.
    let mut s = sender(0xff_fffe, Transport::Rc);
    s.post(wqe(1, WrOpcode::RdmaWrite, 600)).unwrap();
    s.post(wqe(2, WrOpcode::RdmaRead, 600)).unwrap();
    s.post(wqe(3, WrOpcode::Send, 10)).unwrap();
    let all = drain_tx(&mut sender_clone(&s));
    assert_eq!(all.len(), 5);
    for (i, want) in all.iter().enumerate() {
        // Hand out packets up to `i`, refuse `i` once, then it comes again.
        let mut t = sender_clone(&s);
        for p in all.iter().take(i) {
            assert_eq!(t.next_packet().as_ref(), Some(p));
        }
        let p = t.next_packet().unwrap();
        assert_eq!(&p, want);
        assert!(t.unsend(&p));
        let again = t.next_packet().unwrap();
        assert_eq!(again, p, "packet {i} changed when sent again");
        assert!(
            !again.retransmit,
            "a packet never sent is not a retransmission"
        );
        // The rest follows as if nothing happened.
        assert_eq!(drain_tx(&mut t), all[i + 1..].to_vec());
    }
}

#[test]
fn only_the_last_packet_handed_out_can_be_taken_back() {
    let mut s = sender(10, Transport::Rc);
    s.post(wqe(1, WrOpcode::RdmaWrite, 600)).unwrap();
    let first = s.next_packet().unwrap();
    let second = s.next_packet().unwrap();
    assert!(!s.unsend(&first), "an older packet cannot be taken back");
    assert!(s.unsend(&second));
    assert!(!s.unsend(&second), "taken back once already");
    assert_eq!(s.next_packet(), Some(second));
}

#[test]
fn a_retransmission_taken_back_stays_a_retransmission() {
    let mut s = sender(0, Transport::Rc);
    s.post(wqe(1, WrOpcode::Send, 600)).unwrap();
    let sent = drain_tx(&mut s);
    assert_eq!(sent.len(), 3);
    s.on_retransmit_timeout();
    let p = s.next_packet().unwrap();
    assert!(p.retransmit);
    assert!(s.unsend(&p));
    let again = s.next_packet().unwrap();
    assert_eq!(again, p);
    assert!(again.retransmit);
}

#[test]
fn uc_packets_cannot_be_taken_back() {
    let mut s = sender(0, Transport::Uc);
    s.post(wqe(1, WrOpcode::Send, 600)).unwrap();
    let p = s.next_packet().unwrap();
    assert!(!s.unsend(&p));
    let next = s.next_packet().unwrap();
    assert_eq!(next.psn, Psn::new(1));
}

/// A copy of `s` to replay from (the sender is plain data).
fn sender_clone(s: &Sender<8>) -> Sender<8> {
    s.clone()
}
