// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 transport plumbing: the UDP tunnel sockets on port 4791 and received packets.
//!
//! Soft RoCE receives through kernel UDP sockets set up as tunnels: the UDP stack hands
//! every datagram for the port to the driver's `encap_rcv` callback, in softirq context,
//! before any socket queueing. A network namespace has its own port 4791: [`RocePort`]
//! opens the sockets of a namespace for its first device and closes them with its last, or
//! when the namespace goes away.
//!
//! It transmits by building whole IP datagrams itself: a [`Route`] is looked up for the
//! destination, a [`TxBuf`] is allocated with the link-layer headroom of the route's device,
//! the driver writes the IP and UDP headers, the RoCE headers, the payload and the ICRC into
//! it (the ICRC covers the IP header, so the driver must own it), and [`TxBuf::send`] hands it
//! to the IP layer's local output, which fills in the length and checksum and runs netfilter
//! and neighbour resolution.
//!
//! C headers: [`include/net/udp_tunnel.h`](srctree/include/net/udp_tunnel.h),
//! [`include/net/route.h`](srctree/include/net/route.h),
//! [`include/net/ip6_route.h`](srctree/include/net/ip6_route.h)

use super::netdev::NetDevice;
pub use super::port::{PortUser, RocePort, TunnelRx};
use crate::{
    bindings,
    error::{from_err_ptr, to_result},
    prelude::*,
    sync::rcu,
    types::Opaque,
};
use core::ptr::NonNull;

/// The IANA port of RoCEv2.
pub const ROCE_V2_UDP_PORT: u16 = 4791;

/// A received UDP datagram, owned (`struct sk_buff`).
///
/// # Invariants
///
/// `self.0` is a valid socket buffer that this object owns; its transport header is the UDP
/// header and its network header the IP header.
pub struct RxPacket(pub(super) NonNull<bindings::sk_buff>);

// SAFETY: An owned socket buffer may move between contexts.
unsafe impl Send for RxPacket {}

impl RxPacket {
    /// The network device the packet arrived on.
    pub fn netdev(&self) -> Option<&NetDevice> {
        // SAFETY: `dev` is set on received packets and the device outlives their processing.
        let dev = unsafe {
            (*self.0.as_ptr())
                .__bindgen_anon_1
                .__bindgen_anon_1
                .__bindgen_anon_1
                .dev
        };
        // SAFETY: A non-null `dev` is valid while the packet is processed (see above).
        NonNull::new(dev).map(|d| unsafe { NetDevice::from_raw(d.as_ptr()) })
    }

    /// Makes the packet's data contiguous, so that [`Self::headers`] sees all of it.
    pub fn linearize(&mut self) -> Result {
        // SAFETY: We own the socket buffer.
        to_result(unsafe { bindings::skb_linearize(self.0.as_ptr()) })
    }

    /// Returns the IP header (with options) and the UDP header and payload, from the linear
    /// part of the packet.
    pub fn headers(&self) -> Option<(&[u8], &[u8])> {
        let skb = self.0.as_ptr();
        // SAFETY: We own the buffer; the header pointers and the tail are inside its linear
        // part, which lives as long as `self` and is not written while borrowed.
        unsafe {
            let ip = bindings::skb_network_header(skb);
            let udp = bindings::skb_transport_header(skb);
            let tail = bindings::skb_tail_pointer(skb);
            let ip_len = usize::try_from(udp.offset_from(ip)).ok()?;
            let udp_len = usize::try_from(tail.offset_from(udp)).ok()?;
            Some((
                core::slice::from_raw_parts(ip, ip_len),
                core::slice::from_raw_parts(udp, udp_len),
            ))
        }
    }

    /// Frees the packet as successfully processed (not a drop).
    pub fn consume(self) {
        let skb = self.0.as_ptr();
        core::mem::forget(self);
        // SAFETY: We owned the buffer and give it back.
        unsafe { bindings::consume_skb(skb) };
    }
}

impl Drop for RxPacket {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own the buffer; dropping it unprocessed is a drop.
        unsafe { bindings::kfree_skb(self.0.as_ptr()) };
    }
}

/// An output route (`struct dst_entry`), counted.
///
/// # Invariants
///
/// `dst` is a valid route on which this object holds one reference.
pub struct Route {
    dst: NonNull<bindings::dst_entry>,
    ipv6: bool,
    /// What [`Route::is_current`] validates the route against: the IPv6 routing table's
    /// serial number when the route was looked up (`rt6_get_cookie()`), 0 for IPv4 (whose
    /// routes carry their own generation).
    cookie: u32,
}

