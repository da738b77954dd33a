// SPDX-License-Identifier: GPL-2.0
//! Compile-fail test (scripts/compile-fail.sh): safe code cannot name kernel memory by an
//! address it chose: a `KernelDma` copy names an `Sge`, which only the `post_send`,
//! `post_recv` and `post_srq_recv` trampolines make, from a kernel consumer's work request.
//!
//! EXPECT: E0423

use kernel::bindings;
use kernel::prelude::*;
use kernel::rdma::wr::{KernelDma, Sge};

#[allow(dead_code)]
fn forge(dma: &KernelDma, addr: u64, posted: &Sge, buf: &mut [u8]) -> Result {
    let raw = bindings::ib_sge {
        addr,
        length: 4096,
        lkey: 0,
    };
    let _ = &raw;
    // OK: let sge = *posted;
    let sge = Sge(raw); // FAIL
    let _ = posted;
    dma.read(&sge, 0, buf)
}
