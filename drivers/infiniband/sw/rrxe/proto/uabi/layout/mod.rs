// SPDX-License-Identifier: GPL-2.0

//! The C structures of the user ABI (`rdma_user_rxe.h`, `ib_user_verbs.h`): a zero-copy view
//! and a builder for each, the typed accessors of the `wr` union of `struct rxe_send_wr`, the
//! sizes and offsets the rest of the module uses, and the compile-time checks of all of them
//! against the numbers produced by the C compiler (`rxe_uabi_layout.out`).
//!
//! This file holds the queue buffer header, the udata payloads (`struct mminfo`, the create
//! and resize responses, the modify-SRQ command) and the completion entry
//! (`struct ib_uverbs_wc`); `wqe.rs` the work queue elements: send and receive WQEs, their
//! SGEs and DMA descriptor, the send work request with its `wr` union, and the embedded
//! address vector.

use super::super::wire::{chunk, chunk_mut};
use super::{layout_offset, layout_tiles, FieldLayout, Le};

mod wqe;

pub use wqe::*;

le_struct! {
    /// `struct rxe_queue_buf` without its flexible `data[]`: the 384-byte header at the start
    /// of every shared queue buffer. The producer and consumer indices sit in separate cache
    /// lines; the data area starts at [`QUEUE_DATA_OFFSET`].
    QueueBufHeader, QueueBufHeaderFields, 384 {
        /// Log2 of the element stride; written once by the kernel at creation.
        log2_elem_size: u32 = 0,
        /// Number of slots minus one; written once by the kernel at creation.
        index_mask: u32 = 4,
        /// `pad_1[30]`.
        pad_1: [u8; 120] = 8,
        /// Producer index (always stored masked).
        producer_index: u32 = 128,
        /// `pad_2[31]`.
        pad_2: [u8; 124] = 132,
        /// Consumer index (always stored masked).
        consumer_index: u32 = 256,
        /// `pad_3[31]`.
        pad_3: [u8; 124] = 260,
    }
}

le_struct! {
    /// `struct mminfo`: where to `mmap()` a queue buffer on the uverbs file descriptor.
    MmInfo, MmInfoFields, 16 {
        /// Page-aligned `mmap()` offset.
        offset: u64 = 0,
        /// Page-aligned length of the mapping.
        size: u32 = 8,
        /// Padding; always written as zero (upstream leaks 4 bytes of `kmalloc` here).
        pad: u32 = 12,
    }
}

le_struct! {
    /// `struct rxe_create_cq_resp`, the driver part of the create-CQ response.
    CreateCqResp, CreateCqRespFields, 16 {
        /// The CQ buffer.
        mi: MmInfoFields = 0,
    }
}

le_struct! {
    /// `struct rxe_resize_cq_resp`, the driver part of the resize-CQ response.
    ResizeCqResp, ResizeCqRespFields, 16 {
        /// The new CQ buffer.
        mi: MmInfoFields = 0,
    }
}

le_struct! {
    /// `struct rxe_create_qp_resp`, the driver part of the create-QP response.
    CreateQpResp, CreateQpRespFields, 32 {
        /// The receive queue buffer (left zero when the QP uses an SRQ).
        rq_mi: MmInfoFields = 0,
        /// The send queue buffer.
        sq_mi: MmInfoFields = 16,
    }
}

le_struct! {
    /// `struct rxe_create_srq_resp`, the driver part of the create-SRQ response.
    CreateSrqResp, CreateSrqRespFields, 24 {
        /// The SRQ buffer.
        mi: MmInfoFields = 0,
        /// SRQ number (librxe never reads it, but rdma-core 44.0 does not zero it).
        srq_num: u32 = 16,
        /// Reserved, zero.
        reserved: u32 = 20,
    }
}

le_struct! {
    /// `struct rxe_modify_srq_cmd`, the driver part of the modify-SRQ request (input).
    ModifySrqCmd, ModifySrqCmdFields, 8 {
        /// User pointer to a `struct mminfo` that receives the new buffer after a resize.
        mmap_info_addr: u64 = 0,
    }
}

le_struct! {
    /// `struct rxe_create_ah_resp`, the driver part of the create-AH response.
    CreateAhResp, CreateAhRespFields, 8 {
        /// AH number that UD send WQEs carry in `wr.ud.ah_num` (never zero).
        ah_num: u32 = 0,
        /// Reserved, zero.
        reserved: u32 = 4,
    }
}