// SAFETY: A route reference may be used and released from any context.
unsafe impl Send for Route {}
// SAFETY: `&self` methods only read the route.
unsafe impl Sync for Route {}

impl Route {
    /// Looks up the IPv4 route from `saddr` to `daddr` out of `ndev`, in `ndev`'s network
    /// namespace.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    pub fn ipv4(ndev: &NetDevice, saddr: [u8; 4], daddr: [u8; 4]) -> Result<Self> {
        let mut fl4: bindings::flowi4 = pin_init::zeroed();
        fl4.__fl_common.flowic_oif = ndev.ifindex();
        fl4.__fl_common.flowic_proto = bindings::IPPROTO_UDP as u8;
        fl4.saddr = u32::from_ne_bytes(saddr);
        fl4.daddr = u32::from_ne_bytes(daddr);
        // A namespace is freed only after an RCU grace period that follows its last
        // netdevice's departure (`cleanup_net()`): under the read lock, the namespace of a
        // held netdevice stays valid, even if the netdevice is moved meanwhile.
        let _rcu = rcu::read_lock();
        // SAFETY: `ndev` is valid (type invariant); its namespace is valid under the RCU read
        // lock (see above), and `fl4` for the call. The result is a referenced route or an
        // error pointer.
        let rt = from_err_ptr(unsafe {
            bindings::ip_route_output_flow(
                bindings::dev_net(ndev.as_raw()),
                &mut fl4,
                core::ptr::null(),
            )
        })?;
        let rt = NonNull::new(rt).ok_or(EHOSTUNREACH)?;
        // INVARIANT: `dst` is the first field of the referenced `rtable`.
        Ok(Self {
            dst: rt.cast(),
            ipv6: false,
            cookie: 0,
        })
    }

    /// Looks up the IPv6 route from `saddr` to `daddr` out of `ndev` (which link-local
    /// destinations need), in `ndev`'s network namespace.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    #[cfg(CONFIG_IPV6)]
    pub fn ipv6(ndev: &NetDevice, saddr: [u8; 16], daddr: [u8; 16]) -> Result<Self> {
        let mut fl6: bindings::flowi6 = pin_init::zeroed();
        fl6.__fl_common.flowic_oif = ndev.ifindex();
        fl6.__fl_common.flowic_proto = bindings::IPPROTO_UDP as u8;
        fl6.saddr.in6_u.u6_addr8 = saddr;
        fl6.daddr.in6_u.u6_addr8 = daddr;
        // As in `ipv4()`: the namespace of a held netdevice is valid under the read lock.
        let rcu = rcu::read_lock();
        // SAFETY: `ndev` and its namespace are valid (see above), `fl6` for the call. The
        // result is always a referenced route, with `error` set if there is none.
        let dst = unsafe {
            bindings::ip6_route_output_flags(
                bindings::dev_net(ndev.as_raw()),
                core::ptr::null(),
                &mut fl6,
                0,
            )
        };
        drop(rcu);
        let dst = NonNull::new(dst).ok_or(EHOSTUNREACH)?;
        // INVARIANT: We own the reference returned above.
        let mut route = Self {
            dst,
            ipv6: true,
            cookie: 0,
        };
        // SAFETY: `dst` is valid.
        let err = unsafe { (*dst.as_ptr()).error };
        if err != 0 {
            return Err(Error::from_errno(err.into()));
        }
        // SAFETY: `dst` is a valid IPv6 route (`ip6_route_output_flags()` returns the `dst`
        // of a `struct rt6_info`).
        route.cookie = unsafe { bindings::rdma_rt6_cookie(dst.as_ptr()) };
        Ok(route)
    }

    /// Returns whether the route is still valid (`dst_check()`): false once a change of the
    /// routing tables, of an address or of the output device made it obsolete, when it
    /// must be looked up again. This lets a holder keep a route across packets, as a
    /// connected socket keeps its `sk_dst_cache`.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    pub fn is_current(&self) -> bool {
        // SAFETY: By the type invariant the route is valid. `dst_check()` only reads it (the
        // IPv6 check takes the RCU read lock itself) and returns it or null, without
        // changing its reference count.
        !unsafe { bindings::dst_check(self.dst.as_ptr(), self.cookie) }.is_null()
    }

    /// Returns whether the route is an IPv6 one.
    pub fn is_ipv6(&self) -> bool {
        self.ipv6
    }

    /// Returns whether the route leads to this host (its output device is a loopback one):
    /// such packets must be handed to the local receive path rather than sent.
    pub fn is_local(&self) -> bool {
        // SAFETY: By the type invariant the route is valid and holds its device.
        let flags = unsafe { (*(*self.dst.as_ptr()).__bindgen_anon_1.dev).flags };
        flags & bindings::net_device_flags_IFF_LOOPBACK != 0
    }

    /// Returns the headroom a packet needs for the link layer of the route's device.
    fn headroom(&self) -> usize {
        // SAFETY: By the type invariant the route is valid; its device is held by it.
        unsafe { bindings::ll_reserved_space((*self.dst.as_ptr()).__bindgen_anon_1.dev) as usize }
    }
}

