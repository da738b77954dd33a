// SPDX-License-Identifier: GPL-2.0
//! Compile-fail test (scripts/compile-fail.sh): safe code cannot make the token that reads and
//! writes kernel DMA addresses: only the QP trampolines make it, for QPs of kernel consumers.
//!
//! EXPECT: E0624

use kernel::prelude::*;
use kernel::rdma::wr::{KernelDma, Sge};

#[allow(dead_code)]
fn forge(sge: &Sge, buf: &mut [u8]) -> Result {
    // OK: let dma: Option<KernelDma> = None;
    let dma = Some(KernelDma::new()); // FAIL
    match dma {
        Some(d) => d.read(sge, 0, buf),
        None => Ok(()),
    }
}
