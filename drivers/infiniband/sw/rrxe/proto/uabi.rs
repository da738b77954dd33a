// SPDX-License-Identifier: GPL-2.0

//! The rxe user ABI: shared-queue layout and protocol, work-request validation, completions.
//!
//! rdma-core's stock rxe provider (`librxe`) talks to the driver through three kinds of
//! `mmap`ed ring (send queue, receive queue or SRQ, completion queue) and a handful of udata
//! payloads, all defined in `include/uapi/rdma/rdma_user_rxe.h` and, for the completion
//! entry, `struct ib_uverbs_wc` of `include/uapi/rdma/ib_user_verbs.h`. This module is the
//! pure part of that contract:
//!
//! - Little-endian, zero-copy views and builders for every shared structure (`RxeSendWqe`,
//!   `RxeRecvWqe`, `RxeSge`, `RxeAv`, `UverbsWc`, `MmInfo`, the udata responses, the
//!   `rxe_queue_buf` header), with their sizes and offsets checked at compile time against the
//!   numbers produced by the C compiler (`rxe_uabi_layout.out`).
//! - Queue geometry ([`QueueGeometry`]: element and slot rounding exactly as `rxe_queue_init()`)
//!   and the index protocol ([`KernelConsumer`], [`SendQueueState`], [`KernelProducer`]), which
//!   treat every index userspace can write as hostile and say which shared index must be loaded
//!   with acquire and which stored with release ([`IndexAccess`]).
//! - Validation of a send or receive WQE copied out of a user-owned slot
//!   ([`validate_send_wqe`], [`validate_recv_wqe`]) into a typed description whose invariants
//!   (data inside the slot, length consistent with the SGE list) hold for any input, and
//!   the split of a byte range of a validated SGE list into per-SGE pieces
//!   ([`SgeList::walk`]) for placing data into it or gathering it.
//! - Completion building ([`Completion`]) into a 48-byte `ib_uverbs_wc` slot.
//!
//! Everything assumes the in-memory layout of x86_64 and other 64-bit little-endian targets
//! (`__aligned_u64`, no 32-bit ABI variant); the provider and kernel share the same memory, so
//! all fields are native-endian, which is little-endian on every target rrxe supports.
//!
//! The kernel must copy a user slot into private memory before calling the validators, and
//! then use only the validated copy: the shared page stays writable by userspace while the
//! kernel works (upstream rxe reads the SQ slot in place, which makes every check it does
//! racy).

use core::ops::Range;

use super::bth::Qpn;
use super::opcode::{Op, Opcode, Position, QpType, OPCODE_TABLE};
use super::wire::{chunk, chunk_mut};
use super::BufferTooSmall;

// ---------------------------------------------------------------------------------------------
// Little-endian fields and the structure macro.
// ---------------------------------------------------------------------------------------------

/// A fixed-size little-endian (native) field of a user ABI structure.
trait Le: Copy {
    /// Size of the field in bytes.
    const SIZE: usize;
    /// The all-zero value.
    const ZERO: Self;
    /// Reads the field at byte `off` of `bytes` (zero if out of range).
    fn read_le(bytes: &[u8], off: usize) -> Self;
    /// Writes the field at byte `off` of `bytes` (dropped if out of range).
    fn write_le(self, bytes: &mut [u8], off: usize);
}

macro_rules! le_int {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            const ZERO: Self = 0;

            fn read_le(bytes: &[u8], off: usize) -> Self {
                chunk(bytes, off).map_or(0, |b| <$t>::from_le_bytes(*b))
            }

            fn write_le(self, bytes: &mut [u8], off: usize) {
                if let Some(b) = chunk_mut(bytes, off) {
                    *b = self.to_le_bytes();
                }
            }
        }
    )*};
}

le_int!(u8, u16, u32, u64);

impl<const N: usize> Le for [u8; N] {
    const SIZE: usize = N;
    const ZERO: Self = [0; N];

    fn read_le(bytes: &[u8], off: usize) -> Self {
        chunk(bytes, off).copied().unwrap_or([0; N])
    }

    fn write_le(self, bytes: &mut [u8], off: usize) {
        if let Some(b) = chunk_mut(bytes, off) {
            *b = self;
        }
    }
}

/// Offset and size of one field of a user ABI structure, for layout checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldLayout {
    /// Field name (the C name, except `type` which is `placement_type`).
    pub name: &'static str,
    /// Byte offset inside the structure.
    pub offset: usize,
    /// Size in bytes.
    pub size: usize,
}

/// Returns `true` if `fields` are in offset order and cover `0..len` exactly, without gaps
/// or overlaps (so a view -> builder -> bytes round trip reproduces every byte).
const fn layout_tiles(fields: &[FieldLayout], len: usize) -> bool {
    let mut next = 0usize;
    let mut rest = fields;
    while let Some((f, tail)) = rest.split_first() {
        if f.offset != next {
            return false;
        }
        next = match next.checked_add(f.size) {
            Some(n) => n,
            None => return false,
        };
        rest = tail;
    }
    next == len
}

/// Returns the offset of field `name` in `fields`, or `usize::MAX` if there is none.
const fn layout_offset(fields: &[FieldLayout], name: &str) -> usize {
    let mut rest = fields;
    while let Some((f, tail)) = rest.split_first() {
        if const_str_eq(f.name, name) {
            return f.offset;
        }
        rest = tail;
    }
    usize::MAX
}

/// `const` string equality.
const fn const_str_eq(a: &str, b: &str) -> bool {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    while let (Some((x, ta)), Some((y, tb))) = (a.split_first(), b.split_first()) {
        if *x != *y {
            return false;
        }
        a = ta;
        b = tb;
    }
    a.is_empty() && b.is_empty()
}

/// Declares a C structure of the user ABI: a zero-copy view `$view<'a>` over its bytes, a
/// builder `$fields` with one public member per field, and a compile-time check that the
/// fields tile the structure.
macro_rules! le_struct {
    (
        $(#[$vmeta:meta])* $view:ident, $fields:ident, $len:literal {
            $($(#[$fmeta:meta])* $name:ident: $ty:ty = $off:literal,)*
        }
    ) => {
        $(#[$vmeta])*
        #[derive(Clone, Copy, PartialEq, Eq)]
        pub struct $view<'a>(&'a [u8; $len]);

        impl<'a> $view<'a> {
            /// Size of the C structure in bytes.
            pub const LEN: usize = $len;

            /// Views the first [`Self::LEN`] bytes of `bytes`, or `None` if it is shorter.
            pub fn new(bytes: &'a [u8]) -> Option<Self> {
                bytes.first_chunk().map(Self)
            }

            /// Returns the raw bytes.
            pub fn as_bytes(&self) -> &'a [u8; $len] {
                self.0
            }

            $(
                $(#[$fmeta])*
                pub fn $name(&self) -> $ty {
                    <$ty as Le>::read_le(self.0, $off)
                }
            )*

            /// Copies all fields into a builder.
            pub fn fields(&self) -> $fields {
                $fields { $($name: self.$name(),)* }
            }
        }

        impl core::fmt::Debug for $view<'_> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                self.fields().fmt(f)
            }
        }

        #[doc = concat!("Builder for [`", stringify!($view), "`]: the structure's fields by value.")]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $fields {
            $($(#[$fmeta])* pub $name: $ty,)*
        }

        impl Default for $fields {
            fn default() -> Self {
                <Self as Le>::ZERO
            }
        }

        impl $fields {
            /// Size of the C structure in bytes.
            pub const LEN: usize = $len;

            /// Offset and size of every field, in declaration (and offset) order.
            pub const LAYOUT: &'static [FieldLayout] = &[
                $(FieldLayout { name: stringify!($name), offset: $off, size: <$ty as Le>::SIZE },)*
            ];

            /// Serialises the structure into the first [`Self::LEN`] bytes of `out`.
            pub fn write(&self, out: &mut [u8]) -> Result<(), BufferTooSmall> {
                let out: &mut [u8; $len] = out.first_chunk_mut().ok_or(BufferTooSmall)?;
                Le::write_le(*self, out, 0);
                Ok(())
            }
        }

        impl Le for $fields {
            const SIZE: usize = $len;
            const ZERO: Self = Self { $($name: <$ty as Le>::ZERO,)* };

            fn read_le(bytes: &[u8], off: usize) -> Self {
                chunk::<$len>(bytes, off).map_or(Self::ZERO, |b| $view(b).fields())
            }

            fn write_le(self, bytes: &mut [u8], off: usize) {
                if let Some(out) = chunk_mut::<$len>(bytes, off) {
                    $(Le::write_le(self.$name, out, $off);)*
                }
            }
        }

        const _: () = assert!(layout_tiles($fields::LAYOUT, $len));
    };
}

