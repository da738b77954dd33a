// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues: one receive queue for every QP attached to it.
//!
//! A user SRQ is an rxe ring of receive WQEs that librxe's `ibv_post_srq_recv` writes
//! (mapped as the RQ of a QP is, `struct rxe_create_srq_resp` gives its `mminfo`); a kernel
//! consumer's is a [`KernelRing`](crate::engine::KernelRing) of checked receive work
//! requests (`ib_post_srq_recv`).
//! The queue itself, which the responder of whichever QP receives a request that needs a
//! WQE takes from, is the engine's ([`SrqQueue`]); this file has the verbs.
//!
//! Not offered (as the device attributes say): XRC and tag-matching SRQs.

use crate::engine::{srq_geometry, SrqQueue, SrqRing};
use crate::params::{self, Charge};
use crate::proto::uabi::{self, CreateSrqRespFields};
use crate::queue::SharedQueue;
use crate::Rrxe;
use kernel::prelude::*;
use kernel::rdma::{
    device::{Device, UData},
    pd::Pd,
    srq::{Srq, SrqAttr, SrqAttrMask, SrqAttrs, SrqInit},
    wr::RecvWr,
};
use kernel::sync::Arc;
use kernel::uaccess::{UserPtr, UserSlice};

/// Per-SRQ driver data.
pub(crate) struct RrxeSrq {
    /// The queue, shared with the QPs attached to the SRQ.
    pub(crate) shared: Arc<SrqQueue>,
    _charge: Charge,
}

impl RrxeSrq {
    /// `ibv_create_srq` / `ib_create_srq` (`rxe_create_srq`).
    pub(crate) fn new(
        dev: &Device<Rrxe>,
        _pd: &Pd<Rrxe>,
        init: &SrqInit<'_, Rrxe>,
    ) -> Result<Self> {
        if !init.basic {
            return Err(EOPNOTSUPP);
        }
        let a = init.attrs;
        if a.max_wr == 0 || a.max_wr > params::MAX_SRQ_WR || a.max_sge > params::MAX_SRQ_SGE {
            return Err(EINVAL);
        }
        // As rdma_rxe: at least one SGE per WQE.
        let max_sge = a.max_sge.max(1);
        let elem = uabi::recv_wqe_size(max_sge).map_err(|_| EINVAL)?;
        let geo = srq_geometry(a.max_wr, elem)?;
        if a.srq_limit > geo.capacity() {
            return Err(EINVAL);
        }
        let charge = dev.data().srqs.take()?;
        // Reported to userspace only (librxe does not use it): distinct, never looked up.
        let num = dev.data().next_srq_num();
        let ring = match (init.udata, init.ucontext) {
            (Some(udata), Some(ctx)) => {
                if udata.in_len() != 0 || udata.out_len() < CreateSrqRespFields::LEN {
                    return Err(EINVAL);
                }
                let (q, mi) = SharedQueue::new_user_mi(ctx, geo)?;
                // librxe 44 does not zero the response: every field is written.
                let resp = CreateSrqRespFields {
                    mi,
                    srq_num: num,
                    reserved: 0,
                };
                let mut bytes = [0u8; CreateSrqRespFields::LEN];
                resp.write(&mut bytes).map_err(|_| EINVAL)?;
                udata.respond(&bytes)?;
                SrqRing::User(q)
            }
            (None, _) => SrqRing::Kernel,
            (Some(_), None) => return Err(EINVAL),
        };
        let attrs = SrqAttrs {
            max_wr: geo.capacity(),
            max_sge,
            srq_limit: a.srq_limit,
        };
        init.set_attrs(&attrs);
        Ok(Self {
            shared: SrqQueue::new(geo, ring, max_sge, a.srq_limit)?,
            _charge: charge,
        })
    }

    /// `ibv_modify_srq` / `ib_modify_srq`: arms the limit (`IB_SRQ_LIMIT`), resizes the SRQ
    /// (`IB_SRQ_MAX_WR`, as rdma_rxe).
    pub(crate) fn modify(
        srq: &Srq<Rrxe>,
        attrs: &SrqAttrs,
        mask: SrqAttrMask,
        udata: Option<&UData<Rrxe>>,
    ) -> Result {
        // struct rxe_modify_srq_cmd { __aligned_u64 mmap_info_addr; }: where librxe wants a
        // resized queue's mminfo (always sent; only a resize uses it).
        let mut cmd = [0u8; 8];
        if let Some(u) = udata {
            u.read_input(&mut cmd)?;
        }
        if !mask.is_within(SrqAttr::Limit | SrqAttr::MaxWr) {
            return Err(EINVAL);
        }
        if mask.contains(SrqAttr::MaxWr) {
            match udata {
                Some(udata) => Self::resize(srq, attrs.max_wr, u64::from_ne_bytes(cmd), udata)?,
                None => Self::resize_kernel(srq, attrs.max_wr)?,
            }
        }
        if mask.contains(SrqAttr::Limit) {
            srq.data().shared.arm(attrs.srq_limit)?;
        }
        Ok(())
    }

    /// Resizes a user SRQ to at least `max_wr` WQEs, keeping the waiting ones (rxe's
    /// `rxe_queue_resize()`): a new queue, its `struct mminfo` written at `mi_addr` for librxe
    /// to map it, the waiting WQEs moved into it under the SRQ's lock (librxe holds its
    /// posting lock during the call). `EINVAL` if they do not fit, or if the armed limit
    /// would exceed the new size.
    fn resize(srq: &Srq<Rrxe>, max_wr: u32, mi_addr: u64, udata: &UData<Rrxe>) -> Result {
        let this = &srq.data().shared;
        if max_wr == 0 || max_wr > params::MAX_SRQ_WR {
            return Err(EINVAL);
        }
        let ctx = udata.ucontext().ok_or(EINVAL)?;
        let geo = srq_geometry(max_wr, this.elem())?;
        let (queue, mi) = SharedQueue::new_user(ctx, geo)?;
        // Writing to userspace may fault and sleep: before the lock. If the move fails, the
        // verb fails and librxe keeps its mapping of the old queue.
        UserSlice::new(UserPtr::from_addr(usize::try_from(mi_addr)?), mi.len())
            .writer()
            .write_slice(&mi)?;
        this.resize_user(queue, geo)
    }

    /// Resizes a kernel consumer's SRQ to at least `max_wr` WQEs, keeping the waiting ones
    /// in order ([`SrqQueue::resize_kernel`]).
    fn resize_kernel(srq: &Srq<Rrxe>, max_wr: u32) -> Result {
        let this = &srq.data().shared;
        if max_wr == 0 || max_wr > params::MAX_SRQ_WR {
            return Err(EINVAL);
        }
        this.resize_kernel(srq_geometry(max_wr, this.elem())?)
    }

    /// `ibv_query_srq`.
    pub(crate) fn query(srq: &Srq<Rrxe>) -> SrqAttrs {
        let this = &srq.data().shared;
        let (srq_limit, capacity) = this.limit_and_capacity();
        SrqAttrs {
            max_wr: capacity,
            max_sge: this.max_sge(),
            srq_limit,
        }
    }

    /// `ib_post_srq_recv` of a kernel consumer: checks the work request and queues it.
    pub(crate) fn post_recv(srq: &Srq<Rrxe>, wr: &RecvWr<'_>) -> Result {
        srq.data().shared.post_recv(wr)
    }
}
