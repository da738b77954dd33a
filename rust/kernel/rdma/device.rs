// SPDX-License-Identifier: GPL-2.0

//! RDMA devices.
//!
//! An RDMA device is a `struct ib_device` that the RDMA core allocates with a size given by
//! the driver ([`Device<T>`] embeds it at offset 0, followed by the driver's data), that the
//! driver registers, and that the core unregisters and frees. Its lifetime has two counts:
//!
//! - the *registration* count (`ib_device_try_get()` / `ib_device_put()`): while it is held,
//!   or while the core calls one of the device's operations, the driver data is alive;
//!   [`DeviceRef`] holds one;
//! - the *memory* count (`get_device()` / `put_device()` on the embedded `struct device`),
//!   which keeps only the memory alive. It is not exposed.
//!
//! Unregistration (by `rdma link del`, by the driver on netdevice removal with
//! [`Device::unregister_queued`], or at module unload by [`DriverRegistration`]) ends with the
//! core calling `dealloc_driver`, which drops the driver data. The core frees the memory later.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    ah::{self, Ah, AhInit},
    cq::{Cq, CqInit, NotifyFlags},
    mmap,
    mr::{self, Mr, MrKeys, UserMrReq},
    netdev::NetDevice,
    pd::Pd,
    qp::{self, Qp, QpAttrs, QpCaps, QpInit},
    wr::{self, RecvWr, SendWr, Wc},
};
use crate::{
    alloc::allocator::Kmalloc,
    bindings,
    container_of,
    error::{from_result, to_result},
    prelude::*,
    str::CStrExt,
    sync::aref::ARef,
    types::Opaque, //
};
use core::{alloc::Layout, marker::PhantomData, ops::Deref, ptr::NonNull};

/// Number of a port. Ports are numbered from 1.
pub type PortNum = u32;

/// Identity a driver reports to userspace (`enum rdma_driver_id`), used by rdma-core to pick
/// the provider library and checked by the core on every uverbs ioctl.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DriverId(bindings::rdma_driver_id);

impl DriverId {
    /// The soft-RoCE driver id, `RDMA_DRIVER_RXE`: rdma-core's rxe provider binds to it.
    pub const RXE: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_RXE);
}

/// InfiniBand path MTU (`enum ib_mtu`).
#[repr(u32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mtu {
    /// 256 bytes.
    Mtu256 = bindings::ib_mtu_IB_MTU_256,
    /// 512 bytes.
    Mtu512 = bindings::ib_mtu_IB_MTU_512,
    /// 1024 bytes.
    Mtu1024 = bindings::ib_mtu_IB_MTU_1024,
    /// 2048 bytes.
    Mtu2048 = bindings::ib_mtu_IB_MTU_2048,
    /// 4096 bytes.
    Mtu4096 = bindings::ib_mtu_IB_MTU_4096,
}

impl Mtu {
    /// Returns the MTU in bytes.
    pub const fn bytes(self) -> u32 {
        match self {
            Mtu::Mtu256 => 256,
            Mtu::Mtu512 => 512,
            Mtu::Mtu1024 => 1024,
            Mtu::Mtu2048 => 2048,
            Mtu::Mtu4096 => 4096,
        }
    }

    /// Converts an `enum ib_mtu` value.
    pub fn from_raw(v: u32) -> Option<Self> {
        Some(match v {
            bindings::ib_mtu_IB_MTU_256 => Mtu::Mtu256,
            bindings::ib_mtu_IB_MTU_512 => Mtu::Mtu512,
            bindings::ib_mtu_IB_MTU_1024 => Mtu::Mtu1024,
            bindings::ib_mtu_IB_MTU_2048 => Mtu::Mtu2048,
            bindings::ib_mtu_IB_MTU_4096 => Mtu::Mtu4096,
            _ => return None,
        })
    }

    /// Returns the largest MTU not above `bytes`, or `None` if `bytes` is below 256.
    pub const fn floor(bytes: u32) -> Option<Self> {
        Some(if bytes >= 4096 {
            Mtu::Mtu4096
        } else if bytes >= 2048 {
            Mtu::Mtu2048
        } else if bytes >= 1024 {
            Mtu::Mtu1024
        } else if bytes >= 512 {
            Mtu::Mtu512
        } else if bytes >= 256 {
            Mtu::Mtu256
        } else {
            return None;
        })
    }
}

/// Logical port state (`enum ib_port_state`).
#[repr(u32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PortState {
    /// The link is down.
    Down = bindings::ib_port_state_IB_PORT_DOWN,
    /// Initialising.
    Init = bindings::ib_port_state_IB_PORT_INIT,
    /// Armed.
    Armed = bindings::ib_port_state_IB_PORT_ARMED,
    /// Active: packets can flow.
    Active = bindings::ib_port_state_IB_PORT_ACTIVE,
}

/// Physical port state (`enum ib_port_phys_state`).
#[repr(u8)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PhysState {
    /// Sleeping.
    Sleep = 1,
    /// Polling: enabled, but no link.
    Polling = 2,
    /// Disabled by administration.
    Disabled = 3,
    /// Link up.
    LinkUp = 5,
}

/// Link layer of a port (`enum rdma_link_layer`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    /// InfiniBand.
    InfiniBand,
    /// Ethernet (RoCE).
    Ethernet,
}

/// Atomic operation support (`enum ib_atomic_cap`).
#[repr(u32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AtomicCap {
    /// No atomics.
    None = bindings::ib_atomic_cap_IB_ATOMIC_NONE,
    /// Atomic with respect to this HCA only.
    Hca = bindings::ib_atomic_cap_IB_ATOMIC_HCA,
    /// Atomic with respect to the whole system (CPU and HCA).
    Global = bindings::ib_atomic_cap_IB_ATOMIC_GLOB,
}

/// Capability flags of [`DeviceAttrs::kernel_cap_flags`] (`enum ib_kernel_cap_flags`).
pub mod kernel_cap {
    use crate::bindings;

    /// `rdma link del` may unregister the device.
    pub const ALLOW_USER_UNREG: u64 = bindings::ib_kernel_cap_flags_IBK_ALLOW_USER_UNREG as u64;
    /// The device's `local_dma_lkey` (0) names all of kernel memory for kernel consumers.
    pub const LOCAL_DMA_LKEY: u64 = bindings::ib_kernel_cap_flags_IBK_LOCAL_DMA_LKEY as u64;
}

/// Port capability flags of [`PortAttrs::port_cap_flags`].
pub mod port_cap {
    /// The port supports connection management (`IB_PORT_CM_SUP` in `rdma/ib_mad.h`).
    pub const CM_SUP: u32 = 1 << 16;
}

/// Core capability flags of [`PortImmutable::core_cap_flags`].
pub mod core_cap {
    use crate::bindings;

    /// RoCEv2: InfiniBand transport over UDP/IP (`RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP`).
    pub const IBA_ROCE_UDP_ENCAP: u32 = bindings::RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
}

/// The description of a hardware counter (`struct rdma_stat_desc`): its name in
/// `rdma statistic` and `/sys/class/infiniband/*/ports/*/hw_counters/`.
#[repr(transparent)]
pub struct StatDesc(bindings::rdma_stat_desc);

// SAFETY: The description is immutable and points to a static string.
unsafe impl Sync for StatDesc {}