// ---------------------------------------------------------------------------------------------
// Structures (rdma_user_rxe.h, ib_user_verbs.h).
// ---------------------------------------------------------------------------------------------

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

/// Offset of the `wr` union inside `struct rxe_send_wr`.
const SEND_WR_UNION_OFFSET: usize = 24;

macro_rules! union_accessors {
    ($($(#[$meta:meta])* $get:ident, $set:ident: $ty:ty;)*) => {
        impl RxeSendWr<'_> {
            $(
                $(#[$meta])*
                pub fn $get(&self) -> $ty {
                    Le::read_le(self.0, SEND_WR_UNION_OFFSET)
                }
            )*
        }

        impl RxeSendWrFields {
            $(
                $(#[$meta])*
                pub fn $get(&self) -> $ty {
                    Le::read_le(&self.wr, 0)
                }

                #[doc = concat!("Overwrites the start of the `wr` union with `v` (see [`Self::", stringify!($get), "`]).")]
                pub fn $set(&mut self, v: $ty) {
                    Le::write_le(v, &mut self.wr, 0);
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
        /// Remote address as written by the provider (not trusted, see [`validate_send_wqe`]).
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

le_struct! {
    /// `struct ib_uverbs_wc`, the 48-byte completion entry of a user CQ. Offsets 0-45 coincide
    /// with `struct ibv_wc`, which `ibv_poll_cq` fills with a plain `memcpy`.
    UverbsWc, UverbsWcFields, 48 {
        /// Work request id.
        wr_id: u64 = 0,
        /// [`WcStatus`] value.
        status: u32 = 8,
        /// [`WcOpcode`] value.
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
        /// [`WcFlags`] bits.
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
/// Offset of the SGEs / inline data / ATOMIC WRITE operand inside a send WQE.
pub const SEND_WQE_DATA_OFFSET: usize = RxeSendWqeFields::LEN;
/// Offset of the SGEs inside a receive WQE.
pub const RECV_WQE_DATA_OFFSET: usize = RxeRecvWqeFields::LEN;
/// Size of one SGE.
pub const SGE_LEN: usize = RxeSgeFields::LEN;
/// Size of a completion entry as userspace reads it.
pub const UVERBS_WC_LEN: usize = UverbsWcFields::LEN;

/// `RXE_NETWORK_TYPE_IPV4`.
pub const NETWORK_TYPE_IPV4: u8 = 1;
/// `RXE_NETWORK_TYPE_IPV6`.
pub const NETWORK_TYPE_IPV6: u8 = 2;

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

// ---------------------------------------------------------------------------------------------
// Udata helpers.
// ---------------------------------------------------------------------------------------------

/// Error from [`parse_modify_srq_cmd`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdataError {
    /// The input is shorter than the structure (`-EINVAL`).
    TooShort,
    /// Bytes beyond the structure are not zero (`-EOPNOTSUPP`, as `ib_copy_validate_udata_in`).
    NonZeroTrailer,
}

/// Parses the driver part of a modify-SRQ request and returns `mmap_info_addr`.
///
/// Mirrors `ib_copy_validate_udata_in(udata, cmd, mmap_info_addr)`: the input must hold the
/// whole structure and any bytes after it must be zero.
pub fn parse_modify_srq_cmd(inbuf: &[u8]) -> Result<u64, UdataError> {
    let cmd = ModifySrqCmd::new(inbuf).ok_or(UdataError::TooShort)?;
    let trailer = inbuf.get(ModifySrqCmd::LEN..).unwrap_or(&[]);
    if trailer.iter().any(|&b| b != 0) {
        return Err(UdataError::NonZeroTrailer);
    }
    Ok(cmd.mmap_info_addr())
}

// ---------------------------------------------------------------------------------------------
// Queue geometry.
// ---------------------------------------------------------------------------------------------

/// Errors of the queue geometry and index protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// The requested number of entries cannot be represented (more than 2^31 - 1).
    TooManyEntries,
    /// The element size or the resulting buffer size overflows.
    SizeOverflow,
    /// The header values do not describe a valid geometry.
    BadGeometry,
    /// An index read from the shared page is larger than the index mask. The C driver masks
    /// such values silently (and `__req_next_wqe`/`req_retry` compare the *unmasked* SQ
    /// producer with a masked index, so the requester walks the ring forever).
    IndexOutOfRange {
        /// The raw value read from the shared page.
        value: u32,
        /// The queue's index mask.
        mask: u32,
    },
    /// The SQ producer index moved backwards over WQEs the kernel already started: userspace
    /// retracted published work. The C driver then re-executes in-flight and completed slots.
    ProducerRetreated,
    /// The queue is full (for the CQ: overflow, `IB_EVENT_CQ_ERR`).
    Full,
    /// The queue holds no element to consume.
    Empty,
    /// [`SendQueueState::complete_oldest`] was called with nothing in flight.
    NothingInFlight,
    /// A resize target cannot hold the elements currently queued.
    ResizeTooSmall {
        /// Elements queued.
        count: u32,
        /// Capacity of the new queue.
        capacity: u32,
    },
    /// A [`Reservation`] was committed to a producer whose index has moved.
    StaleReservation,
}

/// Default `cache_line_size()` on x86_64, the minimum element size of `rxe_queue_init()`.
pub const CACHE_LINE_SIZE: usize = 64;

/// Shape of a shared queue buffer: element stride and number of slots.
///
/// # Invariants
///
/// `index_mask + 1` is a power of two no larger than 2^31, `log2_elem_size < usize::BITS`,
/// and [`Self::buf_len`] (header plus all slots) fits in a `u32`, so every slot offset is
/// computable without overflow and `mminfo.size` can describe the whole buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueGeometry {
    log2_elem_size: u32,
    index_mask: u32,
}

impl QueueGeometry {
    /// Computes the geometry exactly as `rxe_queue_init()`: the element size is raised to
    /// `cache_line` and rounded up to a power of two, the slot count is `num_elem + 1` rounded
    /// up to a power of two. The reported capacity ([`Self::capacity`]) is `slots - 1 >=
    /// num_elem`.
    pub fn new(num_elem: u32, elem_size: usize, cache_line: usize) -> Result<Self, QueueError> {
        let slots = num_elem
            .checked_add(1)
            .and_then(u32::checked_next_power_of_two)
            .filter(|&s| s <= 1 << 31)
            .ok_or(QueueError::TooManyEntries)?;
        let elem = elem_size
            .max(cache_line)
            .checked_next_power_of_two()
            .ok_or(QueueError::SizeOverflow)?;
        Self::from_raw(elem.trailing_zeros(), slots.wrapping_sub(1))
    }

    /// Checks raw header values (`log2_elem_size`, `index_mask`).
    pub fn from_raw(log2_elem_size: u32, index_mask: u32) -> Result<Self, QueueError> {
        let slots = index_mask.checked_add(1).ok_or(QueueError::BadGeometry)?;
        if !slots.is_power_of_two() || log2_elem_size >= usize::BITS {
            return Err(QueueError::BadGeometry);
        }
        let geom = Self {
            log2_elem_size,
            index_mask,
        };
        let len = geom.checked_buf_len().ok_or(QueueError::SizeOverflow)?;
        if u32::try_from(len).is_err() {
            return Err(QueueError::SizeOverflow);
        }
        Ok(geom)
    }

    fn checked_buf_len(&self) -> Option<usize> {
        let slots = usize::try_from(self.slots()).ok()?;
        slots
            .checked_shl(self.log2_elem_size)
            .filter(|&d| d >> self.log2_elem_size == slots)
            .and_then(|d| d.checked_add(QUEUE_DATA_OFFSET))
    }

    /// Returns `log2_elem_size`, as written into the buffer header.
    pub fn log2_elem_size(&self) -> u32 {
        self.log2_elem_size
    }

    /// Returns `index_mask`, as written into the buffer header.
    pub fn index_mask(&self) -> u32 {
        self.index_mask
    }

    /// Returns the element stride in bytes.
    pub fn elem_size(&self) -> usize {
        1usize.checked_shl(self.log2_elem_size).unwrap_or(0)
    }

    /// Returns the number of slots (a power of two).
    pub fn slots(&self) -> u32 {
        self.index_mask.wrapping_add(1)
    }

    /// Returns the capacity reported to the user (`slots - 1`: one slot is always empty).
    pub fn capacity(&self) -> u32 {
        self.index_mask
    }

    /// Returns the buffer length: header plus all slots (`q->buf_size`).
    pub fn buf_len(&self) -> usize {
        // Cannot fail by the type invariant.
        self.checked_buf_len().unwrap_or(usize::MAX)
    }

    /// Returns the `mminfo.size` for this buffer: [`Self::buf_len`] rounded up to `page_size`
    /// (a power of two), or `None` if that does not fit in the `u32` field.
    pub fn mmap_len(&self, page_size: usize) -> Option<u32> {
        if !page_size.is_power_of_two() {
            return None;
        }
        let mask = page_size.wrapping_sub(1);
        let len = self.buf_len().checked_add(mask)? & !mask;
        u32::try_from(len).ok()
    }

    /// Returns the header values the kernel writes once at creation.
    pub fn header(&self) -> QueueBufHeaderFields {
        QueueBufHeaderFields {
            log2_elem_size: self.log2_elem_size,
            index_mask: self.index_mask,
            ..QueueBufHeaderFields::default()
        }
    }

    /// Checks an index read from the shared page.
    pub fn check_index(&self, raw: u32) -> Result<u32, QueueError> {
        if raw > self.index_mask {
            Err(QueueError::IndexOutOfRange {
                value: raw,
                mask: self.index_mask,
            })
        } else {
            Ok(raw)
        }
    }

    /// Returns the index following `index` (`(index + 1) & mask`).
    pub fn next(&self, index: u32) -> u32 {
        index.wrapping_add(1) & self.index_mask
    }

    /// Returns the number of elements in `[consumer, producer)` (both masked first).
    pub fn count(&self, producer: u32, consumer: u32) -> u32 {
        producer.wrapping_sub(consumer) & self.index_mask
    }

    /// Returns `true` if the queue is empty.
    pub fn is_empty(&self, producer: u32, consumer: u32) -> bool {
        self.count(producer, consumer) == 0
    }

    /// Returns `true` if the queue is full (`count == capacity`).
    pub fn is_full(&self, producer: u32, consumer: u32) -> bool {
        self.count(producer, consumer) == self.index_mask
    }

    /// Returns the slot of `index` (masked), with its byte offset in the buffer.
    pub fn slot(&self, index: u32) -> Slot {
        let index = index & self.index_mask;
        let rel = usize::try_from(index)
            .ok()
            .and_then(|i| i.checked_shl(self.log2_elem_size))
            .unwrap_or(0);
        Slot {
            index,
            // Within `buf_len` by the type invariant.
            offset: rel.saturating_add(QUEUE_DATA_OFFSET),
            len: self.elem_size(),
        }
    }
}

/// One element slot of a queue buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Masked index.
    pub index: u32,
    /// Byte offset from the start of the buffer (header included).
    pub offset: usize,
    /// Element stride in bytes.
    pub len: usize,
}

impl Slot {
    /// Returns the slot's bytes in `buf`, the whole queue buffer, or `None` if `buf` is too short.
    pub fn bytes<'a>(&self, buf: &'a [u8]) -> Option<&'a [u8]> {
        buf.get(self.offset..self.offset.checked_add(self.len)?)
    }

    /// Returns the slot's bytes in `buf` for writing, or `None` if `buf` is too short.
    pub fn bytes_mut<'a>(&self, buf: &'a mut [u8]) -> Option<&'a mut [u8]> {
        buf.get_mut(self.offset..self.offset.checked_add(self.len)?)
    }
}

/// The reported send queue capabilities and the element size for them (`rxe_init_sq()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqCaps {
    /// `max_send_sge` to report: the payload area divided by 16.
    pub max_send_sge: u32,
    /// `max_inline_data` to report: the whole payload area.
    pub max_inline_data: u32,
    /// Element size before rounding: 208 + payload area.
    pub wqe_size: usize,
}

/// Computes the send queue element and the capabilities to report, as `rxe_init_sq()`: the
/// payload area is `max(16 * max_send_sge, max_inline_data)`, and both capabilities are
/// raised to what that area holds (librxe sizes its own checks from the reported values).
pub fn sq_caps(max_send_sge: u32, max_inline_data: u32) -> Result<SqCaps, QueueError> {
    let sge_bytes = max_send_sge
        .checked_mul(16)
        .ok_or(QueueError::SizeOverflow)?;
    let payload = sge_bytes.max(max_inline_data);
    let wqe_size = usize::try_from(payload)
        .ok()
        .and_then(|p| p.checked_add(SEND_WQE_DATA_OFFSET))
        .ok_or(QueueError::SizeOverflow)?;
    Ok(SqCaps {
        max_send_sge: payload / 16,
        max_inline_data: payload,
        wqe_size,
    })
}

/// Returns the receive queue or SRQ element size before rounding: `40 + 16 * max_sge`.
pub fn recv_wqe_size(max_sge: u32) -> Result<usize, QueueError> {
    usize::try_from(max_sge)
        .ok()
        .and_then(|n| n.checked_mul(SGE_LEN))
        .and_then(|n| n.checked_add(RECV_WQE_DATA_OFFSET))
        .ok_or(QueueError::SizeOverflow)
}

/// Element size of upstream CQs before rounding: `sizeof(struct rxe_cqe)` on x86_64 (a union
/// of `struct ib_wc` and `struct ib_uverbs_wc`), giving a 128-byte stride. Any stride of at
/// least [`UVERBS_WC_LEN`] works with librxe, which checks only that.
pub const UPSTREAM_CQE_SIZE: usize = 72;

// ---------------------------------------------------------------------------------------------
// Roles and memory ordering.
// ---------------------------------------------------------------------------------------------

/// The four kinds of shared queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    /// Send queue: produced by userspace, consumed by the kernel (`QUEUE_TYPE_FROM_CLIENT`).
    Send,
    /// Receive queue: produced by userspace, consumed by the kernel.
    Recv,
    /// Shared receive queue: produced by userspace, consumed by the kernel.
    SharedRecv,
    /// Completion queue: produced by the kernel, consumed by userspace (`QUEUE_TYPE_TO_CLIENT`).
    Completion,
}

