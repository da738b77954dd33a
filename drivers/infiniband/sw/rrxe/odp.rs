// SPDX-License-Identifier: GPL-2.0

//! On-demand paging: page faults of ODP memory regions, resolved in process context.
//!
//! An ODP region ([`kernel::rdma::odp::OdpUmem`]) is not pinned: its pages are there when
//! a fault brought them in and until the kernel takes them away again. The data path runs
//! in softirq or with bottom halves disabled, where it must not fault, so an access that
//! meets a page that is not present fails (`EAGAIN`) and the data path does what an RNIC
//! does on a page fault, then asks the device's fault queue ([`Faults`]) to fault the range
//! in, in process context:
//!
//! - the responder refuses a SEND, RDMA WRITE or atomic whose target is not present with an
//!   RNR NAK before accepting it (RC; a UC or UD packet is dropped, as a lost one): the
//!   requester sends it again after the RNR wait, when the page is there. The fault asks
//!   for the rest of the message with it (up to [`FAULT_AHEAD`]: the RETH length left of an
//!   RDMA WRITE, the rest of the receive buffer of a SEND), so that a long message is not
//!   refused once per page;
//! - READ responses whose pages are not present wait in the responder's queue; the fault
//!   work resumes the QP once the pages are in;
//! - the requester keeps a request whose payload is not present unsent and the fault work
//!   resumes the QP; READ data or an atomic result that cannot be placed is dropped, the
//!   destination faulted in, and the retransmission brings it again. A READ or atomic's
//!   destination is faulted in ahead as soon as the WQE is posted, when it is not present.
//!
//! The queue is bounded ([`FAULT_QUEUE`]): a fault that does not fit is dropped and counted,
//! and the retry that follows asks again. The work resolves at most [`FAULT_BUDGET`] faults
//! per run and re-queues itself.

use crate::budget::{Budget, FAULT_BUDGET};
use crate::counters::{PortCounter, Stats};
use crate::fifo::Fifo;
use crate::mem::MrInner;
use kernel::prelude::*;
use kernel::rdma::{
    bhwork::{BhWork, SleepableWorkCallback},
    netdev::NetDevice,
    timer::impl_deferred,
    BhSpinLock, MaySleep,
};
use kernel::sync::{
    aref::ARef,
    atomic::{ordering::Relaxed, Atomic},
    static_lock_class, Arc,
};

/// Faults that may wait for the work per device.
pub(crate) const FAULT_QUEUE: usize = 64;

/// Most bytes a fault asks for ahead of an access that met a page not present (READ
/// responses, a request's payload): the next pages of a long transfer come in with it, and
/// a fault stays bounded work.
pub(crate) const FAULT_AHEAD: usize = 256 << 10;

/// A range of an ODP region to fault in.
pub(crate) struct Fault {
    /// The region (the work may hold the last reference: it drops it in process context).
    pub(crate) mr: Arc<MrInner>,
    /// Byte offset in the region.
    pub(crate) off: usize,
    /// Bytes.
    pub(crate) len: usize,
    /// For writing.
    pub(crate) write: bool,
    /// The QP (its number) to resume once the range is in, if it waits for it, and how.
    pub(crate) resume: Option<(u32, Resume)>,
}

/// How a QP that waited for a fault goes on.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Resume {
    /// Where it stopped (a request or READ response not sent, a datagram not placed).
    Continue,
    /// The requester goes back to its oldest unacknowledged PSN without counting a retry
    /// (a READ response or atomic ACK was dropped: its destination was not present).
    Rewind,
}

/// Resumes QP number `qpn` of the device on a netdevice, if it still exists, as `how` says:
/// given by the device (which finds its QPs), called by the fault work in process context.
pub(crate) type ResumeQp = fn(ndev: &NetDevice, qpn: u32, how: Resume);

