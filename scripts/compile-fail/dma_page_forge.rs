// SPDX-License-Identifier: GPL-2.0
//! Compile-fail test (scripts/compile-fail.sh): safe code cannot name kernel memory by an
//! address it chose: a `DmaPage` comes only from the core's `ib_sg_to_pages()`, splitting a
//! scatterlist a kernel consumer mapped, through the `map_mr_page` callback.
//!
//! EXPECT: E0451

use kernel::prelude::*;
use kernel::rdma::mr::DmaPage;

#[allow(dead_code)]
fn forge(addr: usize, buf: &mut [u8]) -> Result {
    // OK: let page: Option<DmaPage> = None;
    let page = Some(DmaPage { addr, size: 4096 }); // FAIL
    match page {
        Some(p) => p.read(addr, buf),
        None => Ok(()),
    }
}