impl Drop for Route {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own one reference.
        unsafe { bindings::dst_release(self.dst.as_ptr()) };
    }
}

/// An outgoing IP datagram being built (`struct sk_buff`), owned.
///
/// # Invariants
///
/// `skb` is a socket buffer this object owns, with `len` bytes of linear data at `data`
/// (the whole IP datagram), its network header at the start and its transport header
/// `ip_len` bytes in.
pub struct TxBuf {
    skb: NonNull<bindings::sk_buff>,
    data: NonNull<u8>,
    len: usize,
}

// SAFETY: An owned socket buffer may move between contexts.
unsafe impl Send for TxBuf {}

impl TxBuf {
    /// Allocates a datagram of `len` bytes whose IP header (with options) is `ip_len` bytes,
    /// for sending along `route`.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts; allocates with `GFP_ATOMIC`.
    pub fn new(route: &Route, ip_len: usize, len: usize) -> Result<Self> {
        if ip_len > len {
            return Err(EINVAL);
        }
        let headroom = route.headroom();
        let size = len.checked_add(headroom).ok_or(EMSGSIZE)?;
        let (reserve, put, offset) = (
            c_int::try_from(headroom).map_err(|_| EMSGSIZE)?,
            c_uint::try_from(len).map_err(|_| EMSGSIZE)?,
            c_int::try_from(ip_len).map_err(|_| EMSGSIZE)?,
        );
        // SAFETY: No preconditions; the result is null or a new buffer we own.
        let skb = unsafe {
            bindings::__alloc_skb(
                c_uint::try_from(size).map_err(|_| EMSGSIZE)?,
                bindings::GFP_ATOMIC,
                0,
                bindings::NUMA_NO_NODE,
            )
        };
        let skb = NonNull::new(skb).ok_or(ENOMEM)?;
        // SAFETY: The buffer is new and has room for `headroom + len` bytes.
        let data = unsafe {
            bindings::skb_reserve(skb.as_ptr(), reserve);
            let data = bindings::skb_put(skb.as_ptr(), put);
            bindings::skb_reset_network_header(skb.as_ptr());
            bindings::skb_set_transport_header(skb.as_ptr(), offset);
            data
        };
        let Some(data) = NonNull::new(data.cast::<u8>()) else {
            // SAFETY: We own the buffer.
            unsafe { bindings::kfree_skb(skb.as_ptr()) };
            return Err(ENOMEM);
        };
        // INVARIANT: Set up above.
        Ok(Self { skb, data, len })
    }

    /// Returns the datagram's bytes, from the IP header on.
    pub fn data_mut(&mut self) -> &mut [u8] {
        // SAFETY: By the type invariant `data` holds `len` bytes of the buffer we own, which
        // nothing else accesses while `self` is borrowed.
        unsafe { core::slice::from_raw_parts_mut(self.data.as_ptr(), self.len) }
    }

    /// Turns the datagram into a received one, as if it had arrived on `dev` (local delivery
    /// to a QP on the same device).
    pub fn into_rx(self, dev: &NetDevice) -> RxPacket {
        let skb = self.skb;
        core::mem::forget(self);
        // SAFETY: We own the buffer; its network and transport headers are set. The device
        // is only used while the packet is processed, when the netdevice still exists (the
        // caller's RDMA device holds it).
        unsafe {
            (*skb.as_ptr())
                .__bindgen_anon_1
                .__bindgen_anon_1
                .__bindgen_anon_1
                .dev = dev.as_raw();
        }
        // INVARIANT: An owned buffer whose headers are the IP and UDP ones.
        RxPacket(skb)
    }