le_struct! {
    /// `struct ib_uverbs_wc`, the 48-byte completion entry of a user CQ. Offsets 0-45 coincide
    /// with `struct ibv_wc`, which `ibv_poll_cq` fills with a plain `memcpy`.
    UverbsWc, UverbsWcFields, 48 {
        /// Work request id.
        wr_id: u64 = 0,
        /// [`WcStatus`](super::WcStatus) value.
        status: u32 = 8,
        /// [`WcOpcode`](super::WcOpcode) value.
        opcode: u32 = 12,
        /// Vendor error syndrome.
        vendor_err: u32 = 16,
        /// Bytes transferred.
        byte_len: u32 = 20,
        /// `ex`: immediate data (big-endian in memory) or invalidated rkey.
        ex: u32 = 24,
        /// Local QP number.
        qp_num: u32 = 28,
        /// Source QP (UD receives).
        src_qp: u32 = 32,
        /// [`WcFlags`](super::WcFlags) bits.
        wc_flags: u32 = 36,
        /// P_Key index.
        pkey_index: u16 = 40,
        /// Source LID.
        slid: u16 = 42,
        /// Service level.
        sl: u8 = 44,
        /// Destination LID path bits.
        dlid_path_bits: u8 = 45,
        /// Port number (lands in `ibv_wc` padding).
        port_num: u8 = 46,
        /// Reserved, zero.
        reserved: u8 = 47,
    }
}

/// Offset of the producer index in the queue buffer header.
pub const PRODUCER_INDEX_OFFSET: usize =
    layout_offset(QueueBufHeaderFields::LAYOUT, "producer_index");
/// Offset of the consumer index in the queue buffer header.
pub const CONSUMER_INDEX_OFFSET: usize =
    layout_offset(QueueBufHeaderFields::LAYOUT, "consumer_index");
/// Offset of `log2_elem_size` in the queue buffer header.
pub const LOG2_ELEM_SIZE_OFFSET: usize =
    layout_offset(QueueBufHeaderFields::LAYOUT, "log2_elem_size");
/// Offset of `index_mask` in the queue buffer header.
pub const INDEX_MASK_OFFSET: usize = layout_offset(QueueBufHeaderFields::LAYOUT, "index_mask");
/// Offset of the first element (`data[]`) in a queue buffer.
pub const QUEUE_DATA_OFFSET: usize = QueueBufHeaderFields::LEN;
/// Size of a completion entry as userspace reads it.
pub const UVERBS_WC_LEN: usize = UverbsWcFields::LEN;

// Compile-time layout checks against `rxe_uabi_layout.out` (x86_64, gcc, 7.3 uapi headers).
const _: () = {
    use layout_offset as off;
    assert!(QueueBufHeaderFields::LEN == 384);
    assert!(off(QueueBufHeaderFields::LAYOUT, "log2_elem_size") == 0);
    assert!(off(QueueBufHeaderFields::LAYOUT, "index_mask") == 4);
    assert!(PRODUCER_INDEX_OFFSET == 128);
    assert!(CONSUMER_INDEX_OFFSET == 256);
    assert!(QUEUE_DATA_OFFSET == 384);
    assert!(MmInfoFields::LEN == 16);
    assert!(off(MmInfoFields::LAYOUT, "offset") == 0);
    assert!(off(MmInfoFields::LAYOUT, "size") == 8);
    assert!(off(MmInfoFields::LAYOUT, "pad") == 12);
    assert!(CreateCqRespFields::LEN == 16);
    assert!(ResizeCqRespFields::LEN == 16);
    assert!(CreateQpRespFields::LEN == 32);
    assert!(off(CreateQpRespFields::LAYOUT, "rq_mi") == 0);
    assert!(off(CreateQpRespFields::LAYOUT, "sq_mi") == 16);
    assert!(CreateSrqRespFields::LEN == 24);
    assert!(off(CreateSrqRespFields::LAYOUT, "mi") == 0);
    assert!(off(CreateSrqRespFields::LAYOUT, "srq_num") == 16);
    assert!(off(CreateSrqRespFields::LAYOUT, "reserved") == 20);
    assert!(ModifySrqCmdFields::LEN == 8);
    assert!(CreateAhRespFields::LEN == 8);
    assert!(off(CreateAhRespFields::LAYOUT, "ah_num") == 0);
    assert!(UverbsWcFields::LEN == 48);
    assert!(off(UverbsWcFields::LAYOUT, "status") == 8);
    assert!(off(UverbsWcFields::LAYOUT, "opcode") == 12);
    assert!(off(UverbsWcFields::LAYOUT, "vendor_err") == 16);
    assert!(off(UverbsWcFields::LAYOUT, "byte_len") == 20);
    assert!(off(UverbsWcFields::LAYOUT, "ex") == 24);
    assert!(off(UverbsWcFields::LAYOUT, "qp_num") == 28);
    assert!(off(UverbsWcFields::LAYOUT, "src_qp") == 32);
    assert!(off(UverbsWcFields::LAYOUT, "wc_flags") == 36);
    assert!(off(UverbsWcFields::LAYOUT, "pkey_index") == 40);
    assert!(off(UverbsWcFields::LAYOUT, "slid") == 42);
    assert!(off(UverbsWcFields::LAYOUT, "sl") == 44);
    assert!(off(UverbsWcFields::LAYOUT, "dlid_path_bits") == 45);
    assert!(off(UverbsWcFields::LAYOUT, "port_num") == 46);
    assert!(off(UverbsWcFields::LAYOUT, "reserved") == 47);
};
