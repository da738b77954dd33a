// SPDX-License-Identifier: GPL-2.0

//! Kernel-side index state of the shared queues: the private indices the kernel keeps for
//! each role ([`KernelConsumer`] for RQs and SRQs, [`SendQueueState`] for send queues,
//! [`KernelProducer`] for CQs), the values it publishes ([`Publish`]), and the element moves
//! of a resize ([`ResizePlan`]). Every index read from the shared page is checked.

use super::queue::{IndexAccess, IndexField, QueueError, QueueGeometry, Slot};
#[cfg(rrxe_host)]
use super::queue::{QueueKind, Side};

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
            #[cfg(rrxe_host)]
            IndexAccess::LoadAcquire(f) => f.offset(),
            IndexAccess::StoreRelease(f) => f.offset(),
        }
    }
}

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
    #[cfg(rrxe_host)]
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
    #[cfg(rrxe_host)]
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
    #[cfg(rrxe_host)]
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
    #[cfg(rrxe_host)]
    pub fn geometry(&self) -> QueueGeometry {
        self.geom
    }

    /// Returns the kernel's private consumer index.
    #[cfg(rrxe_host)]
    pub fn consumer(&self) -> u32 {
        self.consumer
    }

    /// Returns the index of the next WQE to start.
    #[cfg(rrxe_host)]
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
    #[cfg(rrxe_host)]
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
    #[cfg(rrxe_host)]
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
    #[cfg(rrxe_host)]
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
    #[cfg(rrxe_host)]
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
