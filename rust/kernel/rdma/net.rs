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
use crate::{
    alloc::KVec,
    bindings,
    error::{from_err_ptr, to_result},
    new_mutex,
    prelude::*,
    sync::{
        atomic::{ordering, Atomic},
        rcu, Arc, ArcBorrow, Mutex,
    },
    types::Opaque,
};
use core::{marker::PhantomData, ptr::NonNull};

/// The IANA port of RoCEv2.
pub const ROCE_V2_UDP_PORT: u16 = 4791;

/// A received UDP datagram, owned (`struct sk_buff`).
///
/// # Invariants
///
/// `self.0` is a valid socket buffer that this object owns; its transport header is the UDP
/// header and its network header the IP header.
pub struct RxPacket(NonNull<bindings::sk_buff>);

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

/// Receives the datagrams of a [`RocePort`].
pub trait TunnelRx: Send + Sync + 'static {
    /// Takes a datagram that arrived on the RoCEv2 port of any network namespace.
    ///
    /// # Context
    ///
    /// Softirq, under RCU; must not sleep.
    fn receive(pkt: RxPacket);
}

/// The `encap_rcv` callback of a tunnel socket.
type EncapRcv = unsafe extern "C" fn(*mut bindings::sock, *mut bindings::sk_buff) -> c_int;

/// # Safety
///
/// Called by the UDP stack with an owned socket buffer whose transport header is UDP.
unsafe extern "C" fn encap_rcv<T: TunnelRx>(
    _sk: *mut bindings::sock,
    skb: *mut bindings::sk_buff,
) -> c_int {
    if let Some(skb) = NonNull::new(skb) {
        // INVARIANT: The UDP stack passes ownership of the datagram.
        T::receive(RxPacket(skb));
    }
    // Consumed: the UDP stack must not deliver it further.
    0
}

/// A kernel UDP socket of a network namespace, set up as a tunnel; released on drop.
///
/// # Invariants
///
/// `self.0` is a UDP tunnel socket created by `udp_sock_create4/6()` in a namespace that is
/// alive as long as this object (it is owned by a [`NetSockets`] entry, which the namespace's
/// exit removes).
struct Socket(NonNull<bindings::socket>);

// SAFETY: A kernel socket may be released from any process context; it is used only through
// the kernel's own synchronisation.
unsafe impl Send for Socket {}

impl Socket {
    /// Opens the tunnel socket of `net` on `port` (IPv6 only when `ipv6`: IPv4 goes to the
    /// IPv4 socket), handing its datagrams to `rx`.
    ///
    /// # Safety
    ///
    /// `net` is a live namespace on which the caller holds a reference, and the caller keeps
    /// the socket no longer than the namespace lives.
    unsafe fn open(net: *mut bindings::net, port: u16, ipv6: bool, rx: EncapRcv) -> Result<Self> {
        let mut cfg: bindings::udp_port_cfg = pin_init::zeroed();
        cfg.local_udp_port = port.to_be();
        let mut sock: *mut bindings::socket = core::ptr::null_mut();
        if ipv6 {
            cfg.family = bindings::AF_INET6 as u8;
            cfg.set_ipv6_v6only(1);
            // SAFETY: `net` is live (the caller's contract); `cfg` and `sock` are valid.
            to_result(unsafe { Self::create6(net, &mut cfg, &mut sock) })?;
        } else {
            cfg.family = bindings::AF_INET as u8;
            // SAFETY: As above.
            to_result(unsafe { bindings::udp_sock_create4(net, &mut cfg, &mut sock) })?;
        }
        let sock = NonNull::new(sock).ok_or(ENOMEM)?;
        let mut tnl: bindings::udp_tunnel_sock_cfg = pin_init::zeroed();
        tnl.encap_type = 1;
        tnl.encap_rcv = Some(rx);
        // SAFETY: `sock` was just created in `net`; from now on the UDP stack calls `rx` for
        // its datagrams, until the socket is released in drop.
        unsafe { bindings::setup_udp_tunnel_sock(net, (*sock.as_ptr()).sk, &mut tnl) };
        // INVARIANT: Created above in `net`, which outlives it by the caller's contract.
        Ok(Self(sock))
    }

    /// # Safety
    ///
    /// As `udp_sock_create6()`.
    #[cfg(CONFIG_IPV6)]
    unsafe fn create6(
        net: *mut bindings::net,
        cfg: *mut bindings::udp_port_cfg,
        sock: *mut *mut bindings::socket,
    ) -> c_int {
        // SAFETY: Per the function's contract.
        unsafe { bindings::udp_sock_create6(net, cfg, sock) }
    }

