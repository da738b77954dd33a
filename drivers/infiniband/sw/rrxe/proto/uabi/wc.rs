// SPDX-License-Identifier: GPL-2.0

//! Completions: status, opcode and flag values of a user CQE ([`WcStatus`], [`WcOpcode`],
//! [`WcFlags`], [`WcEx`]) and [`Completion`], which builds the 48-byte `ib_uverbs_wc` entry.

use super::super::BufferTooSmall;
use super::layout::UverbsWcFields;
use super::wqe::SendWqe;

/// Completion status (`enum ib_wc_status` = `IBV_WC_*`): the values rrxe reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum WcStatus {
    /// `IB_WC_SUCCESS`.
    #[default]
    Success = 0,
    /// `IB_WC_LOC_LEN_ERR`.
    LocLenErr = 1,
    /// `IB_WC_LOC_QP_OP_ERR`.
    LocQpOpErr = 2,
    /// `IB_WC_LOC_PROT_ERR`.
    LocProtErr = 4,
    /// `IB_WC_WR_FLUSH_ERR`.
    WrFlushErr = 5,
    /// `IB_WC_MW_BIND_ERR`.
    MwBindErr = 6,
    /// `IB_WC_REM_INV_REQ_ERR`.
    RemInvReqErr = 9,
    /// `IB_WC_REM_ACCESS_ERR`.
    RemAccessErr = 10,
    /// `IB_WC_REM_OP_ERR`.
    RemOpErr = 11,
    /// `IB_WC_RETRY_EXC_ERR`.
    RetryExcErr = 12,
    /// `IB_WC_RNR_RETRY_EXC_ERR`.
    RnrRetryExcErr = 13,
    /// `IB_WC_GENERAL_ERR`.
    #[cfg(rrxe_host)]
    GeneralErr = 21,
}

/// Completion opcode (`IB_UVERBS_WC_*` = `IBV_WC_*`), except `IB_WC_TSO` (never produced).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum WcOpcode {
    /// SEND (also SEND with immediate or invalidate).
    #[default]
    Send = 0,
    /// RDMA WRITE (also with immediate, on the requester).
    RdmaWrite = 1,
    /// RDMA READ.
    RdmaRead = 2,
    /// Compare & swap.
    CompSwap = 3,
    /// Fetch & add.
    FetchAdd = 4,
    /// Memory window bind.
    BindMw = 5,
    /// Local invalidate.
    LocalInv = 6,
    /// FLUSH.
    Flush = 8,
    /// ATOMIC WRITE.
    AtomicWrite = 9,
    /// Fast registration (`IB_WC_REG_MR`, kernel completions only).
    RegMr = 10,
    /// Receive of a SEND.
    Recv = 128,
    /// Receive of an RDMA WRITE with immediate.
    RecvRdmaWithImm = 129,
}

/// Completion flags, with the **kernel** values that upstream writes into user CQEs.
///
/// Note that libibverbs reads bit 2 as `IBV_WC_IP_CSUM_OK` (its `IBV_WC_WITH_INV` is 8);
/// upstream rxe and the generic `copy_wc_to_user()` both write the kernel value 4 for
/// SEND-with-invalidate receives, and so does this module.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct WcFlags(pub u32);

impl WcFlags {
    /// `IB_WC_GRH`: set on every successful user receive completion by upstream.
    pub const GRH: u32 = 1;
    /// `IB_WC_WITH_IMM`.
    pub const WITH_IMM: u32 = 1 << 1;
    /// `IB_WC_WITH_INVALIDATE`.
    pub const WITH_INVALIDATE: u32 = 1 << 2;

    /// Returns `true` if every bit of `bits` is set.
    #[cfg(rrxe_host)]
    pub const fn contains(self, bits: u32) -> bool {
        self.0 & bits == bits
    }
}

/// The `ex` union of a completion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WcEx {
    /// Zero.
    #[default]
    None,
    /// Immediate data, as the host value of the big-endian wire field (`ImmDt` as read by
    /// the BTH views); stored big-endian.
    Imm(u32),
    /// Invalidated rkey; stored native-endian.
    Invalidate(u32),
}

impl WcEx {
    /// Returns the raw native-endian `u32` whose memory bytes are the `ex` field.
    pub fn raw(self) -> u32 {
        match self {
            Self::None => 0,
            Self::Imm(v) => u32::from_le_bytes(v.to_be_bytes()),
            Self::Invalidate(v) => v,
        }
    }
}

