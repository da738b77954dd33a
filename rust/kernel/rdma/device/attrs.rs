// SPDX-License-Identifier: GPL-2.0

//! Device and port attributes.
//!
//! The plain values a driver reports to the RDMA core about a device and its ports: the
//! [`DriverId`], MTUs, port states, link layers, atomic support, the capability flag
//! modules, hardware counter descriptions ([`StatDesc`]), and the [`DeviceAttrs`],
//! [`PortAttrs`] and [`PortImmutable`] that the `query_device`, `query_port` and
//! `get_port_immutable` operations return.

use crate::{bindings, prelude::*};

/// Number of a port. Ports are numbered from 1.
pub type PortNum = u32;

/// Identity a driver reports to userspace (`enum rdma_driver_id`), used by rdma-core to pick
/// the provider library and checked by the core on every uverbs ioctl.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DriverId(pub(super) bindings::rdma_driver_id);

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
    /// Memory regions with on-demand paging (`IBK_ON_DEMAND_PAGING`); report
    /// [`DeviceAttrs::odp`](super::DeviceAttrs::odp) with it.
    pub const ON_DEMAND_PAGING: u64 = bindings::ib_kernel_cap_flags_IBK_ON_DEMAND_PAGING as u64;
}

/// On-demand paging capabilities (`struct ib_odp_caps`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct OdpCaps {
    /// `IB_ODP_SUPPORT*` bits ([`odp_cap::SUPPORT`]).
    pub general: u64,
    /// `IB_ODP_SUPPORT_*` operations on RC QPs.
    pub rc: u32,
    /// The same on UC QPs.
    pub uc: u32,
    /// The same on UD QPs.
    pub ud: u32,
}

/// Bits of [`OdpCaps`] (`enum ib_odp_general_cap_bits`, `enum ib_odp_transport_cap_bits`).
pub mod odp_cap {
    use crate::bindings;

    /// On-demand paging is supported (general).
    pub const SUPPORT: u64 = bindings::ib_odp_general_cap_bits_IB_ODP_SUPPORT as u64;
    /// SEND from ODP memory.
    pub const SEND: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SEND;
    /// Receive into ODP memory.
    pub const RECV: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_RECV;
    /// RDMA WRITE into ODP memory.
    pub const WRITE: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_WRITE;
    /// RDMA READ from ODP memory.
    pub const READ: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_READ;
    /// Atomics on ODP memory.
    pub const ATOMIC: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC;
    /// Shared receive queues with ODP memory.
    pub const SRQ_RECV: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_SRQ_RECV;
    /// RDMA FLUSH on ODP memory.
    pub const FLUSH: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_FLUSH;
    /// RDMA ATOMIC WRITE into ODP memory.
    pub const ATOMIC_WRITE: u32 = bindings::ib_odp_transport_cap_bits_IB_ODP_SUPPORT_ATOMIC_WRITE;
}

/// Capability flags of [`DeviceAttrs::device_cap_flags`] (`enum ib_device_cap_flags`).
pub mod device_cap {
    use crate::bindings;

    /// Fast registration and local invalidation work requests, remote invalidation
    /// (`IB_DEVICE_MEM_MGT_EXTENSIONS`): what kernel storage protocols require.
    pub const MEM_MGT_EXTENSIONS: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
    /// The device generates RNR NAKs on RC QPs (`IB_DEVICE_RC_RNR_NAK_GEN`).
    pub const RC_RNR_NAK_GEN: u64 = bindings::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN as u64;
    /// The system image GUID is meaningful (`IB_DEVICE_SYS_IMAGE_GUID`).
    pub const SYS_IMAGE_GUID: u64 = bindings::ib_device_cap_flags_IB_DEVICE_SYS_IMAGE_GUID as u64;
    /// Memory windows (`IB_DEVICE_MEM_WINDOW`; type 1 unless with [`MEM_WINDOW_TYPE_2B`]).
    pub const MEM_WINDOW: u64 = bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW as u64;
    /// Type 2B memory windows (`IB_DEVICE_MEM_WINDOW_TYPE_2B`).
    pub const MEM_WINDOW_TYPE_2B: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_MEM_WINDOW_TYPE_2B as u64;
    /// RDMA FLUSH for global visibility (IBA 1.5 annex A19; `IB_DEVICE_FLUSH_GLOBAL`).
    pub const FLUSH_GLOBAL: u64 = bindings::ib_device_cap_flags_IB_DEVICE_FLUSH_GLOBAL as u64;
    /// Shared receive queues can be resized (`IB_DEVICE_SRQ_RESIZE`).
    pub const SRQ_RESIZE: u64 = bindings::ib_device_cap_flags_IB_DEVICE_SRQ_RESIZE as u64;
    /// RDMA ATOMIC WRITE (IBA 1.5 annex A19) on RC QPs (`IB_DEVICE_ATOMIC_WRITE`).
    pub const ATOMIC_WRITE: u64 = bindings::ib_device_cap_flags_IB_DEVICE_ATOMIC_WRITE as u64;
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
///
/// [`Driver::query_device`]: super::Driver::query_device
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
    /// Most pages of a signature (protection information) fast registration; 0: none.
    pub max_pi_fast_reg_page_list_len: u32,
    /// Number of partition keys.
    pub max_pkeys: u16,
    /// Local CA ACK delay (4.096 us * 2^value).
    pub local_ca_ack_delay: u8,
    /// On-demand paging capabilities (with [`kernel_cap::ON_DEMAND_PAGING`]).
    pub odp: OdpCaps,
}

