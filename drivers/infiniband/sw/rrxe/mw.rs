// SPDX-License-Identifier: GPL-2.0

//! The memory window verbs: [`RrxeMw`], the driver's part of an `ib_mw`, and what allocates
//! and deallocates it. The window itself, what the key table holds, is
//! [`Window`](crate::mem::Window).

use crate::mem::{Key, MrInner, Window};
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
        let mut key = Key::from_raw(0);
        let inner = data.shared.keys.insert(|k| {
            key = k;
            Ok(Arc::new(
                MrInner::Window(Window::new(pd_id, k, type2)?),
                crate::params::gfp_user(),
            )?)
        })?;
        Ok((
            key.raw(),
            Self {
                inner,
                _charge: charge,
            },
        ))
    }

    /// Deallocates a window (`ibv_dealloc_mw`): its key stops resolving, then (once the data
    /// path is done with it) its binding is dropped with the window.
    pub(crate) fn dealloc(mw: &Mw<Rrxe>) {
        mw.device().data().shared.keys.remove(&mw.data().inner);
    }
}
