// SPDX-License-Identifier: GPL-2.0

//! An rrxe device: creation on a netdevice (`rdma link add`), its state, and the numbers it
//! hands out (QP numbers, PD identities); memory keys and address handle numbers come from
//! the tables of its shared state.
//!
//! What the QPs' data path shares with the device (loopback, key and AH tables, counters),
//! which lives as long as the last QP, is a floor below: [`DevShared`] (`shared.rs`).
//!
//! - `verbs.rs`: the device's verbs (the [`Driver`] implementation).

mod verbs;

use crate::counters::Stats;
use crate::engine::QpShared;
use crate::mcast::{FilterChange, McastGroups, Members};
use crate::odp::Resume;
use crate::params::{self, Counter};
use crate::shared::DevShared;
use crate::Rrxe;
use kernel::debugfs::{Dir, Scope, ScopedDir};
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::rdma::{
    device::{Device, DeviceParams, PortNum, UnregisteredDevice, UverbsCmd},
    lookup::{Found, LookupTable},
    net::PortUser,
    netdev::{random_eth_addr, NetDevice},
    BhGuard, BhSpinLock,
};
use kernel::sync::{
    atomic::{ordering::Relaxed, Atomic},
    Arc, Mutex,
};
use kernel::xarray::{AllocKind, XArray};

/// Per-device state.
#[pin_data]
pub(crate) struct RrxeDev {
    /// System image GUID (host byte order): the modified EUI-64 of the netdevice's MAC
    /// until `ib_modify_device` changes it.
    pub(crate) sys_image_guid: Atomic<u64>,
    /// The port's capability bits (`IB_PORT_*_SUP`): the connection manager's `CM_SUP`,
    /// and what `ib_modify_port` sets and clears.
    pub(crate) port_cap_flags: Atomic<u32>,
    /// Protection domains in use.
    pds: Arc<Counter>,
    /// Completion queues in use.
    cqs: Arc<Counter>,
    /// Queue pairs in use.
    pub(crate) qps: Arc<Counter>,
    /// Shared receive queues in use.
    pub(crate) srqs: Arc<Counter>,
    /// The number the next SRQ is reported with.
    next_srq: Atomic<u32>,
    /// QP numbers in use (the value is the number itself). Allocation and release take
    /// `next_qpn`'s lock, because storing may drop the array's own lock to allocate.
    #[pin]
    qpns: XArray<KBox<u32>>,
    /// Where the search for a free QP number starts; its lock serialises allocation and
    /// release of QP numbers.
    #[pin]
    next_qpn: Mutex<u32>,
    /// The data path's QPs by number; a QP is taken out before it is destroyed, which
    /// waits for the packets being processed that found it, if any.
    #[pin]
    qps_by_num: LookupTable<QpShared>,
    /// Memory regions in use.
    pub(crate) mrs_used: Arc<Counter>,
    /// Memory windows in use.
    pub(crate) mws_used: Arc<Counter>,
    /// Multicast groups and their UD QPs; the receive path reads them in softirq.
    #[pin]
    mcast: BhSpinLock<McastGroups>,
    /// Protection domain identities handed out so far (64 bits: at one per nanosecond it
    /// would take 584 years to wrap, so an identity is never handed out twice).
    next_pd: Atomic<u64>,
    /// What the data path of every QP shares: keys, counters.
    pub(crate) shared: Arc<DevShared>,
    /// The congestion control knobs in debugfs (`<ibdev>/cc_params`).
    _cc_dir: CcDir,
    /// The device's hold on the RoCEv2 sockets of its netdevice's namespace: released when
    /// the netdevice goes (its unregistration, or its move to another namespace), or with
    /// the device.
    #[pin]
    port_user: Mutex<Option<PortUser>>,
}

impl RrxeDev {
    /// Releases the device's hold on its namespace's RoCEv2 sockets (the last device of a
    /// namespace closes them). The netdevice is going: its namespace may go next.
    pub(crate) fn release_port(&self) {
        let user = self.port_user.lock().take();
        drop(user);
    }

    /// Returns the number a new SRQ is reported with (`srq_num` of the user ABI, which
    /// nothing looks up): rdma_rxe's range, wrapping.
    pub(crate) fn next_srq_num(&self) -> u32 {
        self.next_srq.fetch_add(1, Relaxed) % params::MAX_SRQ + 0x2_0001
    }