    /// Sends the datagram along `route` (`ip_local_out` or `ip6_local_out`). The IP header's
    /// total or payload length and the IPv4 checksum are filled in here.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts.
    pub fn send(self, route: &Route) -> Result {
        let skb = self.skb.as_ptr();
        core::mem::forget(self);
        // The route's device is held by the route; its namespace is valid under the RCU read
        // lock (see `Route::ipv4()`).
        let _rcu = rcu::read_lock();
        // SAFETY: We own the buffer and pass it on; `route` holds a reference on `dst`, and
        // the buffer takes one more. The output device's namespace is valid (see above).
        let ret = unsafe {
            bindings::skb_dst_set(skb, bindings::dst_clone(route.dst.as_ptr()));
            let net = bindings::dev_net((*route.dst.as_ptr()).__bindgen_anon_1.dev);
            if route.ipv6 {
                Self::out6(net, skb)
            } else {
                bindings::ip_local_out(net, core::ptr::null_mut(), skb)
            }
        };
        // `net_xmit_eval()`: congestion notifications are not errors.
        match ret {
            r if r < 0 => Err(Error::from_errno(r)),
            r if r == bindings::NET_XMIT_DROP as c_int => Err(ENOBUFS),
            _ => Ok(()),
        }
    }

    /// # Safety
    ///
    /// `skb` is an owned, routed IPv6 datagram; `net` the namespace of its route's device.
    #[cfg(CONFIG_IPV6)]
    unsafe fn out6(net: *mut bindings::net, skb: *mut bindings::sk_buff) -> c_int {
        // SAFETY: Per the function's contract.
        unsafe { bindings::ip6_local_out(net, core::ptr::null_mut(), skb) }
    }

    /// # Safety
    ///
    /// `skb` is an owned datagram.
    #[cfg(not(CONFIG_IPV6))]
    unsafe fn out6(_net: *mut bindings::net, skb: *mut bindings::sk_buff) -> c_int {
        // SAFETY: Per the function's contract, we own it.
        unsafe { bindings::kfree_skb(skb) };
        -(bindings::EAFNOSUPPORT as c_int)
    }
}

impl Drop for TxBuf {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own the buffer; dropping it unsent is a drop.
        unsafe { bindings::kfree_skb(self.skb.as_ptr()) };
    }
}

/// A queue of received packets (`struct sk_buff_head`, with its own lock), e.g. for local
/// delivery from the transmit path to a softirq work item.
///
/// # Invariants
///
/// `head` is initialised; every buffer on it is owned by the queue.
#[pin_data(PinnedDrop)]
pub struct PacketQueue {
    #[pin]
    head: Opaque<bindings::sk_buff_head>,
}

// SAFETY: The queue has its own irq-safe lock; the buffers are owned.
unsafe impl Send for PacketQueue {}
// SAFETY: See above.
unsafe impl Sync for PacketQueue {}

impl PacketQueue {
    /// Returns an initialiser for an empty queue.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            // INVARIANT: Initialised here.
            // SAFETY: `slot` is valid for writes.
            head <- Opaque::ffi_init(|slot| unsafe { bindings::skb_queue_head_init(slot) }),
        })
    }

    /// Appends a packet.
    pub fn push(&self, pkt: RxPacket) {
        let skb = pkt.0.as_ptr();
        core::mem::forget(pkt);
        // SAFETY: The queue is initialised; it takes ownership of the buffer.
        unsafe { bindings::skb_queue_tail(self.head.get(), skb) };
    }

    /// Returns the number of packets queued (a snapshot: others may push or pop meanwhile).
    pub fn len(&self) -> usize {
        // SAFETY: The queue is initialised; `qlen` changes under the queue's lock, and a
        // racy snapshot is what `skb_queue_len_lockless()` reads too (`READ_ONCE`).
        let n = unsafe { core::ptr::read_volatile(&raw const (*self.head.get()).qlen) };
        usize::try_from(n).unwrap_or(usize::MAX)
    }

    /// Returns `true` if no packet is queued (a snapshot, as [`Self::len`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Takes the oldest packet.
    pub fn pop(&self) -> Option<RxPacket> {
        // SAFETY: The queue is initialised; a buffer taken off it is ours.
        let skb = unsafe { bindings::skb_dequeue(self.head.get()) };
        // INVARIANT: Queued buffers are received packets with their headers set.
        NonNull::new(skb).map(RxPacket)
    }
}

#[pinned_drop]
impl PinnedDrop for PacketQueue {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: The queue is initialised and owns its buffers.
        unsafe { bindings::skb_queue_purge(self.head.get()) };
    }
}
