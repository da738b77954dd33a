// SPDX-License-Identifier: GPL-2.0

//! RDMA (InfiniBand verbs) abstractions.
//!
//! These wrap the RDMA core (`ib_core`) for drivers written in Rust:
//!
//! - [`device`]: allocation, registration and unregistration of an `ib_device`, the
//!   [`device::Driver`] operations table, device and port attributes, user contexts, and
//!   the [`device::DriverRegistration`] fence that unregisters a driver's devices on unload.
//! - [`link`]: `rdma link add NAME type TYPE netdev DEV` through an `rdma_link_ops`
//!   registration.
//! - [`netdev`]: the network devices an RDMA device is bound to, and netdevice events.
//! - [`pd`], [`cq`], [`qp`], [`srq`], [`mr`], [`mw`], [`ah`]: protection domains,
//!   completion queues, queue pairs, shared receive queues, memory regions and pinned user
//!   memory, memory windows, address handles.
//! - [`counter`]: counters of queue pairs (`rdma statistic qp`).
//! - [`mmap`]: memory shared with userspace (the user provider maps queues).
//! - [`net`]: the RoCEv2 UDP tunnel socket, received packets, routes and transmission.
//! - [`trace`]: tracepoints of software transports (`rdma_sw`: QP states, retries, NAKs).
//! - [`timer`]: protocol timers embedded in driver objects.
//! - [`bh`]: bottom halves off for data the receive path shares ([`BhSpinLock`],
//!   [`BhGuard`]).
//! - [`context`]: proof of process context for calls that sleep ([`MaySleep`]).
//! - [`bhwork`]: softirq work items embedded in driver objects (local delivery).
//! - [`wr`]: work requests and completions of kernel consumers, kernel DMA addresses.
//! - [`usecnt`]: counted uses of core objects (CQs, SRQs) held by a driver's data path.
//! - [`event`]: asynchronous events of QPs, CQs and SRQs for their owners.
//!
//! The kernel crate is built into vmlinux, so these abstractions need the RDMA core built in
//! (`CONFIG_INFINIBAND=y`, `CONFIG_INFINIBAND_USER_ACCESS=y`).
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/rdma_netlink.h`](srctree/include/rdma/rdma_netlink.h)

pub mod ah;
pub mod bh;
pub mod bhwork;
pub mod context;
pub mod counter;
pub mod cq;
pub mod dbg;
pub mod device;
pub mod event;
pub mod link;
pub mod lookup;
pub mod mmap;
pub mod mr;
pub mod mw;
pub mod net;
pub mod netdev;
pub mod odp;
pub mod pd;
pub mod port;
pub mod qp;
pub mod srq;
pub mod timer;
pub mod trace;
pub mod umem;
pub mod usecnt;
pub mod wr;

pub use bh::{BhGuard, BhSpinLock, BhSpinLockGuard};
pub use context::MaySleep;

/// Computes the little-endian (reflected) CRC-32 of `data`, continuing from `seed`, with the
/// kernel's (possibly accelerated) implementation.
///
/// This is `crc32_le()`: no inversion on input or output. RoCE's invariant CRC is built on it.
pub fn crc32_le(seed: u32, data: &[u8]) -> u32 {
    // SAFETY: `data` is a valid slice for reads of `data.len()` bytes.
    unsafe { crate::bindings::crc32_le(seed, data.as_ptr().cast(), data.len()) }
}
