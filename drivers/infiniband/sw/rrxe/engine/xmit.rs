// SPDX-License-Identifier: GPL-2.0

//! Transmission: a packet built in place in a socket buffer (IP and UDP headers, the IBA
//! headers of a [`PacketSpec`], the payload written by the caller, the ICRC) and sent on the
//! route to its destination, or handed to the device's loopback when the destination is a
//! QP of this device.
//!
//! Every packet rrxe sends goes through [`QpShared::xmit`], under the engine lock; the
//! counters say what became of it ([`PortCounter::SentPkts`], [`PortCounter::Retransmits`],
//! [`PortCounter::SendErrors`]: a packet that cannot be sent is lost, as on a wire, and the
//! transport recovers it).

use super::{Engine, QpShared};
use crate::counters::PortCounter;
use crate::crc::kernel_crc32;
use crate::proto::{
    bth::Qpn,
    cc,
    icrc::{self, IpHdr, UDP_LEN},
    ip::{self, IpParams},
    opcode::QpType as WireQpType,
    packet::{self, PacketSpec},
};
use kernel::prelude::*;
use kernel::rdma::{
    net::{Route, TxBuf},
    netdev::NetDevice,
};

/// The partition key of every packet: the default partition, full member.
pub(super) const PKEY: u16 = 0xffff;

/// Where a QP's packets go: their IP addressing, and the interface they leave through,
/// that of the source GID's netdevice: the device's own netdevice, or a VLAN device on it
/// (RoCE over a VLAN, as the GID table lists it).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Path {
    /// The IP addressing of the packets.
    pub(super) ip: IpParams,
    /// Interface index of the source GID's netdevice (in the device's namespace); 0 or
    /// the device's netdevice's own for the device's netdevice.
    pub(super) oif: i32,
}

/// The route of a QP's last packet, kept while the packets take the same path and the
/// route stays current ([`Route::is_current`]), as rdma_rxe keeps an RC QP's in its socket:
/// looking it up for every packet would walk the routing tables every time. A change of the
/// routing tables, of an address or of the output device (going down, being deleted) makes
/// the kept route obsolete, and the next packet looks it up again.
#[derive(Default)]
pub(super) struct RouteCache(Option<(Path, Route)>);

impl RouteCache {
    /// Returns the route of `path`, from a device on `ndev` (in its namespace).
    fn get(&mut self, ndev: &NetDevice, path: &Path) -> Result<&Route> {
        let hit = self.0.as_ref().is_some_and(|(p, r)| {
            p.ip.src == path.ip.src
                && p.ip.dst == path.ip.dst
                && p.oif == path.oif
                && r.is_current()
        });
        if !hit {
            // The stale route goes before the lookup.
            self.0 = None;
            let (src, dst) = (&path.ip.src, &path.ip.dst);
            let upper;
            let out = if path.oif == 0 || path.oif == ndev.ifindex() {
                ndev
            } else {
                // The GID of a VLAN device on `ndev`: the packets leave through it (tagged).
                // Anything else at that index (the VLAN device went, and its index was
                // reused) is no path of this device.
                upper = ndev
                    .get_by_index(path.oif)
                    .filter(|d| d.vlan_real_dev().is_some_and(|r| r.is(ndev)))
                    .ok_or(EHOSTUNREACH)?;
                &*upper
            };
            let route = if path.ip.is_ipv4() {
                Route::ipv4(out, ip::v4_of(src), ip::v4_of(dst))?
            } else {
                Route::ipv6(out, *src, *dst)?
            };
            self.0 = Some((*path, route));
        }
        self.0.as_ref().map(|(_, r)| r).ok_or(EHOSTUNREACH)
    }

    /// Forgets the kept route (the QP went back to RESET).
    pub(super) fn clear(&mut self) {
        self.0 = None;
    }
}

/// Where a QP's packets go.
pub(super) struct TxPath {
    /// Addressing of outgoing packets (from the address vector).
    pub(super) av: Path,
    /// The route of the last packet sent.
    pub(super) routes: RouteCache,
    /// The destination QP (connected QPs).
    pub(super) dest_qpn: Qpn,
    /// IPv4 identification of the next packet.
    ip_id: u16,
}