/// A device's page faults and their work.
#[pin_data(PinnedDrop)]
pub(crate) struct Faults {
    /// Resolves the queued faults in process context; cancelled before any field is dropped
    /// (`impl_deferred!`).
    #[pin]
    fault_work: BhWork<Faults>,
    #[pin]
    queue: BhSpinLock<Fifo<Fault>>,
    /// The device's netdevice, to find the QPs to resume.
    ndev: ARef<NetDevice>,
    /// Resumes a QP that waited for a fault.
    resume_qp: ResumeQp,
    /// ODP regions registered on the device: while there is none, the data path does not
    /// look for faults.
    regions: Atomic<u32>,
    /// The device's port counters.
    stats: Arc<Stats>,
}

impl_deferred! {
    impl Deferred for Faults {
        sleepable work fault_work;
    }
}

impl Faults {
    /// Returns an initialiser for the fault queue of a device on `ndev`.
    pub(crate) fn new(
        ndev: &NetDevice,
        stats: Arc<Stats>,
        resume_qp: ResumeQp,
    ) -> Result<impl PinInit<Self, Error>> {
        let fifo = Fifo::new(FAULT_QUEUE)?;
        let ndev: ARef<NetDevice> = ndev.into();
        Ok(try_pin_init!(Self {
            fault_work <- BhWork::new(c"rrxe_odp_fault", kernel::static_lock_class!()),
            queue <- BhSpinLock::new(fifo, c"rrxe_odp_faults", static_lock_class!()),
            ndev,
            resume_qp,
            regions: Atomic::new(0),
            stats,
        }))
    }

    /// Counts an ODP region registered (`true`) or deregistered.
    pub(crate) fn count_region(&self, added: bool) {
        if added {
            self.regions.fetch_add(1, Relaxed);
        } else {
            self.regions.fetch_sub(1, Relaxed);
        }
    }

    /// Returns whether the device has ODP regions (the data path may meet a fault).
    pub(crate) fn any(&self) -> bool {
        self.regions.load(Relaxed) != 0
    }

    /// Queues `f` for the work, unless the same range of the same region is queued
    /// already for the same QP; counts it dropped if the queue is full. Returns whether the
    /// fault is queued (now or already).
    ///
    /// # Context
    ///
    /// Softirq or bottom halves disabled, the region resolved in the same section (so that
    /// the reference dropped here, when the fault is not queued, is not the last).
    pub(crate) fn request(&self, f: Fault) -> bool {
        let mut queued = true;
        let refused = {
            let mut q = self.queue.lock();
            let dup = q.iter_mut().any(|o| {
                Arc::ptr_eq(&o.mr, &f.mr)
                    && o.off == f.off
                    && o.len == f.len
                    && (o.write || !f.write)
                    && o.resume == f.resume
            });
            self.stats.inc(PortCounter::OdpPageFaults);
            if dup {
                Some(f)
            } else {
                q.push_back(f).err().inspect(|_| {
                    queued = false;
                    self.stats.inc(PortCounter::OdpFaultsDropped);
                })
            }
        };
        drop(refused);
        self.fault_work.queue(self);
        queued
    }
}

impl SleepableWorkCallback for Faults {
    /// Faults the queued ranges in, then resumes the QPs that wait for them.
    fn work_run(this: &Self, ctx: &MaySleep<'_>) {
        let next = || {
            let f = this.queue.lock().pop_front();
            f
        };
        let resolve = |f: Fault| {
            this.stats
                .inc(match f.mr.fault(ctx, f.off, f.len, f.write) {
                    Ok(()) => PortCounter::OdpFaultsResolved,
                    Err(_) => PortCounter::OdpFaultErrors,
                });
            let resume = f.resume;
            // The last reference to a region deregistered meanwhile goes here, in process
            // context.
            drop(f);
            if let Some((qpn, how)) = resume {
                (this.resume_qp)(&this.ndev, qpn, how);
            }
        };
        if Budget::of(FAULT_BUDGET).drain(next, resolve) {
            this.fault_work.queue(this);
        }
    }
}
