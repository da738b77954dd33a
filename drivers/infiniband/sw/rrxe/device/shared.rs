// SPDX-License-Identifier: GPL-2.0

//! What the data path of every QP of a device shares, and outlives the device with: the
//! loopback path and the tables the receive path and the doorbell look keys and address
//! handles up in.

use super::Rrxe;
use crate::counters::Stats;
use crate::mr::MrInner;
use kernel::prelude::*;
use kernel::rdma::{
    bhwork::{BhWork, BhWorkCallback},
    net::{PacketQueue, TunnelRx, TxBuf},
    netdev::NetDevice,
    qp::AhAttr,
    timer::impl_deferred,
    BhGuard,
};
use kernel::sync::{aref::ARef, Arc, SpinLock};
use kernel::xarray::XArray;

/// The part of a device that its QPs' data path uses, shared with them: it lives as long as
/// the last QP, whose timers may run after the device is being torn down.
#[pin_data(PinnedDrop)]
pub(crate) struct DevShared {
    /// Local delivery: packets a QP sent to a QP of this device (to this host's own
    /// address), handed to the receive path from softirq work rather than inside the
    /// sender's locks. Cancelled before any field is dropped (`impl_deferred!`).
    #[pin]
    pub(super) lo_work: BhWork<DevShared>,
    #[pin]
    pub(super) lo_queue: PacketQueue,
    /// The netdevice (local deliveries are attributed to it; routes are looked up out of it,
    /// in its namespace).
    pub(super) ndev: ARef<NetDevice>,
    /// Memory regions by key index (`key >> 8`). Lookups happen in softirq or with bottom
    /// halves disabled, and the region found is only used there: a deregistration takes the
    /// region out, then waits for an RCU grace period before the memory is unpinned.
    #[pin]
    pub(super) mrs: XArray<Arc<MrInner>>,
    /// Address handles by number (the address vector and the AH's PD); lookups (UD sends)
    /// happen with bottom halves disabled.
    #[pin]
    pub(super) ah_nums: XArray<KBox<(AhAttr, u64)>>,
    /// Port counters (shared with the fault queue's work).
    pub(crate) stats: Arc<Stats>,
    /// Makes atomics from the wire atomic with respect to each other (IBV_ATOMIC_HCA).
    #[pin]
    pub(crate) atomic_lock: SpinLock<()>,
    /// Page faults of on-demand paging regions, resolved in process context.
    #[pin]
    pub(crate) faults: crate::odp::Faults,
}

impl_deferred! {
    impl Deferred for DevShared {
        work lo_work;
    }
}

/// Loopback packets handed to the receive path per run of the loopback work (its answers
/// may queue more: the work re-queues itself instead of looping, as NAPI does).
const LO_BUDGET: usize = 64;

/// Loopback packets that may wait, as a netdevice's transmit queue (`txqueuelen`): beyond,
/// a local transmission fails with `ENOBUFS` (a full queue, to the sender).
const LO_QUEUE_MAX: usize = 1000;

impl BhWorkCallback for DevShared {
    fn work_run(this: &Self) {
        for _ in 0..LO_BUDGET {
            let Some(pkt) = this.lo_queue.pop() else {
                return;
            };
            <Rrxe as TunnelRx>::receive(pkt);
        }
        if !this.lo_queue.is_empty() {
            this.lo_work.queue(this);
        }
    }
}

impl DevShared {
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

    /// Returns the region at `key`'s index, whatever its key and state: the caller checks
    /// `key` against it ([`MrInner::check`], or fast registration and invalidation), which
    /// refuses a stale key (same index, another byte).
    ///
    /// # Context
    ///
    /// Softirq, or bottom halves disabled; the returned reference must be dropped before
    /// leaving that section.
    pub(crate) fn mr(&self, key: u32) -> Option<Arc<MrInner>> {
        let xa = self.mrs.lock();
        xa.get((key >> 8) as usize).map(Into::into)
    }
}
