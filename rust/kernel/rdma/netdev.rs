// SPDX-License-Identifier: GPL-2.0

//! Network devices as seen by RDMA drivers, and netdevice events.
//!
//! A soft-RoCE device is bound to a `struct net_device`; it needs its MTU, hardware address
//! and link state, and must follow its events (MTU change, link up and down, removal).
//!
//! C header: [`include/linux/netdevice.h`](srctree/include/linux/netdevice.h)

use crate::{
    bindings,
    error::to_result,
    prelude::*,
    str::CStrExt,
    sync::{
        aref::{ARef, AlwaysRefCounted},
        rcu,
    },
    types::Opaque, //
};
use core::{marker::PhantomData, ptr::NonNull};

/// A reference on a network namespace (`struct net`), dropped with `put_net()`.
///
/// # Invariants
///
/// `self.0` is a namespace on which this object owns one reference, taken while the
/// namespace was not dying (so its exit has not started and does not start before the drop).
pub(crate) struct NetRef(NonNull<bindings::net>);

impl NetRef {
    /// Takes a reference on `ndev`'s namespace, or fails with `ENODEV` if it is dying.
    pub(crate) fn of(ndev: &NetDevice) -> Result<Self> {
        let _rcu = rcu::read_lock();
        // SAFETY: `ndev` is valid and its namespace too, under the RCU read lock (a
        // netdevice's namespace is freed only after a grace period once it moved out or was
        // unregistered); `maybe_get_net()` takes a reference unless the count is zero.
        let net = unsafe { bindings::maybe_get_net(bindings::dev_net(ndev.as_raw())) };
        // INVARIANT: A non-null result is a reference taken on a namespace that was not dying.
        NonNull::new(net).map(Self).ok_or(ENODEV)
    }

    /// Returns the namespace.
    pub(crate) fn as_raw(&self) -> *mut bindings::net {
        self.0.as_ptr()
    }
}

impl Drop for NetRef {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own one reference.
        unsafe { bindings::put_net(self.0.as_ptr()) };
    }
}

/// A network device (`struct net_device`).
///
/// # Invariants
///
/// A `&NetDevice` points to a valid `struct net_device` with a reference held for the
/// lifetime of the borrow (by the caller, by the notifier chain, or by an [`ARef`]).
#[repr(transparent)]
pub struct NetDevice(Opaque<bindings::net_device>);

// SAFETY: `struct net_device` is used from any context; its fields that are read here are
// read with the kernel's own synchronisation (single word reads).
unsafe impl Send for NetDevice {}
// SAFETY: See the `Send` implementation.
unsafe impl Sync for NetDevice {}

// SAFETY: `dev_hold` and `dev_put` maintain the netdevice's reference count; the device is
// not freed while a reference is held.
unsafe impl AlwaysRefCounted for NetDevice {
    fn inc_ref(&self) {
        // SAFETY: `self` is valid (type invariant).
        unsafe { bindings::dev_hold(self.as_raw()) };
    }

    unsafe fn dec_ref(obj: NonNull<Self>) {
        // SAFETY: The caller owns one reference.
        unsafe { bindings::dev_put(obj.as_ptr().cast()) };
    }
}

impl NetDevice {
    /// Creates a reference from a raw pointer.
    ///
    /// # Safety
    ///
    /// `ptr` is a valid `struct net_device` with a reference held for `'a`.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::net_device) -> &'a Self {
        // SAFETY: `NetDevice` is a transparent wrapper; the caller guarantees validity.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Takes ownership of a reference obtained with `dev_hold` (e.g. from a core getter).
    ///
    /// # Safety
    ///
    /// `ptr` is a valid `struct net_device` and the caller transfers one reference.
    pub unsafe fn from_held(ptr: NonNull<bindings::net_device>) -> ARef<Self> {
        // SAFETY: The caller transfers one reference of a valid netdevice.
        unsafe { ARef::from_raw(ptr.cast()) }
    }

    /// Returns the raw `struct net_device`.
    pub fn as_raw(&self) -> *mut bindings::net_device {
        self.0.get()
    }

    /// Returns the interface name, e.g. `eth0`.
    pub fn name(&self) -> &CStr {
        // SAFETY: `name` is a NUL-terminated array inside the valid netdevice.
        unsafe { CStr::from_char_ptr((*self.as_raw()).name.as_ptr()) }
    }

    /// Returns the interface index.
    pub fn ifindex(&self) -> i32 {
        // SAFETY: The netdevice is valid; `ifindex` does not change after registration.
        unsafe { (*self.as_raw()).ifindex }
    }

