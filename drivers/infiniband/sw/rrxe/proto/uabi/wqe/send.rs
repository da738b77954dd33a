// SPDX-License-Identifier: GPL-2.0

//! Send WQE validation: a send WQE copied out of a user-owned SQ slot, checked against the
//! QP's [`SendQueueParams`] by [`validate_send_wqe`] into a [`SendWqe`] (its operation,
//! [`SendOp`], and local data, [`SendData`]), and the copy of it a driver keeps beside the
//! slot's bytes ([`CheckedSendWqe`]).

use super::super::super::bth::Qpn;
use super::super::super::opcode::QpType;
use super::super::super::wire::chunk;
use super::super::av::{validate_av, ValidAv};
use super::super::layout::{
    MwWrFields, RdmaWrFields, RxeSendWqe, UdWrFields, SEND_WQE_DATA_OFFSET,
};
use super::super::sge::{sge_length, sge_list, SgeList};
use super::super::wr::{SendFlags, WrOpcode, FLUSH_GLOBAL, FLUSH_MR, FLUSH_PERSISTENT};
use super::{LengthCheck, WqeError};

/// Send queue parameters for [`validate_send_wqe`], from the QP's private state (never from
/// the shared page).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendQueueParams {
    /// QP type.
    pub qp_type: QpType,
    /// Reported `max_send_sge`.
    pub max_sge: u32,
    /// Reported `max_inline_data`.
    pub max_inline: u32,
    /// Largest message length (normally [`MAX_MSG_SIZE`](super::super::MAX_MSG_SIZE)).
    pub max_msg_size: u32,
    /// Relation of `dma.length` and the SGE list.
    pub length_check: LengthCheck,
    /// Accept the embedded [`RxeAv`](super::super::RxeAv) of UD WQEs with `ah_num == 0` (legacy
    /// providers).
    pub allow_embedded_av: bool,
    /// Size of the port's GID table, to bound `sgid_index` of an embedded AV.
    pub gid_table_len: u32,
    /// The ring is a kernel consumer's (never mapped to userspace): the kernel-only
    /// [`WrOpcode::RegMr`] is accepted.
    pub kernel: bool,
}

/// Remote address and key of an RDMA, atomic or FLUSH operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remote {
    /// Remote virtual address (from the `wr` union, not from `iova`).
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// Where a UD send goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdAddress {
    /// An address handle by number; the driver must look it up and check that it belongs to
    /// the QP's PD (and ideally the same ucontext).
    Ah(u32),
    /// An embedded, validated address vector (legacy providers).
    Av(ValidAv),
}

/// The UD part of a UD send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdDest {
    /// Destination QP.
    pub remote_qpn: Qpn,
    /// Destination Q_Key.
    pub remote_qkey: u32,
    /// P_Key index (ignored by rxe, which always sends the default P_Key).
    pub pkey_index: u16,
    /// Address.
    pub address: UdAddress,
}

/// Operation-specific contents of a validated send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// SEND, SEND with immediate, SEND with invalidate.
    Send {
        /// Immediate data (host value of the big-endian field), for SEND with immediate.
        imm: Option<u32>,
        /// Rkey to invalidate at the responder, for SEND with invalidate.
        invalidate_rkey: Option<u32>,
        /// Destination of a UD send; `None` on connected QPs.
        ud: Option<UdDest>,
    },
    /// RDMA WRITE (with immediate).
    Write {
        /// Target.
        remote: Remote,
        /// Immediate data, for WRITE with immediate.
        imm: Option<u32>,
    },
    /// RDMA READ into the SGE list.
    Read {
        /// Source.
        remote: Remote,
    },
    /// Compare & swap; the original value lands in the SGE list.
    CompareSwap {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Compare operand.
        compare: u64,
        /// Swap operand.
        swap: u64,
    },
    /// Fetch & add; the original value lands in the SGE list.
    FetchAdd {
        /// Target (8-byte aligned).
        remote: Remote,
        /// Addend.
        add: u64,
    },
    /// ATOMIC WRITE of 8 bytes.
    AtomicWrite {
        /// Target (8-byte aligned).
        remote: Remote,
        /// The operand, as the bytes to place on the wire.
        value: [u8; 8],
    },
    /// FLUSH of `length` bytes.
    Flush {
        /// Target.
        remote: Remote,
        /// Placement type bits.
        placement_type: u8,
        /// Selectivity level.
        level: u8,
    },
    /// Local invalidate.
    LocalInv {
        /// Rkey (MR or MW) to invalidate.
        rkey: u32,
    },
    /// Memory window bind; the MW layer checks the keys, access and range.
    BindMw(MwWrFields),
    /// Fast registration (kernel consumers only): the region whose key has `key`'s index
    /// becomes valid under `key`, with `access`, over the pages its owner mapped last.
    RegMr {
        /// The new key (lkey and rkey); only its low byte may differ from the region's.
        key: u32,
        /// `IB_ACCESS_*` flags.
        access: u32,
    },
}

