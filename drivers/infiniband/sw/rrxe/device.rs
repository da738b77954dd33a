// SPDX-License-Identifier: GPL-2.0

//! Device creation and the device-level verbs.

use crate::ah::{RrxeAh, MAX_AH};
use crate::cq::RrxeCq;
use crate::engine::QpShared;
use crate::mr::{MrInner, RrxeMr};
use crate::net::{Stats, HW_STATS};
use crate::params::{self, Counter};
use crate::pd::RrxePd;
use crate::qp::RrxeQp;
use kernel::prelude::*;
use kernel::rdma::BhGuard;
use kernel::rdma::{
    ah::{Ah, AhInit},
    mr::{random_key_byte, Mr, MrKeys, UserMrReq},
    pd::Pd,
    qp::{AhAttr, Qp, QpAttrs, QpCaps, QpInit},
    wr::{RecvWr, SendWr, Wc},
};
use kernel::rdma::{
    bhwork::{impl_has_bh_work, BhWork, BhWorkCallback},
    net::{PacketQueue, TunnelRx, TxBuf},
};
use kernel::rdma::{
    cq::{Cq, CqInit, NotifyFlags},
    device::{
        core_cap, kernel_cap, port_cap, AtomicCap, Device, DeviceAttrs, DeviceParams, Driver,
        DriverId, LinkLayer, Mtu, PhysState, PortAttrs, PortImmutable, PortNum, PortState,
        StatDesc, UData, UnregisteredDevice, MGMT_MAD_SIZE,
    },
    netdev::NetDevice,
};
use kernel::sync::aref::ARef;
use kernel::sync::{
    atomic::{ordering::Relaxed, Atomic},
    Arc, Mutex, SpinLock,
};
use kernel::xarray::{AllocKind, XArray};
use kernel::{new_mutex, new_spinlock};

/// The rrxe driver.
pub(crate) struct Rrxe;

/// Per-device state.
#[pin_data]
pub(crate) struct RrxeDev {
    /// System image GUID (host byte order): the modified EUI-64 of the netdevice's MAC.
    guid: u64,
    /// Protection domains in use.
    pds: Arc<Counter>,
    /// Completion queues in use.
    cqs: Arc<Counter>,
    /// Queue pairs in use.
    pub(crate) qps: Arc<Counter>,
    /// QP numbers in use (the value is the number itself). Allocation and release take
    /// `qpn_lock`, because storing may drop the array's own lock to allocate.
    #[pin]
    qpns: XArray<KBox<u32>>,
    #[pin]
    qpn_lock: Mutex<()>,
    /// Where the search for a free QP number starts.
    next_qpn: Atomic<u32>,
    /// The data path's QPs by number. Every access takes the array's lock with bottom
    /// halves disabled; a QP is taken out before it is destroyed.
    #[pin]
    qps_by_num: XArray<Arc<QpShared>>,
    /// Memory regions in use.
    pub(crate) mrs_used: Arc<Counter>,
    /// Serialises key allocation and release.
    #[pin]
    mr_lock: Mutex<()>,
    /// Where the search for a free key index starts.
    next_mr: Atomic<u32>,
    /// Protection domain identities handed out so far (64 bits: at one per nanosecond it
    /// would take 584 years to wrap, so an identity is never handed out twice).
    next_pd: Atomic<u64>,
    /// Where the search for a free AH number starts.
    next_ah: Atomic<u32>,
    /// What the data path of every QP shares: keys, counters.
    pub(crate) shared: Arc<DevShared>,
}

/// The part of a device that its QPs' data path uses, shared with them: it lives as long as
/// the last QP, whose timers may run after the device is being torn down.
#[pin_data]
pub(crate) struct DevShared {
    /// Local delivery: packets a QP sent to a QP of this device (to this host's own
    /// address), handed to the receive path from softirq work rather than inside the
    /// sender's locks. Declared first: dropping it waits for the work.
    #[pin]
    lo_work: BhWork<DevShared>,
    #[pin]
    lo_queue: PacketQueue,
    /// The netdevice (local deliveries are attributed to it).
    ndev: ARef<NetDevice>,
    /// Memory regions by key index (`key >> 8`). Lookups happen in softirq or with bottom
    /// halves disabled, and the region found is only used there: a deregistration takes the
    /// region out, then waits for an RCU grace period before the memory is unpinned.
    #[pin]
    mrs: XArray<Arc<MrInner>>,
    /// Address handles by number (the address vector and the AH's PD); lookups (UD sends)
    /// happen with bottom halves disabled.
    #[pin]
    ah_nums: XArray<KBox<(AhAttr, u64)>>,
    /// Port counters.
    pub(crate) stats: Stats,
    /// Makes atomics from the wire atomic with respect to each other (IBV_ATOMIC_HCA).
    #[pin]
    pub(crate) atomic_lock: SpinLock<()>,
}