impl DeviceAttrs {
    /// Returns the attributes as the core reads them (`struct ib_device_attr`; the GUID in
    /// network byte order, what is not described here zero).
    pub(super) fn to_raw(&self) -> bindings::ib_device_attr {
        let mut attr = bindings::ib_device_attr {
            fw_ver: self.fw_ver,
            sys_image_guid: self.sys_image_guid.to_be(),
            max_mr_size: self.max_mr_size,
            page_size_cap: self.page_size_cap,
            vendor_id: self.vendor_id,
            vendor_part_id: self.vendor_part_id,
            hw_ver: self.hw_ver,
            max_qp: self.max_qp,
            max_qp_wr: self.max_qp_wr,
            device_cap_flags: self.device_cap_flags,
            kernel_cap_flags: self.kernel_cap_flags,
            max_send_sge: self.max_send_sge,
            max_recv_sge: self.max_recv_sge,
            max_sge_rd: self.max_sge_rd,
            max_cq: self.max_cq,
            max_cqe: self.max_cqe,
            max_mr: self.max_mr,
            max_pd: self.max_pd,
            max_qp_rd_atom: self.max_qp_rd_atom,
            max_res_rd_atom: self.max_res_rd_atom,
            max_qp_init_rd_atom: self.max_qp_init_rd_atom,
            atomic_cap: self.atomic_cap.map_or(0, |c| c as u32),
            max_mw: self.max_mw,
            max_mcast_grp: self.max_mcast_grp,
            max_mcast_qp_attach: self.max_mcast_qp_attach,
            max_total_mcast_qp_attach: self.max_total_mcast_qp_attach,
            max_ah: self.max_ah,
            max_srq: self.max_srq,
            max_srq_wr: self.max_srq_wr,
            max_srq_sge: self.max_srq_sge,
            max_fast_reg_page_list_len: self.max_fast_reg_page_list_len,
            max_pi_fast_reg_page_list_len: self.max_pi_fast_reg_page_list_len,
            max_pkeys: self.max_pkeys,
            local_ca_ack_delay: self.local_ca_ack_delay,
            ..pin_init::zeroed()
        };
        attr.odp_caps.general_caps = self.odp.general;
        attr.odp_caps.per_transport_caps.rc_odp_caps = self.odp.rc;
        attr.odp_caps.per_transport_caps.uc_odp_caps = self.odp.uc;
        attr.odp_caps.per_transport_caps.ud_odp_caps = self.odp.ud;
        attr
    }
}

/// Port attributes a driver reports from [`Driver::query_port`] (`struct ib_port_attr`).
///
/// [`Driver::query_port`]: super::Driver::query_port
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

/// A change of device attributes (`ib_modify_device`), the members the core asked for.
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceModify {
    /// New system image GUID (`IB_DEVICE_MODIFY_SYS_IMAGE_GUID`), host order.
    pub sys_image_guid: Option<u64>,
    /// New node description (`IB_DEVICE_MODIFY_NODE_DESC`), 64 bytes, NUL-padded.
    pub node_desc: Option<[u8; 64]>,
}

/// A change of port attributes (`ib_modify_port`).
#[derive(Clone, Copy, Debug, Default)]
pub struct PortModify {
    /// `IB_PORT_SHUTDOWN`, `IB_PORT_INIT_TYPE`, `IB_PORT_RESET_QKEY_CNTR`,
    /// `IB_PORT_OPA_MASK_CHG` bits (see [`port_modify`]).
    pub mask: u32,
    /// Capability bits to set (`IB_PORT_*_SUP`, see [`port_cap`]).
    pub set_port_cap_mask: u32,
    /// Capability bits to clear.
    pub clr_port_cap_mask: u32,
}

/// Bits of [`PortModify::mask`] (`enum ib_port_modify_flags`).
pub mod port_modify {
    use crate::bindings;

    /// Shut the port down.
    pub const SHUTDOWN: u32 = bindings::ib_port_modify_flags_IB_PORT_SHUTDOWN;
    /// Set the init type.
    pub const INIT_TYPE: u32 = bindings::ib_port_modify_flags_IB_PORT_INIT_TYPE;
    /// Reset the Q_Key violation counter.
    pub const RESET_QKEY_CNTR: u32 = bindings::ib_port_modify_flags_IB_PORT_RESET_QKEY_CNTR;
}
