// SPDX-License-Identifier: GPL-2.0

//! Queue pairs (`struct ib_qp`).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

mod attrs;

pub use super::event::{QpEvent, QpEvents};
use super::{
    cq::Cq,
    device::{Device, Driver, UContext, UData},
    mmap,
    pd::Pd,
};
use crate::{bindings, error::from_result, prelude::*, sync::Arc, types::Opaque};
pub use attrs::{AhAttr, GidType, QpAttrs};

/// Transport service of a queue pair (`enum ib_qp_type`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QpType {
    /// Reliable Connected.
    Rc,
    /// Unreliable Connected.
    Uc,
    /// Unreliable Datagram.
    Ud,
    /// The General Services Interface QP (QP1), used by the connection manager.
    Gsi,
    /// Any other type (not supported by soft RoCE).
    Other(u32),
}

impl QpType {
    fn from_raw(v: u32) -> Self {
        match v {
            bindings::ib_qp_type_IB_QPT_RC => Self::Rc,
            bindings::ib_qp_type_IB_QPT_UC => Self::Uc,
            bindings::ib_qp_type_IB_QPT_UD => Self::Ud,
            bindings::ib_qp_type_IB_QPT_GSI => Self::Gsi,
            v => Self::Other(v),
        }
    }
}

/// Queue pair state (`enum ib_qp_state`).
#[repr(u32)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QpState {
    /// Reset.
    Reset = bindings::ib_qp_state_IB_QPS_RESET,
    /// Initialised.
    Init = bindings::ib_qp_state_IB_QPS_INIT,
    /// Ready to receive.
    Rtr = bindings::ib_qp_state_IB_QPS_RTR,
    /// Ready to send.
    Rts = bindings::ib_qp_state_IB_QPS_RTS,
    /// Send queue drain.
    Sqd = bindings::ib_qp_state_IB_QPS_SQD,
    /// Send queue error.
    Sqe = bindings::ib_qp_state_IB_QPS_SQE,
    /// Error.
    Err = bindings::ib_qp_state_IB_QPS_ERR,
}

impl QpState {
    fn from_raw(v: u32) -> Option<Self> {
        Some(match v {
            bindings::ib_qp_state_IB_QPS_RESET => Self::Reset,
            bindings::ib_qp_state_IB_QPS_INIT => Self::Init,
            bindings::ib_qp_state_IB_QPS_RTR => Self::Rtr,
            bindings::ib_qp_state_IB_QPS_RTS => Self::Rts,
            bindings::ib_qp_state_IB_QPS_SQD => Self::Sqd,
            bindings::ib_qp_state_IB_QPS_SQE => Self::Sqe,
            bindings::ib_qp_state_IB_QPS_ERR => Self::Err,
            _ => return None,
        })
    }
}

/// Returns whether moving a QP of `qp_type` from `cur` to `next` with the attributes in
/// `mask` is allowed by the InfiniBand specification (required and optional attributes per
/// transition), as the RDMA core checks it (`ib_modify_qp_is_ok()`).
pub fn modify_is_ok(cur: QpState, next: QpState, qp_type: QpType, mask: u32) -> bool {
    let t = match qp_type {
        QpType::Rc => bindings::ib_qp_type_IB_QPT_RC,
        QpType::Uc => bindings::ib_qp_type_IB_QPT_UC,
        QpType::Ud => bindings::ib_qp_type_IB_QPT_UD,
        QpType::Gsi => bindings::ib_qp_type_IB_QPT_GSI,
        QpType::Other(v) => v,
    };
    // SAFETY: A pure table lookup on plain values.
    unsafe { bindings::ib_modify_qp_is_ok(cur as u32, next as u32, t, mask) }
}

/// `IB_QP_*` attribute mask bits of [`QpAttrs::mask`].
pub mod attr {
    use crate::bindings;