impl StatDesc {
    /// A counter named `name`.
    #[expect(
        clippy::disallowed_methods,
        reason = "`as_char_ptr` is not const; the cast gives the kernel's char"
    )]
    pub const fn new(name: &'static CStr) -> Self {
        Self(bindings::rdma_stat_desc {
            name: name.as_ptr().cast(),
            flags: 0,
            priv_: core::ptr::null(),
        })
    }
}

/// Size of a management datagram (`IB_MGMT_MAD_SIZE`).
pub const MGMT_MAD_SIZE: u32 = 256;

/// Device attributes a driver reports from [`Driver::query_device`] (`struct ib_device_attr`).
///
/// Fields not listed here are reported as zero.
#[derive(Clone, Debug, Default)]
pub struct DeviceAttrs {
    /// Firmware version.
    pub fw_ver: u64,
    /// System image GUID, in host byte order.
    pub sys_image_guid: u64,
    /// Largest memory region.
    pub max_mr_size: u64,
    /// Supported page sizes (bit mask).
    pub page_size_cap: u64,
    /// IEEE vendor id.
    pub vendor_id: u32,
    /// Vendor part id.
    pub vendor_part_id: u32,
    /// Hardware version.
    pub hw_ver: u32,
    /// Maximum number of queue pairs.
    pub max_qp: u32,
    /// Maximum work requests per queue.
    pub max_qp_wr: u32,
    /// `IB_DEVICE_*` capability flags.
    pub device_cap_flags: u64,
    /// `IBK_*` kernel capability flags, see [`kernel_cap`].
    pub kernel_cap_flags: u64,
    /// Maximum scatter/gather entries per send work request.
    pub max_send_sge: u32,
    /// Maximum scatter/gather entries per receive work request.
    pub max_recv_sge: u32,
    /// Maximum scatter/gather entries per RDMA READ.
    pub max_sge_rd: u32,
    /// Maximum number of completion queues.
    pub max_cq: u32,
    /// Maximum entries per completion queue.
    pub max_cqe: u32,
    /// Maximum number of memory regions.
    pub max_mr: u32,
    /// Maximum number of protection domains.
    pub max_pd: u32,
    /// Maximum outstanding RDMA READ/atomic per QP as responder.
    pub max_qp_rd_atom: u32,
    /// Maximum responder resources for RDMA READ/atomic in total.
    pub max_res_rd_atom: u32,
    /// Maximum outstanding RDMA READ/atomic per QP as requester.
    pub max_qp_init_rd_atom: u32,
    /// Atomic support.
    pub atomic_cap: Option<AtomicCap>,
    /// Maximum number of memory windows.
    pub max_mw: u32,
    /// Maximum number of multicast groups.
    pub max_mcast_grp: u32,
    /// Maximum QPs per multicast group.
    pub max_mcast_qp_attach: u32,
    /// Maximum multicast attachments in total.
    pub max_total_mcast_qp_attach: u32,
    /// Maximum number of address handles.
    pub max_ah: u32,
    /// Maximum number of shared receive queues.
    pub max_srq: u32,
    /// Maximum work requests per shared receive queue.
    pub max_srq_wr: u32,
    /// Maximum scatter/gather entries per shared receive queue work request.
    pub max_srq_sge: u32,
    /// Maximum pages of a fast registration.
    pub max_fast_reg_page_list_len: u32,
    /// Number of partition keys.
    pub max_pkeys: u16,
    /// Local CA ACK delay (4.096 us * 2^value).
    pub local_ca_ack_delay: u8,
}

/// Port attributes a driver reports from [`Driver::query_port`] (`struct ib_port_attr`).
#[derive(Clone, Debug)]
pub struct PortAttrs {
    /// Logical state.
    pub state: PortState,
    /// Physical state.
    pub phys_state: PhysState,
    /// Largest MTU the port supports.
    pub max_mtu: Mtu,
    /// MTU in use.
    pub active_mtu: Mtu,
    /// MTU of the underlying link, in bytes.
    pub phys_mtu: u32,
    /// Number of GID table entries.
    pub gid_tbl_len: u32,
    /// `IB_PORT_*` capability flags, see [`port_cap`].
    pub port_cap_flags: u32,
    /// Largest message.
    pub max_msg_sz: u32,
    /// Number of partition key table entries.
    pub pkey_tbl_len: u16,
    /// Number of virtual lanes.
    pub max_vl_num: u8,
    /// Active link width (`IB_WIDTH_*`).
    pub active_width: u8,
    /// Active link speed (`IB_SPEED_*`).
    pub active_speed: u16,
}

/// Port properties that do not change while the device is registered
/// (`struct ib_port_immutable`).
#[derive(Clone, Debug, Default)]
pub struct PortImmutable {
    /// Number of partition key table entries.
    pub pkey_tbl_len: u32,
    /// Number of GID table entries.
    pub gid_tbl_len: u32,
    /// `RDMA_CORE_*` flags, see [`core_cap`].
    pub core_cap_flags: u32,
    /// Largest management datagram.
    pub max_mad_size: u32,
}

/// Driver-specific data passed with a verb (`struct ib_udata`).
///
/// # Invariants
///
/// `self.0` is a valid `struct ib_udata` for the duration of the operation it was passed to.
#[repr(transparent)]
pub struct UData(Opaque<bindings::ib_udata>);