impl_has_bh_work! {
    impl HasBhWork for DevShared { self.lo_work }
}

/// Loopback packets handed to the receive path per run of the loopback work (its answers
/// may queue more: the work re-queues itself instead of looping, as NAPI does).
const LO_BUDGET: usize = 64;

/// Loopback packets that may wait, as a netdevice's transmit queue (`txqueuelen`): beyond,
/// a local transmission fails with `ENOBUFS` (a full queue, to the sender).
const LO_QUEUE_MAX: usize = 1000;

impl BhWorkCallback for DevShared {
    fn work_run(this: &Self) {
        for _ in 0..LO_BUDGET {
            let Some(pkt) = this.lo_queue.pop() else {
                return;
            };
            <Rrxe as TunnelRx>::receive(pkt);
        }
        if !this.lo_queue.is_empty() {
            this.lo_work.queue();
        }
    }
}

impl DevShared {
    /// Delivers a datagram built for this host's own address to the receive path; `ENOBUFS`
    /// if too many wait already (the datagram is dropped).
    pub(crate) fn deliver_locally(&self, buf: TxBuf) -> Result {
        if self.lo_queue.len() >= LO_QUEUE_MAX {
            return Err(ENOBUFS);
        }
        self.lo_queue.push(buf.into_rx(&self.ndev));
        self.lo_work.queue();
        Ok(())
    }

    /// Returns the address vector of AH number `n`, if that AH belongs to protection domain
    /// `pd_id` (a UD QP may only send through the address handles of its own PD: the number
    /// of another process's AH, or of the kernel's, names nothing).
    ///
    /// # Context
    ///
    /// Bottom halves disabled (the doorbell).
    pub(crate) fn ah(&self, n: u32, pd_id: u64) -> Option<AhAttr> {
        let xa = self.ah_nums.lock();
        xa.get(n as usize).filter(|e| e.1 == pd_id).map(|e| e.0)
    }

    /// Resolves a memory key (lkey or rkey) to its region.
    ///
    /// # Context
    ///
    /// Softirq, or bottom halves disabled; the returned reference must be dropped before
    /// leaving that section.
    pub(crate) fn mr(&self, key: u32) -> Option<Arc<MrInner>> {
        let xa = self.mrs.lock();
        let mr = xa.get((key >> 8) as usize)?;
        (mr.key == key).then(|| mr.into())
    }
}

impl RrxeDev {
    /// Takes QP number 1 for the device's GSI QP (the MAD layer's QP1).
    pub(crate) fn alloc_gsi_qpn(&self) -> Result<u32> {
        let _guard = self.qpn_lock.lock();
        let entry = KBox::new(1u32, GFP_KERNEL)?;
        let _bh = BhGuard::new();
        let mut xa = self.qpns.lock();
        if xa.get(1).is_some() {
            return Err(EBUSY);
        }
        xa.store(1, entry, GFP_ATOMIC)?;
        Ok(1)
    }

    /// Allocates an unused QP number (24 bits, at least [`params::MIN_QPN`]).
    pub(crate) fn alloc_qpn(&self) -> Result<u32> {
        let _guard = self.qpn_lock.lock();
        let span = params::QPN_MASK - params::MIN_QPN + 1;
        for _ in 0..span {
            let n = self.next_qpn.fetch_add(1, Relaxed) % span + params::MIN_QPN;
            // Allocate before disabling bottom halves and taking the array's spinlock.
            let entry = KBox::new(n, GFP_KERNEL)?;
            // The receive path looks QP numbers up in softirq.
            let _bh = BhGuard::new();
            let mut xa = self.qpns.lock();
            if xa.get(n as usize).is_none() {
                xa.store(n as usize, entry, GFP_ATOMIC)?;
                return Ok(n);
            }
        }
        Err(ENOSPC)
    }

