// SPDX-License-Identifier: GPL-2.0

//! The detached copy of a validated send WQE: [`SendWqe::detach`] turns a [`SendWqe`] into a
//! [`CheckedSendWqe`] that a driver keeps beside the slot's bytes and attaches again for each
//! use, and [`CheckedSendWqe::from_kernel`] checks a kernel consumer's work request
//! ([`KernelSendWr`], [`KernelData`]) into one with the user WQE's rules.

use super::super::super::super::opcode::QpType;
use super::super::super::sge::{sge_length, sge_list, SgeList};
use super::super::super::wr::{SendFlags, WrOpcode};
use super::super::{LengthCheck, WqeError};
use super::{SendData, SendOp, SendQueueParams, SendWqe, UdAddress, UdDest};

impl SendWqe<'_> {
    /// Returns the WQE detached from the bytes it was validated in, to be kept beside them
    /// (in kernel-private memory nothing else writes) and attached again for each use
    /// ([`CheckedSendWqe::attach_area`], with a copy of its data area) instead of being
    /// validated again.
    pub fn detach(&self) -> CheckedSendWqe {
        CheckedSendWqe {
            wr_id: self.wr_id,
            opcode: self.opcode,
            flags: self.flags,
            length: self.length,
            op: self.op,
            data: match self.data {
                SendData::None => DataPlace::None,
                SendData::Sges(l) => DataPlace::Sges(l.byte_len()),
                SendData::Inline(d) => DataPlace::Inline(d.len()),
            },
        }
    }
}

/// Where a validated WQE's local data lies in its slot: from the start of the payload area
/// (`SEND_WQE_DATA_OFFSET`), this many bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DataPlace {
    None,
    Sges(usize),
    Inline(usize),
}

/// A [`SendWqe`] detached from its slot ([`SendWqe::detach`]).
///
/// # Invariants
///
/// The fields are those of a [`SendWqe`] that passed
/// [`validate_send_wqe`](super::validate_send_wqe); `data` says where its local data was in
/// the slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckedSendWqe {
    wr_id: u64,
    opcode: WrOpcode,
    flags: SendFlags,
    length: u32,
    op: SendOp,
    data: DataPlace,
}

impl CheckedSendWqe {
    /// Returns the WQE with its local data in `slot`, which must hold the bytes it was
    /// validated in, unchanged; `None` if `slot` is too short for them.
    #[cfg(rrxe_host)]
    pub fn attach<'a>(&self, slot: &'a [u8]) -> Option<SendWqe<'a>> {
        self.attach_area(slot.get(super::super::super::SEND_WQE_DATA_OFFSET..)?)
    }

    /// Returns the WQE with its local data in `area`, which must hold the bytes it was
    /// validated with from [`SEND_WQE_DATA_OFFSET`](super::super::super::SEND_WQE_DATA_OFFSET)
    /// on, unchanged (a copy of the data area alone); `None` if `area` is too short for them.
    pub fn attach_area<'a>(&self, area: &'a [u8]) -> Option<SendWqe<'a>> {
        let data = match self.data {
            DataPlace::None => SendData::None,
            DataPlace::Sges(n) => SendData::Sges(SgeList::from_checked(area.get(..n)?)),
            DataPlace::Inline(n) => SendData::Inline(area.get(..n)?),
        };
        Some(SendWqe {
            wr_id: self.wr_id,
            opcode: self.opcode,
            flags: self.flags,
            length: self.length,
            op: self.op,
            data,
        })
    }

    /// Returns the work request id.
    pub fn wr_id(&self) -> u64 {
        self.wr_id
    }
}

/// A kernel consumer's send work request, as the driver read it from `struct ib_send_wr`:
/// typed values, never laid out as a WQE. [`CheckedSendWqe::from_kernel`] checks it as
/// [`validate_send_wqe`](super::validate_send_wqe) checks a user WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelSendWr {
    /// Work request id.
    pub wr_id: u64,
    /// Opcode (may be the kernel-only [`WrOpcode::RegMr`]).
    pub opcode: WrOpcode,
    /// `IB_SEND_*` flags.
    pub flags: SendFlags,
    /// The operation, which must be the opcode's ([`SendOp::fits`]).
    pub op: SendOp,
}

