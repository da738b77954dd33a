// SPDX-License-Identifier: GPL-2.0

//! Table-driven CRC-32 with the semantics of the kernel's `crc32_le`.
//!
//! Reflected polynomial `0xEDB88320`, no inversion on entry or exit: the caller passes the
//! running value as `seed` and applies any final inversion itself. The kernel module uses the
//! kernel's own `crc32_le` through [`super::icrc::Crc32`]; this one serves the host tools and
//! tests and is the reference the kernel one is compared against.

/// The reflected CRC-32 (IEEE 802.3) polynomial.
pub const POLY: u32 = 0xedb8_8320;

// Constant evaluation: an overflow or bad index is a compile error, not a panic.
#[allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]
const fn make_table() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut i = 0u32;
    while i < 256 {
        let mut crc = i;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ POLY
            } else {
                crc >> 1
            };
            bit += 1;
        }
        table[i as usize] = crc;
        i += 1;
    }
    table
}

/// Byte-at-a-time lookup table, computed at compile time.
static TABLE: [u32; 256] = make_table();

/// Updates the CRC `seed` with `data`, exactly like the kernel's `crc32_le(seed, data, len)`.
pub fn crc32_le(seed: u32, data: &[u8]) -> u32 {
    data.iter().fold(seed, |crc, &byte| {
        let [low, ..] = crc.to_le_bytes();
        let entry = TABLE.get(usize::from(low ^ byte)).copied().unwrap_or(0);
        (crc >> 8) ^ entry
    })
}