    /// # Safety
    ///
    /// None: without IPv6 there is no IPv6 socket.
    #[cfg(not(CONFIG_IPV6))]
    unsafe fn create6(
        _net: *mut bindings::net,
        _cfg: *mut bindings::udp_port_cfg,
        _sock: *mut *mut bindings::socket,
    ) -> c_int {
        -(bindings::EAFNOSUPPORT as c_int)
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own the socket and its namespace is alive; `sk` is
        // its sock. Receive callbacks in flight finish under RCU (the sock is freed after a
        // grace period); the module's code is kept until [`RocePort`]'s drop waits for them.
        unsafe { bindings::udp_tunnel_sock_release((*self.0.as_ptr()).sk) };
    }
}

/// The RoCEv2 sockets of one network namespace.
struct NetSockets {
    /// The namespace's `net_cookie`: unique for the life of the system, where its address
    /// may be reused by a later namespace.
    cookie: u64,
    /// The [`PortUser`]s of the namespace.
    users: usize,
    /// Dropped before the namespace goes (the entry is removed by its exit at the latest).
    _v4: Socket,
    _v6: Option<Socket>,
}

/// What a [`RocePort`] shares with its users and with the namespace exit callback.
#[pin_data]
struct PortShared {
    /// The namespaces with sockets open.
    #[pin]
    nets: Mutex<KVec<NetSockets>>,
    /// The receive callback of the driver that registered the port.
    rx: EncapRcv,
    port: u16,
}

/// The registered [`RocePort`]'s shared state (from [`Arc::as_ptr`]), or null. Set while the
/// port is registered; readers clone the `Arc` under the RCU read lock, and the port's drop
/// clears it and waits for a grace period before dropping its own reference.
static CURRENT: Atomic<*mut PortShared> = Atomic::new(core::ptr::null_mut());

/// Returns `net`'s cookie.
///
/// # Safety
///
/// `net` is a valid namespace.
unsafe fn net_cookie(net: *mut bindings::net) -> u64 {
    // SAFETY: Per the function's contract; `net_cookie` is written once, at creation.
    unsafe { (*net).net_cookie }
}

/// The RoCEv2 port, UDP 4791, in every network namespace that has a device: the sockets of
/// a namespace are opened by its first [`PortUser`] (the first device created on one of its
/// netdevices) and closed by its last, or when the namespace goes away (its exit callback,
/// `struct pernet_operations`), as `rdma_rxe` does (`rxe_ns.c`). Every datagram of every
/// namespace goes to `T`.
///
/// One port can be registered at a time (the port number is global to the system's
/// namespaces, and the users find it without a handle).
///
/// # Invariants
///
/// While the object lives, `ops` is registered and `CURRENT` points to `shared`.
#[pin_data(PinnedDrop)]
pub struct RocePort<T: TunnelRx> {
    #[pin]
    ops: Opaque<bindings::pernet_operations>,
    shared: Arc<PortShared>,
    _t: PhantomData<T>,
}

// SAFETY: `ops` is only used by the namespace core; `shared` is synchronised by its mutex.
unsafe impl<T: TunnelRx> Send for RocePort<T> {}
// SAFETY: See the `Send` implementation.
unsafe impl<T: TunnelRx> Sync for RocePort<T> {}

impl<T: TunnelRx> RocePort<T> {
    /// Registers the port `port` (normally [`ROCE_V2_UDP_PORT`]); no socket is opened before
    /// a [`PortUser`] asks for one. Fails with `EBUSY` if a port is registered already.
    ///
    /// # Context
    ///
    /// Process context.
    pub fn new(port: u16) -> impl PinInit<Self, Error> {
        let shared = Arc::pin_init(
            pin_init!(PortShared {
                nets <- new_mutex!(KVec::new(), "rdma_roce_port"),
                rx: encap_rcv::<T>,
                port,
            }),
            GFP_KERNEL,
        );
        try_pin_init!(Self {
            shared: shared?,
            _t: PhantomData,
            ops <- Opaque::try_ffi_init(|ops: *mut bindings::pernet_operations| {
                let ptr = Arc::as_ptr(shared).cast_mut();
                CURRENT
                    .cmpxchg(core::ptr::null_mut(), ptr, ordering::Full)
                    .map_err(|_| EBUSY)?;
                // SAFETY: `ops` is valid for writes and pinned until drop, which unregisters
                // it.
                let ret = unsafe {
                    ops.write(bindings::pernet_operations {
                        exit: Some(Self::exit_callback),
                        ..pin_init::zeroed()
                    });
                    bindings::register_pernet_subsys(ops)
                };
                if ret != 0 {
                    CURRENT.store(core::ptr::null_mut(), ordering::Release);
                    return Err(Error::from_errno(ret));
                }
                Ok(())
            }),
        })
    }

