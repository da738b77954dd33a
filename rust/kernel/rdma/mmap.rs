// SPDX-License-Identifier: GPL-2.0

//! Memory shared with userspace through `mmap()` of the uverbs file.
//!
//! Soft RDMA drivers share their work and completion queues with the user provider library:
//! the driver allocates the queue in `vmalloc` memory, registers it with the RDMA core as an
//! mmap entry (the core hands out a unique offset), returns that offset in the verb's udata,
//! and the library maps it. The memory must outlive both the driver object that uses it and
//! every user mapping, so the buffer and its mmap entry share it (an [`Arc`]): the entry's
//! share goes in the driver's `mmap_free` operation, which the core calls once the entry was
//! removed and the last mapping is gone. Removing an entry sleeps and needs the user context,
//! which a buffer cannot promise at drop time; the user context's `MmapTable` does it
//! instead. Each mapping is tracked in the uverbs file, as the core's own
//! `rdma_user_mmap_io()` tracks IO mappings: it holds a reference on the entry, and when the
//! device is removed under a process that still has it mapped (disassociation), the core
//! zaps it, so the process sees a zeroed page where its queue was.
//!
//! Userspace can write the shared memory at any time. [`SharedBuffer`] therefore never hands
//! out references into it: it copies bytes in and out, and reads and writes 32-bit indices
//! with the ordering the queue protocol needs.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::device::{Driver, UContext, UData};
use crate::{
    bindings,
    error::{from_result, to_result},
    new_mutex,
    prelude::*,
    sync::{
        atomic::{ordering, Atomic},
        Arc, Mutex, SetOnce,
    },
    types::Opaque, //
};
use core::ptr::NonNull;

/// The memory of a [`SharedBuffer`], shared by the buffer and, once userspace may map it, by
/// its mmap entry: whichever lets go last frees it.
///
/// # Invariants
///
/// `buf` points to `size` bytes of `vmalloc_user()` memory owned by this object.
struct Memory {
    buf: NonNull<u8>,
    size: usize,
    /// Set when the [`SharedBuffer`] is dropped: its entry may then be removed.
    orphaned: Atomic<bool>,
    /// For a buffer userspace may map: its table's count of orphaned buffers.
    table_orphans: Option<Arc<Atomic<usize>>>,
    /// Set by [`Memory::put_sleepable`] on the last reference: the context it is dropped in
    /// may sleep.
    may_sleep: bool,
}

// SAFETY: `Memory` owns plain memory; the kernel accesses it through raw pointers only (see
// `SharedBuffer`), and it may be freed from any context (`vfree_atomic()`).
unsafe impl Send for Memory {}
// SAFETY: See the `Send` implementation; `&Memory` gives no access to the bytes.
unsafe impl Sync for Memory {}

impl Drop for Memory {
    // Not inlined into modules: `vfree_atomic()` is not exported.
    #[inline(never)]
    fn drop(&mut self) {
        if self.may_sleep {
            // SAFETY: By the type invariant we own the allocation; `may_sleep` is set only by
            // `put_sleepable()`, whose caller's context may sleep, as `vfree()`'s must.
            unsafe { bindings::vfree(self.buf.as_ptr().cast()) };
        } else {
            // SAFETY: By the type invariant we own the allocation. `vfree_atomic()` defers
            // the work that may sleep, so the last reference may go in any context but NMI
            // (the buffer's users run in process, softirq or hard-irq context, never NMI).
            unsafe { bindings::vfree_atomic(self.buf.as_ptr().cast()) };
        }
    }
}

impl Memory {
    /// Drops a share of the memory; if it is the last, the memory is freed at once, not by
    /// a work item as the last reference dropped anywhere else is (`munmap()` of a ring
    /// whose QP is gone frees it without waking a worker, as rdma_rxe's `vfree()` does).
    ///
    /// # Safety
    ///
    /// The caller's context may sleep.
    unsafe fn put_sleepable(this: Arc<Self>) {
        if let Some(last) = Arc::into_unique_or_drop(this) {
            let mut last = Pin::into_inner(last);
            last.may_sleep = true;
        }
    }
}

