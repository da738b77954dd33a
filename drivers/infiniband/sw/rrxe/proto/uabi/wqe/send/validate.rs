// SPDX-License-Identifier: GPL-2.0

//! Validation of a send WQE copied out of a user-owned SQ slot ([`validate_send_wqe`]): the
//! opcode on the QP type, inline data, the SGE list and `dma.length`, and the `wr` union
//! member of the opcode, including a UD send's destination and embedded address vector.

use super::super::super::super::bth::Qpn;
use super::super::super::super::opcode::QpType;
use super::super::super::super::wire::chunk;
use super::super::super::av::validate_av;
use super::super::super::layout::{RdmaWrFields, RxeSendWqe, UdWrFields, SEND_WQE_DATA_OFFSET};
use super::super::super::sge::{sge_length, sge_list};
use super::super::super::wr::{SendFlags, WrOpcode, FLUSH_GLOBAL, FLUSH_MR, FLUSH_PERSISTENT};
use super::super::WqeError;
use super::{Remote, SendData, SendOp, SendQueueParams, SendWqe, UdAddress, UdDest};

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
