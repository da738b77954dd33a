// SPDX-License-Identifier: GPL-2.0

//! Property tests: hostile input never panics, build/parse round trips for every opcode,
//! and every single-bit error in the ICRC-covered bytes is detected.

mod common;

use common::{bitwise_crc, full_spec, make_frame, reference_icrc};
use proptest::prelude::*;
use rrxe_proto::bth::Qpn;
use rrxe_proto::capture;
use rrxe_proto::crc32::crc32_le;
use rrxe_proto::icrc::{self, Icrc, IcrcError, IpHdr};
use rrxe_proto::opcode::{QpType, OPCODE_TABLE};
use rrxe_proto::packet::{self, parse, parse_for};
use rrxe_proto::psn::Psn;

fn frame_for(row: usize, seed: u64, payload: &[u8], v6: bool) -> Vec<u8> {
    let spec = full_spec(&OPCODE_TABLE[row], seed, payload);
    make_frame(v6, &common::build_vec(&spec))
}

/// Bytes (relative to the IP header) that the ICRC masks out.
fn masked(v6: bool, off: usize, bit: u32) -> bool {
    if v6 {
        (off == 0 && bit < 4) || matches!(off, 1..=3 | 7 | 46 | 47 | 52)
    } else {
        matches!(off, 1 | 8 | 10 | 11 | 26 | 27 | 32)
    }
}

/// Indices of the rows the parser accepts (RC, UC, UD).
fn supported_row() -> impl Strategy<Value = usize> {
    let rows: Vec<usize> = (0..OPCODE_TABLE.len())
        .filter(|&i| OPCODE_TABLE[i].supported())
        .collect();
    prop::sample::select(rows)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..160)) {
        let _ = parse(&bytes);
        for qp in [QpType::Rc, QpType::Uc, QpType::Rd, QpType::Ud] {
            let _ = parse_for(&bytes, qp);
        }
        let split = bytes.len() / 3;
        let (a, b) = bytes.split_at(split);
        let _ = icrc::verify(&crc32_le, IpHdr::V4(a), b, b);
        let _ = icrc::verify(&crc32_le, IpHdr::V6(a), b, a);
        let _ = capture::dissect(&bytes);
        let _ = capture::read_frames(&bytes);
    }

    #[test]
    fn build_parse_round_trip(
        row in 0..OPCODE_TABLE.len(),
        seed in any::<u64>(),
        bth_bits in any::<(bool, bool, bool, bool, bool, u16)>(),
        payload in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        let info = &OPCODE_TABLE[row];
        let mut spec = full_spec(info, seed, &payload);
        let (se, m, fecn, becn, ack, pkey) = bth_bits;
        spec.bth.solicited = se;
        spec.bth.mig_req = m;
        spec.bth.fecn = fecn;
        spec.bth.becn = becn;
        spec.bth.ack_req = ack;
        spec.bth.pkey = pkey;
        spec.bth.dest_qp = Qpn::new(seed as u32 ^ 0x5a5a5a);
        let bytes = common::build_vec(&spec);
        match parse(&bytes) {
            Ok(pkt) => {
                let back = pkt.spec();
                let mut bth = spec.bth;
                bth.pad_count = u8::try_from(pkt.pad.len()).unwrap();
                prop_assert_eq!(back.bth, bth);
                prop_assert_eq!(back.payload, spec.payload);
                if let Some(r) = pkt.reth { prop_assert_eq!(Some(r.fields()), spec.reth); }
                if let Some(a) = pkt.atomic_eth { prop_assert_eq!(Some(a.fields()), spec.atomic_eth); }
                if let Some(a) = pkt.aeth { prop_assert_eq!(Some(a.fields()), spec.aeth); }
                if let Some(d) = pkt.deth { prop_assert_eq!(Some(d.fields()), spec.deth); }
                if let Some(i) = pkt.immdt { prop_assert_eq!(Some(i.fields()), spec.immdt); }
                if let Some(i) = pkt.ieth { prop_assert_eq!(Some(i.fields()), spec.ieth); }
                if let Some(f) = pkt.feth { prop_assert_eq!(Some(f.fields()), spec.feth); }
                if let Some(a) = pkt.atomic_ack_eth { prop_assert_eq!(Some(a.fields()), spec.atomic_ack_eth); }
                let mut again = vec![0; bytes.len()];
                prop_assert_eq!(packet::build(&back, &mut again), Ok(bytes.len()));
                prop_assert_eq!(again, bytes);
            }
            Err(e) => {
                prop_assert!(!info.supported());
                prop_assert_eq!(e, packet::ParseError::Unsupported(info.opcode));
            }
        }
    }

    #[test]
    fn frame_rebuild_and_reference_icrc(
        row in supported_row(),
        seed in any::<u64>(),
        payload in prop::collection::vec(any::<u8>(), 0..64),
        v6 in any::<bool>(),
    ) {
        let frame = frame_for(row, seed, &payload, v6);
        let roce = capture::dissect(&frame).unwrap();
        roce.verify_icrc().unwrap();
        let pkt = roce.parse().unwrap();
        prop_assert_eq!(reference_icrc(roce.ip, roce.udp, pkt.body), pkt.icrc_value());
        prop_assert_eq!(capture::rebuild(&roce, &pkt).unwrap(), roce.payload);
    }

    #[test]
    fn crc_matches_bitwise(seed in any::<u32>(), data in prop::collection::vec(any::<u8>(), 0..256), cut in any::<prop::sample::Index>()) {
        prop_assert_eq!(crc32_le(seed, &data), bitwise_crc(seed, &data));
        let (a, b) = data.split_at(cut.index(data.len() + 1));
        prop_assert_eq!(crc32_le(crc32_le(seed, a), b), crc32_le(seed, &data));
    }

    #[test]
    fn icrc_streaming_any_split(
        payload in prop::collection::vec(any::<u8>(), 0..128),
        cut in any::<prop::sample::Index>(),
        v6 in any::<bool>(),
    ) {
        let frame = frame_for(4, 99, &payload, v6);
        let roce = capture::dissect(&frame).unwrap();
        let body = &roce.payload[..roce.payload.len() - 4];
        let rest = &body[12..];
        let (a, b) = rest.split_at(cut.index(rest.len() + 1));
        let mut s = Icrc::new(&crc32_le, roce.ip, roce.udp, body).unwrap();
        s.update(a);
        s.update(b);
        prop_assert_eq!(s.finish(), icrc::compute(&crc32_le, roce.ip, roce.udp, body).unwrap());
    }

    #[test]
    fn psn_arithmetic(a in 0u32..0x100_0000, d in 0u32..0x80_0000) {
        let p = Psn::new(a);
        prop_assert_eq!(p.wrapping_add(d).diff(p), d as i32);
        prop_assert_eq!(p.diff(p.wrapping_add(d)), -(d as i32));
        prop_assert_eq!(p.wrapping_add(d).wrapping_add(0x100_0000 - d), p);
    }
}

