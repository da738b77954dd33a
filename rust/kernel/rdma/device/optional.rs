// SPDX-License-Identifier: GPL-2.0

//! The trampolines of the optional device operations of [`DeviceVTable`] (device and port
//! changes, management datagrams; the optional operations on objects are next to their
//! object), and the `parent` sysfs attribute ([`Driver::SHOW_PARENT`]).

use super::{vtable::DeviceVTable, Device, DeviceModify, Driver, PortModify, MGMT_MAD_SIZE};
use crate::{bindings, error::from_result, prelude::*};
use core::ptr;

/// A management datagram (`struct ib_mad`) as on the wire: the 24-byte common header and
/// the class data, big-endian fields.
pub type Mad = [u8; MAD_SIZE];

const MAD_SIZE: usize = MGMT_MAD_SIZE as usize;

/// What [`Driver::process_mad`] made of a management datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MadResult {
    /// Not the driver's: the core hands it to the agents registered for its class.
    NotMine,
    /// The reply is written: the core returns it to a local query, or sends it back to the
    /// MAD's sender.
    Reply,
}

impl<T: Driver> DeviceVTable<T> {
    /// # Safety
    ///
    /// Called by the core for a registered `Device<T>`; `m` is valid.
    pub(super) unsafe extern "C" fn modify_device_callback(
        ib: *mut bindings::ib_device,
        mask: c_int,
        m: *mut bindings::ib_device_modify,
    ) -> c_int {
        from_result(|| {
            let known = bindings::ib_device_modify_flags_IB_DEVICE_MODIFY_SYS_IMAGE_GUID
                | bindings::ib_device_modify_flags_IB_DEVICE_MODIFY_NODE_DESC;
            let mask = u32::try_from(mask).map_err(|_| EINVAL)?;
            if mask & !known != 0 {
                return Err(EOPNOTSUPP);
            }
            // SAFETY: The core calls operations only while the device data is alive, with
            // a valid `m`.
            let (dev, m) = unsafe { (Device::<T>::from_raw(ib), &*m) };
            let has = |bit| mask & bit != 0;
            let change = DeviceModify {
                sys_image_guid: has(
                    bindings::ib_device_modify_flags_IB_DEVICE_MODIFY_SYS_IMAGE_GUID,
                )
                .then_some(m.sys_image_guid),
                node_desc: has(bindings::ib_device_modify_flags_IB_DEVICE_MODIFY_NODE_DESC)
                    .then(|| m.node_desc.map(|c| u8::from_ne_bytes(c.to_ne_bytes()))),
            };
            T::modify_device(dev, &change)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the core for a registered `Device<T>` and a valid port; `m` is valid.
    pub(super) unsafe extern "C" fn modify_port_callback(
        ib: *mut bindings::ib_device,
        port: u32,
        mask: c_int,
        m: *mut bindings::ib_port_modify,
    ) -> c_int {
        from_result(|| {
            // SAFETY: As above.
            let (dev, m) = unsafe { (Device::<T>::from_raw(ib), &*m) };
            let change = PortModify {
                mask: u32::try_from(mask).map_err(|_| EINVAL)?,
                set_port_cap_mask: m.set_port_cap_mask,
                clr_port_cap_mask: m.clr_port_cap_mask,
            };
            T::modify_port(dev, port, &change)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the core for a registered `Device<T>`: `in_mad` is a valid MAD (a `struct
    /// ib_mad` of `MAD_SIZE` bytes on a device without OPA MADs), `out_mad` a distinct
    /// buffer of `*out_mad_size` bytes, both for the duration of the call.
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe extern "C" fn process_mad_callback(
        ib: *mut bindings::ib_device,
        _flags: c_int,
        port: u32,
        _in_wc: *const bindings::ib_wc,
        _in_grh: *const bindings::ib_grh,
        in_mad: *const bindings::ib_mad,
        out_mad: *mut bindings::ib_mad,
        out_mad_size: *mut usize,
        _out_mad_pkey_index: *mut u16,
    ) -> c_int {
        let fail = bindings::ib_mad_result_IB_MAD_RESULT_FAILURE as c_int;
        // SAFETY: The core passes a valid `out_mad_size`.
        if out_mad_size.is_null() || unsafe { *out_mad_size } < MAD_SIZE {
            return fail;
        }
        // SAFETY: The core calls operations only while the device data is alive. `in_mad`
        // and `out_mad` are distinct `struct ib_mad` buffers of `MAD_SIZE` bytes (checked
        // above for the output), and `Mad` is a byte array, which any alignment suits.
        let (dev, mad, reply) = unsafe {
            (
                Device::<T>::from_raw(ib),
                &*in_mad.cast::<Mad>(),
                &mut *out_mad.cast::<Mad>(),
            )
        };
        let success = bindings::ib_mad_result_IB_MAD_RESULT_SUCCESS as c_int;
        match T::process_mad(dev, port, mad, reply) {
            MadResult::NotMine => success,
            MadResult::Reply => {
                // SAFETY: Valid for writes, as above.
                unsafe { *out_mad_size = MAD_SIZE };
                success | bindings::ib_mad_result_IB_MAD_RESULT_REPLY as c_int
            }
        }
    }
}

/// A static of C type `T` that holds pointers, shared read-only with the C side.
#[repr(transparent)]
pub(super) struct SharedStatic<T>(T);

// SAFETY: The wrapped values are never written after initialisation, by Rust or by C (sysfs
// only reads attribute groups), so sharing them between threads is sound.
unsafe impl<T> Sync for SharedStatic<T> {}

impl<T> SharedStatic<T> {
    /// Returns the address of the C value.
    pub(super) const fn as_ptr(&'static self) -> *const T {
        &raw const self.0
    }
}

/// rdma_rxe's `parent` sysfs attribute: the name of port 1's network device.
// `struct attribute` has lockdep fields only with `CONFIG_DEBUG_LOCK_ALLOC`: without them,
// the zeroed rest is empty.
#[allow(clippy::needless_update)]
static PARENT_ATTR: SharedStatic<bindings::device_attribute> =
    SharedStatic(bindings::device_attribute {
        attr: bindings::attribute {
            name: c"parent".to_bytes_with_nul().as_ptr(),
            mode: 0o444,
            ..pin_init::zeroed()
        },
        __bindgen_anon_1: bindings::device_attribute__bindgen_ty_1 {
            show: Some(parent_show),
        },
        __bindgen_anon_2: bindings::device_attribute__bindgen_ty_2 { store: None },
    });

static PARENT_ATTRS: SharedStatic<[*mut bindings::attribute; 2]> =
    SharedStatic([(&raw const PARENT_ATTR.0.attr).cast_mut(), ptr::null_mut()]);

/// The device attribute group of a driver with [`Driver::SHOW_PARENT`].
pub(super) static PARENT_GROUP: SharedStatic<bindings::attribute_group> =
    SharedStatic(bindings::attribute_group {
        __bindgen_anon_2: bindings::attribute_group__bindgen_ty_2 {
            attrs: (&raw const PARENT_ATTRS.0).cast_mut().cast(),
        },
        ..pin_init::zeroed()
    });

/// # Safety
///
/// Called by sysfs for the `parent` attribute of [`PARENT_GROUP`], which is only installed
/// as the `device_group` of RDMA devices: `dev` is the `struct device` of a registered
/// `ib_core_device`, alive for the call; `buf` is a page.
unsafe extern "C" fn parent_show(
    dev: *mut bindings::device,
    _attr: *mut bindings::device_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: `dev` is the `dev` field of an `ib_core_device` (see above), whose `owner` is
    // its `ib_device`; sysfs keeps the device registered while the attribute is read.
    let ib = unsafe { (*crate::container_of!(dev, bindings::ib_core_device, dev)).owner };
    // SAFETY: `ib` is a registered device; `ib_device_get_netdev` returns a netdevice with
    // a reference taken, or null.
    let ndev = unsafe { bindings::ib_device_get_netdev(ib, 1) };
    let Some(ndev) = ptr::NonNull::new(ndev) else {
        return ENODEV.to_errno() as isize;
    };
    // SAFETY: A non-null `ndev` is valid and its reference is transferred to the `ARef`,
    // which keeps the name's storage alive while it is copied.
    let ndev = unsafe { crate::rdma::netdev::NetDevice::from_held(ndev) };
    let name = ndev.name().to_bytes();
    // A name is at most IFNAMSIZ - 1 bytes; the page holds it and the newline.
    let n = name.len().min(bindings::IFNAMSIZ as usize);
    // SAFETY: `buf` is a page (sysfs), far longer than `n + 1` bytes, and does not overlap
    // the netdevice's name.
    unsafe {
        ptr::copy_nonoverlapping(name.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = b'\n' as c_char;
    }
    (n + 1) as isize
}
