// SPDX-License-Identifier: GPL-2.0

//! Host build of the `rdma_rrxe` RoCEv2 protocol core.
//!
//! [`proto`] is compiled from the very files the kernel module uses
//! (`drivers/infiniband/sw/rrxe/proto/`), under `#![no_std]` and without `alloc`, so that the
//! host tests, the fuzzer and `rrxe-decode` exercise exactly the kernel's code. The module
//! compiles `proto` as a private module, so items that only this crate uses are behind
//! `#[cfg(rrxe_host)]` (or, for those the module's KUnit suites also use,
//! `#[cfg(any(rrxe_host, CONFIG_KUNIT = "y"))]`); `build.rs` sets `rrxe_host` here. With the
//! default `std` feature, [`capture`] adds pcap/pcapng reading, Ethernet/IP/UDP dissection
//! and packet rebuilding for the decoder and tests.

#![no_std]

#[cfg(feature = "std")]
extern crate std;

#[path = "../../../drivers/infiniband/sw/rrxe/proto/mod.rs"]
pub mod proto;

pub use proto::*;

#[cfg(feature = "std")]
pub mod capture;
