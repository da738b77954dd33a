// SPDX-License-Identifier: GPL-2.0

//! The RC responder the tests drive: every remote access granted, four responder resources.

use rrxe_proto::aeth::RnrTimer;
use rrxe_proto::psn::Psn;
use rrxe_proto::rc::{PathMtu, Responder, ResponderConfig};

/// A responder expecting PSN `psn` first, with path MTU `mtu` and `min_rnr_timer` 12.
pub fn responder(psn: u32, mtu: PathMtu) -> Responder {
    Responder::new(ResponderConfig {
        rq_psn: Psn::new(psn),
        mtu,
        min_rnr_timer: RnrTimer::new(12).unwrap(),
        remote_write: true,
        remote_read: true,
        remote_atomic: true,
        max_dest_rd_atomic: 4,
        flush_types: 0,
    })
}
