// SPDX-License-Identifier: GPL-2.0
//! Compile-fail test (scripts/compile-fail.sh): a CQ's destroy operation cannot take a use
//! count on the CQ the core frees when it returns (the count would be returned to freed
//! memory).
//!
//! EXPECT: E0308

use kernel::prelude::*;
use kernel::rdma::{
    cq::Cq,
    device::Driver,
    usecnt::{Dying, UseRef},
};

#[allow(dead_code)]
fn destroy_cq<T: Driver>(cq: &Dying<'_, Cq<T>>) -> Result<Option<UseRef<Cq<T>>>> {
    let _data = cq.data();
    let _dev = cq.device();
    // OK: Ok(None)
    Ok(Some(UseRef::new(cq))) // FAIL
}

struct M;

impl kernel::Module for M {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(M)
    }
}

module! {
    type: M,
    name: "cf_usecnt_cq",
    authors: ["rrxe developers"],
    description: "compile-fail snippet",
    license: "GPL",
}
