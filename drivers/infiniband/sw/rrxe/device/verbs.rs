// SPDX-License-Identifier: GPL-2.0

//! The verbs of an rrxe device: the [`Driver`] implementation that `kernel::rdma` installs
//! in the device's `ib_device_ops`. Each verb checks its arguments and hands the object
//! to its file (`pd.rs`, `cq.rs`, `qp.rs`, `srq.rs`, `mr.rs`, `ah.rs`).

//! Device creation and the device-level verbs.

use super::{check_port, RrxeDev, RrxeUContext, RXE_UVERBS_ABI_VERSION};
use crate::ah::RrxeAh;
use crate::counters::{Stats, HW_STATS};
use crate::cq::RrxeCq;
use crate::mr::RrxeMr;
use crate::mw::RrxeMw;
use crate::params;
use crate::pd::RrxePd;
use crate::proto::pma;
use crate::qp::RrxeQp;
use crate::srq::RrxeSrq;
use crate::Rrxe;
use kernel::prelude::*;
use kernel::rdma::{
    ah::{Ah, AhInit},
    cq::{Cq, CqInit, NotifyFlags},
    device::{
        core_cap, device_cap, kernel_cap, odp_cap, port_modify, AtomicCap, Device, DeviceAttrs,
        DeviceModify, Driver, DriverId, LinkLayer, Mad, MadResult, Mtu, OdpCaps, PhysState,
        PortAttrs, PortImmutable, PortModify, PortNum, PortState, StatDesc, UContext, UData,
        MGMT_MAD_SIZE,
    },
    mr::{AccessFlags, DmaPage, Mr, MrKeys, MrRereg, MrSg, MrType, UserMrReq},
    mw::{Mw, MwInit},
    odp::MrAdvice,
    pd::Pd,
    qp::{AhAttr, Qp, QpAttrs, QpInit, QpQuery},
    srq::{Srq, SrqAttrMask, SrqAttrs, SrqInit},
    usecnt::Dying,
    wr::{RecvWr, SendWr, Sge, Wc},
    MaySleep,
};
use kernel::sync::{atomic::ordering::Relaxed, Arc};

#[vtable]
impl Driver for Rrxe {
    type Data = RrxeDev;
    type UContext = RrxeUContext;
    type Pd = RrxePd;
    type Cq = RrxeCq;
    type Qp = RrxeQp;
    type Mr = RrxeMr;
    type Srq = RrxeSrq;
    type Mw = RrxeMw;
    type Counter = Stats;
    type Ah = RrxeAh;

    const DRIVER_ID: DriverId = DriverId::RXE;
    const UVERBS_ABI_VER: u32 = RXE_UVERBS_ABI_VERSION;
    const HW_STATS: &'static [StatDesc] = &HW_STATS;

    fn hw_stats(dev: &Device<Self>, _port: PortNum, values: &mut [u64]) {
        dev.data().shared.stats.read(values);
    }

    fn counter_alloc(_dev: &Device<Self>, _port: PortNum) -> Result<Arc<Stats>> {
        Ok(Arc::new(Stats::new(), GFP_KERNEL)?)
    }

    /// The QP's transport events go to `counter` ([`crate::engine::QpShared::stats`]).
    fn counter_bind_qp(qp: &Qp<Self>, counter: &Arc<Stats>) -> Result {
        RrxeQp::bind_counter(qp, Some(counter.clone()));
        Ok(())
    }

    fn counter_unbind_qp(qp: &Qp<Self>) {
        RrxeQp::bind_counter(qp, None);
    }

    fn counter_stats(_dev: &Device<Self>, counter: &Stats, values: &mut [u64]) {
        counter.read(values);
    }

    const SHOW_PARENT: bool = true;

    /// The Performance Management agent of the port (`proto::pma`): the core's
    /// `ports/1/counters/` files, and PerfMgmt `Get`s that arrive on QP1.
    fn process_mad(dev: &Device<Self>, port: PortNum, mad: &Mad, reply: &mut Mad) -> MadResult {
        let Ok(port) = u8::try_from(port) else {
            return MadResult::NotMine;
        };
        match pma::answer(mad, port, &dev.data().shared.stats.pma(), reply) {
            pma::Answer::Reply => MadResult::Reply,
            pma::Answer::NotMine => MadResult::NotMine,
        }
    }

