// SPDX-License-Identifier: GPL-2.0

//! The receive path: datagrams of the RoCEv2 port, checked before anything acts on them.
//!
//! Every datagram is attributed to the rrxe device of the netdevice it arrived on, parsed by
//! the wire core, and its ICRC verified with the kernel's CRC-32 over the masked IP and UDP
//! headers, before the destination QP is looked up and handed the packet (still in softirq,
//! see [`crate::engine`]). Each outcome has a port counter
//! (`rdma statistic show link rrxe0/1`), and so do the transmit side's.

use crate::device::RrxeDev;
use crate::proto::{
    icrc::{self, IpHdr},
    ip::{self, MULTICAST_QPN},
    packet::{self, Packet},
    pma,
};
use crate::wire::kernel_crc32;
use crate::Rrxe;
use kernel::rdma::{
    device::{Device, StatDesc},
    net::{RxPacket, TunnelRx},
};
use kernel::sync::atomic::{ordering::Relaxed, Atomic};

/// The port counters (`rdma statistic show`), in the order of [`HW_STATS`]: first those of
/// `rdma_rxe`, with its names and meanings (in its order), then rrxe's own: what became of
/// received packets, and of transmissions, completions and work requests.
#[derive(Copy, Clone)]
#[repr(usize)]
pub(crate) enum PortCounter {
    /// Packets sent (requests and acknowledgments), first transmissions.
    SentPkts,
    /// Well-formed packets with a valid ICRC.
    Pkts,
    /// Requests with a PSN before the expected one (RC responder): answered again, never
    /// executed twice.
    DuplicateRequests,
    /// PSN sequence error NAKs sent (RC responder: a request after a gap, once per gap).
    OutOfSeqRequests,
    /// RNR NAKs received (requester).
    RcvdRnrNaks,
    /// RNR NAKs sent: a SEND arrived with no receive WQE posted.
    SentRnrNaks,
    /// PSN sequence error NAKs received (requester).
    RcvdSeqNaks,
    /// Send WQEs completed with `IB_WC_RETRY_EXC_ERR`.
    RetryExceeded,
    /// Send WQEs completed with `IB_WC_RNR_RETRY_EXC_ERR`.
    RnrRetryExceeded,
    /// Times the requester went back to its oldest unacknowledged packet (the local ACK
    /// timeout expired, or a PSN sequence error NAK came).
    CompleterRetries,
    /// Packets that could not be sent (no route, no memory, queue full): the peer sees
    /// loss.
    SendErrors,
    /// Times the port went down (its netdevice down or without carrier).
    LinkDowned,
    /// SEND work requests completed successfully.
    RdmaSends,
    /// Receive work requests completed successfully.
    RdmaRecvs,
    /// Bytes of the packets sent (IP packets).
    SentBytes,
    /// Bytes of the well-formed packets received, as IP datagrams (IP and UDP headers
    /// included, like `SentBytes` and like rdma_rxe: a packet counts the same at both ends).
    RcvdBytes,
    /// Packets whose ICRC did not match (dropped).
    IcrcErr,
    /// Packets the parser rejected: truncated, bad version, pad or length, unknown opcode.
    Malformed,
    /// Valid packets for a QP number that does not exist.
    UnknownQp,
    /// Valid packets an existing QP did not take: not from its peer, wrong state or
    /// partition, or an opcode it does not carry out.
    Dropped,
    /// Request packets sent again (go-back-N after a timeout or a NAK).
    Retransmits,
    /// Completions written to CQs.
    Completions,
    /// Completions lost because their CQ was full.
    CqOverflows,
    /// Work requests userspace posted that failed validation (completed in error).
    BadWqes,
    /// Times a QP found the transmit queue full and paused its responses (instead of
    /// dropping them).
    TxPaused,
    /// Responses (ACKs, atomic ACKs, READs) not queued because the responder's queue was
    /// full: a requester with more READs and atomics outstanding than it negotiated. Its
    /// retry asks again.
    RepliesDropped,
    /// Local operations (fast registration, local invalidation) that failed: the WQE
    /// completed with `IB_WC_LOC_QP_OP_ERR`.
    LocalOpErrors,
    /// SENDs with invalidate received whose rkey could not be invalidated (NAK invalid
    /// request).
    BadInvalidates,
    /// Datagrams sent to a multicast group (also counted in `SentPkts`).
    SentMcastPkts,
    /// Valid datagrams received for a multicast group (also counted in `Pkts`).
    RcvdMcastPkts,
    /// Times a responder's run used up its budget with responses still queued and left them
    /// to a later run (the pacing of large READs: bounded work per softirq run).
    ReplyYields,
    /// Accesses to on-demand paging memory that met a page not present (the data path
    /// answered as to a page fault and asked for the range to be faulted in).
    OdpPageFaults,
    /// Ranges of on-demand paging memory faulted in (in process context).
    OdpFaultsResolved,
    /// Faults that failed (the address no longer mapped, the process gone): the access
    /// that needs it fails when it is retried.
    OdpFaultErrors,
    /// Faults not queued because the device's fault queue was full (the retry asks again).
    OdpFaultsDropped,
}