    /// Registers a memory region under a new key: `build` makes the region for the key,
    /// which then resolves through the device's table until [`Self::free_mr_index`].
    pub(crate) fn insert_mr(
        &self,
        build: impl FnOnce(u32) -> Result<Arc<MrInner>>,
    ) -> Result<Arc<MrInner>> {
        // `mr_lock` keeps a free index free between the check and the store.
        let _guard = self.mr_lock.lock();
        let span = params::MAX_MR_INDEX;
        for _ in 0..span {
            let n = self.next_mr.fetch_add(1, Relaxed) % span + 1;
            let free = {
                let _bh = BhGuard::new();
                // A named guard: a temporary in the block's tail would outlive `_bh`.
                let xa = self.shared.mrs.lock();
                xa.get(n as usize).is_none()
            };
            if !free {
                continue;
            }
            let mr = build((n << 8) | u32::from(random_key_byte()))?;
            let _bh = BhGuard::new();
            self.shared
                .mrs
                .lock()
                .store(n as usize, mr.clone(), GFP_ATOMIC)?;
            return Ok(mr);
        }
        Err(ENOSPC)
    }

    /// Stops a key index from resolving and frees it.
    pub(crate) fn free_mr_index(&self, index: u32) {
        let _guard = self.mr_lock.lock();
        let old = {
            let _bh = BhGuard::new();
            let mut xa = self.shared.mrs.lock();
            xa.remove(index as usize)
        };
        if old.is_some() {
            // The data path may still be copying to or from the region on another CPU, in a
            // section with bottom halves disabled: wait for it before unpinning.
            kernel::rdma::synchronize_rcu();
        }
        // Dropping the region unpins memory, which sleeps: outside the BH section.
        drop(old);
    }

    /// Numbers an address handle (1..=32767). Does not sleep unless `sleepable` (kernel
    /// consumers create AHs in atomic context): the free number is found and taken under the
    /// array's lock, storing without sleeping.
    pub(crate) fn alloc_ah_num(&self, attr: &AhAttr, pd_id: u64, sleepable: bool) -> Result<u32> {
        let flags = if sleepable { GFP_KERNEL } else { GFP_ATOMIC };
        let mut entry = Some(KBox::new((*attr, pd_id), flags)?);
        let _bh = BhGuard::new();
        let mut xa = self.shared.ah_nums.lock();
        for _ in 0..MAX_AH {
            let n = self.next_ah.fetch_add(1, Relaxed) % MAX_AH + 1;
            if xa.get(n as usize).is_none() {
                if let Some(e) = entry.take() {
                    xa.store(n as usize, e, GFP_ATOMIC)?;
                    return Ok(n);
                }
            }
        }
        Err(ENOMEM)
    }

    /// Releases an address handle number.
    pub(crate) fn free_ah_num(&self, n: u32) {
        let old = {
            let _bh = BhGuard::new();
            let mut xa = self.shared.ah_nums.lock();
            xa.remove(n as usize)
        };
        drop(old);
    }

    /// Returns a new protection domain identity.
    pub(crate) fn new_pd_id(&self) -> u64 {
        self.next_pd.fetch_add(1, Relaxed)
    }

    /// Makes a QP reachable by the receive path.
    pub(crate) fn insert_qp(&self, qp: Arc<QpShared>) -> Result {
        let qpn = qp.qpn() as usize;
        let _bh = BhGuard::new();
        self.qps_by_num.lock().store(qpn, qp, GFP_ATOMIC)?;
        Ok(())
    }

    /// Takes a QP out of the receive path's reach; once this returns, no new packet finds it
    /// (packets being processed may still hold it: see [`QpShared::shutdown`]).
    pub(crate) fn remove_qp(&self, qpn: u32) -> Option<Arc<QpShared>> {
        let _bh = BhGuard::new();
        let mut xa = self.qps_by_num.lock();
        xa.remove(qpn as usize)
    }

    /// Returns the QP with number `qpn`, if it takes packets.
    ///
    /// # Context
    ///
    /// Softirq (the receive path), or process context with bottom halves disabled; the QP
    /// must be dropped before leaving that section.
    pub(crate) fn qp(&self, qpn: u32) -> Option<Arc<QpShared>> {
        let xa = self.qps_by_num.lock();
        xa.get(qpn as usize).map(|q| q.into())
    }

