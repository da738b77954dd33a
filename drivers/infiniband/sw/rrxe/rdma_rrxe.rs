// SPDX-License-Identifier: GPL-2.0

//! rrxe: a soft-RoCE (RoCEv2) RDMA driver.
//!
//! `rdma link add rrxe0 type rrxe netdev eth0` turns an Ethernet netdevice into an RDMA
//! device that speaks the InfiniBand transport over UDP port 4791. The device reports the
//! driver id and user ABI of the C `rdma_rxe`, so rdma-core's rxe provider drives it.
//!
//! Files:
//! - `rdma_rrxe.rs`: the module: link type, driver fence, netdevice events.
//! - `device/`: the device: creation and the netdevice it runs on (`mod.rs`), what its
//!   objects share (`shared.rs`), and the verbs ib_core calls (`verbs.rs`).
//! - `params.rs`: device limits, object counters, netdevice-to-RDMA mappings (MTU, GUID).
//! - `queue.rs`: the rxe shared queue (ring in memory mapped by the user provider).
//! - `pd.rs`: protection domains.
//! - `cq.rs`: completion queues.
//! - `ah.rs`: address handles (checked address vectors, numbered for the user ABI).
//! - `mr/`: memory regions and their keys: the data path's checks and copies (`mod.rs`),
//!   user regions, pinned or on-demand paging (`user.rs`), fast-registration regions
//!   (`fast.rs`), the verbs (`verbs.rs`).
//! - `odp.rs`: page faults of on-demand paging regions, resolved in process context.
//! - `net.rs`: the receive path (UDP port 4791): attribution, parsing, ICRC, dispatch to the
//!   QP.
//! - `counters.rs`: the port counters and per-QP counters (one `Stats` type).
//! - `qp.rs`: queue pairs: creation, attribute checks, modify, query, destroy.
//! - `srq.rs`: shared receive queues: the verbs, and the dequeue the responders of the QPs
//!   attached to one share.
//! - `engine/`: a QP's data path, by role: requester (`req.rs`), responder (`resp.rs`),
//!   datagrams (`ud.rs`), completions (`comp.rs`), the key resolver (`mem.rs`),
//!   transmission (`xmit.rs`), the responder's queued replies (`replies.rs`), the work
//!   queues: user rings and kernel consumers' checked work requests (`wq.rs`).
//! - `proto/`: the RoCEv2 wire core (headers, opcode table, ICRC, PSN, target selection),
//!   `core`-only, shared with the host crate `tools/rrxe`.
//! - `fifo.rs`: a bounded FIFO allocated once (kernel CQs, the responder's queued replies).
//! - `wire.rs`: glue between the wire core and the kernel (ICRC with the kernel's crc32).
//! - `rc_kunit.rs`: KUnit suite running the wire core's RC machines inside the kernel.

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
mod counters;
mod cq;
mod device;
mod engine;
mod fifo;
mod mcast;
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
mod srq;
mod wire;

use counters::PortCounter;
use device::Rrxe;

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
