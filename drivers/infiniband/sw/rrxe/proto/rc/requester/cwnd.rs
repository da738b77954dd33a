// SPDX-License-Identifier: GPL-2.0

//! The requester's congestion window: how many PSNs a QP may have outstanding on a wire
//! that it shares, below the fixed window of [`super::SenderConfig::max_unacked_psns`].
//!
//! RoCEv2 over an Ethernet without PFC loses packets when the senders together exceed
//! what a queue on the path holds: a switch port, a receiver's ring, the host socket of an
//! emulated wire. rxe sends each QP's full window (128 PSNs) whatever happened to the last
//! one, so with many QPs every loss triggers a go-back-N of up to 128 packets per QP, the
//! resends are lost in turn, and the QPs end in `IB_WC_RETRY_EXC_ERR` (a congestion
//! collapse: `ib_write_bw -q 64` between two guests). The IBA leaves the requester free to
//! send less than the window; rrxe reacts to loss as TCP Reno does (RFC 5681), on the only
//! signals an RC requester has:
//!
//! - a loss seen without a timeout (a PSN sequence error NAK, READ responses that skip a
//!   PSN, an ACK past an incomplete READ) halves the window;
//! - a local ACK timeout shrinks it to [`CWND_MIN`] PSNs;
//! - acknowledged PSNs grow it: by as many PSNs up to the slow-start threshold (the window
//!   at the last loss, halved), then by one PSN per window acknowledged, back up to the
//!   fixed window.
//!
//! A QP alone on a clean wire never loses a packet and keeps the full window: it sends as
//! rxe does. RNR NAKs say nothing about the network and leave the window alone. The window
//! never stops the oldest unacknowledged PSN from going out, so it cannot deadlock a QP
//! (a READ request always goes out when it is the oldest, whatever its PSN span).

/// Smallest congestion window, in PSNs: after a local ACK timeout the requester sends
/// this many before it waits for an acknowledgment (TCP's loss window is one segment;
/// two keep the AckReq period, and so the ACK clock, going).
pub const CWND_MIN: u32 = 2;

/// A congestion window in PSNs (see the module documentation).
///
/// # Invariants
///
/// `CWND_MIN.min(max) <= cwnd <= max` and `CWND_MIN.min(max) <= ssthresh <= max`;
/// `acc < cwnd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cwnd {
    max: u32,
    cwnd: u32,
    ssthresh: u32,
    /// PSNs acknowledged toward the next one-PSN increase (congestion avoidance).
    acc: u32,
}

impl Cwnd {
    /// Returns a full window of `max` PSNs (at least 1).
    pub const fn new(max: u32) -> Self {
        let max = if max == 0 { 1 } else { max };
        Self {
            max,
            cwnd: max,
            ssthresh: max,
            acc: 0,
        }
    }

    /// Returns the PSNs that may be outstanding now.
    pub const fn get(&self) -> u32 {
        self.cwnd
    }

    /// Returns the slow-start threshold.
    #[cfg(rrxe_host)]
    pub const fn ssthresh(&self) -> u32 {
        self.ssthresh
    }

    fn floor(&self) -> u32 {
        CWND_MIN.min(self.max)
    }

    /// Takes the acknowledgment of `n` more PSNs.
    pub fn on_ack(&mut self, n: u32) {
        if self.cwnd < self.ssthresh {
            // Slow start, up to the threshold.
            self.cwnd = self.cwnd.saturating_add(n).min(self.ssthresh);
            self.acc = 0;
            return;
        }
        // Congestion avoidance: one PSN per window acknowledged.
        let mut acc = self.acc.saturating_add(n);
        while acc >= self.cwnd && self.cwnd < self.max {
            acc = acc.wrapping_sub(self.cwnd);
            self.cwnd = self.cwnd.wrapping_add(1);
        }
        self.acc = if self.cwnd >= self.max {
            0
        } else {
            acc.min(self.cwnd.wrapping_sub(1))
        };
    }

    /// Takes a loss, with `flight` PSNs outstanding when it was seen: a `timeout` (local
    /// ACK timeout) or a loss the responses showed (sequence error NAK, missing READ
    /// responses).
    pub fn on_loss(&mut self, flight: u32, timeout: bool) {
        let floor = self.floor();
        self.ssthresh = (flight.min(self.cwnd) / 2).clamp(floor, self.max);
        self.cwnd = if timeout { floor } else { self.ssthresh };
        self.acc = 0;
    }
}