    /// Takes QP number 1 for the device's GSI QP (the MAD layer's QP1).
    pub(crate) fn alloc_gsi_qpn(&self) -> Result<u32> {
        let _guard = self.next_qpn.lock();
        let entry = KBox::new(1u32, GFP_KERNEL)?;
        let _bh = BhGuard::new();
        let mut xa = self.qpns.lock();
        if xa.get(1).is_some() {
            return Err(EBUSY);
        }
        xa.store(1, entry, GFP_ATOMIC)?;
        Ok(1)
    }

    /// Allocates an unused QP number (24 bits, at least [`params::MIN_QPN`]).
    pub(crate) fn alloc_qpn(&self) -> Result<u32> {
        let mut next = self.next_qpn.lock();
        let span = params::QPN_MASK - params::MIN_QPN + 1;
        for _ in 0..span {
            let n = *next % span + params::MIN_QPN;
            *next = next.wrapping_add(1);
            // Allocate before disabling bottom halves and taking the array's spinlock.
            let entry = KBox::new(n, GFP_KERNEL)?;
            // The receive path looks QP numbers up in softirq.
            let _bh = BhGuard::new();
            let mut xa = self.qpns.lock();
            if xa.get(n as usize).is_none() {
                xa.store(n as usize, entry, GFP_ATOMIC)?;
                return Ok(n);
            }
        }
        Err(ENOSPC)
    }