    /// Releases a QP number.
    pub(crate) fn free_qpn(&self, qpn: u32) {
        let _guard = self.qpn_lock.lock();
        let old = {
            let _bh = BhGuard::new();
            let mut xa = self.qpns.lock();
            xa.remove(qpn as usize)
        };
        drop(old);
    }
}

/// Per-user-context state.
pub(crate) struct RrxeUContext;

/// The only port of an rrxe device.
const PORT: PortNum = 1;

/// The rxe user ABI version (`RXE_UVERBS_ABI_VERSION`).
const RXE_UVERBS_ABI_VERSION: u32 = 2;

/// Legacy uverbs write commands rdma-core's rxe provider uses beyond the core's defaults:
/// the send doorbell (`IB_USER_VERBS_CMD_POST_SEND`) and `ibv_req_notify_cq`
/// (`IB_USER_VERBS_CMD_REQ_NOTIFY_CQ`).
const EXTRA_UVERBS_CMDS: [u32; 2] = [28, 23];

/// Creates and registers the device `name` on `ndev` (`rdma link add`).
pub(crate) fn add(name: &CStr, ndev: &NetDevice) -> Result {
    if ndev.is_vlan() {
        pr_err!("rrxe devices are created on top of a real device only\n");
        return Err(EPERM);
    }
    if Device::<Rrxe>::get_by_netdev(ndev).is_some() {
        pr_err!(
            "{} already has an rrxe device\n",
            ndev.name().to_str().unwrap_or("?")
        );
        return Err(EEXIST);
    }
    let Some(mac) = ndev.eth_addr() else {
        pr_err!(
            "{} has no Ethernet address\n",
            ndev.name().to_str().unwrap_or("?")
        );
        return Err(EINVAL);
    };
    let guid = params::guid_from_mac(mac);
    let dev = UnregisteredDevice::<Rrxe>::new(
        &DeviceParams {
            node_guid: guid,
            node_desc: b"rrxe",
            phys_port_cnt: 1,
            num_comp_vectors: 1,
            uverbs_cmds: &EXTRA_UVERBS_CMDS,
            name_assigned_by_user: true,
        },
        try_pin_init!(RrxeDev {
            guid,
            pds: Counter::new(params::MAX_PD)?,
            cqs: Counter::new(params::MAX_CQ)?,
            qps: Counter::new(params::MAX_QP)?,
            qpns <- XArray::new(AllocKind::Alloc),
            qpn_lock <- new_mutex!(()),
            next_qpn: Atomic::new(0),
            qps_by_num <- XArray::new(AllocKind::Alloc),
            mrs_used: Counter::new(params::MAX_MR)?,
            mr_lock <- new_mutex!(()),
            next_mr: Atomic::new(0),
            next_pd: Atomic::new(1),
            next_ah: Atomic::new(0),
            shared: Arc::pin_init(
                try_pin_init!(DevShared {
                    lo_work <- BhWork::new(c"rrxe_loopback", kernel::static_lock_class!()),
                    lo_queue <- PacketQueue::new(),
                    ndev: ndev.into(),
                    mrs <- XArray::new(AllocKind::Alloc),
                    ah_nums <- XArray::new(AllocKind::Alloc),
                    stats: Stats::new(),
                    atomic_lock <- new_spinlock!((), "rrxe_atomic"),
                }),
                GFP_KERNEL,
            )?,
        }),
    )?;
    dev.register(name, ndev, PORT)?;
    pr_info!(
        "{}: added on {}\n",
        name.to_str().unwrap_or("?"),
        ndev.name().to_str().unwrap_or("?")
    );
    Ok(())
}

