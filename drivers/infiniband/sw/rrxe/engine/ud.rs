// SPDX-License-Identifier: GPL-2.0

//! Unreliable datagrams: each send WQE is one datagram, sent and completed at once; each
//! received datagram fills the head receive WQE, GRH first.
//!
//! A UD send WQE names its destination by address handle number (checked against the
//! device's AH table) and Q_Key; the datagram must fit the path MTU. A datagram is received
//! only with the QP's Q_Key; without a posted receive it is dropped, as on a wire.

use super::{
    cqe::CqSide,
    path_mtu,
    xmit::{Path, PKEY},
    Engine, Events, Local, QpShared,
};
use crate::budget::Budget;
use crate::counters::PortCounter;
use crate::cq::RecvOrigin;
use crate::mem::Need;
use crate::odp::Resume;
use crate::proto::{
    bth::{BthFields, Qpn},
    ext::{DethFields, ImmDtFields},
    icrc::IpHdr,
    ip::{self, IpParams},
    opcode::{Op, Opcode},
    packet::{Packet, PacketSpec},
    rc::WcStatus,
    uabi::{Completion, SendData, SendFlags, SendOp, UdAddress, WcEx},
};
use kernel::prelude::*;
use kernel::rdma::wr::NetworkType;

/// Length of the GRH in front of a UD receive's payload (for IPv4, 20 zero bytes and the
/// IPv4 header).
const GRH_LEN: usize = 40;

impl QpShared {
    /// UD: sends posted WQEs, each as one datagram, and completes them (unreliable: there is
    /// nothing to wait for), at most a run's [`Budget`] of them.
    pub(super) fn pump_ud(&self, e: &mut Engine, ev: &mut Events) {
        let mut budget = Budget::run();
        while budget.take() {
            let status = match self.load_next_wqe(e, 0) {
                Ok(Some(_)) if !self.ud_payload_present(e) => {
                    // On-demand paging memory not present: the WQE waits (not started) for
                    // the fault work, which resumes the QP.
                    return;
                }
                Ok(Some(prod)) => self.send_datagram(e).map(|()| prod),
                Ok(None) => return,
                Err(status) => Err(status),
            };
            let prod = match status {
                Ok(prod) => prod,
                Err(status) => {
                    e.req.error = Some(status);
                    self.fail_sq_head(e, ev);
                    return;
                }
            };
            if e.req.sqs.mark_started(prod).is_err() {
                return;
            }
            self.complete_send(e, ev, 0, WcStatus::Success);
        }
        // The budget ran out: the rest in softirq work.
        self.kick.queue(self);
    }

    /// UD: returns whether the payload of the WQE copy in shadow slot 0 can be read now;
    /// if it is on-demand paging memory that is not present, asks for it to be faulted in
    /// and the QP resumed then.
    fn ud_payload_present(&self, e: &Engine) -> bool {
        if !self.dev.faults.any() {
            return true;
        }
        let Some(wqe) = e.req.shadow.wqe(0) else {
            return true;
        };
        let (SendData::Sges(sges), Ok(len)) = (wqe.data(), usize::try_from(wqe.length())) else {
            return true;
        };
        self.ensure_sges_present(sges, 0, len, Need::LocalRead, Some(Resume::Continue))
    }

