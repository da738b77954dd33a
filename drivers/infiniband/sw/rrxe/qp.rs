// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: creation with the send and receive rings userspace maps, attribute checks
//! on modify (the spec's transition table through the core, then what this device supports),
//! query and destroy. The data path is [`crate::engine`].

use crate::counters::Stats;
use crate::engine::{QpSetup, QpShared, QpSrq, Queue};
use crate::mem::Key;
use crate::mr::RrxeMr;
use crate::params::{self, Charge};
use crate::proto::bth::Qpn;
use crate::proto::opcode::QpType as WireQpType;
use crate::proto::uabi::{
    self, CreateQpRespFields, KernelSendWr, QueueGeometry, Remote, SendFlags, SendOp, UdAddress,
    UdDest, WrOpcode, CACHE_LINE_SIZE,
};
use crate::queue::SharedQueue;
use crate::Rrxe;
use kernel::prelude::*;
use kernel::rdma::{
    cq::CqRef,
    device::{Device, Mtu},
    pd::Pd,
    qp::{self, attr, AhAttr, GidType, Qp, QpAttrs, QpCaps, QpInit, QpQuery, QpState, QpType},
    srq::SrqRef,
    wr::{self, RecvWr, SendWr},
};
use kernel::sync::Arc;

/// Per-QP state: the data path, which the receive path's table shares.
pub(crate) struct RrxeQp {
    shared: Arc<QpShared>,
    _charge: Charge,
}

impl RrxeQp {
    /// Binds the QP to a counter of `rdma statistic qp`, or unbinds it (`None`).
    pub(crate) fn bind_counter(qp: &Qp<Rrxe>, counter: Option<Arc<Stats>>) {
        qp.data().shared.bind_counter(counter);
    }

    /// `ibv_attach_mcast` / `ib_attach_mcast`: a UD QP joins the multicast group `gid`.
    pub(crate) fn attach_mcast(qp: &Qp<Rrxe>, gid: &[u8; 16]) -> Result {
        let s = &qp.data().shared;
        if !s.is_ud() {
            return Err(EINVAL);
        }
        qp.device().data().mcast_attach(gid, s.qpn())
    }

    /// `ibv_detach_mcast` / `ib_detach_mcast`.
    pub(crate) fn detach_mcast(qp: &Qp<Rrxe>, gid: &[u8; 16]) -> Result {
        qp.device().data().mcast_detach(gid, qp.data().shared.qpn())
    }
}

fn geometry(entries: u32, elem: usize) -> Result<QueueGeometry> {
    QueueGeometry::new(entries, elem, CACHE_LINE_SIZE).map_err(|_| EINVAL)
}

/// Checks the requested capabilities against the device limits (`rxe_qp_chk_init`).
fn check_caps(init: &QpInit<'_, Rrxe>) -> Result {
    let c = &init.caps;
    if c.max_send_wr > params::MAX_QP_WR
        || c.max_send_sge > params::MAX_SGE
        || c.max_inline_data > params::MAX_INLINE_DATA
        || (!init.has_srq
            && (c.max_recv_wr > params::MAX_QP_WR || c.max_recv_sge > params::MAX_SGE))
    {
        return Err(EINVAL);
    }
    Ok(())
}

