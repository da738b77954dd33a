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
//!
//! The code is split by topic, and every public item is re-exported here: `layout` (the C
//! structures, their sizes and offsets), `queue` (queue geometry, roles and memory ordering),
//! `queue_state` (the kernel's index state per queue role), `wr` (work-request opcodes and
//! flags), `wqe` (send and receive WQE validation), `sge` (SGE lists and their byte-range
//! walk), `av` (embedded address vectors), `wc` (completions) and `udata` (udata helpers).

use super::wire::{chunk, chunk_mut};

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
    fn read(bytes: &[u8], off: usize) -> Self;
    /// Writes the field at byte `off` of `bytes` (dropped if out of range).
    fn write(self, bytes: &mut [u8], off: usize);
}

macro_rules! le_int {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const SIZE: usize = core::mem::size_of::<$t>();
            const ZERO: Self = 0;

            int_read_write!(from_le_bytes, to_le_bytes);
        }
    )*};
}

le_int!(u8, u16, u32, u64);

impl<const N: usize> Le for [u8; N] {
    const SIZE: usize = N;
    const ZERO: Self = [0; N];

    fn read(bytes: &[u8], off: usize) -> Self {
        chunk(bytes, off).copied().unwrap_or([0; N])
    }

    fn write(self, bytes: &mut [u8], off: usize) {
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

/// Declares a C structure of the user ABI (little-endian [`Le`] fields, see `fixed_layout!`
/// in `wire`): a zero-copy view `$view<'a>` over its bytes, a builder `$fields` with one
/// public member per field, the builder's [`Le`] implementation (so that structures nest),
/// its `LAYOUT` and a compile-time check that the fields tile the structure.
macro_rules! le_struct {
    (
        $(#[$vmeta:meta])* $view:ident, $fields:ident, $len:literal {
            $($(#[$fmeta:meta])* $name:ident: $ty:ty = $off:literal,)*
        }
    ) => {
        fixed_layout! {
            Le, "C structure", []
            $(#[$vmeta])* $view, $fields, $len {
                $($(#[$fmeta])* $name: $ty = $off,)*
            }
        }

        impl Default for $fields {
            fn default() -> Self {
                <Self as Le>::ZERO
            }
        }

        impl $fields {
            /// Offset and size of every field, in declaration (and offset) order.
            pub const LAYOUT: &'static [FieldLayout] = &[
                $(FieldLayout { name: stringify!($name), offset: $off, size: <$ty as Le>::SIZE },)*
            ];
        }

        impl Le for $fields {
            const SIZE: usize = $len;
            const ZERO: Self = Self { $($name: <$ty as Le>::ZERO,)* };

            fn read(bytes: &[u8], off: usize) -> Self {
                chunk::<$len>(bytes, off).map_or(Self::ZERO, |b| $view(b).fields())
            }

            fn write(self, bytes: &mut [u8], off: usize) {
                if let Some(out) = chunk_mut::<$len>(bytes, off) {
                    $(<$ty as Le>::write(self.$name, out, $off);)*
                }
            }
        }

        const _: () = assert!(layout_tiles($fields::LAYOUT, $len));
    };
}

// ---------------------------------------------------------------------------------------------
// Submodules. Declared after the macros above, which they use (`macro_rules!` scoping is
// textual).
// ---------------------------------------------------------------------------------------------

mod av;
mod layout;
mod queue;
mod queue_state;
mod sge;
#[cfg(rrxe_host)]
mod udata;
mod wc;
mod wqe;
mod wr;

// Embedded address vectors are validated inside `wqe`; only the host tests name these.
#[cfg(rrxe_host)]
pub use self::av::*;
pub use self::layout::*;
pub use self::queue::*;
pub use self::queue_state::*;
pub use self::sge::*;
#[cfg(rrxe_host)]
pub use self::udata::*;
pub use self::wc::*;
pub use self::wqe::*;
pub use self::wr::*;
