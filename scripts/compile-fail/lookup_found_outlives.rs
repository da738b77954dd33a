// SPDX-License-Identifier: GPL-2.0
//! Compile-fail test (scripts/compile-fail.sh): an object a `LookupTable` lends cannot
//! outlive the table. A slot is freed only by the table's `remove` (which waits for the
//! slot's borrowers) or by its drop, which must therefore wait for every `Found`: each one
//! borrows the table.
//!
//! EXPECT: E0505

use kernel::prelude::*;
use kernel::rdma::lookup::LookupTable;

#[allow(dead_code)]
fn keep_past_the_table(table: Pin<KBox<LookupTable<u32>>>) -> u32 {
    let found = table.get(1);
    let v = found.as_deref().copied().unwrap_or(0);
    drop(table); // FAIL
    drop(found);
    v
}
