// SPDX-License-Identifier: GPL-2.0

//! Work requests and completions of kernel consumers (`struct ib_send_wr`,
//! `struct ib_recv_wr`, `struct ib_wc`), and the memory they name.
//!
//! In-kernel users of a device (the MAD layer on QP1, the connection manager, storage
//! protocols) post chains of work requests with `ib_post_send()`/`ib_post_recv()` and poll
//! completions with `ib_poll_cq()`, possibly in atomic context. The trampolines here walk the
//! chains and hand each request to the driver as a plain value ([`SendWr`], [`RecvWr`]);
//! on the first refusal they report that request as the bad one, as the core expects.
//!
//! A soft-RoCE device is a virtual-DMA device (`ib_uses_virt_dma()`): the DMA addresses
//! kernel consumers put in their SGEs, with the PD's `local_dma_lkey`, are kernel virtual
//! addresses. [`KernelDma`] copies to and from them; only a QP created by a kernel consumer
//! gets one, so user QPs can never name kernel memory.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use super::{
    ah::Ah,
    cq::Cq,
    device::Driver,
    mr::{AccessFlags, Mr, RegWr},
    qp::{Qp, QpType},
};
use crate::{bindings, prelude::*};
use core::ptr::NonNull;

/// A scatter/gather element (`struct ib_sge`).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Sge(bindings::ib_sge);

impl Sge {
    /// Address: a DMA address (kernel virtual) with `local_dma_lkey`, else a region's VA.
    pub fn addr(&self) -> u64 {
        self.0.addr
    }

    /// Length in bytes.
    pub fn length(&self) -> u32 {
        self.0.length
    }

    /// Local key.
    pub fn lkey(&self) -> u32 {
        self.0.lkey
    }
}

/// The UD part of a send work request (`struct ib_ud_wr`).
pub struct UdWr<'a, T: Driver> {
    /// Address handle of the destination.
    pub ah: &'a Ah<T>,
    /// Destination QP number.
    pub remote_qpn: u32,
    /// Destination Q_Key.
    pub remote_qkey: u32,
    /// P_Key index.
    pub pkey_index: u16,
}

/// A send work request of a kernel consumer.
pub struct SendWr<'a, T: Driver> {
    /// Work request id (or `wr_cqe` pointer value), returned in the completion.
    pub wr_id: u64,
    /// `enum ib_wr_opcode`.
    pub opcode: u32,
    /// `IB_SEND_*` flags.
    pub send_flags: u32,
    /// Immediate data (big-endian, as stored) or rkey to invalidate (`IB_WR_LOCAL_INV`,
    /// `IB_WR_SEND_WITH_INV`).
    pub ex: u32,
    /// Scatter/gather list.
    pub sges: &'a [Sge],
    /// RDMA operations: remote address and rkey.
    pub rdma: Option<(u64, u32)>,
    /// Atomics: remote address, compare/add, swap, rkey.
    pub atomic: Option<(u64, u64, u64, u32)>,
    /// Datagram QPs: destination.
    pub ud: Option<UdWr<'a, T>>,
    /// Fast registration (`IB_WR_REG_MR`): the region, its new key and rights.
    pub reg: Option<RegWr<'a, T>>,
}

/// A receive work request of a kernel consumer.
pub struct RecvWr<'a> {
    /// Work request id (or `wr_cqe` pointer value).
    pub wr_id: u64,
    /// Scatter list.
    pub sges: &'a [Sge],
}

/// A QP, named in a completion of a kernel CQ (`ib_wc.qp`).
///
/// # Invariants
///
/// Points to a QP of this device that was live when the handle was made; it is only handed
/// back to the core, in completions of that QP (consumers drain a QP's completions before
/// destroying it).
#[derive(Clone, Copy)]
pub struct QpHandle(NonNull<bindings::ib_qp>);

// SAFETY: The handle is an opaque token; it is never dereferenced in Rust.
unsafe impl Send for QpHandle {}
// SAFETY: See above.
unsafe impl Sync for QpHandle {}

impl QpHandle {
    /// # Panics
    ///
    /// Never: `qp` is the core's non-null allocation during `create_qp`.
    pub(crate) fn from_raw(qp: *mut bindings::ib_qp) -> Self {
        // INVARIANT: The QP being created.
        Self(NonNull::new(qp).unwrap_or(NonNull::dangling()))
    }
}

/// A completion for a kernel consumer (`struct ib_wc`).
#[derive(Clone, Copy, Default)]
pub struct Wc {
    /// Work request id.
    pub wr_id: u64,
    /// `enum ib_wc_status`.
    pub status: u32,
    /// `enum ib_wc_opcode`.
    pub opcode: u32,
    /// Bytes transferred.
    pub byte_len: u32,
    /// The QP the completion is for.
    pub qp: Option<QpHandle>,
    /// Immediate data (as stored) or invalidated rkey.
    pub ex: u32,
    /// Source QP (UD).
    pub src_qp: u32,
    /// `IB_WC_*` flags.
    pub wc_flags: u32,
    /// P_Key index.
    pub pkey_index: u16,
    /// Port.
    pub port_num: u32,
    /// The network header a UD receive's GRH stands for; when set, the completion carries
    /// `IB_WC_WITH_NETWORK_HDR_TYPE`.
    pub network_hdr_type: Option<NetworkType>,
    /// The VLAN a UD receive arrived on; when set, the completion carries
    /// `IB_WC_WITH_VLAN` (the core picks the reply's source GID by it).
    pub vlan_id: Option<u16>,
}

