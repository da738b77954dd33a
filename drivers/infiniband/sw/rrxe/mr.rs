// SPDX-License-Identifier: GPL-2.0

//! The memory region verbs: [`RrxeMr`], the driver's part of an `ib_mr`, and what
//! registers, maps, changes, prefetches and deregisters it. The regions themselves, what
//! the key table holds, are in [`crate::mem`].

use crate::mem::{
    FastRegion, Key, MrInner, PageLists, UserMem, UserRegion, LOCAL_DMA_LKEY, MAX_FAST_REG_PAGES,
    SUPPORTED_ACCESS,
};
use crate::params::Charge;
use crate::Rrxe;
use kernel::prelude::*;
use kernel::rdma::{
    mr::{Access, AccessFlags, DmaPage, Mr, MrKeys, MrRereg, MrSg, MrType, Umem, UserMrReq},
    odp::{MrAdvice, OdpUmem},
    pd::Pd,
    wr::Sge,
    BhGuard, MaySleep,
};
use kernel::sync::Arc;

/// Per-MR state.
pub(crate) struct RrxeMr {
    /// The region in the key table; `None` for a kernel PD's DMA region, which is named by
    /// the device's `local_dma_lkey` instead.
    inner: Option<Arc<MrInner>>,
    _charge: Charge,
}

impl RrxeMr {
    /// Registers user memory (`ibv_reg_mr`).
    pub(crate) fn reg_user(
        pd: &Pd<Rrxe>,
        req: &UserMrReq,
        ctx: &MaySleep<'_>,
    ) -> Result<(MrKeys, Self)> {
        if !req.access.is_within(SUPPORTED_ACCESS | Access::OnDemand) {
            return Err(EOPNOTSUPP);
        }
        let dev = pd.device();
        let data = dev.data();
        let charge = data.mrs_used.take()?;
        let len = usize::try_from(req.length).map_err(|_| EINVAL)?;
        let odp = req.access.contains(Access::OnDemand);
        let umem = if odp {
            UserMem::Odp(OdpUmem::get(ctx, dev, req.start, len, req.access)?)
        } else {
            UserMem::Pinned(Umem::get(ctx, dev, req.start, len, req.access)?)
        };
        let pd_id = pd.data().id;
        let mut key = LOCAL_DMA_LKEY;
        let inner = data.shared.keys.insert(|k| {
            key = k;
            let region = UserRegion::new(umem, req.iova, req.length, req.access, pd_id, k);
            Ok(Arc::new(MrInner::User(region), crate::params::gfp_user())?)
        })?;
        if odp {
            data.shared.faults.count_region(true);
        }
        Ok(Self::keyed(inner, key, charge))
    }

    /// Returns the keys of a region in the key table under `key` (lkey and rkey alike), and
    /// its state.
    fn keyed(inner: Arc<MrInner>, key: Key, charge: Charge) -> (MrKeys, Self) {
        (
            MrKeys {
                lkey: key.raw(),
                rkey: key.raw(),
            },
            Self {
                inner: Some(inner),
                _charge: charge,
            },
        )
    }

    /// Allocates a fast-registration region of at most `max_num_sg` pages (`ib_alloc_mr`),
    /// free until an `IB_WR_REG_MR` registers it. Only `IB_MR_TYPE_MEM_REG` is supported.
    pub(crate) fn alloc(pd: &Pd<Rrxe>, mr_type: MrType, max_num_sg: u32) -> Result<(MrKeys, Self)> {
        if mr_type != MrType::MemReg {
            return Err(EOPNOTSUPP);
        }
        if max_num_sg == 0 || max_num_sg > MAX_FAST_REG_PAGES {
            return Err(EINVAL);
        }
        let data = pd.device().data();
        let charge = data.mrs_used.take()?;
        let lists = PageLists::new(usize::try_from(max_num_sg)?)?;
        let pd_id = pd.data().id;
        let mut key = LOCAL_DMA_LKEY;
        let inner = data.shared.keys.insert(|k| {
            key = k;
            Ok(Arc::new(
                MrInner::Fast(FastRegion::new(pd_id, k, lists)?),
                crate::params::gfp_user(),
            )?)
        })?;
        Ok(Self::keyed(inner, key, charge))
    }

    /// Returns the fast region of `mr`, if it is one.
    fn fast(mr: &Mr<Rrxe>) -> Result<&FastRegion> {
        match mr.data().inner.as_deref() {
            Some(MrInner::Fast(f)) => Ok(f),
            _ => Err(EINVAL),
        }
    }

    /// `ib_map_mr_sg` ([`FastRegion::map_sg`]).
    pub(crate) fn map_sg(mr: &Mr<Rrxe>, sg: MrSg<'_>) -> Result<usize> {
        Self::fast(mr)?.map_sg(mr, sg)
    }