/// Local data of a validated send WQE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendData<'a> {
    /// No local data (local operations, FLUSH, ATOMIC WRITE).
    None,
    /// Gather (SEND, WRITE) or scatter (READ, atomics) list.
    Sges(SgeList<'a>),
    /// Inline payload.
    Inline(&'a [u8]),
}

/// A send WQE that passed [`validate_send_wqe`].
///
/// # Invariants
///
/// - the opcode is allowed on the QP type it was validated for;
/// - `Sges(l)`: `l.len() <= max_sge`, `l` lies inside the slot's payload area, the sum of the
///   SGE lengths does not overflow and equals [`Self::length`] (which is at most the maximum
///   message size);
/// - `Inline(d)`: `d.len() == length <= max_inline` and `d` lies inside the slot;
/// - atomics have `length >= 8` and an 8-byte aligned remote address; ATOMIC WRITE has
///   `length == 8`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendWqe<'a> {
    wr_id: u64,
    opcode: WrOpcode,
    flags: SendFlags,
    length: u32,
    op: SendOp,
    data: SendData<'a>,
}

impl<'a> SendWqe<'a> {
    /// Returns the work request id.
    pub fn wr_id(&self) -> u64 {
        self.wr_id
    }

    /// Returns the opcode.
    pub fn opcode(&self) -> WrOpcode {
        self.opcode
    }

    /// Returns the send flags.
    pub fn flags(&self) -> SendFlags {
        self.flags
    }

    /// Returns the message length: local data, or the FLUSH length, 0 for local operations.
    pub fn length(&self) -> u32 {
        self.length
    }

    /// Returns the operation-specific contents.
    pub fn op(&self) -> &SendOp {
        &self.op
    }

    /// Returns the local data.
    pub fn data(&self) -> SendData<'a> {
        self.data
    }

    /// Returns `true` if a completion must be generated on success.
    pub fn signaled(&self, sq_sig_all: bool) -> bool {
        sq_sig_all || self.flags.contains(SendFlags::SIGNALED)
    }
}

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
/// The fields are those of a [`SendWqe`] that passed [`validate_send_wqe`]; `data` says where
/// its local data was in the slot.
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
        self.attach_area(slot.get(SEND_WQE_DATA_OFFSET..)?)
    }

    /// Returns the WQE with its local data in `area`, which must hold the bytes it was
    /// validated with from [`SEND_WQE_DATA_OFFSET`] on, unchanged (a copy of the data area
    /// alone); `None` if `area` is too short for them.
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
/// [`validate_send_wqe`] checks a user WQE.
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
    /// `n` SGEs, as [`RxeSgeFields`](super::super::RxeSgeFields) (the layout of `struct ib_sge`).
    Sges(u32),
    /// Inline payload of this many bytes (`IB_SEND_INLINE`).
    Inline(u32),
}

impl SendOp {
    /// Returns `true` if this is the operation of `opcode`: the variant, and immediate data
    /// or an rkey to invalidate exactly where the opcode carries one.
    pub fn fits(&self, opcode: WrOpcode) -> bool {
        match (self, opcode) {
            (
                Self::Send {
                    imm,
                    invalidate_rkey,
                    ..
                },
                WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv,
            ) => {
                imm.is_some() == opcode.has_imm()
                    && invalidate_rkey.is_some() == opcode.has_invalidate()
            }
            (Self::Write { imm, .. }, WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm) => {
                imm.is_some() == opcode.has_imm()
            }
            (Self::Read { .. }, WrOpcode::RdmaRead)
            | (Self::CompareSwap { .. }, WrOpcode::AtomicCmpAndSwp)
            | (Self::FetchAdd { .. }, WrOpcode::AtomicFetchAndAdd)
            | (Self::AtomicWrite { .. }, WrOpcode::AtomicWrite)
            | (Self::Flush { .. }, WrOpcode::Flush)
            | (Self::LocalInv { .. }, WrOpcode::LocalInv)
            | (Self::BindMw(_), WrOpcode::BindMw)
            | (Self::RegMr { .. }, WrOpcode::RegMr) => true,
            _ => false,
        }
    }
}

