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
use crate::{bindings, error::from_result, prelude::*};
use core::ptr::NonNull;

/// A scatter/gather element (`struct ib_sge`) of a kernel consumer's work request.
///
/// # Invariants
///
/// Made only by the `post_send`, `post_recv` and `post_srq_recv` trampolines, from the work
/// requests of kernel consumers (never from a chain `ib_uverbs_post_send()` built from user
/// data: those are refused before the driver sees them). With the device's `local_dma_lkey`
/// it names memory the consumer mapped for DMA and keeps until the request completes.
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

/// A remote address and the key that grants access to it (the RDMA and atomic parts of a
/// send work request).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remote {
    /// Remote virtual address (or offset into a zero-based region).
    pub addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// What a kernel consumer's send work request asks for: its `enum ib_wr_opcode` with the
/// fields of the extended structure (`struct ib_rdma_wr`, `ib_atomic_wr`, `ib_reg_wr`) that
/// the opcode names.
///
/// The trampoline refuses the opcodes that are not here (`IB_WR_LSO`, the masked atomics,
/// `IB_WR_RDMA_READ_WITH_INV`, `IB_WR_FLUSH`, `IB_WR_ATOMIC_WRITE`,
/// `IB_WR_REG_MR_INTEGRITY`, `IB_WR_BIND_MW` and the driver-reserved values) with `EINVAL`,
/// before the driver sees them, as it refuses an `IB_WR_REG_MR` without a region.
pub enum SendOp<'a, T: Driver> {
    /// `IB_WR_SEND`.
    Send,
    /// `IB_WR_SEND_WITH_IMM`: the immediate data, in host order.
    SendWithImm(u32),
    /// `IB_WR_SEND_WITH_INV`: the rkey the responder invalidates.
    SendWithInv(u32),
    /// `IB_WR_RDMA_WRITE`.
    RdmaWrite(Remote),
    /// `IB_WR_RDMA_WRITE_WITH_IMM`: the immediate data, in host order.
    RdmaWriteWithImm(Remote, u32),
    /// `IB_WR_RDMA_READ`.
    RdmaRead(Remote),
    /// `IB_WR_ATOMIC_CMP_AND_SWP`.
    CompareSwap {
        /// The 8-byte aligned remote address.
        remote: Remote,
        /// The value to compare with.
        compare: u64,
        /// The value to write if equal.
        swap: u64,
    },
    /// `IB_WR_ATOMIC_FETCH_AND_ADD`.
    FetchAdd {
        /// The 8-byte aligned remote address.
        remote: Remote,
        /// The value to add.
        add: u64,
    },
    /// `IB_WR_LOCAL_INV`: the key to invalidate.
    LocalInv(u32),
    /// `IB_WR_REG_MR`: the region, its new key and rights.
    RegMr(RegWr<'a, T>),
}

/// A send work request of a kernel consumer.
pub struct SendWr<'a, T: Driver> {
    /// Work request id (or `wr_cqe` pointer value), returned in the completion.
    pub wr_id: u64,
    /// The operation.
    pub op: SendOp<'a, T>,
    /// `IB_SEND_*` flags.
    pub send_flags: u32,
    /// Scatter/gather list.
    pub sges: &'a [Sge],
    /// Datagram QPs: destination (`None` if the request names no address handle).
    pub ud: Option<UdWr<'a, T>>,
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
    /// Status.
    pub status: WcStatus,
    /// What completed.
    pub opcode: WcOpcode,
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