/// What a kernel work request's data area holds (see [`CheckedSendWqe::from_kernel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelData {
    /// `n` SGEs, as [`RxeSgeFields`](super::super::super::RxeSgeFields) (the layout of
    /// `struct ib_sge`).
    Sges(u32),
    /// Inline payload of this many bytes (`IB_SEND_INLINE`).
    Inline(u32),
}

impl CheckedSendWqe {
    /// Checks a kernel consumer's work request whose local data the driver put at the start
    /// of `area` (the payload area of the slot the WQE will be attached to); returns it
    /// detached, as [`SendWqe::detach`] would after
    /// [`validate_send_wqe`](super::validate_send_wqe).
    ///
    /// The rules are the user WQE's: the opcode on this QP type, inline data only where it
    /// is meaningful and at most `max_inline`, at most `max_sge` SGEs whose lengths add up
    /// to at most the maximum message size, atomics on 8 aligned bytes with an 8-byte local
    /// buffer, a UD send with an address handle and a connected send without. ATOMIC WRITE,
    /// FLUSH and memory window binds are not offered to kernel consumers.
    pub fn from_kernel(
        wr: &KernelSendWr,
        data: KernelData,
        area: &[u8],
        p: &SendQueueParams,
    ) -> Result<Self, WqeError> {
        let opcode = wr.opcode;
        if !p.kernel && opcode == WrOpcode::RegMr {
            return Err(WqeError::BadOpcode(WrOpcode::RegMr as u32));
        }
        if !opcode.allowed_on(p.qp_type) || !wr.op.fits(opcode) {
            return Err(WqeError::OpcodeNotAllowed(opcode));
        }
        let inline = wr.flags.contains(SendFlags::INLINE);
        let (place, length) = match data {
            KernelData::Inline(len) => {
                if !inline || !opcode.inline_allowed() {
                    return Err(WqeError::InlineNotAllowed);
                }
                if len > p.max_inline {
                    return Err(WqeError::InlineTooLong(len));
                }
                let n = usize::try_from(len).map_err(|_| WqeError::InlineOutsideSlot)?;
                area.get(..n).ok_or(WqeError::InlineOutsideSlot)?;
                (DataPlace::Inline(n), len)
            }
            KernelData::Sges(_) if inline => return Err(WqeError::InlineNotAllowed),
            KernelData::Sges(num_sge) => {
                if num_sge > p.max_sge {
                    return Err(WqeError::TooManySge {
                        num_sge,
                        max_sge: p.max_sge,
                    });
                }
                if opcode.has_local_data() {
                    let sges = sge_list(area, num_sge, p.max_sge)?;
                    let len = sge_length(&sges, 0, LengthCheck::SgeSum, p.max_msg_size)?;
                    (DataPlace::Sges(sges.byte_len()), len)
                } else {
                    (DataPlace::None, 0)
                }
            }
        };
        match wr.op {
            SendOp::CompareSwap { remote, .. } | SendOp::FetchAdd { remote, .. } => {
                if length < 8 {
                    return Err(WqeError::AtomicLength(length));
                }
                if remote.addr & 7 != 0 {
                    return Err(WqeError::AtomicMisaligned(remote.addr));
                }
            }
            SendOp::Send { ud, .. } => match (p.qp_type, ud) {
                (
                    QpType::Ud,
                    Some(UdDest {
                        address: UdAddress::Ah(_),
                        ..
                    }),
                )
                | (QpType::Rc | QpType::Uc, None) => {}
                (QpType::Ud, _) => return Err(WqeError::MissingAh),
                _ => return Err(WqeError::OpcodeNotAllowed(opcode)),
            },
            SendOp::AtomicWrite { .. } | SendOp::Flush { .. } | SendOp::BindMw(_) => {
                return Err(WqeError::OpcodeNotAllowed(opcode));
            }
            _ => {}
        }
        Ok(Self {
            wr_id: wr.wr_id,
            opcode,
            flags: wr.flags,
            length,
            op: wr.op,
            data: place,
        })
    }
}
