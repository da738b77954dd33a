// SPDX-License-Identifier: GPL-2.0

//! The receive path: datagrams of the RoCEv2 port, checked before anything acts on them.
//!
//! Every datagram is attributed to the rrxe device of the netdevice it arrived on, parsed by
//! the wire core, and its ICRC verified with the kernel's CRC-32 over the masked IP and UDP
//! headers, before the destination QP is looked up and handed the packet (still in softirq,
//! see [`crate::engine`]). Each outcome has a port counter ([`crate::counters`]).

use crate::counters::PortCounter;
use crate::crc::kernel_crc32;
use crate::device::RrxeDev;
use crate::proto::{
    icrc::{self, IpHdr},
    ip::{self, MULTICAST_QPN},
    packet::{self, Packet},
};
use crate::Rrxe;
use kernel::rdma::{
    device::Device,
    net::{RxPacket, TunnelRx},
};

/// Returns the IP source address of a checked header as a GID (IPv4-mapped for IPv4).
fn source_gid(ip: &IpHdr<'_>) -> [u8; 16] {
    let mut gid = [0u8; 16];
    match ip {
        IpHdr::V4(h) => {
            if let Some(&[a, b, c, d]) = h.get(12..16) {
                gid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d];
            }
        }
        IpHdr::V6(h) => {
            if let Some(src) = h.get(8..24) {
                gid.copy_from_slice(src);
            }
        }
    }
    gid
}

/// Why a received datagram was dropped before any QP saw it.
#[derive(Clone, Copy, Debug)]
enum RxDrop {
    /// No IP and UDP headers could be found (or the buffer not made linear).
    Headers,
    /// The UDP length does not fit the datagram.
    UdpLength,
    /// Neither IPv4 nor IPv6.
    IpVersion,
    /// The InfiniBand headers are malformed.
    Ib(
        #[allow(dead_code, reason = "read through `Debug`, by the debug message")]
        packet::ParseError,
    ),
    /// The ICRC does not match.
    Icrc,
}

impl RxDrop {
    /// The counter the drop is counted in.
    fn counter(self) -> PortCounter {
        match self {
            Self::Icrc => PortCounter::IcrcErr,
            _ => PortCounter::Malformed,
        }
    }
}

/// What a received datagram is, once checked: the parsed packet, its IP header and the
/// length of the IP datagram (IP header with options, UDP header and payload: what the
/// sender counted in `sent_bytes`, as rdma_rxe counts both).
fn classify<'a>(
    ip: &'a [u8],
    udp: &'a [u8],
) -> core::result::Result<(Packet<'a>, IpHdr<'a>, usize), RxDrop> {
    let (udp_hdr, rest) = udp.split_at_checked(8).ok_or(RxDrop::UdpLength)?;
    // The UDP length bounds the payload (link-layer padding is not part of it).
    let len_bytes = udp_hdr
        .get(4..)
        .and_then(|b| b.first_chunk::<2>())
        .ok_or(RxDrop::UdpLength)?;
    let udp_len = usize::from(u16::from_be_bytes(*len_bytes));
    let payload = rest
        .get(..udp_len.checked_sub(8).ok_or(RxDrop::UdpLength)?)
        .ok_or(RxDrop::UdpLength)?;
    let pkt = packet::parse(payload).map_err(RxDrop::Ib)?;
    let datagram_len = ip.len().saturating_add(udp_len);
    let ip = match ip.first().map(|b| b >> 4) {
        Some(4) => IpHdr::V4(ip),
        Some(6) => IpHdr::V6(ip),
        _ => return Err(RxDrop::IpVersion),
    };
    icrc::verify(&kernel_crc32, ip, udp_hdr, payload).map_err(|_| RxDrop::Icrc)?;
    Ok((pkt, ip, datagram_len))
}

/// Delivers a multicast datagram to each QP attached to its destination group (each takes
/// it as a datagram of its own; at most `MAX_QP_ATTACH` of them, so the work is bounded).
/// Counted as dropped if none took it, as an unknown QP if the group has no members here.
fn deliver_multicast(dev: &RrxeDev, p: &Packet<'_>, ip: &IpHdr<'_>, vlan: Option<u16>) -> bool {
    let stats = &dev.shared.stats;
    let Some(members) = dev.mcast_members(&ip::dest_gid(ip)) else {
        stats.inc(PortCounter::UnknownQp);
        return false;
    };
    let src = source_gid(ip);
    let mut taken = false;
    for &qpn in members.qpns() {
        if let Some(qp) = dev.qp(qpn) {
            taken |= qp.receive(p, ip, &src, vlan);
        }
    }
    if !taken {
        stats.inc(PortCounter::Dropped);
    }
    taken
}

impl TunnelRx for Rrxe {
    fn receive(mut pkt: RxPacket) {
        // Datagrams that do not belong to an rrxe device are dropped (by `pkt`'s drop). One
        // that came on a VLAN device belongs to the device on its real device.
        let Some((dev, vlan)) = pkt.netdev().and_then(|ndev| {
            let dev = Device::<Rrxe>::get_by_netdev(ndev)
                .or_else(|| ndev.vlan_real_dev().and_then(Device::<Rrxe>::get_by_netdev))?;
            Some((dev, ndev.vlan_id()))
        }) else {
            return;
        };
        let shared = &dev.data().shared;
        let stats = &shared.stats;
        let classified = match pkt.linearize() {
            Ok(()) => pkt
                .headers()
                .ok_or(RxDrop::Headers)
                .and_then(|(ip, udp)| classify(ip, udp)),
            Err(_) => Err(RxDrop::Headers),
        };
        let taken = match classified {
            Ok((p, ip, len)) => {
                stats.inc(PortCounter::Pkts);
                stats.add(PortCounter::RcvdBytes, u64::try_from(len).unwrap_or(0));
                let dest = p.bth.dest_qp().get();
                if dest == MULTICAST_QPN {
                    stats.inc(PortCounter::RcvdMcastPkts);
                    deliver_multicast(dev.data(), &p, &ip, vlan)
                } else {
                    match dev.data().qp(dest) {
                        Some(qp) if qp.receive(&p, &ip, &source_gid(&ip), vlan) => true,
                        Some(_) => {
                            stats.inc(PortCounter::Dropped);
                            dev_dbg!(
                                shared,
                                "qp {:#x} did not take a packet (opcode {:#x}, PSN {:#x})\n",
                                dest,
                                p.opcode().0,
                                p.bth.psn().get()
                            );
                            false
                        }
                        None => {
                            stats.inc(PortCounter::UnknownQp);
                            dev_dbg!(shared, "packet for qp {:#x}, which does not exist\n", dest);
                            false
                        }
                    }
                }
            }
            Err(d) => {
                stats.inc(d.counter());
                dev_dbg!(shared, "datagram dropped: {:?}\n", d);
                false
            }
        };
        if taken {
            pkt.consume();
        }
    }
}