impl RrxeQp {
    /// Prepares a new QP (`ibv_create_qp`).
    pub(crate) fn new(
        dev: &Device<Rrxe>,
        pd: &Pd<Rrxe>,
        init: &QpInit<'_, Rrxe>,
    ) -> Result<impl PinInit<Self, Error>> {
        if init.create_flags != 0 {
            return Err(EOPNOTSUPP);
        }
        let wire_type = match init.qp_type {
            QpType::Rc => WireQpType::Rc,
            QpType::Uc => WireQpType::Uc,
            // QP1 (the MAD layer's, for the connection manager) is a UD QP.
            QpType::Ud | QpType::Gsi => WireQpType::Ud,
            _ => return Err(EOPNOTSUPP),
        };
        let (Some(scq), Some(rcq)) = (init.send_cq(), init.recv_cq()) else {
            return Err(EINVAL);
        };
        check_caps(init)?;
        let user = match (init.udata, init.ucontext) {
            (Some(u), Some(c)) => Some((u, c)),
            // A kernel consumer: its work requests come through `post_send`/`post_recv`.
            (None, _) => None,
            (Some(_), None) => return Err(EINVAL),
        };
        if let Some((udata, _)) = user {
            if udata.in_len() != 0 || udata.out_len() < CreateQpRespFields::LEN {
                return Err(EINVAL);
            }
        }
        let charge = dev.data().qps.take()?;
        let sqc =
            uabi::sq_caps(init.caps.max_send_sge, init.caps.max_inline_data).map_err(|_| EINVAL)?;
        let sq_geo = geometry(init.caps.max_send_wr, sqc.wqe_size)?;
        let (sq, sq_mi) = match user {
            Some((_, ctx)) => {
                let (q, mi) = SharedQueue::new_user_mi(ctx, sq_geo)?;
                (Queue::User(q), mi)
            }
            None => (Queue::Kernel(sq_geo), Default::default()),
        };
        let mut resp = CreateQpRespFields {
            sq_mi,
            ..CreateQpRespFields::default()
        };
        let mut caps = QpCaps {
            max_send_wr: sq_geo.capacity(),
            max_send_sge: sqc.max_send_sge,
            max_inline_data: sqc.max_inline_data,
            ..QpCaps::default()
        };
        let rq = if init.has_srq {
            None
        } else {
            let size = uabi::recv_wqe_size(init.caps.max_recv_sge).map_err(|_| EINVAL)?;
            let geo = geometry(init.caps.max_recv_wr, size)?;
            let rq = match user {
                Some((_, ctx)) => {
                    let (rq, mi) = SharedQueue::new_user_mi(ctx, geo)?;
                    resp.rq_mi = mi;
                    Queue::User(rq)
                }
                None => Queue::Kernel(geo),
            };
            caps.max_recv_wr = geo.capacity();
            caps.max_recv_sge = init.caps.max_recv_sge;
            Some(rq)
        };
        let qpn = if init.qp_type == QpType::Gsi {
            dev.data().alloc_gsi_qpn()?
        } else {
            dev.data().alloc_qpn()?
        };
        if let Some((udata, _)) = user {
            let mut bytes = [0u8; CreateQpRespFields::LEN];
            if let Err(e) = resp
                .write(&mut bytes)
                .map_err(|_| EINVAL)
                .and_then(|()| udata.respond(&bytes))
            {
                dev.data().free_qpn(qpn);
                return Err(e);
            }
        }
        let shared = QpShared::new(QpSetup {
            qpn,
            qp_type: wire_type,
            pd_id: pd.data().id,
            sig_all: init.sq_sig_all,
            caps,
            sq_depth: init.caps.max_send_wr,
            attrs: QpAttrs {
                state: Some(QpState::Reset),
                port_num: 1,
                ..QpAttrs::default()
            },
            dev: dev.data().shared.clone(),
            scq: CqRef::new(scq),
            rcq: CqRef::new(rcq),
            sq,
            rq,
            srq: init.srq().map(|s| QpSrq {
                queue: s.data().shared.clone(),
                obj: SrqRef::new(s),
            }),
            kernel: init.kernel_dma(),
            handle: init.handle(),
            events: init.events(),
        })
        .and_then(|shared| {
            dev.data().insert_qp(shared.clone())?;
            Ok(shared)
        });
        let shared = match shared {
            Ok(s) => s,
            Err(e) => {
                dev.data().free_qpn(qpn);
                return Err(e);
            }
        };
        init.set_caps(&caps);
        init.set_qp_num(qpn);
        Ok(Ok::<_, Error>(Self {
            shared,
            _charge: charge,
        }))
    }

    /// Destroys the data path: once this returns, no packet, timer or doorbell uses the QP,
    /// and dropping it (in process context) frees the rings.
    pub(crate) fn destroy(qp: &Qp<Rrxe>) {
        let dev = qp.device().data();
        let qpn = qp.qp_num();
        // Packets being processed on other CPUs that found the QP before it left the table
        // are waited for.
        let taken = dev.remove_qp(qpn);
        qp.data().shared.shutdown();
        drop(taken);
        dev.free_qpn(qpn);
    }

    /// The send doorbell.
    pub(crate) fn doorbell(qp: &Qp<Rrxe>) -> Result {
        qp.data().shared.doorbell()
    }

