// SPDX-License-Identifier: GPL-2.0

//! AETH syndrome encoding: ACK with credit count, RNR NAK with timer, NAK codes.
//!
//! The syndrome byte (IBA Vol. 1 9.7.5.1) is `0 TT VVVVV`: bit 7 is reserved (zero),
//! bits 6-5 select ACK (00), RNR NAK (01), reserved (10) or NAK (11), and bits 4-0 carry the
//! credit count, the RNR timer code or the NAK code.

use super::ext::Aeth;

/// Declares a newtype over a 5-bit syndrome value.
macro_rules! code5 {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        ///
        /// # Invariants
        ///
        /// The code is below 32.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name(u8);

        // Generated for each code type; the module uses a different subset of each.
        #[allow(dead_code)]
        impl $name {
            /// Creates a value from its 5-bit code, or `None` if `code` is above 31.
            pub const fn new(code: u8) -> Option<Self> {
                if code < 32 {
                    Some(Self(code))
                } else {
                    None
                }
            }

            /// Creates a value from the low five bits of `code`.
            pub const fn from_low_bits(code: u8) -> Self {
                Self(code & 31)
            }

            /// Returns the 5-bit code.
            pub const fn code(self) -> u8 {
                self.0
            }
        }
    };
}

code5! {
    /// An encoded end-to-end credit count.
    Credits
}

code5! {
    /// An encoded RNR NAK timer: how long the requester waits before retrying.
    RnrTimer
}

/// Number of receive WQEs for each credit code 0-30 (IBA table 44).
#[cfg(rrxe_host)]
const CREDIT_COUNTS: [u16; 31] = [
    0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
];

impl Credits {
    /// The code 0x1F: credit count invalid (no flow control information, as sent by rxe).
    pub const INVALID: Self = Self(0x1f);

    /// Returns the number of receive WQEs advertised, or `None` for [`Credits::INVALID`].
    #[cfg(rrxe_host)]
    pub fn count(self) -> Option<u32> {
        CREDIT_COUNTS
            .get(usize::from(self.0))
            .map(|&n| u32::from(n))
    }
}

/// Delay in microseconds for each RNR timer code (IBA table 45); code 0 is the longest.
/// (rxe_comp.c has 61410 for code 25, a typo for 61.44 ms.)
const RNR_MICROS: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

impl RnrTimer {
    /// Returns the delay in microseconds (code 0 = 655.36 ms, 1 = 10 us, ..., 31 = 491.52 ms).
    pub fn micros(self) -> u32 {
        RNR_MICROS.get(usize::from(self.0)).copied().unwrap_or(0)
    }
}

/// NAK codes (IBA table 43); codes 5-31 are reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum NakCode {
    /// PSN sequence error: a packet was lost, retransmit from the AETH's PSN.
    PsnSequenceError = 0,
    /// Invalid request.
    InvalidRequest = 1,
    /// Remote access error (rkey, bounds or access rights).
    RemoteAccessError = 2,
    /// Remote operational error.
    RemoteOperationalError = 3,
    /// Invalid RD request.
    InvalidRdRequest = 4,
}

/// A decoded AETH syndrome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syndrome {
    /// Positive acknowledgment with an end-to-end credit count.
    Ack(Credits),
    /// Receiver not ready: retry after the given delay.
    RnrNak(RnrTimer),
    /// Negative acknowledgment.
    Nak(NakCode),
}

/// A syndrome byte with a reserved type, a reserved NAK code or bit 7 set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReservedSyndrome(pub u8);

impl Syndrome {
    /// Decodes a syndrome byte.
    pub const fn decode(byte: u8) -> Result<Self, ReservedSyndrome> {
        let value = byte & 0x1f;
        Ok(match byte >> 5 {
            0b000 => Self::Ack(Credits(value)),
            0b001 => Self::RnrNak(RnrTimer(value)),
            0b011 => Self::Nak(match value {
                0 => NakCode::PsnSequenceError,
                1 => NakCode::InvalidRequest,
                2 => NakCode::RemoteAccessError,
                3 => NakCode::RemoteOperationalError,
                4 => NakCode::InvalidRdRequest,
                _ => return Err(ReservedSyndrome(byte)),
            }),
            _ => return Err(ReservedSyndrome(byte)),
        })
    }

    /// Encodes the syndrome byte.
    pub const fn encode(self) -> u8 {
        match self {
            Self::Ack(c) => c.0,
            Self::RnrNak(t) => 0x20 | t.0,
            Self::Nak(code) => 0x60 | code as u8,
        }
    }

    /// Returns `true` for [`Syndrome::Ack`].
    #[cfg(rrxe_host)]
    pub const fn is_ack(self) -> bool {
        matches!(self, Self::Ack(_))
    }
}

impl Aeth<'_> {
    /// Decodes the syndrome byte.
    pub fn decode_syndrome(&self) -> Result<Syndrome, ReservedSyndrome> {
        Syndrome::decode(self.syndrome())
    }
}