impl UData {
    /// Creates a reference from a pointer the core passed to an operation.
    ///
    /// # Safety
    ///
    /// `ptr` is null or points to a valid `struct ib_udata` that outlives `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_udata) -> Option<&'a Self> {
        // SAFETY: `UData` is a transparent wrapper of `struct ib_udata`, and the caller
        // guarantees that a non-null `ptr` is valid for `'a`.
        unsafe { ptr.cast::<Self>().as_ref() }
    }

    /// Length of the driver-specific input from userspace.
    pub fn in_len(&self) -> usize {
        // SAFETY: By the type invariant, `self.0` is valid.
        unsafe { (*self.0.get()).inlen }
    }

    /// Length of the driver-specific output buffer userspace provided.
    pub fn out_len(&self) -> usize {
        // SAFETY: By the type invariant, `self.0` is valid.
        unsafe { (*self.0.get()).outlen }
    }

    /// Writes the driver's response to userspace.
    ///
    /// Fails with `EINVAL` if userspace provided less room than `data` needs (the response
    /// size is part of the driver's ABI).
    pub fn respond(&self, data: &[u8]) -> Result {
        if self.out_len() < data.len() {
            return Err(EINVAL);
        }
        // SAFETY: By the type invariant, `self.0` is valid.
        let out = unsafe { (*self.0.get()).outbuf };
        crate::uaccess::UserSlice::new(crate::uaccess::UserPtr::from_ptr(out), data.len())
            .writer()
            .write_slice(data)
    }

    /// Returns the user context of the verb this udata came with.
    pub fn ucontext<T: Driver>(&self) -> Option<&UContext<T>> {
        // SAFETY: `self.0` is the driver udata of a verb's attribute bundle; the context, if
        // any, is alive during the verb and belongs to this driver's device.
        unsafe {
            let ctx = bindings::rdma_udata_ucontext(self.0.get());
            ctx.cast::<UContext<T>>().as_ref()
        }
    }
}

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

    /// The driver id reported to userspace.
    const DRIVER_ID: DriverId;

    /// The driver's user ABI version (`uverbs_abi_ver`).
    const UVERBS_ABI_VER: u32;

    /// The port counters [`Driver::hw_stats`] reports, in its order.
    const HW_STATS: &'static [StatDesc] = &[];

    /// Reads the port counters described by [`Driver::HW_STATS`] into `values`.
    fn hw_stats(_dev: &Device<Self>, _port: PortNum, _values: &mut [u64]) {}

    /// Returns the device attributes.
    ///
    /// `udata` is present when userspace asked, with any driver-specific payload.
    fn query_device(dev: &Device<Self>, udata: Option<&UData>) -> Result<DeviceAttrs>;

    /// Returns the attributes of a port.
    fn query_port(dev: &Device<Self>, port: PortNum) -> Result<PortAttrs>;

    /// Returns the immutable properties of a port; called once during registration.
    fn port_immutable(dev: &Device<Self>, port: PortNum) -> Result<PortImmutable>;

    /// Returns the link layer of a port.
    fn link_layer(dev: &Device<Self>, port: PortNum) -> LinkLayer;

    /// Returns the partition key at `index` of a port's table.
    fn query_pkey(dev: &Device<Self>, port: PortNum, index: u16) -> Result<u16>;

    /// Initialises the driver data of a new user context.
    fn alloc_ucontext(
        dev: &Device<Self>,
        udata: Option<&UData>,
    ) -> impl PinInit<Self::UContext, Error>;

    /// Initialises the driver data of a new protection domain.
    fn alloc_pd(dev: &Device<Self>, udata: Option<&UData>) -> impl PinInit<Self::Pd, Error>;

    /// Prepares a new completion queue (allocations, the udata response) and returns the
    /// initialiser of its driver data.
    fn create_cq(
        dev: &Device<Self>,
        init: &CqInit<'_, Self>,
    ) -> Result<impl PinInit<Self::Cq, Error>>;

    /// Prepares the destruction of a completion queue; on success its data is dropped next.
    fn destroy_cq(cq: &Cq<Self>) -> Result;

    /// Arms the completion event of a completion queue; returns `true` if `flags` asked to
    /// report missed events and completions are already queued.
    ///
    /// # Context
    ///
    /// May be called in atomic context.
    fn req_notify_cq(cq: &Cq<Self>, flags: NotifyFlags) -> Result<bool>;

    /// Resizes a user completion queue to at least `cqe` entries.
    fn resize_cq(cq: &Cq<Self>, cqe: u32, udata: Option<&UData>) -> Result;

    /// Prepares a new queue pair (checks, queues, QP number, the udata response) and returns
    /// the initialiser of its driver data.
    fn create_qp(
        dev: &Device<Self>,
        pd: &Pd<Self>,
        init: &QpInit<'_, Self>,
    ) -> Result<impl PinInit<Self::Qp, Error>>;

    /// Applies the attributes of `attrs.mask` (state transitions included).
    fn modify_qp(qp: &Qp<Self>, attrs: &QpAttrs, udata: Option<&UData>) -> Result;

    /// Returns the current attributes, the capabilities and whether all send WQEs are
    /// signalled.
    fn query_qp(qp: &Qp<Self>) -> Result<(QpAttrs, QpCaps, bool)>;

    /// Prepares the destruction of a queue pair; on success its data is dropped next.
    fn destroy_qp(qp: &Qp<Self>) -> Result;

    /// Registers user memory; returns the region's keys and the initialiser of its data.
    fn reg_user_mr(
        pd: &Pd<Self>,
        req: &UserMrReq,
        udata: Option<&UData>,
    ) -> Result<(MrKeys, impl PinInit<Self::Mr, Error>)>;

    /// Creates the DMA memory region of a kernel consumer's PD (`ib_get_dma_mr`): all of
    /// kernel memory through DMA addresses, with `access` rights; returns its keys and the
    /// initialiser of its data.
    fn get_dma_mr(pd: &Pd<Self>, access: u32) -> Result<(MrKeys, impl PinInit<Self::Mr, Error>)>;

    /// Prepares the deregistration of a memory region; on success its data is dropped next.
    fn dereg_mr(mr: &Mr<Self>) -> Result;

    /// Prepares a new address handle (kernel or user) and returns the initialiser of its
    /// driver data.
    ///
    /// # Context
    ///
    /// May be atomic unless `init.sleepable`.
    fn create_ah(dev: &Device<Self>, init: &AhInit<'_>) -> Result<impl PinInit<Self::Ah, Error>>;

    /// Destroys an address handle; its driver data is dropped afterwards.
    fn destroy_ah(ah: &Ah<Self>) -> Result;

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

/// Pads `size_of::<T>()` to `T`'s alignment, so that kmalloc's alignment guarantee for that
/// size covers `T`.
const fn kmalloc_size<T>() -> usize {
    Layout::new::<T>().pad_to_align().size()
}

/// An RDMA device: the core's `struct ib_device` followed by the driver's data.
///
/// # Invariants
///
/// - `ib` is at offset 0 and was allocated by `_ib_alloc_device()` with the size of `Self`.
/// - `data` is initialised from before the operations table of `T` is installed until the
///   core calls `dealloc_driver`, which drops it. References to a `Device<T>` are only handed
///   out while the device is registered or while the core calls one of its operations, so
///   `data` is initialised wherever a `&Device<T>` exists.
#[repr(C)]
#[pin_data]
pub struct Device<T: Driver> {
    #[pin]
    ib: Opaque<bindings::ib_device>,
    #[pin]
    data: T::Data,
}

// SAFETY: The core serialises nothing on the driver's behalf; `T::Data` is `Send + Sync` and the
// `struct ib_device` fields the abstraction touches are set before registration or protected
// by the core's own locking.
unsafe impl<T: Driver> Send for Device<T> {}
// SAFETY: See the `Send` implementation.
unsafe impl<T: Driver> Sync for Device<T> {}

impl<T: Driver> Device<T> {
    /// Creates a reference from a pointer the core passed to an operation.
    ///
    /// # Safety
    ///
    /// `ptr` is the `ib_device` of a `Device<T>` whose data is initialised for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: By the type invariant `ib` is at offset 0, and the caller guarantees the
        // device and its data are alive for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the raw `struct ib_device`.
    pub fn as_raw(&self) -> *mut bindings::ib_device {
        self.ib.get()
    }

    /// Returns the driver data.
    pub fn data(&self) -> &T::Data {
        &self.data
    }

    /// Returns the device name, e.g. `rrxe0`.
    pub fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array set by the core at registration and only
        // changed under the core's rename lock; it lives as long as `self`.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// Returns the network device bound to `port`, if any.
    pub fn netdev(&self, port: PortNum) -> Option<ARef<NetDevice>> {
        // SAFETY: `self.as_raw()` is a registered device; `ib_device_get_netdev` returns a
        // netdevice with a reference taken by `dev_hold`, or null.
        let ndev = unsafe { bindings::ib_device_get_netdev(self.as_raw(), port) };
        // SAFETY: A non-null `ndev` is valid and its reference is transferred to the `ARef`.
        NonNull::new(ndev).map(|p| unsafe { NetDevice::from_held(p) })
    }

    /// Returns the speed and width of an Ethernet port as `(IB_SPEED_*, IB_WIDTH_*)`.
    pub fn eth_speed(&self, port: PortNum) -> Result<(u16, u8)> {
        let mut speed = 0u16;
        let mut width = 0u8;
        // SAFETY: `self` is a registered device with a netdevice bound to its ports; the
        // out-pointers are valid for writes.
        to_result(unsafe {
            bindings::ib_get_eth_speed(self.as_raw(), port, &mut speed, &mut width)
        })?;
        Ok((speed, width))
    }

    /// Asks the core to unregister the device from a workqueue.
    ///
    /// Usable where synchronous unregistration would deadlock, e.g. from a netdevice notifier.
    /// The device data is dropped once the unregistration has run.
    pub fn unregister_queued(&self) {
        // SAFETY: `self` is a registered device of a driver that uses `dealloc_driver`.
        unsafe { bindings::ib_unregister_device_queued(self.as_raw()) };
    }

    /// Looks up the registered device of this driver bound to `ndev`.
    ///
    /// Devices of other drivers with the same [`DriverId`] are not returned.
    pub fn get_by_netdev(ndev: &NetDevice) -> Option<DeviceRef<T>> {
        // SAFETY: `ndev` is a valid netdevice; the core returns a device with its
        // registration count raised, or null.
        let ib = unsafe { bindings::ib_device_get_by_netdev(ndev.as_raw(), T::DRIVER_ID.0) };
        let ib = NonNull::new(ib)?;
        // Only devices whose operations are ours embed a `Device<T>`. The function address
        // identifies the operations table of `T`.
        // SAFETY: `ib` is registered, so its operations table is initialised and stable.
        let dealloc = unsafe { (*ib.as_ptr()).ops.dealloc_driver };
        let ours = dealloc.map(|f| f as *const c_void)
            == Some(DeviceVTable::<T>::dealloc_driver_callback as *const c_void);
        if !ours {
            // SAFETY: Drops the registration reference taken above.
            unsafe { bindings::ib_device_put(ib.as_ptr()) };
            return None;
        }
        // INVARIANT: `ib` belongs to a registered `Device<T>` and we hold a registration
        // reference.
        Some(DeviceRef(ib.cast(), PhantomData))
    }
}

/// A counted reference to a registered [`Device<T>`].
///
/// # Invariants
///
/// `self.0` is a `Device<T>` whose registration count this object holds one of.
pub struct DeviceRef<T: Driver>(NonNull<Device<T>>, PhantomData<T>);

impl<T: Driver> Deref for DeviceRef<T> {
    type Target = Device<T>;

    fn deref(&self) -> &Device<T> {
        // SAFETY: By the type invariant the device is registered, so its data is alive.
        unsafe { self.0.as_ref() }
    }
}

impl<T: Driver> Drop for DeviceRef<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we hold one registration reference.
        unsafe { bindings::ib_device_put(self.0.as_ptr().cast()) };
    }
}

