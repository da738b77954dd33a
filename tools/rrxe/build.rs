// SPDX-License-Identifier: GPL-2.0

//! Sets the cfgs under which `proto/` compiles its host-only items.
//!
//! The kernel module compiles `proto` as a private module, where the dead-code lint applies:
//! items that only the host tests, the fuzzer and `rrxe-decode` use are behind
//! `#[cfg(rrxe_host)]`, and those that only the module's KUnit suites use behind
//! `#[cfg(any(rrxe_host, CONFIG_RDMA_RRXE_RUST_KUNIT_TEST))]`. The kernel never sets
//! `rrxe_host` (and sets `CONFIG_RDMA_RRXE_RUST_KUNIT_TEST` from its configuration); this
//! crate always sets `rrxe_host`.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(rrxe_host)");
    println!("cargo::rustc-check-cfg=cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)");
    println!("cargo::rustc-cfg=rrxe_host");
}
