// SPDX-License-Identifier: GPL-2.0
//! Compile-fail test (scripts/compile-fail.sh): safe code cannot make the proof of process
//! context that the calls which sleep (pinning and faulting user memory) ask for: only the
//! abstractions make it, for verbs and sleepable work.
//!
//! EXPECT: E0624

use kernel::prelude::*;
use kernel::rdma::{odp::OdpUmem, MaySleep};

#[allow(dead_code)]
fn fault_from_softirq(m: &OdpUmem) -> Result {
    // OK: let ctx: Option<MaySleep<'_>> = None;
    let ctx = Some(unsafe { MaySleep::new() }); // FAIL
    match ctx {
        Some(c) => m.fault(&c, 0, 1, false),
        None => Ok(()),
    }
}
