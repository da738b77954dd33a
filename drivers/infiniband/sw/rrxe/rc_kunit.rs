// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rrxe_rc`: the RC state machines as the module compiles them, driven against
//! each other through real packets: the requester's packets are built, given their ICRC
//! with the kernel's CRC-32, parsed and verified, handed to the responder, whose ACKs and
//! NAKs travel back the same way. A lossy "wire" drops chosen packets.

use kernel::prelude::*;

#[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
#[kunit_tests(rrxe_rc)]
mod tests {
    // Frames are built and cut at fixed offsets; a test that slices wrongly fails loudly.
    #![allow(clippy::indexing_slicing, clippy::panic)]

    use crate::crc::kernel_crc32;
    use crate::proto::{
        aeth::{NakCode, RnrTimer, Syndrome},
        bth::Qpn,
        icrc::{self, IpHdr},
        ip::{self, IpParams},
        packet::{self, Packet},
        psn::Psn,
        rc::{
            responder::RecvCompletion, PathMtu, Placement, PostedWqe, Request, Responder,
            ResponderConfig, Response, SendAction, Sender, SenderConfig, WcStatus, WqeHeaders,
        },
        uabi::WrOpcode,
    };
    use kernel::prelude::*;

    const MTU: PathMtu = PathMtu::MTU_1024;

    fn params() -> IpParams {
        let mut a = [0u8; 16];
        a[10] = 0xff;
        a[11] = 0xff;
        let mut b = a;
        a[12..].copy_from_slice(&[192, 0, 2, 1]);
        b[12..].copy_from_slice(&[192, 0, 2, 2]);
        IpParams {
            src: a,
            dst: b,
            hop_limit: 64,
            sport: ip::udp_sport(17),
            ..IpParams::default()
        }
    }

    /// Builds a whole datagram (IP, UDP, RoCE, ICRC) into `frame`, then parses and verifies
    /// it as the receive path does; returns the packet's range in `frame`.
    fn wire(spec: &packet::PacketSpec<'_>, frame: &mut [u8]) -> core::ops::Range<usize> {
        let p = params();
        let body = packet::packet_len(spec.bth.opcode, spec.payload.len()).unwrap_or(0);
        let hdr = p.write(frame, body, 1).unwrap_or(0);
        let (h, rest) = frame.split_at_mut(hdr);
        let n = packet::build(spec, rest).unwrap_or(0);
        assert_eq!(n, body);
        let (iph, udp) = h.split_at(20);
        assert!(icrc::generate(&kernel_crc32, IpHdr::V4(iph), udp, &mut rest[..n]).is_ok());
        assert!(icrc::verify(&kernel_crc32, IpHdr::V4(iph), udp, &rest[..n]).is_ok());
        hdr..hdr + n
    }

    struct Link {
        tx: Sender<8>,
        rx: Responder,
        /// Message bytes sent by the requester (pattern) and placed at the responder.
        sent: KVec<u8>,
        placed: KVec<u8>,
        recvs_posted: u32,
        recv_done: Option<RecvCompletion>,
        frame: KVec<u8>,
    }

    fn buf(len: usize) -> KVec<u8> {
        match KVec::from_elem(0u8, len, GFP_KERNEL) {
            Ok(v) => v,
            Err(_) => panic!("no memory for the test"),
        }
    }

    impl Link {
        fn new(rnr_retry: u8) -> Self {
            let mut sent = buf(4096);
            for (i, b) in sent.iter_mut().enumerate() {
                *b = (i * 7 + 3) as u8;
            }
            Self {
                tx: Sender::new(SenderConfig::new(Psn::new(0xfffffe), MTU, 3, rnr_retry)),
                rx: Responder::new(ResponderConfig {
                    rq_psn: Psn::new(0xfffffe),
                    mtu: MTU,
                    min_rnr_timer: RnrTimer::from_low_bits(1),
                    remote_write: false,
                    remote_read: true,
                    remote_atomic: true,
                    max_dest_rd_atomic: 4,
                    flush_types: 0,
                }),
                sent,
                placed: buf(4096),
                recvs_posted: 0,
                recv_done: None,
                frame: buf(1200),
            }
        }

        /// Sends what the requester allows; `drop(psn)` loses a request packet. Returns the
        /// ACK/NAKs the responder sent back, in order, as responses.
        fn run(&mut self, mut drop: impl FnMut(u32) -> bool) -> KVec<Response> {
            let mut acks = KVec::new();
            while let Some(p) = self.tx.next_packet() {
                let off = p.offset as usize;
                let payload = &self.sent[off..off + p.len as usize];
                let spec = p.spec(Qpn::new(17), 0xffff, &WqeHeaders::default(), payload);
                let r = wire(&spec, &mut self.frame);
                if drop(p.psn.get()) {
                    continue;
                }
                let pkt = packet::parse(&self.frame[r]).unwrap_or_else(|_| panic!("parse"));
                let recv = (self.recvs_posted > 0).then_some(4096);
                let out = self.rx.on_request(&Request::from_packet(&pkt), recv);
                if out.begin_recv {
                    self.recvs_posted -= 1;
                }
                if let Some(Placement::Recv { offset }) = out.placement {
                    let o = offset as usize;
                    self.placed[o..o + pkt.payload.len()].copy_from_slice(pkt.payload);
                }
                if let Some(c) = out.complete {
                    self.recv_done = Some(c);
                }
                if let Some(reply) = out.reply {
                    let spec = reply.spec(Qpn::new(18), 0xffff);
                    let r = wire(&spec, &mut self.frame);
                    let pkt: Packet<'_> =
                        packet::parse(&self.frame[r]).unwrap_or_else(|_| panic!("parse ack"));
                    if let Some(resp) = Response::from_packet(&pkt) {
                        let _ = acks.push(resp, GFP_KERNEL);
                    }
                }
            }
            acks
        }

