// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 congestion control (IBTA Vol. 1 Annex A17.9): the ECN bits of outgoing packets,
//! the notification point (NP) that answers a congestion-experienced mark with a CNP, and a
//! DCQCN reaction point (RP) that turns CNPs into a per-QP transmit rate, as sans-IO state
//! machines: the caller passes the time, in nanoseconds of a monotonic clock.
//!
//! DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015),
//! as ConnectX NICs implement it, is what RoCE networks run:
//!
//! - a switch queue above its threshold marks ECN-capable packets CE;
//! - the receiver of a CE-marked packet (the NP) sends a CNP to the sending QP, at most one
//!   per QP per [`NpParams::min_time_between_cnps_us`] ([`CnpLimiter`]);
//! - the sender's rate ([`Dcqcn`]) drops on a CNP to `Rc (1 - α/2)` after remembering it as
//!   the target `Rt`, and the congestion estimate `α` rises by the gain `g`
//!   (`α ← (1 - g) α + g`); each period of [`RpParams::alpha_period_us`] without a CNP
//!   decays it (`α ← (1 - g) α`);
//! - the rate recovers on two clocks, a timer ([`RpParams::time_reset_us`]) and a byte
//!   counter ([`RpParams::byte_reset`]): each expiry is an increase event; while both
//!   counts are below the threshold `F` ([`RpParams::threshold`]) the rate climbs halfway
//!   back to the target (fast recovery), once one of them reaches `F` the target grows by
//!   the additive step first ([`RpParams::ai_rate`]), once both have by `i` hyper steps
//!   ([`RpParams::hai_rate`], `i` the smaller count beyond `F`);
//! - the rate never goes below [`RpParams::min_rate`] nor above [`RpParams::max_rate`]; once
//!   it is back at the maximum the QP is no longer limited and sends as without congestion
//!   control.
//!
//! [`Pacer`] enforces a rate on the transmit path: a packet may go when the pacer's clock is
//! not ahead of now, and each packet moves the clock by its serialisation time at the rate.
//! Rates are in kbit/s, `α` in 1024ths; everything is integer arithmetic, bounded per call.

/// The ECN field of an IP header (the low two bits of the IPv4 TOS or IPv6 traffic class).
pub const ECN_MASK: u8 = 0b11;
/// ECN-capable transport, ECT(0) (RFC 3168): what RoCEv2 senders mark.
pub const ECN_ECT0: u8 = 0b10;
/// Congestion experienced: a queue on the path marked the packet.
pub const ECN_CE: u8 = 0b11;

/// `α` is in 1024ths: this is 1.0.
pub const ALPHA_ONE: u32 = 1024;

/// Most timer periods [`Dcqcn::advance`] applies at once: an idle QP's rate is back at the
/// maximum, and its `α` at zero, long before this many periods.
const MAX_CATCH_UP: u32 = 64;

/// The reaction point's parameters (the sender of the data), per device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpParams {
    /// The rate of an unlimited QP, and the ceiling of recovery, kbit/s.
    pub max_rate: u32,
    /// The floor of a QP's rate, kbit/s.
    pub min_rate: u32,
    /// Additive increase step of the target rate, kbit/s.
    pub ai_rate: u32,
    /// Hyper increase step of the target rate, kbit/s.
    pub hai_rate: u32,
    /// The gain `g` of `α`, in 1024ths.
    pub gain: u32,
    /// The `α` update period `K`, µs: each one without a CNP decays `α`.
    pub alpha_period_us: u32,
    /// The rate increase timer `T`, µs.
    pub time_reset_us: u32,
    /// The byte counter `B`: an increase event per this many bytes sent while limited.
    pub byte_reset: u32,
    /// The increase stage `F` at which additive, then hyper, increase start.
    pub threshold: u32,
    /// The rate is cut at most once per this period, µs (CNPs between are counted for `α`
    /// only).
    pub rate_reduce_period_us: u32,
}

impl RpParams {
    /// DCQCN's parameters with its clocks slowed for a software wire: DCQCN's 55 µs `α`
    /// period and 300 µs timer (ConnectX's) suit a 40 Gbit/s fabric with microsecond round
    /// trips; a wire of 100 Mbit/s to a few Gbit/s passes a packet in tens of microseconds
    /// and marks far fewer, so `α` and the rate move on 200 µs and 3 ms here (the bottleneck
    /// simulation of `tools/rrxe/tests/dcqcn.rs` chose them).
    pub const DEFAULT: Self = Self {
        max_rate: 10_000_000,
        min_rate: 1_000,
        ai_rate: 5_000,
        hai_rate: 50_000,
        gain: 4,
        alpha_period_us: 200,
        time_reset_us: 3_000,
        byte_reset: 131_072,
        threshold: 5,
        rate_reduce_period_us: 50,
    };