/// Properties of a device set before its registration.
pub struct DeviceParams<'a> {
    /// Node GUID, in host byte order.
    pub node_guid: u64,
    /// Node description (at most 63 bytes are used).
    pub node_desc: &'a [u8],
    /// Number of ports.
    pub phys_port_cnt: u32,
    /// Number of completion vectors.
    pub num_comp_vectors: u32,
    /// Legacy uverbs write commands to enable in addition to the core's defaults, as
    /// `IB_USER_VERBS_CMD_*` bit numbers.
    pub uverbs_cmds: &'a [u32],
    /// The device name was chosen by the user (e.g. `rdma link add`).
    pub name_assigned_by_user: bool,
}

/// An allocated device that is not registered yet.
///
/// # Invariants
///
/// `self.0` is a `Device<T>` allocated by `_ib_alloc_device()` whose data is initialised
/// and whose operations table is `T`'s; this object owns it until it is registered.
pub struct UnregisteredDevice<T: Driver>(NonNull<Device<T>>);

impl<T: Driver> UnregisteredDevice<T> {
    /// Allocates a device and initialises its driver data.
    pub fn new(params: &DeviceParams<'_>, data: impl PinInit<T::Data, Error>) -> Result<Self> {
        const {
            assert!(core::mem::offset_of!(Device<T>, ib) == 0);
        }
        let size = Kmalloc::aligned_layout(Layout::new::<Device<T>>()).size();
        // SAFETY: `size` covers a `struct ib_device` at offset 0; `init_net` is always alive.
        let ib = unsafe { bindings::_ib_alloc_device(size, &raw mut bindings::init_net) };
        let dev = NonNull::new(ib.cast::<Device<T>>()).ok_or(ENOMEM)?;
        let raw = dev.as_ptr();
        // SAFETY: `data` is uninitialised memory inside the new allocation, which never moves.
        // No operations table is installed yet, so on failure `ib_dealloc_device` does not
        // call `dealloc_driver` on the uninitialised data.
        if let Err(e) = unsafe { pin_init::raw_try_init(&raw mut (*raw).data, data) } {
            // SAFETY: `ib` was allocated above and is not registered.
            unsafe { bindings::ib_dealloc_device(ib) };
            return Err(e);
        }
        // SAFETY: The device is exclusively ours until registration. The data is initialised,
        // so installing `dealloc_driver` (which drops it) is now sound.
        unsafe {
            (*ib).node_type = bindings::RDMA_NODE_IB_CA as u8;
            (*ib).phys_port_cnt = params.phys_port_cnt;
            (*ib).num_comp_vectors = params.num_comp_vectors.try_into().unwrap_or(1);
            (*ib).node_guid = params.node_guid.to_be();
            (*ib).local_dma_lkey = 0;
            for cmd in params.uverbs_cmds {
                (*ib).uverbs_cmd_mask |= 1u64.checked_shl(*cmd).unwrap_or(0);
            }
            let desc = &mut (*ib).node_desc;
            // Keep the last byte for the NUL terminator (the array is zeroed).
            let max = desc.len().saturating_sub(1);
            for (d, s) in desc.iter_mut().zip(params.node_desc.iter().take(max)) {
                *d = *s as c_char;
            }
            if params.name_assigned_by_user {
                (*ib).name_assign_type =
                    bindings::rdma_nl_name_assign_type_RDMA_NAME_ASSIGN_TYPE_USER;
            }
            bindings::ib_set_device_ops(ib, &DeviceVTable::<T>::VTABLE);
        }
        // INVARIANT: The device is allocated, its data initialised and `T`'s ops installed.
        Ok(Self(dev))
    }

    /// Returns the device, e.g. to read its data before registration.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: By the type invariant the device and its data are initialised.
        unsafe { self.0.as_ref() }
    }

    /// Binds `ndev` to `port` and registers the device with the core under `name`.
    ///
    /// On success the core owns the device; it is destroyed by one of the unregistration
    /// paths. On failure the device is deallocated and its data dropped.
    pub fn register(self, name: &CStr, ndev: &NetDevice, port: PortNum) -> Result {
        let ib = self.0.as_ptr().cast::<bindings::ib_device>();
        // SAFETY: `ib` is an allocated, unregistered device and `ndev` a valid netdevice.
        to_result(unsafe { bindings::ib_device_set_netdev(ib, ndev.as_raw(), port) })?;
        // SAFETY: `ib` is allocated and unregistered; `name` is NUL-terminated. A null DMA
        // device selects virtual DMA (the core stores kernel virtual addresses in the
        // scatterlists it maps for this device).
        to_result(unsafe {
            bindings::ib_register_device(ib, name.as_char_ptr(), core::ptr::null_mut())
        })?;
        // The core owns the device now; it may already be gone if it was unregistered
        // concurrently, so it must not be touched again.
        core::mem::forget(self);
        Ok(())
    }
}

