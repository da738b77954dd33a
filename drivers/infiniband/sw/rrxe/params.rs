// SPDX-License-Identifier: GPL-2.0

//! Device limits and the mappings from a netdevice to RDMA device properties.

use kernel::prelude::*;
use kernel::rdma::device::Mtu;
use kernel::sync::{
    atomic::{ordering::Relaxed, Atomic},
    Arc,
};

/// Allocation flags of what a verb allocates for its caller (queues, copies of WQEs, page
/// lists, a QP's state machines): charged to the caller's memory cgroup, and without the
/// allocator's failure warning, since a failure is the caller's `ENOMEM` (the verb fails and
/// unwinds), not a kernel problem; the rings' `vmalloc_user` memory is allocated the same
/// way (`kernel::rdma::mmap`).
#[inline]
pub(crate) fn gfp_user() -> kernel::alloc::Flags {
    GFP_KERNEL_ACCOUNT | __GFP_NOWARN
}

/// IEEE vendor id reported by soft-RoCE devices (IBTA v1.4 A3.3.1: no vendor).
pub(crate) const VENDOR_ID: u32 = 0xff_ffff;

/// Size of the GID table of a port.
pub(crate) const GID_TABLE_LEN: u32 = 1024;

/// Largest message (2 GiB).
pub(crate) const MAX_MSG_SIZE: u32 = 1 << 31;

/// Most protection domains per device.
pub(crate) const MAX_PD: u32 = 1 << 20;

/// Most completion queues per device.
pub(crate) const MAX_CQ: u32 = 1 << 20;

/// Most entries of a completion queue (the C driver's limit).
pub(crate) const MAX_CQE: u32 = (1 << 15) - 1;

/// Most queue pairs per device.
pub(crate) const MAX_QP: u32 = (1 << 20) - 16;

/// Most shared receive queues per device (rdma_rxe's).
pub(crate) const MAX_SRQ: u32 = (1 << 20) - 0x2_0001;

/// Most work requests per shared receive queue.
pub(crate) const MAX_SRQ_WR: u32 = 1 << 20;

/// Most scatter/gather entries per shared receive queue WQE (rdma_rxe's).
pub(crate) const MAX_SRQ_SGE: u32 = 27;

/// Largest AH number (the C driver's pool size).
pub(crate) const MAX_AH: u32 = 32767;

/// Most work requests per work queue.
pub(crate) const MAX_QP_WR: u32 = 1 << 20;

/// Most scatter/gather entries per work request.
pub(crate) const MAX_SGE: u32 = 32;

/// Most inline data per send WQE: the SGE area of the largest WQE.
pub(crate) const MAX_INLINE_DATA: u32 = 16 * MAX_SGE;

/// Most outstanding RDMA READ/atomic operations per QP, either side.
pub(crate) const MAX_QP_RD_ATOM: u32 = 128;

/// First QP number given to ordinary QPs (0 and 1 are the special QPs; the C driver starts
/// at 16 too).
pub(crate) const MIN_QPN: u32 = 16;

/// Most memory regions per device.
pub(crate) const MAX_MR: u32 = MAX_MR_INDEX;

/// Most multicast groups per device (rdma_rxe's `RXE_MAX_MCAST_GRP`).
pub(crate) const MAX_MCAST_GRP: u32 = 8192;

/// Most multicast attachments per device, all groups together (rdma_rxe's
/// `RXE_MAX_TOT_MCAST_QP_ATTACH`).
pub(crate) const MAX_TOTAL_MCAST_QP_ATTACH: u32 = 0x70000;

/// Most memory windows per device (rdma_rxe's `RXE_MAX_MW`); they share the key table with
/// the regions.
pub(crate) const MAX_MW: u32 = 0x1_0000;

/// Memory key indices are 24 bits (the low 8 bits of a key are random); index 0 is unused.
pub(crate) const MAX_MR_INDEX: u32 = (1 << 24) - 1;

