// SPDX-License-Identifier: GPL-2.0

//! Helpers for the tests that drive a [`Sender`]: WQEs to post, and the packets and actions it
//! returns, collected.

use rrxe_proto::opcode::Opcode;
use rrxe_proto::rc::{PostedWqe, SendAction, SendCompletion, Sender, TxPacket, WcStatus};
use rrxe_proto::uabi::WrOpcode;

/// A solicited, unfenced WQE.
pub fn wqe(id: u32, op: WrOpcode, len: u32) -> PostedWqe {
    PostedWqe {
        id,
        op,
        len,
        solicited: true,
        fence: false,
    }
}

/// Every packet the sender lets out now.
pub fn drain_tx<const N: usize>(s: &mut Sender<N>) -> Vec<TxPacket> {
    std::iter::from_fn(|| s.next_packet()).collect()
}

/// Every action the sender has for its caller now.
pub fn drain_poll<const N: usize>(s: &mut Sender<N>) -> Vec<SendAction> {
    std::iter::from_fn(|| s.poll()).collect()
}

/// The WQE ids and statuses of the completions among `actions`, in order.
pub fn completions(actions: &[SendAction]) -> Vec<(u32, WcStatus)> {
    actions
        .iter()
        .filter_map(|a| match a {
            SendAction::Complete(SendCompletion { id, status, .. }) => Some((*id, *status)),
            _ => None,
        })
        .collect()
}

/// What a test compares of each packet: WQE id, opcode, PSN, offset, length, AckReq, SE.
pub type PacketSummary = (u32, Opcode, u32, u32, u32, bool, bool);

/// The [`PacketSummary`] of each of `pkts`.
pub fn summary(pkts: &[TxPacket]) -> Vec<PacketSummary> {
    pkts.iter()
        .map(|p| {
            (
                p.id,
                p.opcode,
                p.psn.get(),
                p.offset,
                p.len,
                p.ack_req,
                p.solicited,
            )
        })
        .collect()
}
