// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the full parser, the ICRC check and the builder, with round-trip oracles.
//!
//! Input byte 0 selects the mode: odd = an Ethernet frame (dissect, parse, verify, rebuild),
//! even = a bare UDP payload behind fixed IPv4 (bit 1 clear) or IPv6 (bit 1 set) headers.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rrxe_proto::capture;
use rrxe_proto::crc32::crc32_le;
use rrxe_proto::icrc::{self, IpHdr};
use rrxe_proto::opcode::QpType;
use rrxe_proto::packet;

const IPV4: [u8; 20] = [
    0x45, 0, 0, 64, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2,
];
const IPV6: [u8; 40] = [
    0x60, 0, 0, 0, 0, 64, 17, 64, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xfe, 0x80,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
];
const UDP: [u8; 8] = [0xc0, 0, 0x12, 0xb7, 0, 64, 0, 0];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 1 {
        let Some(roce) = capture::dissect(rest) else {
            return;
        };
        if let (Ok(pkt), Ok(())) = (roce.parse(), roce.verify_icrc()) {
            let rebuilt = capture::rebuild(&roce, &pkt).expect("rebuild of a valid packet");
            assert_eq!(rebuilt, roce.payload, "rebuild differs");
        }
        return;
    }
    let ip = if mode & 2 == 0 {
        IpHdr::V4(&IPV4)
    } else {
        IpHdr::V6(&IPV6)
    };
    let verified = icrc::verify(&crc32_le, ip, &UDP, rest);
    for qp in [QpType::Rc, QpType::Uc, QpType::Ud] {
        let _ = packet::parse_for(rest, qp);
    }
    if let Ok(pkt) = packet::parse(rest) {
        let mut out = vec![0u8; rest.len()];
        let len = packet::build(&pkt.spec(), &mut out).expect("build of a parsed packet");
        assert_eq!(len, rest.len());
        icrc::generate(&crc32_le, ip, &UDP, &mut out).expect("ICRC of a parsed packet");
        assert_eq!(
            out == rest,
            verified.is_ok(),
            "ICRC verify disagrees with generate"
        );
    }
});
