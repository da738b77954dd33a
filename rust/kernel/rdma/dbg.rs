// SPDX-License-Identifier: GPL-2.0

//! Debug messages under dynamic debug (`struct _ddebug`), for the error paths of a driver.
//!
//! The kernel crate's [`pr_debug!`](crate::pr_debug) prints only in builds with debug
//! assertions and cannot be switched on at run time. A driver that must say why a queue pair
//! failed, a key was refused or a packet was dropped wants what C drivers have with
//! `ibdev_dbg()`: a message at each such site that costs a load and a branch while off, and
//! that an operator turns on for one file, function or line without rebuilding, through
//! `/proc/dynamic_debug/control` (or `dyndbg=` module parameters):
//!
//! ```text
//! echo 'module rdma_rrxe +p' > /proc/dynamic_debug/control
//! ```
//!
//! [`rdma_dbg!`](crate::rdma_dbg) declares a call site: a [`Site`] in the module's
//! `__dyndbg` section, where the module loader finds it and registers it with dynamic
//! debug, exactly as the C `DEFINE_DYNAMIC_DEBUG_METADATA()` does. The site names the
//! module, the Rust module path (as the "function"), the file, the line and the format
//! string, so all the usual queries (`module`, `func`, `file`, `line`, `format`) select it.
//! The message is printed at `KERN_DEBUG` with the module's prefix. Without
//! `CONFIG_DYNAMIC_DEBUG` no site is emitted and the arguments are only type-checked.
//!
//! Nothing here is specific to RDMA: it is the dynamic-debug half of
//! [`pr_debug!`](crate::pr_debug) that the kernel crate does not have yet, kept beside the
//! RDMA abstractions, its first user.
//!
//! C header: [`include/linux/dynamic_debug.h`](srctree/include/linux/dynamic_debug.h)

#[cfg(CONFIG_DYNAMIC_DEBUG)]
use crate::str::CStrExt;
use crate::{
    bindings,
    str::{as_char_ptr_in_const_context, CStr},
    types::Opaque,
};

/// The class a site belongs to when it declares none (`_DPRINTK_CLASS_DFLT`).
const CLASS_DEFAULT: u32 = (1 << 6) - 1;

/// `_DPRINTK_FLAGS_PRINT`: the site is enabled.
const FLAG_PRINT: u32 = 1 << 0;

/// The bitfield word of `struct _ddebug`: `lineno:18`, `class_id:6`, `flags:8`, in the
/// order the C compiler allocates bitfields (from the least significant bit on a
/// little-endian target, from the most significant one on a big-endian one).
const fn bits(lineno: u32, class_id: u32, flags: u32) -> [u8; 4] {
    let lineno = lineno & ((1 << 18) - 1);
    if cfg!(target_endian = "little") {
        (lineno | class_id << 18 | flags << 24).to_le_bytes()
    } else {
        (lineno << 14 | class_id << 8 | flags).to_be_bytes()
    }
}

/// Reads `flags:8` back from the bitfield word [`bits`] lays out.
const fn flags_of(word: [u8; 4]) -> u32 {
    if cfg!(target_endian = "little") {
        u32::from_le_bytes(word) >> 24
    } else {
        u32::from_be_bytes(word) & 0xff
    }
}

/// A dynamic-debug call site (`struct _ddebug`), declared by [`rdma_dbg!`](crate::rdma_dbg)
/// in the `__dyndbg` section of the module that prints it.
///
/// # Invariants
///
/// The descriptor's strings are NUL-terminated and `'static`; once the module loader has
/// registered the section, dynamic debug writes `flags` (and, with jump labels, the static
/// key, which no jump entry refers to) under its own lock, and only reads the rest.
#[repr(transparent)]
pub struct Site(Opaque<bindings::_ddebug>);

// SAFETY: The descriptor is only read here, with volatile reads of the one word dynamic
// debug changes, and written by dynamic debug under its lock (the type invariant).
unsafe impl Sync for Site {}