    /// The next page of a mapping `map_sg` is making ([`FastRegion::map_page`]).
    pub(crate) fn map_page(mr: &Mr<Rrxe>, page: DmaPage) -> Result {
        Self::fast(mr)?.map_page(page)
    }

    /// Prepares an `IB_WR_REG_MR` of `mr` with `key` when a QP of protection domain `pd_id`
    /// posts it ([`FastRegion::prepare_registration`]); `EINVAL` if `mr` is not a fast
    /// region.
    pub(crate) fn prepare_registration(mr: &Mr<Rrxe>, pd_id: u64, key: Key) -> Result {
        Self::fast(mr)?.prepare_registration(mr, pd_id, key)
    }

    /// The DMA region of a kernel consumer's PD (`ib_get_dma_mr`): local access to kernel
    /// memory through the local DMA lkey. Remote access to all of memory (a global rkey)
    /// is refused.
    pub(crate) fn dma(pd: &Pd<Rrxe>, access: AccessFlags) -> Result<(MrKeys, Self)> {
        if !access.is_within(Access::LocalWrite.into()) {
            return Err(EOPNOTSUPP);
        }
        let charge = pd.device().data().mrs_used.take()?;
        Ok((
            MrKeys {
                lkey: LOCAL_DMA_LKEY.raw(),
                rkey: 0,
            },
            Self {
                inner: None,
                _charge: charge,
            },
        ))
    }

    /// Re-registers a user region in place (`ibv_rereg_mr`), keeping its keys and memory:
    /// a new PD, new access rights, or both, as rdma_rxe does (`EOPNOTSUPP` for new memory;
    /// [`UserRegion::rereg`]). The data path checks each access against the rights of the
    /// moment.
    pub(crate) fn rereg(mr: &Mr<Rrxe>, change: &MrRereg<'_, Rrxe>) -> Result {
        let Some(MrInner::User(u)) = mr.data().inner.as_deref() else {
            return Err(EINVAL);
        };
        if change.translation.is_some() {
            return Err(EOPNOTSUPP);
        }
        u.rereg(change.pd.map(|pd| pd.data().id), change.access)
    }

    /// Prefetches the pages of on-demand paging regions of `pd` that `sges` name by lkey
    /// (`ibv_advise_mr`), as rdma_rxe: `EINVAL` for an lkey that names no region of the PD
    /// with local write access (rdma_rxe's lookup) or a region that is not ODP or a range
    /// outside it, `EPERM` for a write prefetch of memory registered read-only. Done before
    /// returning, also when the caller did not ask to wait (`IB_UVERBS_ADVISE_MR_FLAG_FLUSH`):
    /// the call is the process context the faults need.
    pub(crate) fn advise(
        pd: &Pd<Rrxe>,
        advice: MrAdvice,
        sges: &[Sge],
        ctx: &MaySleep<'_>,
    ) -> Result {
        let data = pd.device().data();
        for sge in sges {
            // Held past the BH section: a deregistration meanwhile leaves the last reference
            // here, dropped in process context.
            let mr = {
                let _bh = BhGuard::new();
                data.shared.keys.get(Key::from_raw(sge.lkey()))
            }
            .ok_or(EINVAL)?;
            let MrInner::User(u) = &*mr else {
                return Err(EINVAL);
            };
            let m = u.odp().ok_or(EINVAL)?;
            let off = u
                .check_local(
                    Key::from_raw(sge.lkey()),
                    pd.data().id,
                    sge.addr(),
                    sge.length(),
                )
                .ok_or(EINVAL)?;
            let len = usize::try_from(sge.length())?;
            match advice {
                MrAdvice::PrefetchWrite if !m.is_writable() => return Err(EPERM),
                MrAdvice::PrefetchWrite => mr.fault(ctx, off, len, true)?,
                MrAdvice::Prefetch => mr.fault(ctx, off, len, false)?,
                MrAdvice::PrefetchNoFault => m.snapshot(ctx, off, len)?,
            }
        }
        Ok(())
    }

    /// Deregisters (`ibv_dereg_mr`): the key stops resolving before the memory is unpinned.
    /// `EBUSY` while memory windows are bound to the region (IBA 10.6.3.4; the core retries
    /// at cleanup once the windows are deallocated).
    pub(crate) fn dereg(mr: &Mr<Rrxe>) -> Result {
        let dev_data = mr.device().data();
        if let Some(inner) = &mr.data().inner {
            if let MrInner::User(u) = &**inner {
                u.begin_dereg()?;
                if u.odp().is_some() {
                    dev_data.shared.faults.count_region(false);
                }
            }
            dev_data.shared.keys.remove(inner);
        }
        Ok(())
    }
}