/// The network header of a received datagram (`enum rdma_network_type`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkType {
    /// RoCE v2 over IPv4 (`RDMA_NETWORK_IPV4`).
    Ipv4 = bindings::rdma_network_type_RDMA_NETWORK_IPV4 as u8,
    /// RoCE v2 over IPv6 (`RDMA_NETWORK_IPV6`).
    Ipv6 = bindings::rdma_network_type_RDMA_NETWORK_IPV6 as u8,
}

/// Copies to and from the kernel virtual addresses that kernel consumers use as DMA
/// addresses on a virtual-DMA device.
///
/// # Invariants
///
/// Only made for QPs created by kernel consumers ([`super::qp::QpInit::kernel_dma`]), whose
/// work requests name memory the consumer mapped for DMA and keeps until the completion.
pub struct KernelDma(());

impl KernelDma {
    pub(crate) fn new() -> Self {
        Self(())
    }

    /// Returns `true` if `[addr, addr + len)` lies in the kernel's direct map (checked at both
    /// ends: consumers map physically contiguous buffers or scatterlist entries).
    fn valid(addr: u64, len: usize) -> bool {
        let Ok(start) = usize::try_from(addr) else {
            return false;
        };
        let Some(last) = start.checked_add(len.saturating_sub(1)) else {
            return false;
        };
        if len == 0 {
            return true;
        }
        // SAFETY: `virt_addr_valid` only inspects the address.
        unsafe {
            bindings::virt_addr_valid(start as *const c_void)
                && bindings::virt_addr_valid(last as *const c_void)
        }
    }

    /// Copies `out.len()` bytes from DMA address `addr`.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result {
        if !Self::valid(addr, out.len()) {
            return Err(EFAULT);
        }
        // SAFETY: By the type invariant a kernel consumer mapped `[addr, addr + len)` for
        // DMA and keeps it until the completion; it is in the direct map (checked above).
        unsafe {
            core::ptr::copy_nonoverlapping(addr as usize as *const u8, out.as_mut_ptr(), out.len())
        };
        Ok(())
    }

    /// Copies `data` to DMA address `addr`.
    pub fn write(&self, addr: u64, data: &[u8]) -> Result {
        if !Self::valid(addr, data.len()) {
            return Err(EFAULT);
        }
        // SAFETY: As for `read`; the consumer mapped the buffer for the device to write.
        unsafe {
            core::ptr::copy_nonoverlapping(data.as_ptr(), addr as usize as *mut u8, data.len())
        };
        Ok(())
    }
}

/// Returns the SGE list of a work request.
///
/// # Safety
///
/// `list` points to `n` valid SGEs (or `n` is not positive) that outlive `'a`.
unsafe fn sges<'a>(list: *const bindings::ib_sge, n: c_int) -> Result<&'a [Sge]> {
    let n = usize::try_from(n).map_err(|_| EINVAL)?;
    if n == 0 || list.is_null() {
        return Ok(&[]);
    }
    // SAFETY: Per the function's contract; `Sge` is `repr(transparent)`.
    Ok(unsafe { core::slice::from_raw_parts(list.cast::<Sge>(), n) })
}

