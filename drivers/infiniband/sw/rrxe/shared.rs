// SPDX-License-Identifier: GPL-2.0

//! What the data path of every QP of a device shares, and outlives the device with: the
//! loopback path, the key table, the address handle table, the port counters and the page
//! fault queue. The floor below the engine: the engine reaches its device only through it,
//! and it names nothing above it (the loopback queue drains into the receive path through
//! the kernel's [`TunnelRx`] trait, which the receive path implements for the driver).

use crate::budget::Budget;
use crate::cc::CcKnobs;
use crate::counters::Stats;
use crate::mem::KeyTable;
use crate::odp::{Faults, ResumeQp};
use crate::params::MAX_AH;
use crate::Rrxe;
use kernel::prelude::*;
use kernel::rdma::{
    bhwork::{BhWork, BhWorkCallback},
    net::{PacketQueue, TunnelRx, TxBuf},
    netdev::NetDevice,
    qp::AhAttr,
    timer::impl_deferred,
    BhGuard,
};
use kernel::sync::{
    aref::ARef,
    atomic::{ordering::Relaxed, Atomic},
    Arc, SpinLock,
};
use kernel::xarray::{AllocKind, XArray};
use kernel::{new_spinlock, static_lock_class};

/// The part of a device that its QPs' data path uses, shared with them: it lives as long as
/// the last QP, whose timers may run after the device is being torn down.
#[pin_data(PinnedDrop)]
pub(crate) struct DevShared {
    /// Local delivery: packets a QP sent to a QP of this device (to this host's own
    /// address), handed to the receive path from softirq work rather than inside the
    /// sender's locks. Cancelled before any field is dropped (`impl_deferred!`).
    #[pin]
    lo_work: BhWork<DevShared>,
    #[pin]
    lo_queue: PacketQueue,
    /// The netdevice (local deliveries are attributed to it; routes are looked up out of it,
    /// in its namespace).
    ndev: ARef<NetDevice>,
    /// Memory regions and windows by key.
    #[pin]
    pub(crate) keys: KeyTable,
    /// Address handles by number (the address vector and the AH's PD); lookups (UD sends)
    /// happen with bottom halves disabled.
    #[pin]
    ah_nums: XArray<KBox<(AhAttr, u64)>>,
    /// Where the search for a free AH number starts.
    next_ah: Atomic<u32>,
    /// Port counters (shared with the fault queue's work).
    pub(crate) stats: Arc<Stats>,
    /// Makes atomics from the wire atomic with respect to each other (IBV_ATOMIC_HCA): held
    /// across each atomic's read and write of the target.
    #[pin]
    pub(crate) atomic_lock: SpinLock<()>,
    /// Page faults of on-demand paging regions, resolved in process context.
    #[pin]
    pub(crate) faults: Faults,
    /// Congestion control: the knobs and the clock ([`crate::cc`]).
    pub(crate) cc: CcKnobs,
}

impl_deferred! {
    impl Deferred for DevShared {
        work lo_work;
    }
}

/// Loopback packets that may wait, as a netdevice's transmit queue (`txqueuelen`): beyond,
/// a local transmission fails with `ENOBUFS` (a full queue, to the sender).
const LO_QUEUE_MAX: usize = 1000;

impl BhWorkCallback for DevShared {
    fn work_run(this: &Self) {
        // The receive path's answers may queue more: at most a run's budget of packets, then
        // the work runs again instead of looping.
        let spent = Budget::run().drain(|| this.lo_queue.pop(), <Rrxe as TunnelRx>::receive);
        if spent && !this.lo_queue.is_empty() {
            this.lo_work.queue(this);
        }
    }
}

