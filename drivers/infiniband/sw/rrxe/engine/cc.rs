// SPDX-License-Identifier: GPL-2.0

//! Congestion control on a connected QP (see [`crate::cc`] and [`crate::proto::cc`]): the
//! notification point answers packets a queue marked CE with CNPs to the peer QP, the
//! reaction point turns the peer's CNPs into the QP's DCQCN rate, and the data the QP
//! sends (its requests, and its READ responses) is paced at that rate. Under the engine
//! lock, like the rest of the data path.

use super::{xmit::PKEY, Engine, QpShared};
use crate::counters::PortCounter;
use crate::proto::{
    bth::{BthFields, TVER},
    cc::ECN_ECT0,
    opcode::Opcode,
    packet::PacketSpec,
    psn::Psn,
};

/// What a packet carries besides its payload, for the pacer: IPv4 and UDP headers, BTH,
/// RETH or AETH, and ICRC (an estimate: the rate is what matters, not the last byte).
pub(super) const PACED_HDR_BYTES: u32 = 60;

/// Smallest pacing wait armed, µs: a jiffy at `HZ=1000`; the pacer lets the credit of a
/// late timer through as a burst ([`crate::proto::cc::PACER_BURST_NS`]).
const PACE_MIN_US: u64 = 1;

impl QpShared {
    /// A CNP from the peer of this connected QP: the reaction point cuts the rate. Returns
    /// whether the QP took it (one that transmits).
    pub(super) fn on_cnp(&self, e: &mut Engine) -> bool {
        if !e.state().transmits() {
            return false;
        }
        match self.dev.cc.rp() {
            Some(p) => {
                let now = self.dev.cc.now();
                e.cc.rp.on_cnp(&p, now);
                self.stats(e).inc(PortCounter::RpCnpHandled);
            }
            None => self.stats(e).inc(PortCounter::RpCnpIgnored),
        }
        true
    }

    /// A packet from the peer arrived marked CE: counted, and answered with a CNP unless
    /// one went less than the notification point's interval ago.
    pub(super) fn on_ce(&self, e: &mut Engine) {
        self.stats(e).inc(PortCounter::NpEcnMarked);
        let Some(np) = self.dev.cc.np() else {
            return;
        };
        // A responder in RTR answers (perftest's servers never go further).
        if !e.state().accepts_requests() || !e.cc.np.on_ce(&np, self.dev.cc.now()) {
            return;
        }
        // IBTA A17.9.2: BECN set, the peer's QP, PSN 0, 16 reserved bytes. In the class
        // ConnectX sends its CNPs in (DSCP 48, ECN-capable, so that a marking queue marks
        // rather than drops it).
        let spec = PacketSpec {
            bth: BthFields {
                opcode: Opcode::CNP,
                tver: TVER,
                pkey: PKEY,
                becn: true,
                dest_qp: e.tx.dest_qpn,
                psn: Psn::new(0),
                ..BthFields::default()
            },
            ..PacketSpec::default()
        };
        let mut path = e.tx.av;
        path.ip.traffic_class = np.cnp_traffic_class() | ECN_ECT0;
        let id = e.tx.next_ip_id();
        let sent = self.xmit(&mut e.tx.routes, &path, id, &spec, 0, |_| Ok(()));
        if sent.is_ok() {
            self.stats(e).inc(PortCounter::NpCnpSent);
        }
        self.count_sent(e, sent, false);
    }

    /// Returns how long, in µs, the requester's next packet must wait for the QP's rate
    /// (`None`: it may go now, as always with the reaction point off or the QP unlimited).
    pub(super) fn pace_wait(&self, e: &mut Engine) -> Option<u32> {
        if !e.cc.rp.is_limited() {
            return None;
        }
        let p = self.dev.cc.rp()?;
        let now = self.dev.cc.now();
        e.cc.rp.advance(&p, now);
        if !e.cc.rp.is_limited() {
            return None;
        }
        let ns = e.cc.pacer.wait(now)?;
        u32::try_from(ns.div_ceil(1_000).max(PACE_MIN_US)).ok()
    }

    /// The requester sent a packet of `bytes` (its IBA headers and payload): the byte
    /// counter and the pacer move on.
    pub(super) fn paced(&self, e: &mut Engine, bytes: u32) {
        let Some(p) = self.dev.cc.rp() else {
            return;
        };
        let now = self.dev.cc.now();
        e.cc.rp.on_sent(&p, bytes, now);
        if e.cc.rp.is_limited() {
            e.cc.pacer.charge(bytes, e.cc.rp.rate(), now);
        }
    }
}
