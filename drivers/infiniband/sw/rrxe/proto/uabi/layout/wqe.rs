// SPDX-License-Identifier: GPL-2.0

//! The work queue elements of the user ABI: `struct rxe_send_wqe` and `struct rxe_recv_wqe`,
//! their SGEs and DMA descriptor, `struct rxe_send_wr` with the typed accessors of its `wr`
//! union, and the address vector embedded in UD send WQEs; the offsets of their payload
//! areas, and the compile-time checks of all of them against `rxe_uabi_layout.out`.

use super::super::super::wire::{chunk, chunk_mut};
use super::super::{layout_offset, layout_tiles, FieldLayout, Le};

le_struct! {
    /// `struct rxe_sge` (identical to `struct ibv_sge` and `struct ib_sge`).
    RxeSge, RxeSgeFields, 16 {
        /// Virtual address.
        addr: u64 = 0,
        /// Length in bytes.
        length: u32 = 8,
        /// Local key.
        lkey: u32 = 12,
    }
}

le_struct! {
    /// `struct rxe_dma_info` without its flexible payload (SGEs, inline data or the 8 bytes
    /// of an ATOMIC WRITE).
    RxeDmaInfo, RxeDmaInfoFields, 24 {
        /// Total message length.
        length: u32 = 0,
        /// Remaining length (kernel scratch; never trusted).
        resid: u32 = 4,
        /// Current SGE (kernel scratch; never trusted).
        cur_sge: u32 = 8,
        /// Number of SGEs.
        num_sge: u32 = 12,
        /// Offset in the current SGE (kernel scratch; never trusted).
        sge_offset: u32 = 16,
        /// Reserved.
        reserved: u32 = 20,
    }
}

le_struct! {
    /// `struct rxe_global_route` (same layout as `struct ibv_global_route`).
    RxeGlobalRoute, RxeGlobalRouteFields, 24 {
        /// Destination GID.
        dgid: [u8; 16] = 0,
        /// IPv6 flow label (20 bits).
        flow_label: u32 = 16,
        /// Source GID table index.
        sgid_index: u8 = 20,
        /// Hop limit (IP TTL).
        hop_limit: u8 = 21,
        /// Traffic class.
        traffic_class: u8 = 22,
        /// Trailing padding of the C structure.
        pad: u8 = 23,
    }
}

le_struct! {
    /// `struct rxe_av`, the address vector embedded in UD WQEs of legacy providers.
    RxeAv, RxeAvFields, 88 {
        /// Port number.
        port_num: u8 = 0,
        /// [`NETWORK_TYPE_IPV4`] or [`NETWORK_TYPE_IPV6`].
        network_type: u8 = 1,
        /// Destination MAC address.
        dmac: [u8; 6] = 2,
        /// Global route header fields.
        grh: RxeGlobalRouteFields = 8,
        /// Source address: `struct sockaddr_in` or `struct sockaddr_in6`.
        sgid_addr: [u8; 28] = 32,
        /// Destination address: `struct sockaddr_in` or `struct sockaddr_in6`.
        dgid_addr: [u8; 28] = 60,
    }
}

le_struct! {
    /// `struct rxe_send_wr`, the work request part of a send WQE.
    RxeSendWr, RxeSendWrFields, 144 {
        /// Work request id, returned in the completion.
        wr_id: u64 = 0,
        /// Reserved.
        reserved: u32 = 8,
        /// `IB_UVERBS_WR_*` opcode.
        opcode: u32 = 12,
        /// `IB_SEND_*` flags.
        send_flags: u32 = 16,
        /// `ex`: immediate data (big-endian in memory) or the rkey to invalidate.
        ex: u32 = 20,
        /// The `wr` union; see the typed accessors.
        wr: [u8; 120] = 24,
    }
}

le_struct! {
    /// `wr.rdma` of `struct rxe_send_wr` (RDMA WRITE, READ and ATOMIC WRITE).
    RdmaWr, RdmaWrFields, 16 {
        /// Remote virtual address.
        remote_addr: u64 = 0,
        /// Remote key.
        rkey: u32 = 8,
        /// Reserved.
        reserved: u32 = 12,
    }
}

le_struct! {
    /// `wr.atomic` of `struct rxe_send_wr` (compare & swap, fetch & add).
    AtomicWr, AtomicWrFields, 32 {
        /// Remote virtual address (8-byte aligned).
        remote_addr: u64 = 0,
        /// Compare operand (CAS) or addend (FAA).
        compare_add: u64 = 8,
        /// Swap operand (CAS).
        swap: u64 = 16,
        /// Remote key.
        rkey: u32 = 24,
        /// Reserved.
        reserved: u32 = 28,
    }
}

