// SPDX-License-Identifier: GPL-2.0

//! Address handles: a checked RoCEv2 address vector, numbered for the user ABI.
//!
//! rdma-core's rxe provider (v39 and later) names the address handle of a UD send WQE by the
//! `ah_num` the driver returned at creation (`struct rxe_create_ah_resp`), instead of copying
//! the address vector into every WQE; the device's table resolves the number. Numbers are
//! 1..=32767, as in the C driver.

use crate::Rrxe;
use kernel::prelude::*;
use kernel::rdma::{
    ah::AhInit,
    device::Device,
    qp::{AhAttr, GidType},
};

/// Per-AH state: the address vector is in the device's table, under the AH's number (UD
/// sends read it there; `rdma_query_ah` and `rdma_modify_ah` too).
pub(crate) struct RrxeAh {
    /// Number in the device's table.
    pub(crate) num: u32,
}

/// Checks an address vector: RoCEv2 through port 1, to a destination.
fn check_av(a: &AhAttr) -> Result {
    if a.port_num != 1 || a.sgid_type != Some(GidType::RoceV2) || a.dgid == [0; 16] {
        return Err(EINVAL);
    }
    Ok(())
}

impl RrxeAh {
    /// Checks an address vector and, for a user AH, numbers it and returns the number in
    /// the udata response.
    pub(crate) fn new(dev: &Device<Rrxe>, init: &AhInit<'_, Rrxe>) -> Result<Self> {
        let a = &init.attr;
        check_av(a)?;
        // Kernel AHs are numbered too: kernel send WRs become WQEs that name them.
        let num = dev
            .data()
            .shared
            .alloc_ah_num(a, init.pd.data().id, init.sleepable)?;
        // struct rxe_create_ah_resp { __u32 ah_num; __u32 reserved; }; providers before v39
        // pass no room for it and embed the address vector in each WQE instead.
        if let Some(u) = init.udata.filter(|u| u.out_len() >= 8) {
            let mut resp = [0u8; 8];
            resp[..4].copy_from_slice(&num.to_ne_bytes());
            if let Err(e) = u.respond(&resp) {
                dev.data().shared.free_ah_num(num);
                return Err(e);
            }
        }
        Ok(Self { num })
    }

    /// Returns the AH's address vector (`rdma_query_ah`).
    pub(crate) fn attr(&self, dev: &Device<Rrxe>) -> Result<AhAttr> {
        dev.data().shared.ah_attr(self.num).ok_or(EINVAL)
    }

    /// Replaces the AH's address vector (`rdma_modify_ah`), after the checks of a new one;
    /// UD sends through the AH go to the new destination from then on.
    pub(crate) fn modify(&self, dev: &Device<Rrxe>, attr: &AhAttr) -> Result {
        check_av(attr)?;
        dev.data().shared.set_ah_attr(self.num, attr)
    }

    /// Releases the AH's number.
    pub(crate) fn destroy(&self, dev: &Device<Rrxe>) {
        dev.data().shared.free_ah_num(self.num);
    }
}
