// SPDX-License-Identifier: GPL-2.0
//! Compile-fail test (scripts/compile-fail.sh): a dying object does not hand out the object
//! itself (no way around the type to a `&Cq`).
//!
//! EXPECT: E0616

use kernel::prelude::*;
use kernel::rdma::{cq::Cq, device::Driver, usecnt::Dying};

#[allow(dead_code)]
fn destroy_cq<T: Driver>(cq: &Dying<'_, Cq<T>>) -> Result {
    let _data = cq.data();
    let _inner: &Cq<T> = cq.obj; // FAIL
    Ok(())
}