    fn query_device(dev: &Device<Self>, udata: Option<&UData<Self>>) -> Result<DeviceAttrs> {
        // The rxe ABI has no driver-specific query payload.
        if udata.is_some_and(|u| u.in_len() != 0 || u.out_len() != 0) {
            return Err(EINVAL);
        }
        // Only what is implemented is advertised.
        Ok(DeviceAttrs {
            sys_image_guid: dev.data().sys_image_guid.load(Relaxed),
            // Fast registration, local and remote invalidation: what kernel storage
            // protocols (nvme-rdma, iSER, NFS/RDMA, SMB Direct, RDS, o2iblnd) require.
            // ATOMIC WRITE and FLUSH as rdma_rxe carries them (RC, user QPs: no kernel verb
            // posts one); FLUSH for global visibility only (no persistent memory check).
            device_cap_flags: device_cap::MEM_MGT_EXTENSIONS
                | device_cap::RC_RNR_NAK_GEN
                | device_cap::SYS_IMAGE_GUID
                | device_cap::ATOMIC_WRITE
                | device_cap::FLUSH_GLOBAL
                | device_cap::SRQ_RESIZE
                | device_cap::MEM_WINDOW
                | device_cap::MEM_WINDOW_TYPE_2B,
            max_fast_reg_page_list_len: crate::mem::MAX_FAST_REG_PAGES,
            // No signature offload (`IB_MR_TYPE_INTEGRITY`).
            max_pi_fast_reg_page_list_len: 0,
            max_qp: params::MAX_QP,
            max_qp_wr: params::MAX_QP_WR,
            max_send_sge: params::MAX_SGE,
            max_recv_sge: params::MAX_SGE,
            // A READ's data lands in its WQE's whole scatter list. Kernel consumers divide
            // by this (rdma_rw_ctx_init through the QP's max_read_sge): it must not be 0.
            max_sge_rd: params::MAX_SGE,
            // Atomics execute under one device-wide lock: atomic between all QPs of the
            // device, as rdma_rxe's IB_ATOMIC_HCA.
            atomic_cap: Some(AtomicCap::Hca),
            max_ah: params::MAX_AH,
            max_qp_rd_atom: params::MAX_QP_RD_ATOM,
            max_qp_init_rd_atom: params::MAX_QP_RD_ATOM,
            // No device-wide pool of responder resources: each QP has its own.
            max_res_rd_atom: params::MAX_QP_RD_ATOM.saturating_mul(params::MAX_QP),
            max_mr: params::MAX_MR,
            max_mw: params::MAX_MW,
            max_mcast_grp: params::MAX_MCAST_GRP,
            max_mcast_qp_attach: crate::mcast::MAX_QP_ATTACH as u32,
            max_total_mcast_qp_attach: params::MAX_TOTAL_MCAST_QP_ATTACH,
            max_mr_size: u64::MAX,
            page_size_cap: 0xffff_f000,
            max_pd: params::MAX_PD,
            max_srq: params::MAX_SRQ,
            max_srq_wr: params::MAX_SRQ_WR,
            max_srq_sge: params::MAX_SRQ_SGE,
            max_cq: params::MAX_CQ,
            max_cqe: params::MAX_CQE,
            vendor_id: params::VENDOR_ID,
            kernel_cap_flags: kernel_cap::ALLOW_USER_UNREG
                | kernel_cap::LOCAL_DMA_LKEY
                | kernel_cap::ON_DEMAND_PAGING,
            // On-demand paging for every operation rdma_rxe supports on it (`rxe.c`):
            // explicit regions only (no implicit ODP, as rdma_rxe).
            odp: OdpCaps {
                general: odp_cap::SUPPORT,
                rc: odp_cap::SEND
                    | odp_cap::RECV
                    | odp_cap::WRITE
                    | odp_cap::READ
                    | odp_cap::ATOMIC
                    | odp_cap::SRQ_RECV
                    | odp_cap::FLUSH
                    | odp_cap::ATOMIC_WRITE,
                uc: 0,
                ud: odp_cap::SEND | odp_cap::RECV | odp_cap::SRQ_RECV,
            },
            max_pkeys: 1,
            local_ca_ack_delay: params::LOCAL_CA_ACK_DELAY,
            ..DeviceAttrs::default()
        })
    }

    fn query_port(dev: &Device<Self>, port: PortNum) -> Result<PortAttrs> {
        check_port(port)?;
        let ndev = dev.netdev(port).ok_or(ENODEV)?;
        let (state, phys_state) = if ndev.is_active() {
            (PortState::Active, PhysState::LinkUp)
        } else if ndev.is_up() {
            (PortState::Down, PhysState::Polling)
        } else {
            (PortState::Down, PhysState::Disabled)
        };
        let (active_speed, active_width) = dev.eth_speed(port)?;
        Ok(PortAttrs {
            state,
            phys_state,
            max_mtu: Mtu::Mtu4096,
            active_mtu: params::roce_mtu(ndev.mtu()),
            phys_mtu: ndev.mtu(),
            gid_tbl_len: params::GID_TABLE_LEN,
            port_cap_flags: dev.data().port_cap_flags.load(Relaxed),
            max_msg_sz: params::MAX_MSG_SIZE,
            pkey_tbl_len: 1,
            max_vl_num: 1,
            active_width,
            active_speed,
        })
    }

