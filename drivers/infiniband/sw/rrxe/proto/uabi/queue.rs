// SPDX-License-Identifier: GPL-2.0

//! Queue geometry and roles: the shape of a shared queue buffer exactly as `rxe_queue_init()`
//! computes it ([`QueueGeometry`], [`Slot`]), the element sizes of send, receive and completion
//! queues ([`sq_caps`], [`recv_wqe_size`]), the errors of the queue protocol ([`QueueError`]),
//! and which side owns which shared index with which memory ordering ([`QueueKind`],
//! [`IndexAccess`]).

#[cfg(rrxe_host)]
use super::layout::QueueBufHeaderFields;
use super::layout::{
    CONSUMER_INDEX_OFFSET, PRODUCER_INDEX_OFFSET, QUEUE_DATA_OFFSET, RECV_WQE_DATA_OFFSET,
    SEND_WQE_DATA_OFFSET, SGE_LEN,
};

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
    /// [`SendQueueState::complete_oldest`](super::SendQueueState::complete_oldest) was called
    /// with nothing in flight.
    NothingInFlight,
    /// A resize target cannot hold the elements currently queued.
    ResizeTooSmall {
        /// Elements queued.
        count: u32,
        /// Capacity of the new queue.
        capacity: u32,
    },
    /// A [`Reservation`](super::Reservation) was committed to a producer whose index has moved.
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
    #[cfg(rrxe_host)]
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
    #[cfg(rrxe_host)]
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

#[cfg(rrxe_host)]
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
/// least [`UVERBS_WC_LEN`](super::UVERBS_WC_LEN) works with librxe, which checks only that.
pub const UPSTREAM_CQE_SIZE: usize = 72;

// ---------------------------------------------------------------------------------------------
// Roles and memory ordering.
// ---------------------------------------------------------------------------------------------

/// The four kinds of shared queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg(rrxe_host)]
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
#[cfg(rrxe_host)]
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
    #[cfg(rrxe_host)]
    LoadAcquire(IndexField),
    /// Store the own index with release ordering (`smp_store_release`, or
    /// `.store(v, Release)`) *after* finishing with the elements it releases.
    StoreRelease(IndexField),
}

#[cfg(rrxe_host)]
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
    /// | SQ, RQ, SRQ | acquire P, release C | acquire C (full), release P |
    /// | CQ | acquire C (full), release P | acquire P, release C |
    ///
    /// ("acquire X": load-acquire of index X; "release X": store-release of index X; P and C:
    /// the producer and consumer indices; "full": the full check.)
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
