// SPDX-License-Identifier: GPL-2.0

//! The transport services of a [`Sender`] ([`Transport`]). What each work-request opcode
//! is to the sender (its PSNs, its request packets' opcodes on RC and on UC) is said once,
//! with the opcode: [`WrOpcode`](super::super::super::uabi::WrOpcode).
//!
//! [`Sender`]: super::Sender

use super::super::super::opcode::QpType;

/// The transport service of a [`Sender`](super::Sender).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Transport {
    /// Reliable Connected (IBA 9.7): ACKs, NAKs, retransmission, READ and atomics.
    #[default]
    Rc,
    /// Unreliable Connected (IBA 9.8): no acknowledgments and no retransmission; a WQE
    /// completes once its last packet is handed out. SEND and RDMA WRITE only.
    Uc,
}

impl Transport {
    /// Returns the QP type of the transport.
    pub const fn qp_type(self) -> QpType {
        match self {
            Self::Rc => QpType::Rc,
            Self::Uc => QpType::Uc,
        }
    }
}