    /// State.
    pub const STATE: u32 = bindings::ib_qp_attr_mask_IB_QP_STATE;
    /// Current state.
    pub const CUR_STATE: u32 = bindings::ib_qp_attr_mask_IB_QP_CUR_STATE;
    /// Access flags.
    pub const ACCESS_FLAGS: u32 = bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS;
    /// Partition key index.
    pub const PKEY_INDEX: u32 = bindings::ib_qp_attr_mask_IB_QP_PKEY_INDEX;
    /// Port.
    pub const PORT: u32 = bindings::ib_qp_attr_mask_IB_QP_PORT;
    /// Q_Key.
    pub const QKEY: u32 = bindings::ib_qp_attr_mask_IB_QP_QKEY;
    /// Address vector.
    pub const AV: u32 = bindings::ib_qp_attr_mask_IB_QP_AV;
    /// Path MTU.
    pub const PATH_MTU: u32 = bindings::ib_qp_attr_mask_IB_QP_PATH_MTU;
    /// Local ACK timeout.
    pub const TIMEOUT: u32 = bindings::ib_qp_attr_mask_IB_QP_TIMEOUT;
    /// Retry count.
    pub const RETRY_CNT: u32 = bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT;
    /// RNR retry count.
    pub const RNR_RETRY: u32 = bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY;
    /// Receive PSN.
    pub const RQ_PSN: u32 = bindings::ib_qp_attr_mask_IB_QP_RQ_PSN;
    /// Outstanding RDMA READ/atomic as requester.
    pub const MAX_QP_RD_ATOMIC: u32 = bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC;
    /// Minimum RNR NAK timer.
    pub const MIN_RNR_TIMER: u32 = bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER;
    /// Send PSN.
    pub const SQ_PSN: u32 = bindings::ib_qp_attr_mask_IB_QP_SQ_PSN;
    /// Responder resources for RDMA READ/atomic.
    pub const MAX_DEST_RD_ATOMIC: u32 = bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC;
    /// Capabilities (resize).
    pub const CAP: u32 = bindings::ib_qp_attr_mask_IB_QP_CAP;
    /// Destination QP number.
    pub const DEST_QPN: u32 = bindings::ib_qp_attr_mask_IB_QP_DEST_QPN;
}

/// What a driver's `query_qp` reports: what the core copies into `struct ib_qp_attr` and
/// the parts of `struct ib_qp_init_attr` it returns.
#[derive(Copy, Clone, Debug)]
pub struct QpQuery {
    /// The current attributes.
    pub attrs: QpAttrs,
    /// The work queue capabilities.
    pub caps: QpCaps,
    /// Every send WQE is signalled (`IB_SIGNAL_ALL_WR`), not only those that ask.
    pub sq_sig_all: bool,
}

/// Work queue capabilities (`struct ib_qp_cap`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct QpCaps {
    /// Send queue depth.
    pub max_send_wr: u32,
    /// Receive queue depth.
    pub max_recv_wr: u32,
    /// Scatter/gather entries per send WQE.
    pub max_send_sge: u32,
    /// Scatter/gather entries per receive WQE.
    pub max_recv_sge: u32,
    /// Inline data per send WQE.
    pub max_inline_data: u32,
}

impl QpCaps {
    fn from_raw(c: &bindings::ib_qp_cap) -> Self {
        Self {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }

    fn write(&self, c: &mut bindings::ib_qp_cap) {
        c.max_send_wr = self.max_send_wr;
        c.max_recv_wr = self.max_recv_wr;
        c.max_send_sge = self.max_send_sge;
        c.max_recv_sge = self.max_recv_sge;
        c.max_inline_data = self.max_inline_data;
    }
}

/// A queue pair: the core-allocated `struct ib_qp` followed by the driver's data.
///
/// # Invariants
///
/// `ib` is at offset 0 and initialised by the core (device, PD, CQs, type); `events` and
/// `data` are initialised between a successful `create_qp` and a successful `destroy_qp`, the
/// only span in which references exist. (A failed `destroy_qp` leaves the QP without events.)
#[repr(C)]
#[pin_data]
pub struct Qp<T: Driver> {
    #[pin]
    pub(crate) ib: Opaque<bindings::ib_qp>,
    /// Where the QP's asynchronous events go; initialised before `data`, cleared and dropped
    /// by `destroy_qp`.
    events: Arc<QpEvents>,
    #[pin]
    pub(crate) data: T::Qp,
}

impl<T: Driver> Qp<T> {
    /// Returns the driver data.
    pub fn data(&self) -> &T::Qp {
        &self.data
    }

