// SPDX-License-Identifier: GPL-2.0

//! The responder's transmit queue: READ responses sent in bounded bursts, in PSN order with
//! the acknowledgments and atomic ACKs that follow them.
//!
//! One READ request of up to 2 GiB asks for up to 2^21 response packets at the smallest
//! MTU. Building them all at once, in the softirq that received the request and under the
//! engine lock, would starve the host and overflow the transmit queue (the requester then
//! asks again, and the responder builds them all again). Instead a READ's responses are
//! queued here ([`Queued::Read`]) and sent at most a run's [`Budget`] of packets: the
//! first run is the receive softirq's, the next ones the QP's BH work, which re-queues itself
//! while responses remain (as NAPI does). When the transmit queue is full
//! (`NET_XMIT_DROP`), the QP stops and tries the same packet again after
//! [`TX_WAIT_US`] (its `tx_wait` timer) instead of dropping it.
//!
//! Responses must reach the requester in PSN order (IBA 9.7.5.1.3: an ACK beyond an
//! incomplete READ tells the requester the READ's responses were lost), so while anything
//! is queued, later acknowledgments and atomic ACKs queue behind it. ACKs are cumulative:
//! a new one replaces an ACK or NAK waiting at the tail, which bounds the queue by the
//! READs and atomics outstanding. A duplicate READ (C9-112) at PSN `p` means the requester
//! went back to `p` (go-back-N) and will ask again for every request after it: whatever is
//! queued for `p` or later is dropped and the duplicate's responses queued in its place, as
//! `rdma_rxe` abandons the READ in progress for the duplicate.
//!
//! The rkey is resolved over the READ's whole range when the request is accepted (a bad one
//! is NAKed at once; the first burst uses that resolution) and again for each later burst,
//! since a region may not be held across runs: a region deregistered in between ends the
//! responses, and the requester's retry then draws the NAK.

use super::{cc::PACED_HDR_BYTES, path_mtu, xmit::PKEY, Engine, QpShared};
use crate::budget::Budget;
use crate::counters::PortCounter;
use crate::fifo::Fifo;
use crate::mem::Need;
use crate::mem::{Key, Mem};
use crate::odp::{Resume, FAULT_AHEAD};
use crate::proto::{
    aeth::Syndrome,
    psn::{Msn, Psn},
    rc::{AtomicReply, PathMtu, ReadReply, Reply},
};
use kernel::prelude::*;
use kernel::rdma::trace;

/// How long a QP waits when the transmit queue is full before it tries again (1 ms).
pub(super) const TX_WAIT_US: u32 = 1000;

/// Capacity of the queue of a responder with `max_dest_rd_atomic` responder resources: a
/// READ or atomic ACK and one acknowledgment after each of the READs and atomics the
/// requester may have outstanding (no more than the responder's resources, IBA 9.5), and
/// one more. A requester that keeps more outstanding finds the excess dropped and counted
/// (`RepliesDropped`): its retry asks again, as for a lost response.
fn capacity(max_dest_rd_atomic: u32) -> usize {
    let n = max_dest_rd_atomic.min(crate::params::MAX_QP_RD_ATOM);
    // At most 2 * 128 + 2.
    n as usize * 2 + 2
}

/// A response waiting to be sent.
#[derive(Clone, Copy)]
pub(super) enum Queued {
    /// An ACK, NAK or RNR NAK.
    Ack(Reply),
    /// An atomic ACKnowledge.
    Atomic(AtomicReply),
    /// The responses of a READ, from packet `next` on.
    Read {
        /// The READ.
        rd: ReadReply,
        /// The next response packet to send.
        next: u32,
    },
}

/// The responses waiting to be sent, oldest first, in at most [`capacity`] entries.
pub(super) type ReplyQueue = Fifo<Queued>;

/// Returns an empty reply queue for a responder with `max_dest_rd_atomic` responder
/// resources. It is allocated when the QP is created (for none: an RC QP's modify to RTR
/// names its resources and brings the queue for them) and when the resources are set, so a
/// QP pays for the READs it accepts, not for the device's maximum.
pub(super) fn new_queue(max_dest_rd_atomic: u32) -> Result<ReplyQueue> {
    Fifo::new(capacity(max_dest_rd_atomic))
}

impl Queued {
    /// Returns the PSN of the last packet this entry sends.
    fn last_psn(&self, mtu: PathMtu) -> Psn {
        match self {
            Queued::Ack(r) => r.psn,
            Queued::Atomic(r) => r.psn,
            Queued::Read { rd, .. } => rd.psn.wrapping_add(rd.packets(mtu).saturating_sub(1)),
        }
    }
}