    fn port_immutable(_dev: &Device<Self>, port: PortNum) -> Result<PortImmutable> {
        check_port(port)?;
        Ok(PortImmutable {
            pkey_tbl_len: 1,
            gid_tbl_len: params::GID_TABLE_LEN,
            core_cap_flags: core_cap::IBA_ROCE_UDP_ENCAP,
            max_mad_size: MGMT_MAD_SIZE,
        })
    }

    fn link_layer(_dev: &Device<Self>, _port: PortNum) -> LinkLayer {
        LinkLayer::Ethernet
    }

    fn query_pkey(_dev: &Device<Self>, port: PortNum, index: u16) -> Result<u16> {
        check_port(port)?;
        // One partition key: the default full-membership key.
        if index != 0 {
            return Err(EINVAL);
        }
        Ok(0xffff)
    }

    fn modify_device(dev: &Device<Self>, m: &DeviceModify) -> Result {
        if let Some(guid) = m.sys_image_guid {
            dev.data().sys_image_guid.store(guid, Relaxed);
        }
        if let Some(desc) = &m.node_desc {
            dev.set_node_desc(desc);
        }
        Ok(())
    }

    fn modify_port(dev: &Device<Self>, port: PortNum, m: &PortModify) -> Result {
        check_port(port)?;
        // No shutdown or init type, as rdma_rxe; there is no Q_Key violation counter to
        // reset (rrxe counts Q_Key mismatches in its hardware counters, which stay).
        if m.mask & !port_modify::RESET_QKEY_CNTR != 0 {
            return Err(EOPNOTSUPP);
        }
        let flags = &dev.data().port_cap_flags;
        let mut cur = flags.load(Relaxed);
        loop {
            let new = (cur | m.set_port_cap_mask) & !m.clr_port_cap_mask;
            match flags.cmpxchg(cur, new, Relaxed) {
                Ok(_) => return Ok(()),
                Err(old) => cur = old,
            }
        }
    }

    fn alloc_ucontext(
        _dev: &Device<Self>,
        _udata: Option<&UData<Self>>,
    ) -> impl PinInit<RrxeUContext, Error> {
        // The rxe ABI passes no data with the context; librxe sends none and reads none.
        Ok::<_, Error>(RrxeUContext)
    }

    /// The device goes away under open contexts (netdevice removal, `rdma link del`,
    /// unload): the core has destroyed every object of the context, through the same
    /// destroy operations as a process exit, and nothing else holds the device. The rings
    /// the process mapped are zapped by the core (`kernel::rdma::mmap::map` tracks every
    /// mapping in the uverbs file), so the process then reads zeroed pages.
    fn disassociate_ucontext(_ctx: &UContext<Self>) {}

    fn alloc_pd(dev: &Device<Self>, _udata: Option<&UData<Self>>) -> impl PinInit<RrxePd, Error> {
        let data = dev.data();
        data.pds
            .take()
            .map(|charge| RrxePd::new(charge, data.new_pd_id()))
    }

    fn create_cq(
        dev: &Device<Self>,
        init: &CqInit<'_, Self>,
    ) -> Result<impl PinInit<RrxeCq, Error>> {
        RrxeCq::new(init, dev.data().cqs.take()?)
    }

    fn destroy_cq(_cq: &Dying<'_, Cq<Self>>) -> Result {
        // The core only destroys CQs that no QP uses; the data drops next.
        Ok(())
    }

    fn req_notify_cq(cq: &Cq<Self>, flags: NotifyFlags) -> Result<bool> {
        cq.data().req_notify(flags)
    }

    fn resize_cq(cq: &Cq<Self>, cqe: u32, udata: Option<&UData<Self>>) -> Result {
        RrxeCq::resize(cq, cqe, udata)
    }

    fn create_qp(
        dev: &Device<Self>,
        pd: &Pd<Self>,
        init: &QpInit<'_, Self>,
    ) -> Result<impl PinInit<RrxeQp, Error>> {
        RrxeQp::new(dev, pd, init)
    }

    fn modify_qp(qp: &Qp<Self>, attrs: &QpAttrs, _udata: Option<&UData<Self>>) -> Result {
        RrxeQp::modify(qp, attrs)
    }

    fn query_qp(qp: &Qp<Self>) -> Result<QpQuery> {
        Ok(RrxeQp::query(qp))
    }

    fn destroy_qp(qp: &Qp<Self>) -> Result {
        RrxeQp::destroy(qp);
        Ok(())
    }

    fn attach_mcast(qp: &Qp<Self>, gid: &[u8; 16]) -> Result {
        RrxeQp::attach_mcast(qp, gid)
    }