impl DevShared {
    /// The shared state of a device on `ndev`, counting into `stats`; the fault work
    /// resumes the device's QPs with `resume_qp`.
    pub(crate) fn new(
        ndev: &NetDevice,
        stats: Arc<Stats>,
        resume_qp: ResumeQp,
    ) -> Result<impl PinInit<Self, Error>> {
        let faults = Faults::new(ndev, stats.clone(), resume_qp)?;
        let ndev: ARef<NetDevice> = ndev.into();
        Ok(try_pin_init!(Self {
            lo_work <- BhWork::new(c"rrxe_loopback", static_lock_class!()),
            lo_queue <- PacketQueue::new(),
            ndev,
            keys <- KeyTable::new(),
            ah_nums <- XArray::new(AllocKind::Alloc),
            next_ah: Atomic::new(0),
            stats,
            atomic_lock <- new_spinlock!((), "rrxe_atomic"),
            faults <- faults,
            cc: CcKnobs::new(),
        }? Error))
    }

    /// The netdevice the device is bound to.
    pub(crate) fn netdev(&self) -> &NetDevice {
        &self.ndev
    }

    /// Delivers a datagram built for this host's own address to the receive path; `ENOBUFS`
    /// if too many wait already (the datagram is dropped).
    pub(crate) fn deliver_locally(&self, buf: TxBuf) -> Result {
        if self.lo_queue.len() >= LO_QUEUE_MAX {
            return Err(ENOBUFS);
        }
        self.lo_queue.push(buf.into_rx(&self.ndev));
        self.lo_work.queue(self);
        Ok(())
    }

    /// Numbers an address handle (1..=32767). Does not sleep unless `sleepable` (kernel
    /// consumers create AHs in atomic context): the free number is found and taken under the
    /// array's lock, storing without sleeping.
    pub(crate) fn alloc_ah_num(&self, attr: &AhAttr, pd_id: u64, sleepable: bool) -> Result<u32> {
        let flags = if sleepable { GFP_KERNEL } else { GFP_ATOMIC };
        let mut entry = Some(KBox::new((*attr, pd_id), flags)?);
        let _bh = BhGuard::new();
        let mut xa = self.ah_nums.lock();
        for _ in 0..MAX_AH {
            let n = self.next_ah.fetch_add(1, Relaxed) % MAX_AH + 1;
            if xa.get(n as usize).is_none() {
                if let Some(e) = entry.take() {
                    xa.store(n as usize, e, GFP_ATOMIC)?;
                    return Ok(n);
                }
            }
        }
        Err(ENOMEM)
    }

    /// Releases an address handle number.
    pub(crate) fn free_ah_num(&self, n: u32) {
        let old = {
            let _bh = BhGuard::new();
            let mut xa = self.ah_nums.lock();
            xa.remove(n as usize)
        };
        drop(old);
    }

    /// Returns the address vector of AH number `n`, if that AH belongs to protection domain
    /// `pd_id` (a UD QP may only send through the address handles of its own PD: the number
    /// of another process's AH, or of the kernel's, names nothing).
    ///
    /// # Context
    ///
    /// Bottom halves disabled (the doorbell).
    pub(crate) fn ah(&self, n: u32, pd_id: u64) -> Option<AhAttr> {
        let xa = self.ah_nums.lock();
        xa.get(n as usize).filter(|e| e.1 == pd_id).map(|e| e.0)
    }

    /// Returns the address vector of AH number `n`, whatever its PD.
    pub(crate) fn ah_attr(&self, n: u32) -> Option<AhAttr> {
        let _bh = BhGuard::new();
        let xa = self.ah_nums.lock();
        let attr = xa.get(n as usize).map(|e| e.0);
        attr
    }

    /// Replaces the address vector of AH number `n` (which keeps its PD).
    pub(crate) fn set_ah_attr(&self, n: u32, attr: &AhAttr) -> Result {
        let _bh = BhGuard::new();
        let mut xa = self.ah_nums.lock();
        let e = xa.get_mut(n as usize).ok_or(EINVAL)?;
        e.0 = *attr;
        Ok(())
    }
}
