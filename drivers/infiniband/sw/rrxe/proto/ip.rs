// SPDX-License-Identifier: GPL-2.0

//! The IP and UDP headers of outgoing RoCEv2 packets.
//!
//! rrxe writes these headers itself because the ICRC covers them: the IPv4 identification,
//! addresses and lengths (and the IPv6 addresses and payload length) must be final before the
//! ICRC is computed. The IP layer's local output fills in nothing that the ICRC covers: it
//! writes the IPv4 total length (the value written here) and header checksum (masked).
//!
//! The fields follow the C driver (`prepare_ipv4_hdr()`, `prepare_ipv6_hdr()`,
//! `prepare_udp_hdr()`): IPv4 with Don't Fragment and no options, the UDP checksum zero (the
//! ICRC protects the payload), and the UDP source port derived from the QP number.

use super::icrc::{IpHdr, UDP_LEN};
use super::BufferTooSmall;

/// Length of an IPv4 header without options.
pub const IPV4_LEN: usize = 20;

/// Length of an IPv6 header.
pub const IPV6_LEN: usize = 40;

/// IP protocol number of UDP.
const IPPROTO_UDP: u8 = 17;

/// The addressing of an outgoing packet (from the QP's address vector).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IpParams {
    /// Source and destination addresses: IPv4 when both are IPv4-mapped GIDs.
    pub src: [u8; 16],
    /// Destination address.
    pub dst: [u8; 16],
    /// Traffic class (IPv6) or TOS (IPv4).
    pub traffic_class: u8,
    /// Hop limit (IPv6) or TTL (IPv4).
    pub hop_limit: u8,
    /// IPv6 flow label (20 bits).
    pub flow_label: u32,
    /// UDP source port.
    pub sport: u16,
}

/// Returns `true` if `gid` is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
pub fn is_v4_mapped(gid: &[u8; 16]) -> bool {
    matches!(gid, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ..])
}

/// Returns the IPv4 address of an IPv4-mapped GID.
pub fn v4_of(gid: &[u8; 16]) -> [u8; 4] {
    let [.., a, b, c, d] = *gid;
    [a, b, c, d]
}

impl IpParams {
    /// Returns `true` if the packet goes out as IPv4.
    pub fn is_ipv4(&self) -> bool {
        is_v4_mapped(&self.dst)
    }

    /// Returns the length of the IP header.
    pub fn ip_len(&self) -> usize {
        if self.is_ipv4() {
            IPV4_LEN
        } else {
            IPV6_LEN
        }
    }

    /// Writes the IP and UDP headers of a datagram whose UDP payload (BTH to ICRC) is
    /// `payload_len` bytes into the start of `out`; `id` is the IPv4 identification.
    /// Returns the length of the two headers.
    pub fn write(
        &self,
        out: &mut [u8],
        payload_len: usize,
        id: u16,
    ) -> Result<usize, BufferTooSmall> {
        let udp_len = payload_len.checked_add(UDP_LEN).ok_or(BufferTooSmall)?;
        let udp_len16 = u16::try_from(udp_len).map_err(|_| BufferTooSmall)?;
        let ip_len = self.ip_len();
        let (ip, rest) = out.split_at_mut_checked(ip_len).ok_or(BufferTooSmall)?;
        if self.is_ipv4() {
            let total = u16::try_from(udp_len.checked_add(IPV4_LEN).ok_or(BufferTooSmall)?)
                .map_err(|_| BufferTooSmall)?;
            let [t0, t1] = total.to_be_bytes();
            let [i0, i1] = id.to_be_bytes();
            let [s0, s1, s2, s3] = v4_of(&self.src);
            let [d0, d1, d2, d3] = v4_of(&self.dst);
            let mut h = [
                0x45,
                self.traffic_class,
                t0,
                t1,
                i0,
                i1,
                0x40, // Don't Fragment.
                0,
                self.hop_limit,
                IPPROTO_UDP,
                0,
                0,
                s0,
                s1,
                s2,
                s3,
                d0,
                d1,
                d2,
                d3,
            ];
            let [c0, c1] = ipv4_checksum(&h).to_be_bytes();
            let [.., x, y, _, _, _, _, _, _, _, _] = &mut h;
            *x = c0;
            *y = c1;
            ip.copy_from_slice(&h);
        } else {
            let word = 0x6000_0000u32
                | u32::from(self.traffic_class).wrapping_shl(20)
                | (self.flow_label & 0xf_ffff);
            let mut h = [0u8; IPV6_LEN];
            let (first, addrs) = h.split_at_mut(8);
            let [w0, w1, w2, w3] = word.to_be_bytes();
            let [l0, l1] = udp_len16.to_be_bytes();
            first.copy_from_slice(&[w0, w1, w2, w3, l0, l1, IPPROTO_UDP, self.hop_limit]);
            let (src, dst) = addrs.split_at_mut(16);
            src.copy_from_slice(&self.src);
            dst.copy_from_slice(&self.dst);
            ip.copy_from_slice(&h);
        }
        let [s0, s1] = self.sport.to_be_bytes();
        let [p0, p1] = super::ROCE_V2_PORT.to_be_bytes();
        let [l0, l1] = udp_len16.to_be_bytes();
        rest.get_mut(..UDP_LEN)
            .ok_or(BufferTooSmall)?
            .copy_from_slice(&[s0, s1, p0, p1, l0, l1, 0, 0]);
        ip_len.checked_add(UDP_LEN).ok_or(BufferTooSmall)
    }
}