/// Who accesses a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The driver.
    Kernel,
    /// The provider library.
    User,
}

/// One of the two shared indices of a queue buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexField {
    /// `producer_index`, written only by the producer.
    Producer,
    /// `consumer_index`, written only by the consumer.
    Consumer,
}

impl IndexField {
    /// Returns the byte offset of the index in the buffer.
    pub const fn offset(self) -> usize {
        match self {
            Self::Producer => PRODUCER_INDEX_OFFSET,
            Self::Consumer => CONSUMER_INDEX_OFFSET,
        }
    }
}

/// A shared-index access and the memory ordering it needs.
///
/// The kernel never reads its *own* index back from the shared page (userspace could have
/// changed it); it keeps a private copy and only stores it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexAccess {
    /// Load the peer's index with acquire ordering (`smp_load_acquire`, or
    /// `Atomic::<u32>::from_ptr(p).load(Acquire)`) *before* touching the elements it covers.
    LoadAcquire(IndexField),
    /// Store the own index with release ordering (`smp_store_release`, or
    /// `.store(v, Release)`) *after* finishing with the elements it releases.
    StoreRelease(IndexField),
}

impl QueueKind {
    /// Returns the side that writes elements and `producer_index`.
    pub const fn producer(self) -> Side {
        match self {
            Self::Completion => Side::Kernel,
            _ => Side::User,
        }
    }

