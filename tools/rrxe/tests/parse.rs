// SPDX-License-Identifier: GPL-2.0

//! Parser and builder: typed errors for every kind of malformed packet.

mod common;

use common::{build_vec, full_spec};
use rrxe_proto::ext::ExtHdr;
use rrxe_proto::opcode::{Opcode, QpType, OPCODE_TABLE};
use rrxe_proto::packet::{self, parse, parse_for, BuildError, PacketSpec, ParseError};

fn packet(op: Opcode, payload: &[u8]) -> Vec<u8> {
    build_vec(&full_spec(op.info().unwrap(), 0x1234_5678_9abc, payload))
}

#[test]
fn every_opcode_builds_and_parses() {
    let data: Vec<u8> = (0..=40).collect();
    for row in OPCODE_TABLE {
        for len in [0, 1, 2, 3, 4, 8, 41] {
            let p = build_vec(&full_spec(row, len as u64, &data[..len]));
            let res = parse(&p);
            if !row.supported() {
                assert_eq!(res.unwrap_err(), ParseError::Unsupported(row.opcode));
                continue;
            }
            let pkt = res.unwrap_or_else(|e| panic!("{}: {e}", row.name));
            assert_eq!(pkt.info, row);
            assert_eq!(pkt.body.len() + 4, p.len());
            assert_eq!(usize::from(pkt.bth.pad_count()), pkt.pad.len());
            assert_eq!((pkt.payload.len() + pkt.pad.len()) % 4, 0);
            assert_eq!(pkt.reth.is_some(), row.has(ExtHdr::Reth));
            assert_eq!(pkt.aeth.is_some(), row.has(ExtHdr::Aeth));
            assert_eq!(pkt.deth.is_some(), row.has(ExtHdr::Deth));
            assert_eq!(pkt.immdt.is_some(), row.immediate());
            assert_eq!(pkt.ieth.is_some(), row.invalidate());
        }
    }
}

#[test]
fn truncated_prefixes() {
    for row in OPCODE_TABLE.iter().filter(|r| r.supported()) {
        let p = packet(row.opcode, &[1, 2, 3, 4, 5, 6, 7, 8]);
        for n in 0..p.len() {
            // Longer prefixes may be valid packets themselves; they must just not panic.
            let res = parse(&p[..n]);
            if n < row.hdr_len + 4 {
                assert_eq!(
                    res.unwrap_err(),
                    ParseError::Truncated,
                    "{} len {n}",
                    row.name
                );
            }
        }
    }
}

#[test]
fn bth_level_errors() {
    let mut p = packet(Opcode::RC_SEND_ONLY, b"abcd");
    assert!(parse(&p).is_ok());
    p[1] |= 0x01;
    assert_eq!(parse(&p).unwrap_err(), ParseError::BadTransportVersion(1));
    for op in [0x15, 0x1e, 0x2c, 0x60, 0x66, 0x80, 0xc0, 0xff] {
        let mut p = packet(Opcode::RC_SEND_ONLY, b"abcd");
        p[0] = op;
        assert_eq!(
            parse(&p).unwrap_err(),
            ParseError::UnknownOpcode(Opcode(op))
        );
    }
    let rd = packet(Opcode::RD_SEND_ONLY, b"");
    assert_eq!(
        parse(&rd).unwrap_err(),
        ParseError::Unsupported(Opcode::RD_SEND_ONLY)
    );
    let cnp = packet(Opcode::CNP, b"");
    assert_eq!(cnp.len(), 32);
    let p = parse(&cnp).unwrap();
    assert!(p.info.is_cnp() && p.info.qp_type().is_none());
    assert!(p.payload.is_empty());
    // A CNP has no payload: 16 reserved bytes, then the ICRC.
    let mut long = cnp.clone();
    long.splice(28..28, [0u8; 4]);
    assert_eq!(parse(&long).unwrap_err(), ParseError::UnexpectedPayload);
    assert_eq!(parse(&cnp[..28]).unwrap_err(), ParseError::Truncated);
}

#[test]
fn qp_type_check() {
    let uc = packet(Opcode::UC_RDMA_WRITE_ONLY, b"abcd");
    assert!(parse_for(&uc, QpType::Uc).is_ok());
    assert_eq!(
        parse_for(&uc, QpType::Rc).unwrap_err(),
        ParseError::WrongQpType(Opcode::UC_RDMA_WRITE_ONLY, QpType::Rc)
    );
    let ud = packet(Opcode::UD_SEND_ONLY, b"");
    assert!(parse_for(&ud, QpType::Ud).is_ok());
    assert!(parse_for(&ud, QpType::Rc).is_err());
    let rc = packet(Opcode::RC_RDMA_READ_REQUEST, b"");
    assert!(parse_for(&rc, QpType::Rc).is_ok());
    assert!(parse_for(&rc, QpType::Uc).is_err());
}

