// SPDX-License-Identifier: GPL-2.0

//! Queue pair and address attributes (`struct ib_qp_attr`, `struct rdma_ah_attr`) as typed
//! values: what `modify_qp` applies and `query_qp` reports.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::super::{device::Mtu, mr::AccessFlags};
use super::{attr, QpCaps, QpState};
use crate::{bindings, error::from_err_ptr, sync::rcu};

/// The type of a GID table entry (`enum ib_gid_type`): which wire protocol the port speaks
/// from that GID.
#[repr(u32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GidType {
    /// InfiniBand (`IB_GID_TYPE_IB`).
    Ib = bindings::ib_gid_type_IB_GID_TYPE_IB,
    /// RoCE v1: IB over Ethernet (`IB_GID_TYPE_ROCE`).
    RoceV1 = bindings::ib_gid_type_IB_GID_TYPE_ROCE,
    /// RoCE v2: IB transport over UDP/IP (`IB_GID_TYPE_ROCE_UDP_ENCAP`).
    RoceV2 = bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP,
}

impl GidType {
    fn from_raw(v: u32) -> Option<Self> {
        Some(match v {
            bindings::ib_gid_type_IB_GID_TYPE_IB => Self::Ib,
            bindings::ib_gid_type_IB_GID_TYPE_ROCE => Self::RoceV1,
            bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP => Self::RoceV2,
            _ => return None,
        })
    }
}

/// A RoCE address vector: the path to the remote end (`struct rdma_ah_attr` with a GRH).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct AhAttr {
    /// Destination GID (an IPv6 or IPv4-mapped address for RoCEv2).
    pub dgid: [u8; 16],
    /// Source GID, from the GID table entry `sgid_index` refers to.
    pub sgid: [u8; 16],
    /// Index of the source GID in the port's table.
    pub sgid_index: u8,
    /// Type of the source GID entry; `None` if the core gave none.
    pub sgid_type: Option<GidType>,
    /// IPv6 flow label.
    pub flow_label: u32,
    /// Hop limit (TTL).
    pub hop_limit: u8,
    /// Traffic class (DSCP and ECN).
    pub traffic_class: u8,
    /// Service level.
    pub sl: u8,
    /// Port.
    pub port_num: u32,
    /// Destination MAC, resolved by the core.
    pub dmac: [u8; 6],
    /// Interface index of the netdevice the source GID belongs to (a VLAN device for a
    /// VLAN's GID; the index is that of the device's network namespace), when the address
    /// vector was read: packets of this path leave through it. 0 if the core gave no GID
    /// attribute or its entry was already gone.
    pub gid_ifindex: i32,
}

/// Queue pair attributes (`struct ib_qp_attr`); in a modify, `mask` says which are set.
#[derive(Copy, Clone, Debug, Default)]
pub struct QpAttrs {
    /// `IB_QP_*` bits of the attributes present, see [`attr`].
    pub mask: u32,
    /// New (or current) state.
    pub state: Option<QpState>,
    /// State the caller believes the QP is in (`IB_QP_CUR_STATE`).
    pub cur_state: Option<QpState>,
    /// Path MTU.
    pub path_mtu: Option<Mtu>,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Expected PSN of the next incoming request.
    pub rq_psn: u32,
    /// PSN of the next outgoing request.
    pub sq_psn: u32,
    /// Destination QP number.
    pub dest_qp_num: u32,
    /// `IB_ACCESS_REMOTE_*` rights granted to remote requests.
    pub qp_access_flags: AccessFlags,
    /// Capabilities.
    pub cap: QpCaps,
    /// Address vector.
    pub ah: AhAttr,
    /// Partition key index.
    pub pkey_index: u16,
    /// Responder resources for RDMA READ/atomic.
    pub max_dest_rd_atomic: u8,
    /// Outstanding RDMA READ/atomic as requester.
    pub max_rd_atomic: u8,
    /// Minimum RNR NAK timer code.
    pub min_rnr_timer: u8,
    /// Port.
    pub port_num: u32,
    /// Local ACK timeout exponent (4.096 us * 2^timeout; 0 is infinite).
    pub timeout: u8,
    /// Transport retry count.
    pub retry_cnt: u8,
    /// RNR retry count (7 is infinite).
    pub rnr_retry: u8,
    /// Send queue draining (in SQD).
    pub sq_draining: bool,
}