    /// Returns the side that reads elements and writes `consumer_index`.
    pub const fn consumer(self) -> Side {
        match self {
            Self::Completion => Side::User,
            _ => Side::Kernel,
        }
    }

    /// Returns the index `side` owns (writes); the other one it only reads.
    pub const fn owned_index(self, side: Side) -> IndexField {
        match (self.producer(), side) {
            (Side::Kernel, Side::Kernel) | (Side::User, Side::User) => IndexField::Producer,
            _ => IndexField::Consumer,
        }
    }

    /// Returns the accesses `side` performs per batch of elements, in program order: first
    /// the acquire load of the peer's index, then the release store of its own.
    ///
    /// | queue | kernel | librxe |
    /// |---|---|---|
    /// | SQ, RQ, SRQ | load-acquire producer, store-release consumer | load-acquire consumer (full check), store-release producer |
    /// | CQ | load-acquire consumer (full check), store-release producer | load-acquire producer, store-release consumer |
    pub const fn accesses(self, side: Side) -> [IndexAccess; 2] {
        match self.owned_index(side) {
            IndexField::Producer => [
                IndexAccess::LoadAcquire(IndexField::Consumer),
                IndexAccess::StoreRelease(IndexField::Producer),
            ],
            IndexField::Consumer => [
                IndexAccess::LoadAcquire(IndexField::Producer),
                IndexAccess::StoreRelease(IndexField::Consumer),
            ],
        }
    }
}

/// A value the kernel must publish in the shared page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Publish {
    /// The access to perform: always [`IndexAccess::StoreRelease`].
    pub access: IndexAccess,
    /// The (masked) index value to store.
    pub value: u32,
}

impl Publish {
    fn release(field: IndexField, value: u32) -> Self {
        Self {
            access: IndexAccess::StoreRelease(field),
            value,
        }
    }

    /// Returns the byte offset of the index to store in the buffer.
    pub fn offset(&self) -> usize {
        match self.access {
            IndexAccess::LoadAcquire(f) | IndexAccess::StoreRelease(f) => f.offset(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Kernel-side index state.
// ---------------------------------------------------------------------------------------------

/// Kernel consumer of a user-produced RQ or SRQ (`QUEUE_TYPE_FROM_CLIENT`).
///
/// Every method taking `producer_acquired` expects the raw `producer_index` loaded from the
/// shared page with [`IndexAccess::LoadAcquire`] (before reading the elements), and every
/// returned [`Publish`] must be stored with release ordering after the element was copied out.
///
/// # Invariants
///
/// `consumer <= geom.index_mask()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelConsumer {
    geom: QueueGeometry,
    consumer: u32,
}

impl KernelConsumer {
    /// The shared-index accesses of this role, in order.
    pub const ACCESSES: [IndexAccess; 2] = QueueKind::Recv.accesses(Side::Kernel);

    /// Creates the consumer of an empty, newly created queue.
    pub fn new(geom: QueueGeometry) -> Self {
        Self { geom, consumer: 0 }
    }

    /// Creates a consumer resuming at `consumer` (after a resize), masked.
    pub fn with_index(geom: QueueGeometry, consumer: u32) -> Self {
        Self {
            geom,
            consumer: consumer & geom.index_mask(),
        }
    }

    /// Returns the geometry.
    pub fn geometry(&self) -> QueueGeometry {
        self.geom
    }

    /// Returns the kernel's private consumer index.
    pub fn consumer(&self) -> u32 {
        self.consumer
    }

    /// Returns the number of posted elements.
    pub fn count(&self, producer_acquired: u32) -> Result<u32, QueueError> {
        let prod = self.geom.check_index(producer_acquired)?;
        Ok(self.geom.count(prod, self.consumer))
    }

    /// Returns the oldest posted element, or `None` if the queue is empty.
    pub fn head(&self, producer_acquired: u32) -> Result<Option<Slot>, QueueError> {
        Ok((self.count(producer_acquired)? != 0).then(|| self.geom.slot(self.consumer)))
    }

    /// Retires the head element; returns the consumer index to publish.
    pub fn advance(&mut self, producer_acquired: u32) -> Result<Publish, QueueError> {
        if self.count(producer_acquired)? == 0 {
            return Err(QueueError::Empty);
        }
        self.consumer = self.geom.next(self.consumer);
        Ok(Publish::release(IndexField::Consumer, self.consumer))
    }

    /// Discards every posted element (QP reset); returns the consumer index to publish.
    pub fn drain(&mut self, producer_acquired: u32) -> Result<Publish, QueueError> {
        self.consumer = self.geom.check_index(producer_acquired)?;
        Ok(Publish::release(IndexField::Consumer, self.consumer))
    }
}

/// Kernel side of a send queue: the consumer index plus the requester's cursor.
///
/// Slots in `[consumer, next)` are in flight (started, not completed); slots in
/// `[next, producer)` are posted but not started. `consumer_index` is only advanced when a
/// WQE completes, so librxe cannot overwrite in-flight slots.
///
/// # Invariants
///
/// `consumer` and `next` are at most `geom.index_mask()`, and `next` is at most
/// `geom.capacity()` slots ahead of `consumer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendQueueState {
    geom: QueueGeometry,
    consumer: u32,
    next: u32,
}

impl SendQueueState {
    /// The shared-index accesses of this role, in order.
    pub const ACCESSES: [IndexAccess; 2] = QueueKind::Send.accesses(Side::Kernel);

    /// Creates the state of an empty, newly created send queue.
    pub fn new(geom: QueueGeometry) -> Self {
        Self {
            geom,
            consumer: 0,
            next: 0,
        }
    }

    /// Returns the geometry.
    pub fn geometry(&self) -> QueueGeometry {
        self.geom
    }

    /// Returns the kernel's private consumer index.
    pub fn consumer(&self) -> u32 {
        self.consumer
    }

    /// Returns the index of the next WQE to start.
    pub fn next_index(&self) -> u32 {
        self.next
    }

    /// Returns the number of started, not yet completed WQEs.
    pub fn in_flight(&self) -> u32 {
        self.geom.count(self.next, self.consumer)
    }

    /// Checks `producer_acquired` and returns the number of posted WQEs not yet started.
    ///
    /// The producer must lie in `[next, consumer + capacity]`: a value beyond the mask or one
    /// that moved back over started WQEs is rejected (the QP should go to the error state).
    pub fn pending(&self, producer_acquired: u32) -> Result<u32, QueueError> {
        let prod = self.geom.check_index(producer_acquired)?;
        let posted = self.geom.count(prod, self.consumer);
        posted
            .checked_sub(self.in_flight())
            .ok_or(QueueError::ProducerRetreated)
    }

    /// Returns the next WQE to start, or `None` if every posted WQE was started.
    pub fn next_to_start(&self, producer_acquired: u32) -> Result<Option<Slot>, QueueError> {
        Ok((self.pending(producer_acquired)? != 0).then(|| self.geom.slot(self.next)))
    }

    /// Marks the WQE returned by [`Self::next_to_start`] as started (its last packet was sent,
    /// or it is a local operation).
    pub fn mark_started(&mut self, producer_acquired: u32) -> Result<(), QueueError> {
        if self.pending(producer_acquired)? == 0 {
            return Err(QueueError::Empty);
        }
        self.next = self.geom.next(self.next);
        Ok(())
    }

    /// Returns the oldest in-flight WQE, or `None`.
    pub fn oldest_in_flight(&self) -> Option<Slot> {
        (self.in_flight() != 0).then(|| self.geom.slot(self.consumer))
    }

    /// Completes the oldest in-flight WQE (its CQE was posted or suppressed); returns the
    /// consumer index to publish.
    pub fn complete_oldest(&mut self) -> Result<Publish, QueueError> {
        if self.in_flight() == 0 {
            return Err(QueueError::NothingInFlight);
        }
        self.consumer = self.geom.next(self.consumer);
        Ok(Publish::release(IndexField::Consumer, self.consumer))
    }

    /// Rewinds the cursor to the oldest in-flight WQE (retry after a NAK or timeout).
    pub fn rewind(&mut self) {
        self.next = self.consumer;
    }

    /// Discards every posted WQE without completions (transition to RESET); returns the
    /// consumer index to publish.
    pub fn drain(&mut self, producer_acquired: u32) -> Result<Publish, QueueError> {
        let prod = self.geom.check_index(producer_acquired)?;
        self.consumer = prod;
        self.next = prod;
        Ok(Publish::release(IndexField::Consumer, prod))
    }
}

/// Kernel producer of a completion queue (`QUEUE_TYPE_TO_CLIENT`).
///
/// [`Self::reserve`] expects the raw `consumer_index` loaded with [`IndexAccess::LoadAcquire`]
/// (so the slot is not overwritten before userspace has read it); the [`Publish`] returned by
/// [`Self::commit`] must be stored with release ordering after the CQE was written.
///
/// # Invariants
///
/// `producer <= geom.index_mask()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelProducer {
    geom: QueueGeometry,
    producer: u32,
}

/// A CQ slot reserved by [`KernelProducer::reserve`], to be passed to [`KernelProducer::commit`].
#[derive(Debug, PartialEq, Eq)]
pub struct Reservation {
    slot: Slot,
}

impl Reservation {
    /// Returns the slot to write the completion into.
    pub fn slot(&self) -> Slot {
        self.slot
    }
}

impl KernelProducer {
    /// The shared-index accesses of this role, in order.
    pub const ACCESSES: [IndexAccess; 2] = QueueKind::Completion.accesses(Side::Kernel);

