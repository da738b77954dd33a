// SPDX-License-Identifier: GPL-2.0

//! Multicast groups (`ibv_attach_mcast`, `ib_attach_mcast`): the UD QPs of a device attached
//! to each multicast GID, and the members a multicast datagram (destination QP
//! [`MULTICAST_QPN`](crate::proto::ip::MULTICAST_QPN)) is delivered to, each as if it were
//! addressed to it (rdma_rxe's `rxe_rcv_mcast_pkt()`).
//!
//! A group's first member adds the group's Ethernet address to the netdevice's receive
//! filter (`dev_mc_add`, rdma_rxe's `rxe_mcast_add()`), its last one removes it; joining the
//! group at the IP level (IGMP, MLD) is the consumer's, as rdma_cm does it for RoCE. A user
//! QP's attachments are detached by uverbs before the QP is destroyed, a kernel consumer's
//! by the consumer (`rdma_leave_multicast`).

use crate::params;
use crate::proto::ip::multicast_mac;
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNode};

/// Most QPs attached to one group (rdma_rxe's `RXE_MAX_MCAST_QP_ATTACH`).
pub(crate) const MAX_QP_ATTACH: usize = 56;

/// The QP numbers attached to a group, in attachment order; copied out for delivery so
/// that no lock is held while the QPs take the datagram.
///
/// # Invariants
///
/// `len <= MAX_QP_ATTACH`, and the first `len` numbers are distinct.
#[derive(Clone, Copy)]
pub(crate) struct Members {
    qpns: [u32; MAX_QP_ATTACH],
    len: usize,
}

impl Members {
    const EMPTY: Self = Self {
        qpns: [0; MAX_QP_ATTACH],
        len: 0,
    };

    /// The attached QP numbers.
    pub(crate) fn qpns(&self) -> &[u32] {
        self.qpns.get(..self.len).unwrap_or(&[])
    }
}

/// What an attach or detach changed for the netdevice's filter.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum FilterChange {
    /// Nothing: the group had (or keeps) other members.
    None,
    /// The group was created: its Ethernet address must be added.
    Add([u8; 6]),
    /// The group was removed: its Ethernet address must be removed.
    Remove([u8; 6]),
}

/// A device's multicast groups, under the device's lock (taken in softirq too).
///
/// # Invariants
///
/// No group is empty; `count` is the number of groups, `attached` the sum of their member
/// counts.
pub(crate) struct McastGroups {
    groups: RBTree<[u8; 16], Members>,
    count: u32,
    attached: u32,
}

impl McastGroups {
    /// No groups.
    pub(crate) fn new() -> Self {
        Self {
            groups: RBTree::new(),
            count: 0,
            attached: 0,
        }
    }

    /// Returns a node for a group that [`Self::attach`] may create (allocated before the
    /// lock is taken).
    pub(crate) fn new_node(gid: &[u8; 16]) -> Result<RBTreeNode<[u8; 16], Members>> {
        RBTreeNode::new(*gid, Members::EMPTY, crate::params::gfp_user())
    }

    /// Attaches QP `qpn` to the group `gid`, creating it in `node` if it does not exist;
    /// attaching a member again changes nothing (as rdma_rxe). `EINVAL` for a GID that is
    /// not multicast, `ENOMEM` beyond the device's limits (groups, members of a group,
    /// attachments in all, rdma_rxe's numbers).
    pub(crate) fn attach(
        &mut self,
        gid: &[u8; 16],
        qpn: u32,
        node: RBTreeNode<[u8; 16], Members>,
    ) -> Result<FilterChange> {
        let mac = multicast_mac(gid).ok_or(EINVAL)?;
        if let Some(m) = self.groups.get(gid) {
            if m.qpns().contains(&qpn) {
                return Ok(FilterChange::None);
            }
        }
        if self.attached >= params::MAX_TOTAL_MCAST_QP_ATTACH {
            return Err(ENOMEM);
        }
        let change = match self.groups.get_mut(gid) {
            Some(m) => {
                let slot = m.qpns.get_mut(m.len).ok_or(ENOMEM)?;
                *slot = qpn;
                m.len += 1;
                FilterChange::None
            }
            None => {
                if self.count >= params::MAX_MCAST_GRP {
                    return Err(ENOMEM);
                }
                let mut m = Members::EMPTY;
                m.qpns[0] = qpn;
                m.len = 1;
                // INVARIANT: a group of one member.
                self.groups
                    .insert(node.into_reservation().into_node(*gid, m));
                self.count += 1;
                FilterChange::Add(mac)
            }
        };
        self.attached += 1;
        Ok(change)
    }

    /// Detaches QP `qpn` from the group `gid`; `EINVAL` if it is not a member.
    pub(crate) fn detach(&mut self, gid: &[u8; 16], qpn: u32) -> Result<FilterChange> {
        let m = self.groups.get_mut(gid).ok_or(EINVAL)?;
        let i = m.qpns().iter().position(|&q| q == qpn).ok_or(EINVAL)?;
        m.qpns.copy_within(i + 1..m.len, i);
        m.len -= 1;
        self.attached -= 1;
        if m.len != 0 {
            return Ok(FilterChange::None);
        }
        self.groups.remove(gid);
        self.count -= 1;
        Ok(multicast_mac(gid).map_or(FilterChange::None, FilterChange::Remove))
    }

    /// Returns the members of the group `gid`, if it exists.
    pub(crate) fn members(&self, gid: &[u8; 16]) -> Option<Members> {
        self.groups.get(gid).copied()
    }
}
