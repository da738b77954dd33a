// SPDX-License-Identifier: GPL-2.0

//! Memory windows (`ibv_alloc_mw`): a window is a key in the device's key table
//! ([`MrInner::Window`]), bound and invalidated by the requester in send queue order and
//! resolved by the responder like any rkey (see the [`crate::mr`] module).

use crate::mr::{MrInner, Window};
use crate::params::Charge;
use crate::Rrxe;
use kernel::prelude::*;
use kernel::rdma::mw::{Mw, MwInit, MwType};
use kernel::sync::Arc;

/// Per-window state.
pub(crate) struct RrxeMw {
    /// The window in the key table.
    inner: Arc<MrInner>,
    _charge: Charge,
}

impl RrxeMw {
    /// Allocates a window (type 1 or 2B) in `init.pd`, unbound; returns its key.
    pub(crate) fn alloc(init: &MwInit<'_, Rrxe>) -> Result<(u32, Self)> {
        let data = init.pd.device().data();
        let charge = data.mws_used.take()?;
        let pd_id = init.pd.data().id;
        let type2 = init.mw_type == MwType::Type2;
        let mut key = 0;
        let inner = data.insert_mr(|k| {
            key = k;
            Ok(Arc::new(
                MrInner::Window(Window::new(pd_id, k, type2)?),
                crate::params::gfp_user(),
            )?)
        })?;
        Ok((
            key,
            Self {
                inner,
                _charge: charge,
            },
        ))
    }

    /// Deallocates a window (`ibv_dealloc_mw`): its key stops resolving, then (once the data
    /// path is done with it) its binding is dropped with the window.
    pub(crate) fn dealloc(mw: &Mw<Rrxe>) {
        mw.device().data().free_mr_index(mw.data().inner.index());
    }
}