    /// Returns the parameters with every value in its range: rates at least 1 kbit/s,
    /// `min_rate <= max_rate`, the gain at most 1.0, periods at least 1 µs, the byte
    /// counter at least one MTU's worth (256 bytes).
    pub fn sane(mut self) -> Self {
        self.max_rate = self.max_rate.max(1);
        self.min_rate = self.min_rate.clamp(1, self.max_rate);
        self.gain = self.gain.min(ALPHA_ONE);
        self.alpha_period_us = self.alpha_period_us.max(1);
        self.time_reset_us = self.time_reset_us.max(1);
        self.byte_reset = self.byte_reset.max(256);
        self
    }
}

/// The notification point's parameters (the receiver of the data), per device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NpParams {
    /// At most one CNP per QP per this period, µs.
    pub min_time_between_cnps_us: u32,
    /// The DSCP of CNPs (their IP traffic class is `dscp << 2`, not ECN-capable).
    pub cnp_dscp: u8,
}

impl NpParams {
    /// DCQCN's 50 µs CNP interval; CNPs in the class mlx5 sends them in (DSCP 48).
    pub const DEFAULT: Self = Self {
        min_time_between_cnps_us: 50,
        cnp_dscp: 48,
    };

    /// The IP traffic class of a CNP.
    pub fn cnp_traffic_class(&self) -> u8 {
        (self.cnp_dscp & 0x3f).wrapping_shl(2)
    }
}

/// Returns the traffic class of an outgoing packet: `tclass` as the QP's address vector set
/// it, with ECT(0) when `ecn` and the consumer set no ECN bits of its own.
pub fn ect(tclass: u8, ecn: bool) -> u8 {
    if ecn && tclass & ECN_MASK == 0 {
        tclass | ECN_ECT0
    } else {
        tclass
    }
}

/// Returns `true` if an IP header's traffic class says a queue marked the packet.
pub fn is_ce(tclass: u8) -> bool {
    tclass & ECN_MASK == ECN_CE
}

/// Returns the traffic class of a received IP header (IPv4 TOS, IPv6 traffic class), 0 if
/// the header is too short to hold one.
pub fn traffic_class(ip: &super::icrc::IpHdr<'_>) -> u8 {
    use super::icrc::IpHdr;
    match ip {
        IpHdr::V4(h) => h.get(1).copied().unwrap_or(0),
        IpHdr::V6(h) => match (h.first(), h.get(1)) {
            (Some(a), Some(b)) => (a & 0x0f).wrapping_shl(4) | b.wrapping_shr(4),
            _ => 0,
        },
    }
}

/// The nanoseconds of `us` microseconds.
const fn us_ns(us: u32) -> u64 {
    (us as u64).saturating_mul(1_000)
}

/// The notification point of one QP: whether a CE-marked packet gets a CNP now.
///
/// # Invariants
///
/// `last` is the time of the last CNP, if there was one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CnpLimiter {
    last: Option<u64>,
}

impl CnpLimiter {
    /// A CE-marked packet arrived at `now`: returns `true` if a CNP goes out for it (and
    /// counts it as sent), `false` if one went less than the interval ago.
    pub fn on_ce(&mut self, p: &NpParams, now: u64) -> bool {
        match self.last {
            Some(t) if now.wrapping_sub(t) < us_ns(p.min_time_between_cnps_us) => false,
            _ => {
                self.last = Some(now);
                true
            }
        }
    }
}

/// The reaction point of one QP: its DCQCN rate (see the module documentation).
///
/// # Invariants
///
/// `p.min_rate <= rt, rc <= p.max_rate` for the parameters last passed; `alpha <=
/// ALPHA_ONE`; `limited` is `false` only when `rc` is the maximum rate (an unlimited QP
/// keeps no timers: its next CNP starts a new episode).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dcqcn {
    /// The current rate `Rc`, kbit/s.
    rc: u32,
    /// The target rate `Rt`, kbit/s.
    rt: u32,
    /// The congestion estimate, in 1024ths.
    alpha: u32,
    /// Increase events of the timer and of the byte counter since the last cut.
    t_stage: u32,
    b_stage: u32,
    /// Bytes sent toward the next byte-counter event.
    bytes: u32,
    /// The start of the current `α` period, and whether a CNP came in it.
    alpha_at: u64,
    cnp_in_period: bool,
    /// The start of the current increase timer period.
    timer_at: u64,
    /// The time of the last cut.
    cut_at: Option<u64>,
    limited: bool,
    /// What the QP sent since `meter_at`, and its rate over the last full period, kbit/s
    /// (0 before one): a new episode starts from it, not from the nominal maximum.
    meter_bytes: u64,
    meter_at: u64,
    measured: u32,
}

