// SPDX-License-Identifier: GPL-2.0

//! The operations of an RDMA driver.
//!
//! [`Driver`] is the `#[vtable]` trait a driver implements: its per-object data types, its
//! identity, and the device, port, user context, protection domain, completion queue, queue
//! pair, shared receive queue, memory region, address handle and work request operations
//! that the RDMA core calls
//! through the `struct ib_device_ops` table built in the `vtable` module. Operations with a
//! default body are optional: their entries in that table are only set when the driver
//! implements them.

use super::{
    Device, DeviceAttrs, DeviceModify, DriverId, LinkLayer, Mad, MadResult, PortAttrs,
    PortImmutable, PortModify, PortNum, StatDesc, UContext, UData,
};
use crate::{
    prelude::*,
    rdma::{
        ah::{Ah, AhInit},
        cq::{Cq, CqInit, NotifyFlags},
        mr::{AccessFlags, DmaPage, Mr, MrKeys, MrRereg, MrSg, MrType, UserMrReq},
        mw::{Mw, MwInit},
        pd::Pd,
        qp::{AhAttr, Qp, QpAttrs, QpInit, QpQuery},
        srq::{Srq, SrqAttrMask, SrqAttrs, SrqInit},
        usecnt::Dying,
        wr::{RecvWr, SendWr, Wc},
        MaySleep,
    },
    sync::Arc,
};

