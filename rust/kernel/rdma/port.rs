// SPDX-License-Identifier: GPL-2.0

//! The RoCEv2 port, UDP 4791, in every network namespace that has a device (re-exported by
//! [`super::net`]): [`RocePort`] opens the tunnel sockets of a namespace for its first
//! [`PortUser`] and closes them with its last, or when the namespace goes away.
//!
//! C headers: [`include/net/udp_tunnel.h`](srctree/include/net/udp_tunnel.h),
//! [`include/net/net_namespace.h`](srctree/include/net/net_namespace.h)

use super::net::RxPacket;
use super::netdev::{NetDevice, NetRef};
use crate::{
    alloc::KVec,
    bindings,
    error::to_result,
    new_mutex,
    prelude::*,
    sync::{
        atomic::{ordering, Atomic},
        rcu, Arc, ArcBorrow, Mutex,
    },
    types::Opaque,
};
use core::{marker::PhantomData, ptr::NonNull};

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
    /// Registers the port `port` (normally [`ROCE_V2_UDP_PORT`](super::net::ROCE_V2_UDP_PORT)); no
    /// socket is opened before a [`PortUser`] asks for one. Fails with `EBUSY` if a port is
    /// registered already.
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
            (shared, NetRef::of(ndev)?)
        };
        // SAFETY: We hold a reference on the namespace.
        let cookie = unsafe { net_cookie(net.as_raw()) };
        let mut nets = shared.nets.lock();
        if let Some(n) = nets.iter_mut().find(|n| n.cookie == cookie) {
            n.users += 1;
        } else {
            // SAFETY: We hold a reference on the namespace; the sockets go into its entry,
            // which its exit removes (closing them) before the namespace is freed.
            let v4 = unsafe { Socket::open(net.as_raw(), shared.port, false, shared.rx) }?;
            // SAFETY: As above.
            let v6 = match unsafe { Socket::open(net.as_raw(), shared.port, true, shared.rx) } {
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