/// The period over which a QP's sending rate is measured, ns.
pub const METER_NS: u64 = 1_000_000;

impl Dcqcn {
    /// An unlimited QP (sending at `p.max_rate`), `α` at 1.0 (DCQCN's initial estimate).
    pub fn new(p: &RpParams) -> Self {
        let p = p.sane();
        Self {
            rc: p.max_rate,
            rt: p.max_rate,
            alpha: ALPHA_ONE,
            t_stage: 0,
            b_stage: 0,
            bytes: 0,
            alpha_at: 0,
            cnp_in_period: false,
            timer_at: 0,
            cut_at: None,
            limited: false,
            meter_bytes: 0,
            meter_at: 0,
            measured: 0,
        }
    }

    /// Returns the current rate, kbit/s.
    pub fn rate(&self) -> u32 {
        self.rc
    }

    /// Returns the target rate, kbit/s.
    #[cfg(rrxe_host)]
    pub fn target(&self) -> u32 {
        self.rt
    }

    /// Returns `α`, in 1024ths.
    #[cfg(rrxe_host)]
    pub fn alpha(&self) -> u32 {
        self.alpha
    }

    /// Returns `true` while a CNP keeps the QP below the maximum rate.
    pub fn is_limited(&self) -> bool {
        self.limited
    }

    /// `α ← (1 - g) α`, rounding down so that it reaches zero.
    fn decay(&mut self, gain: u32) {
        let kept = ALPHA_ONE.saturating_sub(gain);
        self.alpha = self.alpha.saturating_mul(kept) / ALPHA_ONE;
    }

    /// A CNP arrived for the QP at `now`. Returns `true` if it cut the rate (a CNP less
    /// than the reduce period after the last cut only raises `α`).
    pub fn on_cnp(&mut self, p: &RpParams, now: u64) -> bool {
        let p = p.sane();
        self.advance(&p, now);
        if !self.limited {
            // A new episode, as a NIC's reaction point starts one: α from its initial 1.0,
            // its period from now, and the rate from what the QP really sent (a software
            // wire runs far below any nominal line rate).
            if self.measured > 0 {
                self.rc = self.measured.clamp(p.min_rate, p.max_rate);
            }
            self.alpha = ALPHA_ONE;
            self.alpha_at = now;
            self.cnp_in_period = false;
        }
        // α ← (1 - g) α + g, once per α period however many CNPs it sees.
        if !self.cnp_in_period {
            self.decay(p.gain);
            self.alpha = self.alpha.saturating_add(p.gain).min(ALPHA_ONE);
            self.cnp_in_period = true;
        }
        if let Some(t) = self.cut_at {
            if now.wrapping_sub(t) < us_ns(p.rate_reduce_period_us) {
                return false;
            }
        }
        self.rt = self.rc;
        // Rc (1 - α/2) = Rc - Rc α / 2048.
        let cut = u64::from(self.rc).saturating_mul(u64::from(self.alpha)) / 2048;
        let rc = u64::from(self.rc).saturating_sub(cut);
        self.rc = u32::try_from(rc)
            .unwrap_or(u32::MAX)
            .clamp(p.min_rate, p.max_rate);
        self.rt = self.rt.clamp(p.min_rate, p.max_rate);
        self.t_stage = 0;
        self.b_stage = 0;
        self.bytes = 0;
        self.timer_at = now;
        self.cut_at = Some(now);
        self.limited = true;
        true
    }

    /// `bytes` were sent at `now`: the byte counter and the clocks move on.
    pub fn on_sent(&mut self, p: &RpParams, bytes: u32, now: u64) {
        self.meter_bytes = self.meter_bytes.saturating_add(u64::from(bytes));
        let span = now.wrapping_sub(self.meter_at);
        if now < self.meter_at || span > METER_NS.saturating_mul(16) {
            // Idle for long, or the clock went back: start a new period.
            self.meter_at = now;
            self.meter_bytes = 0;
            self.measured = 0;
        } else if span >= METER_NS {
            // bytes * 8 / (span / 10^9) / 1000 kbit/s.
            let kbps = self
                .meter_bytes
                .saturating_mul(8_000_000)
                .checked_div(span)
                .unwrap_or(0);
            self.measured = u32::try_from(kbps).unwrap_or(u32::MAX).max(1);
            self.meter_at = now;
            self.meter_bytes = 0;
        }
        if !self.limited {
            return;
        }
        let p = p.sane();
        self.advance(&p, now);
        self.bytes = self.bytes.saturating_add(bytes);
        let mut n = 0;
        while self.limited && self.bytes >= p.byte_reset && n < MAX_CATCH_UP {
            self.bytes = self.bytes.wrapping_sub(p.byte_reset);
            self.b_stage = self.b_stage.saturating_add(1);
            self.increase(&p);
            n = n.wrapping_add(1);
        }
        if !self.limited {
            self.bytes = 0;
        }
    }

