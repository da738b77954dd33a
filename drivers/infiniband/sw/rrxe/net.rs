// SPDX-License-Identifier: GPL-2.0

//! The receive path: datagrams of the RoCEv2 port, checked before anything acts on them.
//!
//! Every datagram is attributed to the rrxe device of the netdevice it arrived on, parsed by
//! the wire core, and its ICRC verified with the kernel's CRC-32 over the masked IP and UDP
//! headers, before the destination QP is looked up. Each outcome has a port counter
//! (`rdma statistic show link rrxe0/1`). The RC engine is not wired to QPs yet: packets for
//! an existing QP are counted as `rcvd_unhandled` and dropped, which the peer's transport
//! treats as loss.

use crate::proto::{
    icrc::{self, IpHdr},
    packet,
};
use crate::wire::kernel_crc32;
use crate::Rrxe;
use kernel::rdma::{
    device::{Device, StatDesc},
    net::{RxPacket, TunnelRx},
};
use kernel::sync::atomic::{ordering::Relaxed, Atomic};

/// Receive outcomes, each a port counter, in the order of [`HW_STATS`].
#[derive(Copy, Clone)]
#[repr(usize)]
pub(crate) enum Rcvd {
    /// Well-formed packets with a valid ICRC.
    Pkts,
    /// Packets whose ICRC did not match (dropped).
    IcrcErr,
    /// Packets the parser rejected: truncated, bad version, pad or length, unknown opcode.
    Malformed,
    /// Valid packets for a QP number that does not exist.
    UnknownQp,
    /// Valid packets for an existing QP that the device does not process yet.
    Unhandled,
}

const NUM_STATS: usize = 5;

/// The names of the port counters.
pub(crate) static HW_STATS: [StatDesc; NUM_STATS] = [
    StatDesc::new(c"rcvd_pkts"),
    StatDesc::new(c"rcvd_icrc_err"),
    StatDesc::new(c"rcvd_malformed"),
    StatDesc::new(c"rcvd_unknown_qp"),
    StatDesc::new(c"rcvd_unhandled"),
];

/// The port counters of a device.
pub(crate) struct Stats([Atomic<u64>; NUM_STATS]);

impl Stats {
    pub(crate) fn new() -> Self {
        Self([const { Atomic::new(0) }; NUM_STATS])
    }

    pub(crate) fn inc(&self, s: Rcvd) {
        if let Some(c) = self.0.get(s as usize) {
            c.add(1u64, Relaxed);
        }
    }

    pub(crate) fn read(&self, out: &mut [u64]) {
        for (o, c) in out.iter_mut().zip(self.0.iter()) {
            *o = c.load(Relaxed);
        }
    }
}

/// What a received datagram is, once checked.
fn classify(ip: &[u8], udp: &[u8]) -> core::result::Result<u32, Rcvd> {
    let (udp_hdr, rest) = udp.split_at_checked(8).ok_or(Rcvd::Malformed)?;
    // The UDP length bounds the payload (link-layer padding is not part of it).
    let udp_len = usize::from(u16::from_be_bytes([udp_hdr[4], udp_hdr[5]]));
    let payload = rest
        .get(..udp_len.checked_sub(8).ok_or(Rcvd::Malformed)?)
        .ok_or(Rcvd::Malformed)?;
    let pkt = packet::parse(payload).map_err(|_| Rcvd::Malformed)?;
    let ip = match ip.first().map(|b| b >> 4) {
        Some(4) => IpHdr::V4(ip),
        Some(6) => IpHdr::V6(ip),
        _ => return Err(Rcvd::Malformed),
    };
    icrc::verify(&kernel_crc32, ip, udp_hdr, payload).map_err(|_| Rcvd::IcrcErr)?;
    Ok(pkt.bth.dest_qp().get())
}

impl TunnelRx for Rrxe {
    fn receive(mut pkt: RxPacket) {
        // Datagrams that do not belong to an rrxe device are dropped (by `pkt`'s drop).
        let Some(dev) = pkt.netdev().and_then(Device::<Rrxe>::get_by_netdev) else {
            return;
        };
        let data = dev.data();
        if pkt.linearize().is_err() {
            data.stats.inc(Rcvd::Malformed);
            return;
        }
        let verdict = pkt
            .headers()
            .ok_or(Rcvd::Malformed)
            .and_then(|(ip, udp)| classify(ip, udp));
        match verdict {
            Ok(qpn) => {
                data.stats.inc(Rcvd::Pkts);
                data.stats.inc(if data.qp_exists(qpn) {
                    Rcvd::Unhandled
                } else {
                    Rcvd::UnknownQp
                });
            }
            Err(s) => data.stats.inc(s),
        }
    }
}