const NUM_STATS: usize = 35;

/// The names of the port counters. `rdma_rxe`'s `ack_deferred` (its completer run from a
/// work item instead of inline) has no counterpart: rrxe's completer always runs inline.
pub(crate) static HW_STATS: [StatDesc; NUM_STATS] = [
    StatDesc::new(c"sent_pkts"),
    StatDesc::new(c"rcvd_pkts"),
    StatDesc::new(c"duplicate_request"),
    StatDesc::new(c"out_of_seq_request"),
    StatDesc::new(c"rcvd_rnr_err"),
    StatDesc::new(c"send_rnr_err"),
    StatDesc::new(c"rcvd_seq_err"),
    StatDesc::new(c"retry_exceeded_err"),
    StatDesc::new(c"retry_rnr_exceeded_err"),
    StatDesc::new(c"completer_retry_err"),
    StatDesc::new(c"send_err"),
    StatDesc::new(c"link_downed"),
    StatDesc::new(c"rdma_sends"),
    StatDesc::new(c"rdma_recvs"),
    StatDesc::new(c"sent_bytes"),
    StatDesc::new(c"rcvd_bytes"),
    StatDesc::new(c"rcvd_icrc_err"),
    StatDesc::new(c"rcvd_malformed"),
    StatDesc::new(c"rcvd_unknown_qp"),
    StatDesc::new(c"rcvd_dropped"),
    StatDesc::new(c"retransmits"),
    StatDesc::new(c"completions"),
    StatDesc::new(c"cq_overflows"),
    StatDesc::new(c"bad_wqes"),
    StatDesc::new(c"tx_paused"),
    StatDesc::new(c"replies_dropped"),
    StatDesc::new(c"local_op_errors"),
    StatDesc::new(c"rcvd_bad_invalidate"),
    StatDesc::new(c"sent_mcast_pkts"),
    StatDesc::new(c"rcvd_mcast_pkts"),
    StatDesc::new(c"reply_yields"),
    StatDesc::new(c"odp_page_faults"),
    StatDesc::new(c"odp_faults_resolved"),
    StatDesc::new(c"odp_fault_errors"),
    StatDesc::new(c"odp_faults_dropped"),
];

/// The port counters of a device.
pub(crate) struct Stats([Atomic<u64>; NUM_STATS]);

impl Stats {
    pub(crate) fn new() -> Self {
        Self([const { Atomic::new(0) }; NUM_STATS])
    }

    pub(crate) fn inc(&self, s: PortCounter) {
        self.add(s, 1);
    }

    pub(crate) fn add(&self, s: PortCounter, n: u64) {
        if let Some(c) = self.0.get(s as usize) {
            c.add(n, Relaxed);
        }
    }

    pub(crate) fn get(&self, s: PortCounter) -> u64 {
        self.0.get(s as usize).map_or(0, |c| c.load(Relaxed))
    }

    /// The counters the port's Performance Management agent reports.
    pub(crate) fn pma(&self) -> pma::PortCounters {
        use PortCounter as C;
        pma::PortCounters {
            link_downed: self.get(C::LinkDowned),
            rcv_errors: self.get(C::IcrcErr).saturating_add(self.get(C::Malformed)),
            xmit_bytes: self.get(C::SentBytes),
            rcv_bytes: self.get(C::RcvdBytes),
            xmit_packets: self.get(C::SentPkts),
            rcv_packets: self.get(C::Pkts),
            mcast_xmit_packets: self.get(C::SentMcastPkts),
            mcast_rcv_packets: self.get(C::RcvdMcastPkts),
        }
    }

    pub(crate) fn read(&self, out: &mut [u64]) {
        for (o, c) in out.iter_mut().zip(self.0.iter()) {
            *o = c.load(Relaxed);
        }
    }
}

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
