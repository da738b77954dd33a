// SPDX-License-Identifier: GPL-2.0

//! Atomic execution: [`AtomicOp::apply`] as the engine's `execute_atomic` uses it (read the
//! 8 bytes at the target, write back the result, return the original), and the path from an
//! atomic request packet through the [`Responder`] to the atomic ACKnowledge carrying the
//! original value; ATOMIC WRITE and FLUSH from their request packets to the empty READ
//! response ONLY that answers them.

mod common;

use common::build_vec;
use proptest::prelude::*;
use rrxe_proto::aeth::{Credits, NakCode, RnrTimer, Syndrome};
use rrxe_proto::bth::Qpn;
use rrxe_proto::ext::{AtomicEthFields, FethFields, RethFields};
use rrxe_proto::opcode::{Opcode, QpType};
use rrxe_proto::packet::{self, PacketSpec};
use rrxe_proto::psn::{Msn, Psn};
use rrxe_proto::rc::{
    AtomicExec, AtomicOp, AtomicReply, PathMtu, Request, Responder, ResponderConfig,
};

const DEST_QP: u32 = 0x11;
const PKEY: u16 = 0xffff;
const RKEY: u32 = 0xabcd_0001;
const VA: u64 = 0x7f00_0000_1000;

/// What the engine does with the 8 bytes at the target (under its atomic lock): read, apply,
/// write back, return the original.
fn execute(word: &mut [u8; 8], op: AtomicOp) -> u64 {
    let orig = u64::from_ne_bytes(*word);
    *word = op.apply(orig).to_ne_bytes();
    orig
}

/// Reference model, written independently of `apply`.
fn reference(op: AtomicOp, orig: u64) -> u64 {
    match op {
        AtomicOp::CompareSwap { compare, swap } if orig == compare => swap,
        AtomicOp::CompareSwap { .. } => orig,
        AtomicOp::FetchAdd { add } => ((u128::from(orig) + u128::from(add)) % (1u128 << 64)) as u64,
        AtomicOp::Write { value } => value,
        AtomicOp::Flush { .. } => orig,
    }
}

#[test]
fn compare_swap_swaps_only_on_equality() {
    let cases = [
        // (target, compare, swap, new value)
        (5, 5, 9, 9),
        (5, 6, 9, 5),
        (0, 0, u64::MAX, u64::MAX),
        (u64::MAX, u64::MAX, 0, 0),
        (u64::MAX, u64::MAX - 1, 0, u64::MAX),
        (1 << 63, 1, 2, 1 << 63),
        (7, 7, 7, 7),
    ];
    for (target, compare, swap, new) in cases {
        let op = AtomicOp::CompareSwap { compare, swap };
        assert_eq!(op.apply(target), new, "{target:#x} {op:?}");
        let mut word = target.to_ne_bytes();
        assert_eq!(execute(&mut word, op), target, "returns the original");
        assert_eq!(u64::from_ne_bytes(word), new);
    }
}

#[test]
fn fetch_add_wraps_modulo_2_64() {
    let cases = [
        (0, 0, 0),
        (1, 2, 3),
        (u64::MAX, 1, 0),
        (u64::MAX, u64::MAX, u64::MAX - 1),
        (1 << 63, 1 << 63, 0),
        (0x8000_0000, 0x8000_0000, 0x1_0000_0000),
        (42, 0, 42),
    ];
    for (target, add, new) in cases {
        let op = AtomicOp::FetchAdd { add };
        assert_eq!(op.apply(target), new, "{target:#x} {op:?}");
        let mut word = target.to_ne_bytes();
        assert_eq!(execute(&mut word, op), target, "returns the original");
        assert_eq!(u64::from_ne_bytes(word), new);
    }
}

/// The responder configuration of these tests: remote atomics only.
fn config(psn: u32) -> ResponderConfig {
    ResponderConfig {
        rq_psn: Psn::new(psn),
        mtu: PathMtu::MTU_1024,
        min_rnr_timer: RnrTimer::new(1).unwrap(),
        remote_write: false,
        remote_read: false,
        remote_atomic: true,
        max_dest_rd_atomic: 4,
        flush_types: 0,
    }
}

fn responder(psn: u32) -> Responder {
    Responder::new(config(psn))
}

