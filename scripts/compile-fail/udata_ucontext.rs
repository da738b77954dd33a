// SPDX-License-Identifier: GPL-2.0
//! Compile-fail test (scripts/compile-fail.sh): a verb's udata only yields the user context of
//! its own driver's type (`UData::ucontext` used to cast to any type the caller named).
//!
//! EXPECT: E0308

use kernel::prelude::*;
use kernel::rdma::device::{Driver, UContext, UData};

#[allow(dead_code)]
fn own<T: Driver>(udata: &UData<T>) -> Option<&UContext<T>> {
    udata.ucontext()
}

#[allow(dead_code)]
fn other<T: Driver, U: Driver>(udata: &UData<T>) -> Option<&UContext<U>> {
    // OK: None
    udata.ucontext() // FAIL
}
