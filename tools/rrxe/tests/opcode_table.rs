// SPDX-License-Identifier: GPL-2.0

//! The opcode table against an independent transcription of the IBA / rxe tables.

use rrxe_proto::ext::ExtHdr;
use rrxe_proto::opcode::{self, AckReq, Opcode, Payload, QpType, OPCODE_TABLE};

/// (opcode, header length, flags) transcribed from rxe_opcode.c; flags: P payload,
/// Q request, A response, R takes a receive WQE, C completes one, S start, E end,
/// I immediate, V invalidate.
const EXPECTED: &[(u8, usize, &str)] = &[
    (0x00, 12, "PQRS"),
    (0x01, 12, "PQ"),
    (0x02, 12, "PQCE"),
    (0x03, 16, "PQCEI"),
    (0x04, 12, "PQCRSE"),
    (0x05, 16, "PQCRSEI"),
    (0x06, 28, "PQS"),
    (0x07, 12, "PQ"),
    (0x08, 12, "PQE"),
    (0x09, 16, "PQCREI"),
    (0x0a, 28, "PQSE"),
    (0x0b, 32, "PQCRSEI"),
    (0x0c, 28, "QSE"),
    (0x0d, 16, "PAS"),
    (0x0e, 12, "PA"),
    (0x0f, 16, "PAE"),
    (0x10, 16, "PASE"),
    (0x11, 16, "ASE"),
    (0x12, 24, "ASE"),
    (0x13, 40, "QSE"),
    (0x14, 40, "QSE"),
    (0x16, 16, "PQCEV"),
    (0x17, 16, "PQCRSEV"),
    (0x1c, 32, "QSE"),
    (0x1d, 28, "PQSE"),
    (0x20, 12, "PQRS"),
    (0x21, 12, "PQ"),
    (0x22, 12, "PQCE"),
    (0x23, 16, "PQCEI"),
    (0x24, 12, "PQCRSE"),
    (0x25, 16, "PQCRSEI"),
    (0x26, 28, "PQS"),
    (0x27, 12, "PQ"),
    (0x28, 12, "PQE"),
    (0x29, 16, "PQCREI"),
    (0x2a, 28, "PQSE"),
    (0x2b, 32, "PQCRSEI"),
    (0x40, 24, "PQRS"),
    (0x41, 24, "PQ"),
    (0x42, 24, "PQCE"),
    (0x43, 28, "PQCEI"),
    (0x44, 24, "PQCRSE"),
    (0x45, 28, "PQCRSEI"),
    (0x46, 40, "PQS"),
    (0x47, 24, "PQ"),
    (0x48, 24, "PQE"),
    (0x49, 28, "PQCREI"),
    (0x4a, 40, "PQSE"),
    (0x4b, 44, "PQCRSEI"),
    (0x4c, 40, "QSE"),
    (0x4d, 20, "PAS"),
    (0x4e, 16, "PA"),
    (0x4f, 20, "PAE"),
    (0x50, 20, "PASE"),
    (0x51, 20, "ASE"),
    (0x52, 28, "ASE"),
    (0x53, 52, "QSE"),
    (0x54, 52, "QSE"),
    (0x5c, 44, "QSE"),
    (0x64, 20, "PQCRSE"),
    (0x65, 24, "PQCRSEI"),
    (0x81, 28, "SE"),
];

#[test]
fn table_matches_transcription() {
    assert_eq!(OPCODE_TABLE.len(), EXPECTED.len());
    for (row, &(op, len, flags)) in OPCODE_TABLE.iter().zip(EXPECTED) {
        assert_eq!(row.opcode, Opcode(op));
        let name = row.name;
        assert_eq!(row.hdr_len, len, "{name}");
        let sum: usize = 12 + row.headers.iter().map(|h| h.size()).sum::<usize>();
        assert_eq!(row.hdr_len, sum, "{name}");
        let has = |c| flags.contains(c);
        assert_eq!(row.payload() != Payload::None, has('P'), "{name} payload");
        assert_eq!(row.is_request(), has('Q'), "{name} request");
        assert_eq!(row.is_response(), has('A'), "{name} response");
        assert_eq!(row.consumes_rwqe(), has('R'), "{name} rwqe");
        assert_eq!(row.completes_rwqe(), has('C'), "{name} completion");
        assert_eq!(row.is_first(), has('S'), "{name} first");
        assert_eq!(row.is_last(), has('E'), "{name} last");
        assert_eq!(row.immediate(), has('I'), "{name} immediate");
        assert_eq!(row.invalidate(), has('V'), "{name} invalidate");
    }
}

