// SPDX-License-Identifier: GPL-2.0

//! Helpers shared by the integration tests.

#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

use rrxe_proto::crc32::crc32_le;
use rrxe_proto::ext::{
    AethFields, AtomicAckEthFields, AtomicEthFields, DethFields, FethFields, IethFields,
    ImmDtFields, RdethFields, RethFields,
};
use rrxe_proto::icrc::{self, IpHdr};
use rrxe_proto::opcode::{OpInfo, Payload};
use rrxe_proto::packet::{self, PacketSpec};

pub mod responder;
pub mod sender;

/// Directory holding the fixture frames and captures.
pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Parses a hex fixture: whitespace-separated hex, `#` starts a comment line.
pub fn parse_hex(text: &str) -> Vec<u8> {
    let digits: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .flat_map(|l| l.chars().filter(char::is_ascii_hexdigit))
        .collect();
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap())
        .collect()
}

/// Independent reference: bit-at-a-time CRC-32 (reflected, no inversion).
pub fn bitwise_crc(mut crc: u32, data: &[u8]) -> u32 {
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    crc
}

/// Independent reference ICRC: materialises the whole masked pseudo-packet, then runs
/// [`bitwise_crc`] from `0xffffffff` over it.
pub fn reference_icrc(ip: IpHdr<'_>, udp: &[u8], body: &[u8]) -> u32 {
    let mut buf = vec![0xffu8; 8];
    match ip {
        IpHdr::V4(h) => {
            let mut h = h.to_vec();
            h[1] = 0xff;
            h[8] = 0xff;
            h[10] = 0xff;
            h[11] = 0xff;
            buf.extend(h);
        }
        IpHdr::V6(h) => {
            let mut h = h.to_vec();
            h[0] |= 0x0f;
            h[1..4].fill(0xff);
            h[7] = 0xff;
            buf.extend(h);
        }
    }
    let mut udp = udp[..8].to_vec();
    udp[6..8].fill(0xff);
    buf.extend(udp);
    let mut body = body.to_vec();
    body[4] = 0xff;
    buf.extend(body);
    !bitwise_crc(0xffff_ffff, &buf)
}

/// Wraps a UDP payload (BTH to ICRC) in Ethernet/IPv4 or IPv6/UDP and fills in the ICRC.
pub fn make_frame(v6: bool, roce: &[u8]) -> Vec<u8> {
    let udp_len = u16::try_from(8 + roce.len()).unwrap();
    let mut f = vec![0x52, 0x54, 0, 0, 0, 2, 0x52, 0x54, 0, 0, 0, 1];
    let ip_start;
    if v6 {
        f.extend([0x86, 0xdd]);
        ip_start = f.len();
        f.extend([0x60, 0x12, 0x34, 0x56]);
        f.extend(udp_len.to_be_bytes());
        f.extend([17, 64]);
        f.extend([0xfe, 0x80].iter().chain(&[0; 13]).chain(&[1]));
        f.extend([0xfe, 0x80].iter().chain(&[0; 13]).chain(&[2]));
    } else {
        f.extend([0x08, 0x00]);
        ip_start = f.len();
        f.extend([0x45, 0x00]);
        f.extend((udp_len + 20).to_be_bytes());
        f.extend([0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    }
    let ip_len = f.len() - ip_start;
    f.extend([0xc0, 0x00, 0x12, 0xb7]);
    f.extend(udp_len.to_be_bytes());
    f.extend([0, 0]);
    f.extend(roce);
    let (head, payload) = f.split_at_mut(ip_start + ip_len + 8);
    let ip = &head[ip_start..ip_start + ip_len];
    let udp = &head[ip_start + ip_len..];
    let ip = if v6 { IpHdr::V6(ip) } else { IpHdr::V4(ip) };
    icrc::generate(&crc32_le, ip, udp, payload).unwrap();
    f
}

const FILL: &[u8] = &[0x5a; 64];

/// A spec for `info` with every header present (filled from `seed`) and a payload allowed by
/// the opcode.
pub fn full_spec<'a>(info: &OpInfo, seed: u64, payload: &'a [u8]) -> PacketSpec<'a> {
    let s32 = seed as u32;
    let mut spec = PacketSpec {
        rdeth: Some(RdethFields {
            resv: 0,
            eecn: rrxe_proto::bth::Qpn::new(s32),
        }),
        deth: Some(DethFields {
            qkey: s32 ^ 0x8001_0000,
            resv: 0,
            src_qp: rrxe_proto::bth::Qpn::new(s32 >> 3),
        }),
        feth: Some(FethFields::new(2, 1)),
        reth: Some(RethFields {
            va: seed.rotate_left(7),
            rkey: s32.rotate_left(3),
            dma_len: 4096,
        }),
        atomic_eth: Some(AtomicEthFields {
            va: seed & !7,
            rkey: s32,
            swap_add: seed.wrapping_mul(3),
            compare: !seed,
        }),
        immdt: Some(ImmDtFields { imm: s32 ^ 0xdead }),
        ieth: Some(IethFields { rkey: s32 ^ 0xbeef }),
        aeth: Some(AethFields {
            syndrome: 0x1f,
            msn: rrxe_proto::psn::Msn::new(s32),
        }),
        atomic_ack_eth: Some(AtomicAckEthFields { orig: seed }),
        payload: &[],
        pad: &[],
        ..PacketSpec::default()
    };
    spec.bth.opcode = info.opcode;
    spec.bth.pkey = 0xffff;
    spec.bth.dest_qp = rrxe_proto::bth::Qpn::new(s32 >> 5);
    spec.bth.psn = rrxe_proto::psn::Psn::new(s32 >> 2);
    spec.payload = match info.payload() {
        Payload::None => &[],
        Payload::Exactly(n) if payload.len() < n => &FILL[..n],
        Payload::Exactly(n) => &payload[..n],
        Payload::Any => payload,
    };
    spec
}

/// Builds `spec` into a fresh vector (with a zero ICRC placeholder).
pub fn build_vec(spec: &PacketSpec<'_>) -> Vec<u8> {
    let mut out = vec![0; 64 + spec.payload.len()];
    let n = packet::build(spec, &mut out).unwrap();
    out.truncate(n);
    out
}

/// Runs `test` on `cases` values drawn from `strategy` (shrinking a failure as `proptest!`
/// does) and fails unless at least `min_accepted` of them reached the branch whose assertions
/// are the point of the property (`test` returns `Ok(true)` there): a property whose
/// assertions never run proves nothing, so the share of inputs that reach them is asserted
/// too.
pub fn run_accepting<S: proptest::strategy::Strategy>(
    name: &str,
    cases: u32,
    min_accepted: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<bool, proptest::test_runner::TestCaseError>,
) {
    use proptest::test_runner::{Config, TestRunner};
    use std::cell::Cell;

    let accepted = Cell::new(0u32);
    let mut runner = TestRunner::new(Config::with_cases(cases));
    let result = runner.run(&strategy, |v| {
        if test(v)? {
            accepted.set(accepted.get() + 1);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{name}: {e}");
    }
    // Shrinking runs extra cases only after a failure, which panicked above.
    assert!(
        accepted.get() >= min_accepted,
        "{name}: only {} of {cases} inputs reached the checked branch (want {min_accepted})",
        accepted.get()
    );
    eprintln!(
        "{name}: {} of {cases} inputs reached the checked branch",
        accepted.get()
    );
}
