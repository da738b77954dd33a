// SPDX-License-Identifier: GPL-2.0

//! Tracepoints of software RDMA transports (`rdma_sw`).
//!
//! Queue pair state changes, requester retries and the NAKs a QP sends and receives, each
//! named by the network device its RDMA device runs on and the QP number, for ftrace and
//! `perf` (`echo 1 > /sys/kernel/tracing/events/rdma_sw/enable`,
//! `perf trace -e 'rdma_sw:*'`). Each function costs a test of the tracepoint's static key
//! while the event is disabled; its arguments are evaluated either way.
//!
//! C header: [`include/trace/events/rdma_sw.h`](srctree/include/trace/events/rdma_sw.h)

use crate::{
    bindings,
    ffi::c_int,
    rdma::qp::QpState,
    str::{CStr, CStrExt as _},
};

// `declare_trace!` passes its arguments inside an `unsafe` block: the functions it declares
// are private and called only by the safe wrappers below.
#[allow(clippy::macro_metavars_in_unsafe)]
mod raw {
    use crate::ffi::{c_char, c_int};

    crate::declare_trace! {
        /// # Safety
        ///
        /// `dev` and `why` are NUL-terminated strings, valid for the call.
        pub(super) unsafe fn rdma_sw_qp_state(
            dev: *const c_char,
            qpn: u32,
            old_state: c_int,
            new_state: c_int,
            why: *const c_char,
        );
        /// # Safety
        ///
        /// `dev` is a NUL-terminated string, valid for the call.
        pub(super) unsafe fn rdma_sw_retry(dev: *const c_char, qpn: u32, psn: u32, cause: c_int);
        /// # Safety
        ///
        /// `dev` is a NUL-terminated string, valid for the call.
        pub(super) unsafe fn rdma_sw_nak_sent(dev: *const c_char, qpn: u32, psn: u32, syndrome: u8);
        /// # Safety
        ///
        /// `dev` is a NUL-terminated string, valid for the call.
        pub(super) unsafe fn rdma_sw_nak_rcvd(dev: *const c_char, qpn: u32, psn: u32, syndrome: u8);
    }
}
use raw::*;

/// Why a requester went back to an older PSN ([`retry`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum RetryCause {
    /// The local ACK timeout expired.
    Timeout = bindings::RDMA_SW_RETRY_TIMEOUT as i32,
    /// The responder sent a PSN sequence error NAK.
    SequenceNak = bindings::RDMA_SW_RETRY_SEQ_NAK as i32,
    /// The wait an RNR NAK asked for is over.
    Rnr = bindings::RDMA_SW_RETRY_RNR as i32,
}

/// A QP of the RDMA device on network device `dev` moved from `old` to `new` state, for the
/// reason `why` (`rdma_sw:rdma_sw_qp_state`).
pub fn qp_state(dev: &CStr, qpn: u32, old: QpState, new: QpState, why: &CStr) {
    // SAFETY: Both strings are NUL-terminated and outlive the call.
    unsafe {
        rdma_sw_qp_state(
            dev.as_char_ptr(),
            qpn,
            old as c_int,
            new as c_int,
            why.as_char_ptr(),
        )
    }
}

/// A QP's requester goes back to `psn`, for `cause` (`rdma_sw:rdma_sw_retry`).
pub fn retry(dev: &CStr, qpn: u32, psn: u32, cause: RetryCause) {
    // SAFETY: `dev` is NUL-terminated and outlives the call.
    unsafe { rdma_sw_retry(dev.as_char_ptr(), qpn, psn, cause as c_int) }
}

/// A QP's responder sent a NAK or RNR NAK with the AETH `syndrome` for `psn`
/// (`rdma_sw:rdma_sw_nak_sent`).
pub fn nak_sent(dev: &CStr, qpn: u32, psn: u32, syndrome: u8) {
    // SAFETY: `dev` is NUL-terminated and outlives the call.
    unsafe { rdma_sw_nak_sent(dev.as_char_ptr(), qpn, psn, syndrome) }
}

/// A QP's requester received a NAK or RNR NAK with the AETH `syndrome` for `psn`
/// (`rdma_sw:rdma_sw_nak_rcvd`).
pub fn nak_received(dev: &CStr, qpn: u32, psn: u32, syndrome: u8) {
    // SAFETY: `dev` is NUL-terminated and outlives the call.
    unsafe { rdma_sw_nak_rcvd(dev.as_char_ptr(), qpn, psn, syndrome) }
}