#[test]
fn lookup_covers_exactly_the_table() {
    for v in 0..=255u8 {
        let row = OPCODE_TABLE.iter().find(|r| r.opcode == Opcode(v));
        assert_eq!(opcode::info(Opcode(v)), row, "{v:#04x}");
        assert_eq!(Opcode(v).name(), row.map_or("UNKNOWN", |r| r.name));
    }
    // Reserved values inside the RC range.
    for v in [
        0x15, 0x18, 0x19, 0x1a, 0x1b, 0x1e, 0x1f, 0x2c, 0x55, 0x60, 0x66, 0x80, 0xff,
    ] {
        assert!(opcode::info(Opcode(v)).is_none(), "{v:#04x}");
    }
}

#[test]
fn names_constants_and_qp_types() {
    for row in OPCODE_TABLE {
        let (prefix, qp) = match row.opcode.0 >> 5 {
            0 => ("RC_", Some(QpType::Rc)),
            1 => ("UC_", Some(QpType::Uc)),
            2 => ("RD_", Some(QpType::Rd)),
            3 => ("UD_", Some(QpType::Ud)),
            _ => ("CNP", None),
        };
        assert!(row.name.starts_with(prefix), "{}", row.name);
        assert_eq!(row.qp_type(), qp);
        assert_eq!(
            row.supported(),
            matches!(qp, Some(QpType::Rc | QpType::Uc | QpType::Ud)) || row.is_cnp()
        );
        assert_eq!(row.is_cnp(), row.opcode == Opcode::CNP);
        for t in [QpType::Rc, QpType::Uc, QpType::Rd, QpType::Ud] {
            assert_eq!(row.allowed_on(t), qp == Some(t));
        }
    }
    assert_eq!(Opcode::RC_SEND_LAST_WITH_INVALIDATE, Opcode(0x16));
    assert_eq!(Opcode::RC_SEND_ONLY_WITH_INVALIDATE, Opcode(0x17));
    assert_eq!(Opcode::RC_FLUSH, Opcode(0x1c));
    assert_eq!(Opcode::RC_ATOMIC_WRITE, Opcode(0x1d));
    assert_eq!(Opcode::UD_SEND_ONLY, Opcode(0x64));
    assert_eq!(Opcode::CNP, Opcode(0x81));
    assert_eq!(format!("{:?}", Opcode(0x11)), "RC_ACKNOWLEDGE(0x11)");
}

#[test]
fn header_order() {
    use ExtHdr::*;
    let order = |op: Opcode| op.info().unwrap().headers;
    assert_eq!(
        order(Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE),
        [Reth, ImmDt]
    );
    assert_eq!(order(Opcode::RC_ATOMIC_ACKNOWLEDGE), [Aeth, AtomicAckEth]);
    assert_eq!(order(Opcode::RC_FLUSH), [Feth, Reth]);
    assert_eq!(order(Opcode::RC_ATOMIC_WRITE), [Reth]);
    assert_eq!(order(Opcode::UD_SEND_ONLY_WITH_IMMEDIATE), [Deth, ImmDt]);
    assert_eq!(
        order(Opcode::RD_RDMA_WRITE_ONLY_WITH_IMMEDIATE),
        [Rdeth, Deth, Reth, ImmDt]
    );
    assert_eq!(
        order(Opcode::RD_ATOMIC_ACKNOWLEDGE),
        [Rdeth, Aeth, AtomicAckEth]
    );
}

#[test]
fn ack_request_rules() {
    let rule = |op: Opcode| op.info().unwrap().ack_req();
    assert_eq!(rule(Opcode::RC_SEND_FIRST), AckReq::Optional);
    assert_eq!(rule(Opcode::RC_RDMA_WRITE_MIDDLE), AckReq::Optional);
    assert_eq!(rule(Opcode::RC_SEND_LAST), AckReq::Expected);
    assert_eq!(rule(Opcode::RC_RDMA_READ_REQUEST), AckReq::Expected);
    assert_eq!(rule(Opcode::RC_COMPARE_SWAP), AckReq::Expected);
    assert_eq!(rule(Opcode::RC_FLUSH), AckReq::Expected);
    assert_eq!(rule(Opcode::RC_ACKNOWLEDGE), AckReq::Never);
    assert_eq!(rule(Opcode::RC_RDMA_READ_RESPONSE_LAST), AckReq::Never);
    assert_eq!(rule(Opcode::UC_SEND_ONLY), AckReq::Never);
    assert_eq!(rule(Opcode::UD_SEND_ONLY), AckReq::Never);
    assert_eq!(rule(Opcode::CNP), AckReq::Never);
}