    /// Creates the producer of an empty, newly created queue.
    pub fn new(geom: QueueGeometry) -> Self {
        Self { geom, producer: 0 }
    }

    /// Creates a producer resuming at `producer` (after a resize), masked.
    pub fn with_index(geom: QueueGeometry, producer: u32) -> Self {
        Self {
            geom,
            producer: producer & geom.index_mask(),
        }
    }

    /// Returns the geometry.
    pub fn geometry(&self) -> QueueGeometry {
        self.geom
    }

    /// Returns the kernel's private producer index.
    pub fn producer(&self) -> u32 {
        self.producer
    }

    /// Returns the number of unread completions as userspace's consumer index claims.
    pub fn count(&self, consumer_acquired: u32) -> Result<u32, QueueError> {
        let cons = self.geom.check_index(consumer_acquired)?;
        Ok(self.geom.count(self.producer, cons))
    }

    /// Reserves the next slot, or fails with [`QueueError::Full`] (CQ overflow: upstream
    /// raises `IB_EVENT_CQ_ERR`, moves the QP to error for a receive completion and drops a
    /// send completion).
    ///
    /// A consumer index above the mask is rejected; upstream masks it. Any masked value is a
    /// possible state, including the `producer + 1` that rdma-core 44's `ibv_end_poll()` stores
    /// after an empty poll, which reads as full, as upstream.
    pub fn reserve(&self, consumer_acquired: u32) -> Result<Reservation, QueueError> {
        let cons = self.geom.check_index(consumer_acquired)?;
        if self.geom.is_full(self.producer, cons) {
            return Err(QueueError::Full);
        }
        Ok(Reservation {
            slot: self.geom.slot(self.producer),
        })
    }

    /// Publishes a written completion; returns the producer index to store with release.
    pub fn commit(&mut self, reservation: Reservation) -> Result<Publish, QueueError> {
        if reservation.slot.index != self.producer {
            return Err(QueueError::StaleReservation);
        }
        self.producer = self.geom.next(self.producer);
        Ok(Publish::release(IndexField::Producer, self.producer))
    }
}

/// How to move the queued elements into a resized buffer (`resize_finish()`).
///
/// # Invariants
///
/// `count <= old.capacity()` and `count <= new.capacity()`; `consumer <= old.index_mask()`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResizePlan {
    old: QueueGeometry,
    new: QueueGeometry,
    consumer: u32,
    count: u32,
}

impl ResizePlan {
    /// Plans copying `[consumer, producer)` of `old` to slots `0..count` of `new`.
    ///
    /// `consumer` and `producer` are the current indices; the user-owned one must have been
    /// loaded with acquire ordering while holding the queue's locks.
    pub fn new(
        old: QueueGeometry,
        new: QueueGeometry,
        producer: u32,
        consumer: u32,
    ) -> Result<Self, QueueError> {
        let prod = old.check_index(producer)?;
        let cons = old.check_index(consumer)?;
        let count = old.count(prod, cons);
        if count > new.capacity() {
            return Err(QueueError::ResizeTooSmall {
                count,
                capacity: new.capacity(),
            });
        }
        Ok(Self {
            old,
            new,
            consumer: cons,
            count,
        })
    }

    /// Returns the number of elements to copy.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Returns the bytes to copy per element: the smaller of the two strides.
    pub fn copy_len(&self) -> usize {
        self.old.elem_size().min(self.new.elem_size())
    }

    /// Returns the new buffer's producer index.
    pub fn new_producer(&self) -> u32 {
        self.count
    }

    /// Returns the new buffer's consumer index.
    pub fn new_consumer(&self) -> u32 {
        0
    }