    /// Returns the device.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: The core sets `device` before `create_qp`; it outlives its objects.
        unsafe { Device::from_raw((*self.ib.get()).device) }
    }

    /// Returns the QP number.
    pub fn qp_num(&self) -> u32 {
        // SAFETY: Set at creation and not changed afterwards.
        unsafe { (*self.ib.get()).qp_num }
    }

    /// Returns the transport type.
    pub fn qp_type(&self) -> QpType {
        // SAFETY: Set by the core before creation and not changed afterwards.
        QpType::from_raw(unsafe { (*self.ib.get()).qp_type })
    }

    /// Returns the protection domain.
    pub fn pd(&self) -> &Pd<T> {
        // SAFETY: The core sets `pd` to one of this driver's PDs, which outlives the QP.
        unsafe { &*(*self.ib.get()).pd.cast::<Pd<T>>() }
    }

    /// Returns the completion queue of the send queue.
    pub fn send_cq(&self) -> Option<&Cq<T>> {
        // SAFETY: The core sets `send_cq` to null or one of this driver's CQs, which
        // outlives the QP (the core holds a use count on it).
        unsafe { (*self.ib.get()).send_cq.cast::<Cq<T>>().as_ref() }
    }

    /// Returns the completion queue of the receive queue.
    pub fn recv_cq(&self) -> Option<&Cq<T>> {
        // SAFETY: As for `send_cq`.
        unsafe { (*self.ib.get()).recv_cq.cast::<Cq<T>>().as_ref() }
    }
}

/// Parameters of a new queue pair (`struct ib_qp_init_attr` and the udata).
pub struct QpInit<'a, T: Driver> {
    /// Transport type.
    pub qp_type: QpType,
    /// Requested capabilities.
    pub caps: QpCaps,
    /// Every send WQE generates a completion (`IB_SIGNAL_ALL_WR`).
    pub sq_sig_all: bool,
    /// `IB_QP_CREATE_*` flags.
    pub create_flags: u32,
    /// The receive queue is a shared receive queue.
    pub has_srq: bool,
    /// Port (for special QPs).
    pub port_num: u32,
    /// Driver data from and to userspace, for a user QP.
    pub udata: Option<&'a UData<T>>,
    /// The user context, for a user QP.
    pub ucontext: Option<&'a UContext<T>>,
    qp: *mut bindings::ib_qp,
    init: *mut bindings::ib_qp_init_attr,
}

impl<T: Driver> QpInit<'_, T> {
    /// Returns where the new QP's asynchronous events go (for the driver's data path).
    pub fn events(&self) -> Arc<QpEvents> {
        // SAFETY: The `create_qp` trampoline initialised `events` before building `self`, and
        // nothing else writes it before the QP is destroyed.
        unsafe { (*self.qp.cast::<Qp<T>>()).events.clone() }
    }

    /// Reports the capabilities actually provided (at least those requested).
    pub fn set_caps(&self, caps: &QpCaps) {
        // SAFETY: `init` is valid during `create_qp`, and the core reads the capabilities
        // back from it after the call.
        caps.write(unsafe { &mut (*self.init).cap });
    }

    /// Returns the completion queue of the send queue.
    pub fn send_cq(&self) -> Option<&Cq<T>> {
        // SAFETY: The core sets `send_cq` before `create_qp` to null or one of this driver's
        // CQs. Its use count is taken only after `create_qp` returns (`ib_qp_usecnt_inc()`,
        // `verbs.c:1432`); during the call the CQ lives because the caller holds it: uverbs
        // holds its uobject locked for the verb, and a kernel consumer may not destroy a CQ it
        // is creating a QP on. The reference is bounded by the `QpInit` borrow.
        unsafe { (*self.qp).send_cq.cast::<Cq<T>>().as_ref() }
    }

    /// Returns the completion queue of the receive queue.
    pub fn recv_cq(&self) -> Option<&Cq<T>> {
        // SAFETY: As for `send_cq`.
        unsafe { (*self.qp).recv_cq.cast::<Cq<T>>().as_ref() }
    }

    /// Returns the shared receive queue the new QP takes its receive WQEs from, if any.
    pub fn srq(&self) -> Option<&super::srq::Srq<T>> {
        // SAFETY: The core sets `srq` before `create_qp` to null or one of this driver's
        // SRQs, alive during the call as the CQs are (see `send_cq`).
        unsafe { (*self.init).srq.cast::<super::srq::Srq<T>>().as_ref() }
    }

    /// Returns the handle that will name the new QP in kernel completions.
    pub fn handle(&self) -> super::wr::QpHandle {
        super::wr::QpHandle::from_raw(self.qp)
    }

    /// Returns the capability to use kernel DMA addresses, for a QP created by a kernel
    /// consumer (no udata); `None` for a user QP.
    pub fn kernel_dma(&self) -> Option<super::wr::KernelDma> {
        self.udata.is_none().then(super::wr::KernelDma::new)
    }

    /// Sets the QP number of the new QP.
    pub fn set_qp_num(&self, qpn: u32) {
        // SAFETY: `qp` is the core's allocation of the QP being created, exclusively ours
        // during `create_qp`.
        unsafe { (*self.qp).qp_num = qpn };
    }
}