/// A completion to write into a user CQ slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// Work request id.
    pub wr_id: u64,
    /// Status.
    pub status: WcStatus,
    /// Opcode (upstream leaves it 0 on error; so does [`Completion::send_error`]).
    pub opcode: WcOpcode,
    /// Vendor error syndrome (upstream: 0).
    pub vendor_err: u32,
    /// Bytes transferred.
    pub byte_len: u32,
    /// Immediate data or invalidated rkey.
    pub ex: WcEx,
    /// Local QP number.
    pub qp_num: u32,
    /// Source QP (UD receives).
    pub src_qp: u32,
    /// Flags.
    pub flags: WcFlags,
    /// P_Key index (upstream: 0).
    pub pkey_index: u16,
    /// Source LID (upstream: 0).
    pub slid: u16,
    /// Service level (upstream: 0).
    pub sl: u8,
    /// DLID path bits (upstream: 0).
    pub dlid_path_bits: u8,
    /// Port number (upstream: the QP's port on receive completions, 0 on send completions).
    pub port_num: u8,
}

impl Completion {
    /// Builds the completion of a successful send WQE, as `make_send_cqe()`: opcode from
    /// [`WrOpcode::wc_opcode`](super::WrOpcode::wc_opcode), `byte_len` = message length,
    /// `IB_WC_WITH_IMM` for SEND and WRITE with immediate (without the immediate itself),
    /// everything else zero.
    pub fn send_success(wqe: &SendWqe<'_>, qp_num: u32) -> Self {
        let imm = wqe.opcode().has_imm();
        Self {
            wr_id: wqe.wr_id(),
            opcode: wqe.opcode().wc_opcode(),
            byte_len: wqe.length(),
            qp_num,
            flags: WcFlags(if imm { WcFlags::WITH_IMM } else { 0 }),
            ..Self::default()
        }
    }

    /// Builds the completion of a successful receive, as `do_complete()` for a user CQ:
    /// opcode `RECV`, or `RECV_RDMA_WITH_IMM` for an RDMA WRITE with immediate; `IB_WC_GRH`
    /// always, plus `IB_WC_WITH_IMM` or `IB_WC_WITH_INVALIDATE` according to `ex`; `src_qp`
    /// (the DETH source QP of UD receives, else 0) and the QP's `port_num`.
    pub fn recv_success(
        wr_id: u64,
        qp_num: u32,
        byte_len: u32,
        write_with_imm: bool,
        ex: WcEx,
        src_qp: u32,
        port_num: u8,
    ) -> Self {
        let flags = WcFlags::GRH
            | match ex {
                WcEx::None => 0,
                WcEx::Imm(_) => WcFlags::WITH_IMM,
                WcEx::Invalidate(_) => WcFlags::WITH_INVALIDATE,
            };
        Self {
            wr_id,
            opcode: if write_with_imm {
                WcOpcode::RecvRdmaWithImm
            } else {
                WcOpcode::Recv
            },
            byte_len,
            ex,
            qp_num,
            src_qp,
            flags: WcFlags(flags),
            port_num,
            ..Self::default()
        }
    }

    /// Builds a failed send or receive completion: only `wr_id`, `status` and `qp_num`.
    pub fn send_error(wr_id: u64, status: WcStatus, qp_num: u32) -> Self {
        Self {
            wr_id,
            status,
            qp_num,
            ..Self::default()
        }
    }

    /// Returns the 48-byte entry.
    pub fn to_fields(self) -> UverbsWcFields {
        UverbsWcFields {
            wr_id: self.wr_id,
            status: self.status as u32,
            opcode: self.opcode as u32,
            vendor_err: self.vendor_err,
            byte_len: self.byte_len,
            ex: self.ex.raw(),
            qp_num: self.qp_num,
            src_qp: self.src_qp,
            wc_flags: self.flags.0,
            pkey_index: self.pkey_index,
            slid: self.slid,
            sl: self.sl,
            dlid_path_bits: self.dlid_path_bits,
            port_num: self.port_num,
            reserved: 0,
        }
    }

    /// Writes the entry (all 48 bytes, reserved ones zeroed) into the start of `slot`.
    pub fn write(&self, slot: &mut [u8]) -> Result<(), BufferTooSmall> {
        self.to_fields().write(slot)
    }
}
