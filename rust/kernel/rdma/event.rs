// SPDX-License-Identifier: GPL-2.0

//! Asynchronous events of RDMA objects (`struct ib_event`) for their owners' event handlers:
//! `object_event` builds one, and [`QpEvents`] delivers a queue pair's for as long as the
//! QP exists (CQ and SRQ events go through `Cq::error_event` and `Srq::limit_reached`,
//! whose objects a driver holds counted uses of).
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)

use crate::{bindings, prelude::*, static_lock_class, sync::Arc};
use core::ptr::NonNull;

use super::BhSpinLock;

/// Returns the event `kind` about an object of `device`, which `name` writes into the
/// event's `element`.
pub(crate) fn object_event(
    device: *mut bindings::ib_device,
    kind: bindings::ib_event_type,
    name: impl FnOnce(&mut bindings::ib_event__bindgen_ty_1),
) -> bindings::ib_event {
    let mut ev: bindings::ib_event = pin_init::zeroed();
    ev.device = device;
    ev.event = kind;
    name(&mut ev.element);
    ev
}

/// An asynchronous event of a queue pair (`enum ib_event_type`), for its owner's event
/// handler (`ibv_get_async_event` for a user QP).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QpEvent {
    /// `IB_EVENT_QP_FATAL`: the QP entered ERR for a reason of its own.
    Fatal,
    /// `IB_EVENT_QP_REQ_ERR`: an invalid request from the peer put the QP in ERR.
    RequestErr,
    /// `IB_EVENT_QP_ACCESS_ERR`: a request from the peer violated an access right.
    AccessErr,
    /// `IB_EVENT_QP_LAST_WQE_REACHED`: a QP on a shared receive queue entered ERR; it takes
    /// no more WQEs from the SRQ.
    LastWqeReached,
    /// `IB_EVENT_SQ_DRAINED`: in SQD, every WQE started before the drain has completed.
    SqDrained,
}

impl QpEvent {
    fn raw(self) -> bindings::ib_event_type {
        match self {
            Self::Fatal => bindings::ib_event_type_IB_EVENT_QP_FATAL,
            Self::RequestErr => bindings::ib_event_type_IB_EVENT_QP_REQ_ERR,
            Self::AccessErr => bindings::ib_event_type_IB_EVENT_QP_ACCESS_ERR,
            Self::LastWqeReached => bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED,
            Self::SqDrained => bindings::ib_event_type_IB_EVENT_SQ_DRAINED,
        }
    }
}

/// The QP whose events a [`QpEvents`] delivers.
struct EventQp(NonNull<bindings::ib_qp>);

// SAFETY: The pointer is only used under the `QpEvents` lock, while the QP is live, from any
// thread.
unsafe impl Send for EventQp {}

/// Where the asynchronous events of a queue pair go: its owner's handler, while the QP
/// exists. A driver's data path keeps one ([`QpInit::events`](super::qp::QpInit::events)) and
/// raises events through it from any context; once the QP is destroyed, raising does nothing.
///
/// # Invariants
///
/// `qp` names the QP only while it is live: the `destroy_qp` trampoline clears it before the
/// driver's destroy runs, and the `create_qp` trampoline clears it when creation fails (the
/// core then frees the QP without a destroy, while a clone the driver took from
/// [`QpInit::events`](super::qp::QpInit::events) may live on).
#[pin_data]
pub struct QpEvents {
    #[pin]
    qp: BhSpinLock<Option<EventQp>>,
}

impl QpEvents {
    pub(crate) fn new(qp: *mut bindings::ib_qp) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                qp <- BhSpinLock::new(
                    NonNull::new(qp).map(EventQp),
                    c"rdma_qp_events",
                    static_lock_class!()
                ),
            }),
            GFP_KERNEL,
        )
    }

    /// Delivers `ev` to the QP's event handler, if the QP still exists.
    ///
    /// # Context
    ///
    /// Any context but hard interrupts; no lock of the driver's that the handler could need
    /// may be held (handlers may call back into the RDMA core).
    pub fn raise(&self, ev: QpEvent) {
        let guard = self.qp.lock();
        let Some(EventQp(qp)) = &*guard else {
            return;
        };
        let qp = qp.as_ptr();
        // SAFETY: By the type invariant the QP is live while it is named here (the lock is
        // held); `event_handler` and `qp_context` are set by the core at creation.
        unsafe {
            let mut e = object_event((*qp).device, ev.raw(), |el| el.qp = qp);
            if let Some(handler) = (*qp).event_handler {
                handler(&mut e, (*qp).qp_context);
            }
        }
    }

    /// Forgets the QP (it is being destroyed).
    pub(crate) fn clear(&self) {
        *self.qp.lock() = None;
    }
}
