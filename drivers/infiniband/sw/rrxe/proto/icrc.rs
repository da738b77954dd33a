// SPDX-License-Identifier: GPL-2.0

//! RoCEv2 invariant CRC (ICRC, IBA Annex A17.8), generic over the CRC-32 implementation.
//!
//! The ICRC covers, in order: 8 bytes of `0xff` standing for the masked LRH (folded into
//! [`SEED`]), the IP header with its variant fields set to ones (IPv4: TOS, TTL and header
//! checksum; IPv6: traffic class, flow label and hop limit), the UDP header with its checksum
//! set to ones, the BTH with byte 4 (FECN, BECN, `resv8a`) set to ones, and then the rest of
//! the packet up to the ICRC: extended headers, payload and pad. The ICRC is the bitwise NOT
//! of the CRC and is stored little-endian.
//!
//! Masked fields are copied into small stack buffers; nothing is allocated.

use super::bth::BTH_LEN;

/// A CRC-32 update function with the semantics of the kernel's `crc32_le`.
///
/// Implemented for every `Fn(u32, &[u8]) -> u32`, so both [`super::crc32::crc32_le`] and a
/// wrapper around the kernel's `crc32_le` can be passed directly.
pub trait Crc32 {
    /// Updates `crc` with `data` (reflected polynomial, no inversion).
    fn update(&self, crc: u32, data: &[u8]) -> u32;
}

impl<F: Fn(u32, &[u8]) -> u32> Crc32 for F {
    fn update(&self, crc: u32, data: &[u8]) -> u32 {
        self(crc, data)
    }
}

/// CRC of eight `0xff` bytes (the masked LRH) with seed `0xffffffff`.
pub const SEED: u32 = 0xdebb_20e3;

/// Length of the ICRC trailer in bytes.
pub const ICRC_LEN: usize = 4;

/// Length of the UDP header in bytes.
pub const UDP_LEN: usize = 8;

/// The IP header of a RoCEv2 packet, from its first byte to the UDP header.
#[derive(Clone, Copy, Debug)]
pub enum IpHdr<'a> {
    /// IPv4 header (at least 20 bytes; options, if any, are covered unmasked).
    V4(&'a [u8]),
    /// IPv6 header (at least 40 bytes; anything beyond is covered unmasked).
    V6(&'a [u8]),
}

/// Errors from ICRC computation and verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IcrcError {
    /// The IP header, UDP header or BTH-to-ICRC part is too short.
    Truncated,
    /// The ICRC in the packet differs from the computed one.
    Mismatch {
        /// ICRC computed over the packet.
        computed: u32,
        /// ICRC found in the packet.
        received: u32,
    },
}

/// An ICRC computation in progress, for packets whose payload is not contiguous.
pub struct Icrc<'c, C: Crc32 + ?Sized> {
    crc: &'c C,
    state: u32,
}

impl<'c, C: Crc32 + ?Sized> Icrc<'c, C> {
    /// Starts an ICRC over the masked IP header, UDP header and BTH.
    ///
    /// `udp` and `bth` may be longer than their headers; only the headers are used.
    pub fn new(crc: &'c C, ip: IpHdr<'_>, udp: &[u8], bth: &[u8]) -> Result<Self, IcrcError> {
        let mut this = Self { crc, state: SEED };
        match ip {
            IpHdr::V4(hdr) => {
                let (fixed, rest) = hdr.split_first_chunk::<20>().ok_or(IcrcError::Truncated)?;
                let mut fixed = *fixed;
                fixed[1] = 0xff; // TOS
                fixed[8] = 0xff; // TTL
                fixed[10] = 0xff; // header checksum
                fixed[11] = 0xff;
                this.update(&fixed);
                this.update(rest);
            }
            IpHdr::V6(hdr) => {
                if hdr.len() < 40 {
                    return Err(IcrcError::Truncated);
                }
                let (fixed, rest) = hdr.split_first_chunk::<8>().ok_or(IcrcError::Truncated)?;
                let mut fixed = *fixed;
                fixed[0] |= 0x0f; // traffic class and flow label; version stays
                fixed[1] = 0xff;
                fixed[2] = 0xff;
                fixed[3] = 0xff;
                fixed[7] = 0xff; // hop limit
                this.update(&fixed);
                this.update(rest);
            }
        }
        let mut udp: [u8; UDP_LEN] = *udp.first_chunk().ok_or(IcrcError::Truncated)?;
        udp[6] = 0xff; // checksum
        udp[7] = 0xff;
        this.update(&udp);
        let mut bth: [u8; BTH_LEN] = *bth.first_chunk().ok_or(IcrcError::Truncated)?;
        bth[4] = 0xff; // FECN, BECN, resv8a
        this.update(&bth);
        Ok(this)
    }

    /// Adds the next bytes after the BTH (extended headers, payload, pad).
    pub fn update(&mut self, data: &[u8]) {
        self.state = self.crc.update(self.state, data);
    }

    /// Returns the ICRC value (to be stored little-endian).
    pub fn finish(self) -> u32 {
        !self.state
    }
}

/// Computes the ICRC of a contiguous packet.
///
/// `body` runs from the BTH up to, and excluding, the ICRC.
pub fn compute<C: Crc32 + ?Sized>(
    crc: &C,
    ip: IpHdr<'_>,
    udp: &[u8],
    body: &[u8],
) -> Result<u32, IcrcError> {
    let mut icrc = Icrc::new(crc, ip, udp, body)?;
    icrc.update(body.get(BTH_LEN..).unwrap_or_default());
    Ok(icrc.finish())
}

/// Computes the ICRC of an IPv4 packet; see [`compute`].
#[cfg(rrxe_host)]
pub fn compute_ipv4<C: Crc32 + ?Sized>(
    crc: &C,
    ip: &[u8],
    udp: &[u8],
    body: &[u8],
) -> Result<u32, IcrcError> {
    compute(crc, IpHdr::V4(ip), udp, body)
}

/// Computes the ICRC of an IPv6 packet; see [`compute`].
#[cfg(rrxe_host)]
pub fn compute_ipv6<C: Crc32 + ?Sized>(
    crc: &C,
    ip: &[u8],
    udp: &[u8],
    body: &[u8],
) -> Result<u32, IcrcError> {
    compute(crc, IpHdr::V6(ip), udp, body)
}

/// Computes the ICRC of `udp_payload` (BTH to the end of the ICRC) and stores it in the
/// last four bytes.
pub fn generate<C: Crc32 + ?Sized>(
    crc: &C,
    ip: IpHdr<'_>,
    udp: &[u8],
    udp_payload: &mut [u8],
) -> Result<(), IcrcError> {
    let (body, trailer) = udp_payload
        .split_last_chunk_mut::<ICRC_LEN>()
        .ok_or(IcrcError::Truncated)?;
    *trailer = compute(crc, ip, udp, body)?.to_le_bytes();
    Ok(())
}

/// Checks the ICRC at the end of `udp_payload` (BTH to the end of the ICRC).
pub fn verify<C: Crc32 + ?Sized>(
    crc: &C,
    ip: IpHdr<'_>,
    udp: &[u8],
    udp_payload: &[u8],
) -> Result<(), IcrcError> {
    let (body, trailer) = udp_payload
        .split_last_chunk::<ICRC_LEN>()
        .ok_or(IcrcError::Truncated)?;
    let computed = compute(crc, ip, udp, body)?;
    let received = u32::from_le_bytes(*trailer);
    if computed == received {
        Ok(())
    } else {
        Err(IcrcError::Mismatch { computed, received })
    }
}