impl<T: Driver> Drop for UnregisteredDevice<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own the allocated, unregistered device. With `T`'s
        // operations installed, `ib_dealloc_device` calls `dealloc_driver`, which drops the
        // data, then releases the memory.
        unsafe { bindings::ib_dealloc_device(self.0.as_ptr().cast()) };
    }
}

/// A user context (`struct ib_ucontext`) followed by the driver's data.
///
/// # Invariants
///
/// `ib` is at offset 0 and initialised by the core; `data` is initialised between a
/// successful `alloc_ucontext` and `dealloc_ucontext`.
#[repr(C)]
#[pin_data]
pub struct UContext<T: Driver> {
    #[pin]
    ib: Opaque<bindings::ib_ucontext>,
    #[pin]
    data: T::UContext,
}

impl<T: Driver> UContext<T> {
    /// Returns the raw `struct ib_ucontext`.
    pub fn as_raw(&self) -> *mut bindings::ib_ucontext {
        self.ib.get()
    }

    /// Returns the driver data of the user context.
    pub fn data(&self) -> &T::UContext {
        &self.data
    }

    /// Returns the device of the user context.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: The core sets `device` before `alloc_ucontext`; a context's device is
        // registered while the context exists.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }
}

struct DeviceVTable<T: Driver>(PhantomData<T>);

impl<T: Driver> DeviceVTable<T> {
    const VTABLE: bindings::ib_device_ops = bindings::ib_device_ops {
        owner: crate::module::this_module::<T::OwnerModule>().as_ptr(),
        driver_id: T::DRIVER_ID.0,
        uverbs_abi_ver: T::UVERBS_ABI_VER,
        query_device: Some(Self::query_device_callback),
        query_port: Some(Self::query_port_callback),
        get_port_immutable: Some(Self::get_port_immutable_callback),
        get_link_layer: Some(Self::get_link_layer_callback),
        query_pkey: Some(Self::query_pkey_callback),
        alloc_ucontext: Some(Self::alloc_ucontext_callback),
        dealloc_ucontext: Some(Self::dealloc_ucontext_callback),
        dealloc_driver: Some(Self::dealloc_driver_callback),
        alloc_pd: Some(Self::alloc_pd_callback),
        dealloc_pd: Some(Self::dealloc_pd_callback),
        create_cq: Some(Self::create_cq_callback),
        destroy_cq: Some(Self::destroy_cq_callback),
        req_notify_cq: Some(Self::req_notify_cq_callback),
        resize_user_cq: Some(Self::resize_cq_callback),
        mmap: Some(Self::mmap_callback),
        mmap_free: Some(Self::mmap_free_callback),
        size_ib_ucontext: kmalloc_size::<UContext<T>>(),
        size_ib_pd: kmalloc_size::<Pd<T>>(),
        size_ib_cq: kmalloc_size::<Cq<T>>(),
        create_qp: Some(Self::create_qp_callback),
        modify_qp: Some(Self::modify_qp_callback),
        query_qp: Some(Self::query_qp_callback),
        destroy_qp: Some(Self::destroy_qp_callback),
        post_send: Some(Self::post_send_callback),
        post_recv: Some(Self::post_recv_callback),
        poll_cq: Some(Self::poll_cq_callback),
        alloc_hw_port_stats: if T::HW_STATS.is_empty() {
            None
        } else {
            Some(Self::alloc_hw_port_stats_callback)
        },
        get_hw_stats: if T::HW_STATS.is_empty() {
            None
        } else {
            Some(Self::get_hw_stats_callback)
        },
        reg_user_mr: Some(Self::reg_user_mr_callback),
        get_dma_mr: Some(Self::get_dma_mr_callback),
        dereg_mr: Some(Self::dereg_mr_callback),
        size_ib_qp: kmalloc_size::<Qp<T>>(),
        create_ah: Some(Self::create_ah_callback),
        create_user_ah: Some(Self::create_ah_callback),
        destroy_ah: Some(Self::destroy_ah_callback),
        size_ib_ah: kmalloc_size::<Ah<T>>(),
        ..pin_init::zeroed()
    };