    /// Applies the `α` periods and increase timer periods that ended by `now` (at most
    /// [`MAX_CATCH_UP`] of each: by then `α` is near zero and a limited QP back at the
    /// maximum), and parameters changed since the last event.
    pub fn advance(&mut self, p: &RpParams, now: u64) {
        if !self.limited {
            return;
        }
        let p = p.sane();
        self.rc = self.rc.clamp(p.min_rate, p.max_rate);
        self.rt = self.rt.clamp(p.min_rate, p.max_rate);
        if self.rc >= p.max_rate {
            self.limited = false;
            return;
        }
        let k = us_ns(p.alpha_period_us);
        let mut n = 0;
        while now.wrapping_sub(self.alpha_at) >= k && now >= self.alpha_at {
            if n == MAX_CATCH_UP {
                self.alpha_at = now;
                break;
            }
            if !self.cnp_in_period {
                self.decay(p.gain);
            }
            self.cnp_in_period = false;
            self.alpha_at = self.alpha_at.wrapping_add(k);
            n = n.wrapping_add(1);
        }
        let t = us_ns(p.time_reset_us);
        let mut n = 0;
        while self.limited && now >= self.timer_at && now.wrapping_sub(self.timer_at) >= t {
            if n == MAX_CATCH_UP {
                self.timer_at = now;
                break;
            }
            self.timer_at = self.timer_at.wrapping_add(t);
            self.t_stage = self.t_stage.saturating_add(1);
            self.increase(&p);
            n = n.wrapping_add(1);
        }
    }

    /// An increase event (timer or byte counter): fast recovery, additive or hyper increase.
    fn increase(&mut self, p: &RpParams) {
        let f = p.threshold;
        let (lo, hi) = (
            self.t_stage.min(self.b_stage),
            self.t_stage.max(self.b_stage),
        );
        if lo >= f {
            let i = lo.saturating_sub(f).saturating_add(1);
            self.rt = self.rt.saturating_add(p.hai_rate.saturating_mul(i));
        } else if hi >= f {
            self.rt = self.rt.saturating_add(p.ai_rate);
        }
        self.rt = self.rt.clamp(p.min_rate, p.max_rate);
        // Rc ← (Rt + Rc) / 2, rounded up so that it reaches the target.
        let sum = u64::from(self.rt).saturating_add(u64::from(self.rc));
        self.rc = u32::try_from(sum.div_ceil(2))
            .unwrap_or(u32::MAX)
            .clamp(p.min_rate, p.max_rate);
        if self.rc >= p.max_rate {
            self.limited = false;
            self.t_stage = 0;
            self.b_stage = 0;
        }
    }
}

/// Enforces a rate on a transmit path (see the module documentation).
///
/// # Invariants
///
/// `next` is the earliest time the next packet may go, or 0 before the first packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pacer {
    next: u64,
}

/// The burst a pacer lets through after an idle period or a late timer: what accumulates
/// in this many nanoseconds (a jiffy at `HZ=1000`, so that a timer a tick late loses no
/// rate).
pub const PACER_BURST_NS: u64 = 2_000_000;

impl Pacer {
    /// Returns how long the next packet must wait at `now`, in nanoseconds (`None`: it may
    /// go now).
    pub fn wait(&self, now: u64) -> Option<u64> {
        (self.next > now).then(|| self.next.wrapping_sub(now))
    }

    /// A packet of `bytes` went out at `now`, at `rate` kbit/s: the next one waits for its
    /// serialisation time (credit saved while idle is capped at [`PACER_BURST_NS`]).
    pub fn charge(&mut self, bytes: u32, rate: u32, now: u64) {
        // bits / (kbit/s) = ms / 1000 ... in ns: bytes * 8 * 10^6 / rate.
        let cost = u64::from(bytes)
            .saturating_mul(8_000_000)
            .checked_div(u64::from(rate))
            .unwrap_or(u64::MAX);
        let floor = now.saturating_sub(PACER_BURST_NS);
        self.next = self.next.max(floor).saturating_add(cost);
    }
}