/// Drops every entry of `q` that would send PSN `psn` or a later one. The queue is in PSN
/// order, so what remains comes before `psn`.
fn drop_from(q: &mut ReplyQueue, psn: Psn, mtu: PathMtu) {
    while q.back_mut().is_some_and(|b| b.last_psn(mtu).diff(psn) >= 0) {
        q.pop_back();
    }
}

impl QpShared {
    /// Sends an acknowledgment, or queues it behind the responses before it.
    pub(super) fn reply_ack(&self, e: &mut Engine, r: Reply) {
        if !matches!(r.syndrome, Syndrome::Ack(_)) {
            trace::nak_sent(self.dev_name(), self.qpn, r.psn.get(), r.syndrome.encode());
        }
        if e.res.replies.is_empty() {
            self.send_headers(e, &r.spec(e.tx.dest_qpn, PKEY));
            return;
        }
        // Acknowledgments are cumulative: the newest one says all an older one said.
        if let Some(Queued::Ack(tail)) = e.res.replies.back_mut() {
            *tail = r;
            return;
        }
        if e.res.replies.push_back(Queued::Ack(r)).is_err() {
            // The requester's timeout recovers it.
            self.stats(e).inc(PortCounter::RepliesDropped);
        }
    }

    /// Sends an atomic ACKnowledge, or queues it behind the responses before it. A
    /// duplicate atomic (replayed from its resource) goes ahead of what was queued after
    /// it, as a duplicate READ does ([`Self::reply_read`]).
    pub(super) fn reply_atomic(&self, e: &mut Engine, r: AtomicReply) {
        drop_from(&mut e.res.replies, r.psn, path_mtu(&e.attrs));
        if e.res.replies.is_empty() {
            self.send_headers(e, &r.spec(e.tx.dest_qpn, PKEY));
            return;
        }
        if e.res.replies.push_back(Queued::Atomic(r)).is_err() {
            self.stats(e).inc(PortCounter::RepliesDropped);
        }
    }

    /// Queues the responses of READ `rd` and sends the first burst, after checking its rkey
    /// over the whole range (a zero-length READ names no memory: its rkey is not checked,
    /// C9-88). `Err` if the rkey does not grant the READ: the caller NAKs it.
    pub(super) fn reply_read(&self, e: &mut Engine, rd: ReadReply) -> Result {
        let mem = if rd.len == 0 {
            None
        } else {
            Some(self.resolve(Key::from_raw(rd.rkey), rd.va, rd.len, Need::RemoteRead)?)
        };
        // A READ at PSN `p` tells that the requester has every response before `p` and
        // can take none after it until this READ's: a new READ comes after everything
        // queued, and a duplicate means it went back to `p`. Responses queued for `p` or
        // later (this READ's own remainder, later READs', ACKs) would go out ahead of what
        // it waits for and be discarded, and it asks again for each request after `p`.
        // Keeping them cost a local ACK timeout whenever a later READ was still queued: its
        // responses, restarted in place by its own duplicate, left ahead of this one's and
        // were thrown away, and the requester then waited for them.
        drop_from(&mut e.res.replies, rd.psn, path_mtu(&e.attrs));
        if e.res
            .replies
            .push_back(Queued::Read { rd, next: 0 })
            .is_err()
        {
            // More READs than the requester may have outstanding: its retry asks again.
            self.stats(e).inc(PortCounter::RepliesDropped);
            return Ok(());
        }
        self.send_replies_with(e, mem.map(|m| (rd.msn, m)));
        Ok(())
    }

    /// Sends queued responses, at most a run's [`Budget`] of packets; if some remain, the QP's
    /// BH work carries on (or its `tx_wait` timer, when the transmit queue is full).
    pub(super) fn send_replies(&self, e: &mut Engine) {
        self.send_replies_with(e, None);
    }