/// The `create_qp` operation.
///
/// # Safety
///
/// Called by the core: `qp` is a zeroed allocation of `size_ib_qp` bytes whose header the core
/// initialised; `init` is valid; `udata` is null or valid.
pub(crate) unsafe extern "C" fn create<T: Driver>(
    qp: *mut bindings::ib_qp,
    init: *mut bindings::ib_qp_init_attr,
    udata: *mut bindings::ib_udata,
) -> c_int {
    const {
        assert!(core::mem::offset_of!(Qp<T>, ib) == 0);
    }
    from_result(|| {
        // SAFETY: The core sets `device` and `pd` first and calls operations while they live.
        let (dev, pd) = unsafe {
            (
                Device::<T>::from_raw((*qp).device),
                &*(*qp).pd.cast::<Pd<T>>(),
            )
        };
        // SAFETY: `udata` is null or valid for the call.
        let udata = unsafe { UData::from_raw(udata) };
        // SAFETY: `init` is valid for the call.
        let i = unsafe { &*init };
        let events = QpEvents::new(qp)?;
        // SAFETY: `events` is uninitialised memory in the core's allocation, which never moves;
        // written before anything reads it (`QpInit::events`).
        unsafe { (&raw mut (*qp.cast::<Qp<T>>()).events).write(events) };
        let qi = QpInit {
            qp_type: QpType::from_raw(i.qp_type),
            caps: QpCaps::from_raw(&i.cap),
            sq_sig_all: i.sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR,
            create_flags: i.create_flags,
            has_srq: !i.srq.is_null(),
            port_num: i.port_num,
            udata,
            ucontext: udata.and_then(|u| u.ucontext()),
            qp,
            init,
        };
        let created = T::create_qp(dev, pd, &qi).and_then(|data| {
            // SAFETY: `data` is uninitialised memory in the core's allocation, which never moves;
            // on failure the core frees it without calling `destroy_qp`.
            unsafe { pin_init::raw_try_init(&raw mut (*qp.cast::<Qp<T>>()).data, data) }
        });
        if created.is_err() {
            // SAFETY: `events` was initialised above and is only dropped here or by `destroy_qp`,
            // which the core does not call for a QP it failed to create.
            let events = unsafe { &raw mut (*qp.cast::<Qp<T>>()).events };
            // INVARIANT: The core frees the QP when we return, but the driver may have kept a
            // clone (`QpInit::events`) past its failure: forget the QP first, as destroy does.
            // SAFETY: As above.
            unsafe { (*events).clear() };
            // SAFETY: As above; nothing reads the field after this.
            unsafe { core::ptr::drop_in_place(events) };
        }
        created?;
        Ok(0)
    })
}