    /// Returns the MTU in bytes.
    pub fn mtu(&self) -> u32 {
        // SAFETY: The netdevice is valid; `mtu` is a single word updated with `WRITE_ONCE`.
        unsafe { core::ptr::read_volatile(&raw const (*self.as_raw()).mtu) }
    }

    /// Returns the 6-byte Ethernet hardware address, if the device has one.
    pub fn eth_addr(&self) -> Option<[u8; 6]> {
        let dev = self.as_raw();
        // SAFETY: The netdevice is valid; `dev_addr` points to `addr_len` bytes.
        unsafe {
            if usize::from((*dev).addr_len) != 6 || (*dev).dev_addr.is_null() {
                return None;
            }
            Some(core::ptr::read((*dev).dev_addr.cast::<[u8; 6]>()))
        }
    }

    /// Returns whether the interface is administratively up (`IFF_UP`).
    pub fn is_up(&self) -> bool {
        // SAFETY: The netdevice is valid; `flags` is a single word.
        let flags = unsafe { core::ptr::read_volatile(&raw const (*self.as_raw()).flags) };
        flags & bindings::net_device_flags_IFF_UP != 0
    }

    /// Returns whether the interface is running with carrier, i.e. an RDMA port on it is
    /// active.
    pub fn is_active(&self) -> bool {
        // SAFETY: The netdevice is valid.
        let state = unsafe { bindings::ib_get_curr_port_state(self.as_raw()) };
        state == bindings::ib_port_state_IB_PORT_ACTIVE
    }

    /// Returns whether the interface is a VLAN device.
    pub fn is_vlan(&self) -> bool {
        // SAFETY: The netdevice is valid.
        unsafe { bindings::is_vlan_dev(self.as_raw()) }
    }

    /// Returns the VLAN ID of a VLAN device, `None` for any other device.
    pub fn vlan_id(&self) -> Option<u16> {
        if !self.is_vlan() {
            return None;
        }
        // SAFETY: The netdevice is valid; a VLAN device's ID is fixed at its creation.
        Some(unsafe { bindings::rdma_vlan_dev_vlan_id(self.as_raw()) })
    }

    /// Returns the real device under a VLAN device, `None` for any other device.
    pub fn vlan_real_dev(&self) -> Option<&NetDevice> {
        // SAFETY: The netdevice is valid; the result is null or its real device.
        let real = unsafe { bindings::rdma_vlan_dev_real_dev(self.as_raw()) };
        // SAFETY: A VLAN device holds a reference on its real device from its creation until
        // it is freed, so the real device is valid at least as long as `self` is borrowed.
        NonNull::new(real).map(|r| unsafe { NetDevice::from_raw(r.as_ptr()) })
    }

    /// Looks up the device with interface index `ifindex` in this device's network
    /// namespace, and returns it referenced.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    pub fn get_by_index(&self, ifindex: i32) -> Option<ARef<NetDevice>> {
        // A namespace is freed only after an RCU grace period that follows its last
        // netdevice's departure: under the read lock, the namespace of a held netdevice stays
        // valid, even if the netdevice is moved meanwhile.
        let _rcu = rcu::read_lock();
        // SAFETY: `self` is valid and its namespace is valid under the read lock (see above).
        // The result is null or a device on which the caller owns one reference.
        let dev = unsafe { bindings::dev_get_by_index(bindings::dev_net(self.as_raw()), ifindex) };
        // SAFETY: A non-null result is valid and its reference is ours.
        NonNull::new(dev).map(|d| unsafe { Self::from_held(d) })
    }

    /// Returns whether `self` and `other` are the same device.
    pub fn is(&self, other: &NetDevice) -> bool {
        core::ptr::eq(self.as_raw(), other.as_raw())
    }

    /// Adds the multicast link-layer address `addr` to the interface's receive filter
    /// (`dev_mc_add`; counted: each add needs its [`NetDevice::mc_del`]).
    ///
    /// # Context
    ///
    /// Process context, or any context but hard interrupts with bottom halves enabled.
    pub fn mc_add(&self, addr: &[u8; 6]) -> Result {
        // SAFETY: The netdevice is valid; `addr` is an Ethernet address of `addr_len` bytes.
        to_result(unsafe { bindings::dev_mc_add(self.as_raw(), addr.as_ptr()) })
    }

    /// Removes one reference to the multicast address `addr` added by
    /// [`NetDevice::mc_add`] (`dev_mc_del`).
    pub fn mc_del(&self, addr: &[u8; 6]) -> Result {
        // SAFETY: As for `mc_add`.
        to_result(unsafe { bindings::dev_mc_del(self.as_raw(), addr.as_ptr()) })
    }
}