fn check_port(port: PortNum) -> Result {
    if port == PORT {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

#[vtable]
impl Driver for Rrxe {
    type Data = RrxeDev;
    type UContext = RrxeUContext;
    type Pd = RrxePd;
    type Cq = RrxeCq;
    type Qp = RrxeQp;
    type Mr = RrxeMr;
    type Ah = RrxeAh;

    const DRIVER_ID: DriverId = DriverId::RXE;
    const UVERBS_ABI_VER: u32 = RXE_UVERBS_ABI_VERSION;
    const HW_STATS: &'static [StatDesc] = &HW_STATS;

    fn hw_stats(dev: &Device<Self>, _port: PortNum, values: &mut [u64]) {
        dev.data().shared.stats.read(values);
    }

    fn query_device(dev: &Device<Self>, udata: Option<&UData>) -> Result<DeviceAttrs> {
        // The rxe ABI has no driver-specific query payload.
        if udata.is_some_and(|u| u.in_len() != 0 || u.out_len() != 0) {
            return Err(EINVAL);
        }
        // Only what is implemented is advertised: no SRQs, memory windows or fast
        // registration yet.
        Ok(DeviceAttrs {
            sys_image_guid: dev.data().guid,
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
            max_ah: MAX_AH,
            max_qp_rd_atom: params::MAX_QP_RD_ATOM,
            max_qp_init_rd_atom: params::MAX_QP_RD_ATOM,
            max_mr: params::MAX_MR,
            max_mr_size: u64::MAX,
            page_size_cap: 0xffff_f000,
            max_pd: params::MAX_PD,
            max_cq: params::MAX_CQ,
            max_cqe: params::MAX_CQE,
            vendor_id: params::VENDOR_ID,
            kernel_cap_flags: kernel_cap::ALLOW_USER_UNREG | kernel_cap::LOCAL_DMA_LKEY,
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
            port_cap_flags: port_cap::CM_SUP,
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

    fn alloc_ucontext(
        _dev: &Device<Self>,
        _udata: Option<&UData>,
    ) -> impl PinInit<RrxeUContext, Error> {
        // The rxe ABI passes no data with the context; librxe sends none and reads none.
        Ok::<_, Error>(RrxeUContext)
    }

    fn alloc_pd(dev: &Device<Self>, _udata: Option<&UData>) -> impl PinInit<RrxePd, Error> {
        let data = dev.data();
        data.pds
            .take()
            .map(|slot| RrxePd::new(slot, data.new_pd_id()))
    }

    fn create_cq(
        dev: &Device<Self>,
        init: &CqInit<'_, Self>,
    ) -> Result<impl PinInit<RrxeCq, Error>> {
        RrxeCq::new(init, dev.data().cqs.take()?)
    }

    fn destroy_cq(_cq: &Cq<Self>) -> Result {
        // The core only destroys CQs that no QP uses; the data drops next.
        Ok(())
    }

    fn req_notify_cq(cq: &Cq<Self>, flags: NotifyFlags) -> Result<bool> {
        cq.data().req_notify(flags)
    }

    fn resize_cq(cq: &Cq<Self>, cqe: u32, udata: Option<&UData>) -> Result {
        RrxeCq::resize(cq, cqe, udata)
    }

    fn create_qp(
        dev: &Device<Self>,
        pd: &Pd<Self>,
        init: &QpInit<'_, Self>,
    ) -> Result<impl PinInit<RrxeQp, Error>> {
        RrxeQp::new(dev, pd, init)
    }

    fn modify_qp(qp: &Qp<Self>, attrs: &QpAttrs, _udata: Option<&UData>) -> Result {
        RrxeQp::modify(qp, attrs)
    }

    fn query_qp(qp: &Qp<Self>) -> Result<(QpAttrs, QpCaps, bool)> {
        Ok(RrxeQp::query(qp))
    }

    fn destroy_qp(qp: &Qp<Self>) -> Result {
        RrxeQp::destroy(qp);
        Ok(())
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
        _udata: Option<&UData>,
    ) -> Result<(MrKeys, impl PinInit<RrxeMr, Error>)> {
        let (keys, mr) = RrxeMr::reg_user(pd, req)?;
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

    fn get_dma_mr(pd: &Pd<Self>, access: u32) -> Result<(MrKeys, impl PinInit<RrxeMr, Error>)> {
        let (keys, mr) = RrxeMr::dma(pd, access)?;
        Ok((keys, Ok::<_, Error>(mr)))
    }

    fn dereg_mr(mr: &Mr<Self>) -> Result {
        // The region's device is the one of its PD; the core passes only the region, whose
        // data knows its key.
        RrxeMr::dereg(mr, mr.device().data());
        Ok(())
    }
}
