// SPDX-License-Identifier: GPL-2.0

//! Protection domains: an identity every key resolution and address handle lookup compares.

use crate::params::Slot;

/// Per-PD state.
pub(crate) struct RrxePd {
    /// Identity, never reused on the device (64-bit, counted up from 1: it cannot wrap):
    /// memory regions, address handles and QPs compare it.
    pub(crate) id: u64,
    /// The PD's place in the device's PD count.
    _slot: Slot,
}

impl RrxePd {
    /// Returns the state of a new PD with identity `id`, counted in `slot`.
    pub(crate) fn new(slot: Slot, id: u64) -> Self {
        Self { id, _slot: slot }
    }
}
