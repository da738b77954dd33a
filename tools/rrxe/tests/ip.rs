// SPDX-License-Identifier: GPL-2.0
//! The IP and UDP headers of outgoing packets (`proto/ip.rs`).

use rrxe_proto::ip::{udp_sport, IpParams};
use rrxe_proto::{crc32::crc32_le, icrc, packet, BufferTooSmall};

/// The IPv4 header checksum: the ones' complement of the ones' complement sum.
fn ipv4_checksum(h: &[u8; 20]) -> u16 {
    let mut sum = h
        .chunks_exact(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn v4(a: [u8; 4]) -> [u8; 16] {
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12..].copy_from_slice(&a);
    g
}

#[test]
fn ipv4_header_checksums_to_zero_and_icrc_verifies() {
    let p = IpParams {
        src: v4([192, 0, 2, 1]),
        dst: v4([192, 0, 2, 2]),
        hop_limit: 64,
        sport: udp_sport(17),
        ..IpParams::default()
    };
    let body = [0u8; 16];
    let mut out = [0u8; 64];
    let n = p.write(&mut out, body.len(), 7).unwrap();
    assert_eq!(n, 28);
    let hdr: &[u8; 20] = out[..20].try_into().unwrap();
    let mut z = *hdr;
    z[10] = 0;
    z[11] = 0;
    assert_eq!(ipv4_checksum(&z), u16::from_be_bytes([hdr[10], hdr[11]]));
    assert_eq!(&out[2..4], &44u16.to_be_bytes());
    assert_eq!(&out[22..24], &4791u16.to_be_bytes());
    assert_eq!(&out[24..26], &24u16.to_be_bytes());
    assert!(udp_sport(17) >= 0xc000);
    // A packet built on these headers verifies.
    let spec = packet::PacketSpec {
        bth: rrxe_proto::bth::BthFields {
            opcode: rrxe_proto::opcode::Opcode::RC_SEND_ONLY,
            pkey: 0xffff,
            ..Default::default()
        },
        ..Default::default()
    };
    let mut pkt = [0u8; 64];
    let len = packet::build(&spec, &mut pkt[28..]).unwrap();
    pkt[..28].copy_from_slice(&out[..28]);
    let (ip, rest) = pkt.split_at_mut(20);
    let (udp, payload) = rest.split_at_mut(8);
    icrc::generate(&crc32_le, icrc::IpHdr::V4(ip), udp, &mut payload[..len]).unwrap();
    icrc::verify(&crc32_le, icrc::IpHdr::V4(ip), udp, &payload[..len]).unwrap();
}

#[test]
fn ipv6_header_fields() {
    let mut src = [0u8; 16];
    src[0] = 0xfe;
    src[1] = 0x80;
    src[15] = 1;
    let mut dst = src;
    dst[15] = 2;
    let p = IpParams {
        src,
        dst,
        traffic_class: 0xa0,
        flow_label: 0x12345,
        hop_limit: 1,
        sport: 0xc123,
    };
    assert!(!p.is_ipv4());
    let mut out = [0u8; 48];
    assert_eq!(p.write(&mut out, 100, 0), Ok(48));
    assert_eq!(&out[..4], &[0x6a, 0x01, 0x23, 0x45]);
    assert_eq!(&out[4..6], &108u16.to_be_bytes());
    assert_eq!(out[6], 17);
    assert_eq!(out[7], 1);
    assert_eq!(&out[8..24], &src);
    assert_eq!(&out[24..40], &dst);
    assert_eq!(p.write(&mut out[..47], 100, 0), Err(BufferTooSmall));
}

#[test]
fn build_headers_leaves_the_payload_and_matches_build() {
    let payload = [0xabu8; 13];
    let spec = packet::PacketSpec {
        bth: rrxe_proto::bth::BthFields {
            opcode: rrxe_proto::opcode::Opcode::RC_SEND_ONLY_WITH_IMMEDIATE,
            pkey: 0xffff,
            ..Default::default()
        },
        immdt: Some(rrxe_proto::ext::ImmDtFields { imm: 5 }),
        payload: &payload,
        ..Default::default()
    };
    let mut a = [0u8; 64];
    let n = packet::build(&spec, &mut a).unwrap();
    let mut b = [0x55u8; 64];
    let l = packet::build_headers(&spec, payload.len(), &mut b).unwrap();
    assert_eq!(l.len, n);
    assert_eq!(Some(n), packet::packet_len(spec.bth.opcode, payload.len()));
    b[l.payload.clone()].copy_from_slice(&payload);
    assert_eq!(&a[..n], &b[..n]);
}

#[test]
fn multicast_groups_map_to_their_ethernet_addresses() {
    use rrxe_proto::ip::{is_multicast, multicast_mac, MULTICAST_QPN};
    let v4 = |a: u8, b: u8, c: u8, d: u8| [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d];
    // IPv4 224.0.0.0/4, the low 23 bits (the top bit of the second byte dropped).
    assert_eq!(
        multicast_mac(&v4(239, 129, 2, 3)),
        Some([0x01, 0x00, 0x5e, 0x01, 2, 3])
    );
    assert_eq!(
        multicast_mac(&v4(224, 0, 0, 251)),
        Some([0x01, 0x00, 0x5e, 0, 0, 251])
    );
    // IPv6 ff00::/8, the low 32 bits.
    let mut v6 = [0u8; 16];
    v6[0] = 0xff;
    v6[1] = 0x0e;
    v6[12..].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(
        multicast_mac(&v6),
        Some([0x33, 0x33, 0xde, 0xad, 0xbe, 0xef])
    );
    // Unicast: none.
    assert!(!is_multicast(&v4(192, 0, 2, 1)) && multicast_mac(&v4(192, 0, 2, 1)).is_none());
    assert!(!is_multicast(&v4(240, 0, 0, 1)));
    let mut ll = [0u8; 16];
    ll[0] = 0xfe;
    ll[1] = 0x80;
    assert!(multicast_mac(&ll).is_none());
    assert_eq!(MULTICAST_QPN, 0xff_ffff);
}

#[test]
fn destination_gid_of_ipv4_and_ipv6_headers() {
    use rrxe_proto::icrc::IpHdr;
    use rrxe_proto::ip::dest_gid;
    let mut v4 = [0u8; 20];
    v4[0] = 0x45;
    v4[16..20].copy_from_slice(&[239, 1, 2, 3]);
    assert_eq!(
        dest_gid(&IpHdr::V4(&v4)),
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 1, 2, 3]
    );
    let mut v6 = [0u8; 40];
    v6[0] = 0x60;
    v6[24] = 0xff;
    v6[39] = 7;
    let g = dest_gid(&IpHdr::V6(&v6));
    assert_eq!((g[0], g[15]), (0xff, 7));
    // A truncated header names no address.
    assert_eq!(dest_gid(&IpHdr::V4(&v4[..10])), [0; 16]);
}