/// The mmap entry of a [`SharedBuffer`], owned by the RDMA core once inserted.
///
/// # Invariants
///
/// `rdma` is at offset 0. While inserted, the entry is listed in its user context's
/// [`MmapTable`], which holds the insertion reference.
#[repr(C)]
struct Entry {
    rdma: Opaque<bindings::rdma_user_mmap_entry>,
    mem: Arc<Memory>,
}

/// An inserted [`Entry`].
///
/// # Invariants
///
/// Points to an inserted `Entry` whose insertion reference the [`MmapTable`] holding this
/// pointer owns.
struct EntryPtr(NonNull<Entry>);

// SAFETY: An entry is owned by the core's reference count, which may be dropped from any
// thread; the table only reads `Entry::mem` (immutable) through it.
unsafe impl Send for EntryPtr {}

impl EntryPtr {
    /// Removes the entry from the core's table (no new mappings), dropping the insertion
    /// reference: the core frees the entry once the last mapping is gone.
    ///
    /// # Context
    ///
    /// Process context (takes the entry's dmabuf mutex).
    fn remove(self) {
        // SAFETY: By the type invariant, the entry is inserted and we own the insertion
        // reference, consumed here (`ib_core_uverbs.c` 235-253). The entry's `ucontext` is
        // alive: the table is part of it and is only swept while it is.
        unsafe { bindings::rdma_user_mmap_entry_remove(self.0.as_ref().rdma.get()) };
    }

    fn orphaned(&self) -> bool {
        // SAFETY: By the type invariant the entry is alive while it is in the table.
        unsafe { self.0.as_ref() }
            .mem
            .orphaned
            .load(ordering::Acquire)
    }
}

/// The mmap entries of a user context that its [`SharedBuffer`]s inserted.
///
/// A [`SharedBuffer`] may be dropped anywhere (a driver may hold a queue past the verb that
/// destroyed it, and drop it from softirq context, or after the user context is gone), but
/// removing an mmap entry sleeps and needs the user context. So a buffer's drop only marks
/// its memory orphaned; the entries are removed here, in process context and while the
/// context lives: orphaned ones before each new buffer and after each destroy of a QP, CQ or
/// SRQ, and all of them when the context is deallocated (the core expects no entry left then,
/// `uverbs_main.c` 977-978).
///
/// # Invariants
///
/// Every element of `entries` is an [`EntryPtr`] of this user context.
#[pin_data(PinnedDrop)]
pub(crate) struct MmapTable {
    #[pin]
    entries: Mutex<KVec<EntryPtr>>,
    /// Buffers of this table dropped and not yet swept: at least as many as are marked
    /// orphaned (a buffer counts itself before it marks its memory). Made with the first
    /// buffer, under `entries`' lock: `alloc_ucontext` allocates nothing (the core leaks the
    /// context's task reference when it fails through the ioctl path,
    /// `uverbs_std_types_device.c`, `UVERBS_METHOD_GET_CONTEXT`).
    orphans: SetOnce<Arc<Atomic<usize>>>,
}

/// A table with at most this many entries is swept of every orphaned entry at once.
const SWEEP_ALWAYS: usize = 64;