/// The status of a completion (`enum ib_wc_status`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WcStatus {
    /// `IB_WC_SUCCESS`.
    #[default]
    Success = bindings::ib_wc_status_IB_WC_SUCCESS,
    /// `IB_WC_LOC_LEN_ERR`.
    LocLenErr = bindings::ib_wc_status_IB_WC_LOC_LEN_ERR,
    /// `IB_WC_LOC_QP_OP_ERR`.
    LocQpOpErr = bindings::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
    /// `IB_WC_LOC_EEC_OP_ERR`.
    LocEecOpErr = bindings::ib_wc_status_IB_WC_LOC_EEC_OP_ERR,
    /// `IB_WC_LOC_PROT_ERR`.
    LocProtErr = bindings::ib_wc_status_IB_WC_LOC_PROT_ERR,
    /// `IB_WC_WR_FLUSH_ERR`.
    WrFlushErr = bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR,
    /// `IB_WC_MW_BIND_ERR`.
    MwBindErr = bindings::ib_wc_status_IB_WC_MW_BIND_ERR,
    /// `IB_WC_BAD_RESP_ERR`.
    BadRespErr = bindings::ib_wc_status_IB_WC_BAD_RESP_ERR,
    /// `IB_WC_LOC_ACCESS_ERR`.
    LocAccessErr = bindings::ib_wc_status_IB_WC_LOC_ACCESS_ERR,
    /// `IB_WC_REM_INV_REQ_ERR`.
    RemInvReqErr = bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
    /// `IB_WC_REM_ACCESS_ERR`.
    RemAccessErr = bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR,
    /// `IB_WC_REM_OP_ERR`.
    RemOpErr = bindings::ib_wc_status_IB_WC_REM_OP_ERR,
    /// `IB_WC_RETRY_EXC_ERR`.
    RetryExcErr = bindings::ib_wc_status_IB_WC_RETRY_EXC_ERR,
    /// `IB_WC_RNR_RETRY_EXC_ERR`.
    RnrRetryExcErr = bindings::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR,
    /// `IB_WC_LOC_RDD_VIOL_ERR`.
    LocRddViolErr = bindings::ib_wc_status_IB_WC_LOC_RDD_VIOL_ERR,
    /// `IB_WC_REM_INV_RD_REQ_ERR`.
    RemInvRdReqErr = bindings::ib_wc_status_IB_WC_REM_INV_RD_REQ_ERR,
    /// `IB_WC_REM_ABORT_ERR`.
    RemAbortErr = bindings::ib_wc_status_IB_WC_REM_ABORT_ERR,
    /// `IB_WC_INV_EECN_ERR`.
    InvEecnErr = bindings::ib_wc_status_IB_WC_INV_EECN_ERR,
    /// `IB_WC_INV_EEC_STATE_ERR`.
    InvEecStateErr = bindings::ib_wc_status_IB_WC_INV_EEC_STATE_ERR,
    /// `IB_WC_FATAL_ERR`.
    FatalErr = bindings::ib_wc_status_IB_WC_FATAL_ERR,
    /// `IB_WC_RESP_TIMEOUT_ERR`.
    RespTimeoutErr = bindings::ib_wc_status_IB_WC_RESP_TIMEOUT_ERR,
    /// `IB_WC_GENERAL_ERR`.
    GeneralErr = bindings::ib_wc_status_IB_WC_GENERAL_ERR,
}

/// What a completion is for (`enum ib_wc_opcode`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WcOpcode {
    /// `IB_WC_SEND`.
    #[default]
    Send = bindings::ib_wc_opcode_IB_WC_SEND,
    /// `IB_WC_RDMA_WRITE`.
    RdmaWrite = bindings::ib_wc_opcode_IB_WC_RDMA_WRITE,
    /// `IB_WC_RDMA_READ`.
    RdmaRead = bindings::ib_wc_opcode_IB_WC_RDMA_READ,
    /// `IB_WC_COMP_SWAP`.
    CompSwap = bindings::ib_wc_opcode_IB_WC_COMP_SWAP,
    /// `IB_WC_FETCH_ADD`.
    FetchAdd = bindings::ib_wc_opcode_IB_WC_FETCH_ADD,
    /// `IB_WC_BIND_MW`.
    BindMw = bindings::ib_wc_opcode_IB_WC_BIND_MW,
    /// `IB_WC_LOCAL_INV`.
    LocalInv = bindings::ib_wc_opcode_IB_WC_LOCAL_INV,
    /// `IB_WC_LSO`.
    Lso = bindings::ib_wc_opcode_IB_WC_LSO,
    /// `IB_WC_ATOMIC_WRITE`.
    AtomicWrite = bindings::ib_wc_opcode_IB_WC_ATOMIC_WRITE,
    /// `IB_WC_REG_MR`.
    RegMr = bindings::ib_wc_opcode_IB_WC_REG_MR,
    /// `IB_WC_MASKED_COMP_SWAP`.
    MaskedCompSwap = bindings::ib_wc_opcode_IB_WC_MASKED_COMP_SWAP,
    /// `IB_WC_MASKED_FETCH_ADD`.
    MaskedFetchAdd = bindings::ib_wc_opcode_IB_WC_MASKED_FETCH_ADD,
    /// `IB_WC_FLUSH`.
    Flush = bindings::ib_wc_opcode_IB_WC_FLUSH,
    /// `IB_WC_RECV`.
    Recv = bindings::ib_wc_opcode_IB_WC_RECV,
    /// `IB_WC_RECV_RDMA_WITH_IMM`.
    RecvRdmaWithImm = bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
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