impl Site {
    /// A call site of module `modname`, in `function` (here the Rust
    /// module path), `file` at `line`, printing `format`; disabled until dynamic debug
    /// enables it.
    #[doc(hidden)]
    pub const fn new(
        modname: &'static CStr,
        function: &'static CStr,
        file: &'static CStr,
        format: &'static CStr,
        line: u32,
    ) -> Self {
        // SAFETY: `struct _ddebug` is plain data (pointers, integers and, with jump labels,
        // a static key whose all-zero value is `STATIC_KEY_FALSE_INIT`).
        let mut d: bindings::_ddebug = unsafe { core::mem::zeroed() };
        d.modname = as_char_ptr_in_const_context(modname);
        d.function = as_char_ptr_in_const_context(function);
        d.filename = as_char_ptr_in_const_context(file);
        d.format = as_char_ptr_in_const_context(format);
        d._bitfield_1 = bindings::__BindgenBitfieldUnit::new(bits(line, CLASS_DEFAULT, 0));
        // INVARIANT: The strings are `'static` C strings.
        Self(Opaque::new(d))
    }

    /// Returns whether the site is enabled (`+p`).
    #[inline]
    pub fn enabled(&self) -> bool {
        // The bitfield unit is `#[repr(C)]` around its bytes.
        // SAFETY: The descriptor is valid for the lifetime of the module that declared it;
        // dynamic debug changes this word under its lock, so it is read once, volatile, as
        // the C side reads it without jump labels.
        let word = unsafe {
            core::ptr::read_volatile((&raw const (*self.0.get())._bitfield_1).cast::<[u8; 4]>())
        };
        flags_of(word) & FLAG_PRINT != 0
    }

    /// Prints `args` at `KERN_DEBUG` through dynamic debug (which adds what the site's flags
    /// ask for: module, function, line, thread), the site's module name first.
    #[doc(hidden)]
    #[cold]
    #[cfg(CONFIG_DYNAMIC_DEBUG)]
    pub fn print(&'static self, args: core::fmt::Arguments<'_>) {
        // SAFETY: The descriptor is valid and `'static`, registered with dynamic debug or not
        // (it then only prints); `modname` is never written after `new`, and is a `'static` C
        // string (the type invariant), as the format's `%s` needs; `%pA` takes the
        // `fmt::Arguments`, valid for the call.
        unsafe {
            bindings::__dynamic_pr_debug(
                self.0.get(),
                c"%s: %pA".as_char_ptr(),
                (*self.0.get()).modname,
                core::ptr::from_ref(&args).cast::<crate::ffi::c_void>(),
            )
        };
    }
}

/// Prints a debug message under dynamic debug, off until enabled at run time: the
/// dynamic-debug counterpart of [`pr_debug!`](crate::pr_debug), for the reasons behind
/// errors (see [`kernel::rdma::dbg`](crate::rdma::dbg)).
///
/// The format is a string literal (or a `concat!` of them), as for `pr_debug!`; it is also
/// the site's `format` in `/proc/dynamic_debug/control`.
///
/// # Examples
///
/// ```ignore
/// kernel::rdma_dbg!("{}: qp {:#x}: to error: {}\n", ndev_name, qpn, reason);
/// ```
#[macro_export]
// `crate::__LOG_PREFIX` is the calling module's name (from `module!`), as for `pr_info!`.
#[expect(clippy::crate_in_macro_def)]
macro_rules! rdma_dbg {
    ($fmt:expr $(, $arg:expr)* $(,)?) => {{
        #[cfg(CONFIG_DYNAMIC_DEBUG)]
        {
            // Not `#[used]`: rustc marks such sections `SHF_GNU_RETAIN`, the bit the module
            // loader reads as `SHF_RO_AFTER_INIT`, and dynamic debug could then not write the
            // site's flags. The call below keeps the site.
            #[link_section = "__dyndbg"]
            static SITE: $crate::rdma::dbg::Site = $crate::rdma::dbg::Site::new(
                match $crate::str::CStr::from_bytes_with_nul(crate::__LOG_PREFIX) {
                    Ok(name) => name,
                    Err(_) => panic!("the module name is not a C string"),
                },
                $crate::c_str!(::core::module_path!()),
                $crate::c_str!(::core::file!()),
                $crate::c_str!($fmt),
                ::core::line!(),
            );
            if SITE.enabled() {
                SITE.print(::core::format_args!($fmt $(, $arg)*));
            }
        }
        #[cfg(not(CONFIG_DYNAMIC_DEBUG))]
        {
            if false {
                let _ = ::core::format_args!($fmt $(, $arg)*);
            }
        }
    }};
}