    /// UD: sends the datagram of the validated WQE copy in shadow slot 0.
    fn send_datagram(&self, e: &mut Engine) -> core::result::Result<(), WcStatus> {
        let id = e.tx.next_ip_id();
        let wqe = e.req.shadow.wqe(0).ok_or(WcStatus::LocQpOpErr)?;
        let SendOp::Send {
            imm, ud: Some(ud), ..
        } = *wqe.op()
        else {
            return Err(WcStatus::LocQpOpErr);
        };
        let mtu = path_mtu(&e.attrs).bytes();
        if wqe.length() > mtu {
            return Err(WcStatus::LocLenErr);
        }
        let UdAddress::Ah(num) = ud.address else {
            return Err(WcStatus::LocQpOpErr);
        };
        let ah = self.dev.ah(num, self.pd_id).ok_or(WcStatus::LocQpOpErr)?;
        let path = Path {
            ip: IpParams {
                src: ah.sgid,
                dst: ah.dgid,
                traffic_class: ah.traffic_class,
                hop_limit: if ah.hop_limit == 0 { 64 } else { ah.hop_limit },
                flow_label: ah.flow_label,
                sport: ip::udp_sport(self.qpn),
            },
            oif: ah.gid_ifindex,
        };
        // A Q_Key with the high bit set means "use the QP's" (IBA 10.2.5).
        let qkey = if ud.remote_qkey & 0x8000_0000 != 0 {
            e.attrs.qkey
        } else {
            ud.remote_qkey
        };
        let psn = e.req.ud_psn;
        e.req.ud_psn = psn.next();
        let spec = PacketSpec {
            bth: BthFields {
                opcode: if imm.is_some() {
                    Opcode::UD_SEND_ONLY_WITH_IMMEDIATE
                } else {
                    Opcode::UD_SEND_ONLY
                },
                solicited: wqe.flags().contains(SendFlags::SOLICITED),
                pkey: PKEY,
                dest_qp: ud.remote_qpn,
                psn,
                ..BthFields::default()
            },
            deth: Some(DethFields {
                qkey,
                resv: 0,
                src_qp: Qpn::new(self.qpn),
            }),
            immdt: imm.map(|imm| ImmDtFields { imm }),
            ..PacketSpec::default()
        };
        let len = usize::try_from(wqe.length()).map_err(|_| WcStatus::LocLenErr)?;
        let sent = self.xmit(&mut e.tx.routes, &path, id, &spec, len, |out| {
            match wqe.data() {
                SendData::Inline(bytes) => {
                    out.copy_from_slice(bytes.get(..out.len()).ok_or(EINVAL)?);
                    Ok(())
                }
                SendData::Sges(list) => {
                    self.gather(Local::new(list, e.req.shadow.posted(0)), 0, out)
                }
                SendData::None => Ok(()),
            }
        });
        // A datagram that cannot be sent is lost, as on a wire; a bad local key is the
        // sender's error.
        match sent {
            Ok(()) => {
                self.dev.stats.inc(PortCounter::SentPkts);
                if ip::is_multicast(&ah.dgid) {
                    self.dev.stats.inc(PortCounter::SentMcastPkts);
                }
            }
            Err(e) if e == EINVAL => return Err(WcStatus::LocProtErr),
            Err(_) => self.dev.stats.inc(PortCounter::SendErrors),
        }
        Ok(())
    }

    /// UD: takes a datagram into the head receive WQE: the 40-byte GRH (for IPv4, 20 zero
    /// bytes and the IPv4 header) followed by the payload; `vlan` is the VLAN it arrived on.
    pub(super) fn on_datagram(
        &self,
        e: &mut Engine,
        ev: &mut Events,
        pkt: &Packet<'_>,
        ip: &IpHdr<'_>,
        vlan: Option<u16>,
    ) -> bool {
        if !e.state().accepts_requests() {
            return false;
        }
        let Some(deth) = pkt.deth else {
            return false;
        };
        if pkt.opcode().info().is_none_or(|i| i.op != Op::Send) || deth.qkey() != e.attrs.qkey {
            return false;
        }
        if e.res.parked.is_some() {
            // One datagram waits for a page fault already: this one is lost, as on a wire.
            return false;
        }
        let mut grh = [0u8; GRH_LEN];
        let hdr = match ip {
            IpHdr::V4(h) => grh.get_mut(20..).zip(h.get(..20)),
            IpHdr::V6(h) => Some((&mut grh[..], h.get(..GRH_LEN).unwrap_or(&[0; GRH_LEN]))),
        };
        if let Some((dst, src)) = hdr {
            dst.copy_from_slice(src);
        }
        // How a kernel consumer reads the GRH in front of the payload, and which VLAN it
        // came on.
        let net = if matches!(ip, IpHdr::V4(_)) {
            NetworkType::Ipv4
        } else {
            NetworkType::Ipv6
        };
        let meta = DatagramMeta {
            imm: pkt.immdt.map(|i| i.imm()),
            src_qp: deth.src_qp().get(),
            solicited: pkt.bth.solicited(),
            origin: RecvOrigin { net, vlan },
        };
        match self.place_datagram(e, ev, &grh, pkt.payload, &meta) {
            Placed::Done => true,
            Placed::Dropped => false,
            Placed::NotPresent => {
                // Kept until the fault work resumes the QP (a copy: the packet goes).
                let mut data = KVec::new();
                if data.extend_from_slice(&grh, GFP_ATOMIC).is_err()
                    || data.extend_from_slice(pkt.payload, GFP_ATOMIC).is_err()
                {
                    return false;
                }
                e.res.parked = Some(Parked { data, meta });
                true
            }
        }
    }