impl AhAttr {
    /// Reads a RoCE address vector.
    ///
    /// # Safety
    ///
    /// `a.grh.sgid_attr` is null or valid.
    pub(crate) unsafe fn from_raw(a: &bindings::rdma_ah_attr) -> Self {
        let g = &a.grh;
        let mut ah = AhAttr {
            // SAFETY: `ib_gid` is a union of plain byte arrays.
            dgid: unsafe { g.dgid.raw },
            sgid_index: g.sgid_index,
            flow_label: g.flow_label,
            hop_limit: g.hop_limit,
            traffic_class: g.traffic_class,
            sl: a.sl,
            port_num: a.port_num,
            // SAFETY: The RoCE member of the union is the one set for RoCE ports.
            dmac: unsafe { a.__bindgen_anon_1.roce.dmac },
            ..AhAttr::default()
        };
        if !g.sgid_attr.is_null() {
            // SAFETY: Per the function's contract.
            let sgid = unsafe { &*g.sgid_attr };
            // SAFETY: See above for `ib_gid`.
            ah.sgid = unsafe { sgid.gid.raw };
            ah.sgid_type = GidType::from_raw(sgid.gid_type);
            let _rcu = rcu::read_lock();
            // SAFETY: `sgid` is valid (the function's contract). Under the RCU read lock the
            // result is an error pointer (the entry was deleted) or a netdevice that stays
            // valid until the unlock.
            let ndev = unsafe { bindings::rdma_read_gid_attr_ndev_rcu(sgid) };
            if let Ok(ndev) = from_err_ptr(ndev) {
                if !ndev.is_null() {
                    // SAFETY: `ndev` is valid (see above); `ifindex` is fixed once registered.
                    ah.gid_ifindex = unsafe { (*ndev).ifindex };
                }
            }
        }
        ah
    }

    /// Writes the address vector as a RoCE `struct rdma_ah_attr` with a GRH (its
    /// `sgid_attr` left as it is).
    pub(crate) fn write(&self, a: &mut bindings::rdma_ah_attr) {
        a.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
        a.ah_flags = bindings::ib_ah_flags_IB_AH_GRH as u8;
        a.port_num = self.port_num;
        a.sl = self.sl;
        a.grh.dgid.raw = self.dgid;
        a.grh.sgid_index = self.sgid_index;
        a.grh.flow_label = self.flow_label;
        a.grh.hop_limit = self.hop_limit;
        a.grh.traffic_class = self.traffic_class;
        a.__bindgen_anon_1.roce.dmac = self.dmac;
    }
}

impl QpAttrs {
    /// Reads the attributes the core passed to `modify_qp`.
    ///
    /// # Safety
    ///
    /// `a` is valid; if `mask` has `IB_QP_AV`, `a.ah_attr.grh.sgid_attr` is null or valid.
    pub(super) unsafe fn from_raw(a: &bindings::ib_qp_attr, mask: u32) -> Self {
        let ah = if mask & attr::AV != 0 {
            // SAFETY: With `IB_QP_AV` the core holds a reference to the GID attribute for
            // the call (or it is null).
            unsafe { AhAttr::from_raw(&a.ah_attr) }
        } else {
            let mut plain = a.ah_attr;
            plain.grh.sgid_attr = core::ptr::null();
            // SAFETY: `sgid_attr` is null.
            unsafe { AhAttr::from_raw(&plain) }
        };
        Self {
            mask,
            state: QpState::from_raw(a.qp_state),
            cur_state: QpState::from_raw(a.cur_qp_state),
            path_mtu: Mtu::from_raw(a.path_mtu),
            qkey: a.qkey,
            rq_psn: a.rq_psn,
            sq_psn: a.sq_psn,
            dest_qp_num: a.dest_qp_num,
            qp_access_flags: AccessFlags::from_raw(u32::from_ne_bytes(
                a.qp_access_flags.to_ne_bytes(),
            )),
            cap: QpCaps::from_raw(&a.cap),
            ah,
            pkey_index: a.pkey_index,
            max_dest_rd_atomic: a.max_dest_rd_atomic,
            max_rd_atomic: a.max_rd_atomic,
            min_rnr_timer: a.min_rnr_timer,
            port_num: a.port_num,
            timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            sq_draining: a.sq_draining != 0,
        }
    }

    pub(super) fn write(&self, a: &mut bindings::ib_qp_attr) {
        a.qp_state = self.state.map_or(0, |s| s as u32);
        a.cur_qp_state = a.qp_state;
        a.path_mtu = self.path_mtu.map_or(0, |m| m as u32);
        a.qkey = self.qkey;
        a.rq_psn = self.rq_psn;
        a.sq_psn = self.sq_psn;
        a.dest_qp_num = self.dest_qp_num;
        a.qp_access_flags = i32::from_ne_bytes(self.qp_access_flags.bits().to_ne_bytes());
        self.cap.write(&mut a.cap);
        self.ah.write(&mut a.ah_attr);
        a.pkey_index = self.pkey_index;
        a.max_dest_rd_atomic = self.max_dest_rd_atomic;
        a.max_rd_atomic = self.max_rd_atomic;
        a.min_rnr_timer = self.min_rnr_timer;
        a.port_num = self.port_num;
        a.timeout = self.timeout;
        a.retry_cnt = self.retry_cnt;
        a.rnr_retry = self.rnr_retry;
        a.sq_draining = u8::from(self.sq_draining);
    }
}