/// Copies to and from the memory kernel consumers name in their SGEs by DMA address, on a
/// virtual-DMA device.
///
/// A copy names the [`Sge`] the consumer posted, and a byte range inside it: never an address.
/// A driver keeps the SGEs of a kernel consumer's work requests (they are `Copy`) beside its
/// own copy of the request, and hands the one an access falls in to [`KernelDma::read`] or
/// [`KernelDma::write`], which check that it names DMA-mapped memory (the device's
/// `local_dma_lkey`) and that the range lies inside it.
///
/// # Invariants
///
/// Only made for QPs created by kernel consumers ([`super::qp::QpInit::kernel_dma`]).
pub struct KernelDma(());

impl KernelDma {
    pub(crate) fn new() -> Self {
        Self(())
    }

    /// Returns the address of bytes `[at, at + len)` of `sge`, if `sge` names DMA-mapped
    /// memory by the device's `local_dma_lkey`, the range lies inside it, and both its ends
    /// are in the kernel's direct map (where the DMA addresses of a virtual-DMA device are:
    /// `ib_dma_map_*()` hands out `page_address()`s). `None` for an empty range.
    fn range(sge: &Sge, at: usize, len: usize) -> Result<Option<usize>> {
        if sge.lkey() != LOCAL_DMA_LKEY {
            return Err(EINVAL);
        }
        let end = at.checked_add(len).ok_or(EFAULT)?;
        if end > usize::try_from(sge.length())? {
            return Err(EFAULT);
        }
        if len == 0 {
            return Ok(None);
        }
        let base = usize::try_from(sge.addr()).map_err(|_| EFAULT)?;
        let start = base.checked_add(at).ok_or(EFAULT)?;
        // No overflow: `base + end` is at most `base + length`, checked below as `last + 1`.
        let last = base.checked_add(end - 1).ok_or(EFAULT)?;
        // SAFETY: `virt_addr_valid` only inspects the address.
        let valid = unsafe {
            bindings::virt_addr_valid(start as *const c_void)
                && bindings::virt_addr_valid(last as *const c_void)
        };
        if valid {
            Ok(Some(start))
        } else {
            Err(EFAULT)
        }
    }