/// Returns the IPv4 header checksum of `h` (whose checksum field is zero).
fn ipv4_checksum(h: &[u8; IPV4_LEN]) -> u16 {
    let sum = h
        .chunks_exact(2)
        .filter_map(|w| w.first_chunk::<2>())
        .map(|w| u32::from(u16::from_be_bytes(*w)))
        .fold(0u32, u32::wrapping_add);
    let folded = (sum & 0xffff).wrapping_add(sum.wrapping_shr(16));
    let folded = (folded & 0xffff).wrapping_add(folded.wrapping_shr(16));
    // At most 17 bits were folded into 16.
    !(folded as u16)
}

/// Returns the UDP source port of a QP's packets, as the C driver picks it:
/// `0xc000 + hash_32(qpn, 14)`.
pub fn udp_sport(qpn: u32) -> u16 {
    let hash = qpn.wrapping_mul(0x61c8_8647).wrapping_shr(18);
    // `hash` has 14 bits.
    0xc000 | (hash as u16)
}

/// The destination QP number of a multicast packet (IBA 10.5.2.2: the permissive QPN).
pub const MULTICAST_QPN: u32 = 0xff_ffff;

/// Returns `true` if `gid` is a multicast address: IPv6 `ff00::/8`, or IPv4 `224.0.0.0/4`
/// mapped into IPv6 (as `rdma_is_multicast_addr()`).
pub fn is_multicast(gid: &[u8; 16]) -> bool {
    if is_v4_mapped(gid) {
        v4_of(gid)[0] & 0xf0 == 0xe0
    } else {
        gid[0] == 0xff
    }
}

/// Returns the Ethernet address frames to the multicast group `gid` go to: `01:00:5e` and
/// the low 23 bits of an IPv4 group (`ip_eth_mc_map()`), `33:33` and the low 32 bits of an
/// IPv6 one (`ipv6_eth_mc_map()`); `None` if `gid` is not a multicast address.
pub fn multicast_mac(gid: &[u8; 16]) -> Option<[u8; 6]> {
    if !is_multicast(gid) {
        return None;
    }
    Some(if is_v4_mapped(gid) {
        let [_, b, c, d] = v4_of(gid);
        [0x01, 0x00, 0x5e, b & 0x7f, c, d]
    } else {
        [0x33, 0x33, gid[12], gid[13], gid[14], gid[15]]
    })
}

/// Returns the destination address of an IP header as a GID (an IPv4 one mapped into IPv6).
pub fn dest_gid(ip: &IpHdr<'_>) -> [u8; 16] {
    let mut gid = [0u8; 16];
    match ip {
        IpHdr::V4(h) => {
            if let Some(&[a, b, c, d]) = h.get(16..20) {
                gid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d];
            }
        }
        IpHdr::V6(h) => {
            if let Some(dst) = h.get(24..40) {
                gid.copy_from_slice(dst);
            }
        }
    }
    gid
}