impl CheckedSendWqe {
    /// Checks a kernel consumer's work request whose local data the driver put at the start
    /// of `area` (the payload area of the slot the WQE will be attached to); returns it
    /// detached, as [`SendWqe::detach`] would after [`validate_send_wqe`].
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

/// Validates a send WQE copied out of a user-owned SQ slot (`slot` is the whole element).
///
/// Only `wr` (`wr_id`, `opcode`, `send_flags`, `ex`, the union member of the opcode),
/// `dma.length`, `dma.num_sge` and the payload area are read. `status`, `state`, `iova`,
/// `mask`, the PSNs, `ack_length`, `ssn`, `has_rd_atomic`, `dma.resid`, `dma.cur_sge` and
/// `dma.sge_offset` are kernel scratch or provider noise and are ignored; the remote address
/// comes from the union, not from `iova` (upstream uses `iova` on the first attempt and the
/// union on a retry).
///
/// Compared with upstream rxe, this rejects: opcodes outside the effective QP-type matrix
/// (upstream indexes `rxe_wr_opcode_info[]` with an unbounded user opcode and executes
/// `IB_WR_REG_MR` from user WQEs); inline data longer than `max_inline` or the slot (upstream
/// copies `dma.resid` bytes from `inline_data[dma.sge_offset]`, both user-controlled, out of
/// the vmalloc buffer onto the wire); ATOMIC WRITE lengths other than 8 (upstream copies up to
/// an MTU from the 8-byte operand); atomics shorter than 8 bytes or misaligned; `dma.length`
/// inconsistent with the SGE list (upstream trusts it); bad FLUSH type/level; QPNs wider than
/// 24 bits; invalid embedded AVs (upstream uses them unchecked and in place).
pub fn validate_send_wqe<'a>(slot: &'a [u8], p: &SendQueueParams) -> Result<SendWqe<'a>, WqeError> {
    let hdr = RxeSendWqe::new(slot).ok_or(WqeError::SlotTooShort)?;
    let data_area = slot.get(SEND_WQE_DATA_OFFSET..).unwrap_or(&[]);
    let wr = hdr.wr();
    let dma = hdr.dma();
    let opcode = if p.kernel {
        WrOpcode::from_raw_kernel(wr.opcode)
    } else {
        WrOpcode::from_raw(wr.opcode)
    }
    .ok_or(WqeError::BadOpcode(wr.opcode))?;
    if !opcode.allowed_on(p.qp_type) {
        return Err(WqeError::OpcodeNotAllowed(opcode));
    }
    let flags = SendFlags(wr.send_flags);
    let inline = flags.contains(SendFlags::INLINE);
    if inline && !opcode.inline_allowed() {
        return Err(WqeError::InlineNotAllowed);
    }
    // Upstream checks this for every opcode, inline or not; librxe never violates it.
    if dma.num_sge > p.max_sge {
        return Err(WqeError::TooManySge {
            num_sge: dma.num_sge,
            max_sge: p.max_sge,
        });
    }

    let (data, length) = if inline {
        // librxe sets num_sge to the caller's count even for inline data; only the length
        // describes the payload.
        if dma.length > p.max_inline {
            return Err(WqeError::InlineTooLong(dma.length));
        }
        let end = usize::try_from(dma.length).map_err(|_| WqeError::InlineOutsideSlot)?;
        let bytes = data_area.get(..end).ok_or(WqeError::InlineOutsideSlot)?;
        (SendData::Inline(bytes), dma.length)
    } else if opcode.has_local_data() {
        let sges = sge_list(data_area, dma.num_sge, p.max_sge)?;
        let len = sge_length(&sges, dma.length, p.length_check, p.max_msg_size)?;
        (SendData::Sges(sges), len)
    } else {
        (SendData::None, 0)
    };

    let ex = wr.ex;
    let imm_value = u32::from_be_bytes(ex.to_le_bytes());
    let op = match opcode {
        WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv => SendOp::Send {
            imm: opcode.has_imm().then_some(imm_value),
            invalidate_rkey: opcode.has_invalidate().then_some(ex),
            ud: if p.qp_type == QpType::Ud {
                Some(ud_dest(&wr.ud(), p)?)
            } else {
                None
            },
        },
        WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm => SendOp::Write {
            remote: rdma_remote(&wr.rdma()),
            imm: opcode.has_imm().then_some(imm_value),
        },
        WrOpcode::RdmaRead => SendOp::Read {
            remote: rdma_remote(&wr.rdma()),
        },
        WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => {
            let a = wr.atomic();
            if length < 8 {
                return Err(WqeError::AtomicLength(length));
            }
            if a.remote_addr & 7 != 0 {
                return Err(WqeError::AtomicMisaligned(a.remote_addr));
            }
            let remote = Remote {
                addr: a.remote_addr,
                rkey: a.rkey,
            };
            if opcode == WrOpcode::AtomicCmpAndSwp {
                SendOp::CompareSwap {
                    remote,
                    compare: a.compare_add,
                    swap: a.swap,
                }
            } else {
                SendOp::FetchAdd {
                    remote,
                    add: a.compare_add,
                }
            }
        }
        WrOpcode::AtomicWrite => {
            let remote = rdma_remote(&wr.rdma());
            if dma.length != 8 {
                return Err(WqeError::AtomicWriteLength(dma.length));
            }
            if remote.addr & 7 != 0 {
                return Err(WqeError::AtomicMisaligned(remote.addr));
            }
            let value = *chunk::<8>(data_area, 0).ok_or(WqeError::SlotTooShort)?;
            return Ok(SendWqe {
                wr_id: wr.wr_id,
                opcode,
                flags,
                length: 8,
                op: SendOp::AtomicWrite { remote, value },
                data: SendData::None,
            });
        }
        WrOpcode::Flush => {
            let f = wr.flush();
            let type_ok =
                f.placement_type != 0 && f.placement_type & !(FLUSH_GLOBAL | FLUSH_PERSISTENT) == 0;
            if !type_ok || f.level > FLUSH_MR {
                return Err(WqeError::BadFlush {
                    placement_type: f.placement_type,
                    level: f.level,
                });
            }
            // Upstream puts dma.length (set by librxe to the flush length) in the RETH.
            if dma.length > p.max_msg_size {
                return Err(WqeError::MessageTooLong(dma.length));
            }
            return Ok(SendWqe {
                wr_id: wr.wr_id,
                opcode,
                flags,
                length: dma.length,
                op: SendOp::Flush {
                    remote: Remote {
                        addr: f.remote_addr,
                        rkey: f.rkey,
                    },
                    placement_type: f.placement_type,
                    level: f.level,
                },
                data: SendData::None,
            });
        }
        WrOpcode::LocalInv => SendOp::LocalInv { rkey: ex },
        WrOpcode::RegMr => {
            let r = wr.reg();
            SendOp::RegMr {
                key: r.key,
                access: r.access,
            }
        }
        WrOpcode::BindMw => SendOp::BindMw(wr.mw()),
    };
    Ok(SendWqe {
        wr_id: wr.wr_id,
        opcode,
        flags,
        length,
        op,
        data,
    })
}

fn rdma_remote(r: &RdmaWrFields) -> Remote {
    Remote {
        addr: r.remote_addr,
        rkey: r.rkey,
    }
}

fn ud_dest(ud: &UdWrFields, p: &SendQueueParams) -> Result<UdDest, WqeError> {
    let remote_qpn = Qpn::try_new(ud.remote_qpn).ok_or(WqeError::BadRemoteQpn(ud.remote_qpn))?;
    let address = if ud.ah_num != 0 {
        UdAddress::Ah(ud.ah_num)
    } else if p.allow_embedded_av {
        UdAddress::Av(validate_av(&ud.av, p.gid_table_len).map_err(WqeError::BadAv)?)
    } else {
        return Err(WqeError::MissingAh);
    };
    Ok(UdDest {
        remote_qpn,
        remote_qkey: ud.remote_qkey,
        pkey_index: ud.pkey_index,
        address,
    })
}