    /// Returns the `(old slot, new slot)` pairs to copy, oldest first.
    pub fn copies(&self) -> impl Iterator<Item = (Slot, Slot)> + '_ {
        (0..self.count).map(move |i| {
            (
                self.old.slot(self.consumer.wrapping_add(i)),
                self.new.slot(i),
            )
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Work-request opcodes and flags.
// ---------------------------------------------------------------------------------------------

/// A work-request opcode accepted from a user send WQE (`IB_UVERBS_WR_*` = `IBV_WR_*` =
/// `IB_WR_*`).
///
/// Not representable, hence always rejected: `IB_WR_LSO`/TSO (10), `RDMA_READ_WITH_INV` (11,
/// which upstream lists for RC but cannot turn into a packet), the masked atomics (12, 13),
/// and the kernel-only [`Self::KERNEL_REG_MR`] and `IB_WR_RESERVED*` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum WrOpcode {
    /// RDMA WRITE.
    RdmaWrite = 0,
    /// RDMA WRITE with immediate.
    RdmaWriteWithImm = 1,
    /// SEND.
    Send = 2,
    /// SEND with immediate.
    SendWithImm = 3,
    /// RDMA READ.
    RdmaRead = 4,
    /// Atomic compare & swap.
    AtomicCmpAndSwp = 5,
    /// Atomic fetch & add.
    AtomicFetchAndAdd = 6,
    /// Local invalidate (local operation).
    LocalInv = 7,
    /// Memory window bind (local operation).
    BindMw = 8,
    /// SEND with invalidate.
    SendWithInv = 9,
    /// FLUSH (rdma-core 45 and later).
    Flush = 14,
    /// ATOMIC WRITE.
    AtomicWrite = 15,
}

impl WrOpcode {
    /// `IB_WR_REG_MR`: kernel-only. Upstream accepts it from user WQEs and then dereferences a
    /// `struct ib_mr *` read from the user-writable slot (`rxe_reg_fast_mr()`).
    pub const KERNEL_REG_MR: u32 = 0x20;

    /// Every accepted opcode.
    pub const ALL: [Self; 12] = [
        Self::RdmaWrite,
        Self::RdmaWriteWithImm,
        Self::Send,
        Self::SendWithImm,
        Self::RdmaRead,
        Self::AtomicCmpAndSwp,
        Self::AtomicFetchAndAdd,
        Self::LocalInv,
        Self::BindMw,
        Self::SendWithInv,
        Self::Flush,
        Self::AtomicWrite,
    ];

    /// Decodes a raw opcode, or `None` for anything a user WQE may not carry.
    pub const fn from_raw(raw: u32) -> Option<Self> {
        Some(match raw {
            0 => Self::RdmaWrite,
            1 => Self::RdmaWriteWithImm,
            2 => Self::Send,
            3 => Self::SendWithImm,
            4 => Self::RdmaRead,
            5 => Self::AtomicCmpAndSwp,
            6 => Self::AtomicFetchAndAdd,
            7 => Self::LocalInv,
            8 => Self::BindMw,
            9 => Self::SendWithInv,
            14 => Self::Flush,
            15 => Self::AtomicWrite,
            _ => return None,
        })
    }

    /// Returns the raw value.
    pub const fn raw(self) -> u32 {
        self as u32
    }

    /// Returns the packet operation, or `None` for the local operations.
    pub const fn packet_op(self) -> Option<Op> {
        Some(match self {
            Self::RdmaWrite | Self::RdmaWriteWithImm => Op::Write,
            Self::Send | Self::SendWithImm | Self::SendWithInv => Op::Send,
            Self::RdmaRead => Op::ReadRequest,
            Self::AtomicCmpAndSwp => Op::CompareSwap,
            Self::AtomicFetchAndAdd => Op::FetchAdd,
            Self::Flush => Op::Flush,
            Self::AtomicWrite => Op::AtomicWrite,
            Self::LocalInv | Self::BindMw => return None,
        })
    }

    /// Returns `true` if the last packet carries immediate data.
    pub const fn has_imm(self) -> bool {
        matches!(self, Self::RdmaWriteWithImm | Self::SendWithImm)
    }

    /// Returns `true` if the last packet carries an rkey to invalidate.
    pub const fn has_invalidate(self) -> bool {
        matches!(self, Self::SendWithInv)
    }

    /// Returns `true` if `IB_SEND_INLINE` is meaningful (upstream `WR_INLINE_MASK`).
    pub const fn inline_allowed(self) -> bool {
        matches!(
            self,
            Self::RdmaWrite
                | Self::RdmaWriteWithImm
                | Self::Send
                | Self::SendWithImm
                | Self::SendWithInv
        )
    }

    /// Returns `true` if the local payload is described by SGEs (or inline data).
    pub const fn has_local_data(self) -> bool {
        matches!(
            self,
            Self::RdmaWrite
                | Self::RdmaWriteWithImm
                | Self::Send
                | Self::SendWithImm
                | Self::SendWithInv
                | Self::RdmaRead
                | Self::AtomicCmpAndSwp
                | Self::AtomicFetchAndAdd
        )
    }

    /// Returns the packet opcode for a packet at `position` of this work request on a `qp`
    /// QP, looked up in the opcode table, or `None` if there is no such packet.
    ///
    /// Immediate data and IETH travel on the last (or only) packet only, as in
    /// `next_opcode_rc()`/`next_opcode_uc()`.
    pub fn packet_opcode(self, qp: QpType, position: Position) -> Option<Opcode> {
        let op = self.packet_op()?;
        let last = matches!(position, Position::Last | Position::Only);
        let imm = last && self.has_imm();
        let inv = last && self.has_invalidate();
        OPCODE_TABLE
            .iter()
            .find(|r| {
                r.supported()
                    && r.allowed_on(qp)
                    && r.op == op
                    && r.position == position
                    && r.immediate() == imm
                    && r.invalidate() == inv
            })
            .map(|r| r.opcode)
    }

    /// Returns the opcode of the first packet: `Only` if the message fits in one packet,
    /// `First` otherwise (UD messages are always `Only`).
    pub fn first_packet_opcode(self, qp: QpType, fits: bool) -> Option<Opcode> {
        let position = if fits || qp == QpType::Ud {
            Position::Only
        } else {
            Position::First
        };
        self.packet_opcode(qp, position)
    }

    /// Returns `true` if a `qp` QP may post this opcode.
    ///
    /// This is the effective matrix of upstream rxe (`rxe_wr_opcode_info[]` combined with
    /// `next_opcode()`): RC all opcodes; UC WRITE, WRITE_IMM, SEND, SEND_IMM, BIND_MW; UD SEND,
    /// SEND_IMM; RD nothing. (Upstream's table lists SEND_WITH_INV for UC and UD, but no such
    /// packet exists, so it fails in the requester with `IB_WC_LOC_QP_OP_ERR`.)
    pub fn allowed_on(self, qp: QpType) -> bool {
        match self {
            Self::LocalInv => qp == QpType::Rc,
            Self::BindMw => matches!(qp, QpType::Rc | QpType::Uc),
            _ => self.packet_opcode(qp, Position::Only).is_some(),
        }
    }

    /// Returns the completion opcode of a successful send completion (`wr_to_wc_opcode()`).
    pub const fn wc_opcode(self) -> WcOpcode {
        match self {
            Self::RdmaWrite | Self::RdmaWriteWithImm => WcOpcode::RdmaWrite,
            Self::Send | Self::SendWithImm | Self::SendWithInv => WcOpcode::Send,
            Self::RdmaRead => WcOpcode::RdmaRead,
            Self::AtomicCmpAndSwp => WcOpcode::CompSwap,
            Self::AtomicFetchAndAdd => WcOpcode::FetchAdd,
            Self::LocalInv => WcOpcode::LocalInv,
            Self::BindMw => WcOpcode::BindMw,
            Self::Flush => WcOpcode::Flush,
            Self::AtomicWrite => WcOpcode::AtomicWrite,
        }
    }
}

/// `IB_SEND_*` flags of a send WQE (unknown bits are kept and ignored, as upstream).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SendFlags(pub u32);

impl SendFlags {
    /// `IB_SEND_FENCE`.
    pub const FENCE: u32 = 1;
    /// `IB_SEND_SIGNALED`.
    pub const SIGNALED: u32 = 1 << 1;
    /// `IB_SEND_SOLICITED`.
    pub const SOLICITED: u32 = 1 << 2;
    /// `IB_SEND_INLINE`.
    pub const INLINE: u32 = 1 << 3;
    /// `IB_SEND_IP_CSUM`.
    pub const IP_CSUM: u32 = 1 << 4;

    /// Returns `true` if every bit of `bits` is set.
    pub const fn contains(self, bits: u32) -> bool {
        self.0 & bits == bits
    }
}

/// `IB_FLUSH_GLOBAL`.
pub const FLUSH_GLOBAL: u8 = 1;
/// `IB_FLUSH_PERSISTENT`.
pub const FLUSH_PERSISTENT: u8 = 2;
/// `IB_FLUSH_RANGE`.
pub const FLUSH_RANGE: u8 = 0;
/// `IB_FLUSH_MR`.
pub const FLUSH_MR: u8 = 1;

/// `RXE_PORT_MAX_MSG_SZ`: the largest message rxe reports (`max_msg_sz`).
pub const MAX_MSG_SIZE: u32 = 1 << 31;

// ---------------------------------------------------------------------------------------------
// Completions.
// ---------------------------------------------------------------------------------------------

/// Completion status (`enum ib_wc_status` = `IBV_WC_*`).
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
    /// `IB_WC_LOC_EEC_OP_ERR`.
    LocEecOpErr = 3,
    /// `IB_WC_LOC_PROT_ERR`.
    LocProtErr = 4,
    /// `IB_WC_WR_FLUSH_ERR`.
    WrFlushErr = 5,
    /// `IB_WC_MW_BIND_ERR`.
    MwBindErr = 6,
    /// `IB_WC_BAD_RESP_ERR`.
    BadRespErr = 7,
    /// `IB_WC_LOC_ACCESS_ERR`.
    LocAccessErr = 8,
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
    /// `IB_WC_LOC_RDD_VIOL_ERR`.
    LocRddViolErr = 14,
    /// `IB_WC_REM_INV_RD_REQ_ERR`.
    RemInvRdReqErr = 15,
    /// `IB_WC_REM_ABORT_ERR`.
    RemAbortErr = 16,
    /// `IB_WC_INV_EECN_ERR`.
    InvEecnErr = 17,
    /// `IB_WC_INV_EEC_STATE_ERR`.
    InvEecStateErr = 18,
    /// `IB_WC_FATAL_ERR`.
    FatalErr = 19,
    /// `IB_WC_RESP_TIMEOUT_ERR`.
    RespTimeoutErr = 20,
    /// `IB_WC_GENERAL_ERR`.
    GeneralErr = 21,
}

/// Completion opcode (`IB_UVERBS_WC_*` = `IBV_WC_*`).
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
    /// TSO (never produced by rxe).
    Tso = 7,
    /// FLUSH.
    Flush = 8,
    /// ATOMIC WRITE.
    AtomicWrite = 9,
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
    /// [`WrOpcode::wc_opcode`], `byte_len` = message length, `IB_WC_WITH_IMM` for SEND and
    /// WRITE with immediate (without the immediate itself), everything else zero.
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
    pub fn to_fields(&self) -> UverbsWcFields {
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

// ---------------------------------------------------------------------------------------------
// WQE validation.
// ---------------------------------------------------------------------------------------------

/// How `dma.length` must relate to the SGE list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LengthCheck {
    /// `dma.length` must equal the sum of the SGE lengths (else [`WqeError::LengthMismatch`]).
    Strict,
    /// Ignore `dma.length` and use the sum of the SGE lengths. This accepts multi-SGE
    /// `ibv_wr_set_sge_list()` WQEs of rdma-core 44.0/56.0, which sum `sg_list[0].length`
    /// `num_sge` times; upstream trusts `dma.length` for those.
    SgeSum,
}

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
    /// Largest message length (normally [`MAX_MSG_SIZE`]).
    pub max_msg_size: u32,
    /// Relation of `dma.length` and the SGE list.
    pub length_check: LengthCheck,
    /// Accept the embedded [`RxeAv`] of UD WQEs with `ah_num == 0` (legacy providers).
    pub allow_embedded_av: bool,
    /// Size of the port's GID table, to bound `sgid_index` of an embedded AV.
    pub gid_table_len: u32,
}

