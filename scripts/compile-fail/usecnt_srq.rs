// SPDX-License-Identifier: GPL-2.0
//! Compile-fail test (scripts/compile-fail.sh): an SRQ's destroy operation cannot take a use
//! count on the SRQ the core frees when it returns.
//!
//! EXPECT: E0308

use kernel::prelude::*;
use kernel::rdma::{
    device::Driver,
    srq::Srq,
    usecnt::{Dying, UseRef},
};

#[allow(dead_code)]
fn destroy_srq<T: Driver>(srq: &Dying<'_, Srq<T>>) -> Result<Option<UseRef<Srq<T>>>> {
    let _data = srq.data();
    // OK: Ok(None)
    Ok(Some(UseRef::new(srq))) // FAIL
}

struct M;

impl kernel::Module for M {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(M)
    }
}

module! {
    type: M,
    name: "cf_usecnt_srq",
    authors: ["rrxe developers"],
    description: "compile-fail snippet",
    license: "GPL",
}