/// A request with the headers of `spec` as it arrives: built with `opcode` and `psn` for the
/// test's QP, parsed and reduced to a [`Request`] (`None` if it does not parse).
fn arrive(mut spec: PacketSpec<'_>, opcode: Opcode, psn: Psn) -> Option<Request> {
    spec.bth.opcode = opcode;
    spec.bth.dest_qp = Qpn::new(DEST_QP);
    spec.bth.pkey = PKEY;
    spec.bth.psn = psn;
    spec.bth.ack_req = true;
    let bytes = build_vec(&spec);
    packet::parse_for(&bytes, QpType::Rc)
        .ok()
        .map(|p| Request::from_packet(&p))
}

/// An atomic request as it arrives: built, parsed and reduced to a [`Request`].
fn atomic_request(opcode: Opcode, psn: Psn, va: u64, swap_add: u64, compare: u64) -> Request {
    let spec = PacketSpec {
        atomic_eth: Some(AtomicEthFields {
            va,
            rkey: RKEY,
            swap_add,
            compare,
        }),
        ..PacketSpec::default()
    };
    arrive(spec, opcode, psn).unwrap()
}

/// Builds the atomic ACKnowledge of `reply`, parses it back and checks it.
fn check_ack(reply: &AtomicReply) {
    let bytes = build_vec(&reply.spec(Qpn::new(DEST_QP), PKEY));
    let pkt = packet::parse_for(&bytes, QpType::Rc).unwrap();
    assert_eq!(pkt.opcode(), Opcode::RC_ATOMIC_ACKNOWLEDGE);
    assert_eq!(pkt.bth.psn(), reply.psn);
    assert_eq!(pkt.bth.dest_qp(), Qpn::new(DEST_QP));
    assert!(pkt.payload.is_empty());
    let aeth = pkt.aeth.expect("AETH");
    assert_eq!(aeth.decode_syndrome(), Ok(Syndrome::Ack(Credits::INVALID)));
    assert_eq!(aeth.msn(), reply.msn);
    let ack = pkt.atomic_ack_eth.expect("AtomicAckETH");
    assert_eq!(ack.orig(), reply.orig);
    // On the wire: BTH (12), AETH (4), then the original value big-endian (IBA 9.3.4).
    assert_eq!(bytes[16..24], reply.orig.to_be_bytes());
    assert_eq!(bytes.len(), 12 + 4 + 8 + 4);
}

/// Runs one atomic request through the responder and an 8-byte target as the engine does,
/// then repeats it as a duplicate; returns the original value.
fn round_trip(
    rsp: &mut Responder,
    word: &mut [u8; 8],
    opcode: Opcode,
    psn: Psn,
    swap_add: u64,
    compare: u64,
) -> u64 {
    let req = atomic_request(opcode, psn, VA, swap_add, compare);
    let out = rsp.on_request(&req, None);
    let a = out.atomic.expect("atomic accepted");
    let want_op = if opcode == Opcode::RC_COMPARE_SWAP {
        AtomicOp::CompareSwap {
            compare,
            swap: swap_add,
        }
    } else {
        AtomicOp::FetchAdd { add: swap_add }
    };
    assert_eq!(
        a,
        AtomicExec {
            va: VA,
            rkey: RKEY,
            op: want_op
        }
    );
    assert!(out.reply.is_none() && out.atomic_reply.is_none() && out.read.is_none());
    let before = u64::from_ne_bytes(*word);
    let orig = execute(word, a.op);
    assert_eq!(orig, before);
    assert_eq!(u64::from_ne_bytes(*word), reference(a.op, orig));
    let reply = rsp.atomic_done(orig);
    assert_eq!(
        reply,
        AtomicReply {
            psn,
            msn: rsp.msn(),
            orig,
            empty: false,
        }
    );
    check_ack(&reply);
    assert_eq!(rsp.expected_psn(), psn.next());

    // C9-114: a duplicate is answered with the saved original, never executed again.
    let after = *word;
    let dup = rsp.on_request(&req, None);
    assert_eq!(
        dup.atomic, None,
        "a duplicate atomic must not execute twice"
    );
    assert_eq!(dup.atomic_reply, Some(reply));
    assert_eq!(*word, after);
    assert_eq!(rsp.expected_psn(), psn.next());
    orig
}

