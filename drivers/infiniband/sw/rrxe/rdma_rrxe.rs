// SPDX-License-Identifier: GPL-2.0

//! rrxe: a soft-RoCE (RoCEv2) RDMA driver.
//!
//! `rdma link add rrxe0 type rrxe netdev eth0` turns an Ethernet netdevice into an RDMA
//! device that speaks the InfiniBand transport over UDP port 4791. The device reports the
//! driver id and user ABI of the C `rdma_rxe`, so rdma-core's rxe provider drives it.
//!
//! Files, on floors (each names only its own floor and those below; `make check` proves
//! it, see `scripts/import-edges.txt` and Documentation/rrxe.rst, "Floors"), top first:
//! - `rdma_rrxe.rs`: the module: link type, driver fence, netdevice events, and [`Rrxe`].
//! - rx: `net.rs`, the receive path (UDP port 4791): attribution, parsing, ICRC, dispatch
//!   to the QP.
//! - device: `device/`, creation on a netdevice and the device's numbers (`mod.rs`), and
//!   the verbs ib_core calls (`verbs.rs`).
//! - verbs: each object's verbs: `qp.rs` (creation, attribute checks, modify, query,
//!   destroy), `srq.rs`, `mr.rs`, `mw.rs`, `ah.rs` (checked address vectors, numbered for
//!   the user ABI), `pd.rs`; `rc_kunit.rs`, the KUnit suite running the wire core's RC
//!   machines inside the kernel.
//! - engine: `engine/`, a QP's data path, by role: creation (`setup.rs`), requester
//!   (`req.rs`, its shadow ring `shadow.rs`), responder (`resp.rs`), its queued replies
//!   (`replies.rs`), datagrams (`ud.rs`), completion entries (`cqe.rs`), memory access
//!   (`mem.rs`), transmission (`xmit.rs`), the work queues (`wq.rs`), a shared receive
//!   queue (`srq.rs`), QP states (`state.rs`).
//! - shared: `shared.rs`, what every QP shares of its device (loopback, key and AH
//!   tables, counters, fault queue); `cq.rs`, completion queues.
//! - memory: `mem/`, keys and memory: the key table and `Key` (`key.rs`), the resolver
//!   (`resolve.rs`), regions (`mod.rs`, `user.rs`, `fast.rs`) and windows (`window.rs`);
//!   `odp.rs`, page faults of on-demand paging regions, resolved in process context.
//! - base: `params.rs` (limits, object counters, netdevice-to-RDMA mappings), `budget.rs`
//!   (the budget of bounded work), `counters.rs` (port and per-QP counters), `fifo.rs` (a
//!   bounded FIFO allocated once), `queue.rs` (the rxe shared queue), `mcast.rs`
//!   (multicast groups), `crc.rs` (the kernel's CRC-32 for the ICRC), `dbg.rs` (debug
//!   messages).
//! - proto: `proto/`, the RoCEv2 wire core (headers, opcode table, ICRC, PSN, the RC
//!   machines, the user ABI), `core`-only, shared with the host crate `tools/rrxe`.

// No path a packet or a user can reach may panic: the driver is held to what the wire core
// (`proto`) is held to, and so are its KUnit suites (they fail with `?` and `assert!`).
#![deny(
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::unreachable,
    clippy::unwrap_used
)]

use kernel::prelude::*;
use kernel::rdma::{
    device::{Device, DriverRegistration},
    link::{LinkOps, LinkRegistration},
    net::{RocePort, ROCE_V2_UDP_PORT},
    netdev::{self, NetDevice, NotifierRegistration},
};

#[macro_use]
mod dbg;
mod ah;
mod budget;
mod cc;
mod counters;
mod cq;
mod crc;
mod device;
mod engine;
mod fifo;
mod mcast;
mod mem;
mod mr;
mod mw;
mod net;
mod odp;
mod params;
mod pd;
// Private, so that the dead-code lint sees what the module does not use: items only the host
// crate `tools/rrxe` uses are behind `#[cfg(rrxe_host)]` there. They are `pub` for that crate.
#[allow(unreachable_pub)]
mod proto;
mod qp;
mod queue;
#[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
mod rc_kunit;
mod shared;
mod srq;

use counters::PortCounter;

/// The rrxe driver: the marker type every `kernel::rdma` object of the driver is generic
/// over (its [`kernel::rdma::device::Driver`] implementation, in `device/verbs.rs`, names
/// the driver's type for each verbs object). At the crate root, as every floor names it.
pub(crate) struct Rrxe;

module! {
    type: RrxeModule,
    name: "rdma_rrxe",
    authors: ["rrxe developers"],
    description: "Soft RDMA transport (RoCEv2) in Rust",
    license: "GPL",
    alias: ["rdma-link-rrxe"],
}

/// The module state. Fields are dropped in declaration order: the link type goes first (no
/// new devices), then every device is unregistered (each lets its namespace's RoCEv2 sockets
/// go), then the RoCEv2 port is unregistered (closing what is left, waiting for receive
/// callbacks in flight), then the netdevice notifier.
#[pin_data]
struct RrxeModule {
    #[pin]
    link: LinkRegistration<Rrxe>,
    #[pin]
    driver: DriverRegistration<Rrxe>,
    #[pin]
    port: RocePort<Rrxe>,
    #[pin]
    netdev_events: NotifierRegistration<Rrxe>,
}

impl kernel::InPlaceModule for RrxeModule {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        // Initialised in the reverse order of teardown.
        try_pin_init!(Self {
            driver <- DriverRegistration::new(&[c"rdma_rxe"]),
            netdev_events <- NotifierRegistration::new(),
            port <- RocePort::new(ROCE_V2_UDP_PORT),
            link <- LinkRegistration::new(),
        })
    }
}

impl LinkOps for Rrxe {
    const TYPE: &'static CStr = c"rrxe";

    fn newlink(name: &CStr, ndev: &NetDevice) -> Result {
        device::add(name, ndev)
    }
}

impl netdev::Notifier for Rrxe {
    fn event(event: netdev::Event, ndev: &NetDevice) {
        let Some(dev) = Device::<Rrxe>::get_by_netdev(ndev) else {
            return;
        };
        match event {
            // The core holds RTNL here; unregister from its workqueue. The netdevice's
            // namespace may go before that: the RoCEv2 sockets are let go now, as rdma_rxe
            // does (the last device of a namespace closes them).
            netdev::Event::Unregister => {
                dev.data().release_port();
                dev.unregister_queued()
            }
            netdev::Event::ChangeMtu => pr_info!(
                "{}: {} MTU {}, RDMA MTU {}\n",
                dev.name().to_str().unwrap_or("?"),
                ndev.name().to_str().unwrap_or("?"),
                ndev.mtu(),
                params::roce_mtu(ndev.mtu()).bytes()
            ),
            // As rdma_rxe counts it (the core reports the port event itself).
            netdev::Event::Down | netdev::Event::Change if !ndev.is_active() => {
                dev.data().shared.stats.inc(PortCounter::LinkDowned)
            }
            _ => {}
        }
    }
}
