// SPDX-License-Identifier: GPL-2.0

//! CRC-32 and ICRC against independent computations.

mod common;

use common::{bitwise_crc, make_frame, reference_icrc};
use rrxe_proto::capture;
use rrxe_proto::crc32::crc32_le;
use rrxe_proto::icrc::{self, Icrc, IcrcError, IpHdr, SEED};

#[test]
fn crc32_known_values() {
    // The standard CRC-32 check value, with the inversions crc32_le leaves to the caller.
    assert_eq!(!crc32_le(!0, b"123456789"), 0xcbf4_3926);
    assert_eq!(crc32_le(0xffff_ffff, &[0xff; 8]), SEED);
    assert_eq!(crc32_le(0x1234_5678, &[]), 0x1234_5678);
    let data: Vec<u8> = (0..=255).cycle().take(1000).collect();
    assert_eq!(crc32_le(7, &data), bitwise_crc(7, &data));
    let (a, b) = data.split_at(333);
    assert_eq!(crc32_le(crc32_le(7, a), b), crc32_le(7, &data));
}

fn roce_of(frame: &[u8]) -> capture::RoceFrame<'_> {
    capture::dissect(frame).unwrap()
}

#[test]
fn streaming_matches_contiguous() {
    for v6 in [false, true] {
        let mut roce = vec![0x04, 0, 0xff, 0xff, 0, 0, 0, 1, 0x80, 0, 0, 1];
        roce.extend((0..200u8).chain([0; 4]));
        let frame = make_frame(v6, &roce);
        let r = roce_of(&frame);
        let body = &r.payload[..r.payload.len() - 4];
        let whole = icrc::compute(&crc32_le, r.ip, r.udp, body).unwrap();
        let mut s = Icrc::new(&crc32_le, r.ip, r.udp, body).unwrap();
        for chunk in body[12..].chunks(7) {
            s.update(chunk);
        }
        assert_eq!(s.finish(), whole);
        assert_eq!(whole, reference_icrc(r.ip, r.udp, body));
        // A plain `fn` pointer works as the CRC too, as the kernel's wrapper will.
        let f: fn(u32, &[u8]) -> u32 = crc32_le;
        let direct = match r.ip {
            IpHdr::V4(h) => icrc::compute_ipv4(&f, h, r.udp, body),
            IpHdr::V6(h) => icrc::compute_ipv6(&f, h, r.udp, body),
        };
        assert_eq!(direct, Ok(whole));
        r.verify_icrc().unwrap();
    }
}

#[test]
fn masked_fields_do_not_matter() {
    let mut roce = vec![0x11, 0, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 9, 0x1f, 0, 0, 9];
    roce.extend([0; 4]);
    let frame = make_frame(false, &roce);
    let ip = 14;
    let mut other = frame.clone();
    other[ip + 1] = 0xb8; // TOS
    other[ip + 8] = 1; // TTL
    other[ip + 10] = 0x55; // checksum
    other[ip + 26] ^= 0xff; // UDP checksum
    other[ip + 28 + 4] = 0xc0; // BTH FECN/BECN
    roce_of(&other).verify_icrc().unwrap();
    other[ip + 4] ^= 1; // IP identification is covered
    assert!(matches!(
        roce_of(&other).verify_icrc(),
        Err(IcrcError::Mismatch { .. })
    ));

    let frame6 = make_frame(true, &roce);
    let mut other = frame6.clone();
    other[ip] = 0x6f; // traffic class, high nibble
    other[ip + 1] = 0xab; // traffic class low nibble, flow label
    other[ip + 3] = 0;
    other[ip + 7] = 1; // hop limit
    other[ip + 46] ^= 0x5a; // UDP checksum
    roce_of(&other).verify_icrc().unwrap();
    other[ip + 8] ^= 1; // source address is covered
    assert!(roce_of(&other).verify_icrc().is_err());
}

#[test]
fn truncated_inputs() {
    let udp = [0u8; 8];
    let body = [0u8; 12];
    let crc = crc32_le;
    assert_eq!(
        icrc::compute(&crc, IpHdr::V4(&[0x45; 19]), &udp, &body),
        Err(IcrcError::Truncated)
    );
    assert_eq!(
        icrc::compute(&crc, IpHdr::V6(&[0x60; 39]), &udp, &body),
        Err(IcrcError::Truncated)
    );
    assert_eq!(
        icrc::compute(&crc, IpHdr::V4(&[0x45; 20]), &udp[..7], &body),
        Err(IcrcError::Truncated)
    );
    assert_eq!(
        icrc::compute(&crc, IpHdr::V4(&[0x45; 20]), &udp, &body[..11]),
        Err(IcrcError::Truncated)
    );
    assert_eq!(
        icrc::verify(&crc, IpHdr::V4(&[0x45; 20]), &udp, &[0; 15]),
        Err(IcrcError::Truncated)
    );
    assert_eq!(
        icrc::generate(&crc, IpHdr::V4(&[0x45; 20]), &udp, &mut [0; 3]),
        Err(IcrcError::Truncated)
    );
    // IPv4 options are covered unmasked.
    let ip = [0x46u8; 24];
    let a = icrc::compute(&crc, IpHdr::V4(&ip), &udp, &body).unwrap();
    let mut ip2 = ip;
    ip2[22] ^= 1;
    assert_ne!(
        a,
        icrc::compute(&crc, IpHdr::V4(&ip2), &udp, &body).unwrap()
    );
    assert_eq!(a, reference_icrc(IpHdr::V4(&ip), &udp, &body));
}