impl MmapTable {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            entries <- new_mutex!(KVec::new(), "rdma_mmap_table"),
            orphans: SetOnce::new(),
        })
    }

    /// Returns the count of orphaned buffers, made on first use.
    fn orphans(&self) -> Result<Arc<Atomic<usize>>> {
        if let Some(o) = self.orphans.as_ref() {
            return Ok(o.clone());
        }
        // Made under the lock: a second caller waits and finds it.
        let _entries = self.entries.lock();
        if self.orphans.as_ref().is_none() {
            self.orphans.populate(Arc::new(Atomic::new(0), GFP_KERNEL)?);
        }
        self.orphans.as_ref().cloned().ok_or(ENOMEM)
    }

    /// Removes the entries of dropped buffers: nothing to do (and no scan) when none was
    /// dropped; in a table of more than [`SWEEP_ALWAYS`] entries, only once an eighth of
    /// them are orphaned, so that destroying many queues one by one costs a constant time
    /// per queue, not one scan of the table each (an orphaned buffer's memory stays until
    /// then, at most an eighth more than the live ones, and userspace may still map it).
    ///
    /// # Context
    ///
    /// Process context; the table's user context is alive for the call.
    pub(crate) fn sweep(&self) {
        let Some(orphans) = self.orphans.as_ref() else {
            return;
        };
        let pending = orphans.load(ordering::Relaxed);
        if pending == 0 {
            return;
        }
        let mut entries = self.entries.lock();
        if entries.len() > SWEEP_ALWAYS && pending.saturating_mul(8) < entries.len() {
            return;
        }
        let mut removed = 0usize;
        entries.retain(|e| {
            if !e.orphaned() {
                return true;
            }
            // The element is dropped by `retain` right after: the copy is the only one left.
            EntryPtr(e.0).remove();
            removed += 1;
            false
        });
        // Each removed buffer counted itself before it marked its memory (the acquire load
        // in `orphaned()` saw that mark): the count does not go below zero.
        orphans.fetch_sub(removed, ordering::Relaxed);
    }

    /// Removes every entry (the `dealloc_ucontext` trampoline): buffers still alive keep their
    /// memory, userspace can no longer map it.
    ///
    /// # Context
    ///
    /// Process context; the table's user context is alive for the call.
    pub(crate) fn remove_all(&self) {
        let mut entries = self.entries.lock();
        while let Some(e) = entries.pop() {
            e.remove();
        }
    }
}

#[pinned_drop]
impl PinnedDrop for MmapTable {
    fn drop(self: Pin<&mut Self>) {
        // The `dealloc_ucontext` trampoline emptied the table: only a failed
        // `alloc_ucontext` drops it otherwise, before any entry could be inserted.
        self.remove_all();
    }
}

/// A zeroed, page-aligned buffer that userspace may map, e.g. a shared queue.
///
/// # Context
///
/// Creating it may sleep; dropping it and the accessors do not sleep and may happen in any
/// context but NMI, even after its user context is gone (its `MmapTable` removes the entry).
///
/// # Invariants
///
/// - `mem` is the buffer's memory; while `user` is set, an entry of a user context's
///   `MmapTable` (or a mapping userspace made through it) may share it.
pub struct SharedBuffer {
    mem: Arc<Memory>,
    user: bool,
}

impl SharedBuffer {
    fn alloc(size: usize, table_orphans: Option<Arc<Atomic<usize>>>) -> Result<Arc<Memory>> {
        if size == 0 {
            return Err(EINVAL);
        }
        // SAFETY: Any size is acceptable; the result is null or a zeroed `vmalloc_user()`
        // allocation (`VM_USERMAP`), charged to the current memory cgroup.
        let buf = unsafe { bindings::rdma_vmalloc_user_account(size as c_ulong) };
        let buf = NonNull::new(buf.cast::<u8>()).ok_or(ENOMEM)?;
        // INVARIANT: `buf` is a new allocation of `size` bytes, owned by the new `Memory`
        // (which frees it if `Arc::new` fails).
        Ok(Arc::new(
            Memory {
                buf,
                size,
                orphaned: Atomic::new(false),
                table_orphans,
                may_sleep: false,
            },
            GFP_KERNEL,
        )?)
    }

    /// Allocates a zeroed buffer of `size` bytes (rounded up to whole pages by the allocator)
    /// that is not mapped to userspace (for kernel consumers).
    ///
    /// The memory is charged to the caller's memory cgroup (`GFP_KERNEL_ACCOUNT`): a queue's
    /// size is chosen by whoever creates it.
    pub fn new(size: usize) -> Result<Self> {
        Ok(Self {
            mem: Self::alloc(size, None)?,
            user: false,
        })
    }