#[test]
fn responder_to_acknowledge() {
    let mut rsp = responder(0xff_fffe);
    let mut word = 10u64.to_ne_bytes();
    let cs = Opcode::RC_COMPARE_SWAP;
    let fa = Opcode::RC_FETCH_ADD;
    // Compare fails: unchanged, original returned.
    assert_eq!(
        round_trip(&mut rsp, &mut word, cs, Psn::new(0xff_fffe), 99, 11),
        10
    );
    assert_eq!(u64::from_ne_bytes(word), 10);
    // Compare succeeds (the PSN wraps to 0 next).
    assert_eq!(
        round_trip(&mut rsp, &mut word, cs, Psn::new(0xff_ffff), 99, 10),
        10
    );
    assert_eq!(u64::from_ne_bytes(word), 99);
    // Fetch & add wraps.
    assert_eq!(
        round_trip(&mut rsp, &mut word, fa, Psn::new(0), u64::MAX, 0),
        99
    );
    assert_eq!(u64::from_ne_bytes(word), 98);
    assert_eq!(rsp.msn(), Msn::new(3));
}

#[test]
fn misaligned_target_is_not_executed() {
    for va in [VA + 1, VA + 4, VA + 7] {
        let mut rsp = responder(0);
        let out = rsp.on_request(
            &atomic_request(Opcode::RC_FETCH_ADD, Psn::new(0), va, 1, 0),
            None,
        );
        assert_eq!(out.atomic, None);
        let reply = out.reply.expect("NAK");
        assert_eq!(reply.syndrome, Syndrome::Nak(NakCode::InvalidRequest));
    }
}

fn op() -> impl Strategy<Value = AtomicOp> {
    prop_oneof![
        (any::<u64>(), any::<u64>())
            .prop_map(|(compare, swap)| AtomicOp::CompareSwap { compare, swap }),
        any::<u64>().prop_map(|add| AtomicOp::FetchAdd { add }),
    ]
}

