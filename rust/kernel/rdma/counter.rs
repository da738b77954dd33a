// SPDX-License-Identifier: GPL-2.0

//! Counters of queue pairs (`struct rdma_counter`): `rdma statistic qp`.
//!
//! The RDMA core groups a port's queue pairs into counters: automatically, one counter per
//! QP type or process (`rdma statistic qp set link DEV/PORT auto type on`), or by hand
//! (`rdma statistic qp bind ...`). It shows each counter's values (`rdma statistic show`)
//! and, as the port's totals, the port's own counters plus every counter's. A driver that
//! implements [`Driver::counter_bind_qp`] counts the events of a bound queue pair in the
//! counter's data, [`Driver::Counter`], instead of in its port's counters.
//!
//! The core allocates `struct rdma_counter`, initialises it (`counter_init`), binds a first
//! QP to it and frees it without telling the driver if that fails; after a first successful
//! bind it calls `counter_dealloc` once the last QP is unbound. So a [`Counter`] owns its
//! driver data, an `Arc<T::Counter>` the driver allocates ([`Driver::counter_alloc`]), only
//! from a first successful bind on: what a driver keeps of it (a clone of the `Arc`) stays
//! valid however long it is kept, and nothing is left behind when the core frees a counter
//! whose first bind failed.
//!
//! C header: [`include/rdma/rdma_counter.h`](srctree/include/rdma/rdma_counter.h)

use crate::{
    bindings,
    prelude::*,
    rdma::{
        device::{Device, Driver},
        qp::Qp,
    },
    sync::{
        atomic::{Atomic, Relaxed},
        Arc,
    },
    types::Opaque,
};
use core::cell::UnsafeCell;

/// A counter of queue pairs: the core-allocated `struct rdma_counter` and the driver's data.
///
/// # Invariants
///
/// `ib` is at offset 0 and initialised by the core (device, port). `data` is initialised by
/// `counter_init`, before any other operation sees the counter, and is only accessed with
/// `ib.lock` held (the core holds it around `counter_bind_qp`, `counter_unbind_qp` and
/// `counter_update_stats`) or by `counter_dealloc`, when the core holds the last reference.
/// It is `Some` only after a successful `counter_bind_qp`, after which the core calls
/// `counter_dealloc` before it frees the counter; `ib.id` is non-zero from then on too.
#[repr(C)]
pub struct Counter<T: Driver> {
    ib: Opaque<bindings::rdma_counter>,
    data: UnsafeCell<Option<Arc<T::Counter>>>,
}

/// The ids of new counters: unique on a device (the core finds a counter by id among the
/// device's), never zero (the core's "no counter allocated yet").
static NEXT_ID: Atomic<u32> = Atomic::new(1);

fn next_id() -> u32 {
    loop {
        let id = NEXT_ID.fetch_add(1, Relaxed);
        if id != 0 {
            return id;
        }
    }
}

/// The size the core allocates for a counter of `T` (`size_rdma_counter`).
pub(crate) const fn size<T: Driver>() -> usize {
    core::alloc::Layout::new::<Counter<T>>()
        .pad_to_align()
        .size()
}

/// # Safety
///
/// `c` is a counter of a device of `T`, freshly allocated (zeroed, `size::<T>()` bytes).
pub(crate) unsafe extern "C" fn init<T: Driver>(c: *mut bindings::rdma_counter) {
    let c = c.cast::<Counter<T>>();
    // SAFETY: Per the function's contract `c` is valid for writes of a `Counter<T>`, and
    // nothing else refers to its data yet.
    unsafe { core::ptr::addr_of_mut!((*c).data).write(UnsafeCell::new(None)) };
}

/// # Safety
///
/// `c` is a counter of a device of `T`, initialised by [`init`].
pub(crate) unsafe extern "C" fn alloc_stats<T: Driver>(
    _c: *mut bindings::rdma_counter,
) -> *mut bindings::rdma_hw_stats {
    new_hw_stats::<T>()
}