/// A netdevice event (`enum netdev_cmd`) that RDMA drivers act on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The interface was brought up.
    Up,
    /// The interface was brought down.
    Down,
    /// The interface state changed (e.g. carrier).
    Change,
    /// The MTU changed.
    ChangeMtu,
    /// The hardware address changed.
    ChangeAddr,
    /// The interface is being removed.
    Unregister,
    /// Any other event.
    Other,
}

impl Event {
    fn from_raw(cmd: c_ulong) -> Self {
        match u32::try_from(cmd) {
            Ok(bindings::netdev_cmd_NETDEV_UP) => Event::Up,
            Ok(bindings::netdev_cmd_NETDEV_DOWN) => Event::Down,
            Ok(bindings::netdev_cmd_NETDEV_CHANGE) => Event::Change,
            Ok(bindings::netdev_cmd_NETDEV_CHANGEMTU) => Event::ChangeMtu,
            Ok(bindings::netdev_cmd_NETDEV_CHANGEADDR) => Event::ChangeAddr,
            Ok(bindings::netdev_cmd_NETDEV_UNREGISTER) => Event::Unregister,
            _ => Event::Other,
        }
    }
}

/// Receives netdevice events.
pub trait Notifier: Send + Sync + 'static {
    /// Called for every event of every netdevice, under RTNL.
    fn event(event: Event, ndev: &NetDevice);
}

/// A registration of a [`Notifier`] with the netdevice notifier chain.
///
/// Registering replays `REGISTER`/`UP` events for existing devices; unregistering replays
/// `DOWN`/`UNREGISTER` events.
///
/// # Invariants
///
/// `nb` is registered from a successful [`NotifierRegistration::new`] until drop.
#[pin_data(PinnedDrop)]
pub struct NotifierRegistration<T: Notifier> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    _t: PhantomData<T>,
}

// SAFETY: The notifier block is only used by the notifier chain, under RTNL.
unsafe impl<T: Notifier> Send for NotifierRegistration<T> {}
// SAFETY: See the `Send` implementation.
unsafe impl<T: Notifier> Sync for NotifierRegistration<T> {}

impl<T: Notifier> NotifierRegistration<T> {
    /// Registers `T` for netdevice events.
    pub fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            _t: PhantomData,
            nb <- Opaque::try_ffi_init(|nb: *mut bindings::notifier_block| {
                // SAFETY: `nb` is valid for writes and pinned; it is unregistered in drop.
                unsafe {
                    nb.write(bindings::notifier_block {
                        notifier_call: Some(Self::callback),
                        ..pin_init::zeroed()
                    });
                    to_result(bindings::register_netdevice_notifier(nb))
                }
            }),
        })
    }

    /// # Safety
    ///
    /// Called by the netdevice notifier chain with a `struct netdev_notifier_info`.
    unsafe extern "C" fn callback(
        _nb: *mut bindings::notifier_block,
        event: c_ulong,
        info: *mut c_void,
    ) -> c_int {
        // SAFETY: Netdevice notifiers receive a `struct netdev_notifier_info` whose device is
        // alive for the duration of the call.
        let ndev = unsafe { bindings::netdev_notifier_info_to_dev(info.cast()) };
        if ndev.is_null() {
            return bindings::NOTIFY_DONE as c_int;
        }
        // SAFETY: `ndev` is valid and referenced by the notifier chain during the call.
        T::event(Event::from_raw(event), unsafe { NetDevice::from_raw(ndev) });
        bindings::NOTIFY_OK as c_int
    }
}

#[pinned_drop]
impl<T: Notifier> PinnedDrop for NotifierRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `nb` is registered.
        unsafe { bindings::unregister_netdevice_notifier(self.nb.get()) };
    }
}

/// Returns a random unicast, locally administered Ethernet address (`eth_random_addr()`),
/// e.g. for a device bound to a netdevice that has none.
pub fn random_eth_addr() -> [u8; 6] {
    let mut addr = [0u8; 6];
    // SAFETY: `addr` is valid for writes of its length.
    unsafe { bindings::get_random_bytes(addr.as_mut_ptr().cast(), addr.len()) };
    addr[0] &= 0xfe; // unicast
    addr[0] |= 0x02; // locally administered
    addr
}
