// SPDX-License-Identifier: GPL-2.0

//! Kernel consumers' work requests: `ib_post_send` and `ib_post_recv` lay a work request
//! out as an rxe WQE in the QP's ring, from where the data path takes it like a user's (as
//! `rdma_rxe` does). The WQE is validated at post time, so that a work request the QP
//! cannot carry out fails `ib_post_send` instead of completing in error; an
//! `IB_SEND_INLINE` send's payload is copied into the WQE then, through the same key
//! resolution as every other local access.

use super::QpShared;
use crate::mr::Need;
use crate::proto::{
    opcode::QpType,
    rc::{Transport, WrOp},
    uabi::{
        self, KernelProducer, RxeRecvWqeFields, RxeSendWqeFields, RxeSgeFields, SendFlags, WrOpcode,
    },
};
use kernel::prelude::*;
use kernel::rdma::{qp::QpState, wr::Sge};

impl QpShared {
    /// Kernel consumers: queues a send WQE (header and SGEs) in the send ring.
    pub(crate) fn push_send(&self, wqe: &RxeSendWqeFields, sges: &[Sge]) -> Result {
        self.with_engine(|this, e, _| {
            if sges.len() > usize::try_from(e.caps.max_send_sge)? {
                return Err(EINVAL);
            }
            let inline = wqe.wr.send_flags & SendFlags::INLINE != 0;
            if inline {
                // Refused here, not with an error completion later (`ib_post_send` fails).
                let op = WrOpcode::from_raw(wqe.wr.opcode).ok_or(EINVAL)?;
                if !op.inline_allowed() || wqe.dma.length > e.caps.max_inline_data {
                    return Err(EINVAL);
                }
            }
            let p = e.posting.as_mut().ok_or(EINVAL)?;
            let buf = lay_out(&mut p.buf, this.sq.geometry().elem_size())?;
            wqe.write(buf).map_err(|_| EINVAL)?;
            if inline {
                // The payload is copied now: the consumer may reuse its buffers as soon as
                // `ib_post_send` returns.
                this.copy_inline(buf, sges)?;
            } else {
                write_sges_to(buf, uabi::SEND_WQE_DATA_OFFSET, sges)?;
            }
            // A work request the QP cannot carry out is refused by `ib_post_send` (the core
            // points `bad_wr` at it), not completed in error later: the same validation the
            // data path applies, and the operations this QP's transport has.
            {
                let checked = uabi::validate_send_wqe(buf, &e.sq_params).map_err(|_| EINVAL)?;
                let op = WrOp::from_wr_opcode(checked.opcode()).ok_or(EINVAL)?;
                let carried = match this.qp_type {
                    QpType::Ud => matches!(op, WrOp::Send | WrOp::SendWithImm),
                    QpType::Uc => op.allowed_on(Transport::Uc),
                    _ => op.allowed_on(Transport::Rc),
                };
                if !carried {
                    return Err(EINVAL);
                }
            }
            // A full ring is the consumer's to wait on (`ib_post_send` says ENOMEM).
            this.sq.produce(&mut p.sq, buf).map_err(|_| ENOMEM)
        })
    }

    /// Kernel consumers: queues a receive WQE in the receive ring.
    pub(crate) fn push_recv(&self, wqe: &RxeRecvWqeFields, sges: &[Sge]) -> Result {
        self.with_engine(|this, e, ev| {
            let rq = this.rq.as_ref().ok_or(EINVAL)?;
            if sges.len() > usize::try_from(e.caps.max_recv_sge)? {
                return Err(EINVAL);
            }
            let p = e.posting.as_mut().ok_or(EINVAL)?;
            let producer = p.rq.as_mut().ok_or(EINVAL)?;
            let buf = lay_out(&mut p.buf, rq.geometry().elem_size())?;
            wqe.write(buf).map_err(|_| EINVAL)?;
            write_sges_to(buf, uabi::RECV_WQE_DATA_OFFSET, sges)?;
            rq.produce(producer, buf).map_err(|_| ENOMEM)?;
            if e.attrs.state == Some(QpState::Err) {
                this.flush_queues(e, ev);
            }
            Ok(())
        })
    }
}

impl QpShared {
    /// Copies the bytes `sges` name (each resolved for a local read, as the data path
    /// would) into the inline data area of the WQE being laid out in `buf`.
    fn copy_inline(&self, buf: &mut [u8], sges: &[Sge]) -> Result {
        let mut off = uabi::SEND_WQE_DATA_OFFSET;
        for s in sges {
            let n = usize::try_from(s.length())?;
            let end = off.checked_add(n).ok_or(EINVAL)?;
            let dst = buf.get_mut(off..end).ok_or(EINVAL)?;
            self.resolve(s.lkey(), s.addr(), s.length(), Need::LocalRead)?
                .read(0, dst)?;
            off = end;
        }
        Ok(())
    }
}

/// A kernel consumer's side of its QP's rings, kept under the engine lock.
pub(crate) struct Posting {
    /// The producer of the send ring.
    pub(super) sq: KernelProducer,
    /// The producer of the receive ring.
    pub(super) rq: Option<KernelProducer>,
    /// Where a work request is laid out as a WQE before it is queued.
    pub(super) buf: KVVec<u8>,
}

/// Returns the posting buffer, cleared, for a WQE of `elem` bytes.
fn lay_out(buf: &mut [u8], elem: usize) -> Result<&mut [u8]> {
    let buf = buf.get_mut(..elem).ok_or(EINVAL)?;
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
