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

struct M;

impl kernel::Module for M {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(M)
    }
}

module! {
    type: M,
    name: "cf_udata_ucontext",
    authors: ["rrxe developers"],
    description: "compile-fail snippet",
    license: "GPL",
}
