// SPDX-License-Identifier: GPL-2.0

//! The kernel's CRC-32 for the wire core ([`crate::proto`]): the ICRC of every packet.
//!
//! The wire core is generic over the CRC-32 implementation; in the module the ICRC uses the
//! kernel's `crc32_le`, which KUnit cross-checks here against the wire core's own table
//! implementation (the one the host tests and the capture decoder use).

#[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
use kernel::prelude::*;

/// The kernel's `crc32_le`, as the wire core's [`crate::proto::icrc::Crc32`].
pub(crate) fn kernel_crc32(seed: u32, data: &[u8]) -> u32 {
    kernel::rdma::crc32_le(seed, data)
}

#[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
#[kunit_tests(rrxe_wire)]
mod tests {
    // Frames are built and cut at fixed offsets; a test that slices wrongly fails loudly.
    #![allow(clippy::indexing_slicing, clippy::panic)]

    use super::kernel_crc32;
    use crate::proto::{
        crc32,
        icrc::{self, IpHdr},
        opcode::{info, Opcode},
        packet::{self, ParseError},
        target::{select, Access, Addressing, Dir, Side},
    };
    use kernel::prelude::*;

    /// A UC SEND ONLY frame from an independent implementation (scapy's RoCE layer):
    /// Ethernet, IPv4 (with ECN bits set, which the ICRC masks), UDP 4791, BTH, payload, ICRC.
    const SCAPY_UC_SEND: [u8; 78] = [
        0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22, 0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22, 0x08, 0x00, 0x45,
        0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11, 0xb4, 0xd5, 0xc0, 0xa8, 0x00, 0x07,
        0xc0, 0xa8, 0x00, 0x07, 0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c, 0xac, 0xa2, 0x24, 0x60, 0xff,
        0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10, 0x46, 0x30, 0x81, 0x8b, 0xe2, 0x89,
        0x35, 0xd9, 0x0e, 0x9a, 0x95, 0x50, 0x54, 0x01, 0xbe, 0x88, 0x5e, 0x50, 0x00, 0x00, 0x78,
        0xf3, 0x53, 0xf3,
    ];
    const IP: core::ops::Range<usize> = 14..34;
    const UDP: core::ops::Range<usize> = 34..42;

    /// Deterministic pseudo-random bytes (xorshift32).
    fn fill(buf: &mut [u8], mut x: u32) {
        for b in buf {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *b = x.to_le_bytes()[0];
        }
    }

    #[test]
    fn kernel_crc32_matches_wire_core() {
        let mut buf = [0u8; 600];
        fill(&mut buf, 0x1234_5678);
        for len in [
            0usize, 1, 3, 4, 7, 8, 15, 16, 63, 64, 65, 255, 256, 599, 600,
        ] {
            for seed in [0u32, !0, 0xdebb_20e3] {
                assert_eq!(
                    kernel_crc32(seed, &buf[..len]),
                    crc32::crc32_le(seed, &buf[..len])
                );
            }
        }
    }

    #[test]
    fn icrc_of_independent_vector_verifies() {
        let f = &SCAPY_UC_SEND;
        let ip = IpHdr::V4(&f[IP]);
        assert!(icrc::verify(&kernel_crc32, ip, &f[UDP], &f[42..]).is_ok());
        assert!(icrc::verify(&crc32::crc32_le, ip, &f[UDP], &f[42..]).is_ok());
    }

    #[test]
    fn icrc_detects_every_single_bit_flip_of_the_invariant_part() {
        let mut f = SCAPY_UC_SEND;
        // Every bit of BTH, payload and ICRC; the masked BTH byte 4 (FECN/BECN) is exempt.
        for byte in 42..f.len() {
            if byte == 42 + 4 {
                continue;
            }
            for bit in 0..8 {
                f[byte] ^= 1 << bit;
                let (ip, udp, body) = (IpHdr::V4(&f[IP]), &f[UDP], &f[42..]);
                assert!(icrc::verify(&kernel_crc32, ip, udp, body).is_err());
                f[byte] ^= 1 << bit;
            }
        }
        // Variant fields are masked: TTL, ECN and the checksums do not change the ICRC.
        f[22] = 1;
        f[15] = 0xfe;
        f[40] = 0x12;
        assert!(icrc::verify(&kernel_crc32, IpHdr::V4(&f[IP]), &f[UDP], &f[42..]).is_ok());
    }

    #[test]
    fn truncated_packets_are_rejected() {
        let f = &SCAPY_UC_SEND;
        let (ip, udp, body) = (IpHdr::V4(&f[IP]), &f[UDP], &f[42..]);
        assert!(packet::parse(body).is_ok());
        // A cut inside the headers is a parse error; a cut that keeps a 4-byte aligned
        // payload looks well formed and only the ICRC catches it.
        for len in 0..body.len() {
            let cut = &body[..len];
            assert!(
                packet::parse(cut).is_err() || icrc::verify(&kernel_crc32, ip, udp, cut).is_err()
            );
        }
        assert_eq!(
            packet::parse(&body[..11]).err(),
            Some(ParseError::Truncated)
        );
    }

    #[test]
    fn random_input_never_panics() {
        let mut buf = [0u8; 96];
        let mut accepted = 0u32;
        for i in 0..20_000u32 {
            fill(&mut buf, i.wrapping_mul(2_654_435_761) | 1);
            // Valid transport version and a known opcode half of the time, to get past the BTH.
            if i % 2 == 0 {
                buf[1] &= 0xf0;
                buf[0] = (i % 0x1e) as u8;
            }
            let len = (i as usize) % buf.len();
            if packet::parse(&buf[..len]).is_ok() {
                accepted += 1;
            }
        }
        // Some random packets are well formed; most are not.
        assert!(accepted > 0 && accepted < 20_000);
    }

    #[test]
    fn target_selection_names_the_right_key() -> Result {
        let read = info(Opcode::RC_RDMA_READ_REQUEST).ok_or(EINVAL)?;
        let t = select(read, Side::Responder, Dir::Gather).ok_or(EINVAL)?;
        // The READ responder gathers, yet the address is wire-named (RETH, rkey).
        assert_eq!(t.addressing, Addressing::Wire);
        assert_eq!(t.access, Access::RemoteRead);
        let resp = info(Opcode::RC_RDMA_READ_RESPONSE_ONLY).ok_or(EINVAL)?;
        let t = select(resp, Side::Requester, Dir::Scatter).ok_or(EINVAL)?;
        assert_eq!(t.addressing, Addressing::Software);
        assert_eq!(t.access, Access::LocalWrite);
        let send = info(Opcode::RC_SEND_ONLY).ok_or(EINVAL)?;
        assert!(select(send, Side::Responder, Dir::Gather).is_none());
        let cas = info(Opcode::RC_COMPARE_SWAP).ok_or(EINVAL)?;
        let t = select(cas, Side::Responder, Dir::Scatter).ok_or(EINVAL)?;
        assert_eq!(
            (t.addressing, t.access),
            (Addressing::Wire, Access::RemoteAtomic)
        );
        Ok(())
    }
}
