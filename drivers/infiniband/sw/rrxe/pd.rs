// SPDX-License-Identifier: GPL-2.0

//! Protection domains: an identity every key resolution and address handle lookup compares.

use crate::params::Charge;

/// Per-PD state.
pub(crate) struct RrxePd {
    /// Identity, never reused on the device (64-bit, counted up from 1: it cannot wrap):
    /// memory regions, address handles and QPs compare it.
    pub(crate) id: u64,
    /// The PD's place in the device's PD count.
    _charge: Charge,
}

impl RrxePd {
    /// Returns the state of a new PD with identity `id`, counted in `charge`.
    pub(crate) fn new(charge: Charge, id: u64) -> Self {
        Self {
            id,
            _charge: charge,
        }
    }
}
