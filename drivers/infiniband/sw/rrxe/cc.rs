// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 congestion control on a device: the knobs (in debugfs, as mlx5 keeps its
//! `cc_params`), the clock the rate machines of [`crate::proto::cc`] run on, and a QP's
//! share of it ([`QpCc`]). Off by default: with both points disabled the wire is exactly
//! what it is without congestion control (no ECN bits, no CNPs, no pacing).
//!
//! ```text
//! /sys/kernel/debug/<ibdev>/cc_params/
//!     rp_enable np_enable                        0 or 1
//!     rp_max_rate rp_min_rate rp_ai_rate rp_hai_rate          kbit/s
//!     rp_gain                                    1024ths
//!     rp_alpha_period_us rp_time_reset_us rp_rate_reduce_period_us
//!     rp_byte_reset rp_threshold
//!     np_min_time_between_cnps_us np_cnp_dscp
//! ```
//!
//! Values are read at each event, so a write takes effect at once; nonsense is clamped
//! ([`RpParams::sane`]), never trusted.

use crate::proto::cc::{CnpLimiter, Dcqcn, NpParams, Pacer, RpParams};
use kernel::debugfs::ScopedDir;
use kernel::sync::atomic::{ordering::Relaxed, Atomic};
use kernel::time::{Instant, Monotonic};

/// A device's congestion control knobs.
pub(crate) struct CcKnobs {
    rp_enable: Atomic<u32>,
    np_enable: Atomic<u32>,
    max_rate: Atomic<u32>,
    min_rate: Atomic<u32>,
    ai_rate: Atomic<u32>,
    hai_rate: Atomic<u32>,
    gain: Atomic<u32>,
    alpha_period_us: Atomic<u32>,
    time_reset_us: Atomic<u32>,
    byte_reset: Atomic<u32>,
    threshold: Atomic<u32>,
    rate_reduce_period_us: Atomic<u32>,
    min_time_between_cnps_us: Atomic<u32>,
    cnp_dscp: Atomic<u32>,
    /// Time zero of the rate machines' clock.
    epoch: Instant<Monotonic>,
}

impl CcKnobs {
    /// Both points off, DCQCN's parameters ([`RpParams::DEFAULT`], [`NpParams::DEFAULT`]).
    pub(crate) fn new() -> Self {
        let rp = RpParams::DEFAULT;
        let np = NpParams::DEFAULT;
        Self {
            rp_enable: Atomic::new(0),
            np_enable: Atomic::new(0),
            max_rate: Atomic::new(rp.max_rate),
            min_rate: Atomic::new(rp.min_rate),
            ai_rate: Atomic::new(rp.ai_rate),
            hai_rate: Atomic::new(rp.hai_rate),
            gain: Atomic::new(rp.gain),
            alpha_period_us: Atomic::new(rp.alpha_period_us),
            time_reset_us: Atomic::new(rp.time_reset_us),
            byte_reset: Atomic::new(rp.byte_reset),
            threshold: Atomic::new(rp.threshold),
            rate_reduce_period_us: Atomic::new(rp.rate_reduce_period_us),
            min_time_between_cnps_us: Atomic::new(np.min_time_between_cnps_us),
            cnp_dscp: Atomic::new(u32::from(np.cnp_dscp)),
            epoch: Instant::now(),
        }
    }

    /// The reaction point's parameters, `None` while it is disabled (CNPs are ignored,
    /// packets go out without ECN bits and unpaced).
    pub(crate) fn rp(&self) -> Option<RpParams> {
        (self.rp_enable.load(Relaxed) != 0).then(|| {
            RpParams {
                max_rate: self.max_rate.load(Relaxed),
                min_rate: self.min_rate.load(Relaxed),
                ai_rate: self.ai_rate.load(Relaxed),
                hai_rate: self.hai_rate.load(Relaxed),
                gain: self.gain.load(Relaxed),
                alpha_period_us: self.alpha_period_us.load(Relaxed),
                time_reset_us: self.time_reset_us.load(Relaxed),
                byte_reset: self.byte_reset.load(Relaxed),
                threshold: self.threshold.load(Relaxed),
                rate_reduce_period_us: self.rate_reduce_period_us.load(Relaxed),
            }
            .sane()
        })
    }

    /// Returns `true` if connected QPs send ECN-capable packets (the reaction point is on).
    pub(crate) fn ecn(&self) -> bool {
        self.rp_enable.load(Relaxed) != 0
    }

    /// The notification point's parameters, `None` while it is disabled (CE marks are
    /// counted, not answered).
    pub(crate) fn np(&self) -> Option<NpParams> {
        (self.np_enable.load(Relaxed) != 0).then(|| NpParams {
            min_time_between_cnps_us: self.min_time_between_cnps_us.load(Relaxed),
            cnp_dscp: u8::try_from(self.cnp_dscp.load(Relaxed) & 0x3f).unwrap_or(0),
        })
    }

    /// The rate machines' clock: nanoseconds since the device was made.
    pub(crate) fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(0)
    }

    /// Adds the knobs' files to `dir`.
    pub(crate) fn files<'a>(&'a self, dir: &ScopedDir<'a, '_>) {
        for (name, knob) in [
            (c"rp_enable", &self.rp_enable),
            (c"np_enable", &self.np_enable),
            (c"rp_max_rate", &self.max_rate),
            (c"rp_min_rate", &self.min_rate),
            (c"rp_ai_rate", &self.ai_rate),
            (c"rp_hai_rate", &self.hai_rate),
            (c"rp_gain", &self.gain),
            (c"rp_alpha_period_us", &self.alpha_period_us),
            (c"rp_time_reset_us", &self.time_reset_us),
            (c"rp_byte_reset", &self.byte_reset),
            (c"rp_threshold", &self.threshold),
            (c"rp_rate_reduce_period_us", &self.rate_reduce_period_us),
            (
                c"np_min_time_between_cnps_us",
                &self.min_time_between_cnps_us,
            ),
            (c"np_cnp_dscp", &self.cnp_dscp),
        ] {
            dir.read_write_file(name, knob);
        }
    }
}

/// A connected QP's congestion control: its rate and pacer (reaction point) and its CNP
/// interval (notification point).
#[derive(Clone, Copy)]
pub(crate) struct QpCc {
    pub(crate) rp: Dcqcn,
    pub(crate) pacer: Pacer,
    pub(crate) np: CnpLimiter,
}

impl QpCc {
    pub(crate) fn new() -> Self {
        Self {
            rp: Dcqcn::new(&RpParams::DEFAULT),
            pacer: Pacer::default(),
            np: CnpLimiter::default(),
        }
    }
}