        fn deliver(&mut self, acks: &[Response]) -> KVec<SendAction> {
            for a in acks {
                self.tx.on_response(a);
            }
            let mut v = KVec::new();
            while let Some(a) = self.tx.poll() {
                let _ = v.push(a, GFP_KERNEL);
            }
            v
        }
    }

    fn completed(actions: &[SendAction]) -> Option<WcStatus> {
        actions.iter().find_map(|a| match a {
            SendAction::Complete(c) => Some(c.status),
            _ => None,
        })
    }

    fn send(len: u32) -> PostedWqe {
        PostedWqe {
            id: 1,
            op: WrOpcode::Send,
            len,
            solicited: false,
            fence: false,
        }
    }

    #[test]
    fn multi_packet_send_across_psn_wrap() {
        let mut l = Link::new(7);
        l.recvs_posted = 1;
        assert!(l.tx.post(send(4000)).is_ok());
        let acks = l.run(|_| false);
        // FIRST, MIDDLE, MIDDLE, LAST: one ACK, for the last (AckReq) packet.
        assert_eq!(acks.len(), 1);
        assert_eq!(acks[0].psn, Psn::new(1));
        assert_eq!(
            l.recv_done.map(|c| (c.status, c.byte_len)),
            Some((WcStatus::Success, 4000))
        );
        assert_eq!(&l.placed[..4000], &l.sent[..4000]);
        let acts = l.deliver(&acks);
        assert_eq!(completed(&acts), Some(WcStatus::Success));
        assert!(l.tx.is_idle());
    }

    #[test]
    fn lost_packet_is_nakked_and_resent() {
        let mut l = Link::new(7);
        l.recvs_posted = 1;
        assert!(l.tx.post(send(4096)).is_ok());
        // The second packet (PSN 0xffffff) is lost: the third draws a sequence NAK.
        let acks = l.run(|psn| psn == 0xffffff);
        assert!(acks
            .iter()
            .any(|a| a.syndrome == Syndrome::Nak(NakCode::PsnSequenceError)
                && a.psn == Psn::new(0xffffff)));
        let acts = l.deliver(&acks);
        assert_eq!(completed(&acts), None);
        // Go-back-N from the lost PSN completes the message with the right bytes. The loss
        // halved the congestion window: the resends go out a window at a time, each opened
        // by the ACK of the one before.
        let mut done = None;
        for _ in 0..8 {
            let acks = l.run(|_| false);
            done = completed(&l.deliver(&acks));
            if done.is_some() {
                break;
            }
        }
        assert_eq!(done, Some(WcStatus::Success));
        assert_eq!(&l.placed[..], &l.sent[..]);
    }

    #[test]
    fn lost_last_packet_is_resent_on_timeout_until_retries_run_out() {
        let mut l = Link::new(7);
        l.recvs_posted = 1;
        assert!(l.tx.post(send(100)).is_ok());
        assert!(l.run(|_| true).is_empty());
        let acts = l.deliver(&[]);
        assert!(acts.contains(&SendAction::ArmRetransmitTimer));
        // retry_cnt 3: three timeouts resend, the fourth fails the WQE.
        for _ in 0..3 {
            l.tx.on_retransmit_timeout();
            assert!(l.run(|_| true).is_empty());
            assert_eq!(completed(&l.deliver(&[])), None);
        }
        l.tx.on_retransmit_timeout();
        let acts = l.deliver(&[]);
        assert_eq!(completed(&acts), Some(WcStatus::RetryExcErr));
        assert!(acts.contains(&SendAction::EnterError));
    }

    #[test]
    fn no_receive_posted_draws_rnr_naks_until_rnr_retry_runs_out() {
        let mut l = Link::new(2);
        assert!(l.tx.post(send(64)).is_ok());
        for _ in 0..2 {
            let acks = l.run(|_| false);
            assert_eq!(acks.len(), 1);
            assert!(matches!(acks[0].syndrome, Syndrome::RnrNak(_)));
            let acts = l.deliver(&acks);
            assert!(acts.iter().any(|a| matches!(a, SendAction::ArmRnrTimer(_))));
            l.tx.on_rnr_timeout();
        }
        let acks = l.run(|_| false);
        let acts = l.deliver(&acks);
        assert_eq!(completed(&acts), Some(WcStatus::RnrRetryExcErr));
    }

    #[test]
    fn rnr_then_receive_posted_succeeds() {
        let mut l = Link::new(7);
        assert!(l.tx.post(send(64)).is_ok());
        let acks = l.run(|_| false);
        l.deliver(&acks);
        l.recvs_posted = 1;
        l.tx.on_rnr_timeout();
        let acks = l.run(|_| false);
        assert_eq!(completed(&l.deliver(&acks)), Some(WcStatus::Success));
        assert_eq!(&l.placed[..64], &l.sent[..64]);
    }

    #[test]
    fn duplicate_is_reacked_not_placed_again() {
        let mut l = Link::new(7);
        l.recvs_posted = 2;
        assert!(l.tx.post(send(64)).is_ok());
        let acks = l.run(|_| false);
        // The ACK is lost: the timeout resends, the responder re-ACKs without a new receive.
        l.deliver(&[]);
        l.tx.on_retransmit_timeout();
        let again = l.run(|_| false);
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].psn, acks[0].psn);
        assert_eq!(l.recvs_posted, 1);
        assert_eq!(completed(&l.deliver(&again)), Some(WcStatus::Success));
    }
}
