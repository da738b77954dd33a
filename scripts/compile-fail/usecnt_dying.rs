// SPDX-License-Identifier: GPL-2.0
//! Compile-fail test (scripts/compile-fail.sh): the destroy operations of a CQ and of an SRQ
//! cannot take a use count on the object the core frees when they return (the count would be
//! returned to freed memory).
//!
//! EXPECT: E0308

use kernel::prelude::*;
use kernel::rdma::{
    cq::Cq,
    device::Driver,
    srq::Srq,
    usecnt::{Dying, UseRef},
};

#[allow(dead_code)]
fn destroy_cq<T: Driver>(cq: &Dying<'_, Cq<T>>) -> Result<Option<UseRef<Cq<T>>>> {
    let _data = cq.data();
    let _dev = cq.device();
    // OK: Ok(None)
    Ok(Some(UseRef::new(cq))) // FAIL
}

#[allow(dead_code)]
fn destroy_srq<T: Driver>(srq: &Dying<'_, Srq<T>>) -> Result<Option<UseRef<Srq<T>>>> {
    let _data = srq.data();
    // OK: Ok(None)
    Ok(Some(UseRef::new(srq))) // FAIL
}