/// Why a user WQE was rejected.
///
/// For a send WQE the driver completes it with [`WqeError::send_status`] and moves the QP
/// to the error state, like upstream; for a receive WQE with [`WqeError::recv_status`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WqeError {
    /// The slot is shorter than the fixed WQE header (a driver bug).
    SlotTooShort,
    /// Not an opcode a user WQE may carry (including the kernel-only `IB_WR_REG_MR`).
    BadOpcode(u32),
    /// The opcode is not allowed on this QP type.
    OpcodeNotAllowed(WrOpcode),
    /// `num_sge` exceeds the queue's `max_sge`.
    TooManySge {
        /// `dma.num_sge`.
        num_sge: u32,
        /// The queue's limit.
        max_sge: u32,
    },
    /// The SGE list does not fit in the slot.
    SgeOutsideSlot,
    /// The sum of the SGE lengths overflows 32 bits.
    LengthOverflow,
    /// `dma.length` differs from the sum of the SGE lengths.
    LengthMismatch {
        /// `dma.length`.
        claimed: u32,
        /// Sum of the SGE lengths.
        sum: u32,
    },
    /// The message is longer than the device's maximum message size.
    MessageTooLong(u32),
    /// `IB_SEND_INLINE` on an opcode without local send data.
    InlineNotAllowed,
    /// Inline data longer than `max_inline_data`.
    InlineTooLong(u32),
    /// Inline data does not fit in the slot.
    InlineOutsideSlot,
    /// An atomic WQE whose local buffer is shorter than 8 bytes.
    AtomicLength(u32),
    /// An atomic or ATOMIC WRITE remote address that is not 8-byte aligned.
    AtomicMisaligned(u64),
    /// An ATOMIC WRITE whose length is not 8.
    AtomicWriteLength(u32),
    /// A FLUSH with an unknown placement type or selectivity level.
    BadFlush {
        /// `wr.flush.type`.
        placement_type: u8,
        /// `wr.flush.level`.
        level: u8,
    },
    /// A UD destination QPN wider than 24 bits.
    BadRemoteQpn(u32),
    /// A UD WQE with `ah_num == 0` where the embedded AV is not accepted.
    MissingAh,
    /// The embedded UD address vector is invalid.
    BadAv(AvError),
}

impl WqeError {
    /// Returns the completion status for a rejected send WQE: `IB_WC_LOC_LEN_ERR` for length
    /// errors, `IB_WC_LOC_QP_OP_ERR` for every malformed WQE (as upstream's requester).
    pub const fn send_status(self) -> WcStatus {
        match self {
            Self::LengthOverflow
            | Self::LengthMismatch { .. }
            | Self::MessageTooLong(_)
            | Self::InlineTooLong(_)
            | Self::AtomicLength(_)
            | Self::AtomicWriteLength(_) => WcStatus::LocLenErr,
            _ => WcStatus::LocQpOpErr,
        }
    }

    /// Returns the completion status for a rejected receive WQE: `IB_WC_LOC_QP_OP_ERR`, as
    /// upstream's `RESPST_ERR_MALFORMED_WQE` (which also NAKs an RC request with REM_OP_ERR).
    pub const fn recv_status(self) -> WcStatus {
        WcStatus::LocQpOpErr
    }
}

/// Why an embedded address vector was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AvError {
    /// `port_num` is not 1 (rxe has one port).
    BadPort(u8),
    /// `network_type` is neither IPv4 nor IPv6. Upstream then sizes the skb headroom for IPv6
    /// and finds no route; it reads the AV in place, so the type can also change between
    /// sizing and building the packet.
    BadNetworkType(u8),
    /// `network_type` disagrees with the destination GID (IPv4-mapped or not).
    GidTypeMismatch,
    /// The destination IP in `dgid_addr` differs from the destination GID.
    AddrMismatch,
    /// `sgid_index` is outside the GID table.
    BadSgidIndex(u8),
    /// The flow label is wider than 20 bits.
    BadFlowLabel(u32),
}

/// A validated UD address vector from a legacy WQE.
///
/// # Invariants
///
/// `network_type` matches the type of `dgid`, the `dgid_addr` IP equals the GID's, the flow
/// label fits in 20 bits and `sgid_index` is inside the GID table it was checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidAv {
    fields: RxeAvFields,
}

impl ValidAv {
    /// Returns the raw fields (the source address should come from the GID table instead).
    pub fn fields(&self) -> &RxeAvFields {
        &self.fields
    }

    /// Returns `true` for an IPv4 (RoCEv2 over IPv4) destination.
    pub fn is_ipv4(&self) -> bool {
        self.fields.network_type == NETWORK_TYPE_IPV4
    }

    /// Returns the destination GID.
    pub fn dgid(&self) -> [u8; 16] {
        self.fields.grh.dgid
    }
}

/// Returns `true` if `gid` is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
pub fn gid_is_v4_mapped(gid: &[u8; 16]) -> bool {
    matches!(gid, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ..])
}

/// Validates an embedded `struct rxe_av` (see [`AvError`]).
///
/// The provider sets `network_type` from the destination GID and fills `dgid_addr` from it
/// (a `sockaddr_in` whose `sin_family` it leaves 0, or a `sockaddr_in6`), so the address bytes
/// are compared, not the family.
pub fn validate_av(av: &RxeAvFields, gid_table_len: u32) -> Result<ValidAv, AvError> {
    if av.port_num != 1 {
        return Err(AvError::BadPort(av.port_num));
    }
    let v4 = match av.network_type {
        NETWORK_TYPE_IPV4 => true,
        NETWORK_TYPE_IPV6 => false,
        t => return Err(AvError::BadNetworkType(t)),
    };
    let dgid = &av.grh.dgid;
    if gid_is_v4_mapped(dgid) != v4 {
        return Err(AvError::GidTypeMismatch);
    }
    let ok = if v4 {
        // sockaddr_in: sin_addr at offset 4; GID low 4 bytes.
        av.dgid_addr.get(4..8) == dgid.get(12..16)
    } else {
        // sockaddr_in6: sin6_addr at offset 8.
        av.dgid_addr.get(8..24) == Some(dgid.as_slice())
    };
    if !ok {
        return Err(AvError::AddrMismatch);
    }
    if u32::from(av.grh.sgid_index) >= gid_table_len {
        return Err(AvError::BadSgidIndex(av.grh.sgid_index));
    }
    if av.grh.flow_label > 0xf_ffff {
        return Err(AvError::BadFlowLabel(av.grh.flow_label));
    }
    Ok(ValidAv { fields: *av })
}

/// A list of SGEs inside a validated WQE.
///
/// # Invariants
///
/// `bytes.len()` is a multiple of [`SGE_LEN`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgeList<'a> {
    bytes: &'a [u8],
}

impl<'a> SgeList<'a> {
    /// Returns the number of SGEs.
    pub fn len(&self) -> usize {
        self.bytes.len() / SGE_LEN
    }

    /// Returns `true` if there is no SGE.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Returns the raw bytes of the list.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Returns SGE `i`, if present.
    pub fn get(&self, i: usize) -> Option<RxeSgeFields> {
        let off = i.checked_mul(SGE_LEN)?;
        RxeSge::new(self.bytes.get(off..)?).map(|s| s.fields())
    }