le_struct! {
    /// `wr.flush` of `struct rxe_send_wr` (rdma-core 45 and later).
    FlushWr, FlushWrFields, 24 {
        /// Remote virtual address.
        remote_addr: u64 = 0,
        /// Length to flush.
        length: u32 = 8,
        /// Remote key.
        rkey: u32 = 12,
        /// Placement type (`IB_FLUSH_GLOBAL` | `IB_FLUSH_PERSISTENT`); C name `type`.
        placement_type: u8 = 16,
        /// Selectivity level (`IB_FLUSH_RANGE` or `IB_FLUSH_MR`).
        level: u8 = 17,
        /// Trailing padding of the C structure.
        pad: [u8; 6] = 18,
    }
}

le_struct! {
    /// `wr.ud` of `struct rxe_send_wr` (UD sends).
    UdWr, UdWrFields, 120 {
        /// Destination QP number.
        remote_qpn: u32 = 0,
        /// Destination Q_Key.
        remote_qkey: u32 = 4,
        /// P_Key index (ignored by rxe).
        pkey_index: u16 = 8,
        /// Reserved.
        reserved: u16 = 10,
        /// Address handle number, or 0 for the embedded [`RxeAv`].
        ah_num: u32 = 12,
        /// `pad[4]`.
        pad: [u8; 16] = 16,
        /// Embedded address vector (legacy providers only).
        av: RxeAvFields = 32,
    }
}

le_struct! {
    /// `wr.mw` of `struct rxe_send_wr` (BIND_MW).
    MwWr, MwWrFields, 32 {
        /// Start of the window.
        addr: u64 = 0,
        /// Length of the window.
        length: u64 = 8,
        /// Key of the MR the window is bound to.
        mr_lkey: u32 = 16,
        /// Current rkey of the window.
        mw_rkey: u32 = 20,
        /// New rkey (only the low 8 bits are used).
        rkey: u32 = 24,
        /// `IB_ACCESS_*` flags.
        access: u32 = 28,
    }
}

le_struct! {
    /// `wr.reg` of `struct rxe_send_wr` (`IB_WR_REG_MR`, kernel consumers only). Upstream
    /// keeps a `struct ib_mr *` in `mr`; rrxe names the region by `key`'s index instead and
    /// leaves `mr` 0.
    RegWr, RegWrFields, 16 {
        /// Upstream's region pointer; 0.
        mr: u64 = 0,
        /// The new key.
        key: u32 = 8,
        /// `IB_ACCESS_*` flags.
        access: u32 = 12,
    }
}

/// Offset of the `wr` union inside `struct rxe_send_wr`.
const SEND_WR_UNION_OFFSET: usize = 24;