    /// [`Self::send_replies`], with the region of the READ with MSN `msn` already resolved
    /// in this run (`resolved`).
    fn send_replies_with(&self, e: &mut Engine, mut resolved: Option<(Msn, Mem<'_>)>) {
        let mut budget = Budget::run();
        while !budget.is_spent() {
            let Some(&mut front) = e.res.replies.front_mut() else {
                return;
            };
            // Packets this entry took, once it is sent entirely.
            let cost = match front {
                Queued::Ack(r) => {
                    self.send_headers(e, &r.spec(e.tx.dest_qpn, PKEY));
                    1
                }
                Queued::Atomic(r) => {
                    self.send_headers(e, &r.spec(e.tx.dest_qpn, PKEY));
                    1
                }
                Queued::Read { rd, next } => {
                    let mem = match resolved.take() {
                        Some((msn, mem)) if msn == rd.msn => Some(mem),
                        _ => None,
                    };
                    match self.send_read_burst(e, &rd, next, budget.left(), mem) {
                        Burst::Done(sent) => sent.max(1),
                        Burst::More(next) => {
                            if let Some(Queued::Read { next: n, .. }) = e.res.replies.front_mut() {
                                *n = next;
                            }
                            self.stats(e).inc(PortCounter::ReplyYields);
                            self.kick.queue(self);
                            return;
                        }
                        Burst::Fault(next) => {
                            if let Some(Queued::Read { next: n, .. }) = e.res.replies.front_mut() {
                                *n = next;
                            }
                            return;
                        }
                        Burst::Full(next) => {
                            if let Some(Queued::Read { next: n, .. }) = e.res.replies.front_mut() {
                                *n = next;
                            }
                            self.stats(e).inc(PortCounter::TxPaused);
                            self.tx_wait.arm_after_us(self, TX_WAIT_US);
                            return;
                        }
                        Burst::Paced(next, us) => {
                            // The QP's congestion control rate: the rest waits for it.
                            if let Some(Queued::Read { next: n, .. }) = e.res.replies.front_mut() {
                                *n = next;
                            }
                            self.tx_wait.arm_after_us(self, us);
                            return;
                        }
                    }
                }
            };
            e.res.replies.pop_front();
            budget.spend(cost);
        }
        if !e.res.replies.is_empty() {
            self.stats(e).inc(PortCounter::ReplyYields);
            self.kick.queue(self);
        }
    }

    /// Sends response packets of `rd` from `next` on, at most `budget` of them; `mem` is
    /// its region if this run resolved it already.
    fn send_read_burst(
        &self,
        e: &mut Engine,
        rd: &ReadReply,
        next: u32,
        budget: u32,
        mem: Option<Mem<'_>>,
    ) -> Burst {
        let mtu = path_mtu(&e.attrs);
        let total = rd.packets(mtu);
        let mem = match mem {
            Some(mem) => Some(mem),
            None if rd.len == 0 => None,
            None => match self.resolve(Key::from_raw(rd.rkey), rd.va, rd.len, Need::RemoteRead) {
                Ok(mem) => Some(mem),
                // The region went away: stop here (the requester's retry draws a NAK).
                Err(_) => return Burst::Done(0),
            },
        };
        let mut i = next;
        let end = next.saturating_add(budget).min(total);
        while i < end {
            if let Some(us) = self.pace_wait(e) {
                return Burst::Paced(i, us);
            }
            let r = rd.response(i, mtu);
            let spec = r.spec(e.tx.dest_qpn, PKEY, rd.msn, &[]);
            let id = e.tx.next_ip_id();
            let sent =
                match (usize::try_from(r.offset), usize::try_from(r.len)) {
                    (Ok(at), Ok(len)) => self.xmit(
                        &mut e.tx.routes,
                        &e.tx.av,
                        id,
                        &spec,
                        len,
                        |out| match &mem {
                            Some(mem) => mem.read(at, out),
                            None => Ok(()),
                        },
                    ),
                    _ => Err(EINVAL),
                };
            if sent == Err(ENOBUFS) {
                return Burst::Full(i);
            }
            if sent == Err(EAGAIN) {
                // On-demand paging memory not present: the responses wait for the fault
                // work, which resumes the QP (a fault that cannot be resolved makes it a lost
                // response instead, and the requester's retries end in an error).
                let at = usize::try_from(r.offset).unwrap_or(usize::MAX);
                let left = usize::try_from(rd.len.saturating_sub(r.offset)).unwrap_or(0);
                if let Some(mem) = &mem {
                    if self.request_fault(
                        mem,
                        at,
                        left.min(FAULT_AHEAD),
                        false,
                        Some(Resume::Continue),
                    ) {
                        return Burst::Fault(i);
                    }
                }
            }
            // Any other failure is a lost response: the requester asks again.
            self.count_sent(e, sent, false);
            self.paced(e, r.len.saturating_add(PACED_HDR_BYTES));
            i += 1;
        }
        if i < total {
            Burst::More(i)
        } else {
            Burst::Done(i - next)
        }
    }
}

/// How far a burst of READ responses got.
enum Burst {
    /// All sent; this many packets in this burst.
    Done(u32),
    /// The budget ran out before this packet.
    More(u32),
    /// The transmit queue was full at this packet.
    Full(u32),
    /// This packet's memory is being faulted in (on-demand paging).
    Fault(u32),
    /// This packet waits this many µs for the QP's congestion control rate.
    Paced(u32, u32),
}