    /// # Safety
    ///
    /// Called by the core for a registered (or registering) `Device<T>`; `attr` is valid for
    /// writes and `udata` null or valid.
    unsafe extern "C" fn query_device_callback(
        ib: *mut bindings::ib_device,
        attr: *mut bindings::ib_device_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core calls operations only while the device data is alive.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            // SAFETY: `udata` is null or valid for the duration of the call.
            let a = T::query_device(dev, unsafe { UData::from_raw(udata) })?;
            let c = bindings::ib_device_attr {
                fw_ver: a.fw_ver,
                sys_image_guid: a.sys_image_guid.to_be(),
                max_mr_size: a.max_mr_size,
                page_size_cap: a.page_size_cap,
                vendor_id: a.vendor_id,
                vendor_part_id: a.vendor_part_id,
                hw_ver: a.hw_ver,
                max_qp: a.max_qp,
                max_qp_wr: a.max_qp_wr,
                device_cap_flags: a.device_cap_flags,
                kernel_cap_flags: a.kernel_cap_flags,
                max_send_sge: a.max_send_sge,
                max_recv_sge: a.max_recv_sge,
                max_sge_rd: a.max_sge_rd,
                max_cq: a.max_cq,
                max_cqe: a.max_cqe,
                max_mr: a.max_mr,
                max_pd: a.max_pd,
                max_qp_rd_atom: a.max_qp_rd_atom,
                max_res_rd_atom: a.max_res_rd_atom,
                max_qp_init_rd_atom: a.max_qp_init_rd_atom,
                atomic_cap: a.atomic_cap.map_or(0, |c| c as u32),
                max_mw: a.max_mw,
                max_mcast_grp: a.max_mcast_grp,
                max_mcast_qp_attach: a.max_mcast_qp_attach,
                max_total_mcast_qp_attach: a.max_total_mcast_qp_attach,
                max_ah: a.max_ah,
                max_srq: a.max_srq,
                max_srq_wr: a.max_srq_wr,
                max_srq_sge: a.max_srq_sge,
                max_fast_reg_page_list_len: a.max_fast_reg_page_list_len,
                max_pkeys: a.max_pkeys,
                local_ca_ack_delay: a.local_ca_ack_delay,
                ..pin_init::zeroed()
            };
            // SAFETY: `attr` is valid for writes.
            unsafe { attr.write(c) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the core for a registered `Device<T>`; `attr` is valid for writes.
    unsafe extern "C" fn query_port_callback(
        ib: *mut bindings::ib_device,
        port: u32,
        attr: *mut bindings::ib_port_attr,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core calls operations only while the device data is alive.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let a = T::query_port(dev, port)?;
            let c = bindings::ib_port_attr {
                state: a.state as u32,
                phys_state: a.phys_state as u8,
                max_mtu: a.max_mtu as u32,
                active_mtu: a.active_mtu as u32,
                phys_mtu: a.phys_mtu,
                gid_tbl_len: c_int::try_from(a.gid_tbl_len).unwrap_or(c_int::MAX),
                port_cap_flags: a.port_cap_flags,
                max_msg_sz: a.max_msg_sz,
                pkey_tbl_len: a.pkey_tbl_len,
                max_vl_num: a.max_vl_num,
                active_width: a.active_width,
                active_speed: a.active_speed,
                ..pin_init::zeroed()
            };
            // SAFETY: `attr` is valid for writes.
            unsafe { attr.write(c) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the core while registering a `Device<T>`; `imm` is valid for writes.
    unsafe extern "C" fn get_port_immutable_callback(
        ib: *mut bindings::ib_device,
        port: u32,
        imm: *mut bindings::ib_port_immutable,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core calls operations only while the device data is alive.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let p = T::port_immutable(dev, port)?;
            let c = bindings::ib_port_immutable {
                pkey_tbl_len: c_int::try_from(p.pkey_tbl_len).unwrap_or(c_int::MAX),
                gid_tbl_len: c_int::try_from(p.gid_tbl_len).unwrap_or(c_int::MAX),
                core_cap_flags: p.core_cap_flags,
                max_mad_size: p.max_mad_size,
            };
            // SAFETY: `imm` is valid for writes.
            unsafe { imm.write(c) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the core for a registered `Device<T>`.
    unsafe extern "C" fn get_link_layer_callback(
        ib: *mut bindings::ib_device,
        port: u32,
    ) -> bindings::rdma_link_layer {
        // SAFETY: The core calls operations only while the device data is alive.
        let dev = unsafe { Device::<T>::from_raw(ib) };
        match T::link_layer(dev, port) {
            LinkLayer::InfiniBand => bindings::rdma_link_layer::IB_LINK_LAYER_INFINIBAND,
            LinkLayer::Ethernet => bindings::rdma_link_layer::IB_LINK_LAYER_ETHERNET,
        }
    }

    /// # Safety
    ///
    /// Called by the core for a registered `Device<T>`; `pkey` is valid for writes.
    unsafe extern "C" fn query_pkey_callback(
        ib: *mut bindings::ib_device,
        port: u32,
        index: u16,
        pkey: *mut u16,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The core calls operations only while the device data is alive.
            let dev = unsafe { Device::<T>::from_raw(ib) };
            let v = T::query_pkey(dev, port, index)?;
            // SAFETY: `pkey` is valid for writes.
            unsafe { pkey.write(v) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `uctx` is a zeroed allocation of `size_ib_ucontext` bytes whose `struct ib_ucontext`
    /// header the core initialised, for a registered `Device<T>`.
    unsafe extern "C" fn alloc_ucontext_callback(
        uctx: *mut bindings::ib_ucontext,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        const {
            assert!(core::mem::offset_of!(UContext<T>, ib) == 0);
        }
        from_result(|| {
            // SAFETY: The core sets `device` before calling `alloc_ucontext`, and calls
            // operations only while the device data is alive.
            let dev = unsafe { Device::<T>::from_raw((*uctx).device) };
            let ctx = uctx.cast::<UContext<T>>();
            // SAFETY: `udata` is null or valid for the call.
            let init = T::alloc_ucontext(dev, unsafe { UData::from_raw(udata) });
            // SAFETY: `data` is uninitialised memory in the core's allocation, which never
            // moves. On failure nothing is initialised and the core frees the allocation
            // without calling `dealloc_ucontext`.
            unsafe { pin_init::raw_try_init(&raw mut (*ctx).data, init) }?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `uctx` was initialised by a successful `alloc_ucontext`; the core frees it next.
    unsafe extern "C" fn dealloc_ucontext_callback(uctx: *mut bindings::ib_ucontext) {
        let ctx = uctx.cast::<UContext<T>>();
        // SAFETY: `data` is initialised (successful `alloc_ucontext`) and is not used again.
        unsafe { core::ptr::drop_in_place(&raw mut (*ctx).data) };
    }

    /// # Safety
    ///
    /// `pd` is a zeroed allocation of `size_ib_pd` bytes whose header the core initialised.
    unsafe extern "C" fn alloc_pd_callback(
        pd: *mut bindings::ib_pd,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        const {
            assert!(core::mem::offset_of!(Pd<T>, ib) == 0);
        }
        from_result(|| {
            // SAFETY: The core sets `device` first and calls operations while it is alive.
            let dev = unsafe { Device::<T>::from_raw((*pd).device) };
            // SAFETY: `udata` is null or valid for the call.
            let init = T::alloc_pd(dev, unsafe { UData::from_raw(udata) });
            // SAFETY: `data` is uninitialised memory in the core's allocation, which never
            // moves; on failure the core frees it without calling `dealloc_pd`.
            unsafe { pin_init::raw_try_init(&raw mut (*pd.cast::<Pd<T>>()).data, init) }?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `pd` was initialised by a successful `alloc_pd`; the core frees it next.
    unsafe extern "C" fn dealloc_pd_callback(
        pd: *mut bindings::ib_pd,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: `data` is initialised and not used again.
        unsafe { core::ptr::drop_in_place(&raw mut (*pd.cast::<Pd<T>>()).data) };
        0
    }

    /// # Safety
    ///
    /// `cq` is a zeroed allocation of `size_ib_cq` bytes whose header the core initialised;
    /// `attr` is valid; `attrs` is null (kernel CQ) or the verb's attribute bundle.
    unsafe extern "C" fn create_cq_callback(
        cq: *mut bindings::ib_cq,
        attr: *const bindings::ib_cq_init_attr,
        attrs: *mut bindings::uverbs_attr_bundle,
    ) -> c_int {
        const {
            assert!(core::mem::offset_of!(Cq<T>, ib) == 0);
        }
        from_result(|| {
            // SAFETY: The core sets `device` first and calls operations while it is alive.
            let dev = unsafe { Device::<T>::from_raw((*cq).device) };
            // SAFETY: `attrs` is null or a valid bundle; its udata lives for the call.
            let udata = unsafe { UData::from_raw(bindings::uverbs_bundle_udata(attrs)) };
            // SAFETY: `attr` is valid for the call.
            let a = unsafe { &*attr };
            let init = CqInit {
                cqe: a.cqe,
                comp_vector: a.comp_vector,
                flags: a.flags,
                udata,
                ucontext: udata.and_then(|u| u.ucontext::<T>()),
                cq,
            };
            let data = T::create_cq(dev, &init)?;
            // SAFETY: `data` is uninitialised memory in the core's allocation, which never
            // moves; on failure the core frees it without calling `destroy_cq`.
            unsafe { pin_init::raw_try_init(&raw mut (*cq.cast::<Cq<T>>()).data, data) }?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `cq` was initialised by a successful `create_cq`.
    unsafe extern "C" fn destroy_cq_callback(
        cq: *mut bindings::ib_cq,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        let this = cq.cast::<Cq<T>>();
        from_result(|| {
            // SAFETY: The CQ is initialised (type invariant of `Cq`).
            T::destroy_cq(unsafe { &*this })?;
            // SAFETY: Destroy succeeded: the core frees the CQ next and calls no other
            // operation on it.
            unsafe { core::ptr::drop_in_place(&raw mut (*this).data) };
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `cq` was initialised by a successful `create_cq`.
    unsafe extern "C" fn req_notify_cq_callback(
        cq: *mut bindings::ib_cq,
        flags: bindings::ib_cq_notify_flags,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The CQ is initialised (type invariant of `Cq`).
            let cq = unsafe { &*cq.cast::<Cq<T>>() };
            let missed = T::req_notify_cq(cq, NotifyFlags::from_raw(flags.0))?;
            Ok(c_int::from(missed))
        })
    }

    /// # Safety
    ///
    /// `cq` was initialised by a successful `create_cq`; `udata` is null or valid.
    unsafe extern "C" fn resize_cq_callback(
        cq: *mut bindings::ib_cq,
        cqe: c_uint,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        from_result(|| {
            // SAFETY: The CQ is initialised; `udata` is null or valid for the call.
            let (cq, udata) = unsafe { (&*cq.cast::<Cq<T>>(), UData::from_raw(udata)) };
            T::resize_cq(cq, cqe, udata)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the core for an `mmap()` of the uverbs file of a live user context.
    unsafe extern "C" fn mmap_callback(
        ctx: *mut bindings::ib_ucontext,
        vma: *mut bindings::vm_area_struct,
    ) -> c_int {
        from_result(|| {
            // SAFETY: Per the function's contract.
            unsafe { mmap::map(ctx, vma) }?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the core when the last reference to one of our mmap entries is dropped.
    unsafe extern "C" fn mmap_free_callback(entry: *mut bindings::rdma_user_mmap_entry) {
        // SAFETY: All mmap entries of this driver's contexts come from `SharedBuffer`.
        unsafe { mmap::free_entry(entry) };
    }

    /// # Safety
    ///
    /// See [`ah::create`].
    unsafe extern "C" fn create_ah_callback(
        ah: *mut bindings::ib_ah,
        init: *mut bindings::rdma_ah_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: Forwarded from the core with the same contract.
        from_result(|| unsafe { ah::create::<T>(ah, init, udata) }.map(|()| 0))
    }

    /// # Safety
    ///
    /// See [`ah::destroy`].
    unsafe extern "C" fn destroy_ah_callback(ah: *mut bindings::ib_ah, _flags: u32) -> c_int {
        // SAFETY: Forwarded from the core with the same contract.
        from_result(|| unsafe { ah::destroy::<T>(ah) }.map(|()| 0))
    }

    /// # Safety
    ///
    /// See [`qp::create`].
    unsafe extern "C" fn create_qp_callback(
        ibqp: *mut bindings::ib_qp,
        init: *mut bindings::ib_qp_init_attr,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: Forwarded from the core with the same contract.
        from_result(|| unsafe { qp::create::<T>(ibqp, init, udata) }.map(|()| 0))
    }

    /// # Safety
    ///
    /// See [`qp::modify`].
    unsafe extern "C" fn modify_qp_callback(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        mask: c_int,
        udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: Forwarded from the core with the same contract.
        from_result(|| unsafe { qp::modify::<T>(ibqp, attr, mask, udata) }.map(|()| 0))
    }

    /// # Safety
    ///
    /// See [`qp::query`].
    unsafe extern "C" fn query_qp_callback(
        ibqp: *mut bindings::ib_qp,
        attr: *mut bindings::ib_qp_attr,
        _mask: c_int,
        init: *mut bindings::ib_qp_init_attr,
    ) -> c_int {
        // SAFETY: Forwarded from the core with the same contract.
        from_result(|| unsafe { qp::query::<T>(ibqp, attr, init) }.map(|()| 0))
    }

    /// # Safety
    ///
    /// See [`qp::destroy`].
    unsafe extern "C" fn destroy_qp_callback(
        ibqp: *mut bindings::ib_qp,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: Forwarded from the core with the same contract.
        from_result(|| unsafe { qp::destroy::<T>(ibqp) }.map(|()| 0))
    }

    /// # Safety
    ///
    /// `ibqp` was initialised by `create_qp`; `wr` is null (a user doorbell) or a chain of
    /// work requests, `bad_wr` valid for writes.
    unsafe extern "C" fn post_send_callback(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_send_wr,
        bad_wr: *mut *const bindings::ib_send_wr,
    ) -> c_int {
        // SAFETY: The QP is initialised.
        let qp = unsafe { &*ibqp.cast::<Qp<T>>() };
        from_result(|| {
            if wr.is_null() {
                T::send_doorbell(qp)?;
            } else {
                // SAFETY: Per the function's contract.
                unsafe { wr::post_send::<T>(qp, wr, bad_wr) }?;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// `ibqp` was initialised by `create_qp`; `wr` is a valid chain, `bad_wr` valid for
    /// writes.
    unsafe extern "C" fn post_recv_callback(
        ibqp: *mut bindings::ib_qp,
        wr: *const bindings::ib_recv_wr,
        bad_wr: *mut *const bindings::ib_recv_wr,
    ) -> c_int {
        // SAFETY: The QP is initialised.
        let qp = unsafe { &*ibqp.cast::<Qp<T>>() };
        // SAFETY: Per the function's contract.
        from_result(|| unsafe { wr::post_recv::<T>(qp, wr, bad_wr) }.map(|()| 0))
    }

    /// # Safety
    ///
    /// `cq` was initialised by `create_cq`; `wc` is valid for writes of `n` entries.
    unsafe extern "C" fn poll_cq_callback(
        cq: *mut bindings::ib_cq,
        n: c_int,
        wc: *mut bindings::ib_wc,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        unsafe { wr::poll_cq::<T>(&*cq.cast::<Cq<T>>(), n, wc) }
    }

    /// # Safety
    ///
    /// Called by the core for a registered `Device<T>`.
    unsafe extern "C" fn alloc_hw_port_stats_callback(
        _ib: *mut bindings::ib_device,
        _port: u32,
    ) -> *mut bindings::rdma_hw_stats {
        let n = c_int::try_from(T::HW_STATS.len()).unwrap_or(0);
        // SAFETY: `HW_STATS` is a static array of `n` descriptions with static names.
        unsafe {
            bindings::rdma_alloc_hw_stats_struct(
                T::HW_STATS.as_ptr().cast(),
                n,
                bindings::RDMA_HW_STATS_DEFAULT_LIFESPAN as c_ulong,
            )
        }
    }

    /// # Safety
    ///
    /// Called by the core for a registered `Device<T>` with stats from
    /// `alloc_hw_port_stats`.
    unsafe extern "C" fn get_hw_stats_callback(
        ib: *mut bindings::ib_device,
        stats: *mut bindings::rdma_hw_stats,
        port: u32,
        _index: c_int,
    ) -> c_int {
        // SAFETY: The core calls operations only while the device data is alive.
        let dev = unsafe { Device::<T>::from_raw(ib) };
        // SAFETY: `stats` has `num_counters` values, allocated for `HW_STATS`.
        let values = unsafe {
            let n = usize::try_from((*stats).num_counters).unwrap_or(0);
            (*stats).value.as_mut_slice(n.min(T::HW_STATS.len()))
        };
        T::hw_stats(dev, port, values);
        c_int::try_from(values.len()).unwrap_or(0)
    }

    /// # Safety
    ///
    /// Called by the core with one of this driver's PDs; `udata` null or valid.
    unsafe extern "C" fn reg_user_mr_callback(
        pd: *mut bindings::ib_pd,
        start: u64,
        length: u64,
        iova: u64,
        access: c_int,
        dmah: *mut bindings::ib_dmah,
        udata: *mut bindings::ib_udata,
    ) -> *mut bindings::ib_mr {
        if !dmah.is_null() {
            return EOPNOTSUPP.to_ptr();
        }
        let req = UserMrReq {
            start,
            length,
            iova,
            access: u32::from_ne_bytes(access.to_ne_bytes()),
        };
        // SAFETY: Forwarded from the core with the same contract.
        match unsafe { mr::reg_user::<T>(pd, &req, udata) } {
            Ok(mr) => mr,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// Called by the core with one of this driver's (kernel) PDs.
    unsafe extern "C" fn get_dma_mr_callback(
        pd: *mut bindings::ib_pd,
        access: c_int,
    ) -> *mut bindings::ib_mr {
        // SAFETY: Forwarded from the core with the same contract.
        match unsafe { mr::get_dma::<T>(pd, u32::from_ne_bytes(access.to_ne_bytes())) } {
            Ok(mr) => mr,
            Err(e) => e.to_ptr(),
        }
    }

    /// # Safety
    ///
    /// `ibmr` was returned by `reg_user_mr`.
    unsafe extern "C" fn dereg_mr_callback(
        ibmr: *mut bindings::ib_mr,
        _udata: *mut bindings::ib_udata,
    ) -> c_int {
        // SAFETY: Forwarded from the core with the same contract.
        from_result(|| unsafe { mr::dereg::<T>(ibmr) }.map(|()| 0))
    }

    /// # Safety
    ///
    /// Called once by `ib_dealloc_device()` for a `Device<T>` with initialised data, after
    /// the last other operation.
    unsafe extern "C" fn dealloc_driver_callback(ib: *mut bindings::ib_device) {
        let dev = ib.cast::<Device<T>>();
        // SAFETY: The data is initialised (type invariant) and no operation runs anymore.
        unsafe { core::ptr::drop_in_place(&raw mut (*dev).data) };
    }
}

/// Fences a driver's devices: while it exists, modules that bind the same [`DriverId`] cannot
/// be loaded, and dropping it unregisters every device of the driver.
///
/// The RDMA core can unregister all devices of a driver id at once
/// (`ib_unregister_driver()`), the only fence that guarantees no device operation or queued
/// unregistration runs after the driver's module is gone. Two drivers sharing one id (here the
/// Rust and the C soft-RoCE drivers, which both report `RDMA_DRIVER_RXE` so that rdma-core's
/// provider binds to them) would also unregister each other's devices, and the C driver would
/// mistake the other's devices for its own. So this registration keeps the conflicting modules
/// out: it fails if one is loaded, and vetoes their loading while it exists.
///
/// # Invariants
///
/// `nb` is registered as a module notifier from a successful [`DriverRegistration::new`]
/// until drop.
#[pin_data(PinnedDrop)]
pub struct DriverRegistration<T: Driver> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    conflicts: &'static [&'static CStr],
    _t: PhantomData<T>,
}

// SAFETY: The notifier block is only touched by the notifier chain under its own lock.
unsafe impl<T: Driver> Send for DriverRegistration<T> {}
// SAFETY: See the `Send` implementation; `conflicts` is immutable.
unsafe impl<T: Driver> Sync for DriverRegistration<T> {}

impl<T: Driver> DriverRegistration<T> {
    /// Registers the driver fence; `conflicts` names the modules that bind the same driver id.
    ///
    /// Fails with `EBUSY` if one of them is loaded.
    pub fn new(conflicts: &'static [&'static CStr]) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            conflicts,
            _t: PhantomData,
            nb <- Opaque::try_ffi_init(move |nb: *mut bindings::notifier_block| {
                // SAFETY: `nb` is valid for writes and pinned; it is unregistered in drop.
                unsafe {
                    nb.write(bindings::notifier_block {
                        notifier_call: Some(Self::module_callback),
                        ..pin_init::zeroed()
                    });
                    to_result(bindings::register_module_notifier(nb))?;
                }
                // A conflicting module that came before the notifier was registered is in the
                // module kset already (sysfs is set up before a module's notifier runs).
                let this = crate::module::this_module::<T::OwnerModule>().as_ptr();
                if let Some(name) = conflicts.iter().find(|n| module_loaded(this, n)) {
                    pr_err!(
                        "{}: {} is loaded and binds the same RDMA driver id\n",
                        Self::driver_name(),
                        name.to_str().unwrap_or("?")
                    );
                    // SAFETY: Registered just above.
                    unsafe { bindings::unregister_module_notifier(nb) };
                    return Err(EBUSY);
                }
                Ok(())
            }),
        })
    }

    fn driver_name() -> &'static str {
        <T::OwnerModule as crate::ModuleMetadata>::NAME
            .to_str()
            .unwrap_or("?")
    }

    /// # Safety
    ///
    /// `nb` is the `nb` field of a live `DriverRegistration<T>`; for `MODULE_STATE_COMING`,
    /// `data` is the `struct module` being loaded.
    unsafe extern "C" fn module_callback(
        nb: *mut bindings::notifier_block,
        action: c_ulong,
        data: *mut c_void,
    ) -> c_int {
        if action != bindings::module_state_MODULE_STATE_COMING as c_ulong {
            return bindings::NOTIFY_DONE as c_int;
        }
        // SAFETY: `nb` is embedded in a live `DriverRegistration<T>` (notifier registered).
        let this = unsafe { &*container_of!(Opaque::cast_from(nb), Self, nb) };
        // SAFETY: For `MODULE_STATE_COMING`, `data` is the module being loaded; its name is a
        // NUL-terminated array.
        let name = unsafe { CStr::from_char_ptr((*data.cast::<bindings::module>()).name.as_ptr()) };
        if this.conflicts.contains(&name) {
            pr_err!(
                "{}: refusing to load {}: both bind the same RDMA driver id\n",
                Self::driver_name(),
                name.to_str().unwrap_or("?")
            );
            // notifier_from_errno(-EBUSY)
            return (bindings::NOTIFY_STOP_MASK | (bindings::NOTIFY_OK + bindings::EBUSY)) as c_int;
        }
        bindings::NOTIFY_DONE as c_int
    }
}

/// Returns whether a module named `name` is loaded, by looking it up in the module kset of
/// `this` (null for built-in code, which cannot look).
fn module_loaded(this: *mut bindings::module, name: &CStr) -> bool {
    if this.is_null() {
        return false;
    }
    // SAFETY: `this` is our own live module; `mkobj.kobj.kset` is the module kset, which
    // outlives every module. `kset_find_obj` returns a counted kobject or null.
    let kobj = unsafe { bindings::kset_find_obj((*this).mkobj.kobj.kset, name.as_char_ptr()) };
    if kobj.is_null() {
        return false;
    }
    // SAFETY: Drops the reference `kset_find_obj` took.
    unsafe { bindings::kobject_put(kobj) };
    true
}

#[pinned_drop]
impl<T: Driver> PinnedDrop for DriverRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: Unregisters every device of the driver id synchronously, calling
        // `dealloc_driver` for each; no device operation of `T` runs afterwards. By the
        // module exclusion above, every device with this id belongs to `T`.
        unsafe { bindings::ib_unregister_driver(T::DRIVER_ID.0) };
        // SAFETY: By the type invariant `nb` is registered.
        unsafe { bindings::unregister_module_notifier(self.nb.get()) };
    }
}