    /// Queues a kernel consumer's send work request: its fields as the typed operation the
    /// data path carries out (checked as a user WQE would be, see `engine/wq.rs`).
    pub(crate) fn post_send_wr(&self, wr: &SendWr<'_, Rrxe>) -> Result {
        let remote = |r: &wr::Remote| Remote {
            addr: r.addr,
            rkey: r.rkey,
        };
        let send = |imm, invalidate_rkey| -> Result<SendOp> {
            let ud = match &wr.ud {
                Some(ud) => Some(UdDest {
                    remote_qpn: Qpn::try_new(ud.remote_qpn).ok_or(EINVAL)?,
                    remote_qkey: ud.remote_qkey,
                    pkey_index: ud.pkey_index,
                    address: UdAddress::Ah(ud.ah.data().num),
                }),
                None => None,
            };
            Ok(SendOp::Send {
                imm,
                invalidate_rkey,
                ud,
            })
        };
        let (opcode, op) = match &wr.op {
            wr::SendOp::Send => (WrOpcode::Send, send(None, None)?),
            wr::SendOp::SendWithImm(imm) => (WrOpcode::SendWithImm, send(Some(*imm), None)?),
            wr::SendOp::SendWithInv(rkey) => (WrOpcode::SendWithInv, send(None, Some(*rkey))?),
            wr::SendOp::RdmaWrite(r) => (
                WrOpcode::RdmaWrite,
                SendOp::Write {
                    remote: remote(r),
                    imm: None,
                },
            ),
            wr::SendOp::RdmaWriteWithImm(r, imm) => (
                WrOpcode::RdmaWriteWithImm,
                SendOp::Write {
                    remote: remote(r),
                    imm: Some(*imm),
                },
            ),
            wr::SendOp::RdmaRead(r) => (WrOpcode::RdmaRead, SendOp::Read { remote: remote(r) }),
            wr::SendOp::CompareSwap {
                remote: r,
                compare,
                swap,
            } => (
                WrOpcode::AtomicCmpAndSwp,
                SendOp::CompareSwap {
                    remote: remote(r),
                    compare: *compare,
                    swap: *swap,
                },
            ),
            wr::SendOp::FetchAdd { remote: r, add } => (
                WrOpcode::AtomicFetchAndAdd,
                SendOp::FetchAdd {
                    remote: remote(r),
                    add: *add,
                },
            ),
            wr::SendOp::LocalInv(rkey) => (WrOpcode::LocalInv, SendOp::LocalInv { rkey: *rkey }),
            wr::SendOp::RegMr(reg) => {
                // The region is named by its key (no pointer goes into the queue); the range
                // it will name is taken now, as the consumer posts.
                RrxeMr::prepare_registration(reg.mr, self.shared.pd_id, Key::from_raw(reg.key))?;
                (
                    WrOpcode::RegMr,
                    SendOp::RegMr {
                        key: reg.key,
                        access: reg.access.bits(),
                    },
                )
            }
        };
        let k = KernelSendWr {
            wr_id: wr.wr_id,
            opcode,
            flags: SendFlags(wr.send_flags),
            op,
        };
        self.shared.push_send(&k, wr.sges)
    }

    /// Queues a kernel consumer's receive work request.
    pub(crate) fn post_recv_wr(&self, wr: &RecvWr<'_>) -> Result {
        self.shared.push_recv(wr.wr_id, wr.sges)
    }

    /// Checks and applies `ibv_modify_qp` attributes (`rxe_qp_chk_attr`, `rxe_qp_from_attr`).
    pub(crate) fn modify(qp: &Qp<Rrxe>, a: &QpAttrs) -> Result {
        let this = qp.data();
        let dev = qp.device();
        let port_mtu = dev
            .netdev(1)
            .map(|n| params::roce_mtu(n.mtu()))
            .ok_or(ENODEV)?;
        let qp_type = qp.qp_type();
        this.shared.modify(
            (a.mask & attr::MAX_DEST_RD_ATOMIC != 0).then_some(a.max_dest_rd_atomic),
            |cur_attrs| {
                // The transition is decided from the QP's real state: a current state the
                // caller names (`IB_QP_CUR_STATE`) must be that state, as a hardware device
                // would refuse the command otherwise.
                let cur = cur_attrs.state.unwrap_or(QpState::Reset);
                if a.mask & attr::CUR_STATE != 0 && a.cur_state != Some(cur) {
                    return Err(EINVAL);
                }
                let next = match (a.mask & attr::STATE != 0, a.state) {
                    (true, Some(s)) => s,
                    (true, None) => return Err(EINVAL),
                    (false, _) => cur,
                };
                if !qp::modify_is_ok(cur, next, qp_type, a.mask) {
                    return Err(EINVAL);
                }
                check_attrs(a, port_mtu)?;
                Ok(next)
            },
            |cur| {
                merge(cur, a);
                cur.mask = a.mask;
                cur.sq_draining = false;
            },
        )
    }