    /// Iterates over the SGEs.
    pub fn iter(&self) -> impl Iterator<Item = RxeSgeFields> + 'a {
        self.bytes
            .chunks_exact(SGE_LEN)
            .filter_map(|c| RxeSge::new(c).map(|s| s.fields()))
    }

    /// Returns the sum of the SGE lengths, or `None` if it overflows 32 bits.
    pub fn total_len(&self) -> Option<u32> {
        self.iter()
            .try_fold(0u32, |acc, s| acc.checked_add(s.length))
    }

    /// Returns the pieces of the byte range `[offset, offset + len)` of the list, one for each
    /// SGE the range touches, in order.
    ///
    /// The pieces stop early if the list is shorter than `offset + len`; see
    /// [`SgePieces::is_complete`]. Zero-length SGEs yield no piece, and an empty range none
    /// at all (whatever `offset` is).
    pub fn pieces(&self, offset: u32, len: usize) -> SgePieces<'a> {
        SgePieces {
            sges: self.bytes.chunks_exact(SGE_LEN),
            offset,
            pos: 0,
            len,
        }
    }

    /// Calls `f` for each piece of the byte range `[offset, offset + len)` of the list, in
    /// order (see [`Self::pieces`]).
    ///
    /// Fails with [`SgeWalkError::Callback`] as soon as `f` fails, and with
    /// [`SgeWalkError::TooShort`] if the list is shorter than `offset + len` (once `f` has
    /// been called for the pieces the list does hold). An empty range always succeeds.
    pub fn walk<E>(
        &self,
        offset: u32,
        len: usize,
        mut f: impl FnMut(SgePiece) -> Result<(), E>,
    ) -> Result<(), SgeWalkError<E>> {
        let mut pieces = self.pieces(offset, len);
        for p in pieces.by_ref() {
            f(p).map_err(SgeWalkError::Callback)?;
        }
        if pieces.is_complete() {
            Ok(())
        } else {
            Err(SgeWalkError::TooShort)
        }
    }
}

/// The part of a byte range of an [`SgeList`] that lies in one SGE (never empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SgePiece {
    /// Address of the piece's first byte: the SGE's address plus the piece's offset inside
    /// the SGE (wrapping, unchecked: the lkey check bounds it).
    pub addr: u64,
    /// The SGE's local key.
    pub lkey: u32,
    /// Where the piece lies in a buffer holding the range: a part of `0..len`.
    pub range: Range<usize>,
}

/// Why [`SgeList::walk`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SgeWalkError<E> {
    /// The list ends before the end of the range.
    TooShort,
    /// The callback failed with this error.
    Callback(E),
}

/// The pieces of a byte range of an [`SgeList`], in order: see [`SgeList::pieces`].
///
/// # Invariants
///
/// `pos <= len`: the pieces returned so far cover `0..pos` of the range.
#[derive(Clone, Debug)]
pub struct SgePieces<'a> {
    /// The SGEs not looked at yet.
    sges: core::slice::ChunksExact<'a, u8>,
    /// Bytes still to skip before the range starts.
    offset: u32,
    /// Bytes of the range covered so far.
    pos: usize,
    /// Length of the range.
    len: usize,
}

impl SgePieces<'_> {
    /// Returns `true` if the pieces returned so far cover the whole range (always, for an
    /// empty range). Once the iterator returned `None`, `false` means the list is shorter than
    /// `offset + len`.
    pub fn is_complete(&self) -> bool {
        self.pos >= self.len
    }
}

impl Iterator for SgePieces<'_> {
    type Item = SgePiece;

    fn next(&mut self) -> Option<SgePiece> {
        while self.pos < self.len {
            let Some(sge) = RxeSge::new(self.sges.next()?).map(|s| s.fields()) else {
                continue;
            };
            if self.offset >= sge.length {
                // No underflow: `offset >= length`.
                self.offset = self.offset.wrapping_sub(sge.length);
                continue;
            }
            // What the SGE holds after `offset` (not empty); a length that does not fit in
            // `usize` is more than the rest of the range anyway.
            let avail = usize::try_from(sge.length.wrapping_sub(self.offset)).unwrap_or(usize::MAX);
            // No overflow: `pos < len`, and `n <= len - pos`.
            let n = avail.min(self.len.wrapping_sub(self.pos));
            let start = self.pos;
            self.pos = start.wrapping_add(n);
            let addr = sge.addr.wrapping_add(u64::from(self.offset));
            self.offset = 0;
            return Some(SgePiece {
                addr,
                lkey: sge.lkey,
                range: start..self.pos,
            });
        }
        None
    }
}

impl core::iter::FusedIterator for SgePieces<'_> {}

/// Parses `num_sge` SGEs at the start of `data`, checking the limits.
fn sge_list(data: &[u8], num_sge: u32, max_sge: u32) -> Result<SgeList<'_>, WqeError> {
    if num_sge > max_sge {
        return Err(WqeError::TooManySge { num_sge, max_sge });
    }
    let len = usize::try_from(num_sge)
        .ok()
        .and_then(|n| n.checked_mul(SGE_LEN))
        .ok_or(WqeError::SgeOutsideSlot)?;
    let bytes = data.get(..len).ok_or(WqeError::SgeOutsideSlot)?;
    Ok(SgeList { bytes })
}

/// Checks an SGE list against `dma.length`; returns the message length.
fn sge_length(
    sges: &SgeList<'_>,
    claimed: u32,
    check: LengthCheck,
    max_msg_size: u32,
) -> Result<u32, WqeError> {
    let sum = sges.total_len().ok_or(WqeError::LengthOverflow)?;
    if check == LengthCheck::Strict && claimed != sum {
        return Err(WqeError::LengthMismatch { claimed, sum });
    }
    if sum > max_msg_size {
        return Err(WqeError::MessageTooLong(sum));
    }
    Ok(sum)
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
    let opcode = WrOpcode::from_raw(wr.opcode).ok_or(WqeError::BadOpcode(wr.opcode))?;
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

/// Receive queue or SRQ parameters for [`validate_recv_wqe`], from private state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvQueueParams {
    /// The queue's `max_sge` (RQ: reported `max_recv_sge`; SRQ: its `max_sge`).
    pub max_sge: u32,
    /// Largest message length (normally [`MAX_MSG_SIZE`]).
    pub max_msg_size: u32,
    /// Relation of `dma.length` and the SGE list.
    pub length_check: LengthCheck,
}

/// A receive WQE that passed [`validate_recv_wqe`].
///
/// # Invariants
///
/// `sges.len() <= max_sge`, the list lies inside the slot, and the sum of its lengths equals
/// `length` without overflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvWqe<'a> {
    wr_id: u64,
    length: u32,
    sges: SgeList<'a>,
}

impl<'a> RecvWqe<'a> {
    /// Returns the work request id.
    pub fn wr_id(&self) -> u64 {
        self.wr_id
    }

    /// Returns the buffer length (sum of the SGE lengths).
    pub fn length(&self) -> u32 {
        self.length
    }

    /// Returns the scatter list.
    pub fn sges(&self) -> SgeList<'a> {
        self.sges
    }
}

/// Validates a receive WQE copied out of a user-owned RQ or SRQ slot.
///
/// Upstream checks `num_sge` only, copies `40 + 16 * num_sge` bytes and then trusts
/// `dma.length`/`dma.resid` (the responder's length check and `byte_len` use them). librxe
/// writes `dma.length = Σ sge.length` summed in a signed `int`.
pub fn validate_recv_wqe<'a>(slot: &'a [u8], p: &RecvQueueParams) -> Result<RecvWqe<'a>, WqeError> {
    let hdr = RxeRecvWqe::new(slot).ok_or(WqeError::SlotTooShort)?;
    let dma = hdr.dma();
    let data_area = slot.get(RECV_WQE_DATA_OFFSET..).unwrap_or(&[]);
    let sges = sge_list(data_area, dma.num_sge, p.max_sge)?;
    let length = sge_length(&sges, dma.length, p.length_check, p.max_msg_size)?;
    Ok(RecvWqe {
        wr_id: hdr.wr_id(),
        length,
        sges,
    })
}