/// The operations of an RDMA driver, called by the RDMA core (`struct ib_device_ops`).
///
/// Operations are only called while the device is registered, so [`Device::data`] is
/// available in all of them.
#[vtable]
pub trait Driver: Sized + Send + Sync + 'static {
    /// Driver data of each device, dropped when the core deallocates the device.
    type Data: Send + Sync;

    /// Driver data of each user context.
    type UContext: Send + Sync;

    /// Driver data of each protection domain.
    type Pd: Send + Sync;

    /// Driver data of each completion queue.
    type Cq: Send + Sync;

    /// Driver data of each queue pair.
    type Qp: Send + Sync;

    /// Driver data of each address handle.
    type Ah: Send + Sync;

    /// Driver data of each memory region.
    type Mr: Send + Sync;

    /// Driver data of each shared receive queue (unused without [`Driver::create_srq`]).
    type Srq: Send + Sync;

    /// Driver data of each memory window (unused without [`Driver::alloc_mw`]).
    type Mw: Send + Sync;

    /// Driver data of each counter of queue pairs (unused without
    /// [`Driver::counter_bind_qp`]): where the events of the QPs bound to it are counted.
    type Counter: Send + Sync;

    /// The driver id reported to userspace.
    const DRIVER_ID: DriverId;

    /// The driver's user ABI version (`uverbs_abi_ver`).
    const UVERBS_ABI_VER: u32;

    /// The port counters [`Driver::hw_stats`] reports, in its order.
    const HW_STATS: &'static [StatDesc] = &[];

    /// Reads the port counters described by [`Driver::HW_STATS`] into `values`.
    fn hw_stats(_dev: &Device<Self>, _port: PortNum, _values: &mut [u64]) {}

    /// Allocates the data of a counter of `port`, when the core binds a first QP to it.
    fn counter_alloc(_dev: &Device<Self>, _port: PortNum) -> Result<Arc<Self::Counter>> {
        Err(EOPNOTSUPP)
    }

    /// Binds `qp` to `counter` (`rdma statistic qp`): until [`Driver::counter_unbind_qp`], the
    /// QP's events are counted in `counter` instead of in its port's counters, as the core
    /// adds every counter to the port's totals. Installs the counter operations (with
    /// [`Driver::hw_stats`] and a counter's values in the same order, [`Driver::HW_STATS`])
    /// when implemented.
    fn counter_bind_qp(_qp: &Qp<Self>, _counter: &Arc<Self::Counter>) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Unbinds `qp` from its counter: its events go back to its port's counters. Called
    /// before the QP is destroyed if it is still bound.
    fn counter_unbind_qp(_qp: &Qp<Self>) {}

    /// Reads a counter's values, in the order of [`Driver::HW_STATS`], into `values`.
    fn counter_stats(_dev: &Device<Self>, _counter: &Self::Counter, _values: &mut [u64]) {}

    /// Whether the devices have rdma_rxe's `parent` sysfs attribute: the name of the network
    /// device of port 1 (`ib_device_get_netdev`), for tools that match soft-RoCE devices to
    /// their netdevices.
    const SHOW_PARENT: bool = false;

    /// Answers a management datagram for `port` (`process_mad`), before the core hands it
    /// to the agents registered for its class: a query of the core itself (the
    /// `ports/<n>/counters/` sysfs files read the Performance Management class through it,
    /// and exist only when this is implemented) or a MAD that arrived on the port's GSI QP,
    /// whose reply the core sends back. A reply is written whole to `reply`. Installs
    /// `process_mad` when implemented.
    fn process_mad(_dev: &Device<Self>, _port: PortNum, _mad: &Mad, _reply: &mut Mad) -> MadResult {
        MadResult::NotMine
    }

    /// Returns the device attributes.
    ///
    /// `udata` is present when userspace asked, with any driver-specific payload.
    fn query_device(dev: &Device<Self>, udata: Option<&UData<Self>>) -> Result<DeviceAttrs>;

    /// Returns the attributes of a port.
    fn query_port(dev: &Device<Self>, port: PortNum) -> Result<PortAttrs>;

    /// Returns the immutable properties of a port; called once during registration.
    fn port_immutable(dev: &Device<Self>, port: PortNum) -> Result<PortImmutable>;

    /// Returns the link layer of a port.
    fn link_layer(dev: &Device<Self>, port: PortNum) -> LinkLayer;

    /// Returns the partition key at `index` of a port's table.
    fn query_pkey(dev: &Device<Self>, port: PortNum, index: u16) -> Result<u16>;

    /// Changes the system image GUID or the node description (`ib_modify_device`; the
    /// `node_desc` sysfs file). The core's other modify bits are refused before the call.
    /// Installs `modify_device` when implemented.
    fn modify_device(_dev: &Device<Self>, _m: &DeviceModify) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Changes a port's capability bits, or resets its counters (`ib_modify_port`; the
    /// connection manager sets `IB_PORT_CM_SUP`). Installs `modify_port` when implemented.
    fn modify_port(_dev: &Device<Self>, _port: PortNum, _m: &PortModify) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Initialises the driver data of a new user context.
    fn alloc_ucontext(
        dev: &Device<Self>,
        udata: Option<&UData<Self>>,
    ) -> impl PinInit<Self::UContext, Error>;

    /// Lets a device be removed while user contexts are open (`disassociate_ucontext`).
    ///
    /// When a device of a driver that implements this is unregistered (netdevice removal,
    /// `rdma link del`, module unload), the core destroys every object of each open context
    /// through the driver's destroy operations, as a process exit would, then calls this for
    /// the context itself; the process's later verbs fail with `EIO`, and its uverbs file no
    /// longer pins the module. Without it, unregistration waits until every process has
    /// closed its file. Implement it (even empty) only if the objects' destroy operations
    /// are all a context needs to let go of the device.
    fn disassociate_ucontext(_ctx: &UContext<Self>) {}

    /// Initialises the driver data of a new protection domain.
    fn alloc_pd(dev: &Device<Self>, udata: Option<&UData<Self>>) -> impl PinInit<Self::Pd, Error>;

    /// Prepares a new completion queue (allocations, the udata response) and returns the
    /// initialiser of its driver data.
    fn create_cq(
        dev: &Device<Self>,
        init: &CqInit<'_, Self>,
    ) -> Result<impl PinInit<Self::Cq, Error>>;

    /// Prepares the destruction of a completion queue; on success its data is dropped next.
    ///
    /// The queue is [`Dying`]: no queue pair uses it, and no
    /// [`UseRef`](crate::rdma::usecnt::UseRef) can be taken on it any more.
    fn destroy_cq(cq: &Dying<'_, Cq<Self>>) -> Result;

    /// Arms the completion event of a completion queue; returns `true` if `flags` asked to
    /// report missed events and completions are already queued.
    ///
    /// # Context
    ///
    /// May be called in atomic context.
    fn req_notify_cq(cq: &Cq<Self>, flags: NotifyFlags) -> Result<bool>;

    /// Resizes a user completion queue to at least `cqe` entries.
    fn resize_cq(cq: &Cq<Self>, cqe: u32, udata: Option<&UData<Self>>) -> Result;

    /// Prepares a new queue pair (checks, queues, QP number, the udata response) and returns
    /// the initialiser of its driver data.
    fn create_qp(
        dev: &Device<Self>,
        pd: &Pd<Self>,
        init: &QpInit<'_, Self>,
    ) -> Result<impl PinInit<Self::Qp, Error>>;

    /// Applies the attributes of `attrs.mask` (state transitions included).
    fn modify_qp(qp: &Qp<Self>, attrs: &QpAttrs, udata: Option<&UData<Self>>) -> Result;

    /// Returns the current attributes, the capabilities and whether all send WQEs are
    /// signalled.
    fn query_qp(qp: &Qp<Self>) -> Result<QpQuery>;

    /// Prepares the destruction of a queue pair; on success its data is dropped next.
    fn destroy_qp(qp: &Qp<Self>) -> Result;

    /// Attaches a UD queue pair to the multicast group `gid` (`ib_attach_mcast`; the core
    /// checked that `gid` is a multicast GID and the QP a UD one). Installs
    /// `attach_mcast` and `detach_mcast` when implemented.
    ///
    /// # Context
    ///
    /// Process context.
    fn attach_mcast(_qp: &Qp<Self>, _gid: &[u8; 16]) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Detaches a queue pair from the multicast group `gid` (`ib_detach_mcast`).
    ///
    /// # Context
    ///
    /// Process context.
    fn detach_mcast(_qp: &Qp<Self>, _gid: &[u8; 16]) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Creates a shared receive queue (checks, the queue, the udata response) and returns
    /// its driver data.
    ///
    /// Implement it together with [`Driver::modify_srq`], [`Driver::query_srq`],
    /// [`Driver::destroy_srq`] and [`Driver::post_srq_recv_wr`]: the five operations are
    /// installed together.
    fn create_srq(
        _dev: &Device<Self>,
        _pd: &Pd<Self>,
        _init: &SrqInit<'_, Self>,
    ) -> Result<Self::Srq> {
        Err(EOPNOTSUPP)
    }

    /// Changes the attributes of `mask`: the limit (`SrqAttr::Limit`), the size
    /// (`SrqAttr::MaxWr`).
    fn modify_srq(
        _srq: &Srq<Self>,
        _attrs: &SrqAttrs,
        _mask: SrqAttrMask,
        _udata: Option<&UData<Self>>,
    ) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Returns the sizes and the limit of a shared receive queue.
    fn query_srq(_srq: &Srq<Self>) -> Result<SrqAttrs> {
        Err(EOPNOTSUPP)
    }

    /// Prepares the destruction of a shared receive queue (no queue pair uses it any more);
    /// on success its data is dropped next.
    fn destroy_srq(_srq: &Dying<'_, Srq<Self>>) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Posts one receive work request of a kernel consumer to a shared receive queue.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    fn post_srq_recv_wr(_srq: &Srq<Self>, _wr: &RecvWr<'_>) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Registers user memory; returns the region's keys and the initialiser of its data.
    fn reg_user_mr(
        pd: &Pd<Self>,
        req: &UserMrReq,
        udata: Option<&UData<Self>>,
        ctx: &MaySleep<'_>,
    ) -> Result<(MrKeys, impl PinInit<Self::Mr, Error>)>;

    /// Creates the DMA memory region of a kernel consumer's PD (`ib_get_dma_mr`): all of
    /// kernel memory through DMA addresses, with `access` rights; returns its keys and the
    /// initialiser of its data.
    fn get_dma_mr(
        pd: &Pd<Self>,
        access: AccessFlags,
    ) -> Result<(MrKeys, impl PinInit<Self::Mr, Error>)>;

    /// Allocates a fast-registration region for a kernel consumer (`ib_alloc_mr`) of at
    /// most `max_num_sg` pages; returns its keys and the initialiser of its data.
    ///
    /// Implement it together with [`Driver::map_mr_sg`] and [`Driver::map_mr_page`].
    fn alloc_mr(_pd: &Pd<Self>, _mr_type: MrType, _max_num_sg: u32) -> Result<(MrKeys, Self::Mr)> {
        Err(EOPNOTSUPP)
    }

    /// Maps a kernel consumer's DMA-mapped scatterlist into a fast-registration region
    /// (`ib_map_mr_sg`), normally by [`MrSg::to_pages`]; returns the number of entries
    /// mapped.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    fn map_mr_sg(_mr: &Mr<Self>, _sg: MrSg<'_>) -> Result<usize> {
        Err(EOPNOTSUPP)
    }

    /// Takes the next page of a mapping that [`MrSg::to_pages`] is making; an error stops
    /// the mapping there. The page is the driver's way to the memory (a virtual-DMA device
    /// copies it itself).
    fn map_mr_page(_mr: &Mr<Self>, _page: DmaPage) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Prepares the deregistration of a memory region; on success its data is dropped next.
    fn dereg_mr(mr: &Mr<Self>) -> Result;

    /// Acts on advice about memory regions of `pd` (`ibv_advise_mr`): the pages of the
    /// on-demand paging regions `sges` name (by lkey) are to be prefetched. With `flush`
    /// (`IB_UVERBS_ADVISE_MR_FLAG_FLUSH`) the caller waits until they are; without, the
    /// prefetch is best effort. Installs `advise_mr` when implemented.
    ///
    /// # Context
    ///
    /// Process context of the caller; may sleep.
    fn advise_mr(
        _pd: &Pd<Self>,
        _advice: crate::rdma::odp::MrAdvice,
        _flush: bool,
        _sges: &[crate::rdma::wr::Sge],
        _ctx: &MaySleep<'_>,
    ) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Re-registers a user memory region in place (`ibv_rereg_mr`): it keeps its keys; the
    /// core updates its PD and range in the `ib_mr` after success. Installs `rereg_user_mr`
    /// when implemented.
    ///
    /// # Context
    ///
    /// Process context.
    fn rereg_user_mr(_mr: &Mr<Self>, _change: &MrRereg<'_, Self>, _ctx: &MaySleep<'_>) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Allocates a memory window (user contexts only); returns its rkey and its driver
    /// data. Installs `alloc_mw` and `dealloc_mw` when implemented.
    ///
    /// # Context
    ///
    /// Process context.
    fn alloc_mw(_dev: &Device<Self>, _init: &MwInit<'_, Self>) -> Result<(u32, Self::Mw)> {
        Err(EOPNOTSUPP)
    }

    /// Deallocates a memory window; on success its data is dropped next.
    ///
    /// # Context
    ///
    /// Process context.
    fn dealloc_mw(_mw: &Mw<Self>) -> Result {
        Err(EOPNOTSUPP)
    }

    /// Prepares a new address handle (kernel or user) and returns the initialiser of its
    /// driver data.
    ///
    /// # Context
    ///
    /// May be atomic unless `init.sleepable`.
    fn create_ah(
        dev: &Device<Self>,
        init: &AhInit<'_, Self>,
    ) -> Result<impl PinInit<Self::Ah, Error>>;

    /// Destroys an address handle; its driver data is dropped afterwards.
    fn destroy_ah(ah: &Ah<Self>) -> Result;

    /// Returns an address handle's address vector (`rdma_query_ah`). Installs `query_ah`
    /// when implemented.
    fn query_ah(_ah: &Ah<Self>) -> Result<AhAttr> {
        Err(EOPNOTSUPP)
    }

    /// Changes an address handle's address vector (`rdma_modify_ah`; the core resolved the
    /// new one as for a new AH). Installs `modify_ah` when implemented.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    fn modify_ah(_ah: &Ah<Self>, _attr: &AhAttr) -> Result {
        Err(EOPNOTSUPP)
    }

    /// The send doorbell: new WQEs are in the queue pair's send queue (put there by the user
    /// provider, or by [`Driver::post_send_wr`] for a kernel consumer).
    ///
    /// # Context
    ///
    /// Process context of the posting thread, or any context but hard interrupts for a
    /// kernel consumer.
    fn send_doorbell(qp: &Qp<Self>) -> Result;

    /// Queues one send work request of a kernel consumer; [`Driver::send_doorbell`] follows
    /// the chain.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    fn post_send_wr(qp: &Qp<Self>, wr: &SendWr<'_, Self>) -> Result;

    /// Posts one receive work request of a kernel consumer.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    fn post_recv_wr(qp: &Qp<Self>, wr: &RecvWr<'_>) -> Result;

    /// Takes the oldest completion of a kernel consumer's completion queue.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    fn poll_cq(cq: &Cq<Self>) -> Option<Wc>;
}