    /// UD: places a datagram that waited for a page fault (see [`Self::on_datagram`]).
    pub(super) fn place_parked(&self, e: &mut Engine, ev: &mut Events, d: Parked) {
        let (grh, payload) = d.data.split_at(GRH_LEN.min(d.data.len()));
        let Ok(grh) = <&[u8; GRH_LEN]>::try_from(grh) else {
            return;
        };
        if self.place_datagram(e, ev, grh, payload, &d.meta) == Placed::NotPresent {
            e.res.parked = Some(d);
        }
    }

    /// UD: places a datagram (its GRH and payload) into the head receive WQE and completes
    /// it; `NotPresent` (nothing consumed) if the WQE's memory is on-demand paging memory
    /// that is not present, after asking for it to be faulted in and the QP resumed.
    fn place_datagram(
        &self,
        e: &mut Engine,
        ev: &mut Events,
        grh: &[u8; GRH_LEN],
        payload: &[u8],
        meta: &DatagramMeta,
    ) -> Placed {
        if !e.state().accepts_requests() {
            return Placed::Dropped;
        }
        let (len, prod) = match self.peek_recv(e, ev) {
            Ok(Some(head)) => head,
            // No receive posted: a datagram is simply dropped.
            Ok(None) => return Placed::Dropped,
            Err(()) => {
                self.enter_error(e, ev, c"the receive queue's ring is corrupt");
                return Placed::Dropped;
            }
        };
        let total = payload.len().saturating_add(GRH_LEN);
        // Too small a buffer: the receive completes with a length error.
        let fits = usize::try_from(len).is_ok_and(|l| l >= total);
        if fits && self.dev.faults.any() {
            let present = e.res.stage.wqe().is_none_or(|w| {
                self.ensure_sges_present(
                    w.sges(),
                    0,
                    total,
                    Need::LocalWrite,
                    Some(Resume::Continue),
                )
            });
            if !present {
                return Placed::NotPresent;
            }
        }
        core::mem::swap(&mut e.res.rwqe, &mut e.res.stage);
        e.res.stage_taken = false;
        if let Some(Ok(p)) = e.res.rqc.as_mut().map(|c| c.advance(prod)) {
            self.rq_publish(e, p);
        }
        let wr_id = e.res.rwqe.wr_id();
        let placed = fits
            && self.scatter(e, 0, grh).is_ok()
            && self.scatter(e, GRH_LEN as u32, payload).is_ok();
        let c = if placed {
            self.stats(e).inc(PortCounter::RdmaRecvs);
            let byte_len = u32::try_from(total).unwrap_or(u32::MAX);
            let ex = meta.imm.map_or(WcEx::None, WcEx::Imm);
            Completion::recv_success(wr_id, self.qpn, byte_len, false, ex, meta.src_qp, 1)
        } else if fits {
            Completion::send_error(wr_id, WcStatus::LocProtErr, self.qpn)
        } else {
            Completion::send_error(wr_id, WcStatus::LocLenErr, self.qpn)
        };
        self.post_cqe_net(ev, CqSide::Recv, &c, meta.solicited, Some(meta.origin));
        Placed::Done
    }
}

/// What a UD receive completion says of its datagram besides the data.
#[derive(Clone, Copy)]
pub(super) struct DatagramMeta {
    imm: Option<u32>,
    src_qp: u32,
    solicited: bool,
    origin: RecvOrigin,
}

/// A datagram waiting for the head receive WQE's memory to be faulted in: its GRH and
/// payload, copied.
pub(crate) struct Parked {
    data: KVec<u8>,
    meta: DatagramMeta,
}

/// What became of a datagram.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placed {
    /// Placed (or its receive completed in error).
    Done,
    /// Dropped: no receive WQE, or the QP cannot take it.
    Dropped,
    /// The receive WQE's memory is not present.
    NotPresent,
}