/// The `modify_qp` operation.
///
/// # Safety
///
/// Called by the core: `qp` was initialised by `create_qp`; `attr` is valid.
pub(crate) unsafe extern "C" fn modify<T: Driver>(
    qp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    mask: c_int,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        let mask = u32::from_ne_bytes(mask.to_ne_bytes());
        // SAFETY: Per the function's contract; the core holds the GID attribute reference.
        let (qp, attrs, udata) = unsafe {
            (
                &*qp.cast::<Qp<T>>(),
                QpAttrs::from_raw(&*attr, mask),
                UData::from_raw(udata),
            )
        };
        T::modify_qp(qp, &attrs, udata)?;
        Ok(0)
    })
}

/// The `query_qp` operation.
///
/// # Safety
///
/// Called by the core: `qp` was initialised by `create_qp`; `attr` and `init` are valid for writes.
pub(crate) unsafe extern "C" fn query<T: Driver>(
    qp: *mut bindings::ib_qp,
    attr: *mut bindings::ib_qp_attr,
    _mask: c_int,
    init: *mut bindings::ib_qp_init_attr,
) -> c_int {
    from_result(|| {
        // SAFETY: Per the function's contract.
        let qp = unsafe { &*qp.cast::<Qp<T>>() };
        let QpQuery {
            attrs: a,
            caps,
            sq_sig_all,
        } = T::query_qp(qp)?;
        // SAFETY: `attr` and `init` are valid for writes; zeroing them first leaves no stale
        // kernel data for the core to copy to userspace.
        unsafe {
            attr.write(pin_init::zeroed());
            a.write(&mut *attr);
            (*init).cap = pin_init::zeroed();
            caps.write(&mut (*init).cap);
            (*init).sq_sig_type = if sq_sig_all {
                bindings::ib_sig_type_IB_SIGNAL_ALL_WR
            } else {
                bindings::ib_sig_type_IB_SIGNAL_REQ_WR
            };
        }
        Ok(0)
    })
}

/// The `destroy_qp` operation.
///
/// # Safety
///
/// Called by the core: `qp` was initialised by `create_qp`; on success the core frees it next.
/// `udata` is null or valid, in process context.
pub(crate) unsafe extern "C" fn destroy<T: Driver>(
    qp: *mut bindings::ib_qp,
    udata: *mut bindings::ib_udata,
) -> c_int {
    from_result(|| {
        let this = qp.cast::<Qp<T>>();
        // SAFETY: The QP is initialised. INVARIANT: its events name it no longer.
        unsafe { (*this).events.clear() };
        // SAFETY: The QP is initialised.
        T::destroy_qp(unsafe { &*this })?;
        // SAFETY: Destroy succeeded: no other operation runs on the QP and the core frees it.
        unsafe {
            core::ptr::drop_in_place(&raw mut (*this).data);
            core::ptr::drop_in_place(&raw mut (*this).events);
        }
        // SAFETY: Per the function's contract.
        unsafe { mmap::sweep_after::<T>(udata) };
        Ok(0)
    })
}

/// The `attach_mcast` operation.
///
/// # Safety
///
/// Called by the core: `qp` was initialised by `create_qp`; `gid` is valid.
pub(crate) unsafe extern "C" fn attach_mcast<T: Driver>(
    qp: *mut bindings::ib_qp,
    gid: *mut bindings::ib_gid,
    _lid: u16,
) -> c_int {
    // SAFETY: `gid` is valid; `ib_gid` is a union of plain byte arrays. The QP is initialised.
    let (gid, qp) = unsafe { ((*gid).raw, &*qp.cast::<Qp<T>>()) };
    from_result(|| T::attach_mcast(qp, &gid).map(|()| 0))
}

/// The `detach_mcast` operation.
///
/// # Safety
///
/// Called by the core: `qp` was initialised by `create_qp`; `gid` is valid.
pub(crate) unsafe extern "C" fn detach_mcast<T: Driver>(
    qp: *mut bindings::ib_qp,
    gid: *mut bindings::ib_gid,
    _lid: u16,
) -> c_int {
    // SAFETY: `gid` is valid; `ib_gid` is a union of plain byte arrays. The QP is initialised.
    let (gid, qp) = unsafe { ((*gid).raw, &*qp.cast::<Qp<T>>()) };
    from_result(|| T::detach_mcast(qp, &gid).map(|()| 0))
}
