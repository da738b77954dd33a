// SPDX-License-Identifier: GPL-2.0

//! Kernel consumers' work requests: `ib_post_send` and `ib_post_recv` lay a work request
//! out as an rxe WQE in the QP's ring, from where the data path takes it like a user's.

use super::{Engine, QpShared};
use crate::proto::uabi::{self, RxeRecvWqeFields, RxeSendWqeFields, RxeSgeFields};
use kernel::prelude::*;
use kernel::rdma::{qp::QpState, wr::Sge};

impl QpShared {
    /// Kernel consumers: queues a send WQE (header and SGEs) in the send ring.
    pub(crate) fn push_send(&self, wqe: &RxeSendWqeFields, sges: &[Sge]) -> Result {
        self.with_engine(|this, e, _| {
            if sges.len() > usize::try_from(e.caps.max_send_sge)? {
                return Err(EINVAL);
            }
            let elem = this.sq.geometry().elem_size();
            let buf = lay_out(e, elem)?;
            wqe.write(buf).map_err(|_| EINVAL)?;
            write_sges_to(buf, uabi::SEND_WQE_DATA_OFFSET, sges)?;
            // A full ring is the consumer's to wait on (`ib_post_send` says ENOMEM).
            this.sq.push(buf).map_err(|_| ENOMEM)
        })
    }

    /// Kernel consumers: queues a receive WQE in the receive ring.
    pub(crate) fn push_recv(&self, wqe: &RxeRecvWqeFields, sges: &[Sge]) -> Result {
        self.with_engine(|this, e, ev| {
            let rq = this.rq.as_ref().ok_or(EINVAL)?;
            if sges.len() > usize::try_from(e.caps.max_recv_sge)? {
                return Err(EINVAL);
            }
            let elem = rq.geometry().elem_size();
            let buf = lay_out(e, elem)?;
            wqe.write(buf).map_err(|_| EINVAL)?;
            write_sges_to(buf, uabi::RECV_WQE_DATA_OFFSET, sges)?;
            rq.push(buf).map_err(|_| ENOMEM)?;
            if e.attrs.state == Some(QpState::Err) {
                this.flush_queues(e, ev);
            }
            Ok(())
        })
    }
}

/// Returns the engine's posting buffer, cleared, for a WQE of `elem` bytes.
fn lay_out(e: &mut Engine, elem: usize) -> Result<&mut [u8]> {
    let buf = e.post_buf.get_mut(..elem).ok_or(EINVAL)?;
    buf.fill(0);
    Ok(buf)
}

/// Writes `sges` as `struct rxe_sge`s into a WQE slot from byte `at`.
fn write_sges_to(buf: &mut [u8], at: usize, sges: &[Sge]) -> Result {
    let mut off = at;
    for s in sges {
        let end = off.checked_add(uabi::SGE_LEN).ok_or(EINVAL)?;
        let dst = buf.get_mut(off..end).ok_or(EINVAL)?;
        RxeSgeFields {
            addr: s.addr(),
            length: s.length(),
            lkey: s.lkey(),
        }
        .write(dst)
        .map_err(|_| EINVAL)?;
        off = end;
    }
    Ok(())
}
