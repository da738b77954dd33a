// SPDX-License-Identifier: GPL-2.0

//! rrxe's RC responder against a model of rdma_rxe's requester and completer (Linux 7.3.4,
//! `rxe_req.c` and `rxe_comp.c`), for the ACKs of a SEND that rdma_rxe retransmits.
//!
//! rdma_rxe marks a send WQE `processing` while it transmits its packets and `pending` once
//! the last one is out. Its completer, given an ACK whose PSN is the WQE's last PSN:
//!
//! - while the WQE is `processing`: moves its completion PSN past the WQE (`check_psn`
//!   finds the PSN ahead of it, `COMPST_WRITE_SEND` then `COMPST_UPDATE_COMP`);
//! - once the completion PSN is past it: completes the WQE (`check_psn`: "response is most
//!   likely a retried packet if it matches an uncompleted WQE", `COMPST_COMP_ACK`), whatever
//!   the WQE's state.
//!
//! So two ACKs for the last PSN while the requester still resends the WQE's earlier packets
//! complete the WQE under the requester, which goes on with a WQE that is gone and never
//! sends the next one: the 64 KiB `ibv_rc_pingpong` stall of issue 37 (rdma_rxe server,
//! rrxe client), whose capture showed exactly that after the ACK of a message's last packet
//! was lost. And one such ACK followed by the loss of the ACK of the last packet leaves the
//! WQE pending for ever: its retransmit timer finds nothing to resend (`req.psn` is not
//! past `comp.psn`). A responder that re-ACKs duplicates with the last executed PSN, as
//! rdma_rxe's does, causes both; rrxe re-ACKs a duplicate with its own PSN, so the ACK for
//! a WQE's last PSN only ever answers its last packet.
//!
//! The model interleaves as tightly as rdma_rxe's send task can: each reply reaches the
//! completer before the next packet goes out.

mod common;

use rrxe_proto::aeth::Syndrome;
use rrxe_proto::opcode::Opcode;
use rrxe_proto::psn::Psn;
use rrxe_proto::rc::{PathMtu, Request, Responder};

const MTU: u32 = 1024;
/// rdma_rxe's `RXE_MAX_PKT_PER_ACK`.
const RXE_MAX_PKT_PER_ACK: u32 = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WqeState {
    Processing,
    Pending,
}

/// rdma_rxe's requester and completer for one SEND WQE of `npkts` packets.
struct RxeSender {
    first: u32,
    last: u32,
    state: WqeState,
    comp_psn: u32,
    noack_pkts: u32,
    completed: bool,
    /// The WQE completed while its requester was still sending it (the stall).
    completed_under_requester: bool,
}

impl RxeSender {
    fn new(first: u32, npkts: u32) -> Self {
        Self {
            first,
            last: first + npkts - 1,
            state: WqeState::Processing,
            comp_psn: first,
            noack_pkts: 0,
            completed: false,
            completed_under_requester: false,
        }
    }

    /// The request packet with PSN `psn` (`init_req_packet()`, `update_wqe_state()`).
    fn packet(&mut self, psn: u32) -> Request {
        let (first, last) = (psn == self.first, psn == self.last);
        let opcode = match (first, last) {
            (true, true) => Opcode::RC_SEND_ONLY,
            (true, false) => Opcode::RC_SEND_FIRST,
            (false, true) => Opcode::RC_SEND_LAST,
            (false, false) => Opcode::RC_SEND_MIDDLE,
        };
        let ack_req = last || {
            let n = self.noack_pkts;
            self.noack_pkts += 1;
            n > RXE_MAX_PKT_PER_ACK
        };
        if ack_req {
            self.noack_pkts = 0;
        }
        self.state = if last {
            WqeState::Pending
        } else {
            WqeState::Processing
        };
        Request {
            opcode,
            psn: Psn::new(psn),
            ack_req,
            payload_len: MTU,
            ..Request::default()
        }
    }

    /// An ACK for `psn` (`rxe_completer()`: `check_psn()`, `check_ack()`, `COMPST_*`).
    fn on_ack(&mut self, psn: u32) {
        if self.completed {
            return;
        }
        if psn > self.last {
            if self.state == WqeState::Pending {
                self.complete();
            }
            return;
        }
        if psn < self.comp_psn {
            if psn == self.last {
                self.complete();
            }
            return;
        }
        if self.state == WqeState::Pending && psn == self.last {
            self.complete();
        }
        self.comp_psn = psn + 1;
    }

    /// `do_complete()`.
    fn complete(&mut self) {
        self.completed = true;
        self.completed_under_requester = self.state == WqeState::Processing;
    }

    /// A retransmit timeout: `req_retry()` resends from the completion PSN, if the
    /// requester's PSN (past the WQE once its last packet went out) is beyond it
    /// (`COMPST_ERROR_RETRY`); `None`: nothing is resent, the WQE waits for ever.
    fn retry_from(&self) -> Option<u32> {
        (self.comp_psn <= self.last).then_some(self.comp_psn)
    }
}