/// QP numbers are 24 bits.
pub(crate) const QPN_MASK: u32 = 0xff_ffff;

/// Local CA ACK delay exponent.
pub(crate) const LOCAL_CA_ACK_DELAY: u8 = 15;

/// Bytes of a RoCEv2 packet that are not payload in the worst case: IPv6 (40) + UDP (8) +
/// BTH (12) + the largest extended headers (16) + ICRC (4), rounded as the C driver does.
pub(crate) const MAX_HDR_LENGTH: u32 = 80;

/// Largest path MTU that fits the netdevice MTU `ndev_mtu` with all headers.
///
/// Matches the C driver (`rxe_set_mtu`), so both agree on the active MTU of a link.
pub(crate) fn roce_mtu(ndev_mtu: u32) -> Mtu {
    Mtu::floor(ndev_mtu.saturating_sub(MAX_HDR_LENGTH)).unwrap_or(Mtu::Mtu256)
}

/// The modified EUI-64 of a MAC address, used as node and port GUID (host byte order).
pub(crate) fn guid_from_mac(mac: [u8; 6]) -> u64 {
    u64::from_be_bytes([
        mac[0] ^ 2,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ])
}

/// A limit on the number of objects of one kind.
pub(crate) struct Counter {
    used: Atomic<u32>,
    max: u32,
}

impl Counter {
    /// A counter allowing `max` objects.
    pub(crate) fn new(max: u32) -> Result<Arc<Self>> {
        Ok(Arc::new(
            Self {
                used: Atomic::new(0),
                max,
            },
            GFP_KERNEL,
        )?)
    }

    /// Takes a charge, or fails with `ENOMEM` at the limit.
    pub(crate) fn take(self: &Arc<Self>) -> Result<Charge> {
        if self.used.fetch_add(1, Relaxed) >= self.max {
            self.used.fetch_sub(1, Relaxed);
            return Err(ENOMEM);
        }
        Ok(Charge(self.clone()))
    }

    /// Objects in use.
    #[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
    pub(crate) fn used(&self) -> u32 {
        self.used.load(Relaxed)
    }
}

/// One object's share of a [`Counter`], given back on drop.
pub(crate) struct Charge(Arc<Counter>);

impl Drop for Charge {
    fn drop(&mut self) {
        self.0.used.fetch_sub(1, Relaxed);
    }
}

#[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
#[kunit_tests(rrxe_params)]
mod tests {
    use super::*;

    #[test]
    fn mtu_follows_the_c_driver() {
        assert_eq!(roce_mtu(1500), Mtu::Mtu1024);
        assert_eq!(roce_mtu(1104), Mtu::Mtu1024);
        assert_eq!(roce_mtu(1103), Mtu::Mtu512);
        assert_eq!(roce_mtu(2200), Mtu::Mtu2048);
        assert_eq!(roce_mtu(4176), Mtu::Mtu4096);
        assert_eq!(roce_mtu(9000), Mtu::Mtu4096);
        assert_eq!(roce_mtu(4175), Mtu::Mtu2048);
        assert_eq!(roce_mtu(576), Mtu::Mtu256);
        assert_eq!(roce_mtu(68), Mtu::Mtu256);
        assert_eq!(roce_mtu(0), Mtu::Mtu256);
    }

    #[test]
    fn counter_enforces_its_limit() -> Result {
        let c = Counter::new(2)?;
        let a = c.take()?;
        let b = c.take()?;
        assert!(c.take().is_err());
        assert_eq!(c.used(), 2);
        drop(a);
        let _c = c.take()?;
        drop(b);
        assert_eq!(c.used(), 1);
        Ok(())
    }

    #[test]
    fn guid_is_modified_eui64() {
        assert_eq!(
            guid_from_mac([0x52, 0x54, 0x00, 0x12, 0x34, 0x56]),
            0x5054_00ff_fe12_3456
        );
        assert_eq!(guid_from_mac([0x02, 0, 0, 0, 0, 1]), 0x0000_00ff_fe00_0001);
    }
}