macro_rules! union_accessors {
    ($($(#[$meta:meta])* $get:ident, $set:ident: $ty:ty;)*) => {
        #[cfg(rrxe_host)]
        impl RxeSendWr<'_> {
            $(
                $(#[$meta])*
                pub fn $get(&self) -> $ty {
                    Le::read(self.0, SEND_WR_UNION_OFFSET)
                }
            )*
        }

        // Not every member of the union is read or written by the module.
        #[allow(dead_code)]
        impl RxeSendWrFields {
            $(
                $(#[$meta])*
                pub fn $get(&self) -> $ty {
                    Le::read(&self.wr, 0)
                }

                #[doc = concat!(
                    "Overwrites the start of the `wr` union with `v` (see [`Self::",
                    stringify!($get),
                    "`]).",
                )]
                pub fn $set(&mut self, v: $ty) {
                    Le::write(v, &mut self.wr, 0);
                }
            )*
        }
    };
}

union_accessors! {
    /// Returns the union as `wr.rdma`.
    rdma, set_rdma: RdmaWrFields;
    /// Returns the union as `wr.atomic`.
    atomic, set_atomic: AtomicWrFields;
    /// Returns the union as `wr.flush`.
    flush, set_flush: FlushWrFields;
    /// Returns the union as `wr.ud`.
    ud, set_ud: UdWrFields;
    /// Returns the union as `wr.mw`.
    mw, set_mw: MwWrFields;
    /// Returns the union as `wr.reg`.
    reg, set_reg: RegWrFields;
}

le_struct! {
    /// `struct rxe_send_wqe` without its flexible payload: the 208-byte header of an SQ
    /// element. The SGEs, inline data or ATOMIC WRITE operand start at [`SEND_WQE_DATA_OFFSET`].
    RxeSendWqe, RxeSendWqeFields, 208 {
        /// The work request.
        wr: RxeSendWrFields = 0,
        /// Kernel scratch.
        status: u32 = 144,
        /// 0 (`wqe_state_posted`) when posted by the provider.
        state: u32 = 148,
        /// Remote address as written by the provider (not trusted, see
        /// [`validate_send_wqe`](super::super::validate_send_wqe)).
        iova: u64 = 152,
        /// Kernel scratch.
        mask: u32 = 160,
        /// Kernel scratch.
        first_psn: u32 = 164,
        /// Kernel scratch.
        last_psn: u32 = 168,
        /// Kernel scratch.
        ack_length: u32 = 172,
        /// Send sequence number (rdma-core 44 only; never read).
        ssn: u32 = 176,
        /// Kernel scratch.
        has_rd_atomic: u32 = 180,
        /// DMA descriptor.
        dma: RxeDmaInfoFields = 184,
    }
}

le_struct! {
    /// `struct rxe_recv_wqe` without its SGEs: the 40-byte header of an RQ or SRQ element.
    /// The SGEs start at [`RECV_WQE_DATA_OFFSET`].
    RxeRecvWqe, RxeRecvWqeFields, 40 {
        /// Work request id, returned in the completion.
        wr_id: u64 = 0,
        /// Reserved (not written by the provider).
        reserved: u32 = 8,
        /// Padding (not written by the provider).
        padding: u32 = 12,
        /// DMA descriptor.
        dma: RxeDmaInfoFields = 16,
    }
}

/// Offset of the SGEs / inline data / ATOMIC WRITE operand inside a send WQE.
pub const SEND_WQE_DATA_OFFSET: usize = RxeSendWqeFields::LEN;
/// Offset of the SGEs inside a receive WQE.
pub const RECV_WQE_DATA_OFFSET: usize = RxeRecvWqeFields::LEN;
/// Size of one SGE.
pub const SGE_LEN: usize = RxeSgeFields::LEN;

/// `RXE_NETWORK_TYPE_IPV4`.
pub const NETWORK_TYPE_IPV4: u8 = 1;
/// `RXE_NETWORK_TYPE_IPV6`.
pub const NETWORK_TYPE_IPV6: u8 = 2;

// Compile-time layout checks against `rxe_uabi_layout.out` (x86_64, gcc, 7.3 uapi headers).
const _: () = {
    use layout_offset as off;
    assert!(RxeGlobalRouteFields::LEN == 24);
    assert!(off(RxeGlobalRouteFields::LAYOUT, "flow_label") == 16);
    assert!(off(RxeGlobalRouteFields::LAYOUT, "sgid_index") == 20);
    assert!(off(RxeGlobalRouteFields::LAYOUT, "hop_limit") == 21);
    assert!(off(RxeGlobalRouteFields::LAYOUT, "traffic_class") == 22);
    assert!(RxeAvFields::LEN == 88);
    assert!(off(RxeAvFields::LAYOUT, "network_type") == 1);
    assert!(off(RxeAvFields::LAYOUT, "dmac") == 2);
    assert!(off(RxeAvFields::LAYOUT, "grh") == 8);
    assert!(off(RxeAvFields::LAYOUT, "sgid_addr") == 32);
    assert!(off(RxeAvFields::LAYOUT, "dgid_addr") == 60);
    assert!(RxeSendWrFields::LEN == 144);
    assert!(off(RxeSendWrFields::LAYOUT, "wr_id") == 0);
    // `slot_wr_id` reads a send or receive slot's first eight bytes.
    assert!(off(RxeRecvWqeFields::LAYOUT, "wr_id") == 0);
    assert!(off(RxeSendWrFields::LAYOUT, "reserved") == 8);
    assert!(off(RxeSendWrFields::LAYOUT, "opcode") == 12);
    assert!(off(RxeSendWrFields::LAYOUT, "send_flags") == 16);
    assert!(off(RxeSendWrFields::LAYOUT, "ex") == 20);
    assert!(off(RxeSendWrFields::LAYOUT, "wr") == SEND_WR_UNION_OFFSET);
    assert!(SEND_WR_UNION_OFFSET == 24);
    // Union members, as offsets inside `struct rxe_send_wr`.
    assert!(SEND_WR_UNION_OFFSET + off(FlushWrFields::LAYOUT, "length") == 32);
    assert!(SEND_WR_UNION_OFFSET + off(FlushWrFields::LAYOUT, "rkey") == 36);
    assert!(SEND_WR_UNION_OFFSET + off(FlushWrFields::LAYOUT, "placement_type") == 40);
    assert!(SEND_WR_UNION_OFFSET + off(FlushWrFields::LAYOUT, "level") == 41);
    assert!(SEND_WR_UNION_OFFSET + off(RdmaWrFields::LAYOUT, "rkey") == 32);
    assert!(SEND_WR_UNION_OFFSET + off(RdmaWrFields::LAYOUT, "reserved") == 36);
    assert!(SEND_WR_UNION_OFFSET + off(AtomicWrFields::LAYOUT, "compare_add") == 32);
    assert!(SEND_WR_UNION_OFFSET + off(AtomicWrFields::LAYOUT, "swap") == 40);
    assert!(SEND_WR_UNION_OFFSET + off(AtomicWrFields::LAYOUT, "rkey") == 48);
    assert!(SEND_WR_UNION_OFFSET + off(AtomicWrFields::LAYOUT, "reserved") == 52);
    assert!(SEND_WR_UNION_OFFSET + off(UdWrFields::LAYOUT, "remote_qpn") == 24);
    assert!(SEND_WR_UNION_OFFSET + off(UdWrFields::LAYOUT, "remote_qkey") == 28);
    assert!(SEND_WR_UNION_OFFSET + off(UdWrFields::LAYOUT, "pkey_index") == 32);
    assert!(SEND_WR_UNION_OFFSET + off(UdWrFields::LAYOUT, "reserved") == 34);
    assert!(SEND_WR_UNION_OFFSET + off(UdWrFields::LAYOUT, "ah_num") == 36);
    assert!(SEND_WR_UNION_OFFSET + off(UdWrFields::LAYOUT, "pad") == 40);
    assert!(SEND_WR_UNION_OFFSET + off(UdWrFields::LAYOUT, "av") == 56);
    assert!(SEND_WR_UNION_OFFSET + UdWrFields::LEN == 144);
    assert!(SEND_WR_UNION_OFFSET + off(MwWrFields::LAYOUT, "length") == 32);
    assert!(SEND_WR_UNION_OFFSET + off(MwWrFields::LAYOUT, "mr_lkey") == 40);
    assert!(SEND_WR_UNION_OFFSET + off(MwWrFields::LAYOUT, "mw_rkey") == 44);
    assert!(SEND_WR_UNION_OFFSET + off(MwWrFields::LAYOUT, "rkey") == 48);
    assert!(SEND_WR_UNION_OFFSET + off(MwWrFields::LAYOUT, "access") == 52);
    assert!(SEND_WR_UNION_OFFSET + off(RegWrFields::LAYOUT, "key") == 32);
    assert!(SEND_WR_UNION_OFFSET + off(RegWrFields::LAYOUT, "access") == 36);
    assert!(RxeSgeFields::LEN == 16);
    assert!(off(RxeSgeFields::LAYOUT, "length") == 8);
    assert!(off(RxeSgeFields::LAYOUT, "lkey") == 12);
    assert!(RxeDmaInfoFields::LEN == 24);
    assert!(off(RxeDmaInfoFields::LAYOUT, "resid") == 4);
    assert!(off(RxeDmaInfoFields::LAYOUT, "cur_sge") == 8);
    assert!(off(RxeDmaInfoFields::LAYOUT, "num_sge") == 12);
    assert!(off(RxeDmaInfoFields::LAYOUT, "sge_offset") == 16);
    assert!(off(RxeDmaInfoFields::LAYOUT, "reserved") == 20);
    assert!(RxeSendWqeFields::LEN == 208);
    assert!(off(RxeSendWqeFields::LAYOUT, "status") == 144);
    assert!(off(RxeSendWqeFields::LAYOUT, "state") == 148);
    assert!(off(RxeSendWqeFields::LAYOUT, "iova") == 152);
    assert!(off(RxeSendWqeFields::LAYOUT, "mask") == 160);
    assert!(off(RxeSendWqeFields::LAYOUT, "first_psn") == 164);
    assert!(off(RxeSendWqeFields::LAYOUT, "last_psn") == 168);
    assert!(off(RxeSendWqeFields::LAYOUT, "ack_length") == 172);
    assert!(off(RxeSendWqeFields::LAYOUT, "ssn") == 176);
    assert!(off(RxeSendWqeFields::LAYOUT, "has_rd_atomic") == 180);
    assert!(off(RxeSendWqeFields::LAYOUT, "dma") == 184);
    assert!(SEND_WQE_DATA_OFFSET == 208);
    assert!(RxeRecvWqeFields::LEN == 40);
    assert!(off(RxeRecvWqeFields::LAYOUT, "reserved") == 8);
    assert!(off(RxeRecvWqeFields::LAYOUT, "padding") == 12);
    assert!(off(RxeRecvWqeFields::LAYOUT, "dma") == 16);
    assert!(RECV_WQE_DATA_OFFSET == 40);
};