fn responder(psn: u32) -> Responder {
    common::responder::responder(psn, PathMtu::MTU_1024)
}

/// Sends packets `from..=last` to `r`; each reply the completer gets at once, except the
/// replies to the PSNs in `lose`.
fn pass(s: &mut RxeSender, r: &mut Responder, from: u32, lose: &[u32]) {
    for psn in from..=s.last {
        let req = s.packet(psn);
        let o = r.on_request(&req, Some(1 << 20));
        if let Some(reply) = o.reply {
            if lose.contains(&psn) {
                continue;
            }
            match reply.syndrome {
                Syndrome::Ack(_) => s.on_ack(reply.psn.get()),
                other => panic!("unexpected reply {other:?} to PSN {psn}"),
            }
        }
    }
}

/// rdma_rxe's retransmit timer fires: its resend must go out and the WQE complete only once
/// its last packet is out (`what` names the case).
fn timer_resend_completes(s: &mut RxeSender, r: &mut Responder, what: &str) {
    let from = s.retry_from().expect("the timer resends");
    pass(s, r, from, &[]);
    assert!(
        s.completed && !s.completed_under_requester,
        "{what}: completed {}, under the requester {}",
        s.completed,
        s.completed_under_requester
    );
}

/// The stall of issue 37: the ACK of the last packet is lost, rdma_rxe's retransmit timer
/// resends the whole message, which rrxe already has.
#[test]
fn lost_last_ack_then_full_resend_completes_once_the_resend_is_out() {
    for npkts in [2, 3, 64, 65, 66, 100, 200] {
        let mut r = responder(1000);
        let mut s = RxeSender::new(1000, npkts);
        let last = s.last;
        pass(&mut s, &mut r, 1000, &[last]);
        assert!(
            !s.completed,
            "{npkts} packets: the ACK that completes was lost"
        );
        assert_eq!(r.expected_psn(), Psn::new(1000 + npkts));
        timer_resend_completes(&mut s, &mut r, &format!("{npkts} packets"));
    }
}

/// The captured case: a NAK moved rdma_rxe's completion PSN into the message, its resend
/// from there reached rrxe whole but the ACK of the last packet was lost; the timer resends
/// from the NAK's PSN.
#[test]
fn lost_last_ack_then_resend_from_the_middle_completes_once_the_resend_is_out() {
    for (npkts, mid) in [(64, 11), (64, 62), (100, 30), (100, 90)] {
        let mut r = responder(0);
        let mut s = RxeSender::new(0, npkts);
        // Packet `mid` is lost: rrxe NAKs at it, and rdma_rxe resends from there.
        for psn in 0..mid {
            let req = s.packet(psn);
            if let Some(reply) = r.on_request(&req, Some(1 << 20)).reply {
                s.on_ack(reply.psn.get());
            }
        }
        s.packet(mid);
        let req = s.packet(mid + 1);
        let nak = r.on_request(&req, Some(1 << 20)).reply.unwrap();
        assert!(matches!(nak.syndrome, Syndrome::Nak(_)) && nak.psn.get() == mid);
        s.comp_psn = s.comp_psn.max(mid);
        let last = s.last;
        pass(&mut s, &mut r, mid, &[last]);
        assert!(!s.completed);
        timer_resend_completes(&mut s, &mut r, &format!("{npkts} packets, lost {mid}"));
    }
}

/// A resend long enough to carry one of rdma_rxe's AckReq-every-65-packets asks, then the
/// loss of the ACK of its last packet: the timer must still find something to resend.
#[test]
fn lost_last_ack_twice_is_still_retried() {
    for npkts in [70, 100, 128] {
        let mut r = responder(0);
        let mut s = RxeSender::new(0, npkts);
        pass(&mut s, &mut r, 0, &[npkts - 1]);
        // rdma_rxe's AckReq counter carries over into the resend.
        s.noack_pkts = 40;
        pass(&mut s, &mut r, 0, &[npkts - 1]);
        assert!(!s.completed, "{npkts} packets");
        timer_resend_completes(&mut s, &mut r, &format!("{npkts} packets"));
    }
}

/// Every duplicate is answered, with its own PSN, asked (AckReq) or not: a requester that
/// resends what already arrived sees its window open.
#[test]
fn duplicates_are_reacked_with_their_own_psn() {
    let mut r = responder(0);
    let mut s = RxeSender::new(0, 4);
    pass(&mut s, &mut r, 0, &[3]);
    for psn in 0..4 {
        for ack_req in [false, true] {
            let mut dup = s.packet(psn);
            dup.ack_req = ack_req;
            let o = r.on_request(&dup, Some(1 << 20));
            assert!(o.duplicate && o.placement.is_none() && o.complete.is_none());
            assert_eq!(o.reply.map(|x| x.psn), Some(Psn::new(psn)));
        }
    }
}
