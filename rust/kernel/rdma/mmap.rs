// SPDX-License-Identifier: GPL-2.0

//! Memory shared with userspace through `mmap()` of the uverbs file.
//!
//! Soft RDMA drivers share their work and completion queues with the user provider library:
//! the driver allocates the queue in `vmalloc` memory, registers it with the RDMA core as an
//! mmap entry (the core hands out a unique offset), returns that offset in the verb's udata,
//! and the library maps it. The memory must outlive both the driver object that uses it and
//! every user mapping, so it belongs to the mmap entry, whose reference count the core keeps:
//! it is freed in the driver's `mmap_free` operation, after the driver removed the entry and
//! the last mapping is gone. Each mapping is tracked in the uverbs file, as the core's own
//! `rdma_user_mmap_io()` tracks IO mappings: it holds a reference on the entry, and when the
//! device is removed under a process that still has it mapped (disassociation), the core
//! zaps it, so the process sees a zeroed page where its queue was.
//!
//! Userspace can write the shared memory at any time. [`SharedBuffer`] therefore never hands
//! out references into it: it copies bytes in and out, and reads and writes 32-bit indices
//! with the ordering the queue protocol needs.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::device::{Driver, UContext};
use crate::{
    bindings,
    error::to_result,
    prelude::*,
    sync::atomic::{ordering, Atomic},
    types::Opaque, //
};
use core::ptr::NonNull;

/// The mmap entry of a [`SharedBuffer`], owned by the RDMA core once inserted.
///
/// # Invariants
///
/// `buf` is a `vmalloc_user()` allocation that lives as long as this entry.
#[repr(C)]
struct Entry {
    rdma: Opaque<bindings::rdma_user_mmap_entry>,
    buf: NonNull<u8>,
}

/// A zeroed, page-aligned buffer that userspace may map, e.g. a shared queue.
///
/// # Context
///
/// Creating and dropping it may sleep (it takes the user context's mmap lock); the accessors
/// do not sleep and may be used in atomic context.
///
/// # Invariants
///
/// - `buf` points to `size` bytes of `vmalloc_user()` memory.
/// - If `entry` is set, it was inserted into a user context's mmap table, owns `buf` (freed by
///   [`free_entry`] from the driver's `mmap_free`), and this object holds the insertion
///   reference, removed on drop. Otherwise this object owns `buf` and frees it on drop.
pub struct SharedBuffer {
    buf: NonNull<u8>,
    size: usize,
    entry: Option<NonNull<Entry>>,
}

// SAFETY: The buffer is plain memory; all accesses go through raw pointers with the
// appropriate atomicity, so it may be used and dropped from any thread.
unsafe impl Send for SharedBuffer {}
// SAFETY: See the `Send` implementation; `&self` methods only perform racy-safe accesses.
unsafe impl Sync for SharedBuffer {}

impl SharedBuffer {
    /// Allocates a zeroed buffer of `size` bytes (rounded up to whole pages by the allocator)
    /// that is not mapped to userspace (for kernel consumers).
    ///
    /// The memory is charged to the caller's memory cgroup (`GFP_KERNEL_ACCOUNT`): a queue's
    /// size is chosen by whoever creates it.
    pub fn new(size: usize) -> Result<Self> {
        if size == 0 {
            return Err(EINVAL);
        }
        // SAFETY: Any size is acceptable; the result is null or a zeroed `vmalloc_user()`
        // allocation (`VM_USERMAP`), charged to the current memory cgroup.
        let buf = unsafe { bindings::rdma_vmalloc_user_account(size as c_ulong) };
        let buf = NonNull::new(buf.cast::<u8>()).ok_or(ENOMEM)?;
        // INVARIANT: `buf` is a new allocation of `size` bytes; there is no entry.
        Ok(Self {
            buf,
            size,
            entry: None,
        })
    }

    /// Allocates a zeroed buffer of `size` bytes and makes it mappable by the process of
    /// `ctx`; returns it with the offset to pass to `mmap()`.
    pub fn new_user<T: Driver>(ctx: &UContext<T>, size: usize) -> Result<(Self, u64)> {
        let mut this = Self::new(size)?;
        let entry = KBox::new(
            Entry {
                rdma: Opaque::zeroed(),
                buf: this.buf,
            },
            GFP_KERNEL,
        )?;
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
        // INVARIANT: The entry owns the buffer from now on.
        this.entry = Some(entry);
        let offset = u64::try_from(pgoff).map_err(|_| EINVAL)? << bindings::PAGE_SHIFT;
        Ok((this, offset))
    }

    /// Size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    fn ptr_at(&self, off: usize, len: usize) -> Result<*mut u8> {
        match off.checked_add(len) {
            Some(end) if end <= self.size => {
                // SAFETY: `off + len <= size`, so the result stays inside the allocation.
                Ok(unsafe { self.buf.as_ptr().add(off) })
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
        match self.entry {
            // SAFETY: By the type invariant we hold the insertion reference of an inserted
            // entry; removing it lets the core free the entry (and buffer) once unmapped.
            Some(entry) => unsafe {
                bindings::rdma_user_mmap_entry_remove((*entry.as_ptr()).rdma.get())
            },
            // SAFETY: By the type invariant we own the allocation.
            None => unsafe { bindings::vfree(self.buf.as_ptr().cast()) },
        }
    }
}

/// Maps the shared buffer that `vma`'s offset names into the calling process
/// (the driver's `mmap` operation).
///
/// # Safety
///
/// `ctx` is a live user context and `vma` the VMA of an `mmap()` of its uverbs file.
pub(crate) unsafe fn map(
    ctx: *mut bindings::ib_ucontext,
    vma: *mut bindings::vm_area_struct,
) -> Result {
    // SAFETY: Per the function's contract; the core returns a counted entry or null.
    let rdma = unsafe { bindings::rdma_user_mmap_entry_get(ctx, vma) };
    if rdma.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: Every entry of a context of ours is the first field of an `Entry`.
    let entry = unsafe { &*rdma.cast::<Entry>() };
    // SAFETY: `vma` is valid; the entry's buffer is a `vmalloc_user()` allocation at least as
    // large as the mapping (the core checked the length against the entry's size).
    let mut ret = unsafe { bindings::remap_vmalloc_range(vma, entry.buf.as_ptr().cast(), 0) };
    if ret == 0 {
        // SAFETY: `vma` is a VMA of the uverbs file of `ctx`, in the driver's `mmap` operation
        // (whose VMA operations free the tracking on close), just mapped; `rdma` is a counted
        // entry, which the tracking takes a reference of its own on.
        ret = unsafe { bindings::rdma_umap_track(vma, rdma) };
    }
    // SAFETY: Drops the reference taken by `rdma_user_mmap_entry_get`; the VMA holds its own
    // (taken by `rdma_umap_track`) until it is unmapped or zapped.
    unsafe { bindings::rdma_user_mmap_entry_put(rdma) };
    to_result(ret)
}

/// Frees a shared buffer's entry and memory (the driver's `mmap_free` operation).
///
/// # Safety
///
/// `rdma` is the entry of a [`SharedBuffer`] whose last reference was just dropped.
pub(crate) unsafe fn free_entry(rdma: *mut bindings::rdma_user_mmap_entry) {
    // SAFETY: The entry is the first field of a leaked `KBox<Entry>` (`Entry` is `repr(C)`).
    let entry = unsafe { KBox::from_raw(rdma.cast::<Entry>()) };
    // SAFETY: By the type invariant of `Entry`, it owns the `vmalloc_user()` buffer.
    unsafe { bindings::vfree(entry.buf.as_ptr().cast()) };
}