/// `post_send` trampoline body for a kernel consumer's chain.
///
/// # Safety
///
/// `qp` is a live QP of driver `T`; `wr` is a valid chain; `bad_wr` is valid for writes.
pub(crate) unsafe fn post_send<T: Driver>(
    qp: &Qp<T>,
    mut wr: *const bindings::ib_send_wr,
    bad_wr: *mut *const bindings::ib_send_wr,
) -> Result {
    let ud_qp = matches!(qp.qp_type(), QpType::Ud | QpType::Gsi);
    while !wr.is_null() {
        // SAFETY: Per the function's contract, `wr` and what it points to are valid for the
        // call; the extended structures embed `wr` at offset 0 for their opcodes.
        let result = unsafe {
            let w = &*wr;
            let op = w.opcode;
            let rdma = matches!(
                op,
                bindings::ib_wr_opcode_IB_WR_RDMA_WRITE
                    | bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM
                    | bindings::ib_wr_opcode_IB_WR_RDMA_READ
            )
            .then(|| {
                let r = &*wr.cast::<bindings::ib_rdma_wr>();
                (r.remote_addr, r.rkey)
            });
            let atomic = matches!(
                op,
                bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP
                    | bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD
            )
            .then(|| {
                let a = &*wr.cast::<bindings::ib_atomic_wr>();
                (a.remote_addr, a.compare_add, a.swap, a.rkey)
            });
            let ud = if ud_qp {
                let u = &*wr.cast::<bindings::ib_ud_wr>();
                match NonNull::new(u.ah) {
                    Some(ah) => Some(UdWr {
                        ah: &*ah.as_ptr().cast::<Ah<T>>(),
                        remote_qpn: u.remote_qpn,
                        remote_qkey: u.remote_qkey,
                        pkey_index: u.pkey_index,
                    }),
                    None => None,
                }
            } else {
                None
            };
            // `reg_wr.mr` is a region of this device: consumers register regions they
            // allocated on the device of the QP.
            let reg = if op == bindings::ib_wr_opcode_IB_WR_REG_MR {
                let r = &*wr.cast::<bindings::ib_reg_wr>();
                match NonNull::new(r.mr) {
                    Some(mr) => Some(RegWr {
                        mr: &*mr.as_ptr().cast::<Mr<T>>(),
                        key: r.key,
                        access: AccessFlags::from_raw(u32::from_ne_bytes(r.access.to_ne_bytes())),
                    }),
                    None => None,
                }
            } else {
                None
            };
            sges(w.sg_list, w.num_sge).and_then(|sges| {
                T::post_send_wr(
                    qp,
                    &SendWr {
                        wr_id: w.__bindgen_anon_1.wr_id,
                        opcode: op,
                        send_flags: u32::from_ne_bytes(w.send_flags.to_ne_bytes()),
                        ex: w.ex.imm_data,
                        sges,
                        rdma,
                        atomic,
                        ud,
                        reg,
                    },
                )
            })
        };
        if let Err(e) = result {
            // SAFETY: `bad_wr` is valid for writes.
            unsafe { bad_wr.write(wr) };
            // The work requests before the bad one are posted: they are carried out.
            let _ = T::send_doorbell(qp);
            return Err(e);
        }
        // SAFETY: `wr` is valid.
        wr = unsafe { (*wr).next };
    }
    T::send_doorbell(qp)
}

/// `post_recv` trampoline body.
///
/// # Safety
///
/// `qp` is a live QP of driver `T`; `wr` is a valid chain; `bad_wr` is valid for writes.
pub(crate) unsafe fn post_recv<T: Driver>(
    qp: &Qp<T>,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> Result {
    // SAFETY: Per the function's contract.
    unsafe { post_recv_chain(wr, bad_wr, |w| T::post_recv_wr(qp, w)) }
}

/// Hands each receive work request of the chain `wr` to `post`, in order; on the first
/// failure points `bad_wr` at the request that failed and returns its error (the
/// `post_recv` and `post_srq_recv` trampolines).
///
/// # Safety
///
/// `wr` is a valid chain; `bad_wr` is valid for writes.
pub(crate) unsafe fn post_recv_chain(
    mut wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
    mut post: impl FnMut(&RecvWr<'_>) -> Result,
) -> Result {
    while !wr.is_null() {
        // SAFETY: Per the function's contract.
        let result = unsafe {
            let w = &*wr;
            sges(w.sg_list, w.num_sge).and_then(|sges| {
                post(&RecvWr {
                    wr_id: w.__bindgen_anon_1.wr_id,
                    sges,
                })
            })
        };
        if let Err(e) = result {
            // SAFETY: `bad_wr` is valid for writes.
            unsafe { bad_wr.write(wr) };
            return Err(e);
        }
        // SAFETY: `wr` is valid.
        wr = unsafe { (*wr).next };
    }
    Ok(())
}

/// `poll_cq` trampoline body: returns the number of completions written.
///
/// # Safety
///
/// `cq` is a live CQ of driver `T`; `wc` is valid for writes of `n` entries.
pub(crate) unsafe fn poll_cq<T: Driver>(cq: &Cq<T>, n: c_int, wc: *mut bindings::ib_wc) -> c_int {
    let mut done: c_int = 0;
    while done < n {
        let Some(c) = T::poll_cq(cq) else {
            break;
        };
        let mut out: bindings::ib_wc = pin_init::zeroed();
        out.__bindgen_anon_1.wr_id = c.wr_id;
        out.status = c.status;
        out.opcode = c.opcode;
        out.byte_len = c.byte_len;
        out.qp = c.qp.map_or(core::ptr::null_mut(), |h| h.0.as_ptr());
        out.ex.imm_data = c.ex;
        out.src_qp = c.src_qp;
        let mut flags = c.wc_flags;
        if let Some(net) = c.network_hdr_type {
            flags |= bindings::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE;
            out.network_hdr_type = net as u8;
        }
        if let Some(vlan) = c.vlan_id {
            flags |= bindings::ib_wc_flags_IB_WC_WITH_VLAN;
            out.vlan_id = vlan;
        }
        out.wc_flags = c_int::from_ne_bytes(flags.to_ne_bytes());
        out.pkey_index = c.pkey_index;
        out.port_num = c.port_num;
        // SAFETY: `done < n`, and `wc` holds `n` entries.
        unsafe { wc.add(done as usize).write(out) };
        done = done.wrapping_add(1);
    }
    done
}