/// Allocates the values of [`Driver::HW_STATS`] (`struct rdma_hw_stats`), for a port or a
/// counter; null if out of memory. The core frees them.
pub(crate) fn new_hw_stats<T: Driver>() -> *mut bindings::rdma_hw_stats {
    let n = c_int::try_from(T::HW_STATS.len()).unwrap_or(0);
    // SAFETY: `HW_STATS` is a static array of `n` descriptions with static names.
    unsafe {
        bindings::rdma_alloc_hw_stats_struct(
            T::HW_STATS.as_ptr().cast(),
            n,
            bindings::RDMA_HW_STATS_DEFAULT_LIFESPAN as c_ulong,
        )
    }
}

/// # Safety
///
/// Called by the core with `c`'s lock held; `c` is initialised by [`init`], `qp` is a queue
/// pair of the same device of `T`, created and not yet destroyed.
pub(crate) unsafe extern "C" fn bind_qp<T: Driver>(
    c: *mut bindings::rdma_counter,
    qp: *mut bindings::ib_qp,
    port: u32,
) -> c_int {
    let counter = c.cast::<Counter<T>>();
    // SAFETY: `qp` is a live QP of `T` per the function's contract (type invariant of `Qp`).
    let q = unsafe { &*qp.cast::<Qp<T>>() };
    // SAFETY: `c`'s lock is held, so this is the only access to its data (type invariant).
    let data = unsafe { &mut *(*counter).data.get() };
    let fresh = data.is_none();
    let r = (|| -> Result {
        let d = match data {
            Some(d) => d,
            None => data.insert(T::counter_alloc(q.device(), port)?),
        };
        T::counter_bind_qp(q, d)
    })();
    match r {
        Ok(()) => {
            // SAFETY: `c` and `qp` are valid; the core serialises binds of a counter with its
            // lock, and reads `qp->counter` as a QP's binding, which the driver sets.
            unsafe {
                if fresh {
                    (*c).id = next_id();
                }
                (*qp).counter = c;
            }
            0
        }
        Err(e) => {
            if fresh {
                // The core frees a counter whose first bind failed without `counter_dealloc`:
                // drop what this bind allocated.
                *data = None;
            }
            e.to_errno()
        }
    }
}

/// # Safety
///
/// Called by the core with the lock of `qp`'s counter held; `qp` is a queue pair of a device
/// of `T`, created and not yet destroyed, bound by [`bind_qp`].
pub(crate) unsafe extern "C" fn unbind_qp<T: Driver>(
    qp: *mut bindings::ib_qp,
    _port: u32,
) -> c_int {
    // SAFETY: `qp` is a live QP of `T` per the function's contract.
    T::counter_unbind_qp(unsafe { &*qp.cast::<Qp<T>>() });
    // SAFETY: As in `bind_qp`.
    unsafe { (*qp).counter = core::ptr::null_mut() };
    0
}

/// # Safety
///
/// Called by the core with `c`'s lock held; `c` is initialised by [`init`] and its `stats`
/// were allocated by [`alloc_stats`].
pub(crate) unsafe extern "C" fn update_stats<T: Driver>(c: *mut bindings::rdma_counter) -> c_int {
    let counter = c.cast::<Counter<T>>();
    // SAFETY: `c`'s lock is held (type invariant); `device` is set by the core before
    // `counter_init` and outlives the counter.
    let (data, dev) = unsafe { (&*(*counter).data.get(), Device::<T>::from_raw((*c).device)) };
    // SAFETY: `stats` has `num_counters` values, allocated for `HW_STATS`.
    let values = unsafe {
        let stats = (*c).stats;
        let n = usize::try_from((*stats).num_counters).unwrap_or(0);
        (*stats).value.as_mut_slice(n.min(T::HW_STATS.len()))
    };
    match data {
        Some(d) => T::counter_stats(dev, d, values),
        None => values.fill(0),
    }
    0
}

/// # Safety
///
/// Called by the core when it drops the last reference to `c`, initialised by [`init`].
pub(crate) unsafe extern "C" fn dealloc<T: Driver>(c: *mut bindings::rdma_counter) -> c_int {
    let counter = c.cast::<Counter<T>>();
    // SAFETY: The core holds the last reference: nothing else accesses the data.
    drop(unsafe { (*(*counter).data.get()).take() });
    0
}