/// Builds the headers of `op`, then `extra` and a zero ICRC, and sets the pad count.
fn with_tail(op: Opcode, extra: &[u8], pad: u8) -> Vec<u8> {
    let mut p = packet(op, b"");
    p.truncate(op.info().unwrap().hdr_len);
    p.extend(extra.iter().chain(&[0; 4]));
    p[1] = (p[1] & !0x30) | pad << 4;
    p
}

#[test]
fn payload_rules() {
    for op in [
        Opcode::RC_ACKNOWLEDGE,
        Opcode::RC_ATOMIC_ACKNOWLEDGE,
        Opcode::RC_RDMA_READ_REQUEST,
        Opcode::RC_COMPARE_SWAP,
        Opcode::RC_FETCH_ADD,
        Opcode::RC_FLUSH,
    ] {
        assert!(parse(&with_tail(op, &[], 0)).is_ok(), "{op:?}");
        assert_eq!(
            parse(&with_tail(op, &[0; 4], 0)).unwrap_err(),
            ParseError::UnexpectedPayload
        );
        assert_eq!(
            parse(&with_tail(op, &[0; 4], 3)).unwrap_err(),
            ParseError::UnexpectedPayload
        );
        assert_eq!(
            parse(&with_tail(op, &[], 1)).unwrap_err(),
            ParseError::BadPadCount
        );
        assert_eq!(
            parse(&with_tail(op, &[0; 2], 0)).unwrap_err(),
            ParseError::Unaligned
        );
    }
    let aw = Opcode::RC_ATOMIC_WRITE;
    assert!(parse(&with_tail(aw, &[0; 8], 0)).is_ok());
    assert_eq!(
        parse(&with_tail(aw, &[0; 4], 0)).unwrap_err(),
        ParseError::BadPayloadLength
    );
    assert_eq!(
        parse(&with_tail(aw, &[0; 12], 0)).unwrap_err(),
        ParseError::BadPayloadLength
    );
    assert_eq!(
        parse(&with_tail(aw, &[0; 8], 1)).unwrap_err(),
        ParseError::BadPayloadLength
    );
    // SEND: pad count against the payload.
    let send = Opcode::RC_SEND_ONLY;
    assert_eq!(parse(&with_tail(send, &[9; 4], 3)).unwrap().payload, [9]);
    assert_eq!(
        parse(&with_tail(send, &[], 2)).unwrap_err(),
        ParseError::BadPadCount
    );
    assert_eq!(
        parse(&with_tail(send, &[9; 5], 0)).unwrap_err(),
        ParseError::Unaligned
    );
    let empty = with_tail(send, &[], 0);
    let empty = parse(&empty).unwrap();
    assert!(empty.payload.is_empty() && empty.pad.is_empty());
}

#[test]
fn build_errors_and_pad() {
    let row = Opcode::RC_RDMA_WRITE_FIRST.info().unwrap();
    let spec = PacketSpec {
        reth: None,
        ..full_spec(row, 1, b"abc")
    };
    let mut out = [0u8; 128];
    assert_eq!(
        packet::build(&spec, &mut out),
        Err(BuildError::MissingHeader(ExtHdr::Reth))
    );
    let spec = full_spec(row, 1, b"abcde");
    for n in 0..(28 + 8 + 4) {
        assert_eq!(
            packet::build(&spec, &mut out[..n]),
            Err(BuildError::BufferTooSmall),
            "{n}"
        );
    }
    assert_eq!(packet::build(&spec, &mut out), Ok(40));
    let pkt = parse(&out[..40]).unwrap();
    assert_eq!(pkt.bth.pad_count(), 3);
    assert_eq!(pkt.pad, [0, 0, 0]);
    assert_eq!(pkt.payload, b"abcde");
    let mut spec = full_spec(Opcode::RC_ACKNOWLEDGE.info().unwrap(), 1, b"");
    spec.payload = b"x";
    assert_eq!(
        packet::build(&spec, &mut out),
        Err(BuildError::BadPayload(ParseError::UnexpectedPayload))
    );
    spec.bth.opcode = Opcode(0x1f);
    assert_eq!(
        packet::build(&spec, &mut out),
        Err(BuildError::UnknownOpcode(Opcode(0x1f)))
    );
}

#[test]
fn rebuild_from_spec_is_identity() {
    let mut p = packet(Opcode::RC_SEND_LAST_WITH_IMMEDIATE, b"hello");
    // Non-zero reserved bits and pad bytes survive a parse -> build round trip.
    p[4] |= 0x15;
    p[8] |= 0x2a;
    let n = p.len();
    p[n - 5] = 0xee;
    let pkt = parse(&p).unwrap();
    assert_eq!(pkt.bth.resv6a(), 0x15);
    assert_eq!(pkt.bth.resv7(), 0x2a);
    assert_eq!(pkt.pad, [0, 0, 0xee]);
    let mut out = vec![0; p.len()];
    assert_eq!(packet::build(&pkt.spec(), &mut out), Ok(p.len()));
    assert_eq!(out[..n - 4], p[..n - 4]);
}
