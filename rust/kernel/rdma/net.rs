// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 transport plumbing: the UDP tunnel socket on port 4791 and received packets.
//!
//! Soft RoCE receives through a kernel UDP socket set up as a tunnel: the UDP stack hands
//! every datagram for the port to the driver's `encap_rcv` callback, in softirq context,
//! before any socket queueing.
//!
//! C header: [`include/net/udp_tunnel.h`](srctree/include/net/udp_tunnel.h)

use super::netdev::NetDevice;
use crate::{bindings, error::to_result, prelude::*};
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

/// Receives the datagrams of a [`UdpTunnel`].
pub trait TunnelRx: Send + Sync + 'static {
    /// Takes a datagram that arrived on the tunnel port.
    ///
    /// # Context
    ///
    /// Softirq, under RCU; must not sleep.
    fn receive(pkt: RxPacket);
}

/// A kernel UDP socket (IPv4 or IPv6) on a port of the initial network namespace, set up as a
/// tunnel that hands every datagram to `T`.
///
/// # Invariants
///
/// `sock` is a UDP tunnel socket created by `udp_sock_create4/6()` and set up with `T`'s
/// callback; it is released on drop.
pub struct UdpTunnel<T: TunnelRx> {
    sock: NonNull<bindings::socket>,
    _t: PhantomData<T>,
}

// SAFETY: The socket is used only through the kernel's own synchronisation.
unsafe impl<T: TunnelRx> Send for UdpTunnel<T> {}
// SAFETY: See the `Send` implementation.
unsafe impl<T: TunnelRx> Sync for UdpTunnel<T> {}

impl<T: TunnelRx> UdpTunnel<T> {
    /// Opens the IPv4 tunnel on `port`; fails with `EADDRINUSE` if the port is taken.
    pub fn new_ipv4(port: u16) -> Result<Self> {
        let mut cfg: bindings::udp_port_cfg = pin_init::zeroed();
        cfg.family = bindings::AF_INET as u8;
        cfg.local_udp_port = port.to_be();
        let mut sock: *mut bindings::socket = core::ptr::null_mut();
        // SAFETY: `init_net` lives forever; `cfg` and `sock` are valid for the call.
        to_result(unsafe {
            bindings::udp_sock_create4(&raw mut bindings::init_net, &mut cfg, &mut sock)
        })?;
        Self::setup(sock)
    }

    /// Opens the IPv6 tunnel on `port` (IPv6 only: IPv4 goes to the IPv4 tunnel).
    #[cfg(CONFIG_IPV6)]
    pub fn new_ipv6(port: u16) -> Result<Self> {
        let mut cfg: bindings::udp_port_cfg = pin_init::zeroed();
        cfg.family = bindings::AF_INET6 as u8;
        cfg.local_udp_port = port.to_be();
        cfg.set_ipv6_v6only(1);
        let mut sock: *mut bindings::socket = core::ptr::null_mut();
        // SAFETY: `init_net` lives forever; `cfg` and `sock` are valid for the call.
        to_result(unsafe {
            bindings::udp_sock_create6(&raw mut bindings::init_net, &mut cfg, &mut sock)
        })?;
        Self::setup(sock)
    }

    /// Sets a new UDP socket up as a tunnel calling `T`.
    fn setup(sock: *mut bindings::socket) -> Result<Self> {
        let sock = NonNull::new(sock).ok_or(ENOMEM)?;
        let mut tnl: bindings::udp_tunnel_sock_cfg = pin_init::zeroed();
        tnl.encap_type = 1;
        tnl.encap_rcv = Some(Self::encap_rcv);
        // SAFETY: `sock` was just created; from now on the UDP stack calls `encap_rcv` for
        // its datagrams, until the socket is released in drop.
        unsafe {
            bindings::setup_udp_tunnel_sock(
                &raw mut bindings::init_net,
                (*sock.as_ptr()).sk,
                &mut tnl,
            )
        };
        // INVARIANT: Created by the caller and set up above.
        Ok(Self {
            sock,
            _t: PhantomData,
        })
    }

    /// # Safety
    ///
    /// Called by the UDP stack with an owned socket buffer whose transport header is UDP.
    unsafe extern "C" fn encap_rcv(_sk: *mut bindings::sock, skb: *mut bindings::sk_buff) -> c_int {
        if let Some(skb) = NonNull::new(skb) {
            // INVARIANT: The UDP stack passes ownership of the datagram.
            T::receive(RxPacket(skb));
        }
        // Consumed: the UDP stack must not deliver it further.
        0
    }
}

impl<T: TunnelRx> Drop for UdpTunnel<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own the socket; `sk` is its sock.
        unsafe { bindings::udp_tunnel_sock_release((*self.sock.as_ptr()).sk) };
        // The UDP stack calls `encap_rcv` under RCU: wait for calls in flight, so that `T` is
        // not called once this returns.
        // SAFETY: No preconditions; we are in process context.
        unsafe { bindings::synchronize_rcu() };
    }
}
