// SPDX-License-Identifier: GPL-2.0

//! The driver fence: [`DriverRegistration`].
//!
//! It keeps modules that bind the same driver id out while it exists, and unregisters every
//! device of the driver (`ib_unregister_driver()`) when it is dropped at module unload.

use super::Driver;
use crate::{
    bindings,
    container_of,
    prelude::*,
    str::CStrExt,
    types::Opaque, //
};
use core::marker::PhantomData;

/// Fences a driver's devices: while it exists, modules that bind the same [`DriverId`] cannot
/// be loaded, and dropping it unregisters every device of the driver.
///
/// The RDMA core can unregister all devices of a driver id at once
/// (`ib_unregister_driver()`), the only fence that guarantees no device operation or queued
/// unregistration runs after the driver's module is gone. Two drivers sharing one id (here the
/// Rust and the C soft-RoCE drivers, which both report `RDMA_DRIVER_RXE` so that rdma-core's
/// provider binds to them) would also unregister each other's devices, and the C driver would
/// mistake the other's devices for its own. So this registration keeps the conflicting modules
/// out: it fails if one is loaded, and vetoes their loading while it exists.
///
/// # Invariants
///
/// `nb` is registered as a module notifier from a successful [`DriverRegistration::new`]
/// until drop.
///
/// [`DriverId`]: super::DriverId
#[pin_data(PinnedDrop)]
pub struct DriverRegistration<T: Driver> {
    #[pin]
    nb: Opaque<bindings::notifier_block>,
    conflicts: &'static [&'static CStr],
    _t: PhantomData<T>,
}

// SAFETY: The notifier block is only touched by the notifier chain under its own lock.
unsafe impl<T: Driver> Send for DriverRegistration<T> {}
// SAFETY: See the `Send` implementation; `conflicts` is immutable.
unsafe impl<T: Driver> Sync for DriverRegistration<T> {}

impl<T: Driver> DriverRegistration<T> {
    /// Registers the driver fence; `conflicts` names the modules that bind the same driver id.
    ///
    /// Fails with `EBUSY` if one of them is loaded.
    pub fn new(conflicts: &'static [&'static CStr]) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            conflicts,
            _t: PhantomData,
            nb <- Opaque::try_ffi_init(move |nb: *mut bindings::notifier_block| {
                // SAFETY: `nb` is valid for writes and pinned; it is unregistered in drop.
                unsafe {
                    nb.write(bindings::notifier_block {
                        notifier_call: Some(Self::module_callback),
                        ..pin_init::zeroed()
                    });
                    register_notifier(nb)?;
                }
                // A conflicting module that came before the notifier was registered is in the
                // module kset already (sysfs is set up before a module's notifier runs).
                let this = crate::module::this_module::<T::OwnerModule>().as_ptr();
                if let Some(name) = conflicts.iter().find(|n| module_loaded(this, n)) {
                    pr_err!(
                        "{}: {} is loaded and binds the same RDMA driver id\n",
                        Self::driver_name(),
                        name.to_str().unwrap_or("?")
                    );
                    // SAFETY: Registered just above.
                    unsafe { unregister_notifier(nb) };
                    return Err(EBUSY);
                }
                Ok(())
            }),
        })
    }

    fn driver_name() -> &'static str {
        <T::OwnerModule as crate::ModuleMetadata>::NAME
            .to_str()
            .unwrap_or("?")
    }

    /// # Safety
    ///
    /// `nb` is the `nb` field of a live `DriverRegistration<T>`; for `MODULE_STATE_COMING`,
    /// `data` is the `struct module` being loaded.
    unsafe extern "C" fn module_callback(
        nb: *mut bindings::notifier_block,
        action: c_ulong,
        data: *mut c_void,
    ) -> c_int {
        if action != bindings::module_state_MODULE_STATE_COMING as c_ulong {
            return bindings::NOTIFY_DONE as c_int;
        }
        // SAFETY: `nb` is embedded in a live `DriverRegistration<T>` (notifier registered).
        let this = unsafe { &*container_of!(Opaque::cast_from(nb), Self, nb) };
        // SAFETY: For `MODULE_STATE_COMING`, `data` is the module being loaded; its name is a
        // NUL-terminated array.
        let name = unsafe { CStr::from_char_ptr((*data.cast::<bindings::module>()).name.as_ptr()) };
        if this.conflicts.contains(&name) {
            pr_err!(
                "{}: refusing to load {}: both bind the same RDMA driver id\n",
                Self::driver_name(),
                name.to_str().unwrap_or("?")
            );
            // notifier_from_errno(-EBUSY)
            return (bindings::NOTIFY_STOP_MASK | (bindings::NOTIFY_OK + bindings::EBUSY)) as c_int;
        }
        bindings::NOTIFY_DONE as c_int
    }
}

/// Registers `nb` as a module notifier. Without `CONFIG_MODULES` no module is ever loaded
/// after this one: there is nothing to watch, and nothing is registered.
///
/// # Safety
///
/// `nb` is a valid, pinned notifier block that stays valid until [`unregister_notifier`].
unsafe fn register_notifier(nb: *mut bindings::notifier_block) -> Result {
    #[cfg(CONFIG_MODULES)]
    {
        // SAFETY: By the function's safety requirements.
        crate::error::to_result(unsafe { bindings::register_module_notifier(nb) })
    }
    #[cfg(not(CONFIG_MODULES))]
    {
        let _ = nb;
        Ok(())
    }
}

/// Undoes [`register_notifier`].
///
/// # Safety
///
/// `nb` was registered by [`register_notifier`] and not unregistered since.
unsafe fn unregister_notifier(nb: *mut bindings::notifier_block) {
    #[cfg(CONFIG_MODULES)]
    {
        // SAFETY: By the function's safety requirements.
        unsafe { bindings::unregister_module_notifier(nb) };
    }
    #[cfg(not(CONFIG_MODULES))]
    let _ = nb;
}

/// Returns whether a module named `name` is loaded, by looking it up in the module kset of
/// `this` (null for built-in code, which cannot look).
fn module_loaded(this: *mut bindings::module, name: &CStr) -> bool {
    if this.is_null() {
        return false;
    }
    // SAFETY: `this` is our own live module; `mkobj.kobj.kset` is the module kset, which
    // outlives every module. `kset_find_obj` returns a counted kobject or null.
    let kobj = unsafe { bindings::kset_find_obj((*this).mkobj.kobj.kset, name.as_char_ptr()) };
    if kobj.is_null() {
        return false;
    }
    // SAFETY: Drops the reference `kset_find_obj` took.
    unsafe { bindings::kobject_put(kobj) };
    true
}

#[pinned_drop]
impl<T: Driver> PinnedDrop for DriverRegistration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: Unregisters every device of the driver id synchronously, calling
        // `dealloc_driver` for each; no device operation of `T` runs afterwards. By the
        // module exclusion above, every device with this id belongs to `T`.
        unsafe { bindings::ib_unregister_driver(T::DRIVER_ID.0) };
        // SAFETY: By the type invariant `nb` is registered.
        unsafe { unregister_notifier(self.nb.get()) };
    }
}