    /// Copies `out.len()` bytes from byte `at` of the memory `sge` names.
    ///
    /// `EINVAL` if `sge` does not name memory by DMA address, `EFAULT` if the bytes are not
    /// all inside it or not in the direct map.
    pub fn read(&self, sge: &Sge, at: usize, out: &mut [u8]) -> Result {
        let Some(src) = Self::range(sge, at, out.len())? else {
            return Ok(());
        };
        // SAFETY: `sge` is one a kernel consumer posted (only the trampolines make an `Sge`,
        // from kernel consumers' work requests), naming with `local_dma_lkey` memory it
        // mapped for DMA and keeps until the request completes; `src..src + len` lies inside
        // it and in the direct map (checked by `range`). `out` is a distinct Rust buffer.
        unsafe { core::ptr::copy_nonoverlapping(src as *const u8, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Copies `data` to byte `at` of the memory `sge` names (see [`KernelDma::read`]).
    pub fn write(&self, sge: &Sge, at: usize, data: &[u8]) -> Result {
        let Some(dst) = Self::range(sge, at, data.len())? else {
            return Ok(());
        };
        // SAFETY: As for `read`; the consumer mapped the memory for the device to write.
        unsafe { core::ptr::copy_nonoverlapping(data.as_ptr(), dst as *mut u8, data.len()) };
        Ok(())
    }
}

/// The device's `local_dma_lkey` (set when the device is allocated).
pub(crate) const LOCAL_DMA_LKEY: u32 = 0;

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

/// The operation of the send work request `wr`; `EINVAL` for an opcode [`SendOp`] does not
/// carry, or an `IB_WR_REG_MR` without a region.
///
/// # Safety
///
/// `wr` is a valid send work request of a QP of driver `T`, whose extended structure (the one
/// its opcode names) is valid for `'a`.
unsafe fn send_op<'a, T: Driver>(wr: *const bindings::ib_send_wr) -> Result<SendOp<'a, T>> {
    // SAFETY: Per the function's contract; the extended structures embed `wr` at offset 0.
    unsafe {
        let w = &*wr;
        let rdma = || {
            let r = &*wr.cast::<bindings::ib_rdma_wr>();
            Remote {
                addr: r.remote_addr,
                rkey: r.rkey,
            }
        };
        let atomic = || &*wr.cast::<bindings::ib_atomic_wr>();
        // The immediate data is big-endian (`__be32`); the invalidated key is in host order.
        let imm = u32::from_be(w.ex.imm_data);
        let inv = w.ex.invalidate_rkey;
        Ok(match w.opcode {
            bindings::ib_wr_opcode_IB_WR_SEND => SendOp::Send,
            bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM => SendOp::SendWithImm(imm),
            bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV => SendOp::SendWithInv(inv),
            bindings::ib_wr_opcode_IB_WR_RDMA_WRITE => SendOp::RdmaWrite(rdma()),
            bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM => {
                SendOp::RdmaWriteWithImm(rdma(), imm)
            }
            bindings::ib_wr_opcode_IB_WR_RDMA_READ => SendOp::RdmaRead(rdma()),
            bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP => {
                let a = atomic();
                SendOp::CompareSwap {
                    remote: Remote {
                        addr: a.remote_addr,
                        rkey: a.rkey,
                    },
                    compare: a.compare_add,
                    swap: a.swap,
                }
            }
            bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD => {
                let a = atomic();
                SendOp::FetchAdd {
                    remote: Remote {
                        addr: a.remote_addr,
                        rkey: a.rkey,
                    },
                    add: a.compare_add,
                }
            }
            bindings::ib_wr_opcode_IB_WR_LOCAL_INV => SendOp::LocalInv(inv),
            bindings::ib_wr_opcode_IB_WR_REG_MR => {
                // `reg_wr.mr` is a region of this device: consumers register regions they
                // allocated on the device of the QP, and hold them for the request.
                let r = &*wr.cast::<bindings::ib_reg_wr>();
                let mr = NonNull::new(r.mr).ok_or(EINVAL)?;
                SendOp::RegMr(RegWr {
                    mr: &*mr.as_ptr().cast::<Mr<T>>(),
                    key: r.key,
                    access: AccessFlags::from_raw(u32::from_ne_bytes(r.access.to_ne_bytes())),
                })
            }
            _ => return Err(EINVAL),
        })
    }
}

/// The `post_send` operation: a user QP's doorbell (`wr` null), or a kernel consumer's chain
/// of work requests.
///
/// # Safety
///
/// Called by the core: `ibqp` was initialised by `create_qp`; `wr` is null (a user doorbell)
/// or a valid chain of work requests, `bad_wr` valid for writes.
pub(crate) unsafe extern "C" fn post_send<T: Driver>(
    ibqp: *mut bindings::ib_qp,
    wr: *const bindings::ib_send_wr,
    bad_wr: *mut *const bindings::ib_send_wr,
) -> c_int {
    // SAFETY: The QP is initialised.
    let qp = unsafe { &*ibqp.cast::<Qp<T>>() };
    // SAFETY: `uobject` is set by the core before `create_qp` and not changed after.
    let user = !unsafe { (*ibqp).uobject }.is_null();
    from_result(|| {
        if wr.is_null() {
            T::send_doorbell(qp)?;
        } else if user {
            // A chain `ib_uverbs_post_send()` built from user data for a user QP, whose
            // requests go through its ring: nothing of it reaches the driver (its SGEs would
            // be `Sge`s a user named). The doorbell is rung, as rdma_rxe does for user QPs.
            // SAFETY: `bad_wr` is valid for writes.
            unsafe { bad_wr.write(wr) };
            T::send_doorbell(qp)?;
            return Err(EINVAL);
        } else {
            // SAFETY: Per the function's contract.
            unsafe { send_chain::<T>(qp, wr, bad_wr) }?;
        }
        Ok(0)
    })
}

/// Hands each send work request of a kernel consumer's chain `wr` to the driver, then rings
/// the doorbell; on the first refusal points `bad_wr` at the request refused.
///
/// # Safety
///
/// `qp` is a live QP of driver `T`; `wr` is a valid chain; `bad_wr` is valid for writes.
unsafe fn send_chain<T: Driver>(
    qp: &Qp<T>,
    mut wr: *const bindings::ib_send_wr,
    bad_wr: *mut *const bindings::ib_send_wr,
) -> Result {
    let ud_qp = matches!(qp.qp_type(), QpType::Ud | QpType::Gsi);
    while !wr.is_null() {
        // SAFETY: Per the function's contract, `wr` and what it points to are valid for the
        // call; the extended structures embed `wr` at offset 0 for their opcodes
        // (`ib_verbs.h`: `rdma_wr()`, `atomic_wr()`, `ud_wr()`, `reg_wr()`).
        let result = unsafe { send_op::<T>(wr) }.and_then(|op| {
            // SAFETY: As above.
            let w = unsafe { &*wr };
            let ud = if ud_qp {
                // SAFETY: A UD or GSI QP's requests are `struct ib_ud_wr`s; `ah` is null or
                // an address handle of this device, held by the consumer for the request.
                unsafe {
                    let u = &*wr.cast::<bindings::ib_ud_wr>();
                    NonNull::new(u.ah).map(|ah| UdWr {
                        ah: &*ah.as_ptr().cast::<Ah<T>>(),
                        remote_qpn: u.remote_qpn,
                        remote_qkey: u.remote_qkey,
                        pkey_index: u.pkey_index,
                    })
                }
            } else {
                None
            };
            // SAFETY: `sg_list` holds `num_sge` SGEs for the call.
            let sges = unsafe { sges(w.sg_list, w.num_sge) }?;
            T::post_send_wr(
                qp,
                &SendWr {
                    // SAFETY: Both members of the union are a `u64` (`wr_cqe` a pointer).
                    wr_id: unsafe { w.__bindgen_anon_1.wr_id },
                    op,
                    send_flags: u32::from_ne_bytes(w.send_flags.to_ne_bytes()),
                    sges,
                    ud,
                },
            )
        });
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

/// The `post_recv` operation.
///
/// # Safety
///
/// Called by the core: `ibqp` was initialised by `create_qp`; `wr` is a valid chain;
/// `bad_wr` is valid for writes.
pub(crate) unsafe extern "C" fn post_recv<T: Driver>(
    ibqp: *mut bindings::ib_qp,
    wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
) -> c_int {
    // SAFETY: The QP is initialised.
    let qp = unsafe { &*ibqp.cast::<Qp<T>>() };
    // SAFETY: `uobject` is set by the core before `create_qp` and not changed after.
    let user = !unsafe { (*ibqp).uobject }.is_null();
    from_result(|| {
        // SAFETY: Per the function's contract.
        unsafe { post_recv_chain(user, wr, bad_wr, |w| T::post_recv_wr(qp, w)) }.map(|()| 0)
    })
}

/// Hands each receive work request of the chain `wr` to `post`, in order; on the first
/// failure points `bad_wr` at the request that failed and returns its error (the
/// `post_recv` and `post_srq_recv` trampolines). A chain for a `user` queue (one
/// `ib_uverbs_post_recv()` built from user data; user queues take their requests through their
/// rings) is refused whole with `EINVAL`: no `Sge` is made from what a user named.
///
/// # Safety
///
/// `wr` is a valid chain; `bad_wr` is valid for writes.
pub(crate) unsafe fn post_recv_chain(
    user: bool,
    mut wr: *const bindings::ib_recv_wr,
    bad_wr: *mut *const bindings::ib_recv_wr,
    mut post: impl FnMut(&RecvWr<'_>) -> Result,
) -> Result {
    if user && !wr.is_null() {
        // SAFETY: `bad_wr` is valid for writes.
        unsafe { bad_wr.write(wr) };
        return Err(EINVAL);
    }
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

/// The `poll_cq` operation: returns the number of completions written.
///
/// # Safety
///
/// Called by the core: `cq` was initialised by `create_cq`; `wc` is valid for writes of `n`
/// entries.
pub(crate) unsafe extern "C" fn poll_cq<T: Driver>(
    cq: *mut bindings::ib_cq,
    n: c_int,
    wc: *mut bindings::ib_wc,
) -> c_int {
    // SAFETY: The CQ is initialised.
    let cq = unsafe { &*cq.cast::<Cq<T>>() };
    let mut done: c_int = 0;
    while done < n {
        let Some(c) = T::poll_cq(cq) else {
            break;
        };
        let mut out: bindings::ib_wc = pin_init::zeroed();
        out.__bindgen_anon_1.wr_id = c.wr_id;
        out.status = c.status as bindings::ib_wc_status;
        out.opcode = c.opcode as bindings::ib_wc_opcode;
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