    fn detach_mcast(qp: &Qp<Self>, gid: &[u8; 16]) -> Result {
        RrxeQp::detach_mcast(qp, gid)
    }

    fn create_srq(dev: &Device<Self>, pd: &Pd<Self>, init: &SrqInit<'_, Self>) -> Result<RrxeSrq> {
        RrxeSrq::new(dev, pd, init)
    }

    fn modify_srq(
        srq: &Srq<Self>,
        attrs: &SrqAttrs,
        mask: SrqAttrMask,
        udata: Option<&UData<Self>>,
    ) -> Result {
        RrxeSrq::modify(srq, attrs, mask, udata)
    }

    fn query_srq(srq: &Srq<Self>) -> Result<SrqAttrs> {
        Ok(RrxeSrq::query(srq))
    }

    fn destroy_srq(_srq: &Dying<'_, Srq<Self>>) -> Result {
        // The core destroys an SRQ only once no QP uses it (each QP's data path holds a use
        // count while it may take WQEs from it): its data is simply dropped next.
        Ok(())
    }

    fn post_srq_recv_wr(srq: &Srq<Self>, wr: &RecvWr<'_>) -> Result {
        RrxeSrq::post_recv(srq, wr)
    }

    fn send_doorbell(qp: &Qp<Self>) -> Result {
        RrxeQp::doorbell(qp)
    }

    fn post_send_wr(qp: &Qp<Self>, wr: &SendWr<'_, Self>) -> Result {
        qp.data().post_send_wr(wr)
    }

    fn post_recv_wr(qp: &Qp<Self>, wr: &RecvWr<'_>) -> Result {
        qp.data().post_recv_wr(wr)
    }

    fn poll_cq(cq: &Cq<Self>) -> Option<Wc> {
        RrxeCq::poll_wc(cq)
    }

    fn reg_user_mr(
        pd: &Pd<Self>,
        req: &UserMrReq,
        _udata: Option<&UData<Self>>,
        ctx: &MaySleep<'_>,
    ) -> Result<(MrKeys, impl PinInit<RrxeMr, Error>)> {
        let (keys, mr) = RrxeMr::reg_user(pd, req, ctx)?;
        Ok((keys, Ok::<_, Error>(mr)))
    }

    fn create_ah(
        dev: &Device<Self>,
        init: &AhInit<'_, Self>,
    ) -> Result<impl PinInit<RrxeAh, Error>> {
        RrxeAh::new(dev, init).map(Ok::<_, Error>)
    }

    fn destroy_ah(ah: &Ah<Self>) -> Result {
        ah.data().destroy(ah.device());
        Ok(())
    }

    fn query_ah(ah: &Ah<Self>) -> Result<AhAttr> {
        ah.data().attr(ah.device())
    }

    fn modify_ah(ah: &Ah<Self>, attr: &AhAttr) -> Result {
        ah.data().modify(ah.device(), attr)
    }

    fn get_dma_mr(
        pd: &Pd<Self>,
        access: AccessFlags,
    ) -> Result<(MrKeys, impl PinInit<RrxeMr, Error>)> {
        let (keys, mr) = RrxeMr::dma(pd, access)?;
        Ok((keys, Ok::<_, Error>(mr)))
    }

    fn alloc_mr(pd: &Pd<Self>, mr_type: MrType, max_num_sg: u32) -> Result<(MrKeys, RrxeMr)> {
        RrxeMr::alloc(pd, mr_type, max_num_sg)
    }

    fn map_mr_sg(mr: &Mr<Self>, sg: MrSg<'_>) -> Result<usize> {
        RrxeMr::map_sg(mr, sg)
    }

    fn map_mr_page(mr: &Mr<Self>, page: DmaPage) -> Result {
        RrxeMr::map_page(mr, page)
    }

    fn dereg_mr(mr: &Mr<Self>) -> Result {
        // The region's device is the one of its PD; the core passes only the region, whose
        // data knows its key.
        RrxeMr::dereg(mr)
    }

    fn rereg_user_mr(mr: &Mr<Self>, change: &MrRereg<'_, Self>, _ctx: &MaySleep<'_>) -> Result {
        RrxeMr::rereg(mr, change)
    }

    fn advise_mr(
        pd: &Pd<Self>,
        advice: MrAdvice,
        _flush: bool,
        sges: &[Sge],
        ctx: &MaySleep<'_>,
    ) -> Result {
        RrxeMr::advise(pd, advice, sges, ctx)
    }

    fn alloc_mw(_dev: &Device<Self>, init: &MwInit<'_, Self>) -> Result<(u32, RrxeMw)> {
        RrxeMw::alloc(init)
    }

    fn dealloc_mw(mw: &Mw<Self>) -> Result {
        RrxeMw::dealloc(mw);
        Ok(())
    }
}