/// A target value and an operation on it, the compare operand often equal to the target.
fn target_and_op() -> impl Strategy<Value = (u64, AtomicOp)> {
    (any::<u64>(), op(), any::<bool>()).prop_map(|(orig, op, hit)| match op {
        AtomicOp::CompareSwap { swap, .. } if hit => (
            orig,
            AtomicOp::CompareSwap {
                compare: orig,
                swap,
            },
        ),
        _ => (orig, op),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    /// `apply` agrees with the reference model; execution returns the original value.
    #[test]
    fn apply_matches_reference((orig, op) in target_and_op()) {
        prop_assert_eq!(op.apply(orig), reference(op, orig));
        let mut word = orig.to_ne_bytes();
        prop_assert_eq!(execute(&mut word, op), orig);
        prop_assert_eq!(u64::from_ne_bytes(word), reference(op, orig));
        if let AtomicOp::CompareSwap { compare, swap } = op {
            prop_assert!(op.apply(orig) == swap || op.apply(orig) == orig);
            if compare != orig {
                prop_assert_eq!(op.apply(orig), orig);
            }
        }
    }

    /// A sequence of atomics on one target: each returns the value the previous one left,
    /// and the target ends as the reference fold.
    #[test]
    fn sequences_are_linear(init in any::<u64>(), ops in prop::collection::vec(op(), 0..32)) {
        let mut word = init.to_ne_bytes();
        let mut model = init;
        for op in ops {
            prop_assert_eq!(execute(&mut word, op), model);
            model = reference(op, model);
        }
        prop_assert_eq!(u64::from_ne_bytes(word), model);
    }

    /// Random atomic requests through the responder: executed once, acknowledged with the
    /// original value, duplicates answered from the saved value.
    #[test]
    fn responder_round_trips(
        init in any::<u64>(),
        psn in any::<u32>(),
        reqs in prop::collection::vec(
            (any::<bool>(), any::<u64>(), any::<u64>(), any::<bool>()),
            1..16,
        ),
    ) {
        let psn = psn & 0xff_ffff;
        let mut rsp = responder(psn);
        let mut word = init.to_ne_bytes();
        let mut model = init;
        for (k, (cs, swap_add, compare, hit)) in reqs.into_iter().enumerate() {
            let opcode = if cs { Opcode::RC_COMPARE_SWAP } else { Opcode::RC_FETCH_ADD };
            let compare = if hit { model } else { compare };
            let p = Psn::new(psn).wrapping_add(k as u32);
            let orig = round_trip(&mut rsp, &mut word, opcode, p, swap_add, compare);
            prop_assert_eq!(orig, model);
            let op = if cs {
                AtomicOp::CompareSwap { compare, swap: swap_add }
            } else {
                AtomicOp::FetchAdd { add: swap_add }
            };
            model = reference(op, model);
            prop_assert_eq!(u64::from_ne_bytes(word), model);
            prop_assert_eq!(rsp.msn(), Msn::new(k as u32 + 1));
        }
    }
}

// ---------------------------------------------------------------------------------------
// ATOMIC WRITE (IBA 1.5 annex A19)

fn write_responder(psn: u32, remote_write: bool) -> Responder {
    Responder::new(ResponderConfig {
        remote_write,
        remote_atomic: false,
        ..config(psn)
    })
}

/// An ATOMIC WRITE request as it arrives: RETH (`va`, `dma_len`) and `payload`, built,
/// parsed and reduced to a [`Request`].
fn atomic_write_request(psn: Psn, va: u64, dma_len: u32, payload: &[u8]) -> Option<Request> {
    let spec = PacketSpec {
        reth: Some(RethFields {
            va,
            rkey: RKEY,
            dma_len,
        }),
        payload,
        ..PacketSpec::default()
    };
    arrive(spec, Opcode::RC_ATOMIC_WRITE, psn)
}

#[test]
fn atomic_write_stores_its_payload_and_is_answered_by_an_empty_read_response() {
    let mut rsp = write_responder(0xff_ffff, true);
    let payload = [1u8, 2, 3, 4, 5, 6, 7, 8];
    let req = atomic_write_request(Psn::new(0xff_ffff), VA, 8, &payload).expect("parses");
    assert_eq!(req.atomic_write, Some(u64::from_ne_bytes(payload)));
    let out = rsp.on_request(&req, None);
    let a = out.atomic.expect("accepted");
    assert_eq!(
        a,
        AtomicExec {
            va: VA,
            rkey: RKEY,
            op: AtomicOp::Write {
                value: u64::from_ne_bytes(payload)
            }
        }
    );
    assert!(out.reply.is_none() && out.read.is_none() && out.complete.is_none());
    // The engine stores the payload bytes as they came.
    let mut word = [0u8; 8];
    execute(&mut word, a.op);
    assert_eq!(word, payload);
    let reply = rsp.atomic_done(0);
    assert_eq!(
        reply,
        AtomicReply {
            psn: Psn::new(0xff_ffff),
            msn: Msn::new(1),
            orig: 0,
            empty: true,
        }
    );
    // On the wire: RDMA READ response ONLY, its PSN, an ACK AETH, no payload (rdma_rxe's
    // answer, which its completer takes as the acknowledgement).
    let bytes = build_vec(&reply.spec(Qpn::new(DEST_QP), PKEY));
    let pkt = packet::parse_for(&bytes, QpType::Rc).unwrap();
    assert_eq!(pkt.opcode(), Opcode::RC_RDMA_READ_RESPONSE_ONLY);
    assert_eq!(pkt.bth.psn(), Psn::new(0xff_ffff));
    assert!(pkt.payload.is_empty() && pkt.atomic_ack_eth.is_none());
    let aeth = pkt.aeth.expect("AETH");
    assert_eq!(aeth.decode_syndrome(), Ok(Syndrome::Ack(Credits::INVALID)));
    assert_eq!(aeth.msn(), Msn::new(1));
    assert_eq!(rsp.expected_psn(), Psn::new(0));

    // A duplicate is answered again and never stored twice.
    let dup = rsp.on_request(&req, None);
    assert_eq!(dup.atomic, None);
    assert_eq!(dup.atomic_reply, Some(reply));
    assert!(dup.duplicate);
}

#[test]
fn atomic_write_needs_remote_write_eight_bytes_and_alignment() {
    let payload = [0xa5u8; 8];
    let nak = |rsp: &mut Responder, req: &Request| {
        let out = rsp.on_request(req, None);
        assert_eq!(out.atomic, None, "{req:?}");
        assert_eq!(
            out.reply.expect("NAK").syndrome,
            Syndrome::Nak(NakCode::InvalidRequest),
            "{req:?}"
        );
        assert!(out.fatal);
    };
    // No remote write access on the QP (remote atomic access is not what it takes).
    let req = atomic_write_request(Psn::new(0), VA, 8, &payload).unwrap();
    nak(&mut write_responder(0, false), &req);
    // A RETH length other than 8.
    for len in [0, 4, 16] {
        let req = atomic_write_request(Psn::new(0), VA, len, &payload).unwrap();
        nak(&mut write_responder(0, true), &req);
    }
    // A misaligned target (o19-28).
    for va in [VA + 1, VA + 4] {
        let req = atomic_write_request(Psn::new(0), va, 8, &payload).unwrap();
        nak(&mut write_responder(0, true), &req);
    }
    // A payload other than 8 bytes cannot even be built (the opcode table says exactly 8,
    // and the parser holds received packets to the same rule).
    assert_eq!(
        Opcode::RC_ATOMIC_WRITE.info().unwrap().payload(),
        rrxe_proto::opcode::Payload::Exactly(8)
    );
}

// ---------------------------------------------------------------------------------------
// FLUSH (IBA 1.5 annex A19)

fn flush_responder(psn: u32, flush_types: u8) -> Responder {
    Responder::new(ResponderConfig {
        remote_write: true,
        remote_read: true,
        flush_types,
        ..config(psn)
    })
}

/// A FLUSH request as it arrives: FETH (`types`, `level`) and RETH, built, parsed and reduced
/// to a [`Request`].
fn flush_request(psn: Psn, types: u8, level: u8, va: u64, len: u32) -> Request {
    let spec = PacketSpec {
        feth: Some(FethFields::new(types, level)),
        reth: Some(RethFields {
            va,
            rkey: RKEY,
            dma_len: len,
        }),
        ..PacketSpec::default()
    };
    arrive(spec, Opcode::RC_FLUSH, psn).unwrap()
}

#[test]
fn flush_is_checked_then_answered_by_an_empty_read_response() {
    for (level, whole_region) in [(0, false), (1, true)] {
        let mut rsp = flush_responder(7, 1);
        let req = flush_request(Psn::new(7), 1, level, VA + 3, 1000);
        assert_eq!(req.flush, Some((1, level)));
        let out = rsp.on_request(&req, None);
        assert_eq!(
            out.atomic,
            Some(AtomicExec {
                va: VA + 3,
                rkey: RKEY,
                op: AtomicOp::Flush {
                    types: 1,
                    len: 1000,
                    whole_region
                }
            }),
            "no alignment rule for a FLUSH"
        );
        let reply = rsp.atomic_done(0);
        assert!(reply.empty && reply.orig == 0 && reply.psn == Psn::new(7));
        let bytes = build_vec(&reply.spec(Qpn::new(DEST_QP), PKEY));
        let pkt = packet::parse_for(&bytes, QpType::Rc).unwrap();
        assert_eq!(pkt.opcode(), Opcode::RC_RDMA_READ_RESPONSE_ONLY);
        assert!(pkt.payload.is_empty());
        // A duplicate is answered again, not carried out again.
        let dup = rsp.on_request(&req, None);
        assert_eq!(dup.atomic, None);
        assert_eq!(dup.atomic_reply, Some(reply));
    }
}

#[test]
fn flush_needs_each_placement_type_granted_and_a_known_level() {
    let nak = |granted: u8, types: u8, level: u8| {
        let mut rsp = flush_responder(0, granted);
        let out = rsp.on_request(&flush_request(Psn::new(0), types, level, VA, 64), None);
        assert_eq!(
            out.atomic, None,
            "granted {granted} types {types} level {level}"
        );
        assert_eq!(
            out.reply.expect("NAK").syndrome,
            Syndrome::Nak(NakCode::InvalidRequest)
        );
        assert!(out.fatal);
    };
    nak(0, 1, 0); // no flush right on the QP
    nak(1, 2, 0); // persistence asked, global granted
    nak(1, 3, 0); // both asked, one granted
    nak(3, 0, 0); // no placement type at all
    nak(3, 1, 2); // unknown selectivity level
    nak(3, 1, 3);
    let mut rsp = flush_responder(0, 3);
    let out = rsp.on_request(&flush_request(Psn::new(0), 3, 0, VA, 64), None);
    assert!(out.atomic.is_some());
}
