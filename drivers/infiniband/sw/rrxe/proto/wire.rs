// SPDX-License-Identifier: GPL-2.0

//! Big-endian field access and the macros that declare header views and builders.
//!
//! All accessors work on fixed-size arrays with constant offsets, but still go through
//! `get()`, so no access can panic even if a declaration were wrong; an out-of-range read
//! yields zero and an out-of-range write is dropped (both are caught by the host tests).

/// A fixed-size big-endian wire field.
pub(crate) trait Field: Copy {
    /// Reads the field starting at byte `off` of `bytes`.
    fn read(bytes: &[u8], off: usize) -> Self;
    /// Writes the field starting at byte `off` of `bytes`.
    fn write(self, bytes: &mut [u8], off: usize);
}

/// Returns the `N` bytes of `bytes` starting at `off`, if present.
pub(crate) fn chunk<const N: usize>(bytes: &[u8], off: usize) -> Option<&[u8; N]> {
    bytes.get(off..).and_then(<[u8]>::first_chunk)
}

/// Returns the `N` bytes of `bytes` starting at `off` for writing, if present.
pub(crate) fn chunk_mut<const N: usize>(bytes: &mut [u8], off: usize) -> Option<&mut [u8; N]> {
    bytes.get_mut(off..).and_then(<[u8]>::first_chunk_mut)
}

/// The `read` and `write` methods of a field trait ([`Field`] here, `uabi::Le` for the
/// user ABI) for an integer type, in the byte order of `$from`/`$to` (`from_be_bytes` and
/// `to_be_bytes`, or the `le` pair): zero when out of range, an out-of-range write dropped.
macro_rules! int_read_write {
    ($from:ident, $to:ident) => {
        fn read(bytes: &[u8], off: usize) -> Self {
            $crate::proto::wire::chunk(bytes, off).map_or(0, |b| Self::$from(*b))
        }

        fn write(self, bytes: &mut [u8], off: usize) {
            if let Some(b) = $crate::proto::wire::chunk_mut(bytes, off) {
                *b = self.$to();
            }
        }
    };
}

macro_rules! be_field {
    ($($t:ty),*) => {$(
        impl Field for $t {
            int_read_write!(from_be_bytes, to_be_bytes);
        }
    )*};
}

be_field!(u8, u16, u32, u64);

/// Declares a 24-bit big-endian wire number (QPN, PSN, MSN, EECN).
macro_rules! u24_type {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        ///
        /// # Invariants
        ///
        /// The value is below 2^24.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(u32);

        // Generated for each number type; the module uses a different subset of each.
        #[allow(dead_code)]
        impl $name {
            /// Mask of the 24 significant bits.
            pub const MASK: u32 = 0x00ff_ffff;

            /// The largest value, `0xffffff`.
            pub const MAX: Self = Self(Self::MASK);

            /// Creates a value from the low 24 bits of `v`; higher bits are dropped.
            pub const fn new(v: u32) -> Self {
                Self(v & Self::MASK)
            }

            /// Creates a value from `v`, or `None` if `v` does not fit in 24 bits.
            pub const fn try_new(v: u32) -> Option<Self> {
                if v <= Self::MASK {
                    Some(Self(v))
                } else {
                    None
                }
            }

            /// Returns the value.
            pub const fn get(self) -> u32 {
                self.0
            }
        }

        impl super::wire::Field for $name {
            fn read(bytes: &[u8], off: usize) -> Self {
                super::wire::chunk(bytes, off)
                    .map_or(Self(0), |&[a, b, c]| Self(u32::from_be_bytes([0, a, b, c])))
            }

            fn write(self, bytes: &mut [u8], off: usize) {
                if let Some(out) = super::wire::chunk_mut::<3>(bytes, off) {
                    let [_, a, b, c] = self.0.to_be_bytes();
                    *out = [a, b, c];
                }
            }
        }
    };
}

/// Declares a fixed-layout byte structure: a zero-copy view `$view<'a>` over its bytes and a
/// plain builder `$fields` with one public member per field.
///
/// `$field` is the trait through which every field is read and written at its constant
/// offset (`read(bytes, off)`, `write(self, bytes, off)`): the big-endian [`Field`] for wire
/// headers (`header!`), the little-endian `uabi::Le` for the user ABI's C structures
/// (`le_struct!`). `$what` names the structure in the generated documentation, and the
/// attributes in brackets are added to the builder.
macro_rules! fixed_layout {
    (
        $field:path, $what:literal, [$(#[$bmeta:meta])*]
        $(#[$vmeta:meta])* $view:ident, $fields:ident, $len:literal {
            $($(#[$fmeta:meta])* $name:ident: $ty:ty = $off:literal,)*
        }
    ) => {
        $(#[$vmeta])*
        #[derive(Clone, Copy, PartialEq, Eq)]
        pub struct $view<'a>(&'a [u8; $len]);

        // Generated accessors: the module reads only some of the fields of some structures.
        #[allow(dead_code)]
        impl<'a> $view<'a> {
            #[doc = concat!("Size of the ", $what, " in bytes.")]
            pub const LEN: usize = $len;

            /// Views the first [`Self::LEN`] bytes of `bytes`, or `None` if it is shorter.
            pub fn new(bytes: &'a [u8]) -> Option<Self> {
                bytes.first_chunk().map(Self)
            }

            #[doc = concat!("Returns the raw bytes of the ", $what, ".")]
            pub fn as_bytes(&self) -> &'a [u8; $len] {
                self.0
            }

            $(
                $(#[$fmeta])*
                pub fn $name(&self) -> $ty {
                    <$ty as $field>::read(self.0, $off)
                }
            )*

            /// Copies all fields into a builder.
            pub fn fields(&self) -> $fields {
                $fields { $($name: self.$name(),)* }
            }
        }

        impl core::fmt::Debug for $view<'_> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                self.fields().fmt(f)
            }
        }

        #[doc = concat!(
            "Builder for [`", stringify!($view), "`]: the ", $what, "'s fields by value."
        )]
        $(#[$bmeta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $fields {
            $($(#[$fmeta])* pub $name: $ty,)*
        }

        // Generated: the module serialises only some of the structures.
        #[allow(dead_code)]
        impl $fields {
            #[doc = concat!("Size of the ", $what, " in bytes.")]
            pub const LEN: usize = $len;

            #[doc = concat!(
                "Serialises the ", $what, " into the first [`Self::LEN`] bytes of `out`."
            )]
            pub fn write(&self, out: &mut [u8]) -> Result<(), $crate::proto::BufferTooSmall> {
                let out: &mut [u8; $len] =
                    out.first_chunk_mut().ok_or($crate::proto::BufferTooSmall)?;
                $(<$ty as $field>::write(self.$name, out, $off);)*
                Ok(())
            }
        }
    };
}

/// Declares a fixed-layout header (big-endian fields, see [`fixed_layout!`]): a zero-copy
/// view `$view<'a>` over the wire bytes and a plain builder `$fields` with one public member
/// per field.
///
/// Every byte of the header must be covered by a field (reserved bytes included) so that
/// view -> fields -> bytes reproduces the original bytes exactly.
macro_rules! header {
    ($($decl:tt)*) => {
        fixed_layout! { super::wire::Field, "header", [#[derive(Default)]] $($decl)* }
    };
}
