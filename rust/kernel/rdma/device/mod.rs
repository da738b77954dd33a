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
//! This module owns the device itself: [`Device`], [`DeviceRef`], [`DeviceParams`] and
//! [`UnregisteredDevice`]. The rest lives in submodules whose items are re-exported here:
//! device and port attributes (`attrs`), the [`Driver`] operations trait (`driver`), user
//! contexts and verb udata (`ucontext`), the `struct ib_device_ops` table and its
//! trampolines (`vtable`), and the [`DriverRegistration`] fence (`registration`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

mod attrs;
mod driver;
mod optional;
mod registration;
mod ucontext;
mod vtable;

pub use attrs::{
    core_cap, device_cap, kernel_cap, odp_cap, port_cap, port_modify, AtomicCap, DeviceAttrs,
    DeviceModify, DriverId, LinkLayer, Mtu, OdpCaps, PhysState, PortAttrs, PortImmutable,
    PortModify, PortNum, PortState, StatDesc, MGMT_MAD_SIZE,
};
pub use driver::Driver;
pub use optional::{Mad, MadResult};
pub use registration::DriverRegistration;
pub use ucontext::{UContext, UData};

use self::vtable::DeviceVTable;
use super::netdev::{NetDevice, NetRef};
use crate::{
    alloc::allocator::Kmalloc,
    bindings,
    error::to_result,
    prelude::*,
    str::CStrExt,
    sync::aref::ARef,
    types::Opaque, //
};
use core::{alloc::Layout, marker::PhantomData, ops::Deref, ptr::NonNull};

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

    /// Sets the node description (`IB_DEVICE_MODIFY_NODE_DESC`, e.g. written to the
    /// `node_desc` sysfs file): its first 64 bytes, zero-padded.
    ///
    /// The core reads it without a lock (sysfs, the SMA), as it does for every driver that
    /// sets it: a reader racing with a change may see a mix of the two descriptions.
    pub fn set_node_desc(&self, desc: &[u8]) {
        let mut nd = [0u8; 64];
        let n = desc.len().min(nd.len());
        nd[..n].copy_from_slice(&desc[..n]);
        // SAFETY: `node_desc` is a 64-byte array inside the device, which is alive; plain
        // bytes, whatever a racing reader sees of them.
        unsafe {
            let dst = (&raw mut (*self.as_raw()).node_desc).cast::<u8>();
            core::ptr::copy_nonoverlapping(nd.as_ptr(), dst, nd.len());
        }
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
    /// Legacy uverbs write commands to enable in addition to the core's defaults.
    pub uverbs_cmds: &'a [UverbsCmd],
    /// The device name was chosen by the user (e.g. `rdma link add`).
    pub name_assigned_by_user: bool,
    /// Create the device in this netdevice's network namespace rather than in `init_net`.
    /// The core honours it in its exclusive namespace mode only (`rdma system set netns
    /// exclusive`); in the default shared mode every device is in `init_net`.
    pub netns_of: Option<&'a NetDevice>,
}

/// A legacy uverbs write command (`enum ib_uverbs_write_cmds`) that a device may enable beyond
/// the core's defaults ([`DeviceParams::uverbs_cmds`]).
#[repr(u32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum UverbsCmd {
    /// `IB_USER_VERBS_CMD_REQ_NOTIFY_CQ`: `ibv_req_notify_cq` through the kernel.
    ReqNotifyCq = bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_REQ_NOTIFY_CQ,
    /// `IB_USER_VERBS_CMD_POST_SEND`: a send doorbell (rxe's provider rings it this way).
    PostSend = bindings::ib_uverbs_write_cmds_IB_USER_VERBS_CMD_POST_SEND,
}

/// An allocated device that is not registered yet.
///
/// # Invariants
///
/// `self.0` is a `Device<T>` allocated by `_ib_alloc_device()` whose data is initialised
/// and whose operations table is `T`'s; this object owns it until it is registered. The
/// device's namespace (`coredev.rdma_net`, which the core stores without a reference) is
/// `init_net` or the one `self.1` holds a reference on: it cannot start to exit, and so
/// cannot miss the device when it moves its devices back to `init_net`, before the device
/// is registered (then the exit finds it) or freed.
pub struct UnregisteredDevice<T: Driver>(NonNull<Device<T>>, Option<NetRef>);

impl<T: Driver> UnregisteredDevice<T> {
    /// Allocates a device and initialises its driver data.
    pub fn new(params: &DeviceParams<'_>, data: impl PinInit<T::Data, Error>) -> Result<Self> {
        const {
            assert!(core::mem::offset_of!(Device<T>, ib) == 0);
        }
        let size = Kmalloc::aligned_layout(Layout::new::<Device<T>>()).size();
        let net = params.netns_of.map(NetRef::of).transpose()?;
        let net_ptr = match &net {
            Some(n) => n.as_raw(),
            None => &raw mut bindings::init_net,
        };
        // SAFETY: `size` covers a `struct ib_device` at offset 0; `init_net` is always alive
        // and any other namespace is held by `net` until the device is registered or freed.
        let ib = unsafe { bindings::_ib_alloc_device(size, net_ptr) };
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
            (*ib).local_dma_lkey = super::wr::LOCAL_DMA_LKEY;
            for cmd in params.uverbs_cmds {
                (*ib).uverbs_cmd_mask |= 1u64 << (*cmd as u32);
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
        // INVARIANT: The device is allocated, its data initialised and `T`'s ops installed;
        // its namespace is `init_net` or held by `net`.
        Ok(Self(dev, net))
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
    pub fn register(mut self, name: &CStr, ndev: &NetDevice, port: PortNum) -> Result {
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
        // concurrently, so it must not be touched again. Registered, it is one the
        // namespace's exit finds: the namespace reference can go.
        let net = self.1.take();
        core::mem::forget(self);
        drop(net);
        Ok(())
    }
}

impl<T: Driver> Drop for UnregisteredDevice<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own the allocated, unregistered device. With `T`'s
        // operations installed, `ib_dealloc_device` calls `dealloc_driver`, which drops the
        // data, then releases the memory.
        unsafe { bindings::ib_dealloc_device(self.0.as_ptr().cast()) };
        // The namespace reference (`self.1`) goes after the device, with the fields.
    }
}