    /// Called for each namespace that goes away (and for every namespace when the port is
    /// unregistered): closes its sockets.
    ///
    /// # Safety
    ///
    /// Called by the namespace core, in process context, with a namespace being exited.
    unsafe extern "C" fn exit_callback(net: *mut bindings::net) {
        let ptr = CURRENT.load(ordering::Acquire);
        if ptr.is_null() {
            return;
        }
        // SAFETY: The namespace core calls `exit` only while `ops` is registered, during which
        // `CURRENT` points to the port's `shared`, kept alive by the port until after it has
        // unregistered `ops`.
        let shared = unsafe { &*ptr };
        // SAFETY: The namespace is valid during its exit.
        let cookie = unsafe { net_cookie(net) };
        let gone = {
            let mut nets = shared.nets.lock();
            let i = nets.iter().position(|n| n.cookie == cookie);
            i.and_then(|i| nets.remove(i).ok())
        };
        // The sockets close here, while the namespace is still valid.
        drop(gone);
    }
}

#[pinned_drop]
impl<T: TunnelRx> PinnedDrop for RocePort<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: By the type invariant `ops` is registered. Unregistering calls its exit for
        // every namespace, which closes every socket still open.
        unsafe { bindings::unregister_pernet_subsys(self.ops.get()) };
        CURRENT.store(core::ptr::null_mut(), ordering::Release);
        // Wait for `PortUser::new()` calls that loaded the pointer, and for receive callbacks
        // in flight, before `T`'s code may go away with the module.
        rcu::synchronize_rcu();
    }
}

/// A user of the RoCEv2 port of a network namespace: while it lives, the namespace's
/// sockets are open (unless the namespace went away, which closes them).
pub struct PortUser {
    shared: Arc<PortShared>,
    cookie: u64,
}

impl PortUser {
    /// Takes a user of the registered [`RocePort`] in `ndev`'s namespace, opening the
    /// namespace's sockets if it is the first. Fails with `ENXIO` if no port is registered.
    ///
    /// # Context
    ///
    /// Process context; may sleep.
    pub fn new(ndev: &NetDevice) -> Result<Self> {
        let (shared, net) = {
            let _rcu = rcu::read_lock();
            let ptr = CURRENT.load(ordering::Acquire);
            if ptr.is_null() {
                return Err(ENXIO);
            }
            // SAFETY: `ptr` is from `Arc::as_ptr()`; the port drops its reference only after
            // clearing `CURRENT` and waiting for a grace period, so the count is not zero
            // while we are in this read-side critical section.
            let shared: Arc<PortShared> = unsafe { ArcBorrow::from_raw(ptr) }.into();
            // SAFETY: `ndev` is valid and its namespace too, under the RCU read lock (see
            // `Route::ipv4()`); `maybe_get_net()` takes a reference unless it is dying.
            let net = unsafe { bindings::maybe_get_net(bindings::dev_net(ndev.as_raw())) };
            (shared, NonNull::new(net).ok_or(ENODEV)?)
        };
        let net = NetRef(net);
        // SAFETY: We hold a reference on the namespace.
        let cookie = unsafe { net_cookie(net.0.as_ptr()) };
        let mut nets = shared.nets.lock();
        if let Some(n) = nets.iter_mut().find(|n| n.cookie == cookie) {
            n.users += 1;
        } else {
            // SAFETY: We hold a reference on the namespace; the sockets go into its entry,
            // which its exit removes (closing them) before the namespace is freed.
            let v4 = unsafe { Socket::open(net.0.as_ptr(), shared.port, false, shared.rx) }?;
            // SAFETY: As above.
            let v6 = match unsafe { Socket::open(net.0.as_ptr(), shared.port, true, shared.rx) } {
                Ok(s) => Some(s),
                // A kernel without IPv6 (or with it disabled): IPv4 only, as rdma_rxe.
                Err(e) if e == EAFNOSUPPORT => None,
                Err(e) => return Err(e),
            };
            nets.push(
                NetSockets {
                    cookie,
                    users: 1,
                    _v4: v4,
                    _v6: v6,
                },
                GFP_KERNEL,
            )?;
        }
        drop(nets);
        Ok(Self { shared, cookie })
    }
}

impl Drop for PortUser {
    fn drop(&mut self) {
        let gone = {
            let mut nets = self.shared.nets.lock();
            let i = nets.iter_mut().position(|n| {
                if n.cookie == self.cookie {
                    n.users = n.users.saturating_sub(1);
                    true
                } else {
                    false
                }
            });
            // The last user closes the namespace's sockets. If the namespace went away, its
            // entry went with it and there is nothing to do.
            i.filter(|&i| nets.get(i).is_some_and(|n| n.users == 0))
                .and_then(|i| nets.remove(i).ok())
        };
        drop(gone);
    }
}

/// A reference on a network namespace, dropped with `put_net()`.
struct NetRef(NonNull<bindings::net>);

impl Drop for NetRef {
    fn drop(&mut self) {
        // SAFETY: We own one reference (taken with `maybe_get_net()`).
        unsafe { bindings::put_net(self.0.as_ptr()) };
    }
}