    /// Returns the attributes for `ibv_query_qp`.
    pub(crate) fn query(qp: &Qp<Rrxe>) -> QpQuery {
        let (mut attrs, caps) = qp.data().shared.query();
        attrs.cap = caps;
        attrs.mask = 0;
        QpQuery {
            attrs,
            caps,
            sq_sig_all: qp.data().shared.sig_all(),
        }
    }
}

/// Checks the attributes a modify sets against what the port and the device support.
fn check_attrs(a: &QpAttrs, port_mtu: Mtu) -> Result {
    let has = |bit| a.mask & bit != 0;
    if has(attr::PORT) && a.port_num != 1 {
        return Err(EINVAL);
    }
    if has(attr::PKEY_INDEX) && a.pkey_index != 0 {
        return Err(EINVAL);
    }
    if has(attr::PATH_MTU) && a.path_mtu.is_none_or(|m| m > port_mtu) {
        return Err(EINVAL);
    }
    if has(attr::AV) {
        check_ah(&a.ah)?;
    }
    if has(attr::MAX_QP_RD_ATOMIC) && u32::from(a.max_rd_atomic) > params::MAX_QP_RD_ATOM {
        return Err(EINVAL);
    }
    if has(attr::MAX_DEST_RD_ATOMIC) && u32::from(a.max_dest_rd_atomic) > params::MAX_QP_RD_ATOM {
        return Err(EINVAL);
    }
    if (has(attr::TIMEOUT) && a.timeout > 31)
        || (has(attr::RETRY_CNT) && a.retry_cnt > 7)
        || (has(attr::RNR_RETRY) && a.rnr_retry > 7)
        || (has(attr::MIN_RNR_TIMER) && a.min_rnr_timer > 31)
    {
        return Err(EINVAL);
    }
    if (has(attr::RQ_PSN) && a.rq_psn > 0xff_ffff)
        || (has(attr::SQ_PSN) && a.sq_psn > 0xff_ffff)
        || (has(attr::DEST_QPN) && a.dest_qp_num > 0xff_ffff)
    {
        return Err(EINVAL);
    }
    // Resizing the work queues of an existing QP is not supported (as in the C driver).
    if has(attr::CAP) {
        return Err(EINVAL);
    }
    Ok(())
}

/// Checks an address vector: RoCEv2 only, through port 1.
fn check_ah(ah: &AhAttr) -> Result {
    if ah.port_num != 1 || ah.sgid_type != Some(GidType::RoceV2) {
        return Err(EINVAL);
    }
    // A RoCEv2 destination is an IPv6 address or an IPv4-mapped one; the unspecified address
    // cannot be one.
    if ah.dgid == [0; 16] {
        return Err(EINVAL);
    }
    Ok(())
}

/// Copies the attributes of `a.mask` into `cur`.
fn merge(cur: &mut QpAttrs, a: &QpAttrs) {
    let has = |bit| a.mask & bit != 0;
    if has(attr::ACCESS_FLAGS) {
        cur.qp_access_flags = a.qp_access_flags;
    }
    if has(attr::PKEY_INDEX) {
        cur.pkey_index = a.pkey_index;
    }
    if has(attr::PORT) {
        cur.port_num = a.port_num;
    }
    if has(attr::QKEY) {
        cur.qkey = a.qkey;
    }
    if has(attr::AV) {
        cur.ah = a.ah;
    }
    if has(attr::PATH_MTU) {
        cur.path_mtu = a.path_mtu;
    }
    if has(attr::TIMEOUT) {
        cur.timeout = a.timeout;
    }
    if has(attr::RETRY_CNT) {
        cur.retry_cnt = a.retry_cnt;
    }
    if has(attr::RNR_RETRY) {
        cur.rnr_retry = a.rnr_retry;
    }
    if has(attr::RQ_PSN) {
        cur.rq_psn = a.rq_psn;
    }
    if has(attr::MAX_QP_RD_ATOMIC) {
        cur.max_rd_atomic = a.max_rd_atomic;
    }
    if has(attr::MIN_RNR_TIMER) {
        cur.min_rnr_timer = a.min_rnr_timer;
    }
    if has(attr::SQ_PSN) {
        cur.sq_psn = a.sq_psn;
    }
    if has(attr::MAX_DEST_RD_ATOMIC) {
        cur.max_dest_rd_atomic = a.max_dest_rd_atomic;
    }
    if has(attr::DEST_QPN) {
        cur.dest_qp_num = a.dest_qp_num;
    }
}