/// A known opcode with any flags' pad count and any tail: whatever the parser accepts is
/// consistent (lengths add up). At least a quarter of the inputs must be accepted, or the
/// assertions prove nothing.
#[test]
fn known_opcode_random_tail() {
    // Mostly supported opcodes and 4-byte aligned packets (what the parser can accept),
    // sometimes any row and any length.
    let row = prop_oneof![3 => supported_row(), 1 => 0..OPCODE_TABLE.len()];
    let strategy = (
        row,
        any::<u8>(),
        prop::collection::vec(any::<u8>(), 0..80),
        prop::bool::weighted(0.8),
    );
    common::run_accepting(
        "known_opcode_random_tail",
        1024,
        256,
        strategy,
        |(row, flags, mut tail, align)| {
            if align && tail.len() >= 2 {
                // Opcode and flags byte, then the tail: a multiple of 4 in all.
                tail.truncate((tail.len() + 2) / 4 * 4 - 2);
            }
            let mut bytes = vec![OPCODE_TABLE[row].opcode.0, flags & 0x30];
            bytes.extend(tail);
            let Ok(pkt) = parse(&bytes) else {
                return Ok(false);
            };
            prop_assert_eq!(pkt.body.len() + 4, bytes.len());
            prop_assert!(pkt.body.len() >= pkt.info.hdr_len);
            prop_assert_eq!(
                pkt.info.hdr_len + pkt.payload.len() + pkt.pad.len(),
                pkt.body.len()
            );
            Ok(true)
        },
    );
}

/// Every single-bit flip of an ICRC-covered byte of a valid frame is detected, and a flip of
/// a masked bit is not. Flips that break Ethernet/IP/UDP dissection are not the ICRC's
/// business; at least half of the flips must reach the ICRC check.
#[test]
fn single_bit_flips_are_detected() {
    let strategy = (
        0..OPCODE_TABLE.len(),
        any::<u64>(),
        prop::collection::vec(any::<u8>(), 0..64),
        any::<bool>(),
        any::<prop::sample::Index>(),
        0u32..8,
    );
    common::run_accepting(
        "single_bit_flips_are_detected",
        1024,
        512,
        strategy,
        |(row, seed, payload, v6, pos, bit)| {
            let mut frame = frame_for(row, seed, &payload, v6);
            let ip_start = 14;
            let off = pos.index(frame.len() - ip_start);
            frame[ip_start + off] ^= 1 << bit;
            let Some(roce) = capture::dissect(&frame) else {
                return Ok(false);
            };
            let res = roce.verify_icrc();
            if masked(v6, off, bit) {
                prop_assert_eq!(res, Ok(()));
            } else {
                prop_assert!(
                    matches!(res, Err(IcrcError::Mismatch { .. } | IcrcError::Truncated)),
                    "flip at {} bit {} undetected",
                    off,
                    bit
                );
            }
            Ok(true)
        },
    );
}
