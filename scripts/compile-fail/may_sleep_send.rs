// SPDX-License-Identifier: GPL-2.0
//! Compile-fail test (scripts/compile-fail.sh): the proof of process context a sleepable
//! callback gets cannot be handed to code running elsewhere (a softirq, another thread): it
//! is neither `Send` nor `Sync`.
//!
//! EXPECT: E0277

use kernel::prelude::*;
use kernel::rdma::MaySleep;

fn elsewhere<F: FnOnce() + Send>(_f: F) {}

#[allow(dead_code)]
fn keep(_ctx: &MaySleep<'_>) {}

#[allow(dead_code)]
fn hand_off(ctx: &MaySleep<'_>) {
    // OK: elsewhere(|| ());
    elsewhere(move || keep(ctx)); // FAIL
}
