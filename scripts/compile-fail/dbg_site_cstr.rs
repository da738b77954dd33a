// SPDX-License-Identifier: GPL-2.0
//! Compile-fail test (scripts/compile-fail.sh): a dynamic-debug site's module name must be a
//! C string, since every message prints it with `%s`, which reads up to its NUL: a byte
//! string without one is refused.
//!
//! EXPECT: E0308

use kernel::prelude::*;
use kernel::rdma::dbg::Site;

#[allow(dead_code)]
static SITE: Site = Site::new(
    // OK: c"cf",
    b"cf", // FAIL
    c"cf::say",
    c"dbg_site_cstr.rs",
    c"hi",
    1,
);

#[allow(dead_code)]
fn say() {
    if SITE.enabled() {
        SITE.print(format_args!("hi\n"));
    }
}