    /// Attaches UD QP `qpn` to the multicast group `gid`; the group's first member adds its
    /// Ethernet address to the netdevice's filter.
    pub(crate) fn mcast_attach(&self, gid: &[u8; 16], qpn: u32) -> Result {
        let node = McastGroups::new_node(gid)?;
        let change = self.mcast.lock().attach(gid, qpn, node)?;
        if let FilterChange::Add(mac) = change {
            if let Err(e) = self.shared.netdev().mc_add(&mac) {
                // Undone: the group was created just now, with this one member.
                let _ = self.mcast.lock().detach(gid, qpn);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Detaches QP `qpn` from the multicast group `gid`; the last member removes the group's
    /// Ethernet address from the netdevice's filter.
    pub(crate) fn mcast_detach(&self, gid: &[u8; 16], qpn: u32) -> Result {
        let change = self.mcast.lock().detach(gid, qpn)?;
        if let FilterChange::Remove(mac) = change {
            // Only fails if the address is not in the filter, which the add put there.
            let _ = self.shared.netdev().mc_del(&mac);
        }
        Ok(())
    }

    /// Returns the UD QPs attached to the multicast group `gid`.
    ///
    /// # Context
    ///
    /// Softirq (the receive path).
    pub(crate) fn mcast_members(&self, gid: &[u8; 16]) -> Option<Members> {
        let g = self.mcast.lock();
        g.members(gid)
    }

    /// Returns a new protection domain identity.
    pub(crate) fn new_pd_id(&self) -> u64 {
        self.next_pd.fetch_add(1, Relaxed)
    }

    /// Makes a QP reachable by the receive path.
    pub(crate) fn insert_qp(&self, qp: Arc<QpShared>) -> Result {
        self.qps_by_num.insert(qp.qpn() as usize, qp)
    }

    /// Takes a QP out of the receive path's reach and waits for the packets being processed
    /// that found it, if any: once this returns, no [`Found`] lends it, and the references
    /// to it are the one returned and the verbs object's. Its timers and work may still run
    /// (see [`QpShared::shutdown`]).
    ///
    /// # Context
    ///
    /// Process context (it may sleep), outside any [`Found`] of the device's QPs.
    pub(crate) fn remove_qp(&self, qpn: u32) -> Option<Arc<QpShared>> {
        self.qps_by_num.remove(qpn as usize)
    }

    /// Returns the QP with number `qpn`, if it takes packets, lent until the [`Found`] drops.
    pub(crate) fn qp(&self, qpn: u32) -> Option<Found<'_, QpShared>> {
        self.qps_by_num.get(qpn as usize)
    }

    /// Releases a QP number.
    pub(crate) fn free_qpn(&self, qpn: u32) {
        let _guard = self.next_qpn.lock();
        let old = {
            let _bh = BhGuard::new();
            let mut xa = self.qpns.lock();
            xa.remove(qpn as usize)
        };
        drop(old);
    }
}

/// Per-user-context state.
pub(crate) struct RrxeUContext;

/// The only port of an rrxe device.
const PORT: PortNum = 1;

/// The rxe user ABI version (`RXE_UVERBS_ABI_VERSION`).
const RXE_UVERBS_ABI_VERSION: u32 = 2;

/// Legacy uverbs write commands rdma-core's rxe provider uses beyond the core's defaults:
/// the send doorbell (`IB_USER_VERBS_CMD_POST_SEND`) and `ibv_req_notify_cq`
/// (`IB_USER_VERBS_CMD_REQ_NOTIFY_CQ`).
const EXTRA_UVERBS_CMDS: [UverbsCmd; 2] = [UverbsCmd::PostSend, UverbsCmd::ReqNotifyCq];

/// Creates and registers the device `name` on `ndev` (`rdma link add`).
pub(crate) fn add(name: &CStr, ndev: &NetDevice) -> Result {
    if ndev.is_vlan() {
        pr_err!("rrxe devices are created on top of a real device only\n");
        return Err(EPERM);
    }
    if Device::<Rrxe>::get_by_netdev(ndev).is_some() {
        pr_err!(
            "{} already has an rrxe device\n",
            ndev.name().to_str().unwrap_or("?")
        );
        return Err(EEXIST);
    }
    // A netdevice without an Ethernet address (tun, IP tunnels) gets a random one, as with
    // rdma_rxe: the connection manager needs a unique GUID.
    let mac = ndev.eth_addr().unwrap_or_else(random_eth_addr);
    let guid = params::guid_from_mac(mac);
    // The RoCEv2 sockets of the netdevice's namespace (opened for its first device).
    let port_user = PortUser::new(ndev)?;
    let dev_stats = Arc::new(Stats::new(), GFP_KERNEL)?;
    let shared = Arc::pin_init(DevShared::new(ndev, dev_stats, resume_qp)?, GFP_KERNEL)?;
    let dev = UnregisteredDevice::<Rrxe>::new(
        &DeviceParams {
            node_guid: guid,
            node_desc: b"rrxe",
            phys_port_cnt: 1,
            // One completion vector per CPU, as rdma_rxe reports (`num_possible_cpus()`:
            // `nr_cpu_ids` counts the same CPUs where the possible ones are numbered without
            // gaps, as on x86 and arm64), so that kernel consumers spreading their queues
            // over vectors (nvme-rdma, svcrdma) are not all told vector 0. A CQ's
            // completions are delivered where they happen, as rdma_rxe delivers them.
            num_comp_vectors: kernel::cpu::nr_cpu_ids(),
            uverbs_cmds: &EXTRA_UVERBS_CMDS,
            name_assigned_by_user: true,
            // In the core's exclusive mode the device is created where its netdevice is
            // (rdma_rxe creates it in init_net, invisible to the container that made it).
            netns_of: Some(ndev),
        },
        try_pin_init!(RrxeDev {
            sys_image_guid: Atomic::new(guid),
            port_cap_flags: Atomic::new(kernel::rdma::device::port_cap::CM_SUP),
            pds: Counter::new(params::MAX_PD)?,
            cqs: Counter::new(params::MAX_CQ)?,
            qps: Counter::new(params::MAX_QP)?,
            srqs: Counter::new(params::MAX_SRQ)?,
            next_srq: Atomic::new(0),
            qpns <- XArray::new(AllocKind::Alloc),
            next_qpn <- new_mutex!(0),
            qps_by_num <- LookupTable::new(c"rrxe_qps", kernel::static_lock_class!()),
            mrs_used: Counter::new(params::MAX_MR)?,
            mws_used: Counter::new(params::MAX_MW)?,
            mcast <- BhSpinLock::new(
                McastGroups::new(),
                c"rrxe_mcast",
                kernel::static_lock_class!()
            ),
            next_pd: Atomic::new(1),
            _cc_dir: cc_debugfs(name, shared.clone())?,
            shared,
            port_user <- new_mutex!(Some(port_user)),
        }),
    )?;
    dev.register(name, ndev, PORT)?;
    pr_info!(
        "{}: added on {}\n",
        name.to_str().unwrap_or("?"),
        ndev.name().to_str().unwrap_or("?")
    );
    Ok(())
}

/// The debugfs directory of a device's congestion control knobs, `<ibdev>/cc_params`
/// ([`crate::cc`]), removed when dropped (before the reference to the knobs it holds).
type CcDir = Pin<KBox<Scope<Arc<DevShared>>>>;

/// Makes `<name>/cc_params` in debugfs for the knobs of `shared`.
fn cc_debugfs(name: &CStr, shared: Arc<DevShared>) -> Result<CcDir> {
    let root = Dir::new(name);
    KBox::pin_init(
        root.scope(Ok::<_, Error>(shared), c"cc_params", cc_files),
        GFP_KERNEL,
    )
}

/// Adds the files of the knobs of `sh` to its `cc_params` directory.
fn cc_files<'d>(sh: &'d Arc<DevShared>, dir: &ScopedDir<'d, '_>) {
    sh.cc.files(dir)
}

/// Resumes QP `qpn` of the device on `ndev`, if both still exist, after a page fault it
/// waited for ([`crate::odp::ResumeQp`]).
fn resume_qp(ndev: &NetDevice, qpn: u32, how: Resume) {
    let Some(dev) = Device::<Rrxe>::get_by_netdev(ndev) else {
        return;
    };
    let _bh = BhGuard::new();
    // A statement, not the tail: the `Found` drops before `dev`, which it borrows.
    if let Some(qp) = dev.data().qp(qpn) {
        qp.resume_soon(how == Resume::Rewind);
    };
}

fn check_port(port: PortNum) -> Result {
    if port == PORT {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

#[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
#[kunit_tests(rrxe_lookup)]
mod tests {
    use kernel::prelude::*;
    use kernel::rdma::lookup::LookupTable;
    use kernel::sync::{
        atomic::{
            ordering::{Acquire, Release},
            Atomic,
        },
        Arc,
    };
    use kernel::time::{delay::fsleep, Delta};

    /// The QP table's rules: an index holds one object (a second insert is refused, it
    /// would free a lent slot), a lookup lends the object in place, and the object comes
    /// back out of `remove` once (at once: nothing lends it any more).
    #[test]
    fn lookup_table_lends_and_returns_objects() -> Result {
        let table = KBox::pin_init(
            LookupTable::<u32>::new(c"rrxe_lookup_test", kernel::static_lock_class!()),
            GFP_KERNEL,
        )?;
        let obj = Arc::new(7u32, GFP_KERNEL)?;
        table.insert(5, obj.clone())?;
        assert_eq!(table.insert(5, Arc::new(8, GFP_KERNEL)?), Err(EBUSY));
        {
            let found = table.get(5);
            assert_eq!(found.as_deref(), Some(&7));
            let again = table.get(5);
            assert_eq!(again.as_deref(), Some(&7));
            assert!(table.get(6).is_none());
        }
        let back = table.remove(5);
        assert!(back.as_ref().is_some_and(|b| Arc::ptr_eq(b, &obj)));
        assert!(table.remove(5).is_none());
        assert!(table.get(5).is_none());
        // The index is free again.
        table.insert(5, Arc::new(9, GFP_KERNEL)?)?;
        assert_eq!(table.get(5).as_deref(), Some(&9));
        Ok(())
    }

    /// The slow path: `remove` on another CPU while the object is lent waits until the lender
    /// lets go (a QP destroyed while a packet for it is being processed), and then returns it.
    #[test]
    fn lookup_table_remove_waits_for_a_lent_object() -> Result {
        let table = Arc::pin_init(
            LookupTable::<u32>::new(c"rrxe_lookup_test2", kernel::static_lock_class!()),
            GFP_KERNEL,
        )?;
        table.insert(3, Arc::new(11, GFP_KERNEL)?)?;
        // 0: not started, 1: removing, 2: `remove` returned the object, 3: it returned none.
        let stage = Arc::new(Atomic::<u32>::new(0), GFP_KERNEL)?;
        let found = table.get(3);
        assert_eq!(found.as_deref(), Some(&11));
        {
            let (table, stage) = (table.clone(), stage.clone());
            kernel::workqueue::system().try_spawn(GFP_KERNEL, move || {
                stage.store(1, Release);
                let got = table.remove(3);
                stage.store(if got.as_deref() == Some(&11) { 2 } else { 3 }, Release);
            })?;
        }
        let wait = |until: u32| {
            for _ in 0..500 {
                if stage.load(Acquire) >= until {
                    break;
                }
                fsleep(Delta::from_millis(2));
            }
        };
        wait(1);
        assert_eq!(stage.load(Acquire), 1);
        // `remove` takes the object out and waits: new lookups miss, the lent one holds.
        let mut gone = false;
        for _ in 0..500 {
            if table.get(3).is_none() {
                gone = true;
                break;
            }
            fsleep(Delta::from_millis(2));
        }
        assert!(gone);
        fsleep(Delta::from_millis(20));
        assert_eq!(stage.load(Acquire), 1);
        assert_eq!(found.as_deref(), Some(&11));
        drop(found);
        wait(2);
        assert_eq!(stage.load(Acquire), 2);
        Ok(())
    }
}
