// SPDX-License-Identifier: GPL-2.0

//! 24-bit packet and message sequence numbers with wrap-around arithmetic.

#[cfg(rrxe_host)]
use core::cmp::Ordering;

u24_type! {
    /// A packet sequence number (PSN), compared modulo 2^24.
    Psn
}

u24_type! {
    /// A message sequence number (MSN) as carried in the AETH.
    Msn
}

/// Where a received PSN falls relative to the expected one; see [`Psn::classify`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsnClass {
    /// Behind the expected PSN: a retransmission of something already seen.
    Duplicate,
    /// Exactly the expected PSN.
    Expected,
    /// Ahead of the expected PSN, within the window: packets were lost (sequence error).
    Ahead,
    /// Ahead of the expected PSN by at least the window: invalid.
    TooFarAhead,
}

impl Psn {
    /// Returns `self + n` modulo 2^24.
    pub const fn wrapping_add(self, n: u32) -> Self {
        Self::new(self.0.wrapping_add(n))
    }

    /// Returns the next PSN, wrapping from `0xffffff` to 0.
    pub const fn next(self) -> Self {
        self.wrapping_add(1)
    }

    /// Returns `self - other` as a signed 24-bit distance in `-2^23..2^23` (rxe's
    /// `psn_compare`).
    pub const fn diff(self, other: Self) -> i32 {
        (self.0.wrapping_sub(other.0) << 8).cast_signed() >> 8
    }

    /// Compares two PSNs in sequence order (valid while they are less than 2^23 apart).
    #[cfg(rrxe_host)]
    pub const fn seq_cmp(self, other: Self) -> Ordering {
        let d = self.diff(other);
        if d < 0 {
            Ordering::Less
        } else if d == 0 {
            Ordering::Equal
        } else {
            Ordering::Greater
        }
    }

    /// Classifies this received PSN against `expected` given a window of `window` PSNs.
    ///
    /// A PSN `d` ahead of `expected` is [`PsnClass::Ahead`] for `0 < d < window` and
    /// [`PsnClass::TooFarAhead`] otherwise; anything behind is a [`PsnClass::Duplicate`].
    pub const fn classify(self, expected: Self, window: u32) -> PsnClass {
        let d = self.diff(expected);
        if d < 0 {
            PsnClass::Duplicate
        } else if d == 0 {
            PsnClass::Expected
        } else if d.unsigned_abs() < window {
            PsnClass::Ahead
        } else {
            PsnClass::TooFarAhead
        }
    }
}

impl Msn {
    /// Returns the next MSN, wrapping from `0xffffff` to 0.
    pub const fn next(self) -> Self {
        Self::new(self.0.wrapping_add(1))
    }
}
