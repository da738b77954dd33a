// SPDX-License-Identifier: GPL-2.0

//! Memory regions: pinned user memory and the keys that name it.
//!
//! A key is `index << 8 | random byte` (as in the C driver, which interoperating peers do
//! not care about, but the random byte keeps keys from being guessed from the allocation
//! order alone); the local and remote keys are the same. The device's table maps the index
//! to the region, so the data path can resolve an lkey or rkey without the core's help and a
//! stale key (same index, another byte) does not match.

use crate::params::Charge;
pub(crate) use crate::proto::target::Access as Need;
use crate::proto::target::Region;
use crate::Rrxe;
use kernel::prelude::*;
use kernel::rdma::{
    mr::{AccessFlags, Mr, MrKeys, Umem, UserMrReq},
    pd::Pd,
};
use kernel::sync::Arc;

/// Access flags rrxe supports on memory regions.
const SUPPORTED_ACCESS: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ)
    .union(AccessFlags::REMOTE_ATOMIC)
    .union(AccessFlags::MW_BIND)
    // Hints a device may ignore (perftest asks for relaxed ordering).
    .union(AccessFlags::OPTIONAL);

/// What the data path needs of a memory region.
///
/// Shared between the region and the device's key table; dropping the last reference
/// unpins the memory, which may sleep: the data path must not drop one in atomic context.
pub(crate) struct MrInner {
    /// The pinned user memory.
    umem: Umem,
    /// Start of the region as the wire and SGEs name it.
    iova: u64,
    /// Length in bytes.
    length: u64,
    /// Access rights.
    access: AccessFlags,
    /// The protection domain's identity.
    pd_id: u64,
    /// The key (lkey and rkey).
    pub(crate) key: u32,
}

impl MrInner {
    /// Checks an access of `len` bytes at `va` by a QP of protection domain `pd_id`, and
    /// returns the offset in the pinned memory: the region must be in the same PD, grant the
    /// right and contain the whole range ([`Region::check`]).
    pub(crate) fn check(&self, pd_id: u64, va: u64, len: u32, need: Need) -> Option<usize> {
        let region = Region {
            iova: self.iova,
            length: self.length,
            rights: self.access.bits(),
            pd: self.pd_id,
        };
        let off = region.check(pd_id, va, len, need).ok()?;
        usize::try_from(off).ok()
    }

    /// Copies out of the region at a checked offset.
    pub(crate) fn read(&self, off: usize, out: &mut [u8]) -> Result {
        self.umem.copy_from(off, out)
    }

    /// Copies into the region at a checked offset.
    pub(crate) fn write(&self, off: usize, data: &[u8]) -> Result {
        self.umem.copy_to(off, data)
    }
}

/// Per-MR state.
pub(crate) struct RrxeMr {
    /// The region in the key table; `None` for a kernel PD's DMA region, which is named by
    /// the device's `local_dma_lkey` instead.
    inner: Option<Arc<MrInner>>,
    _charge: Charge,
}

impl RrxeMr {
    /// Registers user memory (`ibv_reg_mr`).
    pub(crate) fn reg_user(pd: &Pd<Rrxe>, req: &UserMrReq) -> Result<(MrKeys, Self)> {
        if !req.access.is_within(SUPPORTED_ACCESS) {
            return Err(EOPNOTSUPP);
        }
        let dev = pd.device();
        let data = dev.data();
        let charge = data.mrs_used.take()?;
        let len = usize::try_from(req.length).map_err(|_| EINVAL)?;
        let umem = Umem::get(dev, req.start, len, req.access)?;
        let inner = data.insert_mr(|key| {
            Ok(Arc::new(
                MrInner {
                    umem,
                    iova: req.iova,
                    length: req.length,
                    access: req.access,
                    pd_id: pd.data().id,
                    key,
                },
                GFP_KERNEL_ACCOUNT,
            )?)
        })?;
        let key = inner.key;
        Ok((
            MrKeys {
                lkey: key,
                rkey: key,
            },
            Self {
                inner: Some(inner),
                _charge: charge,
            },
        ))
    }

    /// The DMA region of a kernel consumer's PD (`ib_get_dma_mr`): local access to kernel
    /// memory through the local DMA lkey. Remote access to all of memory (a global rkey)
    /// is refused.
    pub(crate) fn dma(pd: &Pd<Rrxe>, access: AccessFlags) -> Result<(MrKeys, Self)> {
        if !access.is_within(AccessFlags::LOCAL_WRITE) {
            return Err(EOPNOTSUPP);
        }
        let charge = pd.device().data().mrs_used.take()?;
        Ok((
            MrKeys {
                lkey: crate::engine::LOCAL_DMA_LKEY,
                rkey: 0,
            },
            Self {
                inner: None,
                _charge: charge,
            },
        ))
    }

    /// Deregisters (`ibv_dereg_mr`): the key stops resolving before the memory is unpinned.
    pub(crate) fn dereg(mr: &Mr<Rrxe>, dev_data: &crate::device::RrxeDev) {
        if let Some(inner) = &mr.data().inner {
            dev_data.free_mr_index(inner.key >> 8);
        }
    }
}

#[kunit_tests(rrxe_mr)]
mod tests {
    use crate::proto::target::{rights, Access, AccessError, Region};

    /// Every key resolution of the data path goes through `Region::check`: the PD, the
    /// right, and the whole range, with no arithmetic overflow on hostile addresses.
    #[test]
    fn region_check_refuses_what_the_spec_refuses() {
        let r = Region {
            iova: 0x7f00_0000_1000,
            length: 4096 * 3,
            rights: rights::LOCAL_WRITE | rights::REMOTE_READ | rights::REMOTE_ATOMIC,
            pd: 3,
        };
        let end = r.iova + r.length;
        assert_eq!(r.check(3, r.iova, 4096 * 3, Access::RemoteRead), Ok(0));
        assert_eq!(
            r.check(3, end - 8, 8, Access::RemoteAtomic),
            Ok(r.length - 8)
        );
        assert_eq!(r.check(3, end, 0, Access::RemoteRead), Ok(r.length));
        assert_eq!(
            r.check(3, end - 8, 9, Access::RemoteRead),
            Err(AccessError::OutOfBounds)
        );
        assert_eq!(
            r.check(3, r.iova - 1, 2, Access::LocalRead),
            Err(AccessError::OutOfBounds)
        );
        assert_eq!(
            r.check(3, u64::MAX - 3, 8, Access::LocalRead),
            Err(AccessError::OutOfBounds)
        );
        assert_eq!(
            r.check(4, r.iova, 1, Access::LocalRead),
            Err(AccessError::WrongPd)
        );
        assert_eq!(
            r.check(3, r.iova, 1, Access::RemoteWrite),
            Err(AccessError::NoRight)
        );
        assert_eq!(r.check(3, r.iova, 1, Access::LocalWrite), Ok(0));
    }
}