    /// Allocates a zeroed buffer of `size` bytes and makes it mappable by the process of
    /// `ctx`; returns it with the offset to pass to `mmap()`.
    ///
    /// # Context
    ///
    /// Process context (a verb of `ctx`).
    pub fn new_user<T: Driver>(ctx: &UContext<T>, size: usize) -> Result<(Self, u64)> {
        let table = ctx.mmaps();
        table.sweep();
        let mem = Self::alloc(size, Some(table.orphans()?))?;
        let entry = KBox::new(
            Entry {
                rdma: Opaque::zeroed(),
                mem: mem.clone(),
            },
            GFP_KERNEL,
        )?;
        let mut entries = table.entries.lock();
        // Room first: once inserted, the entry must be listed.
        entries.reserve(1, GFP_KERNEL)?;
        let entry = NonNull::from(KBox::leak(entry));
        // SAFETY: `entry` is a valid, zeroed mmap entry and `ctx` a live user context. On
        // success the core owns the entry until `mmap_free`.
        let ret = unsafe {
            bindings::rdma_user_mmap_entry_insert(ctx.as_raw(), entry.as_ref().rdma.get(), size)
        };
        if let Err(e) = to_result(ret) {
            // SAFETY: The entry was not inserted; we still own the box.
            drop(unsafe { KBox::from_raw(entry.as_ptr()) });
            return Err(e);
        }
        // SAFETY: The entry was inserted; `start_pgoff` is set and stable.
        let pgoff = unsafe { (*entry.as_ref().rdma.get()).start_pgoff };
        // INVARIANT: The entry is inserted into `ctx`, and the table takes the insertion
        // reference; room was reserved above.
        if let Err(e) = entries.push_within_capacity(EntryPtr(entry)) {
            // Not reached (room was reserved); give the reference back rather than leak it.
            e.0.remove();
            return Err(ENOMEM);
        }
        drop(entries);
        let offset = u64::try_from(pgoff).map_err(|_| EINVAL)? << bindings::PAGE_SHIFT;
        // INVARIANT: The entry shares `mem`.
        Ok((Self { mem, user: true }, offset))
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.mem.size
    }

    fn ptr_at(&self, off: usize, len: usize) -> Result<*mut u8> {
        match off.checked_add(len) {
            Some(end) if end <= self.mem.size => {
                // SAFETY: `off + len <= size`, so the result stays inside the allocation.
                Ok(unsafe { self.mem.buf.as_ptr().add(off) })
            }
            _ => Err(EINVAL),
        }
    }

    fn atomic_at(&self, off: usize) -> Result<&Atomic<u32>> {
        if off % 4 != 0 {
            return Err(EINVAL);
        }
        let p = self.ptr_at(off, 4)?;
        // SAFETY: `p` is 4-byte aligned (vmalloc memory is page aligned and `off % 4 == 0`),
        // inside the buffer, and only ever accessed atomically by the kernel; userspace
        // accesses it with atomics too (the queue protocol).
        Ok(unsafe { Atomic::from_ptr(p.cast::<u32>()) })
    }

    /// Reads the 32-bit value at byte offset `off` with acquire ordering: writes to the buffer
    /// made before the matching release store (e.g. by userspace) are visible afterwards.
    pub fn load_acquire(&self, off: usize) -> Result<u32> {
        Ok(self.atomic_at(off)?.load(ordering::Acquire))
    }

    /// Reads the 32-bit value at byte offset `off` (no ordering).
    pub fn load_relaxed(&self, off: usize) -> Result<u32> {
        Ok(self.atomic_at(off)?.load(ordering::Relaxed))
    }

    /// Writes the 32-bit value at byte offset `off` with release ordering: writes to the
    /// buffer made before are visible to whoever reads it with acquire.
    pub fn store_release(&self, off: usize, v: u32) -> Result {
        self.atomic_at(off)?.store(v, ordering::Release);
        Ok(())
    }

    /// Writes the 32-bit value at byte offset `off` (no ordering).
    pub fn store_relaxed(&self, off: usize, v: u32) -> Result {
        self.atomic_at(off)?.store(v, ordering::Relaxed);
        Ok(())
    }

    /// Copies `out.len()` bytes at byte offset `off` out of the buffer.
    ///
    /// Userspace may change the bytes concurrently: callers validate the copy, never the
    /// buffer.
    pub fn read(&self, off: usize, out: &mut [u8]) -> Result {
        let p = self.ptr_at(off, out.len())?;
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: `p + i` is inside the buffer (checked above); a volatile byte read
            // tolerates concurrent writes by userspace.
            *b = unsafe { p.add(i).read_volatile() };
        }
        Ok(())
    }

    /// Copies `data` into the buffer at byte offset `off`.
    pub fn write(&self, off: usize, data: &[u8]) -> Result {
        let p = self.ptr_at(off, data.len())?;
        for (i, b) in data.iter().enumerate() {
            // SAFETY: `p + i` is inside the buffer (checked above); a volatile byte write
            // tolerates concurrent accesses by userspace.
            unsafe { p.add(i).write_volatile(*b) };
        }
        Ok(())
    }
}