impl TxPath {
    /// Nowhere yet: the address vector comes with `modify_qp`.
    pub(super) fn new() -> Self {
        Self {
            av: Path::default(),
            routes: RouteCache::default(),
            dest_qpn: Qpn::new(0),
            ip_id: 0,
        }
    }

    /// Returns the IPv4 identification for the next packet.
    pub(super) fn next_ip_id(&mut self) -> u16 {
        let id = self.ip_id;
        self.ip_id = id.wrapping_add(1);
        id
    }
}

impl QpShared {
    /// Builds a packet around `spec` with a payload of `payload_len` bytes that `fill`
    /// writes in place, and transmits it on the route of `path` that `routes` keeps (or
    /// looks up).
    pub(super) fn xmit(
        &self,
        routes: &mut RouteCache,
        path: &Path,
        id: u16,
        spec: &PacketSpec<'_>,
        payload_len: usize,
        fill: impl FnOnce(&mut [u8]) -> Result,
    ) -> Result {
        let body_len = packet::packet_len(spec.bth.opcode, payload_len).ok_or(EINVAL)?;
        let route = routes.get(self.dev.netdev(), path)?;
        // Connected QPs' packets are ECN-capable while the reaction point is on.
        let ecn = self.qp_type != WireQpType::Ud && self.dev.cc.ecn();
        let ip = &IpParams {
            traffic_class: cc::ect(path.ip.traffic_class, ecn),
            ..path.ip
        };
        let ip_len = ip.ip_len();
        let hdr_len = ip_len.wrapping_add(UDP_LEN);
        let mut buf = TxBuf::new(route, ip_len, hdr_len.checked_add(body_len).ok_or(EINVAL)?)?;
        let data = buf.data_mut();
        ip.write(data, body_len, id).map_err(|_| EINVAL)?;
        let (hdrs, body) = data.split_at_mut_checked(hdr_len).ok_or(EINVAL)?;
        let layout = packet::build_headers(spec, payload_len, body).map_err(|_| EINVAL)?;
        fill(body.get_mut(layout.payload).ok_or(EINVAL)?)?;
        let (iph, udp) = hdrs.split_at_checked(ip_len).ok_or(EINVAL)?;
        let iph = if ip.is_ipv4() {
            IpHdr::V4(iph)
        } else {
            IpHdr::V6(iph)
        };
        icrc::generate(&kernel_crc32, iph, udp, body).map_err(|_| EINVAL)?;
        let len = u64::try_from(hdr_len.wrapping_add(body_len)).unwrap_or(0);
        let sent = if route.is_local() {
            // To a QP of this device: the IP layer would deliver it on the loopback device,
            // which no RDMA device is bound to.
            self.dev.deliver_locally(buf)
        } else {
            buf.send(route)
        };
        if sent.is_ok() {
            self.dev.stats.add(PortCounter::SentBytes, len);
        }
        sent
    }

    /// Counts the outcome of a transmission (a lost packet is recovered by the transport): a
    /// retransmission is the QP's event, a packet sent or lost the link's.
    pub(super) fn count_sent(&self, e: &Engine, sent: Result, retransmit: bool) {
        match sent {
            Ok(()) if retransmit => self.stats(e).inc(PortCounter::Retransmits),
            Ok(()) => self.dev.stats.inc(PortCounter::SentPkts),
            Err(_) => self.dev.stats.inc(PortCounter::SendErrors),
        }
    }

    /// Sends a packet without payload (an acknowledgment) to the connected peer, counting
    /// the outcome (a lost one is recovered by the requester).
    pub(super) fn send_headers(&self, e: &mut Engine, spec: &PacketSpec<'_>) {
        let id = e.tx.next_ip_id();
        let sent = self.xmit(&mut e.tx.routes, &e.tx.av, id, spec, 0, |_| Ok(()));
        self.count_sent(e, sent, false);
    }
}