impl Drop for SharedBuffer {
    fn drop(&mut self) {
        if self.user {
            // The entry, if still inserted, is removed by a later sweep of its table; the
            // memory goes with the last of this buffer, the entry and the user's mappings.
            if let Some(orphans) = &self.mem.table_orphans {
                orphans.fetch_add(1, ordering::Relaxed);
            }
            self.mem.orphaned.store(true, ordering::Release);
        }
    }
}

/// Removes the mmap entries of buffers dropped by a verb (destroy, resize) of a user context.
///
/// # Safety
///
/// `udata` is null or the valid udata of an operation of a `Device<T>`, called in process
/// context.
pub(crate) unsafe fn sweep_after<T: Driver>(udata: *mut bindings::ib_udata) {
    // SAFETY: Per the function's contract.
    let udata = unsafe { UData::<T>::from_raw(udata) };
    if let Some(ctx) = udata.and_then(|u| u.ucontext()) {
        ctx.mmaps().sweep();
    }
}

/// The `mmap` operation: maps the shared buffer that `vma`'s offset names into the calling
/// process.
///
/// # Safety
///
/// Called by the core: `ctx` is a live user context and `vma` the VMA of an `mmap()` of its
/// uverbs file.
pub(crate) unsafe extern "C" fn map(
    ctx: *mut bindings::ib_ucontext,
    vma: *mut bindings::vm_area_struct,
) -> c_int {
    from_result(|| {
        // SAFETY: Per the function's contract; the core returns a counted entry or null.
        let rdma = unsafe { bindings::rdma_user_mmap_entry_get(ctx, vma) };
        if rdma.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: Every entry of a context of ours is the first field of an `Entry`.
        let entry = unsafe { &*rdma.cast::<Entry>() };
        // SAFETY: `vma` is the VMA of an `mmap()` of the uverbs file of `ctx`, in the driver's
        // `mmap` operation (`ib_uverbs_mmap()` holds `disassociate_srcu`); the entry's buffer is a
        // `vmalloc_user()` allocation at least as large as the mapping (the core checked the
        // length against the entry's size), kept alive by the entry; `rdma` is a counted entry,
        // which the mapping's tracking takes a reference of its own on (`ib_core_uverbs.c`,
        // `rdma_umap_priv_init()`), dropped when it is unmapped or zapped.
        let ret = unsafe {
            bindings::rdma_user_mmap_vmalloc(ctx, vma, entry.mem.buf.as_ptr().cast(), rdma)
        };
        // SAFETY: Drops the reference taken by `rdma_user_mmap_entry_get`; the VMA holds its own
        // (taken by `rdma_user_mmap_vmalloc`) until it is unmapped or zapped.
        unsafe { bindings::rdma_user_mmap_entry_put(rdma) };
        to_result(ret)?;
        Ok(0)
    })
}

/// The `mmap_free` operation: frees a shared buffer's entry and memory.
///
/// # Safety
///
/// Called by the core: `rdma` is the entry of a [`SharedBuffer`] whose last reference was just
/// dropped.
pub(crate) unsafe extern "C" fn free_entry(rdma: *mut bindings::rdma_user_mmap_entry) {
    // SAFETY: The entry is the first field of a leaked `KBox<Entry>` (`Entry` is `repr(C)`);
    // the core dropped its last reference, so nothing else uses it.
    let entry = KBox::into_inner(unsafe { KBox::from_raw(rdma.cast::<Entry>()) });
    // SAFETY: The core calls `mmap_free` with a mutex held or from `mmap()` (process context,
    // see `ib_core_uverbs.c` and `uverbs_main.c`): it may sleep.
    unsafe { Memory::put_sleepable(entry.mem) };
}
